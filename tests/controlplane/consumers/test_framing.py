"""Framing, without a socket: what each frame holds, how summaries count, how the client is read."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from controlplane.consumers.framing import (
    UNRECORDED,
    BadRequest,
    EventEncoder,
    Frame,
    Framer,
    FramingError,
    Pacer,
    Subscribe,
    Ticks,
    describe_nodes,
    encode_event,
    encode_redacted,
    error_message,
    hello_message,
    parse_request,
    render_frame,
    summarise_omitted,
)
from controlplane.trace.bus import Batch, TraceBus
from controlplane.trace.recorder import Event, Recorder
from controlplane.trace.schema import PIPELINE_STAGES, SCHEMA_VERSION


def event(seq: int, type: str = "watch.event", **fields: Any) -> Event:
    return {"v": 1, "cluster": "demo", "seq": seq, "ts": 1000.0 + seq, "type": type, **fields}


def watch_event(seq: int, node: str = "node-1") -> Event:
    return event(
        seq, watch="w-1", event="MODIFIED", revision=seq, **{"from": "apiserver", "to": f"kubelet:{node}"}
    )


def recorded(*events: Event) -> Recorder:
    recorder = Recorder(10_000)
    recorder.extend(events)
    return recorder


def seqs(frame: Frame) -> list[int]:
    return [e["seq"] for e in frame.events]


# -- what the client asks ---------------------------------------------------------------------------


def test_subscribe_and_resync_name_the_last_seq_the_client_has() -> None:
    assert parse_request('{"action": "subscribe", "since": null}') == Subscribe(since=None)
    assert parse_request('{"action": "subscribe"}') == Subscribe(since=None)
    assert parse_request('{"action": "subscribe", "since": 41}') == Subscribe(since=41)
    assert parse_request('{"action": "resync", "since": 0}') == Subscribe(since=0, resync=True)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (None, "not binary"),
        ("subscribe", "not JSON"),
        ("[1, 2]", "JSON object"),
        ('{"action": "pause"}', "unknown action 'pause'"),
        ('{"action": "subscribe", "since": -1}', "since must be a seq"),
        ('{"action": "subscribe", "since": "41"}', "since must be a seq"),
        ('{"action": "resync", "since": true}', "since must be a seq"),
    ],
)
def test_a_bad_request_says_what_is_wrong(text: str | None, says: str) -> None:
    with pytest.raises(BadRequest, match=says):
        parse_request(text)


def test_hello_and_error_messages() -> None:
    assert hello_message(cluster="demo", last_seq=7, timing="classroom") == {
        "type": "hello",
        "cluster": "demo",
        "schema": SCHEMA_VERSION,
        "last_seq": 7,
        "timing": "classroom",
        "stages": list(PIPELINE_STAGES),
    }
    assert error_message(410, "too old: oldest is 5") == {
        "type": "error",
        "code": 410,
        "message": "too old: oldest is 5",
    }


# -- frames from a live subscription ----------------------------------------------------------------


def test_live_batches_become_gapless_frames() -> None:
    framer = Framer(after=40)
    first = framer.from_batch(Batch([watch_event(41), watch_event(42)]), recorded().range)
    second = framer.from_batch(Batch([watch_event(43)]), recorded().range)
    assert first is not None and second is not None
    assert (first.first, first.last, seqs(first), first.summary) == (41, 42, [41, 42], None)
    assert (second.first, second.last, seqs(second)) == (43, 43, [43])
    assert framer.from_batch(Batch([]), recorded().range) is None
    assert framer.next_seq == 44


def test_a_subscriber_that_fell_behind_gets_exact_counts_of_what_it_missed() -> None:
    history = [watch_event(seq, node=f"node-{seq % 12}") for seq in range(1, 1301)]
    history[99] = event(100, "store.txn", op="txn", revision=100, **{"from": "apiserver", "to": "etcd"})
    framer = Framer(after=40)
    frame = framer.from_batch(Batch(history[40:60], missed=(61, 1300)), recorded(*history).range)
    assert frame is not None
    assert (frame.first, frame.last, seqs(frame)) == (41, 1300, list(range(41, 61)))
    assert frame.summary is not None
    assert (frame.summary.first, frame.summary.last) == (61, 1300)
    assert frame.summary.counts == {"watch.event": 1239, "store.txn": 1}
    assert sum(frame.summary.counts.values()) == 1300 - 61 + 1
    assert frame.summary.text == "1,239 watch events to 12 kubelets and 1 store transaction to etcd"
    assert framer.next_seq == 1301  # the next frame carries on after the summary


def test_a_frame_never_carries_more_than_its_budget() -> None:
    framer = Framer(after=0, max_events=3)
    frame = framer.from_batch(Batch([watch_event(s) for s in range(1, 6)], missed=(6, 7)), recorded().range)
    assert frame is not None
    assert seqs(frame) == [1, 2, 3]
    assert frame.summary is not None
    # Two were in hand, two were missed and are no longer recorded: all four are accounted for.
    assert (frame.summary.first, frame.summary.last) == (4, 7)
    assert frame.summary.counts == {"watch.event": 2, UNRECORDED: 2}
    assert frame.summary.text == "2 watch events to kubelet:node-1 and 2 events no longer recorded"


def test_a_batch_that_skips_a_seq_is_a_bug_not_a_silent_gap() -> None:
    framer = Framer(after=40)
    with pytest.raises(FramingError, match="without a gap"):
        framer.from_batch(Batch([watch_event(42)]), recorded().range)
    with pytest.raises(FramingError, match="missed range"):
        Framer(after=40).from_batch(Batch([watch_event(41)], missed=(43, 50)), recorded().range)


# -- frames from the recorder (a re-sync) -----------------------------------------------------------


def test_a_backlog_is_sent_in_chunks_before_the_live_events() -> None:
    backlog = [watch_event(seq) for seq in range(11, 18)]
    framer = Framer(after=10, backlog=backlog, max_events=3)
    assert framer.catching_up
    with pytest.raises(FramingError):
        framer.from_batch(Batch([watch_event(18)]), recorded().range)
    chunks = []
    while (frame := framer.from_backlog()) is not None:
        chunks.append(frame)
    assert [seqs(f) for f in chunks] == [[11, 12, 13], [14, 15, 16], [17]]
    assert all(f.summary is None for f in chunks)
    assert not framer.catching_up
    live = framer.from_batch(Batch([watch_event(18)]), recorded().range)
    assert live is not None and (live.first, live.last) == (18, 18)


def test_the_framer_agrees_with_a_real_bus_under_overload() -> None:
    bus = TraceBus("demo")
    subscription = bus.subscribe(max_pending=10)
    for n in range(250):
        bus.emit(
            "watch.event",
            watch="w",
            event="ADDED",
            revision=n,
            **{"from": "apiserver", "to": f"kubelet:n{n % 5}"},
        )
        if n % 7 == 0:
            bus.emit(
                "reconcile", controller="replicaset", key="default/web", result="success", **{"from": "cm"}
            )
    frame = Framer(after=0, max_events=10).from_batch(subscription.drain(), bus.recorder.range)
    assert frame is not None and frame.summary is not None
    assert (frame.first, frame.last) == (1, bus.last_seq)
    truth = Counter(e["type"] for e in bus.recorder.range(frame.summary.first, frame.summary.last))
    assert frame.summary.counts == dict(truth)
    assert frame.summary.text.startswith("24") and "to 5 kubelets" in frame.summary.text


# -- summaries --------------------------------------------------------------------------------------


def test_summary_words() -> None:
    many = [
        event(s, "request.received", method="GET", path="/", **{"from": f"user:u{s}", "to": "apiserver"})
        for s in range(1, 4)
    ]
    many += [
        event(s, "reconcile", controller="rs", key="k", result="success", **{"from": "controller-manager"})
        for s in range(4, 6)
    ]
    many += [event(6, "store.compact", revision=1), event(7, "proxy.sync", node="n", sync=1, rules=1)]
    many += [event(8, "made.up")]
    summary = summarise_omitted(1, 8, many)
    assert summary.counts == {
        "request.received": 3,
        "reconcile": 2,
        "made.up": 1,
        "proxy.sync": 1,
        "store.compact": 1,
    }
    assert (
        summary.text
        == "3 requests to apiserver, 2 reconciles at controller-manager, 1 made.up event and 2 other events"
    )
    with pytest.raises(ValueError):
        summarise_omitted(5, 4, [])


def test_nodes_in_few_words() -> None:
    assert describe_nodes(["scheduler"]) == "scheduler"
    assert describe_nodes([f"kubelet:n{i}" for i in range(12)]) == "12 kubelets"
    assert describe_nodes(["etcd", "user:a", "user:b", "kube-proxy:n1", "kube-proxy:n2"]) == (
        "2 kube-proxies, 2 users and etcd"
    )
    assert describe_nodes(["a", "b", "c", "user:x", "user:y"]) == "2 users, a, b and c"
    assert describe_nodes(["a", "b", "c", "d", "user:x", "user:y"]) == "2 users, a, b and 2 others"


# -- encoding ---------------------------------------------------------------------------------------


def test_frames_are_sent_redacted_and_each_event_is_encoded_once() -> None:
    secret = event(
        2,
        "request.received",
        method="PUT",
        path="/api/v1/namespaces/default/secrets/db",
        request_body={"kind": "Secret", "data": {"password": "aHVudGVyMg=="}},
        **{"from": "user:alice", "to": "apiserver"},
    )
    frame = Frame(first=1, last=4, events=[watch_event(1), secret], summary=summarise_omitted(3, 4, []))
    encoder = EventEncoder()
    text = render_frame(frame, encoder)
    sent = json.loads(text)
    assert "aHVudGVyMg" not in text
    assert sent["events"][1]["request_body"] == {
        "redacted": True,
        "size": len(json.dumps(secret["request_body"])),
    }
    assert {k: v for k, v in sent.items() if k != "events"} == {
        k: v for k, v in frame.as_json().items() if k != "events"
    }
    assert sent["events"][0] == watch_event(1)
    assert render_frame(frame, encoder) == text and encoder.encoded == 2  # the second socket reuses them


def test_the_encoder_keeps_only_recent_events() -> None:
    encoder = EventEncoder(keep=10)
    for seq in range(1, 100):
        encoder(watch_event(seq))
    assert encoder.encoded == 99
    encoder(watch_event(95))
    assert encoder.encoded == 99
    assert encoder.cached <= 20


def frame_of(first: int, last: int) -> Frame:
    return Frame(first=first, last=last, events=[watch_event(seq) for seq in range(first, last + 1)])


def test_shared_frames_read_as_if_each_event_were_encoded_alone() -> None:
    """Sockets at different places of the stream, a gap, an old backlog: the text never changes."""
    encoder = EventEncoder(keep=50)
    frames = [
        frame_of(1, 40),  # the first socket encodes these
        frame_of(1, 40),  # the second takes them from the run
        frame_of(21, 60),  # half from the run, half new
        frame_of(41, 60),
        frame_of(500, 520),  # past a gap: a new run
        frame_of(30, 45),  # an old backlog (a resync), before the new run
        frame_of(30, 45),
        frame_of(521, 700),  # the run grows past 2 x keep and is trimmed
        frame_of(640, 700),
    ]
    for frame in frames:
        assert render_frame(frame, encoder) == render_frame(frame)
    distinct = {seq for frame in frames for seq in range(frame.first, frame.last + 1)}
    assert encoder.encoded == len(distinct), "an event still in the encoder was encoded again"
    assert encoder.cached <= 4 * encoder.keep


def test_join_does_not_trust_a_frame_whose_events_do_not_match_its_first_seq() -> None:
    encoder = EventEncoder()
    assert (
        encoder.join(1, [watch_event(1), watch_event(2)])
        == f"{encode_event(watch_event(1))},{encode_event(watch_event(2))}"
    )
    shifted = [watch_event(3), watch_event(4)]  # not the seqs 1 and 2 the call names
    assert encoder.join(1, shifted) == ",".join(encode_event(e) for e in shifted)


def test_relayed_events_are_remembered_and_never_redacted_twice() -> None:
    body = {"kind": "Secret", "data": {"password": "aHVudGVyMg=="}}
    secret = event(7, "request.received", path="/api/v1/namespaces/default/secrets/db", request_body=body)
    relayed = json.loads(encode_event(secret))  # as a mirror decodes it
    encoder = EventEncoder(encode=encode_redacted)
    assert encoder(relayed) == encode_event(secret)  # the owner's JSON again, sizes unchanged
    encoder.remember(8, "<the owner's JSON of event 8>")
    assert encoder(watch_event(8)) == "<the owner's JSON of event 8>" and encoder.encoded == 1


def test_sockets_sending_the_same_frame_share_its_text() -> None:
    encoder = EventEncoder()
    events = [watch_event(seq) for seq in range(1, 6)]
    frames = [Framer(after=0).from_batch(Batch(list(events)), lambda first, last: []) for _ in range(100)]
    texts = {render_frame(frame, encoder) for frame in frames if frame is not None}
    assert len(texts) == 1 and encoder.rendered == 1, "each socket rendered the same frame again"
    assert json.loads(texts.pop()) == {"type": "frame", "first": 1, "last": 5, "events": events}
    shorter = Framer(after=0).from_batch(Batch(events[:3]), lambda first, last: [])
    assert shorter is not None and json.loads(render_frame(shorter, encoder))["last"] == 3


def test_a_frame_cut_to_one_viewers_scope_is_never_shared_with_another_viewer() -> None:
    """Two students' cuts of one frame may be the same size and hold different events."""
    encoder = EventEncoder()
    events = [watch_event(seq) for seq in range(1, 5)]
    whole = Frame(first=1, last=4, events=events)
    ada = Frame(first=1, last=4, events=[events[0], events[1]], hidden=2)
    bob = Frame(first=1, last=4, events=[events[2], events[3]], hidden=2)
    assert json.loads(render_frame(whole, encoder))["events"] == events
    rendered = [json.loads(render_frame(frame, encoder)) for frame in (ada, bob)]
    assert [[e["seq"] for e in r["events"]] for r in rendered] == [[1, 2], [3, 4]]
    assert [r["hidden"] for r in rendered] == [2, 2]
    assert "hidden" not in json.loads(render_frame(whole, encoder)), "the whole frame lost its text"


