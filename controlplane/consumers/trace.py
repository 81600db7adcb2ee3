"""The trace consumer: one browser's websocket onto one cluster's trace, at ``/ws/lab/<cluster>/trace/``.

The topology page opens this socket and draws whatever arrives. The conversation (docs/trace.md,
"Stream", has it in full)::

    server: {"type": "hello", "cluster": "demo", "schema": 2, "last_seq": 1200, "timing": "classroom",
             "stages": ["authentication", ...]}
    client: {"action": "subscribe", "since": null, "state": true}   (a page that starts: state first)
    server: {"type": "state", "seq": 1200, "revision": 830, "objects": {...}, "components": [...], ...}
    client: {"action": "subscribe", "since": 1180}       (a reconnect: the last seq it has)
    server: {"type": "frame", "first": 1201, "last": 1203, "events": [...]}    (~30 frames/s at most)
    client: {"action": "resync", "since": 1202}           (after a gap, or for a summary's details)
    server: {"type": "error", "code": 410, "message": "too old: oldest is 5000"}   (start from now)

**No channel layer in the way.** The consumer subscribes to its cluster's ``TraceBus`` directly: the
bus lives in the same process, so every event is one append to the bus's shared log, and the
consumer takes a whole batch per frame (``framing.py`` decides what a frame holds). Sockets frame on
shared ticks (``framing.Ticks``), so the sockets that keep up send the same frame, rendered once. A
channel-layer ``group_send`` per event would copy every event once per socket through the layer; the in-memory
layer collapsed at 1000 sockets that way. A cluster nobody watches has no subscription at all: one is
made on ``subscribe`` and closed when the socket goes. With several web processes, a socket that lands
on one that does not run its cluster reads a *mirror* of the cluster's bus, which the relay
(``relay.py``) feeds over the channel layer, one message per tick per process; the consumer subscribes
to it as to any bus.

This module is the thin, asynchronous part: access (``access.may_view``), the cluster lookup, reading
client messages, and the one task per socket that waits for events, paces the frames and sends them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from collections.abc import Callable
from typing import Any

from channels.generic.websocket import AsyncWebsocketConsumer

from controlplane.consumers.access import may_view, trace_scope
from controlplane.consumers.framing import (
    BAD_REQUEST,
    FORBIDDEN,
    FRAME_INTERVAL,
    GONE,
    MAX_FRAME_EVENTS,
    NOT_HERE,
    STREAM_BROKEN,
    TRACE_ENDED,
    UNKNOWN_CLUSTER,
    BadRequest,
    EventEncoder,
    Framer,
    Subscribe,
    Ticks,
    encoder_for,
    error_message,
    hello_message,
    parse_request,
    render_frame,
    render_state,
)
from controlplane.consumers.relay import Mirror, active_relay, lab_traces
from controlplane.diagram import TakenState, state_taker
from controlplane.runtime import active_lab
from controlplane.store.errors import UnknownCluster
from controlplane.tasks import cancel_and_wait
from controlplane.trace.bus import Subscription, TraceBus
from controlplane.trace.recorder import TooOld, Untraced
from controlplane.trace.scope import ScopedView

logger = logging.getLogger(__name__)


class TraceConsumer(AsyncWebsocketConsumer):  # type: ignore[misc]  # channels has no type hints
    """Streams one cluster's trace to one browser, in frames (see the module's docstring)."""

    #: No channel layer: the consumer reads its cluster's bus in this process. An alias that
    #: ``CHANNEL_LAYERS`` does not define makes Channels skip the per-socket channel and its receive loop.
    channel_layer_alias = "kubelab-trace-needs-no-channel-layer"
    #: Seconds between frames at least, and the most events in one frame (tests make them smaller).
    frame_interval = FRAME_INTERVAL
    max_frame_events = MAX_FRAME_EVENTS

    def __init__(self, *, frame_interval: float | None = None, max_frame_events: int | None = None) -> None:
        """``TraceConsumer.as_asgi(max_frame_events=50)`` changes the pacing or the frame size."""
        super().__init__()
        if frame_interval is not None:
            self.frame_interval = frame_interval
        if max_frame_events is not None:
            self.max_frame_events = max_frame_events
        self.cluster_name = ""
        self.bus: TraceBus | None = None
        #: The mirror ``bus`` belongs to, when the cluster runs in another process.
        self.mirror: Mirror | None = None
        self._encoder = EventEncoder()
        self._ticks = Ticks(self.frame_interval)
        self._stream: asyncio.Task[None] | None = None
        #: Takes the cluster's state for a page that starts (``diagram.take_state``); None on a mirror.
        self._take_state: Callable[[], TakenState] | None = None
        #: The socket's view through the part of the trace its user sees (None: all of it): one for
        #: all the socket's streams, so that it remembers every request it hid.
        self._view: ScopedView | None = None

    # -- the socket's life ---------------------------------------------------------------------------

    async def connect(self) -> None:
        self.cluster_name = name = str(self.scope["url_route"]["kwargs"]["cluster"])
        user = self.scope.get("user")
        await self.accept()
        if not await may_view(user, name):
            signed_in = user is not None and user.is_authenticated
            reason = "you may not watch" if signed_in else "sign in to watch"
            await self._refuse(FORBIDDEN, f"{reason} cluster {name!r}")
            return
        scope = await trace_scope(user, name)
        self._view = None if scope is None else scope.view()
        if (lab := active_lab()) is not None:
            await lab.use(name)  # a hibernated sandbox wakes for whoever watches it
        try:
            self.bus, self._encoder, timing = await self._find_trace(name)
        except UnknownCluster:
            await self._refuse(UNKNOWN_CLUSTER, f"there is no cluster {name!r}")
            return
        hello = hello_message(cluster=name, last_seq=self.bus.last_seq, timing=timing)
        if self._view is not None:  # the page says what it leaves out
            hello["scope"] = {"namespace": self._view.scope.own_namespace}
        await self._send_json(hello)

    async def _find_trace(self, name: str) -> tuple[TraceBus, EventEncoder, str]:
        """The cluster's bus, encoder and timing: in this process, or else a mirror (``relay.py``)."""
        lab, relay = active_lab(), active_relay()
        found = lab_traces(lab)(name) if lab is not None else None
        if found is not None:
            bus, timing = found
            self._take_state = state_taker(lab, name) if lab is not None else None
            return bus, encoder_for(bus), timing
        if relay is None:
            raise UnknownCluster(name)
        self.mirror = await relay.mirror(name)  # UnknownCluster if no process runs it
        return self.mirror.bus, self.mirror.encoder, self.mirror.timing

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if self.bus is None:  # refused: the socket is closing
            return
        try:
            request = parse_request(text_data)
        except BadRequest as error:
            await self._send_json(error_message(BAD_REQUEST, str(error)))
            return
        await self._subscribe(self.bus, request)

    async def disconnect(self, code: int) -> None:
        await self._stop_stream()
        if self.mirror is not None:
            self.mirror.release()
            self.mirror = None

    # -- streaming -----------------------------------------------------------------------------------

    async def _subscribe(self, bus: TraceBus, request: Subscribe) -> None:
        """(Re)start the stream after ``request.since``: the recorder's backlog first, then live events."""
        await self._stop_stream()
        if request.state:
            await self._start_from_state(bus)
            return
        since = request.since
        try:
            if self.mirror is not None:  # what it joined too late for comes from the cluster's owner
                await self.mirror.cover(since)
            backlog = bus.since(since) if since is not None else []
        except Untraced as error:
            await self._send_json(error_message(GONE, str(error)))
            return
        except TooOld as error:
            await self._send_json(error_message(GONE, f"too old: oldest is {error.oldest}"))
            return
        if bus.closed:  # the trace has ended here (a mirror that lost its owner): the page reconnects
            await self._close(TRACE_ENDED)
            return
        covered = backlog[-1]["seq"] if backlog else since
        if covered is not None and covered != bus.last_seq:
            # Ahead of the cluster (the lab restarted and counts from 1 again), or the recorder lost events.
            message = f"unknown: seq {since} is not in this run (its last seq is {bus.last_seq})"
            await self._send_json(error_message(GONE, message))
            return
        # No await between reading the backlog and subscribing: no event can slip in between.
        subscription = bus.subscribe(max_pending=self.max_frame_events)
        after = since if since is not None else bus.last_seq
        framer = Framer(after=after, backlog=backlog, max_events=self.max_frame_events)
        self._stream = asyncio.create_task(
            self._run_stream(subscription, framer), name=f"trace stream of {bus.cluster}"
        )

    async def _start_from_state(self, bus: TraceBus) -> None:
        """The cluster's state now, then every event after it (``diagram.py`` says why in that order)."""
        if self._take_state is None:
            message = "the cluster's state is read where the cluster runs: subscribe without state here"
            await self._send_json(error_message(NOT_HERE, message))
            return
        if bus.closed:
            await self._close(TRACE_ENDED)
            return
        # No await between subscribing, the seq and what the lab runs: the state is as of ``seq``, and
        # every event after it reaches the subscription.
        subscription = bus.subscribe(max_pending=self.max_frame_events)
        seq = bus.last_seq
        taken = self._take_state()
        framer = Framer(after=seq, backlog=[], max_events=self.max_frame_events)
        self._stream = asyncio.create_task(
            self._run_stream(subscription, framer, state=(seq, taken)), name=f"trace stream of {bus.cluster}"
        )

    async def _run_stream(
        self, subscription: Subscription, framer: Framer, *, state: tuple[int, TakenState] | None = None
    ) -> None:
        """Wait for events, wait for the pacer, send one frame; until the bus closes or the socket goes.

        With ``state``, first the cluster's state as of its seq (the store is read now, at its current
        revision, while the subscription gathers what follows).

        The task never ends with an exception (nobody awaits it when it ends by itself): a stream that
        breaks is logged and its socket closed with ``STREAM_BROKEN``; a socket that has gone just ends it.
        """
        loop = asyncio.get_running_loop()
        recorder = subscription.bus.recorder
        code = TRACE_ENDED
        try:
            if state is not None:
                seq, taken = state
                state_now = await taken.read()
                if self._view is not None:
                    state_now = self._view.scope.state(state_now)
                if not await self._send_text(render_state(seq, state_now)):
                    return
            while True:
                idle = not framer.catching_up and subscription.pending == 0
                if not framer.catching_up and not await subscription.wait():
                    break  # the bus was closed: the cluster's trace has ended
                delay = self._ticks.delay(loop.time(), idle=idle)
                if delay > 0:
                    await asyncio.sleep(delay)  # meanwhile more events gather for this frame
                if framer.catching_up:
                    frame = framer.from_backlog()
                else:
                    frame = framer.from_batch(subscription.drain(), recorder.range)
                if frame is not None and self._view is not None:
                    # The frame keeps its first and last seq (the client's gapless count), with only
                    # the events this viewer may see, and says how many it left out.
                    shown = self._view.events(frame.events)
                    frame = dataclasses.replace(
                        frame, events=shown, hidden=frame.hidden + len(frame.events) - len(shown)
                    )
                if frame is not None:
                    if not await self._send_text(render_frame(frame, self._encoder)):
                        return  # the client has gone: its disconnect is on its way
                    self._ticks.sent(loop.time())
        except Exception:
            logger.exception("the trace stream of cluster %r broke", subscription.bus.cluster)
            code = STREAM_BROKEN
        finally:
            subscription.close()
        await self._close(code)

    async def _stop_stream(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None and not stream.done():
            await cancel_and_wait(stream)

    # -- messages ------------------------------------------------------------------------------------

    async def _send_text(self, text: str) -> bool:
        """Send ``text``; False if the socket has gone already (the client closed it meanwhile).

        A client may close its socket at any moment, and the server learns it only when the disconnect
        message arrives; a send in between raises (daphne's autobahn: ``Disconnected``; the ASGI spec
        lets servers raise an ``OSError``). That is the end of this socket's stream, not an error.
        """
        try:
            await self.send(text_data=text)
        except Exception as error:
            logger.debug("a trace socket of cluster %r has gone: %s", self.cluster_name, error)
            return False
        return True

    async def _send_json(self, message: dict[str, Any]) -> None:
        await self._send_text(json.dumps(message, separators=(",", ":")))

    async def _close(self, code: int) -> None:
        """Close the socket with ``code`` (a socket that has gone already stays gone)."""
        try:
            await self.close(code=code)
        except Exception as error:
            logger.debug("a trace socket of cluster %r has gone: %s", self.cluster_name, error)

    async def _refuse(self, code: int, message: str) -> None:
        """Say why, then close with ``code`` (browsers cannot read a refused handshake's reason)."""
        await self._send_json(error_message(code, message))
        await self._close(code)


__all__ = ["TraceConsumer"]
