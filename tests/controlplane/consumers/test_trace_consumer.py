"""The trace websocket, end to end: a started lab, its bus, and Channels' test communicator.

Each test speaks the protocol of docs/trace.md ("Stream") as the topology page does. A running
cluster makes events of its own (watches opening ...), so the tests check what the protocol
promises (gapless frames, exact summaries, what they emitted arriving) rather than exact seqs. Nothing
waits for time to pass: each test waits for the frame it needs.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User
from pytest_django import Settings

from config.asgi import application
from controlplane.consumers.framing import TRACE_ENDED
from controlplane.consumers.trace import TraceConsumer
from controlplane.runtime import Cluster, Lab, LabConfig, activate
from controlplane.trace.schema import PIPELINE_STAGES, SCHEMA_VERSION
from controlplane.trace.scope import TraceScope
from tests.support.classrooms import committed_classrooms
from tests.support.tracestream import (
    TIMEOUT,
    AsDaphne,
    close,
    emit_watch_events,
    frames_until,
    open_socket,
    receive,
    staff,
    student,
    trace_router,
    trace_socket,
)

#: The consumer as routed in config/asgi.py, but small frames, and no session: tests set scope["user"].
small_frames = trace_router(max_frame_events=50)


@pytest.fixture
async def lab(tmp_path: Path) -> AsyncIterator[Lab]:
    """A started lab with the demo cluster and no components (a cluster is still busy on its own)."""
    running = Lab(
        LabConfig(data_dir=tmp_path, components=(), nodes=0, trace_capacity=1000, trace_recording=True)
    )
    await running.start()
    await settled(running.cluster("demo"))
    activate(running)
    try:
        yield running
    finally:
        activate(None)
        await running.stop()


async def settled(cluster: Cluster) -> None:
    """Wait until the API server's watch caches have opened their store watches: after that an idle
    cluster without components emits nothing, so a test's seq arithmetic is exact."""
    assert cluster.apiserver is not None
    expected = sum(1 for c in cluster.apiserver.caches.values() if c.rtype.conversion is None)
    subscription = cluster.trace.subscribe(since=0)
    opened = 0
    try:
        async with asyncio.timeout(10):
            while opened < expected:
                batch = await subscription.next_batch()
                assert batch is not None, "the trace bus closed"
                opened += sum(
                    1 for e in batch.events if e["type"] == "watch.opened" and e.get("from") == "etcd"
                )
    finally:
        subscription.close()


def anonymous_socket(cluster: str) -> WebsocketCommunicator:
    """A socket through the whole ASGI application: origin check, session auth, routing."""
    return WebsocketCommunicator(
        application, f"/ws/lab/{cluster}/trace/", headers=[(b"origin", b"http://localhost")]
    )


def socket(cluster: str, user: User | None = None) -> WebsocketCommunicator:
    return trace_socket(small_frames, cluster, user)


def assert_delivered(frames: list[dict[str, Any]], seq: int) -> None:
    """The frames carry event ``seq`` itself (later events of the cluster's own may follow it)."""
    assert any(e["seq"] == seq for frame in frames for e in frame["events"]), f"event {seq} not sent"


async def barrier(communicator: WebsocketCommunicator) -> list[dict[str, Any]]:
    """Wait until the consumer has handled every message sent before (it answers them in order).

    Returns the frames that arrived meanwhile.
    """
    await communicator.send_json_to({"action": "barrier"})
    frames = []
    while (answer := await receive(communicator))["type"] == "frame":
        frames.append(answer)
    assert answer["type"] == "error" and answer["code"] == 400, answer
    return frames


# -- connecting -------------------------------------------------------------------------------------


async def test_hello_names_the_cluster_its_last_seq_and_timing(lab: Lab) -> None:
    communicator = anonymous_socket("demo")
    hello = await open_socket(communicator)
    bus = lab.cluster("demo").trace
    assert hello == {
        "type": "hello",
        "cluster": "demo",
        "schema": SCHEMA_VERSION,
        "last_seq": bus.last_seq,
        "timing": "classroom",
        "stages": list(PIPELINE_STAGES),
    }
    assert bus.subscribers == 0  # nothing is streamed (or subscribed) until the page asks
    await close(communicator)


