"""The scheduling queue: which pending pod the scheduler tries next, and when to try again.

Upstream's ``PriorityQueue`` (pkg/scheduler/internal/queue/scheduling_queue.go) keeps three places:

- **activeQ**: pods ready to be tried, highest ``spec.priority`` first, then oldest first
  (the QueueSort plugin ``PrioritySort``);
- **backoffQ**: pods that failed recently and wait out a backoff before going back to activeQ. The
  backoff doubles per attempt from 1 s up to 10 s (``podInitialBackoffDuration``,
  ``podMaxBackoffDuration``): 1, 2, 4, 8, 10, 10 ... counted from the last attempt;
- **unschedulablePods**: pods no node could take. Retrying them at once would fail the same way, so
  they wait for a *cluster event* that might help (a node added or changed, a pod deleted), which moves
  them to backoffQ (if still backing off) or activeQ (``MoveAllToActiveOrBackoffQueue``). A pod left
  there 5 minutes (``podMaxInUnschedulablePodsDuration``) is moved anyway, in case an event was missed.

If an event arrives *while* a pod is being tried, the failed pod goes to backoffQ, not
unschedulablePods, since the event may have been the one it needed (``moveRequestCycle``).
Queueing hints (per-plugin filtering of events) are not modelled: every event moves every pod.

This queue is pure: time is a ``now`` argument, and ``pop`` says when to look again instead of sleeping.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from controlplane.api.meta import object_key
from controlplane.components.scheduler.framework import Obj, pod_priority

POD_INITIAL_BACKOFF_DURATION = 1.0
POD_MAX_BACKOFF_DURATION = 10.0
POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION = 300.0

#: Cluster events that move unschedulable pods (framework/events.go names).
NODE_ADD = "NodeAdd"
NODE_UPDATE = "NodeUpdate"
ASSIGNED_POD_DELETE = "AssignedPodDelete"
UNSCHEDULABLE_TIMEOUT = "UnschedulableTimeout"


@dataclass
class QueuedPodInfo:
    """``framework.QueuedPodInfo``: a pod and its queueing history."""

    pod: Obj
    #: when the pod entered the queue, or its last failed attempt (orders activeQ, starts backoff)
    timestamp: float
    attempts: int = 0
    initial_attempt_timestamp: float | None = None
    unschedulable_plugins: set[str] = field(default_factory=set)

    @property
    def key(self) -> str:
        return object_key(self.pod)

    @property
    def priority(self) -> int:
        """``spec.priority``, as the Priority admission plugin set it from the pod's PriorityClass."""
        return pod_priority(self.pod)


def backoff_duration(attempts: int) -> float:
    """``calculateBackoffDuration``: 1 s doubled per earlier attempt, capped at 10 s."""
    duration = POD_INITIAL_BACKOFF_DURATION
    for _ in range(1, attempts):
        duration *= 2
        if duration > POD_MAX_BACKOFF_DURATION:
            return POD_MAX_BACKOFF_DURATION
    return duration


def backoff_expiry(info: QueuedPodInfo) -> float:
    return info.timestamp + backoff_duration(info.attempts)


