"""NodeUnschedulable: ``kubectl cordon`` sets ``spec.unschedulable``; new pods then avoid the node.

A cordoned node keeps its running pods but takes no new ones, unless the pod tolerates the
``node.kubernetes.io/unschedulable:NoSchedule`` taint that stands for the flag (DaemonSet pods do).
Upstream: pkg/scheduler/framework/plugins/nodeunschedulable/node_unschedulable.go.
"""

from __future__ import annotations

from controlplane.components.scheduler.framework import (
    SUCCESS,
    CycleState,
    NodeInfo,
    Obj,
    Status,
    unschedulable,
)
from controlplane.components.scheduler.plugins.taint_toleration import tolerates_taint

NAME = "NodeUnschedulable"
#: ``ErrReasonUnschedulable`` (nodeunschedulable/node_unschedulable.go).
ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
#: ``v1.TaintNodeUnschedulable``.
TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"


class NodeUnschedulable:
    name = NAME

    def filter(self, state: CycleState, pod: Obj, node: NodeInfo) -> Status:
        if not node.unschedulable:
            return SUCCESS
        taint = {"key": TAINT_NODE_UNSCHEDULABLE, "effect": "NoSchedule"}
        tolerations = (pod.get("spec") or {}).get("tolerations") or []
        if any(tolerates_taint(t, taint) for t in tolerations):
            return SUCCESS
        return unschedulable(NAME, ERR_REASON_UNSCHEDULABLE, unresolvable=True)
