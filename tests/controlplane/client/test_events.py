"""The events.k8s.io/v1 recorder: the series bookkeeping (pure), the broadcaster's writes against an
in-memory sink on a ManualClock, and its Events as a real (in-process) API server stores them.
"""

from __future__ import annotations

import asyncio
import random
import re
import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest

from controlplane.api.meta import format_micro_time
from controlplane.client.errors import AlreadyExists, Invalid, NotFound, TransportError
from controlplane.client.events import (
    FINISH_TIME,
    REFRESH_TIME,
    EventBroadcaster,
    EventSeriesCache,
    EventSinkImpl,
    event_name,
    series_key,
    series_patch,
)
from controlplane.client.record import object_reference
from controlplane.clock import ManualClock
from tests.controlplane.client.conftest import Cluster, configmap
from tests.controlplane.client.helpers import until

T0 = 1_700_000_000.0
MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web", "namespace": "shop", "uid": "u-1", "resourceVersion": "12"},
}
NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1", "uid": "n-1"}}

Event = dict[str, Any]


def make_event(
    note: str = "0/3 nodes are available: 3 Insufficient cpu.",
    *,
    name: str = "web.1",
    reason: str = "FailedScheduling",
    action: str = "Scheduling",
    type: str = "Warning",
    regarding: dict[str, Any] | None = None,
    related: dict[str, Any] | None = None,
    instance: str = "default-scheduler-cp",
    at: float = T0,
) -> Event:
    event: Event = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": "shop"},
        "eventTime": format_micro_time(at),
        "reportingController": "default-scheduler",
        "reportingInstance": instance,
        "action": action,
        "reason": reason,
        "regarding": regarding or object_reference(POD),
        "note": note,
        "type": type,
    }
    if related is not None:
        event["related"] = related
    return event


# -- the pure parts ------------------------------------------------------------------------------


def test_micro_time_is_rfc3339_with_microseconds_in_utc() -> None:
    assert format_micro_time(T0) == "2023-11-14T22:13:20.000000Z"
    assert format_micro_time(T0 + 0.123456) == "2023-11-14T22:13:20.123456Z"
    assert format_micro_time(T0 + 0.9999996) == "2023-11-14T22:13:21.000000Z", "rounds into the next second"
    assert format_micro_time(T0 + 1.5) == "2023-11-14T22:13:21.500000Z"


def test_event_names_are_the_object_name_and_hex_nanoseconds_or_random_when_invalid() -> None:
    assert event_name("web", 0x17A) == "web.17a"
    # An Event's name must be a DNS subdomain; an object's need not be (GenerateEventName).
    for bad in ("Web", "x" * 252):  # uppercase; 254 characters with ".1"
        name = event_name(bad, 1)
        assert not name.startswith(bad) and re.fullmatch(r"[0-9a-f-]{36}", name), name
        # Drawn from the recorder's seeded randomness, the random name replays too.
        assert event_name(bad, 1, random.Random(7)) == event_name(bad, 1, random.Random(7))


def test_the_first_occurrence_is_written_as_it_is_and_cached() -> None:
    cache = EventSeriesCache()
    event = make_event()
    written = cache.observe(event, T0)
    assert written == event
    assert written is not None and "series" not in written
    written["metadata"]["resourceVersion"] = "7"  # what a sink does to its copy does not reach the cache
    cached = cache.get(series_key(event))
    assert cached is not None and "resourceVersion" not in cached["metadata"]


