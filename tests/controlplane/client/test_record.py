"""Event recording: the correlator's dedupe, aggregation and spam filter, the broadcaster's writes,
and Events as a real (in-process) API server stores them.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest

from controlplane.api.meta import format_time
from controlplane.client.errors import Invalid, NotFound, TransportError
from controlplane.client.record import (
    CorrelateResult,
    Event,
    EventBroadcaster,
    EventCorrelator,
    EventRecorder,
    EventSinkImpl,
    object_reference,
)
from controlplane.clock import ManualClock
from tests.controlplane.client.conftest import Cluster, configmap

T0 = 1_700_000_000.0
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web", "namespace": "shop", "uid": "u-1", "resourceVersion": "12"},
}


def make_event(message: str = "failed to pull", *, reason: str = "Failed", name: str = "web.1") -> Event:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": "shop"},
        "involvedObject": object_reference(POD),
        "reason": reason,
        "message": message,
        "type": "Warning",
        "source": {"component": "kubelet", "host": "node-1"},
        "count": 1,
        "firstTimestamp": format_time(T0),
        "lastTimestamp": format_time(T0),
    }


def written(result: CorrelateResult, resource_version: str) -> Event:
    """What the server would answer for the correlated event."""
    assert result.event is not None
    return {**result.event, "metadata": {**result.event["metadata"], "resourceVersion": resource_version}}


# -- the correlator ----------------------------------------------------------------------------


def test_object_reference_points_at_the_object() -> None:
    assert object_reference(POD) == {
        "kind": "Pod",
        "namespace": "shop",
        "name": "web",
        "uid": "u-1",
        "apiVersion": "v1",
        "resourceVersion": "12",
    }
    with pytest.raises(ValueError, match="kind"):
        object_reference({"metadata": {"name": "x"}})


async def test_a_repeat_becomes_a_patch_of_the_first_event_counting_up() -> None:
    clock = ManualClock(T0)
    correlator = EventCorrelator(clock=clock)
    first = correlator.correlate(make_event(name="web.1"))
    assert first.patch is None and first.event is not None
    assert first.event["count"] == 1
    correlator.update_state(written(first, "100"))

    await clock.advance(30)
    later = {**make_event(name="web.2"), "lastTimestamp": format_time(T0 + 30)}
    second = correlator.correlate(later)
    assert second.event is not None
    assert second.event["metadata"]["name"] == "web.1", "the repeat must patch the first Event"
    assert second.event["metadata"]["resourceVersion"] == "100"
    assert second.event["count"] == 2
    assert second.event["firstTimestamp"] == format_time(T0)
    assert second.patch == {"count": 2, "lastTimestamp": format_time(T0 + 30), "message": "failed to pull"}

    third = correlator.correlate(make_event(name="web.3"))
    assert third.patch is not None and third.patch["count"] == 3


def test_events_differing_in_anything_but_time_are_not_deduplicated() -> None:
    correlator = EventCorrelator(clock=ManualClock(T0))
    assert correlator.correlate(make_event("one")).patch is None
    assert correlator.correlate(make_event("two")).patch is None
    assert correlator.correlate(make_event("one", reason="Other")).patch is None
    other_source = {**make_event("one"), "source": {"component": "scheduler"}}
    assert correlator.correlate(other_source).patch is None
    assert correlator.correlate(make_event("one")).patch is not None


async def test_ten_similar_messages_within_ten_minutes_are_combined() -> None:
    clock = ManualClock(T0)
    correlator = EventCorrelator(clock=clock)
    results = []
    for i in range(10):
        results.append(correlator.correlate(make_event(f"pull attempt {i}")))
        await clock.advance(1)
    assert all(r.patch is None for r in results[:9])
    assert [r.event["message"] for r in results[:9] if r.event] == [f"pull attempt {i}" for i in range(9)]
    combined = results[9].event
    assert combined is not None
    assert combined["message"] == "(combined from similar events): pull attempt 9"
    assert combined["count"] == 1
    correlator.update_state(written(results[9], "200"))
    # The next similar event counts up the combined one.
    again = correlator.correlate(make_event("pull attempt 10"))
    assert again.event is not None and again.patch is not None
    assert again.event["metadata"]["name"] == combined["metadata"]["name"]
    assert again.patch["count"] == 2
    assert again.patch["message"] == "(combined from similar events): pull attempt 10"


async def test_similar_messages_spread_over_more_than_ten_minutes_are_not_combined() -> None:
    clock = ManualClock(T0)
    correlator = EventCorrelator(clock=clock)
    messages = []
    for i in range(12):
        result = correlator.correlate(make_event(f"attempt {i}"))
        assert result.event is not None
        messages.append(result.event["message"])
        await clock.advance(601)
    assert messages == [f"attempt {i}" for i in range(12)]


async def test_a_source_may_burst_25_events_about_an_object_then_one_per_five_minutes() -> None:
    clock = ManualClock(T0)
    correlator = EventCorrelator(clock=clock)
    results = [correlator.correlate(make_event(f"distinct {i}", reason=f"R{i}")) for i in range(26)]
    assert [r.skip for r in results] == [False] * 25 + [True]
    assert results[25].event is None
    await clock.advance(299)
    assert correlator.correlate(make_event("later", reason="Later")).skip
    await clock.advance(1)
    assert not correlator.correlate(make_event("later", reason="Later")).skip
    # Another object has its own bucket.
    other = {**make_event("x"), "involvedObject": {**object_reference(POD), "name": "db"}}
    assert not correlator.correlate(other).skip


# -- recorder and broadcaster, against an in-memory sink ---------------------------------------


class MemorySink:
    """Events by name; ``failures`` makes the next writes fail with the given errors."""

    def __init__(self) -> None:
        self.events: dict[str, Event] = {}
        self.calls: list[tuple[str, str]] = []
        self.failures: list[Exception] = []
        self.version = 0
        self.written = asyncio.Event()

    def _maybe_fail(self) -> None:
        if self.failures:
            raise self.failures.pop(0)

    def _store(self, event: Event) -> Event:
        self.version += 1
        stored = {**event, "metadata": {**event["metadata"], "resourceVersion": str(self.version)}}
        self.events[event["metadata"]["name"]] = stored
        self.written.set()
        return stored

    async def create(self, event: Event) -> Event:
        self.calls.append(("create", event["metadata"]["name"]))
        self._maybe_fail()
        assert "resourceVersion" not in event["metadata"], "a create must not carry a resourceVersion"
        return self._store(event)

    async def patch(self, event: Event, patch: dict[str, Any]) -> Event:
        self.calls.append(("patch", event["metadata"]["name"]))
        self._maybe_fail()
        existing = self.events.get(event["metadata"]["name"])
        if existing is None:
            raise NotFound({"reason": "NotFound", "code": 404})
        return self._store({**existing, **patch})


@pytest.fixture
async def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
async def sink() -> MemorySink:
    return MemorySink()


@pytest.fixture
async def broadcaster(sink: MemorySink, clock: ManualClock) -> AsyncIterator[EventBroadcaster]:
    broadcaster = EventBroadcaster(sink, clock=clock, rng=random.Random(3))
    broadcaster.start()
    try:
        yield broadcaster
    finally:
        await broadcaster.shutdown()


async def test_five_identical_events_are_one_event_with_count_five(
    broadcaster: EventBroadcaster, sink: MemorySink, clock: ManualClock
) -> None:
    recorder = broadcaster.new_recorder("labeler")
    for _ in range(5):
        recorder.event(POD, "Warning", "FailedLabel", "cannot label: quota exceeded")
        await clock.advance(10)
    await asyncio.wait_for(broadcaster.flush(), 5)
    assert [c[0] for c in sink.calls] == ["create", "patch", "patch", "patch", "patch"]
    [event] = sink.events.values()
    assert event["count"] == 5
    assert event["involvedObject"]["name"] == "web"
    assert event["source"] == {"component": "labeler"}
    assert event["reportingComponent"] == "labeler"
    assert event["firstTimestamp"] == format_time(T0)
    assert event["lastTimestamp"] == format_time(T0 + 40)
    assert event["metadata"]["namespace"] == "shop"


async def test_events_at_one_instant_get_distinct_names(
    broadcaster: EventBroadcaster, sink: MemorySink
) -> None:
    recorder = broadcaster.new_recorder("labeler")
    recorder.event(POD, "Normal", "A", "one")
    recorder.event(POD, "Normal", "B", "two")
    await asyncio.wait_for(broadcaster.flush(), 5)
    assert len(sink.events) == 2
    assert all(name.startswith("web.") for name in sink.events)


async def test_an_unknown_type_or_an_object_without_kind_is_not_recorded(
    broadcaster: EventBroadcaster, sink: MemorySink
) -> None:
    recorder = broadcaster.new_recorder("labeler")
    recorder.event(POD, "Error", "Bad", "not a type")
    recorder.event({"metadata": {"name": "x"}}, "Normal", "NoKind", "nothing to point at")
    recorder.eventf(POD, "Normal", "Formatted", "%d items", 3)
    await asyncio.wait_for(broadcaster.flush(), 5)
    assert [e["reason"] for e in sink.events.values()] == ["Formatted"]
    assert [e["message"] for e in sink.events.values()] == ["3 items"]


async def test_an_unreachable_server_is_retried_and_a_refusal_is_not(
    broadcaster: EventBroadcaster, sink: MemorySink, clock: ManualClock
) -> None:
    recorder: EventRecorder = broadcaster.new_recorder("labeler")
    sink.failures = [TransportError("connection refused"), TransportError("connection refused")]
    recorder.event(POD, "Normal", "Retried", "eventually written")
    flushed = asyncio.create_task(broadcaster.flush())
    for _ in range(10):
        await clock.advance(10)  # the first wait is random in [0, 10) s, then 10 s
        if flushed.done():
            break
    await asyncio.wait_for(flushed, 1)
    assert [c[0] for c in sink.calls] == ["create", "create", "create"]
    assert [e["reason"] for e in sink.events.values()] == ["Retried"]

    sink.failures = [Invalid({"reason": "Invalid", "code": 422})]
    recorder.event(POD, "Normal", "Refused", "the server says no")
    await asyncio.wait_for(broadcaster.flush(), 5)
    assert sink.calls[-1] == ("create", sink.calls[-1][1])
    assert len(sink.calls) == 4, "a refused event is not retried"
    assert "Refused" not in [e["reason"] for e in sink.events.values()]


async def test_a_repeat_of_an_expired_event_creates_it_again(
    broadcaster: EventBroadcaster, sink: MemorySink
) -> None:
    recorder = broadcaster.new_recorder("labeler")
    recorder.event(POD, "Normal", "Labeled", "done")
    await asyncio.wait_for(broadcaster.flush(), 5)
    sink.events.clear()  # the server expired it (Events live an hour)
    recorder.event(POD, "Normal", "Labeled", "done")
    await asyncio.wait_for(broadcaster.flush(), 5)
    assert [c[0] for c in sink.calls] == ["create", "patch", "create"]
    [event] = sink.events.values()
    assert event["count"] == 2


async def test_a_full_queue_drops_events_instead_of_blocking(sink: MemorySink, clock: ManualClock) -> None:
    broadcaster = EventBroadcaster(sink, clock=clock, max_queued=2)  # not started: nothing drains it
    recorder = broadcaster.new_recorder("labeler")
    for i in range(4):
        recorder.event(POD, "Normal", "Many", f"event {i}")
    assert broadcaster.dropped == 2


# -- against the API server --------------------------------------------------------------------


async def test_five_identical_events_make_one_stored_event_with_count_five(cluster: Cluster) -> None:
    clock = ManualClock(T0)
    cm = await cluster.configmaps("default").create(configmap("settings"))
    broadcaster = EventBroadcaster(EventSinkImpl(cluster.client), clock=clock)
    broadcaster.start()
    try:
        recorder = broadcaster.new_recorder("configmap-labeler")
        for _ in range(5):
            recorder.event(cm, "Warning", "LabelFailed", "cannot label settings: forbidden")
            await asyncio.wait_for(broadcaster.flush(), 5)
            await clock.advance(7)
    finally:
        await broadcaster.shutdown()

    events = await cluster.client.resource("", "v1", "events", "default").list()
    [event] = events["items"]
    assert event["count"] == 5
    assert event["type"] == "Warning"
    assert event["reason"] == "LabelFailed"
    assert event["message"] == "cannot label settings: forbidden"
    assert event["involvedObject"]["kind"] == "ConfigMap"
    assert event["involvedObject"]["name"] == "settings"
    assert event["involvedObject"]["uid"] == cm["metadata"]["uid"]
    assert event["source"] == {"component": "configmap-labeler"}
    assert event["reportingComponent"] == "configmap-labeler"
    assert event["firstTimestamp"] == format_time(T0)
    assert event["lastTimestamp"] == format_time(T0 + 28)
    assert event["metadata"]["name"].startswith("settings.")


@pytest.mark.parametrize(
    "timestamp", [0.0, 59.5, 1.9999994, 1.9999996, 1_700_000_000.25, 1_700_000_000.9999999, -1.5, -0.0000001]
)
def test_format_time_is_the_rounded_whole_second_however_often_it_is_asked(timestamp: float) -> None:
    expected = datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert format_time(timestamp) == expected
    assert format_time(timestamp) == expected  # the second time, from the last second formatted
