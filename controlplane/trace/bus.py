"""The trace bus: where one cluster's trace events are numbered, kept and handed to whoever watches.

Every part of a cluster (the store, the API server's stages, the scheduler, the controllers, the
kubelets) is given the cluster's bus as its ``TraceSink`` and calls ``emit`` as it works. The bus
turns each call into a full event (``schema.py``): it stamps the envelope (``v``, ``cluster``, the
next ``seq``, the time ``ts``, and the Audit-ID ``id`` of the request being served when the emitter did
not give one), records it in the cluster's ``Recorder``, and appends it to the log its subscribers read.

**seq is gapless per cluster.** The bus alone hands out seqs, one per event it makes, in the order
the events happen (everything runs on the cluster's event loop, so ``emit`` is never interleaved). A
subscriber that finds a gap, or reconnects, asks the recorder for everything after the last seq it
saw (``recorder.since``), as Zulip's clients do after a missed event.

**Cheap when nobody watches.** A cluster without viewers pays no serialisation and no channel
traffic for its trace. The bus never serialises: events stay the dicts they were made as, in memory,
until someone exports a run (``export.py``) or the websocket layer sends a frame. It sends nothing by
itself: subscribers pull batches. What is left is making the dict and appending it to a ring buffer
for each event. ``recording=True`` (this class's default) spends that even while nobody watches, so
that an instructor can save a run that nobody was watching live; a lab's clusters use
``recording=False`` unless ``KUBELAB_TRACE_RECORD`` says otherwise, because a busy API server makes
many events (every watch event to every watcher is one). Then ``enabled`` is False while nobody
subscribes, and every emitter skips building its event (``if trace.enabled: ...``). Events made while
someone subscribes are always recorded, so a subscriber can always re-sync.

**Subscribers pull batches.** ``subscribe()`` returns a ``Subscription``, and the websocket consumer
takes its events as a ``Batch`` (``await next_batch()``, or ``wait()`` then ``drain()`` at its own frame
rate: ~30 frames a second, each carrying many events). A subscriber that falls more than
``max_pending`` events behind is not allowed to grow without bound, and nothing is dropped silently:
it stops taking events, and its next batch says exactly which seqs it ``missed``, so the consumer can
fetch them from the recorder or show a summary (``summarise``).

**One log, many cursors: an event costs the same however many watch.** Five hundred browsers watching
a cluster that makes 2000 events a second would be a million queue appends and wake-ups a second if
the bus handed every event to every subscriber. It does not. Events go into one shared log (a list,
in seq order) and a subscription is only a cursor into it: the next seq it takes. ``drain`` is one
slice of the log, from the cursor to the newest event. Waking waiting subscribers is one future that
all of them await, resolved by the first event after they began to wait: one wake-up per batch, not
per event. Whether a subscriber has fallen ``max_pending`` behind is worked out from counts when it is
looked at, not on every emit. The log drops what every subscriber has taken every ``LOG_TRIM`` events
or so, the only time the bus visits its subscribers; a subscriber that fell behind then keeps its
``max_pending`` events itself, so one that never drains (a stuck socket) cannot make the log grow.

``emit`` never raises and never blocks: a bug in tracing must not break the cluster it traces.

**A mirror** (``TraceBus.mirror``) is a bus for a cluster that runs in another process: with several
web processes, a browser's socket may land on one that does not run its cluster. Nothing emits on a
mirror; the relay (``controlplane/consumers/relay.py``) hands it the owner's events with the owner's
seqs (``publish_remote``), and fills in older ones on request (``backfill``). Its subscribers and its
recorder work exactly as a real bus's do.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from controlplane.trace.context import current_request_id
from controlplane.trace.recorder import DEFAULT_CAPACITY, Event, OutOfOrder, Recorder, Untraced
from controlplane.trace.schema import SCHEMA_VERSION, validate

logger = logging.getLogger(__name__)

#: Events a subscriber may have waiting before its queue stops taking them (it then learns what it missed).
DEFAULT_MAX_PENDING = 10_000

#: The shared log is trimmed (what every subscriber has taken is dropped) when it grows past this.
LOG_TRIM = 1024

#: The envelope fields only the bus sets.
_STAMPED = frozenset({"v", "cluster", "seq", "ts", "type"})


@dataclass(frozen=True, slots=True)
class Batch:
    """What a subscriber takes at once: events in seq order, then the seqs it missed right after them.

    ``missed`` is ``(first, last)``, inclusive, when the subscriber fell ``max_pending`` behind: those
    events are in the recorder (while it still holds them); the events of later batches follow them.
    """

    events: list[Event]
    missed: tuple[int, int] | None = None

    @property
    def missed_count(self) -> int:
        return 0 if self.missed is None else self.missed[1] - self.missed[0] + 1

    @property
    def last_seq(self) -> int | None:
        """The last seq this batch accounts for (delivered or missed)."""
        if self.missed is not None:
            return self.missed[1]
        return self.events[-1]["seq"] if self.events else None

    def __bool__(self) -> bool:
        return bool(self.events) or self.missed is not None


class Subscription:
    """One subscriber's place in its bus's stream of events (a browser's websocket, a test, the relay).

    Made by ``TraceBus.subscribe``; ``close()`` (or leaving ``with``) unsubscribes. Iterating with
    ``async for batch in subscription`` yields batches until the subscription or the bus is closed.

    A subscription owns no copy of the live events: it is a cursor (``_next``, the next seq to take)
    into the bus's shared log. Only what it must keep for itself goes into its own ``_queue``: the
    recorded backlog of a re-sync, and, once it has fallen ``max_pending`` behind, the ``max_pending``
    events it still gets (everything after them, from ``_missed_from`` on, is missed until it drains).
    Whether it has fallen behind is worked out when it is looked at (``_settle``), not on every emit,
    and gives the same answer as counting event by event would: its queue stays as it was between two
    drains, so the first seq that did not fit is known from the counts alone.
    """

    def __init__(self, bus: TraceBus, *, max_pending: int, backlog: Iterable[Event] = ()) -> None:
        self.bus = bus
        self.max_pending = max_pending
        self._queue: collections.deque[Event] = collections.deque(backlog)
        #: The next seq to take from the bus's log.
        self._next = bus.last_seq + 1
        #: Set once it fell behind: every seq from here on is missed, until the next full drain.
        self._missed_from: int | None = None
        #: The last seq it sees, once closed (the bus's newest then).
        self._end: int | None = None
        self._missed_taken = 0

    # -- where it stands ----------------------------------------------------------------------------

    def _last(self) -> int:
        return self.bus._seq if self._end is None else self._end

    def _settle(self) -> None:
        """If more events have come than its queue has room for, fix the first seq that did not fit.

        The events before it are moved from the shared log into the subscription's own queue, so that
        the log need not keep them for it; the missed range then grows with every new event for free.
        """
        if self._missed_from is not None:
            return
        room = max(self.max_pending - len(self._queue), 0)
        if self._last() - self._next + 1 > room:
            boundary = self._next + room
            self._queue.extend(self.bus._logged(self._next, boundary))
            self._next = self._missed_from = boundary

    def _missed_range(self) -> tuple[int, int] | None:
        last = self._last()
        if self._missed_from is None or self._missed_from > last:
            return None
        return (self._missed_from, last)

    def _ready(self) -> bool:
        return bool(self._queue) or self._last() >= self._next

    def _end_here(self) -> None:
        """No more events: keep what waits in the subscription's own queue (the log may drop it)."""
        if self._end is not None:
            return
        self._settle()
        self._end = self.bus._seq
        if self._missed_from is None:
            self._queue.extend(self.bus._logged(self._next, self._end + 1))
            self._next = self._end + 1

    # -- the subscriber's side -----------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._end is not None

    @property
    def pending(self) -> int:
        """Events waiting to be taken (missed ones not counted)."""
        self._settle()
        stop = self._missed_from if self._missed_from is not None else self._last() + 1
        return len(self._queue) + stop - self._next

    @property
    def missed_total(self) -> int:
        """Events this subscriber missed because it was too far behind, in all (so far)."""
        self._settle()
        missed = self._missed_range()
        return self._missed_taken + (0 if missed is None else missed[1] - missed[0] + 1)

    def drain(self, max_events: int | None = None) -> Batch:
        """Take what is waiting now, without waiting (possibly an empty batch).

        With ``max_events``, take at most that many; a ``missed`` range is reported only with the last
        of the events before it, so batches always follow each other in seq order.
        """
        self._settle()
        stop = self._missed_from if self._missed_from is not None else self._last() + 1
        if max_events is None or max_events >= self.pending:
            live = self.bus._logged(self._next, stop)
            events = [*self._queue, *live] if self._queue else live
            self._queue.clear()
            missed = self._missed_range()
            if missed is not None:
                self._missed_taken += missed[1] - missed[0] + 1
            self._next, self._missed_from = self._last() + 1, None
            return Batch(events, missed)
        take = max(max_events, 0)
        events = [self._queue.popleft() for _ in range(min(take, len(self._queue)))]
        if len(events) < take:
            live = self.bus._logged(self._next, min(self._next + take - len(events), stop))
            events.extend(live)
            self._next += len(live)
        return Batch(events)

    async def wait(self) -> bool:
        """Wait until there is something to take; False once the subscription has ended empty."""
        while not self._ready():
            if self.closed:
                return False
            await self.bus._changed()
        return True

    async def next_batch(self, max_events: int | None = None) -> Batch | None:
        """Wait for events and take them; None once the subscription is closed and emptied."""
        if not await self.wait():
            return None
        return self.drain(max_events)

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> Batch:
        batch = await self.next_batch()
        if batch is None:
            raise StopAsyncIteration
        return batch

    def close(self) -> None:
        """Unsubscribe; events already waiting can still be drained. Idempotent."""
        self._end_here()
        self.bus._unsubscribe(self)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class TraceBus:
    """One cluster's trace: a ``TraceSink`` that numbers, records and fans out events.

    ``capacity`` bounds the recorder; ``recording`` keeps events while nobody subscribes (see the
    module's docstring); ``now`` gives ``ts`` (pass the cluster clock's ``now``); ``check_schema``
    validates every event against the schema and keeps what is wrong in ``problems`` (for tests and
    development: it costs time on every event).
    """

    def __init__(
        self,
        cluster: str,
        *,
        capacity: int = DEFAULT_CAPACITY,
        recording: bool = True,
        now: Callable[[], float] = time.time,
        max_pending: int = DEFAULT_MAX_PENDING,
        check_schema: bool = False,
    ) -> None:
        self.cluster = cluster
        self.recorder = Recorder(capacity, cluster=cluster)
        self.recording = recording
        self.max_pending = max_pending
        self.check_schema = check_schema
        #: ``(seq, type, problems)`` of each event that did not fit the schema (with ``check_schema``).
        self.problems: list[tuple[int, str, list[str]]] = []
        self._now = now
        self._seq = 0
        #: The last seq before the trace went off because nobody watched (None: it never did). The
        #: cluster went on meanwhile, untraced: a subscriber that last saw this seq or an older one
        #: cannot catch up from the recorder (``Untraced``), only from a full state.
        self.untraced_after: int | None = None if recording else 0
        self._subscribers: tuple[Subscription, ...] = ()
        self._closed = False
        #: The shared log: the events from seq ``_log_first`` to ``_seq`` that some subscriber may still take.
        self._log: list[Event] = []
        self._log_first = 1
        self._trim_at = LOG_TRIM
        #: What waiting subscribers await: resolved (once) by the next event, or by a close.
        self._wake: asyncio.Future[None] | None = None

    def __repr__(self) -> str:
        return (
            f"<TraceBus {self.cluster} seq={self._seq} recorded={len(self.recorder)} "
            f"subscribers={len(self._subscribers)}>"
        )

    # -- TraceSink -----------------------------------------------------------------------------------

    @property
    def enabled(self) -> bool:
        """Whether emitters should build events: recording is on, or someone subscribes."""
        return (self.recording or bool(self._subscribers)) and not self._closed

    def emit(self, type: str, /, **fields: Any) -> None:
        """Stamp, record and fan out one event. Never raises, never blocks."""
        if not self.enabled:
            return
        try:
            self._seq += 1
            seq = self._seq
            ts = self._now()
            event: Event = {"v": SCHEMA_VERSION, "cluster": self.cluster, "seq": seq, "ts": ts, "type": type}
            if "id" not in fields:
                request_id = current_request_id.get()
                if request_id is not None:
                    event["id"] = request_id
            event.update(fields)
            if not _STAMPED.isdisjoint(fields):  # an emitter's envelope field (often cluster): the bus's wins
                event.update(v=SCHEMA_VERSION, cluster=self.cluster, seq=seq, ts=ts, type=type)
            if self.check_schema:
                problems = validate(event, strict=True)
                if problems:
                    self.problems.append((seq, type, problems))
            self.recorder.append(event)
            if self._subscribers:
                self._log.append(event)
                self._logged_more()
        except Exception:  # tracing must never break the cluster it traces
            logger.exception("trace bus of cluster %r could not emit a %s event", self.cluster, type)

    # -- subscribers ---------------------------------------------------------------------------------

    def subscribe(self, *, since: int | None = None, max_pending: int | None = None) -> Subscription:
        """A new subscription to every event from now on.

        With ``since``, it first gets the recorded events after seq ``since`` (a re-sync); the
        recorder raises ``TooOld`` if some of them are gone. Nothing can slip in between the backlog
        and the live events: both happen on the event loop, without an ``await`` in between.
        """
        if self._closed:
            raise RuntimeError(f"the trace bus of cluster {self.cluster!r} is closed")
        backlog = self.since(since) if since is not None else []
        if not self._subscribers:  # nobody needed the log: it starts afresh after the newest event
            self._log.clear()
            self._log_first = self._seq + 1
        subscription = Subscription(
            self, max_pending=max_pending if max_pending is not None else self.max_pending, backlog=backlog
        )
        self._subscribers = (*self._subscribers, subscription)
        return subscription

    def since(self, seq: int) -> list[Event]:
        """The recorded events after ``seq``, for a subscriber catching up: ``TooOld`` if some have left
        the recorder, ``Untraced`` if the cluster went on untraced after it (nobody watched). ``seq`` 0
        asks for whatever is held (a deep link's history), not for a gapless catch-up."""
        if seq and self.untraced_after is not None and seq <= self.untraced_after:
            raise Untraced(seq, self.untraced_after)
        return self.recorder.since(seq)

    def _unsubscribe(self, subscription: Subscription) -> None:
        self._subscribers = tuple(s for s in self._subscribers if s is not subscription)
        if not self._subscribers and not self.recording:
            self.untraced_after = self._seq  # from here on nothing is traced until someone subscribes
        self._wake_up()  # its own waiter, if any, learns that it has ended

    # -- the shared log and the wake-up ---------------------------------------------------------------

    def _logged(self, start: int, stop: int) -> list[Event]:
        """The logged events with ``start <= seq < stop`` (a subscriber's share: always still logged)."""
        if stop <= start:
            return []
        if start < self._log_first:
            raise RuntimeError(f"seq {start} has left the trace log of {self.cluster!r} while still wanted")
        return self._log[start - self._log_first : stop - self._log_first]

    def _logged_more(self) -> None:
        """Events were added to the log: trim it if it has grown, and wake whoever waits."""
        if len(self._log) > self._trim_at:
            self._trim()
        self._wake_up()

    def _trim(self) -> None:
        """Drop the logged events that every subscriber has taken (or will only count as missed).

        Once every ``LOG_TRIM`` events or so: the only work the bus does per subscriber, and not per event.
        """
        subscribers = self._subscribers
        for subscription in subscribers:
            subscription._settle()  # one that fell behind keeps its share itself, and holds nothing here
        keep_from = min((s._next for s in subscribers if s._missed_from is None), default=self._seq + 1)
        del self._log[: keep_from - self._log_first]
        self._log_first = keep_from
        self._trim_at = max(2 * len(self._log), LOG_TRIM)

    def _changed(self) -> Awaitable[None]:
        """What a subscriber awaits for the next event or close: one future for all of them."""
        wake = self._wake
        if wake is None or wake.get_loop() is not asyncio.get_running_loop():
            wake = self._wake = asyncio.get_running_loop().create_future()
        return asyncio.shield(wake)  # a waiter that is cancelled must not cancel the others' wake-up

    def _wake_up(self) -> None:
        wake, self._wake = self._wake, None
        if wake is not None and not wake.done():
            wake.set_result(None)

    @property
    def subscribers(self) -> int:
        return len(self._subscribers)

    @property
    def logged(self) -> int:
        """Events the shared log holds for subscribers that have not taken them yet (and a few more)."""
        return len(self._log)

    @property
    def last_seq(self) -> int:
        """The seq of the newest event made (0 before the first)."""
        return self._seq

    @property
    def closed(self) -> bool:
        return self._closed

    # -- a mirror of another process's bus ------------------------------------------------------------

    @classmethod
    def mirror(
        cls,
        cluster: str,
        *,
        last_seq: int,
        capacity: int = DEFAULT_CAPACITY,
        max_pending: int = DEFAULT_MAX_PENDING,
    ) -> TraceBus:
        """A bus showing cluster ``cluster`` of another process, whose newest event so far is ``last_seq``.

        Its events come from ``publish_remote`` only (nobody emits on it), and it records all of them.
        """
        bus = cls(cluster, capacity=capacity, recording=True, max_pending=max_pending)
        bus._seq = last_seq
        return bus

    def publish_remote(self, events: Sequence[Event]) -> None:
        """Record and fan out events that another process's bus stamped, keeping their seqs.

        They must follow ``last_seq`` without a gap: ``OutOfOrder`` otherwise, and none is taken.
        """
        if [e["seq"] for e in events] != list(range(self._seq + 1, self._seq + 1 + len(events))):
            raise OutOfOrder(f"relayed events do not follow seq {self._seq} without a gap")
        for event in events:
            self.recorder.append(event)
        self._seq += len(events)
        if self._subscribers and events:
            self._log.extend(events)
            self._logged_more()

    def backfill(self, older: Sequence[Event]) -> None:
        """Record events from before the oldest one recorded (or, with none recorded, up to ``last_seq``).

        Events already recorded are ignored; see ``Recorder.backfill`` for the rest.
        """
        first = self.recorder.first_seq
        older = [e for e in older if e["seq"] < (first if first is not None else self._seq + 1)]
        if first is None and older and older[-1]["seq"] != self._seq:
            raise OutOfOrder(f"events up to seq {older[-1]['seq']} do not lead up to seq {self._seq}")
        self.recorder.backfill(older)

    def close(self) -> None:
        """End every subscription (they can still drain what waits) and make no more events."""
        self._closed = True
        subscribers, self._subscribers = self._subscribers, ()
        for subscription in subscribers:
            subscription._end_here()
        self._log.clear()
        self._log_first = self._seq + 1
        self._wake_up()


def summarise(events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Exact counts of ``events`` by type, with the nodes they came from and went to.

    What a frame carries instead of the events themselves when a viewer cannot keep up
    (``1240 watch.event to 12 nodes``), so that nothing disappears without a word.
    """
    groups: dict[str, dict[str, Any]] = {}
    for event in events:
        group = groups.setdefault(
            str(event.get("type")), {"type": event.get("type"), "count": 0, "from": set(), "to": set()}
        )
        group["count"] += 1
        for side in ("from", "to"):
            if isinstance(node := event.get(side), str):
                group[side].add(node)
    return [
        {**g, "from": sorted(g["from"]), "to": sorted(g["to"])}
        for g in sorted(groups.values(), key=lambda g: (-g["count"], str(g["type"])))
    ]


__all__ = ["DEFAULT_MAX_PENDING", "LOG_TRIM", "Batch", "Subscription", "TraceBus", "summarise"]