async def test_anonymous_visitors_may_watch_only_the_demo_cluster(lab: Lab, settings: Settings) -> None:
    await lab.create_cluster("team-a")
    for cluster in ("team-a", "no-such-cluster"):  # an anonymous visitor cannot tell which exist
        communicator = anonymous_socket(cluster)
        connected, _ = await communicator.connect(timeout=TIMEOUT)
        assert connected  # accepted, so that the browser can read why it is closed
        error = await receive(communicator)
        assert error == {"type": "error", "code": 4403, "message": f"sign in to watch cluster {cluster!r}"}
        assert (await communicator.receive_output(timeout=TIMEOUT)) == {
            "type": "websocket.close",
            "code": 4403,
        }
        await close(communicator)

    settings.KUBELAB_DEMO_ANONYMOUS = False
    communicator = anonymous_socket("demo")
    await communicator.connect(timeout=TIMEOUT)
    assert (await receive(communicator))["code"] == 4403
    await close(communicator)


async def test_a_foreign_origin_is_refused_at_the_handshake(lab: Lab) -> None:
    """Another site's page cannot open the socket with the visitor's session cookie (ALLOWED_HOSTS)."""
    for origin in (b"http://evil.example", b"http://localhost.evil.example"):
        communicator = WebsocketCommunicator(
            application, "/ws/lab/demo/trace/", headers=[(b"origin", origin)]
        )
        connected, _ = await communicator.connect(timeout=TIMEOUT)
        assert not connected, f"a socket from {origin.decode()} was accepted"
        await close(communicator)
    communicator = WebsocketCommunicator(application, "/ws/lab/demo/trace/")  # no Origin at all
    connected, _ = await communicator.connect(timeout=TIMEOUT)
    assert not connected
    await close(communicator)


@pytest.fixture
async def classrooms(transactional_db: None) -> AsyncIterator[dict[str, User]]:
    """Saved users in classrooms (tests/support/classrooms.py), committed: the consumer reads them
    in a worker thread. alice attends and bob teaches k8s-101, which owns team-a; dave attends k8s-201."""
    async with committed_classrooms() as users:
        yield users


async def test_the_people_of_a_cluster_s_classroom_may_watch_it(
    lab: Lab, classrooms: dict[str, User]
) -> None:
    await lab.create_cluster("team-a")
    for user in (classrooms["alice"], classrooms["bob"], staff()):
        communicator = socket("team-a", user)
        hello = await open_socket(communicator)
        assert hello["cluster"] == "team-a", f"{user.username} was not let in"
        await close(communicator)


async def test_a_student_of_another_classroom_is_refused(lab: Lab, classrooms: dict[str, User]) -> None:
    await lab.create_cluster("team-a")
    for cluster in ("team-a", "no-such-cluster"):  # refused alike: no probing for names either
        communicator = socket(cluster, classrooms["dave"])
        connected, _ = await communicator.connect(timeout=TIMEOUT)
        assert connected
        assert await receive(communicator) == {
            "type": "error",
            "code": 4403,
            "message": f"you may not watch cluster {cluster!r}",
        }
        assert (await communicator.receive_output(timeout=TIMEOUT))["code"] == 4403
        await close(communicator)
    # The demo cluster is everyone's.
    communicator = socket("demo", classrooms["dave"])
    assert (await open_socket(communicator))["cluster"] == "demo"
    await close(communicator)


async def test_an_unknown_cluster_is_closed_with_4404(lab: Lab) -> None:
    communicator = socket("nope", staff())
    await communicator.connect(timeout=TIMEOUT)
    assert await receive(communicator) == {
        "type": "error",
        "code": 4404,
        "message": "there is no cluster 'nope'",
    }
    assert (await communicator.receive_output(timeout=TIMEOUT))["code"] == 4404
    await close(communicator)


# -- streaming --------------------------------------------------------------------------------------


async def test_subscribed_events_arrive_in_gapless_frames(lab: Lab) -> None:
    bus = lab.cluster("demo").trace
    communicator = socket("demo", student())
    hello = await open_socket(communicator)
    await communicator.send_json_to({"action": "subscribe", "since": hello["last_seq"]})
    last = emit_watch_events(bus, 30)
    frames = await frames_until(communicator, last)
    assert frames[0]["first"] == hello["last_seq"] + 1
    delivered = {e["seq"]: e for frame in frames for e in frame["events"]}
    assert all("summary" not in frame for frame in frames)
    assert [delivered[seq] for seq in range(last - 29, last + 1)] == bus.recorder.range(last - 29, last)
    assert bus.subscribers == 1
    await close(communicator)
    assert bus.subscribers == 0  # a cluster nobody watches has no subscription


