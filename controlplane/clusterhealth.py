"""A cluster's health at a glance: Ready nodes, pods waiting for a node or a start, failing requests.

What an instructor watching thirty sandboxes wants to see in one line each, the three numbers an
operator looks at first (``kubectl get nodes``, ``kubectl get pods -A --field-selector
status.phase=Pending``, the API server's error rate):

- **Ready nodes**: nodes whose ``Ready`` condition is ``True``. ``False`` is a kubelet that reports a
  problem; ``Unknown`` is the node lifecycle controller's word for a kubelet it has not heard from
  within the grace period (``pkg/controller/nodelifecycle``).
- **Pending pods**: ``status.phase`` ``Pending`` and not being deleted: waiting for the scheduler, an
  image, or a volume.
- **Failing requests**: answers of the last minute that say the cluster, not the client, is in
  trouble: 5xx (the store unreachable, a webhook down with ``failurePolicy: Fail``), 429 (API Priority
  and Fairness shedding load) and 401 (a credential no longer accepted). A student's own 404, 409 or
  422 is a lesson, not a health problem.

Pure: ``Health.of`` counts what it is given; ``FailureWindow`` is fed trace events
(``request.completed``) as they come, and forgets what is older than its window.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

#: Seconds of answers ``FailureWindow`` counts.
WINDOW_SECONDS: Final = 60.0


def node_ready(node: Mapping[str, Any]) -> bool:
    """Whether the node's ``Ready`` condition is ``True``."""
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def pod_pending(pod: Mapping[str, Any]) -> bool:
    """``Pending`` and not being deleted."""
    meta = pod.get("metadata") or {}
    return (pod.get("status") or {}).get("phase") == "Pending" and not meta.get("deletionTimestamp")


def failing(code: int) -> bool:
    """An answer that says the cluster is in trouble: 5xx, 429 or 401 (see the module's docstring)."""
    return code >= 500 or code in (401, 429)


@dataclass(frozen=True, slots=True)
class Health:
    nodes_ready: int
    nodes: int
    pods_pending: int
    #: Failing answers (``failing``) in the last ``WINDOW_SECONDS``.
    failing_requests: int

    @classmethod
    def of(
        cls, nodes: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]], failing_requests: int
    ) -> Health:
        all_nodes = list(nodes)
        return cls(
            nodes_ready=sum(1 for n in all_nodes if node_ready(n)),
            nodes=len(all_nodes),
            pods_pending=sum(1 for p in pods if pod_pending(p)),
            failing_requests=failing_requests,
        )

    @property
    def healthy(self) -> bool:
        """Every node Ready, and no failing answer in the window (pending pods may be fine)."""
        return self.nodes_ready == self.nodes and self.failing_requests == 0

    def as_json(self) -> dict[str, Any]:
        return {
            "nodes_ready": self.nodes_ready,
            "nodes": self.nodes,
            "pods_pending": self.pods_pending,
            "failing_requests": self.failing_requests,
            "healthy": self.healthy,
        }


class FailureWindow:
    """The failing answers of the last ``seconds``, from the trace events offered in ``seq`` order."""

    def __init__(self, seconds: float = WINDOW_SECONDS) -> None:
        self.seconds = seconds
        #: The ``seq`` of the last event offered (0: none yet), to read only newer ones next time.
        self.last_seq = 0
        self._times: deque[float] = deque()

    def offer(self, event: Mapping[str, Any]) -> None:
        self.last_seq = max(self.last_seq, int(event.get("seq") or 0))
        if event.get("type") != "request.completed":
            return
        code = event.get("code")
        if isinstance(code, int) and failing(code):
            self._times.append(float(event.get("ts") or 0.0))

    def count(self, now: float) -> int:
        """Failing answers within ``seconds`` before ``now``."""
        while self._times and self._times[0] < now - self.seconds:
            self._times.popleft()
        return len(self._times)


__all__ = ["WINDOW_SECONDS", "FailureWindow", "Health", "failing", "node_ready", "pod_pending"]