def test_the_first_repeat_starts_a_series_on_the_first_event_and_later_ones_only_count() -> None:
    cache = EventSeriesCache()
    cache.observe(make_event(name="web.1"), T0)

    second = cache.observe(make_event(name="web.2", at=T0 + 30), T0 + 30)
    assert second is not None, "the first repeat must be written (a series patch)"
    assert second["metadata"]["name"] == "web.1", "the series is on the first Event"
    assert second["series"] == {"count": 2, "lastObservedTime": format_micro_time(T0 + 30)}
    assert second["eventTime"] == format_micro_time(T0), "the Event keeps its first eventTime"
    assert series_patch(second) == {"series": {"count": 2, "lastObservedTime": format_micro_time(T0 + 30)}}

    assert cache.observe(make_event(name="web.3"), T0 + 40) is None, "later repeats are not written"
    assert cache.observe(make_event(name="web.4"), T0 + 50) is None
    cached = cache.get(series_key(make_event()))
    assert cached is not None
    assert cached["series"] == {"count": 4, "lastObservedTime": format_micro_time(T0 + 50)}
    assert second["series"]["count"] == 2, "the written copy does not follow the cache"
    assert len(cache) == 1


def test_isomorphic_means_same_type_action_reason_reporter_and_objects_whatever_the_note() -> None:
    cache = EventSeriesCache()
    cache.observe(make_event("first"), T0)
    repeat = cache.observe(make_event("a different note"), T0)
    assert repeat is not None and repeat["series"]["count"] == 2, "the note is not part of the key"
    assert repeat["note"] == "first", "the series keeps the first Event's note"

    different = [
        make_event(type="Normal"),
        make_event(action="Binding"),
        make_event(reason="Scheduled"),
        make_event(instance="default-scheduler-other"),
        make_event(regarding={**object_reference(POD), "resourceVersion": "13"}),
        make_event(related=object_reference(NODE)),
    ]
    for event in different:
        written = cache.observe(event, T0)
        assert written is not None and "series" not in written, f"{event} is not isomorphic"
    assert len(cache) == 1 + len(different)


def test_finish_forgets_old_singletons_and_hands_back_quiet_series() -> None:
    cache = EventSeriesCache()
    cache.observe(make_event(reason="Old", at=T0), T0)
    cache.observe(make_event(reason="Young", at=T0 + 300), T0 + 300)
    cache.observe(make_event(reason="Quiet"), T0)
    cache.observe(make_event(reason="Quiet"), T0 + 10)
    cache.observe(make_event(reason="Busy"), T0)
    cache.observe(make_event(reason="Busy"), T0 + 350)

    ended = cache.finish(T0 + FINISH_TIME + 20)
    assert [(event["reason"], event["series"]["count"]) for _, event in ended] == [("Quiet", 2)]
    assert cache.get(series_key(make_event(reason="Old"))) is None, "a singleton is forgotten after 6 min"
    assert cache.get(series_key(make_event(reason="Young"))) is not None
    assert cache.get(series_key(make_event(reason="Quiet"))) is not None, "kept until written"
    (key, _) = ended[0]
    cache.forget(key)
    assert cache.get(key) is None
    assert sorted(e["reason"] for _, e in cache.ongoing()) == ["Busy"]


def test_a_refreshed_series_caches_the_servers_answer() -> None:
    cache = EventSeriesCache()
    cache.observe(make_event(), T0)
    cache.observe(make_event(), T0 + 1)
    ((key, event),) = cache.ongoing()
    answer = {**event, "metadata": {**event["metadata"], "resourceVersion": "99"}}
    cache.refreshed(key, answer)
    assert cache.get(key) == answer
    cache.refreshed(("gone",), answer)  # a series forgotten meanwhile is not brought back
    assert len(cache) == 1


# -- recorder and broadcaster, against an in-memory sink ---------------------------------------


class MemorySink:
    """Events by name, as a server would keep them; ``failures`` makes the next writes fail."""

    def __init__(self) -> None:
        self.events: dict[str, Event] = {}
        self.calls: list[tuple[str, str, Any]] = []
        self.failures: list[Exception] = []
        self.version = 0

    def _maybe_fail(self) -> None:
        if self.failures:
            raise self.failures.pop(0)

    def _store(self, event: Event) -> Event:
        self.version += 1
        stored = {**event, "metadata": {**event["metadata"], "resourceVersion": str(self.version)}}
        self.events[event["metadata"]["name"]] = stored
        return stored

    async def create(self, event: Event) -> Event:
        self.calls.append(("create", event["metadata"]["name"], event.get("series")))
        self._maybe_fail()
        assert "resourceVersion" not in event["metadata"], "a create must not carry a resourceVersion"
        return self._store(event)

    async def patch(self, event: Event, patch: dict[str, Any]) -> Event:
        self.calls.append(("patch", event["metadata"]["name"], patch))
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


