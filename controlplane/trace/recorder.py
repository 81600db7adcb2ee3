"""The recorder: a cluster's recent trace, kept in memory so that it can be asked about afterwards.

The browser draws events as they stream in, but a student also wants to stop, step back and ask
"what happened at revision 17?", "what did request 9c0e... do?", "what has the scheduler been up to?".
A browser that reconnects, or saw a gap in ``seq``, asks "everything after 41, please" (``since``).
And an instructor saves a run to replay it in class (``export.py``). All of that is answered here.

The recorder keeps the last ``capacity`` events of one cluster in ``seq`` order, as the plain dicts
the bus made: nothing is serialised until someone exports. When it is full, each new event pushes out
the oldest (a ring buffer), so memory stays bounded however long the cluster runs. Besides the events
it keeps three small indexes, updated as events come and go, so lookups do not scan the whole ring:

- by **revision** (``revision`` field): the transaction that wrote it, the watch events that carried
  it, the reconciles and scheduling attempts it triggered;
- by **request** (``id``, the Audit-ID): every step of one API request;
- by **diagram node** (``from`` and ``to``): everything that happened at or between ``scheduler``,
  ``kubelet:node-1``, ``user:alice`` ...

Queries by ``seq`` range and by time range use the ring itself. Pure code: no I/O, no clock, no
asyncio, so it is tested directly and shared by the bus (live) and by imports (replays).
"""

from __future__ import annotations

import collections
import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

#: Events a recorder keeps unless told otherwise (a busy classroom cluster makes ~100-1000 per second).
DEFAULT_CAPACITY = 50_000

Event = dict[str, Any]


class TooOld(LookupError):
    """The events after ``requested`` have partly left the recorder: re-sync from a full state.

    Zulip's ``BAD_EVENT_QUEUE_ID``: a client this far behind cannot catch up event by event.
    """

    def __init__(self, requested: int, oldest: int) -> None:
        super().__init__(f"events after seq {requested} are gone: the recorder starts at seq {oldest}")
        self.requested = requested
        self.oldest = oldest


class Untraced(TooOld):
    """The cluster went on while its trace was off (nobody watched, and it does not record unwatched):
    what changed after ``requested`` was never traced, so only a full state can catch up."""

    def __init__(self, requested: int, untraced_after: int) -> None:
        LookupError.__init__(
            self, f"nothing was traced after seq {untraced_after} while nobody watched: start from the state"
        )
        self.requested = requested
        self.oldest = untraced_after + 1
        self.untraced_after = untraced_after


class OutOfOrder(ValueError):
    """An event whose ``seq`` does not follow the last one recorded."""


