"""Who each component is to the API server: its user, its groups, its User-Agent and its rate limit.

Every component of a Kubernetes control plane is just another client of the API server, with a
credential of its own. The scheduler authenticates as ``system:kube-scheduler``, the controller manager
as ``system:kube-controller-manager``, each kubelet as ``system:node:<node>`` in the group
``system:nodes`` and each kube-proxy as ``system:kube-proxy``; RBAC then gives each exactly the rights
its upstream ClusterRole has. They also throttle themselves: a client-side token bucket (``qps`` and
``burst``) keeps a busy component from flooding the API server, with upstream's defaults per component.

The runtime (in-process components) and ``manage.py runcomponent`` (a component as its own process)
both read this table, so a component looks the same on the trace however it runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from controlplane.identity import KUBE_CONTROLLER_MANAGER, KUBE_PROXY, KUBE_SCHEDULER, NODES, node_user
from controlplane.trace import nodes

#: The version the components report in their User-Agent (the API server's /version says the same).
COMPONENT_VERSION = "v1.37.0-kubelab"


@dataclass(frozen=True, slots=True)
class ComponentIdentity:
    """A component's credentials' subject and its client settings."""

    #: ``scheduler``, ``controller-manager``, ``kubelet`` or ``kube-proxy``.
    kind: str
    user: str
    groups: tuple[str, ...]
    #: The program name in the User-Agent (``kube-scheduler/v1.37.0 ...``).
    program: str
    qps: float
    burst: int
    #: The component's node id on the trace (``trace.nodes``: ``scheduler``, ``kubelet:<node>`` ...).
    trace_id: str

    #: The node a kubelet or kube-proxy runs on ("" for the others).
    node: str = ""

    @property
    def user_agent(self) -> str:
        """``kube-proxy/v1.37.0-kubelab (node/node-1)``: the node lets the API server's trace tell
        the kube-proxies apart, since they share one user."""
        suffix = f" (node/{self.node})" if self.node else ""
        return f"{self.program}/{COMPONENT_VERSION}{suffix}"


#: Component kinds ``runcomponent`` accepts; ``kubelet`` and ``kube-proxy`` also need a node.
KINDS = ("scheduler", "controller-manager", "kubelet", "kube-proxy")
NODE_KINDS = ("kubelet", "kube-proxy")


def component_identity(kind: str, node: str = "") -> ComponentIdentity:
    """The identity of a component of ``kind`` (``node`` for a kubelet or kube-proxy).

    Rate limits are upstream's defaults: the scheduler's ``clientConnection`` (50 QPS, burst 100),
    kube-controller-manager's ``--kube-api-qps``/``--kube-api-burst`` (20, 30), the kubelet's
    ``kubeAPIQPS``/``kubeAPIBurst`` (50, 100 since 1.27) and kube-proxy's ``clientConnection`` (5, 10).
    """
    if kind == "scheduler":
        return ComponentIdentity(kind, KUBE_SCHEDULER, (), "kube-scheduler", 50, 100, nodes.SCHEDULER)
    if kind == "controller-manager":
        return ComponentIdentity(
            kind, KUBE_CONTROLLER_MANAGER, (), "kube-controller-manager", 20, 30, nodes.CONTROLLER_MANAGER
        )
    if kind in NODE_KINDS and not node:
        raise ValueError(f"a {kind} runs on a node: name it")
    if kind == "kubelet":
        return ComponentIdentity(
            kind, node_user(node), (NODES,), "kubelet", 50, 100, nodes.kubelet(node), node
        )
    if kind == "kube-proxy":
        return ComponentIdentity(kind, KUBE_PROXY, (), "kube-proxy", 5, 10, nodes.kube_proxy(node), node)
    raise ValueError(f"unknown component {kind!r}: choose one of {', '.join(KINDS)}")