async def test_the_recorder_writes_an_events_v1_event_as_kube_scheduler_does(
    broadcaster: EventBroadcaster, sink: MemorySink
) -> None:
    recorder = broadcaster.new_recorder("default-scheduler", "cp-1")
    recorder.eventf(
        POD, None, "Normal", "Scheduled", "Binding", "Successfully assigned %s to %s", "shop/web", "n1"
    )
    await asyncio.wait_for(broadcaster.flush(), 5)
    ((name, event),) = sink.events.items()
    assert re.fullmatch(r"web\.[0-9a-f]+", name) and int(name.split(".")[1], 16) == int(T0 * 1e9)
    assert event == {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": "shop", "resourceVersion": "1"},
        "eventTime": format_micro_time(T0),
        "reportingController": "default-scheduler",
        "reportingInstance": "default-scheduler-cp-1",
        "action": "Binding",
        "reason": "Scheduled",
        "regarding": object_reference(POD),
        "note": "Successfully assigned shop/web to n1",
        "type": "Normal",
    }


async def test_an_object_without_namespace_gets_its_events_in_default_and_related_is_kept(
    broadcaster: EventBroadcaster, sink: MemorySink
) -> None:
    recorder = broadcaster.new_recorder("node-controller", "cp")
    recorder.eventf(NODE, POD, "Normal", "Noted", "Looking", "100% sure")  # no args: taken as it is
    recorder.eventf(POD, {"metadata": {"name": "no-kind"}}, "Normal", "Alone", "Looking", "related dropped")
    await asyncio.wait_for(broadcaster.flush(), 5)
    noted, alone = sorted(sink.events.values(), key=lambda e: e["reason"], reverse=True)
    assert noted["metadata"]["namespace"] == "default"
    assert noted["related"] == object_reference(POD)
    assert noted["note"] == "100% sure"
    assert "related" not in alone


async def test_an_unknown_type_or_an_object_without_kind_is_not_recorded(
    broadcaster: EventBroadcaster, sink: MemorySink
) -> None:
    recorder = broadcaster.new_recorder("default-scheduler", "cp")
    recorder.eventf(POD, None, "Error", "Bad", "Testing", "not a type")
    recorder.eventf({"metadata": {"name": "x"}}, None, "Normal", "NoKind", "Testing", "nothing to point at")
    await asyncio.wait_for(broadcaster.flush(), 5)
    assert sink.calls == []


async def test_the_reporting_instance_defaults_to_the_hosts_name(broadcaster: EventBroadcaster) -> None:
    recorder = broadcaster.new_recorder("default-scheduler")
    assert recorder.reporting_instance == f"default-scheduler-{socket.gethostname()}"


