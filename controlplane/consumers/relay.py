"""The relay: a cluster's trace for browsers whose socket landed on another web process.

Scale-out runs several daphne processes behind a load balancer, joined by a Redis channel layer
(``KUBELAB_CHANNEL_LAYER=redis://...``). Each cluster runs in one of them, its **owner**, but a
browser's socket may land on any. The trace consumer (``trace.py``) reads a ``TraceBus`` in its own
process, so a process that does not run the cluster keeps a **mirror** of it: a local bus
(``TraceBus.mirror``) fed with the owner's events under the owner's seqs. The consumer subscribes to
the mirror exactly as it does to a real bus, and the mirror's recorder answers re-syncs.

**Batches, not events.** A channel-layer message per event per socket collapsed the in-memory layer
at 1000 sockets. Here the owner sends one message per tick (~33 ms, as a frame) with that tick's
events, already redacted and encoded (``framing.encoder_for``: the JSON its own sockets send), with
one ``group_send`` to the group ``trace.<cluster>``. Each mirroring process joins that group once,
however many of its sockets watch. Redis carries processes x ticks messages, not sockets x events.

Every process runs one relay (``start_relay``), listening on one channel of its own. Two relays talk
like this (``->`` is a message on the channel layer)::

    mirror -> every relay    relay.lookup  {cluster}          who runs cluster "demo"?
    owner  -> mirror         relay.owner                      I do (nobody in time: no such cluster, 4404)
    mirror -> owner          relay.watch   {cluster}          send me its ticks (again every RENEW_INTERVAL)
    owner  -> mirror         relay.welcome {last_seq, timing, capacity}
    owner  -> trace.demo     relay.tick    {first, events}    each tick with events, while a watch holds
    mirror -> owner          relay.fetch   {after, until}     history a socket asks for that the mirror lacks
    owner  -> mirror         relay.events  {events | oldest}  (oldest: gone there too, the socket gets 410)
    mirror -> owner          relay.leave   {cluster}          the mirror's last socket has gone

**Nothing is sent while nobody elsewhere watches.** The owner subscribes to its bus and publishes only
while some mirror's watch holds: a mirror renews it every ``RENEW_INTERVAL`` and the owner forgets one
that missed ``LEASE_RENEWALS`` renewals (its process died). A mirror lives while sockets use it, and
leaves when the last one goes. A mirror whose owner stops answering, or that finds a gap in the ticks
(Redis dropped a message), ends: its sockets are closed with 4001 (``framing.TRACE_ENDED``), and the
page reconnects from the last seq it has, as after any disconnect; the new mirror fetches what it
missed from the owner.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any

from channels.layers import InMemoryChannelLayer, get_channel_layer

from controlplane.consumers.framing import FRAME_INTERVAL, EventEncoder, Pacer, encode_redacted, encoder_for
from controlplane.runtime import Lab
from controlplane.store.errors import UnknownCluster
from controlplane.trace.bus import Subscription, TraceBus
from controlplane.trace.recorder import Event, OutOfOrder, TooOld

logger = logging.getLogger(__name__)

#: The group of every process's relay: where lookups go.
RELAYS = "trace-relays"
#: Seconds a relay waits for an answer: a lookup nobody answers means there is no such cluster.
ANSWER_TIMEOUT = 2.0
#: Seconds between a mirror's renewals of its watch (and of its relay's group memberships).
RENEW_INTERVAL = 10.0
#: Renewals a mirror may miss before its owner stops publishing for it.
LEASE_RENEWALS = 3
#: Seconds a relay waits before reading its channel again after the channel layer failed.
RETRY_DELAY = 1.0

LOOKUP, OWNER, WATCH, WELCOME = "relay.lookup", "relay.owner", "relay.watch", "relay.welcome"
TICK, FETCH, EVENTS, LEAVE = "relay.tick", "relay.fetch", "relay.events", "relay.leave"

Message = dict[str, Any]

#: This process's clusters: the trace bus and timing profile name of the named one, or None.
LocalTraces = Callable[[str], "tuple[TraceBus, str] | None"]


def tick_group(cluster: str) -> str:
    """The channel-layer group that a cluster's ticks are sent to."""
    return f"trace.{cluster}"


def lab_traces(lab: Lab) -> LocalTraces:
    """The clusters of ``lab``, as the relay looks them up."""

    def find(name: str) -> tuple[TraceBus, str] | None:
        try:
            cluster = lab.cluster(name)
        except UnknownCluster:
            return None
        return cluster.trace, cluster.timing.name

    return find


