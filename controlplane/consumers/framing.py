"""Framing: how one browser's share of a cluster's trace is cut into websocket frames.

A busy cluster makes hundreds or thousands of trace events a second. Sending each one as its own
websocket message would cost a message (and a JavaScript callback) per event; the page only redraws
about 30 times a second anyway. So the stream is cut into **frames**: at most one every
``FRAME_INTERVAL`` (33 ms) per socket, each carrying every event since the last one::

    {"type": "frame", "first": 41, "last": 43, "events": [{"seq": 41, ...}, {"seq": 42, ...}, ...]}

Frames keep the trace's promise: **gapless and in order**. Each frame accounts for every seq from
``first`` to ``last``, and the next frame starts at ``last + 1``. A browser that falls behind (its
socket is slow, its tab was in the background) is not sent an ever-growing pile, and nothing is
dropped silently either: what it cannot be sent is **summarised**, with exact counts, in the frame::

    {"type": "frame", "first": 41, "last": 1300, "events": [...41..60...],
     "summary": {"first": 61, "last": 1300, "counts": {"watch.event": 1240},
                 "text": "1,240 watch events to 12 kubelets"}}

The events come first (seqs ``first`` ...), then the summary covers the rest of the frame (its
``first`` to the frame's ``last``). A frame has a summary when the subscriber fell behind (the bus's
``Batch.missed``) or when one frame would carry more than ``MAX_FRAME_EVENTS`` events. The browser can
fetch the details of a summarised range with a ``resync`` (``recorder.since``) or just show the words.

A re-sync after a gap or a reconnect (Zulip's pattern: "give me everything after the last one I
have") is answered from the recorder in chunks of ``MAX_FRAME_EVENTS`` events, one chunk per frame,
then the live stream carries on, with no gap and no overlap in between.

**Many sockets, one frame.** Five hundred sockets watching one cluster at 30 frames a second are
15,000 frames a second; each costs the web server its own send, but it need not cost its own JSON.
Sockets frame on ticks that every socket of the process shares (``Ticks``: the multiples of
``FRAME_INTERVAL`` on the event loop's clock), so the sockets that keep up send, at the same moment,
the same events: the same frame. ``EventEncoder`` encodes each event once for all sockets, and renders
each frame once too (``render``); the other sockets send the same text. When the server cannot keep
up, a socket that finishes its frame after the next tick has begun waits for the one after: frames
come less often, each carrying more events, and the sockets stay in step.

Everything in this module is pure (no sockets, no clock, no asyncio): the ``Framer`` decides what the
next frame holds, ``summarise_omitted`` counts what a frame leaves out, ``EventEncoder`` turns events
into redacted JSON once for every socket, ``render_frame`` writes a frame as text, ``parse_request``
reads what the browser asks for, and ``Ticks`` (for sockets) and ``Pacer`` (for the relay) say how
long to wait before the next frame. The websocket consumer (``trace.py``) only moves bytes between
them and the bus.
"""

from __future__ import annotations

import collections
import json
import math
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from controlplane.trace.bus import Batch, TraceBus, summarise
from controlplane.trace.recorder import Event
from controlplane.trace.redaction import redact
from controlplane.trace.schema import PIPELINE_STAGES, SCHEMA_VERSION

#: Seconds between two frames of one socket, at least: about 30 frames a second.
FRAME_INTERVAL = 1 / 30

#: The most events one frame carries; the rest of what is due goes into its summary.
MAX_FRAME_EVENTS = 2000

#: The key under which a summary counts events the recorder no longer had (not an event type).
UNRECORDED = "unrecorded"

# Close codes and error codes (sent as ``{"type": "error", "code": ..., "message": ...}``). A server may
# close a websocket only with 1000 or a code from 3000 to 4999 (RFC 6455; daphne's autobahn refuses any
# other), so the stream's own codes are in the private range 4000-4999: 4001 and 4011 stand for the
# standard "going away" (1001) and "internal error" (1011) that a server may not send itself.
#: The cluster's trace has ended here (its bus closed: the lab stopped, a mirror lost its owner):
#: the page reconnects from the last seq it has.
TRACE_ENDED = 4001
#: The stream broke on the server's side (a bug): the page reconnects too.
STREAM_BROKEN = 4011
#: The socket may not watch this cluster (closed after the error).
FORBIDDEN = 4403
#: No cluster by that name (closed after the error).
UNKNOWN_CLUSTER = 4404
#: A client message the server cannot read (the socket stays open).
BAD_REQUEST = 400
#: The events after the requested seq are no longer recorded: start again from now.
GONE = 410
#: A state asked of a process that only mirrors the cluster (its store is elsewhere).
NOT_HERE = 501