class SchedulingQueue:
    """activeQ, backoffQ and unschedulablePods, keyed by ``namespace/name``."""

    def __init__(self) -> None:
        self._active: dict[str, QueuedPodInfo] = {}
        self._backoff: dict[str, QueuedPodInfo] = {}
        self._unschedulable: dict[str, QueuedPodInfo] = {}
        self._in_flight: set[str] = set()
        self.scheduling_cycle = 0
        self._move_request_cycle = -1
        self._seq = itertools.count()

    # -- inspection -------------------------------------------------------------------------------

    def active(self) -> list[str]:
        return [i.key for i in sorted(self._active.values(), key=self._active_order)]

    def backoff(self) -> list[str]:
        return sorted(self._backoff)

    def unschedulable(self) -> list[str]:
        return sorted(self._unschedulable)

    def __len__(self) -> int:
        return len(self._active) + len(self._backoff) + len(self._unschedulable)

    @staticmethod
    def _active_order(info: QueuedPodInfo) -> tuple[int, float]:
        """``PrioritySort.Less``: higher priority first, then earlier timestamp."""
        return (-info.priority, info.timestamp)

    # -- informer events --------------------------------------------------------------------------

    def add(self, pod: Obj, now: float) -> None:
        """A new unscheduled pod: straight to activeQ."""
        key = object_key(pod)
        self._backoff.pop(key, None)
        self._unschedulable.pop(key, None)
        self._active[key] = QueuedPodInfo(pod, now, initial_attempt_timestamp=None)

    def update(self, pod: Obj, now: float) -> None:
        """The pod changed: refresh it where it is; an update may make an unschedulable pod fit, so it
        moves on (to backoffQ if still backing off, else activeQ)."""
        key = object_key(pod)
        for queue in (self._active, self._backoff):
            if key in queue:
                queue[key].pod = pod
                return
        info = self._unschedulable.pop(key, None)
        if info is None:
            if key not in self._in_flight:
                self.add(pod, now)
            return
        info.pod = pod
        self._requeue(info, now)

    def delete(self, pod: Obj) -> None:
        key = object_key(pod)
        for queue in (self._active, self._backoff, self._unschedulable):
            queue.pop(key, None)

    # -- the scheduling loop ----------------------------------------------------------------------

    def flush(self, now: float) -> None:
        """Move finished backoffs to activeQ (``flushBackoffQCompleted``) and pods stuck too long in
        unschedulablePods back into play (``flushUnschedulablePodsLeftover``)."""
        for key, info in list(self._backoff.items()):
            if backoff_expiry(info) <= now:
                del self._backoff[key]
                self._active[key] = info
        stale = [
            i
            for i in self._unschedulable.values()
            if now - i.timestamp >= POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION
        ]
        for info in stale:
            del self._unschedulable[info.key]
            self._requeue(info, now)

    def pop(self, now: float) -> tuple[QueuedPodInfo | None, float | None]:
        """The next pod to try, or None and the time at which one will be ready (None: wait for events)."""
        self.flush(now)
        if self._active:
            info = min(self._active.values(), key=self._active_order)
            del self._active[info.key]
            info.attempts += 1
            if info.initial_attempt_timestamp is None:
                info.initial_attempt_timestamp = now
            self.scheduling_cycle += 1
            self._in_flight.add(info.key)
            return info, None
        deadlines = [backoff_expiry(i) for i in self._backoff.values()]
        deadlines += [
            i.timestamp + POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION for i in self._unschedulable.values()
        ]
        return None, min(deadlines, default=None)

    def add_unschedulable(
        self, info: QueuedPodInfo, now: float, *, pod_scheduling_cycle: int | None = None
    ) -> None:
        """``AddUnschedulableIfNotPresent``: the attempt failed. The pod's timestamp becomes ``now``, so
        its backoff counts from this failure."""
        self._in_flight.discard(info.key)
        info.timestamp = now
        cycle = self.scheduling_cycle if pod_scheduling_cycle is None else pod_scheduling_cycle
        if self._move_request_cycle >= cycle:
            self._backoff[info.key] = info  # an event came during the attempt: retry after backoff
        else:
            self._unschedulable[info.key] = info

    def done(self, key: str) -> None:
        """The attempt is over (bound, or requeued): the pod is no longer in flight."""
        self._in_flight.discard(key)

    def move_all_to_active_or_backoff(self, event: str, now: float) -> None:
        """``MoveAllToActiveOrBackoffQueue``: a cluster event may have made unschedulable pods fit."""
        for info in list(self._unschedulable.values()):
            del self._unschedulable[info.key]
            self._requeue(info, now)
        self._move_request_cycle = self.scheduling_cycle

    def _requeue(self, info: QueuedPodInfo, now: float) -> None:
        if backoff_expiry(info) > now:
            self._backoff[info.key] = info
        else:
            self._active[info.key] = info


__all__ = [
    "ASSIGNED_POD_DELETE",
    "NODE_ADD",
    "NODE_UPDATE",
    "POD_INITIAL_BACKOFF_DURATION",
    "POD_MAX_BACKOFF_DURATION",
    "POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION",
    "QueuedPodInfo",
    "SchedulingQueue",
    "backoff_duration",
]