class NoAnswer(TimeoutError):
    """The relay asked another process and got no answer in time."""


# -- the mirror's side -----------------------------------------------------------------------------------


class Mirror:
    """This process's copy of the trace of a cluster that another process runs.

    Made by ``TraceRelay.mirror`` for each socket that watches the cluster here; each calls
    ``release`` when it goes. ``bus`` is the mirror bus to subscribe to, ``timing`` the cluster's
    timing profile, ``encoder`` the shared encoder of its events (their JSON came with them).
    """

    def __init__(self, relay: TraceRelay, cluster: str) -> None:
        self.relay = relay
        self.cluster = cluster
        #: The owner relay's channel, once a lookup found it.
        self.owner = ""
        self.timing = ""
        self.encoder = EventEncoder(encode=encode_redacted)
        self.users = 0
        self.ended = False
        self.opening: asyncio.Task[None] | None = None
        self._bus: TraceBus | None = None

    def __repr__(self) -> str:
        return f"<Mirror {self.cluster} of {self.owner or '?'} users={self.users} bus={self._bus!r}>"

    @property
    def welcomed(self) -> bool:
        """Whether the owner's welcome has come: then ``bus`` is there."""
        return self._bus is not None

    @property
    def bus(self) -> TraceBus:
        if self._bus is None:
            raise RuntimeError(f"the mirror of cluster {self.cluster!r} has not been welcomed yet")
        return self._bus

    def welcome(self, welcome: Message) -> None:
        """The owner's welcome: the mirror bus starts after its ``last_seq``, with its recorder's capacity.

        The welcome that answers a renewal changes nothing.
        """
        if self.welcomed or welcome["owner"] != self.owner:
            return
        self.timing = welcome["timing"]
        self._bus = TraceBus.mirror(self.cluster, last_seq=welcome["last_seq"], capacity=welcome["capacity"])

    def feed(self, first: int, texts: Sequence[str]) -> None:
        """One tick: events ``first``, ``first + 1`` ... as JSON; ``OutOfOrder`` if some were lost before."""
        bus = self.bus
        known = max(bus.last_seq + 1 - first, 0)  # a tick sent before the welcome has some it knows
        texts = texts[known:]
        events = [json.loads(text) for text in texts]
        bus.publish_remote(events)
        self._remember(events, texts)

    async def cover(self, since: int | None) -> None:
        """Make the recorder hold every event after ``since``, fetching older ones from the owner.

        ``TooOld`` if the owner no longer has them either. If the owner does not answer, the mirror
        ends (its bus is closed).
        """
        bus = self.bus
        first = bus.recorder.first_seq
        until = first - 1 if first is not None else bus.last_seq
        if since is None or since >= until:
            return
        try:
            answer = await self.relay.ask_owner(self, {"type": FETCH, "after": since, "until": until})
        except NoAnswer:
            self.relay.end(self, "its owner did not answer a fetch")
            return
        if "oldest" in answer:
            raise TooOld(since, answer["oldest"])
        texts: list[str] = answer["events"]
        events = [json.loads(text) for text in texts]
        try:
            bus.backfill(events)
        except OutOfOrder as error:  # the mirror moved on meanwhile: the recorder answers what it can
            logger.warning("the mirror of cluster %r could not fill in its history: %s", self.cluster, error)
            return
        self._remember(events, texts)

    def release(self) -> None:
        """One socket less; the mirror ends with its last one."""
        self.users -= 1
        if self.users <= 0:
            self.relay.end(self, "its last socket has gone")

    def _remember(self, events: list[Event], texts: Sequence[str]) -> None:
        for event, text in zip(events, texts, strict=True):
            self.encoder.remember(event["seq"], text)


# -- the owner's side ------------------------------------------------------------------------------------


@dataclass(eq=False)
class Publication:
    """The owner's side of one cluster mirrored elsewhere: its subscription, and whose watches hold."""

    cluster: str
    bus: TraceBus
    subscription: Subscription
    #: The mirroring relays' channels, and when (loop time) each one's watch runs out.
    leases: dict[str, float] = field(default_factory=dict)


# -- the relay -------------------------------------------------------------------------------------------


