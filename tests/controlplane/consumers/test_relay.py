"""The relay over a real Redis: a socket on one process watches a cluster that another process runs.

Two processes are simulated in this one: two relays, each with its own ``RedisChannelLayer`` object
(its own connections and channel), sharing a Redis prefix unique to the test. The **owner** runs the
cluster ``demo`` (a bare ``TraceBus``: it emits only what the test emits, so seqs are exact); the
**remote** runs no cluster, and its relay is the one the trace consumer asks. Each layer is wrapped
in a ``CountingLayer``, so a test can say how many messages crossed Redis and of what kind.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from channels.testing import WebsocketCommunicator
from channels_redis.core import RedisChannelLayer
from pytest_django import Settings

from config.settings import channel_layers_from_url
from controlplane.consumers.framing import TRACE_ENDED, encode_event
from controlplane.consumers.relay import (
    FETCH,
    LEAVE,
    LOOKUP,
    RELAYS,
    TICK,
    WATCH,
    TraceRelay,
    activate_relay,
    active_relay,
    start_relay,
    tick_group,
)
from controlplane.runtime import Lab, LabConfig
from controlplane.store.errors import UnknownCluster
from controlplane.trace.bus import TraceBus
from controlplane.trace.schema import PIPELINE_STAGES, SCHEMA_VERSION
from tests.support.services import REDIS_URL, port_open, service_missing
from tests.support.tracestream import (
    TIMEOUT,
    close,
    emit_watch_events,
    frames_until,
    open_socket,
    receive,
    staff,
    trace_router,
    trace_socket,
)

pytestmark = pytest.mark.redis

#: The consumer as config/asgi.py routes it (2000 events a frame), without the session.
app = trace_router()


class CountingLayer:
    """A channel layer that counts what is sent through it (by message type, and by group).

    A relay changes its state only as it handles a message or renews its watches, each followed by
    a use of its layer (reading the next message, answering, renewing a membership), so ``until``
    re-checks a condition whenever the layer is used.
    """

    def __init__(self, layer: RedisChannelLayer) -> None:
        self.layer = layer
        self.sent: Counter[str] = Counter()
        self.to_groups: Counter[str] = Counter()
        self._used = asyncio.Condition()

    async def send(self, channel: str, message: dict[str, Any]) -> None:
        self.sent[message["type"]] += 1
        await self._use(self.layer.send(channel, message))

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        self.sent[message["type"]] += 1
        self.to_groups[group] += 1
        await self._use(self.layer.group_send(group, message))

    async def group_add(self, group: str, channel: str) -> None:
        await self._use(self.layer.group_add(group, channel))

    async def receive(self, channel: str) -> dict[str, Any]:
        await self._use(asyncio.sleep(0))  # the message before this one has been handled
        message: dict[str, Any] = await self.layer.receive(channel)
        return message

    def __getattr__(self, name: str) -> Any:  # new_channel, group_discard, flush ...: as they are
        return getattr(self.layer, name)

    async def _use(self, call: Awaitable[None]) -> None:
        async with self._used:
            self._used.notify_all()
        await call

    async def until(self, condition: Callable[[], bool], what: str) -> None:
        """Wait until ``condition`` holds, checking it each time this layer's relay uses the layer."""
        try:
            async with asyncio.timeout(TIMEOUT), self._used:
                await self._used.wait_for(condition)
        except TimeoutError:
            pytest.fail(f"not within {TIMEOUT} s: {what}")


@dataclass
class Processes:
    bus: TraceBus  # the cluster demo, run by the owner
    owner: TraceRelay
    remote: TraceRelay
    owner_layer: CountingLayer
    remote_layer: CountingLayer