async def test_repeats_cost_one_patch_and_the_final_count_is_written_when_the_series_ends(
    broadcaster: EventBroadcaster, sink: MemorySink, clock: ManualClock
) -> None:
    recorder = broadcaster.new_recorder("default-scheduler", "cp")
    for _ in range(5):
        recorder.eventf(POD, None, "Warning", "FailedScheduling", "Scheduling", "0/3 nodes are available")
        await asyncio.wait_for(broadcaster.flush(), 5)
        await clock.advance(10)
    ((name, event),) = sink.events.items()
    assert [call[0] for call in sink.calls] == ["create", "patch"], "repeats after the first are not written"
    assert sink.calls[1] == (
        "patch",
        name,
        {"series": {"count": 2, "lastObservedTime": format_micro_time(T0 + 10)}},
    )
    assert event["series"]["count"] == 2

    # finishSeries runs every 6 minutes; the series (last seen at T0+40) is over at the run after T0+400.
    await clock.advance(FINISH_TIME - 50)
    assert len(sink.calls) == 2, "a series seen less than 6 minutes ago is not finished"
    await clock.advance(FINISH_TIME)
    await until(lambda: len(sink.calls) == 3)
    assert sink.calls[2] == (
        "patch",
        name,
        {"series": {"count": 5, "lastObservedTime": format_micro_time(T0 + 40)}},
    )
    assert sink.events[name]["series"]["count"] == 5
    assert len(broadcaster.cache) == 0, "a finished series is forgotten"

    # The next occurrence is a new Event.
    recorder.eventf(POD, None, "Warning", "FailedScheduling", "Scheduling", "0/3 nodes are available")
    await asyncio.wait_for(broadcaster.flush(), 5)
    assert sink.calls[3][0] == "create" and sink.calls[3][1] != name


async def test_refresh_writes_every_ongoing_series_again_and_caches_the_answer(
    sink: MemorySink, clock: ManualClock
) -> None:
    """``refreshExistingEventSeries`` (every 30 minutes): a long series outlives the Events' expiry."""
    broadcaster = EventBroadcaster(sink, clock=clock)  # not started: the upkeep is called by hand
    cache = broadcaster.cache
    cache.observe(make_event(), T0)
    cache.observe(make_event(reason="Singleton"), T0)
    cache.observe(make_event(), T0 + 5)
    series = {"series": {"count": 2, "lastObservedTime": format_micro_time(T0 + 5)}}

    await broadcaster.refresh_series()
    # The Event is not on the server (expired): the patch finds nothing, so it is created, series and all.
    assert sink.calls == [("patch", "web.1", series), ("create", "web.1", series["series"])]
    cached = cache.get(series_key(make_event()))
    assert cached is not None and cached["metadata"]["resourceVersion"] == "1", "the answer is cached"

    await broadcaster.refresh_series()
    assert sink.calls[2:] == [("patch", "web.1", series)], "singletons are not refreshed"
    assert REFRESH_TIME == 30 * 60


async def test_a_series_whose_event_expired_is_created_again_with_its_series(
    broadcaster: EventBroadcaster, sink: MemorySink
) -> None:
    recorder = broadcaster.new_recorder("default-scheduler", "cp")
    recorder.eventf(POD, None, "Warning", "FailedScheduling", "Scheduling", "no")
    await asyncio.wait_for(broadcaster.flush(), 5)
    sink.events.clear()  # the server expired it (Events live an hour)
    recorder.eventf(POD, None, "Warning", "FailedScheduling", "Scheduling", "no")
    await asyncio.wait_for(broadcaster.flush(), 5)
    assert [c[0] for c in sink.calls] == ["create", "patch", "create"]
    ((_, event),) = sink.events.items()
    assert event["series"]["count"] == 2


async def test_an_unreachable_server_is_retried_with_jitter_and_a_refusal_is_not(
    broadcaster: EventBroadcaster, sink: MemorySink, clock: ManualClock
) -> None:
    recorder = broadcaster.new_recorder("default-scheduler", "cp")
    sink.failures = [TransportError("connection refused"), TransportError("connection refused")]
    recorder.eventf(POD, None, "Normal", "Retried", "Testing", "eventually written")
    flushed = asyncio.create_task(broadcaster.flush())
    await clock.advance(9.9)
    assert len(sink.calls) == 1, "the first retry waits at least 10 s"
    for _ in range(10):
        await clock.advance(2.6)  # each wait is 10 to 12.5 s
        if flushed.done():
            break
    await asyncio.wait_for(flushed, 1)
    assert [c[0] for c in sink.calls] == ["create", "create", "create"]
    assert [e["reason"] for e in sink.events.values()] == ["Retried"]

    sink.failures = [Invalid({"reason": "Invalid", "code": 422})]
    recorder.eventf(POD, None, "Normal", "Refused", "Testing", "the server says no")
    await asyncio.wait_for(broadcaster.flush(), 5)
    assert len(sink.calls) == 4, "a refused event is not retried"
    assert "Refused" not in [e["reason"] for e in sink.events.values()]