# -- what the browser asks for ------------------------------------------------------------------------


class BadRequest(ValueError):
    """A client message that is not JSON, or not an action the stream knows (the client's fault)."""


@dataclass(frozen=True, slots=True)
class Subscribe:
    """``subscribe`` or ``resync``: stream every event after ``since`` (None: after the newest one now).

    Both restart the socket's stream: whatever was queued for it is dropped, and the next frame
    starts at ``since + 1``. ``resync`` is the same request sent after a gap; the name says why.
    """

    since: int | None
    resync: bool = False
    #: ``"state": true`` (with ``since`` null): first the cluster's state now (``state_message``),
    #: then every event after it. How a page starts, and starts again after a gap it cannot fill.
    state: bool = False


ACTIONS = ("subscribe", "resync")


def parse_request(text: str | None) -> Subscribe:
    """Read one client message; ``BadRequest`` says in words what is wrong with it."""
    if text is None:
        raise BadRequest("send JSON text, not binary data")
    try:
        message = json.loads(text)
    except ValueError:
        raise BadRequest("not JSON: send {'action': 'subscribe', 'since': null}") from None
    if not isinstance(message, dict):
        raise BadRequest("send a JSON object with an action")
    action = message.get("action")
    if action not in ACTIONS:
        raise BadRequest(f"unknown action {action!r}: use one of {', '.join(ACTIONS)}")
    since = message.get("since")
    if since is not None and (not isinstance(since, int) or isinstance(since, bool) or since < 0):
        raise BadRequest(f"since must be a seq (a whole number >= 0) or null, not {since!r}")
    state = message.get("state", False)
    if not isinstance(state, bool):
        raise BadRequest(f"state must be true or false, not {state!r}")
    if state and since is not None:
        raise BadRequest("state comes with since null: the state is now, and the stream follows it")
    return Subscribe(since=since, resync=action == "resync", state=state)


# -- what the server says -------------------------------------------------------------------------------


def hello_message(*, cluster: str, last_seq: int, timing: str) -> dict[str, Any]:
    """The first message on an accepted socket: which cluster, how far its trace is, which timing.

    ``schema`` is the trace schema's version (every event's ``v``); ``stages`` the API server's pipeline
    stages in order, as ``request.stage`` names them (the page draws its strip from them).
    """
    return {
        "type": "hello",
        "cluster": cluster,
        "schema": SCHEMA_VERSION,
        "last_seq": last_seq,
        "timing": timing,
        "stages": list(PIPELINE_STAGES),
    }


def state_message(*, seq: int, state: Mapping[str, Any]) -> dict[str, Any]:
    """The cluster's state as the diagram draws it (``controlplane/diagram.py``), as of trace seq ``seq``:
    the frames that follow start at ``seq + 1``.

    ``state`` holds ``revision`` (the store revision its objects were read at: a write traced later
    at or below it is already in them), ``compacted``, ``objects`` (``nodes``, ``pods``, ``leases``),
    ``components`` and ``watches``.
    """
    return {"type": "state", "seq": seq, **state}


def render_state(seq: int, state: Mapping[str, Any]) -> str:
    return json.dumps(state_message(seq=seq, state=state), separators=(",", ":"))


def error_message(code: int, message: str) -> dict[str, Any]:
    return {"type": "error", "code": code, "message": message}


# -- summaries ------------------------------------------------------------------------------------------

