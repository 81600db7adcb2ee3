"""``kill-node``: a node loses its power, and later boots again.

A powered-off machine says nothing on its way down: its kubelet posts no last status and renews its
Lease no more, its kube-proxy syncs no more rules. The control plane learns of it only by the
silence: after ``--node-monitor-grace-period`` without a renewal the node lifecycle controller marks
the Node ``Unknown`` and taints it ``node.kubernetes.io/unreachable:NoExecute``, and the taint
eviction controller deletes its pods once their ``tolerationSeconds`` pass
(pkg/controller/nodelifecycle/node_lifecycle_controller.go,
pkg/controller/tainteviction/taint_eviction.go). Booting it starts both again, as systemd starts the
kubelet and the kubelet the kube-proxy pod.

Both components are held stopped through the supervisor (``supervisor.py``), as ``stop-kubelet`` and
``stop-kube-proxy`` hold one each, so the kinds know of each other: a kubelet also held by
``stop-kubelet`` stays stopped when the node boots, until that fault is cleared too.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from controlplane.faults.book import Fault
from controlplane.faults.supervisor import Supervisor
from controlplane.trace import nodes

if TYPE_CHECKING:
    from controlplane.runtime import Cluster, Lab


def node_components(node: str) -> tuple[str, str]:
    """The components a node runs, by diagram id: its kubelet, then its kube-proxy."""
    return nodes.kubelet(node), nodes.kube_proxy(node)


class KillNode:
    """Hold the fault's node's kubelet and kube-proxy stopped; clearing boots the node."""

    def __init__(self, supervisor: Supervisor) -> None:
        self.supervisor = supervisor

    async def apply(self, lab: Lab, cluster: Cluster, fault: Fault) -> None:
        # Both at the same moment: neither outlives the other to say or do anything more.
        await asyncio.gather(
            *(
                self.supervisor.hold(cluster, component, fault.id, reason="the node lost its power")
                for component in node_components(_node(fault))
            )
        )

    async def clear(self, lab: Lab, cluster: Cluster, fault: Fault) -> None:
        for component in node_components(_node(fault)):
            await self.supervisor.let_go(cluster, component, fault.id, reason="the node booted")

    async def stopping(self, cluster: Cluster, fault: Fault) -> None:
        for component in node_components(_node(fault)):
            self.supervisor.drop(cluster, component, fault.id)


def _node(fault: Fault) -> str:
    return str(fault.spec.parameters()["node"])


__all__ = ["KillNode", "node_components"]