async def test_already_exists_is_retried_for_a_series_only(
    broadcaster: EventBroadcaster, sink: MemorySink, clock: ManualClock
) -> None:
    recorder = broadcaster.new_recorder("default-scheduler", "cp")
    sink.failures = [AlreadyExists({"reason": "AlreadyExists", "code": 409})]
    recorder.eventf(POD, None, "Normal", "Once", "Testing", "a duplicate name")
    await asyncio.wait_for(broadcaster.flush(), 5)
    assert [c[0] for c in sink.calls] == ["create"], "AlreadyExists on a new Event is final"

    recorder.eventf(POD, None, "Normal", "Once", "Testing", "again")
    sink.events.clear()
    # The patch finds nothing, the create finds it there: the Event was being created meanwhile.
    sink.failures = [NotFound({"reason": "NotFound", "code": 404}), AlreadyExists({"code": 409})]
    flushed = asyncio.create_task(broadcaster.flush())
    await until(lambda: len(sink.calls) == 3)
    await clock.advance(12.5)
    await asyncio.wait_for(flushed, 1)
    assert [c[0] for c in sink.calls] == ["create", "patch", "create", "patch", "create"]


async def test_a_full_queue_drops_events_instead_of_blocking(sink: MemorySink, clock: ManualClock) -> None:
    broadcaster = EventBroadcaster(sink, clock=clock, max_queued=2)  # not started: nothing drains it
    recorder = broadcaster.new_recorder("default-scheduler", "cp")
    for i in range(4):
        recorder.eventf(POD, None, "Normal", "Many", "Testing", f"event {i}")
    assert broadcaster.dropped == 2


# -- against the API server --------------------------------------------------------------------


async def test_a_series_is_stored_and_read_through_both_apis(cluster: Cluster) -> None:
    clock = ManualClock(T0)
    cm = await cluster.configmaps("default").create(configmap("settings"))
    broadcaster = EventBroadcaster(EventSinkImpl(cluster.client), clock=clock)
    broadcaster.start()
    try:
        recorder = broadcaster.new_recorder("example.com/labeler", "cp")
        for _ in range(3):
            recorder.eventf(cm, None, "Warning", "LabelFailed", "Labeling", "cannot label %s", "settings")
            await asyncio.wait_for(broadcaster.flush(), 5)
            await clock.advance(7)
        await clock.advance(2 * FINISH_TIME)  # the series ends: its final count is written
        await until(lambda: len(broadcaster.cache) == 0)
    finally:
        await broadcaster.shutdown()

    listed = await cluster.client.resource("events.k8s.io", "v1", "events", "default").list()
    (event,) = listed["items"]
    assert event["series"] == {"count": 3, "lastObservedTime": format_micro_time(T0 + 14)}
    assert event["eventTime"] == format_micro_time(T0) and MICRO_TIME.match(event["eventTime"])
    assert event["reportingController"] == "example.com/labeler"
    assert event["reportingInstance"] == "example.com/labeler-cp"
    assert event["action"] == "Labeling" and event["reason"] == "LabelFailed"
    assert event["regarding"]["kind"] == "ConfigMap" and event["regarding"]["uid"] == cm["metadata"]["uid"]
    assert event["note"] == "cannot label settings"
    assert event["metadata"]["name"].startswith("settings.")

    (core,) = (await cluster.client.resource("", "v1", "events", "default").list())["items"]
    assert core["involvedObject"]["name"] == "settings"
    assert core["message"] == "cannot label settings"
    assert core["reportingComponent"] == "example.com/labeler"
    assert core["series"]["count"] == 3
    assert "source" not in core and "count" not in core, "no legacy fields"
