"""What a fault caused, counted from the trace since it was applied.

A fault is only a cause; the lesson is what the control plane does about it. So the instructor's
console shows, for each fault in force, what the cluster's trace has recorded since: the requests that
failed, by status code (a stopped kubelet makes ``kubectl logs`` answer 500; a restarted API server
answers 503 while it starts), the requests refused with 429 by API Priority and Fairness (a hot-looping
client), the watches the server cut (a restart closes every watch; a compaction leaves watchers
behind a 410), the clients that listed again after a watch of theirs was cut (the reflector's
re-list, client-go ``tools/cache/reflector.go``), and the pods the controller manager deleted (after a
node stops heartbeating, the taint eviction controller's evictions, ``pkg/controller/tainteviction``).

These are the same counts an operator reads off kube-apiserver's metrics (``apiserver_request_total``
by ``code``, ``apiserver_flowcontrol_rejected_requests_total``), taken from the trace so that each is
tied to the fault's moment. ``Tally`` is a pure core: it is offered events one at a time, in order,
and never reads the trace itself.

``Episodes`` follows the faults of one cluster through its trace: each ``fault.applied`` opens an
episode (applying the same fault again while it is in force renews it, as the service does), and its
``fault.cleared`` closes it. What a fault causes does not stop at its clearing: the re-lists after an
API server restart, the evictions' replacements after a kubelet comes back. So an episode keeps
counting for ``AFTERMATH`` seconds (cluster time) after it was cleared, then only its figures remain,
for the last ``KEEP`` episodes.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from controlplane.trace.nodes import CONTROLLER_MANAGER

#: Why a watch ended when its client ended it, or its time was up: not a broken watch.
_ORDINARY_ENDS: Final = frozenset({"timeout", "the client went away"})


@dataclass
class Tally:
    """What happened in one cluster after ``since_seq`` (the fault's ``fault.applied`` event)."""

    since_seq: int
    #: Status code -> requests answered with it (400 and above, 429 included).
    failed: Counter[int] = field(default_factory=Counter)
    broken_watches: int = 0
    relists: int = 0
    pods_deleted: int = 0
    #: Clients whose watch the server cut and who have not listed again since.
    _cut: set[str] = field(default_factory=set)

    def offer(self, event: Mapping[str, Any]) -> None:
        """Count ``event`` if it came after the fault (events at or before ``since_seq`` are ignored)."""
        seq = event.get("seq")
        if not isinstance(seq, int) or seq <= self.since_seq:
            return
        kind = event.get("type")
        if kind == "request.completed":
            self._completed(event)
        elif kind == "watch.closed" and self._cut_by_the_server(event):
            self.broken_watches += 1
            client = event.get("to")
            if isinstance(client, str):
                self._cut.add(client)

    @staticmethod
    def _cut_by_the_server(event: Mapping[str, Any]) -> bool:
        # A watch of the API server's own cache on the store is the server's business; what the
        # lesson shows is a client's watch being cut (not ended by its client, nor timed out).
        return event.get("source") != "store" and event.get("reason") not in _ORDINARY_ENDS

    def _completed(self, event: Mapping[str, Any]) -> None:
        code = event.get("code")
        if isinstance(code, int) and code >= 400:
            self.failed[code] += 1
        client = event.get("from")
        verb = event.get("verb")
        ok = isinstance(code, int) and code < 400
        if verb == "list" and ok and client in self._cut:
            self._cut.discard(client)  # one re-list per cut watch, however many lists follow
            self.relists += 1
        if verb == "delete" and ok and event.get("resource") == "pods" and client == CONTROLLER_MANAGER:
            self.pods_deleted += 1

    @property
    def throttled(self) -> int:
        """Requests refused with 429 Too Many Requests."""
        return self.failed[429]

    def as_json(self) -> dict[str, Any]:
        return {
            "since_seq": self.since_seq,
            "failed": {str(code): count for code, count in sorted(self.failed.items())},
            "throttled": self.throttled,
            "broken_watches": self.broken_watches,
            "relists": self.relists,
            "pods_deleted": self.pods_deleted,
        }


#: Seconds of cluster time an episode keeps counting after its fault was cleared.
AFTERMATH: Final = 30.0
#: Episodes remembered per cluster once over.
KEEP: Final = 10


@dataclass
class Episode:
    """One fault on one cluster, from its ``fault.applied`` to its ``fault.cleared`` and aftermath."""

    fault: str
    target: str
    params: Mapping[str, Any]
    applied_seq: int
    applied_ts: float
    reason: str
    tally: Tally
    cleared_ts: float | None = None
    cleared_reason: str | None = None

    def counting(self, ts: float) -> bool:
        return self.cleared_ts is None or ts <= self.cleared_ts + AFTERMATH

    def as_json(self) -> dict[str, Any]:
        return {
            "fault": self.fault,
            "target": self.target,
            "params": dict(self.params),
            "applied_seq": self.applied_seq,
            "applied_ts": self.applied_ts,
            "reason": self.reason,
            "in_force": self.cleared_ts is None,
            "cleared_ts": self.cleared_ts,
            "cleared_reason": self.cleared_reason,
            "caused": self.tally.as_json(),
        }


class Episodes:
    """The fault episodes of one cluster, built from its trace events offered in order."""

    def __init__(self) -> None:
        self.last_seq = 0
        self._open: dict[tuple[str, str], Episode] = {}
        self._counting: list[Episode] = []
        self._done: deque[Episode] = deque(maxlen=KEEP)

    def offer(self, event: Mapping[str, Any]) -> None:
        seq, ts = event.get("seq"), event.get("ts")
        if not isinstance(seq, int) or seq <= self.last_seq:
            return
        self.last_seq = seq
        now = float(ts) if isinstance(ts, int | float) else 0.0
        kind = event.get("type")
        key = (str(event.get("fault", "")), str(event.get("target", "")))
        if kind == "fault.applied" and key not in self._open:
            params = event.get("params")
            episode = Episode(
                fault=key[0],
                target=key[1],
                params=params if isinstance(params, Mapping) else {},
                applied_seq=seq,
                applied_ts=now,
                reason=str(event.get("reason", "")),
                tally=Tally(since_seq=seq),
            )
            self._open[key] = episode
            self._counting.append(episode)
        elif kind == "fault.cleared" and key in self._open:
            episode = self._open.pop(key)
            episode.cleared_ts = now
            episode.cleared_reason = str(event.get("reason", ""))
        for episode in list(self._counting):
            if episode.counting(now):
                episode.tally.offer(event)
            else:
                self._counting.remove(episode)
                self._done.append(episode)

    def episodes(self) -> list[Episode]:
        """Every episode remembered, newest first."""
        return sorted([*self._done, *self._counting], key=lambda e: e.applied_seq, reverse=True)


__all__ = ["AFTERMATH", "KEEP", "Episode", "Episodes", "Tally"]