#: How the summary's text names each event type (singular, plural).
TYPE_NOUNS: Mapping[str, tuple[str, str]] = {
    "request.received": ("request", "requests"),
    "request.stage": ("pipeline stage", "pipeline stages"),
    "request.completed": ("response", "responses"),
    "rbac.decision": ("RBAC decision", "RBAC decisions"),
    "admission.step": ("admission step", "admission steps"),
    "store.txn": ("store transaction", "store transactions"),
    "store.compact": ("compaction", "compactions"),
    "watch.opened": ("watch opened", "watches opened"),
    "watch.event": ("watch event", "watch events"),
    "watch.closed": ("watch closed", "watches closed"),
    "component.state": ("component state change", "component state changes"),
    "reconcile": ("reconcile", "reconciles"),
    "scheduler.decision": ("scheduling decision", "scheduling decisions"),
    "proxy.sync": ("proxy sync", "proxy syncs"),
    "fault.applied": ("fault applied", "faults applied"),
    "fault.cleared": ("fault cleared", "faults cleared"),
}

#: The summary's text names this many event types; the others are counted together.
TEXT_TYPES = 3


@dataclass(frozen=True, slots=True)
class Summary:
    """Exactly what a frame leaves out: seqs ``first`` to ``last``, counted by type, and in words.

    ``counts`` adds up to ``last - first + 1``. Events the recorder no longer had when the summary
    was made are counted under ``UNRECORDED`` (only when a client falls behind by a whole recorder).
    """

    first: int
    last: int
    counts: dict[str, int]
    text: str

    def as_json(self) -> dict[str, Any]:
        return {"first": self.first, "last": self.last, "counts": self.counts, "text": self.text}


def _plural(kind: str) -> str:
    return kind[:-1] + "ies" if kind.endswith("y") else kind + "s"


def describe_nodes(nodes: Sequence[str]) -> str:
    """Diagram nodes in few words: ``12 kubelets``, ``scheduler``, ``etcd and 3 users``."""
    by_kind: dict[str, list[str]] = {}
    for node in nodes:
        by_kind.setdefault(node.split(":", 1)[0], []).append(node)
    parts = [
        members[0] if len(members) == 1 else f"{len(members):,} {_plural(kind)}"
        for kind, members in sorted(by_kind.items(), key=lambda item: (-len(item[1]), item[0]))
    ]
    if len(parts) > TEXT_TYPES + 1:  # name three kinds, then count the others (two or more nodes)
        rest = sum(len(members) for members in sorted(by_kind.values(), key=len, reverse=True)[TEXT_TYPES:])
        parts = [*parts[:TEXT_TYPES], f"{rest:,} others"]
    return _join(parts)


