"""The book of faults: which faults are in force on which cluster, which wait to start, and until when.

The pure core of the fault service (``service.py``): no I/O, no tasks, time passed in as ``now``
(seconds of the cluster clock). The service asks it what to do, does it, and tells the trace.

- ``add`` puts a fault in the book. One that starts now is **in force**; one given a ``delay`` is
  **pending** until then. A lasting fault ends at its start plus its duration, and never later than
  its kind's ``max_duration`` after it (a fault "until cleared" too): no fault outlives its maximum.
  A fault that happens at once (a compaction, a restart) has no end: it is in force while its effect
  runs, and the service removes it when that is done.
- The same fault again (same cluster, kind and parameters) does not stack on itself: if it is in
  force its time starts anew (``RENEWED``), if it is under way at once it is not started twice
  (``UNDER_WAY``). Different faults stack: two nodes' kubelets stopped, a hot loop besides.
- ``due(now)`` and ``expired(now)`` take out what must start and what must end at ``now``;
  ``next_deadline()`` says when the service should look next.
- ``remove``, ``matching`` and ``drop_cluster`` are for clearing: one fault, those of a kind (with
  given parameters), or every fault of a cluster that hibernates or is made anew.
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from controlplane.faults.catalogue import FaultSpec


class Outcome(enum.Enum):
    """What ``FaultBook.add`` did."""

    #: In force from now.
    APPLIED = "applied"
    #: Waiting for its start.
    PENDING = "pending"
    #: The same fault was in force (or pending): its time starts anew from this one's.
    RENEWED = "renewed"
    #: The same fault happens at once and is under way now: it is not started twice.
    UNDER_WAY = "under way"


@dataclass(frozen=True)
class Fault:
    """One fault in the book: a kind with its parameters, on one cluster, from ``starts_at`` to
    ``ends_at`` (None: it happens at once and ends when its effect is done)."""

    id: str
    cluster: str
    spec: FaultSpec
    starts_at: float
    ends_at: float | None
    #: Who applied it and why (``chapter control-plane/05-nodes, step stop-a-kubelet``).
    reason: str = ""
    #: The user who applied it ("" for the lab itself), as the cluster's audit log names them.
    actor: str = ""

    @property
    def kind(self) -> str:
        return self.spec.kind

    @property
    def target(self) -> str:
        return self.spec.target

    @property
    def lasting(self) -> bool:
        return self.spec.definition.lasting

    def as_json(self) -> dict[str, Any]:
        """The fault as the service and ``manage.py fault`` report it."""
        return {
            "id": self.id,
            "cluster": self.cluster,
            **self.spec.as_written(),
            "target": self.target,
            "starts_at": self.starts_at,
            "ends_at": self.ends_at,
            "reason": self.reason,
        }


class FaultBook:
    """Every fault in force or pending, of every cluster of one lab (see the module's docstring)."""

    def __init__(self) -> None:
        self._in_force: dict[str, Fault] = {}
        self._pending: dict[str, Fault] = {}
        self._ids = itertools.count(1)

    # -- reading ---------------------------------------------------------------------------------

    def in_force(self, cluster: str | None = None) -> list[Fault]:
        """The faults in force (on ``cluster``), oldest first."""
        return [f for f in self._in_force.values() if cluster is None or f.cluster == cluster]

    def pending(self, cluster: str | None = None) -> list[Fault]:
        """The faults waiting for their start (on ``cluster``), in the order they were added."""
        return [f for f in self._pending.values() if cluster is None or f.cluster == cluster]

    def get(self, fault_id: str) -> Fault | None:
        return self._in_force.get(fault_id) or self._pending.get(fault_id)

    def matching(
        self, cluster: str, kind: str | None = None, params: Mapping[str, Any] | None = None
    ) -> list[Fault]:
        """The faults of ``cluster`` (in force, then pending) of ``kind`` (any, if None) whose
        parameters include ``params``."""
        wanted = dict(params or {})
        return [
            fault
            for fault in (*self._in_force.values(), *self._pending.values())
            if fault.cluster == cluster
            and (kind is None or fault.kind == kind)
            and all(fault.spec.parameters().get(k) == v for k, v in wanted.items())
        ]

    def next_deadline(self) -> float | None:
        """When something must start or end next (None: nothing will, until something is added)."""
        times = [f.starts_at for f in self._pending.values()]
        times += [f.ends_at for f in self._in_force.values() if f.ends_at is not None]
        return min(times, default=None)

    # -- changing --------------------------------------------------------------------------------

    def add(
        self,
        cluster: str,
        spec: FaultSpec,
        *,
        now: float,
        reason: str = "",
        delay: float = 0.0,
        actor: str = "",
    ) -> tuple[Fault, Outcome]:
        """Add the fault ``spec`` on ``cluster``, starting ``delay`` seconds after ``now``; the fault
        as the book now holds it, and what happened (``Outcome``)."""
        starts_at = now + max(0.0, delay)
        same = next(
            (f for f in (*self._in_force.values(), *self._pending.values()) if self._same(f, cluster, spec)),
            None,
        )
        if same is not None and not same.lasting:
            return same, Outcome.UNDER_WAY
        ends_at = self._ends_at(spec, starts_at)
        if same is not None:
            renewed = replace(
                same, spec=spec, ends_at=ends_at, reason=reason or same.reason, actor=actor or same.actor
            )
            if same.id in self._in_force:
                self._in_force[same.id] = renewed
            else:
                self._pending[same.id] = replace(renewed, starts_at=starts_at)
                renewed = self._pending[same.id]
            return renewed, Outcome.RENEWED
        fault = Fault(f"f{next(self._ids)}", cluster, spec, starts_at, ends_at, reason, actor)
        if starts_at > now:
            self._pending[fault.id] = fault
            return fault, Outcome.PENDING
        self._in_force[fault.id] = fault
        return fault, Outcome.APPLIED

    def remove(self, fault_id: str) -> Fault | None:
        """Take one fault out of the book (in force or pending); None if it is not there."""
        return self._in_force.pop(fault_id, None) or self._pending.pop(fault_id, None)

    def drop_cluster(self, cluster: str) -> list[Fault]:
        """Take out every fault of ``cluster``, in force and pending; those that were in force."""
        for fault in self.pending(cluster):
            del self._pending[fault.id]
        gone = self.in_force(cluster)
        for fault in gone:
            del self._in_force[fault.id]
        return gone

    def due(self, now: float) -> list[Fault]:
        """The pending faults whose start has come, now in force, in the order they were added."""
        started = [f for f in self._pending.values() if f.starts_at <= now]
        for fault in started:
            del self._pending[fault.id]
            self._in_force[fault.id] = fault
        return started

    def expired(self, now: float) -> list[Fault]:
        """The lasting faults whose time is up at ``now``, taken out of the book."""
        ended = [f for f in self._in_force.values() if f.ends_at is not None and f.ends_at <= now]
        for fault in ended:
            del self._in_force[fault.id]
        return ended

    # -- helpers ---------------------------------------------------------------------------------

    @staticmethod
    def _same(fault: Fault, cluster: str, spec: FaultSpec) -> bool:
        return fault.cluster == cluster and fault.spec.key == spec.key

    @staticmethod
    def _ends_at(spec: FaultSpec, starts_at: float) -> float | None:
        definition = spec.definition
        if not definition.lasting:
            return None
        duration = definition.max_duration if spec.duration is None else spec.duration
        return starts_at + min(duration, definition.max_duration)


__all__ = ["Fault", "FaultBook", "Outcome"]