@pytest.fixture
async def layers() -> AsyncIterator[tuple[CountingLayer, CountingLayer]]:
    """Two processes' channel layers on the test's Redis, under a prefix of this test's own."""
    url = urlsplit(REDIS_URL)
    if not port_open(url.hostname or "127.0.0.1", url.port or 6379):
        service_missing(f"Redis at {url.hostname}:{url.port}")
    config = {
        **channel_layers_from_url(REDIS_URL)["default"]["CONFIG"],
        "prefix": f"kubelab-test-{uuid.uuid4().hex}:",
    }
    owner, remote = (RedisChannelLayer(**config) for _ in range(2))
    try:
        yield CountingLayer(owner), CountingLayer(remote)
    finally:
        await owner.flush()  # every key under the prefix
        await remote.close_pools()


def runs_no_cluster(name: str) -> tuple[TraceBus, str] | None:
    return None


@contextlib.asynccontextmanager
async def two_processes(
    layers: tuple[CountingLayer, CountingLayer], *, renew: float = 10.0, answer_within: float = 1.0
) -> AsyncIterator[Processes]:
    owner_layer, remote_layer = layers
    bus = TraceBus("demo", capacity=1000)
    owner = TraceRelay(owner_layer, {"demo": (bus, "classroom")}.get, renew=renew, timeout=answer_within)
    remote = TraceRelay(remote_layer, runs_no_cluster, renew=renew, timeout=answer_within)
    await owner.start()
    await remote.start()
    activate_relay(remote)  # the trace consumers of this "process" ask the remote relay
    try:
        yield Processes(bus, owner, remote, owner_layer, remote_layer)
    finally:
        activate_relay(None)
        await remote.stop()
        await owner.stop()


@pytest.fixture
async def processes(layers: tuple[CountingLayer, CountingLayer]) -> AsyncIterator[Processes]:
    async with two_processes(layers) as started:
        yield started


def as_sent(bus: TraceBus, first: int, last: int) -> list[dict[str, Any]]:
    """The owner's events ``first``..``last`` as a socket must receive them (redacted)."""
    return [json.loads(encode_event(e)) for e in bus.recorder.range(first, last)]


async def subscribed(since: int | None = None) -> tuple[WebsocketCommunicator, dict[str, Any]]:
    """A socket on the remote process watching demo from ``since`` (None: the hello's last seq)."""
    communicator = trace_socket(app, "demo", staff())
    hello = await open_socket(communicator)
    start = hello["last_seq"] if since is None else since
    await communicator.send_json_to({"action": "subscribe", "since": start})
    return communicator, hello


async def closed_with(communicator: WebsocketCommunicator) -> int:
    output = await communicator.receive_output(timeout=TIMEOUT)
    assert output["type"] == "websocket.close", output
    code: int = output["code"]
    return code


# -- streaming -------------------------------------------------------------------------------------


async def test_a_socket_on_another_process_gets_the_owners_events_gapless_and_in_order(
    processes: Processes,
) -> None:
    bus = processes.bus
    emit_watch_events(bus, 5)  # history from before anyone watched
    communicator, hello = await subscribed()
    assert hello == {
        "type": "hello",
        "cluster": "demo",
        "schema": SCHEMA_VERSION,
        "last_seq": 5,
        "timing": "classroom",
        "stages": list(PIPELINE_STAGES),
    }
    for _ in range(10):
        emit_watch_events(bus, 30)
        await asyncio.sleep(0)  # one loop turn: ticks may go between bursts
    body = {"kind": "Secret", "data": {"password": "aHVudGVyMg=="}}
    bus.emit(
        "request.received", method="PUT", path="/api/v1/namespaces/default/secrets/db", request_body=body
    )
    frames = await frames_until(communicator, bus.last_seq)
    assert frames[0]["first"] == 6
    delivered = [e for frame in frames for e in frame["events"]]
    assert delivered == as_sent(bus, 6, bus.last_seq)  # every one, in order, as the owner's sockets get them
    assert delivered[-1]["request_body"] == {"redacted": True, "size": len(json.dumps(body))}
    assert "aHVudGVyMg" not in json.dumps(frames)
    await close(communicator)