async def test_subscribing_from_now_streams_only_what_comes_next(lab: Lab) -> None:
    bus = lab.cluster("demo").trace
    communicator = socket("demo", student())
    await open_socket(communicator)
    await communicator.send_json_to({"action": "subscribe", "since": None})
    early = await barrier(communicator)
    subscribed_at = bus.last_seq
    last = emit_watch_events(bus, 5)
    frames = await frames_until(communicator, last, early)
    assert frames[0]["first"] <= subscribed_at + 1  # events of the cluster's own may come first
    assert frames[-1]["events"][-1] == bus.recorder.get(last)
    await close(communicator)


async def test_many_events_make_few_frames(lab: Lab) -> None:
    bus = lab.cluster("demo").trace
    communicator = trace_socket(trace_router(), "demo", student())
    hello = await open_socket(communicator)
    await communicator.send_json_to({"action": "subscribe", "since": hello["last_seq"]})
    loop_time = asyncio.get_running_loop().time
    start = loop_time()
    last = 0
    for _ in range(100):  # 1000 events in 100 bursts, each a loop turn apart
        last = emit_watch_events(bus, 10)
        await asyncio.sleep(0)  # one loop turn (no waiting): the consumer may run between bursts
    frames = await frames_until(communicator, last)
    elapsed = loop_time() - start
    assert sum(len(f["events"]) for f in frames) == last - hello["last_seq"]  # all of them, no summary
    assert len(frames) <= 1 + elapsed / TraceConsumer.frame_interval + 1  # at most ~30 frames a second
    assert len(frames) < 50  # fewer frames than bursts: they were batched
    await close(communicator)


async def test_overload_is_summarised_with_exact_counts(lab: Lab) -> None:
    bus = lab.cluster("demo").trace
    communicator = socket("demo", staff())  # at most 50 events a frame
    hello = await open_socket(communicator)
    await communicator.send_json_to({"action": "subscribe", "since": hello["last_seq"]})
    primed = await frames_until(communicator, emit_watch_events(bus, 1))  # the stream is live now
    last = emit_watch_events(bus, 500)  # in one go: far more than a frame, or the queue, can hold
    frames = await frames_until(communicator, last)
    assert frames[0]["first"] == primed[-1]["last"] + 1
    summarised = [f["summary"] for f in frames if "summary" in f]
    assert summarised, "500 events at once must not fit 50-event frames without a summary"
    for summary in summarised:
        truth = Counter(e["type"] for e in bus.recorder.range(summary["first"], summary["last"]))
        assert summary["counts"] == dict(truth)
        assert sum(summary["counts"].values()) == summary["last"] - summary["first"] + 1
    big = max(summarised, key=lambda s: s["counts"].get("watch.event", 0))
    assert big["counts"]["watch.event"] >= 400
    assert (
        f"{big['counts']['watch.event']:,} watch events to " in big["text"] and "12 kubelets" in big["text"]
    )
    await close(communicator)


async def test_events_are_redacted_before_they_are_sent(lab: Lab) -> None:
    bus = lab.cluster("demo").trace
    communicator = socket("demo", staff())
    hello = await open_socket(communicator)
    await communicator.send_json_to({"action": "subscribe", "since": hello["last_seq"]})
    body = {"kind": "Secret", "data": {"password": "aHVudGVyMg=="}}
    bus.emit(
        "request.received",
        method="PUT",
        path="/api/v1/namespaces/default/secrets/db",
        request_body=body,
        **{"from": "user:alice", "to": "apiserver"},
    )
    frames = await frames_until(communicator, bus.last_seq)
    (sent,) = [
        e for f in frames for e in f["events"] if e["type"] == "request.received" and "request_body" in e
    ]
    assert sent["request_body"] == {"redacted": True, "size": len(json.dumps(body))}
    await close(communicator)


# -- a viewer's scope -------------------------------------------------------------------------------