class TraceRelay:
    """One process's relay: owner of its own clusters' publications, keeper of its mirrors.

    ``layer`` is the channel layer shared with the other processes, ``local`` finds this process's
    clusters. ``tick`` is the seconds between two ticks of a cluster at least, ``timeout`` how long an
    answer may take, ``renew`` the seconds between renewals (tests make them short).
    """

    def __init__(
        self,
        layer: Any,
        local: LocalTraces,
        *,
        tick: float = FRAME_INTERVAL,
        timeout: float = ANSWER_TIMEOUT,
        renew: float = RENEW_INTERVAL,
    ) -> None:
        self.layer = layer
        self.local = local
        self.tick = tick
        self.timeout = timeout
        self.renew = renew
        #: This relay's channel (set by ``start``).
        self.channel = ""
        self._mirrors: dict[str, Mirror] = {}
        self._publications: dict[str, Publication] = {}
        self._answers: dict[str, asyncio.Future[Message]] = {}
        #: The leave of the last ended mirror of each cluster: a new mirror waits for it first.
        self._leaving: dict[str, asyncio.Task[None]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._stopping = False

    def __repr__(self) -> str:
        return (
            f"<TraceRelay {self.channel} mirrors={list(self._mirrors)} publishing={list(self._publications)}>"
        )

    # -- life ----------------------------------------------------------------------------------------

    async def start(self) -> None:
        self.channel = await self.layer.new_channel("trace-relay")
        await self.layer.group_add(RELAYS, self.channel)
        self._spawn(self._receive(), "receive")
        self._spawn(self._keep_up(), "renew")

    async def stop(self) -> None:
        """End every mirror (telling their owners) and publication; leave the relays' group."""
        if active_relay() is self:
            activate_relay(None)
        self._stopping = True
        for mirror in list(self._mirrors.values()):
            if mirror.opening is not None:
                mirror.opening.cancel()
            self.end(mirror, "the relay is stopping")
        for publication in list(self._publications.values()):
            self._unpublish(publication)
        await asyncio.gather(*self._leaving.values(), return_exceptions=True)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        with contextlib.suppress(Exception):
            await self.layer.group_discard(RELAYS, self.channel)

    def _spawn(self, coroutine: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        task = asyncio.create_task(coroutine, name=f"trace relay: {name}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # -- mirrors -------------------------------------------------------------------------------------

    async def mirror(self, cluster: str) -> Mirror:
        """The mirror of ``cluster`` for one more socket (which calls ``release`` when it goes).

        The first socket opens it: ``UnknownCluster`` if no process says it runs the cluster in time.
        """
        mirror = self._mirrors.get(cluster)
        if mirror is None:
            mirror = self._mirrors[cluster] = Mirror(self, cluster)
            mirror.opening = self._spawn(self._open(mirror), f"open mirror {cluster}")
        assert mirror.opening is not None
        mirror.users += 1
        try:
            await asyncio.shield(mirror.opening)
            if mirror.ended:  # stopped, or lost its owner already
                raise UnknownCluster(cluster)
        except BaseException:
            mirror.release()
            raise
        return mirror

    async def _open(self, mirror: Mirror) -> None:
        """Join the cluster's group, find its owner, watch it; the owner's welcome begins the mirror."""
        name = mirror.cluster
        if (leaving := self._leaving.get(name)) is not None:
            await asyncio.wait([leaving])  # the last mirror's leave must not undo this one's join
        await self.layer.group_add(tick_group(name), self.channel)
        try:
            found = await self._ask(RELAYS, {"type": LOOKUP, "cluster": name}, group=True)
            mirror.owner = found["owner"]
            await self.ask_owner(mirror, {"type": WATCH})
        except NoAnswer:
            self.end(mirror, "no process runs it")
            raise UnknownCluster(name) from None

    def end(self, mirror: Mirror, why: str) -> None:
        """End ``mirror`` now (its sockets are closed); tell its owner and leave the group after."""
        if mirror.ended:
            return
        mirror.ended = True
        logger.info("the mirror of cluster %r ends: %s", mirror.cluster, why)
        if self._mirrors.get(mirror.cluster) is mirror:
            del self._mirrors[mirror.cluster]
        if mirror.welcomed:
            mirror.bus.close()
        self._leaving[mirror.cluster] = self._spawn(self._leave(mirror), f"leave {mirror.cluster}")

    async def _leave(self, mirror: Mirror) -> None:
        name = mirror.cluster
        if mirror.opening is not None:  # what it joins and watches is left after it
            await asyncio.wait([mirror.opening])
            if not mirror.opening.cancelled():
                mirror.opening.exception()  # retrieved: its sockets (if any) have seen it
        try:
            if mirror.owner:
                await self.layer.send(
                    mirror.owner, {"type": LEAVE, "cluster": name, "reply_to": self.channel}
                )
            await self.layer.group_discard(tick_group(name), self.channel)
        except Exception:
            logger.exception("the relay could not leave cluster %r", name)
        finally:
            if self._leaving.get(name) is asyncio.current_task():
                del self._leaving[name]

    async def _renew(self, mirror: Mirror) -> None:
        try:
            await self.layer.group_add(tick_group(mirror.cluster), self.channel)
            await self.ask_owner(mirror, {"type": WATCH})
        except NoAnswer:
            self.end(mirror, "its owner stopped answering")

    def _on_tick(self, message: Message) -> None:
        mirror = self._mirrors.get(message["cluster"])
        if mirror is None or not mirror.welcomed or message["owner"] != mirror.owner:
            return  # not (yet, or any longer) mirrored here, or from another process of the same name
        try:
            mirror.feed(message["first"], message["events"])
        except OutOfOrder as error:
            self.end(mirror, f"events were lost on the way ({error})")

    # -- publications (the owner's side) -------------------------------------------------------------

    async def _on_watch(self, message: Message) -> None:
        name = message["cluster"]
        found = self.local(name)
        if found is None or found[0].closed:
            return  # not (or no longer) run here: the mirror's watch goes unanswered
        bus, timing = found
        publication = self._publications.get(name)
        if publication is None:
            publication = self._publications[name] = Publication(name, bus, bus.subscribe())
            self._spawn(self._publish(publication), f"publish {name}")
        loop = asyncio.get_running_loop()
        publication.leases[message["reply_to"]] = loop.time() + self.renew * LEASE_RENEWALS
        # No await since subscribing: every event after last_seq is in the subscription.
        welcome = {
            "type": WELCOME,
            "last_seq": bus.last_seq,
            "timing": timing,
            "capacity": bus.recorder.capacity,
        }
        await self._reply(message, welcome)

    async def _publish(self, publication: Publication) -> None:
        """One ``group_send`` per tick with the tick's events, until the last watch goes."""
        loop = asyncio.get_running_loop()
        bus, subscription = publication.bus, publication.subscription
        encode, pacer = encoder_for(bus), Pacer(self.tick)
        while await subscription.wait():
            if (delay := pacer.delay(loop.time())) > 0:
                await asyncio.sleep(delay)  # meanwhile more events gather for this tick
            if subscription.closed:
                break
            batch = subscription.drain()
            events = (
                batch.events if batch.missed is None else [*batch.events, *bus.recorder.range(*batch.missed)]
            )
            if not events:
                continue
            tick = {
                "type": TICK,
                "cluster": publication.cluster,
                "owner": self.channel,
                "first": events[0]["seq"],
                "events": [encode(event) for event in events],
            }
            try:
                await self.layer.group_send(tick_group(publication.cluster), tick)
            except Exception:  # the mirrors will see the gap and start again
                logger.exception("the relay could not publish a tick of cluster %r", publication.cluster)
            pacer.sent(loop.time())

    def _on_leave(self, name: str, remote: str) -> None:
        publication = self._publications.get(name)
        if publication is not None:
            publication.leases.pop(remote, None)
            if not publication.leases:
                self._unpublish(publication)

    def _unpublish(self, publication: Publication) -> None:
        if self._publications.get(publication.cluster) is publication:
            del self._publications[publication.cluster]
        publication.subscription.close()

    async def _on_fetch(self, message: Message) -> None:
        found = self.local(message["cluster"])
        if found is None:
            return
        bus = found[0]
        after, until = message["after"], message["until"]
        first = bus.recorder.first_seq
        if first is not None and after < first - 1:
            await self._reply(message, {"type": EVENTS, "oldest": first})
            return
        encode = encoder_for(bus)
        await self._reply(
            message, {"type": EVENTS, "events": [encode(e) for e in bus.recorder.range(after + 1, until)]}
        )

    # -- the conversation ----------------------------------------------------------------------------

    async def _receive(self) -> None:
        while not self._stopping:
            try:
                message = await self.layer.receive(self.channel)
            except Exception:
                if self._stopping:  # redis-py may turn the cancellation of a read into its TimeoutError
                    return
                logger.exception("the relay cannot read its channel; trying again in %s s", RETRY_DELAY)
                await asyncio.sleep(RETRY_DELAY)
                continue
            try:
                await self._handle(message)
            except Exception:
                logger.exception("the relay could not handle a %s message", message.get("type"))

    async def _handle(self, message: Message) -> None:
        kind = message.get("type")
        if kind == TICK:
            self._on_tick(message)
        elif kind == LOOKUP:
            if self.local(message["cluster"]) is not None:
                await self._reply(message, {"type": OWNER})
        elif kind == WATCH:
            await self._on_watch(message)
        elif kind == FETCH:
            await self._on_fetch(message)
        elif kind == LEAVE:
            self._on_leave(message["cluster"], message["reply_to"])
        elif kind in (OWNER, WELCOME, EVENTS):
            self._on_answer(message)

    def _on_answer(self, message: Message) -> None:
        future = self._answers.pop(message["request"], None)
        if future is None or future.done():
            return  # too late, or a second owner's answer to a lookup
        mirror = self._mirrors.get(message["cluster"])
        if message["type"] == WELCOME and mirror is not None:
            mirror.welcome(message)  # at once: the ticks that follow the welcome must find the bus
        future.set_result(message)

    async def _reply(self, request: Message, answer: Message) -> None:
        answer.update(request=request["request"], cluster=request["cluster"], owner=self.channel)
        await self.layer.send(request["reply_to"], answer)

    async def ask_owner(self, mirror: Mirror, message: Message) -> Message:
        """Ask ``mirror``'s owner; ``NoAnswer`` if it does not answer in time."""
        return await self._ask(mirror.owner, {**message, "cluster": mirror.cluster})

    async def _ask(self, to: str, message: Message, *, group: bool = False) -> Message:
        request = uuid.uuid4().hex
        future: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        self._answers[request] = future
        message = {**message, "request": request, "reply_to": self.channel}
        try:
            await (self.layer.group_send(to, message) if group else self.layer.send(to, message))
            async with asyncio.timeout(self.timeout):
                return await future
        except TimeoutError:
            raise NoAnswer(f"nobody answered {message['type']} for cluster {message['cluster']!r}") from None
        finally:
            self._answers.pop(request, None)

    async def _keep_up(self) -> None:
        """Every ``renew`` seconds: forget watches not renewed, renew this relay's own, and its groups."""
        loop = asyncio.get_running_loop()
        while not self._stopping:
            await asyncio.sleep(self.renew)
            now = loop.time()
            for publication in list(self._publications.values()):
                for remote, until in list(publication.leases.items()):
                    if until < now:
                        self._on_leave(publication.cluster, remote)
            mirrors = [m for m in self._mirrors.values() if m.welcomed]
            results = await asyncio.gather(*(self._renew(m) for m in mirrors), return_exceptions=True)
            try:
                await self.layer.group_add(RELAYS, self.channel)  # memberships expire (group_expiry)
            except Exception:
                logger.exception("the relay could not renew its membership of %s", RELAYS)
            for result in results:
                if isinstance(result, Exception):
                    logger.error("the relay could not renew a watch", exc_info=result)


# -- the process's relay ---------------------------------------------------------------------------------

_active_relay: TraceRelay | None = None


def activate_relay(relay: TraceRelay | None) -> None:
    """Make ``relay`` the relay that this process's trace consumers ask for mirrors (None: none)."""
    global _active_relay
    _active_relay = relay


def active_relay() -> TraceRelay | None:
    return _active_relay


async def start_relay(lab: Lab) -> TraceRelay | None:
    """Start and activate this process's relay, if a channel layer joins it to other processes.

    With the in-memory layer (the embedded default: one process) there is nobody to relay to: None,
    and nothing runs.
    """
    layer = get_channel_layer()
    if layer is None or isinstance(layer, InMemoryChannelLayer):
        return None
    relay = TraceRelay(layer, lab_traces(lab))
    await relay.start()
    activate_relay(relay)
    return relay


__all__ = [
    "ANSWER_TIMEOUT",
    "RELAYS",
    "RENEW_INTERVAL",
    "LocalTraces",
    "Mirror",
    "NoAnswer",
    "Publication",
    "TraceRelay",
    "activate_relay",
    "active_relay",
    "lab_traces",
    "start_relay",
    "tick_group",
]
