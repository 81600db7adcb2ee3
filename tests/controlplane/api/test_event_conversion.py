"""One Event, two versions: core/v1 and events.k8s.io/v1 (``controlplane.api.conversion.events``).

The pure conversion first (upstream's ``pkg/apis/events/v1/conversion_test.go`` cases and more), then
the same objects through the registry, the watch cache and the API server.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from controlplane.api.conversion.events import core_to_events_v1, events_v1_to_core
from controlplane.api.kinds import builtin_types
from controlplane.api.meta import Object
from controlplane.apiserver.registry import Registry
from controlplane.apiserver.requestscope import RequestScope
from controlplane.apiserver.watchcache import WatchCache
from controlplane.clock import SYSTEM_CLOCK
from controlplane.store.sqlite import SqliteStore
from tests.support.apiserver import admin_api

TYPES = builtin_types()
CORE = TYPES.lookup("", "v1", "events")
EVENTS_V1 = TYPES.lookup("events.k8s.io", "v1", "events")
CORE_EVENTS = "/api/v1/namespaces/default/events"
V1_EVENTS = "/apis/events.k8s.io/v1/namespaces/default/events"
#: The registry writes these tests make directly, as no request (nothing to admit them as).
DIRECT = RequestScope.unadmitted(reason="the test writes through the registry itself")
REGARDING = {"kind": "Pod", "namespace": "default", "name": "web", "uid": "u-1", "apiVersion": "v1"}
RELATED = {"kind": "Node", "name": "node-1", "apiVersion": "v1"}
SERIES = {"count": 2, "lastObservedTime": "2026-01-01T00:00:05.000000Z"}


def core_event(name: str = "web.1", **fields: Any) -> Object:
    """A core/v1 Event as the old recorder writes it."""
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": "default"},
        "involvedObject": REGARDING,
        "reason": "Scheduled",
        "message": "Successfully assigned default/web to node-1",
        "source": {"component": "default-scheduler", "host": "cp"},
        "firstTimestamp": "2026-01-01T00:00:00Z",
        "lastTimestamp": "2026-01-01T00:00:03Z",
        "count": 3,
        "type": "Normal",
        **fields,
    }


def v1_event(name: str = "web.2", **fields: Any) -> Object:
    """An events.k8s.io/v1 Event as the new recorder writes it."""
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": "default"},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "series": SERIES,
        "reportingController": "example.com/controller",
        "reportingInstance": "controller-1",
        "action": "Binding",
        "reason": "Scheduled",
        "regarding": REGARDING,
        "related": RELATED,
        "note": "Successfully assigned default/web to node-1",
        "type": "Normal",
        **fields,
    }


# -- the pure conversion ------------------------------------------------------------------------------


def test_core_to_events_v1_renames_as_upstream() -> None:
    converted = core_to_events_v1(core_event(reportingComponent="kubelet", reportingInstance="node-1"))
    assert converted == {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "web.1", "namespace": "default"},
        "eventTime": None,  # `json:"eventTime"` has no omitempty: a zero time is null
        "reportingController": "kubelet",
        "reportingInstance": "node-1",
        "reason": "Scheduled",
        "regarding": REGARDING,
        "note": "Successfully assigned default/web to node-1",
        "type": "Normal",
        "deprecatedSource": {"component": "default-scheduler", "host": "cp"},
        "deprecatedFirstTimestamp": "2026-01-01T00:00:00Z",
        "deprecatedLastTimestamp": "2026-01-01T00:00:03Z",
        "deprecatedCount": 3,
    }
    assert list(converted)[3:6] == ["eventTime", "reportingController", "reportingInstance"]  # Go's order


def test_events_v1_to_core_renames_as_upstream() -> None:
    converted = events_v1_to_core(
        v1_event(deprecatedSource={"component": "c", "host": "h"}, deprecatedCount=4)
    )
    assert converted == {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "web.2", "namespace": "default"},
        "involvedObject": REGARDING,
        "reason": "Scheduled",
        "message": "Successfully assigned default/web to node-1",
        "source": {"component": "c", "host": "h"},
        "count": 4,
        "type": "Normal",
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "series": SERIES,
        "action": "Binding",
        "related": RELATED,
        "reportingComponent": "example.com/controller",  # the internal ReportingController's core JSON name
        "reportingInstance": "controller-1",
    }


@pytest.mark.parametrize("event", [core_event(), core_event(eventTime="2026-01-01T00:00:00.000000Z")])
def test_core_round_trips_through_events_v1(event: Object) -> None:
    assert events_v1_to_core(core_to_events_v1(event)) == event


def test_events_v1_round_trips_through_core() -> None:
    event = v1_event(deprecatedFirstTimestamp="2026-01-01T00:00:00Z")
    assert core_to_events_v1(events_v1_to_core(event)) == event


def test_a_field_spelled_the_other_versions_way_is_dropped_as_go_would() -> None:
    odd = core_to_events_v1(core_event(regarding={"name": "sneaky"}, note="sneaky"))
    assert odd["regarding"] == REGARDING and odd["note"].startswith("Successfully")
    odd_core = events_v1_to_core(v1_event(involvedObject={"name": "sneaky"}, message="sneaky"))
    assert odd_core["involvedObject"] == REGARDING and odd_core["message"].startswith("Successfully")


def test_conversion_leaves_its_input_alone() -> None:
    event = core_event()
    before = json.dumps(event, sort_keys=True)
    core_to_events_v1(event)
    events_v1_to_core(v1_event())
    assert json.dumps(event, sort_keys=True) == before


def test_only_the_events_v1_type_converts() -> None:
    assert CORE is not None and EVENTS_V1 is not None
    assert CORE.conversion is None and EVENTS_V1.conversion is not None
    assert CORE.storage_prefix == EVENTS_V1.storage_prefix == "/registry/events"
    assert CORE.cache_key != EVENTS_V1.cache_key  # each version needs a cache of its own
    # The other converting type: autoscaling/v1 HorizontalPodAutoscalers, stored as v2.
    converting = {(t.group_version, t.plural) for t in TYPES if t.conversion is not None}
    assert converting == {("events.k8s.io/v1", "events"), ("autoscaling/v1", "horizontalpodautoscalers")}


# -- registry and watch cache ---------------------------------------------------------------------------


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    store = SqliteStore("test", path=tmp_path / "store.sqlite3")
    await store.start()
    try:
        yield store
    finally:
        await store.close()


async def test_the_registry_stores_core_and_serves_each_version(store: SqliteStore) -> None:
    assert CORE is not None and EVENTS_V1 is not None
    core, v1 = Registry(store, CORE, SYSTEM_CLOCK), Registry(store, EVENTS_V1, SYSTEM_CLOCK)
    created = await v1.create(v1_event(), "default", scope=DIRECT)
    assert created["apiVersion"] == "events.k8s.io/v1" and created["note"].startswith("Successfully")
    raw = await store.get("/registry/events/default/web.2")
    assert raw is not None
    stored = json.loads(raw.value)
    assert stored["apiVersion"] == "v1" and stored["involvedObject"] == REGARDING
    assert stored["reportingComponent"] == "example.com/controller"
    assert not {"regarding", "note", "reportingController"} & set(stored)
    as_core, _ = await core.read("default", "web.2")
    assert as_core["message"] == created["note"] and as_core["metadata"]["uid"] == created["metadata"]["uid"]

    await core.create(core_event(), "default", scope=DIRECT)
    as_v1, _ = await v1.read("default", "web.1")
    assert as_v1["regarding"] == REGARDING and as_v1["deprecatedCount"] == 3 and as_v1["eventTime"] is None


async def test_an_update_through_events_v1_validates_that_versions_rules_and_stores_core(
    store: SqliteStore,
) -> None:
    assert EVENTS_V1 is not None
    v1 = Registry(store, EVENTS_V1, SYSTEM_CLOCK)
    await v1.create(v1_event(), "default", scope=DIRECT)

    def next_in_series(event: Object) -> Object:
        event["series"] = {"count": 3, "lastObservedTime": "2026-01-01T00:00:09.000000Z"}
        return event

    written = await v1.update("default", "web.2", next_in_series, scope=DIRECT)
    assert written.obj["series"]["count"] == 3
    raw = await store.get("/registry/events/default/web.2")
    assert raw is not None and json.loads(raw.value)["series"]["count"] == 3

    def change_note(event: Object) -> Object:
        event["note"] = "changed"
        return event

    with pytest.raises(Exception) as caught:
        await v1.update("default", "web.2", change_note, scope=DIRECT)
    assert "message: Invalid value" in str(caught.value)  # upstream validates the internal (core) names


async def test_the_watch_cache_of_events_v1_holds_events_v1(store: SqliteStore) -> None:
    assert CORE is not None and EVENTS_V1 is not None
    core = Registry(store, CORE, SYSTEM_CLOCK)
    await core.create(core_event("before"), "default", scope=DIRECT)
    cache = WatchCache(store, EVENTS_V1)
    await cache.start()
    try:
        (listed,) = cache.list("default", None)
        assert listed.obj["apiVersion"] == "events.k8s.io/v1" and listed.obj["regarding"] == REGARDING
        watcher = cache.watch("default", None, cache.revision)
        created = await core.create(core_event("after"), "default", scope=DIRECT)
        assert await cache.wait_for(int(created["metadata"]["resourceVersion"]), 5)
        (event,) = await watcher.take()
        line = json.loads(event.json_line)
        assert line["type"] == "ADDED"
        assert line["object"]["apiVersion"] == "events.k8s.io/v1"
        assert line["object"]["note"] == created["message"] and "message" not in line["object"]
    finally:
        await cache.stop()


# -- through the API server -----------------------------------------------------------------------------


#: These read events.k8s.io/v1 through the API server's watch cache (and paged lists through the
#: store), which convert only once the server gives that type a cache of its own (``cache_key``) and
#: the list handler decodes with ``ctx.registry.decode``. Until then they fail, and are expected to.


@pytest.fixture
async def api(store: SqliteStore) -> AsyncIterator[httpx.AsyncClient]:
    async with admin_api(store) as (_, client):
        yield client


async def test_created_through_events_v1_read_through_core(api: httpx.AsyncClient) -> None:
    created = await api.post(V1_EVENTS, json=v1_event())
    assert created.status_code == 201, created.text
    assert created.json()["regarding"] == REGARDING
    read = (await api.get(f"{CORE_EVENTS}/web.2")).json()
    assert read["apiVersion"] == "v1"
    assert read["involvedObject"] == REGARDING and read["message"] == v1_event()["note"]
    assert read["reportingComponent"] == "example.com/controller" and read["series"] == SERIES
    listed = (await api.get(CORE_EVENTS)).json()["items"]
    assert [e["message"] for e in listed] == [v1_event()["note"]]


async def test_events_v1_validation_uses_its_strategy(api: httpx.AsyncClient) -> None:
    response = await api.post(V1_EVENTS, json=v1_event(eventTime=None))
    assert response.status_code == 422
    assert "eventTime: Required value" in response.json()["message"]
    assert (await api.get(CORE_EVENTS)).json()["items"] == []  # nothing written


async def test_created_through_core_read_listed_and_watched_through_events_v1(api: httpx.AsyncClient) -> None:
    created = (await api.post(CORE_EVENTS, json=core_event())).json()
    read = (await api.get(f"{V1_EVENTS}/web.1")).json()
    assert read["apiVersion"] == "events.k8s.io/v1"
    assert read["regarding"] == REGARDING and read["note"] == created["message"]
    assert read["deprecatedSource"] == created["source"] and read["deprecatedCount"] == 3
    assert "involvedObject" not in read
    listed = (await api.get(V1_EVENTS)).json()
    assert listed["kind"] == "EventList" and listed["apiVersion"] == "events.k8s.io/v1"
    assert [e["note"] for e in listed["items"]] == [created["message"]]
    paged = (await api.get(V1_EVENTS, params={"limit": "1"})).json()  # served from the store
    assert [e["note"] for e in paged["items"]] == [created["message"]]
    params = {"watch": "true", "resourceVersion": "0", "timeoutSeconds": "1"}
    lines = [json.loads(line) for line in (await api.get(V1_EVENTS, params=params)).text.splitlines()]
    assert [(e["type"], e["object"]["note"]) for e in lines] == [("ADDED", created["message"])]


async def test_a_patch_through_events_v1_is_stored_in_core_form(api: httpx.AsyncClient) -> None:
    await api.post(V1_EVENTS, json=v1_event())
    rv = (await api.get(CORE_EVENTS)).json()["metadata"]["resourceVersion"]
    patched = await api.patch(
        f"{V1_EVENTS}/web.2",
        json={"series": {"count": 5, "lastObservedTime": "2026-01-01T00:01:00.000000Z"}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert patched.status_code == 200, patched.text
    assert patched.json()["series"]["count"] == 5 and patched.json()["note"] == v1_event()["note"]
    core_read = (await api.get(f"{CORE_EVENTS}/web.2")).json()
    assert core_read["series"]["count"] == 5 and "regarding" not in core_read
    params = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": "1"}
    core_lines = [json.loads(line) for line in (await api.get(CORE_EVENTS, params=params)).text.splitlines()]
    v1_lines = [json.loads(line) for line in (await api.get(V1_EVENTS, params=params)).text.splitlines()]
    assert [e["object"]["series"]["count"] for e in core_lines] == [5]
    assert "message" in core_lines[0]["object"] and "note" in v1_lines[0]["object"]
    assert [e["object"]["series"]["count"] for e in v1_lines] == [5]