ADA_SCOPE = TraceScope(
    namespace_prefix="student-",
    own_namespace="student-ada",
    user_prefix="user:student:",
    own_user="user:student:ada",
)


def ada_sees_her_namespace(user: User | None, cluster: str) -> TraceScope | None:
    """The scope rule of the test below: alice watches as ada would in a shared cluster."""
    return ADA_SCOPE if user is not None and user.username == "alice" else None


async def scoped_frames_until(communicator: WebsocketCommunicator, seq: int) -> list[dict[str, Any]]:
    """Frames until one reaches ``seq``; each still accounts for its whole range, with ``hidden``."""
    frames: list[dict[str, Any]] = []
    while not frames or frames[-1]["last"] < seq:
        frame = await receive(communicator)
        assert frame["type"] == "frame", frame
        if frames:
            assert frame["first"] == frames[-1]["last"] + 1, "a gap or an overlap between frames"
        summarised = frame["summary"]["last"] - frame["summary"]["first"] + 1 if "summary" in frame else 0
        accounted = len(frame["events"]) + frame.get("hidden", 0) + summarised
        assert accounted == frame["last"] - frame["first"] + 1, (
            f"a frame does not account for its seqs: {frame}"
        )
        frames.append(frame)
    return frames


async def test_a_scoped_viewer_sees_her_namespace_and_requests_but_not_a_classmates(
    lab: Lab, settings: Settings
) -> None:
    settings.KUBELAB_TRACE_SCOPE = f"{__name__}.ada_sees_her_namespace"
    bus = lab.cluster("demo").trace
    communicator = socket("demo", student())
    hello = await open_socket(communicator)
    assert hello["scope"] == {"namespace": "student-ada"}
    await communicator.send_json_to({"action": "subscribe", "since": hello["last_seq"]})

    def request(request_id: str, user: str, path: str) -> None:
        bus.emit(
            "request.received", id=request_id, method="GET", path=path, **{"from": user, "to": "apiserver"}
        )
        bus.emit(
            "request.completed", id=request_id, code=200, duration=0.001, **{"from": "apiserver", "to": user}
        )

    request("bob-1", "user:student:bob", "/api/v1/namespaces/student-bob/pods")
    request("ada-1", "user:student:ada", "/api/v1/namespaces/student-ada/pods")
    request("ada-2", "user:student:ada", "/api/v1/namespaces/student-bob/pods")  # her 403 is hers
    bus.emit("reconcile", controller="replicaset", key="student-bob/web-1", result="ok")
    bus.emit("reconcile", controller="replicaset", key="kube-system/coredns-1", result="ok")
    frames = await scoped_frames_until(communicator, bus.last_seq)
    sent = [(e["type"], e.get("id") or e.get("key")) for f in frames for e in f["events"]]
    for hidden in (
        ("request.received", "bob-1"),
        ("request.completed", "bob-1"),
        ("reconcile", "student-bob/web-1"),
    ):
        assert hidden not in sent, f"alice was sent {hidden}"
    for shown in (
        ("request.received", "ada-1"),
        ("request.completed", "ada-2"),
        ("reconcile", "kube-system/coredns-1"),
    ):
        assert shown in sent, f"alice was not sent {shown}"
    assert sum(f.get("hidden", 0) for f in frames) >= 3
    await close(communicator)
    # Staff (the rule's None) see the whole trace, and their hello names no scope.
    communicator = socket("demo", staff())
    assert "scope" not in await open_socket(communicator)
    await close(communicator)


# -- re-syncing -------------------------------------------------------------------------------------


async def test_resync_replays_from_the_recorder_in_chunks_then_goes_live(lab: Lab) -> None:
    bus = lab.cluster("demo").trace
    before = bus.last_seq
    emit_watch_events(bus, 120)  # made before anyone watched: only the recorder has them
    communicator = socket("demo", student())
    await open_socket(communicator)
    await communicator.send_json_to({"action": "subscribe", "since": before})
    frames = await frames_until(communicator, before + 120)
    assert frames[0]["first"] == before + 1
    assert all(len(f["events"]) <= 50 and "summary" not in f for f in frames)  # chunks, not summaries

    # The page saw a gap after before + 5 and asks again: the stream restarts right after it.
    await communicator.send_json_to({"action": "resync", "since": before + 5})
    while (frame := await receive(communicator))["first"] != before + 6:
        assert frame["first"] > before + 6  # only frames already on the way before the re-sync
    last = emit_watch_events(bus, 3)
    frames = await frames_until(communicator, last, [frame])
    resent = [e["seq"] for f in frames for e in f["events"]]
    assert resent == list(range(before + 6, last + 1))  # no gap, no duplicate, live events after
    await close(communicator)