class Recorder:
    """The last ``capacity`` events of one cluster, in ``seq`` order, with lookups."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY, *, cluster: str = "") -> None:
        if capacity < 1:
            raise ValueError(f"a recorder keeps at least one event, not {capacity}")
        self.capacity = capacity
        self.cluster = cluster
        self._events: collections.deque[Event] = collections.deque()
        #: Events pushed out to make room, since the recorder was made.
        self.evicted = 0
        self._by_revision: dict[int, collections.deque[int]] = {}
        self._by_request: dict[str, collections.deque[int]] = {}
        self._by_node: dict[str, collections.deque[int]] = {}

    # -- filling -------------------------------------------------------------------------------------

    def append(self, event: Event) -> None:
        """Record ``event`` (stamped: it has a ``seq``, one more than the last one recorded).

        The first event may start anywhere (an import of a run that had scrolled); after that, seqs
        must follow each other without a gap, which is what lets ``since`` answer exactly.
        """
        seq = event["seq"]
        last = self.last_seq
        if last is not None and seq != last + 1:
            raise OutOfOrder(f"event seq {seq} does not follow seq {last}")
        if len(self._events) >= self.capacity:
            self._evict()
        self._events.append(event)
        for index, key in self._index_keys(event):
            index.setdefault(key, collections.deque()).append(seq)

    def extend(self, events: Iterable[Event]) -> None:
        for event in events:
            self.append(event)

    def backfill(self, older: Sequence[Event]) -> None:
        """Put ``older`` events in front of the recorded ones: history that arrived after newer events.

        A mirror of another process's trace (``controlplane/consumers/relay.py``) records live events
        from the moment it joins, then fetches what came before when a subscriber asks for it. The
        events must follow each other and end right before ``first_seq``. Only as many of the newest
        as there is room for are kept: newer events are never pushed out for older ones.
        """
        room = self.capacity - len(self._events)
        kept = list(older[-room:]) if room > 0 else []
        if not kept:
            return
        first, newer = kept[0]["seq"], list(self._events)
        expected = list(range(first, first + len(kept)))
        if [e["seq"] for e in kept] != expected or (newer and newer[0]["seq"] != expected[-1] + 1):
            raise OutOfOrder(f"events {first}..{kept[-1]['seq']} do not lead up to seq {self.first_seq}")
        self._forget()
        self.extend([*kept, *newer])

    def clear(self) -> None:
        """Forget everything (the next event may start at any seq)."""
        self.evicted += len(self._events)
        self._forget()

    def _forget(self) -> None:
        self._events.clear()
        self._by_revision.clear()
        self._by_request.clear()
        self._by_node.clear()

    def _evict(self) -> None:
        oldest = self._events.popleft()
        self.evicted += 1
        for index, key in self._index_keys(oldest):
            seqs = index[key]
            seqs.popleft()  # the oldest event is the first of every list it is on
            if not seqs:
                del index[key]

    def _index_keys(
        self, event: Mapping[str, Any]
    ) -> Iterator[tuple[dict[Any, collections.deque[int]], Any]]:
        revision = event.get("revision")
        if isinstance(revision, int) and not isinstance(revision, bool):
            yield self._by_revision, revision
        request = event.get("id")
        if isinstance(request, str):
            yield self._by_request, request
        source, target = event.get("from"), event.get("to")
        if isinstance(source, str):
            yield self._by_node, source
        if isinstance(target, str) and target != source:
            yield self._by_node, target

    # -- reading -------------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._events)

    def __iter__(self) -> Iterator[Event]:
        return iter(self._events)

    @property
    def first_seq(self) -> int | None:
        """The oldest seq still recorded (None while empty)."""
        return self._events[0]["seq"] if self._events else None

    @property
    def last_seq(self) -> int | None:
        """The newest seq recorded (None while empty)."""
        return self._events[-1]["seq"] if self._events else None

    def get(self, seq: int) -> Event | None:
        """The event ``seq``, or None if it is not (or no longer) recorded."""
        first = self.first_seq
        if first is None or not first <= seq < first + len(self._events):
            return None
        return self._events[seq - first]

    def since(self, seq: int) -> list[Event]:
        """Every event after ``seq``, for a client that has seen up to ``seq`` (0: from the start).

        ``TooOld`` if some of them have already been pushed out: the client must start over from a
        full state rather than miss events silently.
        """
        first = self.first_seq
        if first is None:
            return []
        if seq < first - 1:
            raise TooOld(seq, first)
        return self.range(max(seq + 1, first))

    def range(self, start: int, end: int | None = None) -> list[Event]:
        """Events with ``start <= seq <= end`` (``end`` None: up to the newest) that are still recorded."""
        first = self.first_seq
        if first is None:
            return []
        lo = max(start - first, 0)
        hi = len(self._events) if end is None else min(end - first + 1, len(self._events))
        if lo >= hi:
            return []
        size = len(self._events)
        if lo <= size - hi:  # nearer the front: walk from the oldest
            return list(itertools.islice(self._events, lo, hi))
        newest_first = list(itertools.islice(reversed(self._events), size - hi, size - lo))
        newest_first.reverse()
        return newest_first

    def between(self, start: float, end: float) -> list[Event]:
        """Events with ``start <= ts <= end`` (cluster time, seconds since the epoch)."""
        return [e for e in self._events if start <= e["ts"] <= end]

    def at_revision(self, revision: int) -> list[Event]:
        """Events about store revision ``revision``: its write, its watch events, what it triggered."""
        return self._lookup(self._by_revision.get(revision))

    def for_request(self, request_id: str) -> list[Event]:
        """Every step of the API request with this Audit-ID."""
        return self._lookup(self._by_request.get(request_id))

    def for_node(self, node: str) -> list[Event]:
        """Events from or to diagram node ``node`` (``scheduler``, ``kubelet:node-1``, ``user:alice``)."""
        return self._lookup(self._by_node.get(node))

    def revisions(self) -> list[int]:
        return sorted(self._by_revision)

    def nodes(self) -> list[str]:
        return sorted(self._by_node)

    def _lookup(self, seqs: Iterable[int] | None) -> list[Event]:
        if seqs is None:
            return []
        return [e for seq in seqs if (e := self.get(seq)) is not None]


__all__ = ["DEFAULT_CAPACITY", "Event", "OutOfOrder", "Recorder", "TooOld"]
