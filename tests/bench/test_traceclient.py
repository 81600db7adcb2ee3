"""The trace benchmark's instruments, without a server: reading frames, tracking gaps, making the load.

If these break, ``python -m bench trace`` counts wrong: a frame read with the wrong range, a gap
missed or a resync never credited, events the schema refuses, or a raw frame that is not the
stream's format.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from bench._traceclient import BadFrame, FrameHead, StreamTracker, parse_frame, verify_frame
from bench._traceload import SCHEMA_VERSION, EventSource, Schedule, encode, raw_frame, stamp
from controlplane.consumers.framing import EventEncoder, Frame, render_frame, summarise_omitted
from controlplane.trace import schema


def event(seq: int) -> dict[str, Any]:
    kind, fields = EventSource.event(seq - 1)
    return stamp("demo", seq, 1_700_000_000.0 + seq / 1000, kind, fields)


def rendered(first: int, last: int, carried: int) -> bytes:
    """A frame as the lab renders it: ``carried`` events from ``first``, the rest summarised."""
    events = [event(seq) for seq in range(first, first + carried)]
    summary = summarise_omitted(first + carried, last, []) if first + carried <= last else None
    return render_frame(Frame(first, last, events, summary), EventEncoder()).encode()


# -- reading frames ---------------------------------------------------------------------------------


def test_a_frame_is_read_from_its_bytes_as_json_would_read_it() -> None:
    data = rendered(41, 43, 3)
    head = parse_frame(data)
    assert head is not None
    assert (head.first, head.last, head.events, head.summary) == (41, 43, 3, None)
    assert head.accounted == 3 and head.summarised == 0
    assert json.loads(b"[" + data[head.events_start : head.events_end] + b"]") == json.loads(data)["events"]
    assert verify_frame(data, head) == []


def test_a_summary_counts_what_the_frame_does_not_carry() -> None:
    head = parse_frame(rendered(41, 1300, 20))
    assert head is not None
    assert (head.events, head.summary, head.summarised, head.accounted) == (20, (61, 1300), 1240, 1260)
    empty = parse_frame(rendered(7, 9, 0))  # all of it summarised: "events":[]
    assert empty is not None and (empty.events, empty.summary) == (0, (7, 9))


def test_other_messages_are_not_frames_and_broken_frames_are_refused() -> None:
    assert parse_frame(b'{"type":"hello","cluster":"demo","schema":1,"last_seq":0}') is None
    assert parse_frame(b'{"type":"error","code":410,"message":"too old"}') is None
    with pytest.raises(BadFrame):
        parse_frame(b'{"type":"frame","last":3,"first":1,"events":[]}')


def test_verification_catches_a_frame_that_says_more_than_it_carries() -> None:
    data = rendered(41, 43, 3)
    tampered = data.replace(b'"seq":42', b'"seq":44')  # no longer consecutive
    head = parse_frame(tampered)
    assert head is not None
    assert any("not consecutive" in problem for problem in verify_frame(tampered, head))


def test_a_raw_frame_reads_like_the_labs() -> None:
    events = [event(seq) for seq in range(5, 9)]
    data = raw_frame(5, [encode(e) for e in events]).encode()
    assert data == render_frame(Frame(5, 8, events)).encode()  # the same bytes for the same events
    head = parse_frame(data)
    assert head is not None and (head.first, head.last, head.events) == (5, 8, 4)


# -- gaps and resyncs -------------------------------------------------------------------------------


def head(first: int, last: int, carried: int | None = None) -> FrameHead:
    carried = last - first + 1 if carried is None else carried
    summary = (first + carried, last) if first + carried <= last else None
    return FrameHead(first, last, carried, summary, 0, 0)


def test_frames_that_follow_each_other_are_taken_and_counted() -> None:
    tracker = StreamTracker()
    assert tracker.frame(head(101, 110)) is None  # the first frame after "since null" starts anywhere
    assert tracker.frame(head(111, 1000, 40)) is None
    assert (tracker.frames, tracker.delivered, tracker.summarised, tracker.accounted) == (2, 50, 850, 900)
    assert tracker.gaps == 0 and tracker.next_seq == 1001


def test_a_gap_asks_for_a_resync_and_skips_frames_until_its_answer() -> None:
    tracker = StreamTracker()
    tracker.frame(head(1, 10))
    assert tracker.frame(head(15, 20)) == 10  # 11 to 14 are missing: resync since 10
    assert tracker.frame(head(21, 30)) is None  # already on the wire: skipped
    assert (tracker.gaps, tracker.resolved, tracker.unresolved, tracker.skipped) == (1, 0, 1, 2)
    assert tracker.frame(head(11, 30)) is None  # the answer
    assert (tracker.resolved, tracker.unresolved, tracker.delivered, tracker.next_seq) == (1, 0, 30, 31)


def test_a_410_leaves_the_gap_unresolved_and_starts_again_from_now() -> None:
    tracker = StreamTracker()
    tracker.frame(head(1, 10))
    assert tracker.frame(head(50, 60)) == 10
    tracker.gone()
    assert tracker.resync_since is None and tracker.next_seq is None
    assert tracker.frame(head(70, 80)) is None
    assert (tracker.gaps, tracker.resolved, tracker.unresolved, tracker.gone_count) == (1, 0, 1, 1)


def test_without_resync_a_gap_stays_and_the_stream_goes_on() -> None:
    tracker = StreamTracker(resync=False)
    tracker.frame(head(1, 10))
    assert tracker.frame(head(15, 20)) is None
    assert (tracker.gaps, tracker.unresolved, tracker.delivered) == (1, 1, 16)


def test_seqs_seen_twice_are_counted_as_overlaps_not_delivered_again() -> None:
    tracker = StreamTracker()
    tracker.frame(head(1, 10))
    assert tracker.frame(head(5, 12)) is None
    assert (tracker.overlaps, tracker.delivered, tracker.next_seq) == (1, 10, 11)


# -- the load ---------------------------------------------------------------------------------------


def test_every_event_of_the_cycle_fits_the_schema_once_stamped() -> None:
    assert SCHEMA_VERSION == schema.SCHEMA_VERSION
    source = EventSource()
    for seq in range(1, 13):
        kind, fields = source.next()
        assert schema.validate(stamp("demo", seq, 1_700_000_000.0, kind, fields), strict=True) == []
    sizes = [len(encode(event(seq))) for seq in range(1, 9)]
    assert min(sizes) > 150 and max(sizes) < 600  # the sizes of real events


def test_the_schedule_is_open_loop() -> None:
    schedule = Schedule(2000, start=10.0)
    assert schedule.due(10.0) == 0
    assert schedule.due(10.005) == 10
    assert schedule.due(10.005) == 0
    assert schedule.due(10.5) == 990  # woken late: everything due is made at once
    assert schedule.made == 1000