async def test_a_resync_too_far_back_answers_410_and_the_page_starts_from_now(lab: Lab) -> None:
    bus = lab.cluster("demo").trace
    emit_watch_events(bus, 1500)  # the recorder keeps 1000
    communicator = socket("demo", student())
    await open_socket(communicator)
    await communicator.send_json_to({"action": "resync", "since": 1})
    error = await receive(communicator)
    assert (error["type"], error["code"]) == ("error", 410)
    # The oldest seq the recorder had when it answered (the cluster's own events push it on).
    oldest = int(error["message"].removeprefix("too old: oldest is "))
    assert 500 < oldest <= (bus.recorder.first_seq or 0)
    assert bus.subscribers == 0

    # A seq from another run (the lab restarted and counts again from 1) cannot be resumed either.
    await communicator.send_json_to({"action": "resync", "since": bus.last_seq + 1000})
    error = await receive(communicator)
    assert error["code"] == 410 and error["message"].startswith("unknown: seq")

    await communicator.send_json_to({"action": "subscribe", "since": bus.last_seq})
    last = emit_watch_events(bus, 2)
    assert_delivered(await frames_until(communicator, last), last)
    await close(communicator)


async def test_a_bad_request_is_answered_and_the_socket_stays_open(lab: Lab) -> None:
    communicator = socket("demo", student())
    hello = await open_socket(communicator)
    await communicator.send_json_to({"action": "pause"})
    error = await receive(communicator)
    assert error["code"] == 400 and "unknown action 'pause'" in error["message"]
    await communicator.send_json_to({"action": "subscribe", "since": hello["last_seq"]})
    last = emit_watch_events(lab.cluster("demo").trace, 1)
    assert_delivered(await frames_until(communicator, last), last)
    await close(communicator)


# -- ending -----------------------------------------------------------------------------------------


def errors_logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Errors logged so far, with those of tasks that failed and nobody awaited (reported when collected)."""
    gc.collect()
    return [f"{r.name}: {r.getMessage()}" for r in caplog.records if r.levelno >= logging.WARNING]


async def test_a_client_closing_mid_stream_ends_its_stream_without_an_error(
    lab: Lab, caplog: pytest.LogCaptureFixture
) -> None:
    bus = lab.cluster("demo").trace
    server = AsDaphne(small_frames)
    communicator = trace_socket(server, "demo", student())
    hello = await open_socket(communicator)
    await communicator.send_json_to({"action": "subscribe", "since": hello["last_seq"]})
    await frames_until(communicator, emit_watch_events(bus, 1))
    server.client_closing()  # the browser closes its tab: daphne knows before the consumer does
    emit_watch_events(bus, 5)
    async with asyncio.timeout(TIMEOUT):
        await server.send_failed.wait()  # the stream tried to send a frame to the closed socket
    await close(communicator)
    assert bus.subscribers == 0, "the stream of a closed socket still subscribes"
    assert errors_logged(caplog) == [], "a client that closed mid-stream was reported as an error"


async def test_the_end_of_the_trace_closes_sockets_with_4001(
    lab: Lab, caplog: pytest.LogCaptureFixture
) -> None:
    bus = lab.cluster("demo").trace
    communicator = trace_socket(AsDaphne(small_frames), "demo", student())
    hello = await open_socket(communicator)
    await communicator.send_json_to({"action": "subscribe", "since": hello["last_seq"]})
    await frames_until(communicator, emit_watch_events(bus, 1))
    bus.close()  # the lab stops
    closed = await communicator.receive_output(timeout=TIMEOUT)
    assert closed == {"type": "websocket.close", "code": TRACE_ENDED}, "the page would not know to reconnect"
    await close(communicator)
    assert errors_logged(caplog) == [], "the end of the trace was reported as an error"