def _join(parts: Sequence[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _describe_group(group: Mapping[str, Any]) -> str:
    count: int = group["count"]
    singular, plural = TYPE_NOUNS.get(
        str(group["type"]), (f"{group['type']} event", f"{group['type']} events")
    )
    words = f"{count:,} {singular if count == 1 else plural}"
    if group["to"]:
        return f"{words} to {describe_nodes(group['to'])}"
    if group["from"]:
        return f"{words} at {describe_nodes(group['from'])}"
    return words


def summarise_omitted(first: int, last: int, recorded: Iterable[Event]) -> Summary:
    """The summary of seqs ``first`` to ``last``, given those of their events that are still recorded.

    ``recorded`` may hold events outside the range (they are ignored) and may lack some of it (those
    are counted under ``UNRECORDED``): the counts always add up to the size of the range.
    """
    if last < first:
        raise ValueError(f"an empty range cannot be summarised: {first} to {last}")
    events = [e for e in recorded if first <= e["seq"] <= last]
    groups = summarise(events)
    counts = {str(g["type"]): int(g["count"]) for g in groups}
    parts = [_describe_group(g) for g in groups[:TEXT_TYPES]]
    others = sum(int(g["count"]) for g in groups[TEXT_TYPES:])
    if others:
        parts.append(f"{others:,} other event{'s' if others != 1 else ''}")
    unrecorded = (last - first + 1) - len(events)
    if unrecorded:
        counts[UNRECORDED] = unrecorded
        parts.append(f"{unrecorded:,} event{'s' if unrecorded != 1 else ''} no longer recorded")
    return Summary(first=first, last=last, counts=counts, text=_join(parts))


# -- frames ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Frame:
    """One websocket frame: every seq from ``first`` to ``last``, as events, then as a summary."""

    first: int
    last: int
    events: list[Event]
    summary: Summary | None = None
    #: Events of the range left out because the viewer may not see them (``trace/scope.py``): the
    #: events, the summary and these account for every seq from ``first`` to ``last``.
    hidden: int = 0

    def as_json(self) -> dict[str, Any]:
        """The frame as the client reads it (without redaction: ``render_frame`` sends it)."""
        message: dict[str, Any] = {
            "type": "frame",
            "first": self.first,
            "last": self.last,
            "events": self.events,
        }
        if self.summary is not None:
            message["summary"] = self.summary.as_json()
        if self.hidden:
            message["hidden"] = self.hidden
        return message


#: Reads the recorded events with ``first <= seq <= last`` (``Recorder.range``).
RecordedRange = Callable[[int, int], list[Event]]


class FramingError(RuntimeError):
    """A batch that does not follow the last frame: a bug in the bus or the consumer, never the client's."""


class Framer:
    """Cuts one socket's stream into frames, gapless and in order, starting after seq ``after``.

    ``backlog`` is what a (re)subscription must catch up on first (``recorder.since(after)``): it is
    sent in chunks of ``max_events``, one per frame, never summarised, because the client asked for
    exactly those events. Then each frame is made from what the live subscription has gathered since
    the last one (``from_batch``).
    """

    def __init__(
        self, *, after: int, backlog: Iterable[Event] = (), max_events: int = MAX_FRAME_EVENTS
    ) -> None:
        if max_events < 1:
            raise ValueError(f"a frame carries at least one event, not {max_events}")
        self.max_events = max_events
        #: The seq the next frame starts with.
        self.next_seq = after + 1
        self._backlog: collections.deque[Event] = collections.deque(backlog)

    @property
    def catching_up(self) -> bool:
        """Whether backlog from the recorder is still to be sent before the live events."""
        return bool(self._backlog)

    def from_backlog(self) -> Frame | None:
        """The next chunk of the backlog, or None once it has all been sent."""
        if not self._backlog:
            return None
        take = min(self.max_events, len(self._backlog))
        events = [self._backlog.popleft() for _ in range(take)]
        return self._frame(events, None, lambda first, last: [])

    def from_batch(self, batch: Batch, recorded: RecordedRange) -> Frame | None:
        """The frame for what a live subscription gathered (None for an empty batch).

        Up to ``max_events`` events are sent; the rest, and the range the subscriber ``missed``, go
        into the summary, counted from the events in hand and those ``recorded`` still has.
        """
        if not batch:
            return None
        if self._backlog:
            raise FramingError("the backlog must be sent before the live events")
        return self._frame(batch.events, batch.missed, recorded)

    def _frame(self, events: list[Event], missed: tuple[int, int] | None, recorded: RecordedRange) -> Frame:
        sent, overflow = events[: self.max_events], events[self.max_events :]
        start = self.next_seq
        # The bus hands out consecutive seqs: the ends of the run are checked, not every event.
        if events and (events[0]["seq"] != start or events[-1]["seq"] != start + len(events) - 1):
            raise FramingError(f"events do not follow seq {start - 1} without a gap")
        end = start + len(events) - 1
        if missed is not None:
            if missed[0] != end + 1 or missed[1] < missed[0]:
                raise FramingError(f"missed range {missed} does not follow seq {end}")
            end = missed[1]
        summary = None
        if overflow or missed is not None:
            first_omitted = start + len(sent)
            in_hand = list(overflow)
            if missed is not None:
                in_hand.extend(recorded(missed[0], missed[1]))
            summary = summarise_omitted(first_omitted, end, in_hand)
        self.next_seq = end + 1
        return Frame(first=start, last=end, events=sent, summary=summary)


# -- encoding -------------------------------------------------------------------------------------------


def encode_event(event: Event) -> str:
    """One event as compact JSON, without Secret values (``redaction.redact``)."""
    return encode_redacted(redact(event))


#: orjson writes what ``json.dumps(..., default=str)`` writes for an event's values, several times
#: faster; dataclasses and datetimes go to ``default`` (``str``) as they do with the standard library,
#: instead of getting orjson's own forms.
_ORJSON_OPTIONS = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME


def encode_redacted(event: Mapping[str, Any]) -> str:
    """One event that has been redacted already (relayed from another process) as compact JSON."""
    try:
        return orjson.dumps(event, default=str, option=_ORJSON_OPTIONS).decode()
    except orjson.JSONEncodeError:  # what orjson refuses (an integer beyond 64 bits, a key not a str)
        return json.dumps(event, separators=(",", ":"), ensure_ascii=False, default=str)


class EventEncoder:
    """Encodes each event of one cluster once, however many sockets send it.

    Sockets watching the same cluster send the same events within a frame or two of each other, so
    the redacted JSON of the newest ``keep`` seqs is kept and shared: the cost of a frame per socket
    is joining strings, not walking and serialising every event again. The newest events are kept
    as a run of consecutive seqs, in a list; a frame's events are consecutive seqs too, so for a
    socket that keeps up they are one slice of that list, joined in one call (``join``), with no
    Python work per event. Events outside the run (an old backlog for a resync, or the events of a
    socket still behind after the run moved past a gap) are kept by seq beside it. A mirror of
    another process's cluster (``relay.py``) is handed its events' JSON with them (``remember``) and
    never redacts twice (``encode=encode_redacted``).
    """

    def __init__(
        self, keep: int = 4 * MAX_FRAME_EVENTS, *, encode: Callable[[Event], str] = encode_event
    ) -> None:
        self.keep = keep
        self._encode = encode
        #: The encoded events of seqs ``_first``, ``_first + 1``, ...: the newest ones, consecutive.
        self._run: list[str] = []
        self._first = 0
        #: Encoded events that are not in the run, by seq.
        self._others: dict[int, str] = {}
        #: Events encoded (cache misses), for tests and benchmarks.
        self.encoded = 0
        #: The text of the latest frames, by what they hold: sockets sending the same frame share it.
        self._frames: dict[tuple[int, int, int], str] = {}
        #: Frames rendered (cache misses), for tests and benchmarks.
        self.rendered = 0

    @property
    def cached(self) -> int:
        """How many encoded events are kept (at most ``4 * keep``)."""
        return len(self._run) + len(self._others)

    def __call__(self, event: Event) -> str:
        seq: int = event["seq"]
        run = self._run
        at = seq - self._first
        if 0 <= at < len(run):
            return run[at]
        text = self._others.get(seq)
        if text is not None:
            return text
        text = self._encode(event)
        self.encoded += 1
        self.remember(seq, text)
        return text

    def remember(self, seq: int, text: str) -> None:
        """Keep ``text`` as the JSON of event ``seq`` (encoded here, or elsewhere for a mirror)."""
        run = self._run
        at = seq - self._first
        if 0 <= at < len(run):
            run[at] = text
        elif at == len(run):  # the seq after the run: the run grows
            run.append(text)
            if len(run) > 2 * self.keep:
                drop = len(run) - self.keep
                del run[:drop]
                self._first += drop
        else:
            if at > len(run):  # past a gap (seqs nobody encoded): a new run starts here
                self._others.update(enumerate(run, start=self._first))
                self._run = [text]
                self._first = seq
            else:  # older than the run
                self._others[seq] = text
            if len(self._others) > 2 * self.keep:
                horizon = max(self._others) - self.keep
                self._others = {s: t for s, t in self._others.items() if s > horizon}

    def join(self, first: int, events: Sequence[Event]) -> str:
        """``events``, the seqs ``first``, ``first + 1``, ... (a frame's), encoded and joined with commas."""
        count = len(events)
        at = first - self._first
        if (
            count
            and at >= 0
            and at + count <= len(self._run)
            and events[0]["seq"] == first
            and events[-1]["seq"] == first + count - 1
        ):
            return ",".join(self._run[at : at + count])
        return ",".join(map(self, events))

    def render(self, frame: Frame) -> str:
        """``frame`` as websocket text, made once for every socket that sends the same frame.

        Caught-up sockets of one cluster send on the same ticks (``Ticks``) what the bus gathered up to
        then, so their frames are the same (same ``first``, ``last`` and events): the first socket
        renders the text, the others send it again. A frame is known by its seqs and how many events
        it carries, the rest being its summary (counted from the same recorder, at the same moment).
        A frame cut to one viewer's scope (``hidden``) is rendered for that viewer alone.
        """
        if frame.hidden:
            # A viewer's own cut of the frame (``trace/scope.py``): another viewer's of the same size
            # may hold other events, so it is never shared.
            self.rendered += 1
            return _render(frame, self.join(frame.first, frame.events))
        key = (frame.first, frame.last, len(frame.events))
        text = self._frames.get(key)
        if text is None:
            if len(self._frames) >= FRAMES_KEPT:
                self._frames.clear()
            text = self._frames[key] = _render(frame, self.join(frame.first, frame.events))
            self.rendered += 1
        return text


#: How many rendered frames an encoder keeps (a few ticks' worth: sockets share the newest ones).
FRAMES_KEPT = 16

_encoders: weakref.WeakKeyDictionary[TraceBus, EventEncoder] = weakref.WeakKeyDictionary()


def encoder_for(bus: TraceBus) -> EventEncoder:
    """The encoder every socket of ``bus``'s cluster shares, and its relay (each event is encoded once)."""
    encoder = _encoders.get(bus)
    if encoder is None:
        encoder = _encoders[bus] = EventEncoder()
    return encoder


def render_frame(frame: Frame, encode: Callable[[Event], str] = encode_event) -> str:
    """The frame as websocket text: ``frame.as_json()`` with every event redacted and encoded."""
    if isinstance(encode, EventEncoder):
        return encode.render(frame)
    return _render(frame, ",".join(map(encode, frame.events)))


def _render(frame: Frame, events: str) -> str:
    parts = [
        f'{{"type":"frame","first":{frame.first},"last":{frame.last},"events":[',
        events,
        "]",
    ]
    if frame.summary is not None:
        parts.append(',"summary":')
        parts.append(json.dumps(frame.summary.as_json(), separators=(",", ":"), ensure_ascii=False))
    if frame.hidden:
        parts.append(f',"hidden":{frame.hidden}')
    parts.append("}")
    return "".join(parts)


# -- pacing ---------------------------------------------------------------------------------------------


class Ticks:
    """When a trace socket's next frame may go: on tick boundaries that every socket shares.

    Ticks are the multiples of ``interval`` on the event loop's clock, the same for every socket of a
    process. A socket sends at most one frame per tick, at the tick's start: so the sockets that keep
    up send at the same moments what the bus has gathered by then, which is the same frame for all of
    them, rendered once (``EventEncoder.render``) and sent to each. The first frame after a quiet
    spell (``idle``: the socket had to wait for an event) goes at once, in a tick it has not sent in.

    Under overload the loop is late, and a socket that finishes its frame after the next tick has
    begun waits for the one after: frames come less often and carry more events each, and the
    sockets stay in step, instead of every socket drifting to its own moment.
    """

    def __init__(self, interval: float = FRAME_INTERVAL) -> None:
        self.interval = interval
        self._last_tick: int | None = None

    def delay(self, now: float, *, idle: bool) -> float:
        """Seconds to wait from ``now`` before the next frame may go."""
        tick = math.floor(now / self.interval)
        if self._last_tick is None or (idle and tick > self._last_tick):
            return 0.0
        return max(0.0, (tick + 1) * self.interval - now)

    def sent(self, now: float) -> None:
        self._last_tick = math.floor(now / self.interval)


class Pacer:
    """At most one frame per ``interval`` seconds: how long to wait before sending the next one.

    The first frame after a quiet spell goes at once (a lone kubectl request shows immediately);
    under load, frames follow each other ``interval`` apart, each carrying more events.
    """

    def __init__(self, interval: float = FRAME_INTERVAL) -> None:
        self.interval = interval
        self._last_sent: float | None = None

    def delay(self, now: float) -> float:
        """Seconds to wait from ``now`` before the next frame may go."""
        if self._last_sent is None:
            return 0.0
        return max(0.0, self._last_sent + self.interval - now)

    def sent(self, now: float) -> None:
        self._last_sent = now


__all__ = [
    "BAD_REQUEST",
    "FORBIDDEN",
    "FRAME_INTERVAL",
    "GONE",
    "MAX_FRAME_EVENTS",
    "STREAM_BROKEN",
    "TRACE_ENDED",
    "UNKNOWN_CLUSTER",
    "UNRECORDED",
    "BadRequest",
    "EventEncoder",
    "Frame",
    "Framer",
    "FramingError",
    "Pacer",
    "Subscribe",
    "Summary",
    "Ticks",
    "describe_nodes",
    "encode_event",
    "encode_redacted",
    "encoder_for",
    "error_message",
    "hello_message",
    "parse_request",
    "render_frame",
    "summarise_omitted",
]
