"""Max-in-flight: the flow control kube-apiserver had before APF (``--enable-priority-and-fairness=false``).

Two counters and two limits (upstream ``k8s.io/apiserver/pkg/server/filters/maxinflight.go``):
``--max-requests-inflight`` for reads (get, list) and ``--max-mutating-requests-inflight`` for
writes. A request that finds its counter at the limit is refused at once with 429 and
``Retry-After: 1``: no queue, no fairness, no priorities, except that ``system:masters`` is never
refused. Long-running requests (watches, logs, exec) are not counted at all. A limit of 0 means no
limit for that kind; both 0 turns the filter off.

Set against APF in ``python -m bench apf``: one client in a hot loop takes every slot, and a polite
client's requests are refused with its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: The Retry-After of a max-in-flight refusal (upstream's constant ``retryAfter``).
RETRY_AFTER = 1


@dataclass(slots=True)
class Limit:
    """One kind's counter: ``limit`` 0 means unlimited."""

    limit: int
    in_flight: int = 0
    rejected: int = 0
    served: int = 0

    def try_acquire(self) -> bool:
        if self.limit and self.in_flight >= self.limit:
            self.rejected += 1
            return False
        self.in_flight += 1
        self.served += 1
        return True

    def release(self) -> None:
        self.in_flight -= 1


@dataclass(slots=True)
class MaxInFlight:
    read_only: Limit
    mutating: Limit
    #: Requests of system:masters let through over the limit.
    privileged: int = field(default=0)

    @classmethod
    def create(cls, max_requests_inflight: int, max_mutating_requests_inflight: int) -> MaxInFlight:
        return cls(Limit(max_requests_inflight), Limit(max_mutating_requests_inflight))

    @property
    def enabled(self) -> bool:
        return bool(self.read_only.limit or self.mutating.limit)

    def limit_for(self, mutating: bool) -> Limit:
        return self.mutating if mutating else self.read_only