async def test_a_late_joiner_fills_its_recorder_with_one_request_to_the_owner(processes: Processes) -> None:
    bus = processes.bus
    emit_watch_events(bus, 120)  # only the owner's recorder has these
    early, hello = await subscribed(since=0)
    assert hello["last_seq"] == 120
    last = emit_watch_events(bus, 3)
    frames = await frames_until(early, last)
    assert [e for f in frames for e in f["events"]] == as_sent(bus, 1, last)
    assert processes.remote_layer.sent[FETCH] == 1

    # A second socket on the remote re-syncs from the mirror's recorder: nothing more is fetched.
    late, _ = await subscribed(since=50)
    frames = await frames_until(late, last)
    assert [e["seq"] for f in frames for e in f["events"]] == list(range(51, last + 1))
    assert processes.remote_layer.sent[FETCH] == 1
    await close(early)
    await close(late)


async def test_what_the_owner_no_longer_has_is_410_as_on_the_owner(processes: Processes) -> None:
    bus = processes.bus
    emit_watch_events(bus, 1500)  # the owner's recorder keeps 1000: 501 to 1500
    communicator = trace_socket(app, "demo", staff())
    await open_socket(communicator)
    await communicator.send_json_to({"action": "resync", "since": 1})
    assert await receive(communicator) == {"type": "error", "code": 410, "message": "too old: oldest is 501"}

    # A seq from another run (the owner restarted and counts from 1 again) cannot be resumed either.
    await communicator.send_json_to({"action": "resync", "since": 9999})
    error = await receive(communicator)
    assert error["code"] == 410 and error["message"].startswith("unknown: seq 9999"), error

    await communicator.send_json_to({"action": "subscribe", "since": 1400})  # the owner still has these
    last = emit_watch_events(bus, 2)
    frames = await frames_until(communicator, last)
    assert [e["seq"] for f in frames for e in f["events"]] == list(range(1401, last + 1))
    await close(communicator)


# -- what crosses Redis ----------------------------------------------------------------------------


async def test_nothing_is_published_while_no_other_process_watches(processes: Processes) -> None:
    bus, owner_layer = processes.bus, processes.owner_layer
    emit_watch_events(bus, 10)
    assert owner_layer.sent == {} and bus.subscribers == 0  # not even a subscription on the owner's bus

    communicator, _ = await subscribed()
    last = emit_watch_events(bus, 10)
    await frames_until(communicator, last)
    assert owner_layer.to_groups[tick_group("demo")] >= 1 and bus.subscribers == 1

    await close(communicator)  # the remote's last socket: its mirror leaves, the owner stops
    await owner_layer.until(lambda: bus.subscribers == 0, "the owner stops publishing once the mirror left")
    assert processes.remote_layer.sent[LEAVE] == 1
    sent = owner_layer.sent.copy()
    emit_watch_events(bus, 10)
    for _ in range(5):
        await asyncio.sleep(0)
    assert owner_layer.sent == sent, "the owner published a tick nobody asked for"


async def test_many_sockets_on_a_process_make_one_redis_message_per_tick(processes: Processes) -> None:
    bus = processes.bus
    sockets = [(await subscribed())[0] for _ in range(20)]
    for _ in range(5):  # five bursts, each delivered to every socket before the next
        last = emit_watch_events(bus, 10)
        for communicator in sockets:
            frames = await frames_until(communicator, last)
            assert frames[-1]["events"][-1]["seq"] == last
    # The owner sent one tick per burst, to the group, whatever the number of sockets ...
    assert processes.owner_layer.to_groups == {tick_group("demo"): 5}
    assert processes.owner_layer.sent[TICK] == 5
    # ... and the remote asked once for the cluster, not once per socket.
    assert processes.remote_layer.to_groups == {RELAYS: 1}
    assert processes.remote_layer.sent == {LOOKUP: 1, WATCH: 1}
    assert bus.subscribers == 1  # one subscription on the owner: the relay's
    for communicator in sockets:
        await close(communicator)


# -- owners, and their absence ---------------------------------------------------------------------