# -- pacing -----------------------------------------------------------------------------------------


def test_ticks_keep_sockets_in_step() -> None:
    interval = 0.25  # exact in binary: tick boundaries are 100.0, 100.25, 100.5 ...
    early, late = Ticks(interval), Ticks(interval)
    early.sent(100.01)
    late.sent(100.2)  # both sent in the tick that began at 100.0
    assert 100.03 + early.delay(100.03, idle=False) == pytest.approx(100.25)
    assert 100.21 + late.delay(100.21, idle=False) == pytest.approx(100.25)  # the same moment


def test_ticks_send_a_lone_frame_at_once_and_skip_ticks_under_overload() -> None:
    ticks = Ticks(0.25)
    assert ticks.delay(100.1, idle=True) == 0.0  # the first frame
    ticks.sent(100.1)
    assert ticks.delay(100.2, idle=True) == pytest.approx(0.05)  # one frame per tick at most
    assert ticks.delay(100.3, idle=True) == 0.0  # after a quiet spell: at once
    # Busy: its frame took until 100.3, into the next tick: it waits for the one after.
    assert 100.3 + ticks.delay(100.3, idle=False) == pytest.approx(100.5)


def test_the_pacer_spaces_frames_but_never_delays_a_lone_one() -> None:
    pacer = Pacer(interval=0.033)
    assert pacer.delay(100.0) == 0.0
    pacer.sent(100.0)
    assert pacer.delay(100.010) == pytest.approx(0.023)
    assert pacer.delay(100.050) == 0.0
    # Frames at most every interval: over a second, at most 1 + 1/interval of them.
    now, frames = 0.0, 0
    while now < 1.0:
        now += pacer.delay(now)
        pacer.sent(now)
        frames += 1
        now += 0.001  # the frame's own work
    assert frames <= 31


@pytest.mark.parametrize(
    "event",
    [
        {
            "seq": 1,
            "type": "request",
            "verb": "patch",
            "path": "/api/v1/namespaces/default/pods/é",
            "ms": 0.25,
        },
        {"seq": 2, "nested": {"list": [1, (2, 3)], "none": None, "flag": True}, "big": 1e20},
        {"seq": 3, "beyond_64_bits": 2**70},  # orjson refuses it: the standard library writes it
        {"seq": 4, 5: "a key that is not a string"},
    ],
)
def test_an_event_is_encoded_as_the_standard_library_would_write_it(event: dict[Any, Any]) -> None:
    expected = json.dumps(event, separators=(",", ":"), ensure_ascii=False, default=str)
    assert encode_redacted(event) == expected
