"""The recorder: a bounded ring of events with lookups by seq, time, revision, request and node."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.trace.recorder import OutOfOrder, Recorder, TooOld
from controlplane.trace.schema import SCHEMA_VERSION


def event(seq: int, type: str = "store.txn", **fields: Any) -> dict[str, Any]:
    return {"v": SCHEMA_VERSION, "cluster": "c", "seq": seq, "ts": 1000.0 + seq, "type": type, **fields}


def filled(count: int, capacity: int = 100, start: int = 1) -> Recorder:
    recorder = Recorder(capacity)
    recorder.extend(
        event(s, revision=s, id=f"req-{s % 3}", **{"from": "apiserver", "to": "etcd"})
        for s in range(start, start + count)
    )
    return recorder


def seqs(events: list[dict[str, Any]]) -> list[int]:
    return [e["seq"] for e in events]


def test_a_full_recorder_pushes_out_the_oldest() -> None:
    recorder = filled(10, capacity=4)
    assert len(recorder) == 4
    assert (recorder.first_seq, recorder.last_seq, recorder.evicted) == (7, 10, 6)
    assert seqs(list(recorder)) == [7, 8, 9, 10]


def test_get_by_seq() -> None:
    recorder = filled(10, capacity=4)
    assert recorder.get(8) is not None and recorder.get(8)["seq"] == 8  # type: ignore[index]
    assert recorder.get(6) is None and recorder.get(11) is None


def test_range_from_either_end() -> None:
    recorder = filled(100)
    assert seqs(recorder.range(3, 5)) == [3, 4, 5]
    assert seqs(recorder.range(97)) == [97, 98, 99, 100]
    assert seqs(recorder.range(90, 92)) == [90, 91, 92]
    assert recorder.range(200) == [] and recorder.range(5, 4) == []
    assert seqs(recorder.range(-5, 2)) == [1, 2]


def test_since_is_everything_after_a_seq() -> None:
    recorder = filled(10)
    assert seqs(recorder.since(7)) == [8, 9, 10]
    assert seqs(recorder.since(0)) == list(range(1, 11))
    assert recorder.since(10) == []


def test_since_refuses_when_events_are_gone() -> None:
    recorder = filled(10, capacity=4)  # holds 7..10
    assert seqs(recorder.since(6)) == [7, 8, 9, 10]  # nothing missing: 7 is the next one
    with pytest.raises(TooOld) as raised:
        recorder.since(5)
    assert (raised.value.requested, raised.value.oldest) == (5, 7)


def test_seqs_must_follow_each_other() -> None:
    recorder = filled(3)
    with pytest.raises(OutOfOrder):
        recorder.append(event(5))
    assert recorder.last_seq == 3


def test_a_recorder_may_start_anywhere() -> None:
    recorder = filled(3, start=500)
    assert seqs(recorder.range(501, 502)) == [501, 502]
    with pytest.raises(TooOld):
        recorder.since(10)


def test_backfill_puts_older_events_in_front_as_far_as_there_is_room() -> None:
    recorder = filled(3, capacity=6, start=10)  # 10..12, as a mirror that joined at seq 9 has them
    recorder.backfill([event(s, revision=s) for s in range(5, 10)])  # 5..9: room for 3 of them
    assert seqs(list(recorder)) == [7, 8, 9, 10, 11, 12]
    assert seqs(recorder.at_revision(8)) == [8]  # indexed like any other
    recorder.backfill([event(6)])  # full: newer events are never pushed out for older ones
    assert recorder.first_seq == 7
    recorder.append(event(13))
    assert seqs(recorder.since(7)) == [8, 9, 10, 11, 12, 13]


def test_backfill_must_lead_up_to_the_oldest_event() -> None:
    recorder = filled(3, capacity=10, start=10)
    for older in ([event(7), event(8)], [event(7), event(9)]):  # a gap before 10, a gap inside
        with pytest.raises(OutOfOrder):
            recorder.backfill(older)
    assert seqs(list(recorder)) == [10, 11, 12]


def test_time_range() -> None:
    recorder = filled(10)
    assert seqs(recorder.between(1003.0, 1005.0)) == [3, 4, 5]


def test_lookups_by_revision_request_and_node() -> None:
    recorder = Recorder(10)
    recorder.append(event(1, "request.received", id="a", **{"from": "user:alice", "to": "apiserver"}))
    recorder.append(
        event(2, "store.txn", id="a", op="txn", revision=7, **{"from": "apiserver", "to": "etcd"})
    )
    recorder.append(event(3, "watch.event", revision=7, **{"from": "apiserver", "to": "scheduler"}))
    recorder.append(event(4, "reconcile", revision=7, **{"from": "controller-manager"}))
    assert seqs(recorder.at_revision(7)) == [2, 3, 4]
    assert seqs(recorder.for_request("a")) == [1, 2]
    assert seqs(recorder.for_node("apiserver")) == [1, 2, 3]
    assert seqs(recorder.for_node("scheduler")) == [3]
    assert recorder.nodes() == ["apiserver", "controller-manager", "etcd", "scheduler", "user:alice"]
    assert recorder.at_revision(8) == [] and recorder.for_request("b") == [] and recorder.for_node("x") == []


def test_indexes_forget_evicted_events() -> None:
    recorder = filled(10, capacity=4)
    assert recorder.revisions() == [7, 8, 9, 10]
    assert seqs(recorder.for_request("req-0")) == [9]
    assert recorder.at_revision(3) == []


def test_clear_and_capacity() -> None:
    recorder = filled(3)
    recorder.clear()
    assert len(recorder) == 0 and recorder.first_seq is None and recorder.since(0) == []
    recorder.append(event(40))  # may start anew anywhere
    assert recorder.last_seq == 40
    with pytest.raises(ValueError):
        Recorder(0)