async def test_a_cluster_no_process_runs_is_refused_with_4404(processes: Processes) -> None:
    communicator = trace_socket(app, "nope", staff())
    await communicator.connect(timeout=TIMEOUT)
    assert await receive(communicator) == {
        "type": "error",
        "code": 4404,
        "message": "there is no cluster 'nope'",
    }
    assert await closed_with(communicator) == 4404
    await close(communicator)


async def test_a_gap_in_the_ticks_ends_the_mirror_and_the_page_reconnects(processes: Processes) -> None:
    bus = processes.bus
    communicator, hello = await subscribed()
    await frames_until(communicator, emit_watch_events(bus, 1))
    # A tick that skips seqs (Redis dropped the one before): the mirror cannot stay gapless.
    lost = {"seq": bus.last_seq + 3, "type": "watch.event"}
    await processes.owner_layer.group_send(
        tick_group("demo"),
        {
            "type": TICK,
            "cluster": "demo",
            "owner": processes.owner.channel,
            "first": lost["seq"],
            "events": [json.dumps(lost)],
        },
    )
    assert await closed_with(communicator) == TRACE_ENDED  # going away: the page reconnects from its last seq
    await close(communicator)

    again, _ = await subscribed(since=hello["last_seq"])  # a new mirror fills in from the owner
    last = emit_watch_events(bus, 2)
    frames = await frames_until(again, last)
    assert [e["seq"] for f in frames for e in f["events"]] == list(range(hello["last_seq"] + 1, last + 1))
    await close(again)


async def test_a_mirror_whose_owner_stops_answering_ends(layers: tuple[CountingLayer, CountingLayer]) -> None:
    async with two_processes(layers, renew=0.1, answer_within=0.3) as processes:
        communicator, _ = await subscribed()
        await frames_until(communicator, emit_watch_events(processes.bus, 1))
        await processes.owner.stop()  # the owner's process is gone
        assert await closed_with(communicator) == TRACE_ENDED
        await close(communicator)

        communicator = trace_socket(app, "demo", staff())  # the page reconnects: nobody runs demo now
        await communicator.connect(timeout=TIMEOUT)
        assert (await receive(communicator))["code"] == 4404
        await close(communicator)


async def test_the_owner_forgets_a_watch_that_is_not_renewed(
    layers: tuple[CountingLayer, CountingLayer],
) -> None:
    async with two_processes(layers, renew=0.1) as processes:
        # A process that asked for demo's ticks and died: it never renews, and never leaves.
        dead = await processes.remote_layer.new_channel("trace-relay")
        await processes.remote_layer.send(
            processes.owner.channel, {"type": WATCH, "cluster": "demo", "request": "r1", "reply_to": dead}
        )
        owner_layer, bus = processes.owner_layer, processes.bus
        await owner_layer.until(lambda: bus.subscribers == 1, "the owner publishes for the watch")
        await owner_layer.until(lambda: bus.subscribers == 0, "the owner forgets the watch after 3 renewals")


# -- the process's relay ---------------------------------------------------------------------------


async def test_a_lab_process_runs_a_relay_only_with_a_channel_layer_between_processes(
    layers: tuple[CountingLayer, CountingLayer], settings: Settings, tmp_path: Path
) -> None:
    lab = Lab(LabConfig(data_dir=tmp_path))  # not started: the relay only looks its clusters up
    assert await start_relay(lab) is None and active_relay() is None  # the in-memory default: one process

    redis = channel_layers_from_url(REDIS_URL)
    redis["default"]["CONFIG"]["prefix"] = layers[0].layer.prefix  # this test's
    settings.CHANNEL_LAYERS = redis
    relay = await start_relay(lab)
    assert relay is not None and active_relay() is relay
    try:
        # Another process asks for a cluster this lab does not have: nobody answers.
        remote = TraceRelay(layers[1], runs_no_cluster, timeout=0.2)
        await remote.start()
        with pytest.raises(UnknownCluster):
            await remote.mirror("demo")
        await remote.stop()
    finally:
        await relay.stop()
        await relay.layer.close_pools()
    assert active_relay() is None
