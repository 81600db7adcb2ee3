"""The network between the components and the API server: which links are cut or slow, and by what.

On a real cluster every component reaches kube-apiserver over the network, at its address
(``--kubeconfig``'s ``server:``). A network partition cuts one component off: each of its connects
fails (``dial tcp 10.0.0.1:6443: connect: network is unreachable``, or an i/o timeout), client-go
returns that as an error of the request, not as an HTTP status, and its reflectors back off and try
again (``isWatchErrorRetriable`` in client-go ``tools/cache/reflector.go``); the component itself runs
on. A partitioned kubelet so stops renewing its Lease (``pkg/kubelet/nodelease``) and reporting its
Node's status, and the node lifecycle controller marks the node ``Unknown``
(``pkg/controller/nodelifecycle/node_lifecycle_controller.go``), though the kubelet and its pods are
fine. A slow link (latency, with jitter) delays each of the component's requests.

``LinkBook`` is the pure core: which faults cut or slow which component's link, and what that does
to one request now (``condition``: a ``LinkCondition``). No I/O, no tasks; jitter comes from the
``random.Random`` passed in. The hook is the component's ``ComponentLink`` (``controlplane/endpoint.py``),
which asks the endpoint's ``links`` only while one is set: the effects (``network.py``) set a cluster's
book on its endpoint while a link fault is in force, and take it away when the last one is cleared.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from controlplane.endpoint import LinkCondition


@dataclass(frozen=True, slots=True)
class Latency:
    """Each request waits ``seconds`` more, give or take up to ``jitter`` seconds (never below 0)."""

    seconds: float
    jitter: float = 0.0


class LinkBook:
    """The link faults of one cluster, by fault id (see the module's docstring)."""

    def __init__(self, rng: random.Random | None = None) -> None:
        self._cut: dict[str, str] = {}
        self._latency: dict[str, tuple[str, Latency]] = {}
        self._rng = rng if rng is not None else random.Random()

    # -- changing --------------------------------------------------------------------------------

    def cut(self, fault_id: str, component: str) -> None:
        """Fault ``fault_id`` cuts ``component``'s link."""
        self._cut[fault_id] = component

    def slow(self, fault_id: str, component: str, latency: Latency) -> None:
        """Fault ``fault_id`` slows ``component``'s link by ``latency``."""
        self._latency[fault_id] = (component, latency)

    def remove(self, fault_id: str) -> None:
        """Fault ``fault_id`` is over."""
        self._cut.pop(fault_id, None)
        self._latency.pop(fault_id, None)

    # -- reading ---------------------------------------------------------------------------------

    @property
    def empty(self) -> bool:
        """Whether every link is sound (the endpoint then needs no book at all)."""
        return not self._cut and not self._latency

    def is_cut(self, component: str) -> bool:
        return component in self._cut.values()

    def condition(self, component: str) -> LinkCondition | None:
        """What ``component``'s link does to a request now: None if nothing, else cut, or a delay in
        seconds (latencies of several faults add up, as hops on a path do)."""
        if component in self._cut.values():
            return LinkCondition(cut=True)
        delay = 0.0
        found = False
        for slowed, latency in self._latency.values():
            if slowed == component:
                found = True
                spread = self._rng.uniform(-latency.jitter, latency.jitter) if latency.jitter else 0.0
                delay += max(0.0, latency.seconds + spread)
        return LinkCondition(delay=delay) if found else None


__all__ = ["Latency", "LinkBook"]
