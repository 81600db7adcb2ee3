"""The watch cache's fan-out: shared encoding, turns, batches, and every change exactly once, in order."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

import pytest

from controlplane.api import selectors
from controlplane.apiserver import watchcache
from controlplane.apiserver.handlers.resources import SelectorFilter
from controlplane.apiserver.requestscope import RequestScope
from controlplane.apiserver.watchcache import Cached, CacheEvent, CacheWatcher, WatchCache
from tests.controlplane.apiserver.conftest import API

PODS = "/api/v1/namespaces/default/pods"
#: How long a test waits for something the cache should do at once (a guard, not a pause).
PATIENCE = 5.0
#: The scope of the pods these tests write straight through the registry, as no request.
SETUP = RequestScope.unadmitted(reason="the test's own writes")


def pod(name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }


def pods_cache(api: API) -> WatchCache:
    return api.server.caches["/registry/pods"]


async def collect(watcher: CacheWatcher, count: int) -> list[CacheEvent]:
    """The watcher's next ``count`` events (failing the test if they do not come)."""
    events: list[CacheEvent] = []
    async with asyncio.timeout(PATIENCE):
        while len(events) < count:
            events.extend(await watcher.take())
    return events


def names(events: list[CacheEvent]) -> list[str]:
    return [e.object.obj["metadata"]["name"] for e in events]


async def test_watchers_without_selectors_share_one_event_and_its_encoded_object(api: API) -> None:
    cache = pods_cache(api)
    first = cache.watch("default", None, cache.revision)
    second = cache.watch("default", None, cache.revision)
    created = (await api.client.post(PODS, json=pod("a"))).json()
    (one,) = await collect(first, 1)
    (other,) = await collect(second, 1)
    assert one is other
    assert one.object.raw is other.object.raw  # serialized once, the same bytes for both streams
    assert one.json_line.endswith(b"\n")
    assert json.loads(one.json_line) == {"type": "ADDED", "object": created}


async def test_an_event_wakes_watchers_in_turns_of_the_event_loop(
    api: API, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(watchcache, "FANOUT_BATCH", 2)
    cache = pods_cache(api)
    watchers = [cache.watch("default", None, cache.revision) for _ in range(6)]
    write = asyncio.create_task(api.client.post(PODS, json=pod("a")))
    async with asyncio.timeout(PATIENCE):
        (event,) = await watchers[0].take()
    # The first watcher runs in the turn after the cache offered the event to the first two: the
    # others are offered in later turns, after the loop has served whatever else was waiting.
    assert [bool(w.buffer) for w in watchers[1:]] == [True, False, False, False, False]
    assert (await write).status_code == 201
    for watcher in watchers[1:]:
        assert await collect(watcher, 1) == [event]


async def test_events_waiting_behind_a_fan_out_reach_each_watcher_together_in_order(
    api: API, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(watchcache, "FANOUT_BATCH", 1)
    cache = pods_cache(api)
    watchers = [cache.watch("default", None, cache.revision) for _ in range(3)]
    registry = api.server.registries[("", "v1", "pods")]
    # Three creates in one turn: one group commit, three store events waiting for the cache at once.
    await asyncio.gather(*(registry.create(pod(name), "default", scope=SETUP) for name in "abc"))
    for watcher in watchers:
        async with asyncio.timeout(PATIENCE):
            events = await watcher.take()  # one wake-up for the three
        assert names(events) == ["a", "b", "c"]
        assert [e.revision for e in events] == sorted(e.revision for e in events)
    assert all(not w.buffer and w.closed_reason is None for w in watchers)


async def test_a_watch_started_during_a_fan_out_gets_each_change_once(
    api: API, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(watchcache, "FANOUT_BATCH", 1)
    cache = pods_cache(api)
    before = cache.revision
    watchers = [cache.watch("default", None, before) for _ in range(3)]
    write = asyncio.create_task(api.client.post(PODS, json=pod("a")))
    await collect(watchers[0], 1)
    assert not watchers[2].buffer  # the fan-out of "a" is still under way
    late = cache.watch("default", None, before)  # replays "a" from the event window
    await write
    await api.client.post(PODS, json=pod("b"))
    assert names(await collect(late, 2)) == ["a", "b"]
    assert names(await collect(watchers[2], 2)) == ["a", "b"]
    assert not late.buffer and not watchers[2].buffer


async def test_selectors_turn_changes_into_added_and_deleted_for_their_watcher(api: API) -> None:
    cache = pods_cache(api)
    web = cache.watch("default", lambda obj: obj["metadata"]["labels"].get("app") == "web", cache.revision)
    everything = cache.watch("default", None, cache.revision)
    created = (await api.client.post(PODS, json=pod("a", app="web"))).json()
    await api.client.post(PODS, json=pod("b", app="db"))
    relabelled = (
        await api.client.put(
            f"{PODS}/a", json=dict(created, metadata=dict(created["metadata"], labels={"app": "db"}))
        )
    ).json()
    moved = [(e.type, e.object.obj["metadata"]["name"]) for e in await collect(web, 2)]
    assert moved == [("ADDED", "a"), ("DELETED", "a")]
    (gone,) = [e for e in await collect(everything, 3) if e.type == "MODIFIED"]
    assert gone.object.obj == relabelled


def test_a_watcher_is_not_offered_changes_up_to_the_revision_it_started_from() -> None:
    watcher = CacheWatcher("/registry/pods/default/", None, since=7)
    for revision in (6, 7, 8):
        cached = Cached({"metadata": {"name": f"p{revision}"}}, revision)
        watcher.offer(CacheEvent("ADDED", f"/registry/pods/default/p{revision}", revision, cached, None))
    assert [e.revision for e in watcher.buffer] == [8]


async def test_a_watcher_that_falls_too_far_behind_is_closed_not_silently_shortened() -> None:
    watcher = CacheWatcher("/registry/pods/default/", None, capacity=2)
    for revision in (1, 2, 3):
        cached = Cached({"metadata": {"name": f"p{revision}"}}, revision)
        watcher.offer(CacheEvent("ADDED", f"/registry/pods/default/p{revision}", revision, cached, None))
    assert watcher.closed_reason == "watcher fell too far behind"
    assert await watcher.take() == []


async def test_pod_watchers_pinned_to_a_node_are_offered_only_that_nodes_changes(api: API) -> None:
    """The indexed trigger: a kubelet's ``spec.nodeName=<node>`` watch is not even offered other
    nodes' pods; a pod bound to the node arrives as ADDED, and the unscheduled watch sees it go."""
    cache = pods_cache(api)

    def on(node: str) -> watchcache.Filter:
        return lambda obj: (obj.get("spec") or {}).get("nodeName", "") == node

    node_a = cache.watch("default", on("node-a"), cache.revision, trigger_value="node-a")
    node_b = cache.watch("default", on("node-b"), cache.revision, trigger_value="node-b")
    pending = cache.watch("default", on(""), cache.revision, trigger_value="")
    everyone = cache.watch("default", None, cache.revision)
    offered: list[tuple[str, str]] = []
    for name, watcher in (("node-a", node_a), ("node-b", node_b), ("pending", pending), ("all", everyone)):
        original = watcher.offer

        def spy(event: CacheEvent, name: str = name, original: Any = original) -> None:
            offered.append((name, event.type))
            original(event)

        watcher.offer = spy  # type: ignore[method-assign]

    await api.client.post(PODS, json=pod("web"))
    assert names(await collect(pending, 1)) == ["web"]
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "web"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-a"},
    }
    assert (await api.client.post(f"{PODS}/web/binding", json=binding)).status_code == 201

    (added,) = await collect(node_a, 1)
    assert (added.type, added.object.obj["spec"]["nodeName"]) == ("ADDED", "node-a")
    (gone,) = await collect(pending, 1)
    assert gone.type == "DELETED"  # it stopped matching the unscheduled watch
    assert len(await collect(everyone, 2)) == 2
    assert ("node-b", "ADDED") not in offered and ("node-b", "MODIFIED") not in offered
    assert node_b.buffer == []
    cache.forget(node_b)
    assert "node-b" not in cache._pinned


async def test_a_batch_of_changes_on_many_nodes_offers_each_pinned_watcher_only_its_own(api: API) -> None:
    """A fan-out batch holding pods of two nodes: each kubelet's watch is offered its node's pod
    alone (not every change of the batch, to be filtered out), and the unpinned watch all of them."""
    cache = pods_cache(api)

    def on(node: str) -> watchcache.Filter:
        return lambda obj: (obj.get("spec") or {}).get("nodeName", "") == node

    node_a = cache.watch("default", on("node-a"), cache.revision, trigger_value="node-a")
    node_b = cache.watch("default", on("node-b"), cache.revision, trigger_value="node-b")
    everyone = cache.watch("default", None, cache.revision)
    offered: dict[str, list[str]] = {"node-a": [], "node-b": []}
    for name, watcher in (("node-a", node_a), ("node-b", node_b)):
        original = watcher.offer

        def spy(event: CacheEvent, name: str = name, original: Any = original) -> None:
            offered[name].append(event.object.obj["metadata"]["name"])
            original(event)

        watcher.offer = spy  # type: ignore[method-assign]

    def placed(name: str, node: str) -> dict[str, Any]:
        obj = pod(name)
        obj["spec"]["nodeName"] = node
        return obj

    registry = api.server.registries[("", "v1", "pods")]
    # Created in one turn: one group commit, so the cache fans the four out as one batch.
    await asyncio.gather(
        *(
            registry.create(placed(n, f"node-{n[0]}"), "default", scope=SETUP)
            for n in ("a1", "b1", "a2", "b2")
        )
    )
    assert names(await collect(everyone, 4)) == ["a1", "b1", "a2", "b2"]
    assert names(await collect(node_a, 2)) == ["a1", "a2"]
    assert names(await collect(node_b, 2)) == ["b1", "b2"]
    assert offered == {"node-a": ["a1", "a2"], "node-b": ["b1", "b2"]}


async def test_replaced_versions_keep_only_their_bytes_yet_a_resumed_watch_gets_them(api: API) -> None:
    """Once a change has reached every watcher, the version it replaced keeps only its serialized
    form (the decoded object is several times bigger); a watch resuming from before it still gets
    the whole history, decoded again on demand."""
    cache = pods_cache(api)
    start = cache.revision
    everyone = cache.watch("default", None, start)
    registry = api.server.registries[("", "v1", "pods")]
    await registry.create(pod("web", tier="a"), "default", scope=SETUP)
    first = (await collect(everyone, 1))[0]
    relabelled = dict(first.object.obj, metadata=dict(first.object.obj["metadata"], labels={"tier": "b"}))
    await api.client.put(f"{PODS}/web", json=relabelled)
    second = (await collect(everyone, 1))[0]
    assert second.previous is first.object
    assert first.object.released  # the old version: bytes only
    assert first.object.obj["metadata"]["labels"] == {"tier": "a"}  # decoded again when asked

    tier_b = cache.watch("default", lambda o: o["metadata"]["labels"].get("tier") == "b", start)
    (resumed,) = await collect(tier_b, 1)
    assert (resumed.type, resumed.object.obj["metadata"]["labels"]) == ("ADDED", {"tier": "b"})


def pod_event(name: str, reason: str, message: str) -> dict[str, Any]:
    """A core/v1 Event about the pod ``default/web``."""
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name},
        "involvedObject": {"kind": "Pod", "name": "web", "namespace": "default"},
        "reason": reason,
        "message": message,
    }


async def test_events_are_cached_as_bytes_only_and_still_served_and_filtered(api: API) -> None:
    """Events (kube-apiserver keeps no watch cache for them at all) stay in the cache as bytes:
    once fanned out, the decoded form is dropped; reads and field selectors decode on demand."""
    cache = api.server.caches["/registry/events"]
    assert not cache.keep_decoded and not cache.keep_attributes
    watcher = cache.watch("default", None, cache.revision)
    for name, reason in (("e1", "Pulled"), ("e2", "Started")):
        event = pod_event(name, reason, f"{reason} it")
        assert (await api.client.post("/api/v1/namespaces/default/events", json=event)).status_code == 201
    await collect(watcher, 2)
    assert all(c.released for c in cache.objects.values() if c.obj["metadata"]["name"] in ("e1", "e2"))
    listed = await api.client.get(
        "/api/v1/namespaces/default/events", params={"fieldSelector": "reason=Started"}
    )
    assert [e["metadata"]["name"] for e in listed.json()["items"]] == ["e2"]
    one = await api.client.get("/api/v1/namespaces/default/events/e1")
    assert one.json()["message"] == "Pulled it"


async def test_the_window_keeps_an_events_object_once_and_a_resumed_watch_gets_its_line(api: API) -> None:
    cache = pods_cache(api)
    start = cache.revision
    everyone = cache.watch("default", None, start)
    registry = api.server.registries[("", "v1", "pods")]
    for name in "ab":
        await registry.create(pod(name), "default", scope=SETUP)
        await collect(everyone, 1)
    event = cache.events[-1]
    prefix, raw, end = event.line_parts()
    assert raw is event.object.raw, "the line is not built around the object's one encoding"
    assert (prefix, end) == (b'{"type":"ADDED","object":', b"}\n")
    assert not hasattr(event, "__dict__") and "_line" not in CacheEvent.__slots__, "a line is kept"
    (first, second) = await collect(cache.watch("default", None, start), 2)
    assert json.loads(first.json_line)["object"]["metadata"]["name"] == "a"
    assert json.loads(second.json_line) == {"type": "ADDED", "object": second.object.obj}


class CountingFilter:
    """A request's selectors that count how often they were asked about a whole object."""

    def __init__(self, inner: SelectorFilter) -> None:
        self.inner = inner
        self.objects = 0

    def __call__(self, obj: dict[str, Any]) -> bool:
        self.objects += 1
        return self.inner(obj)

    def attributes(self, labels: Mapping[str, str], fields: Mapping[str, str]) -> bool:
        return self.inner.attributes(labels, fields)


async def test_pods_are_kept_as_bytes_with_the_labels_and_fields_selectors_read(api: API) -> None:
    """Like upstream's storeElement, a cached pod is its bytes plus its labels and selectable fields:
    the decoded pod (several times bigger) goes once fanned out, and selectors never need it again."""
    cache = pods_cache(api)
    assert cache.keep_attributes and not cache.keep_decoded
    start = cache.revision
    on_b = CountingFilter(
        SelectorFilter(
            "/pods",
            selectors.parse_label_selector("tier=b"),
            selectors.parse_field_selector("status.phase!=Failed"),
            lambda obj: selectors.field_set("/pods", obj),
        )
    )
    tier_b = cache.watch("default", on_b, start)
    everyone = cache.watch("default", None, start)
    registry = api.server.registries[("", "v1", "pods")]
    await registry.create(pod("web", tier="a"), "default", scope=SETUP)
    (created,) = await collect(everyone, 1)
    current = cache.get(created.key)
    assert current is not None and current.released, "the current pod stayed decoded"
    assert current.labels == {"tier": "a"}
    assert current.fields is not None and current.fields["metadata.name"] == "web"

    relabelled = dict(created.object.obj, metadata=dict(created.object.obj["metadata"], labels={"tier": "b"}))
    await api.client.put(f"{PODS}/web", json=relabelled)
    (now_b,) = await collect(tier_b, 1)
    assert now_b.type == "ADDED", "a pod that came to match was not ADDED for the selecting watcher"
    assert [c.labels for c in cache.list("default", on_b)] == [{"tier": "b"}]
    assert on_b.objects == 0, "selectors were matched against decoded pods, not their kept fields"


async def test_an_event_nobody_reads_is_never_decoded(api: API) -> None:
    """An Event is held as the store's bytes (``Cached.stored``): no decode and no encode until a
    reader or a watcher needs it, and then it reads as the registry's own decode would."""
    cache = api.server.caches["/registry/events"]
    assert cache.lazy
    created = await api.client.post(
        "/api/v1/namespaces/default/events", json=pod_event("quiet", "Pulled", "already present")
    )
    assert created.status_code == 201
    await cache.wait_for(int(created.json()["metadata"]["resourceVersion"]), 5.0)
    held = cache.objects["/registry/events/default/quiet"]
    assert held._stored is not None and held._raw is None, "the Event was decoded or encoded unasked"
    assert held.obj == created.json(), "the Event read from its stored bytes differs from the created one"
    line = cache.events[-1].json_line
    assert json.loads(line) == {"type": "ADDED", "object": created.json()}
    assert held._stored is None, "the stored bytes were kept beside the encoded object"


async def test_events_k8s_io_shares_the_stored_bytes_and_converts_when_read(api: API) -> None:
    """The events.k8s.io/v1 view of Events is lazy too: the same stored bytes as the core cache, no
    decode or conversion until read, then exactly what the events.k8s.io API answers."""
    v1 = "/apis/events.k8s.io/v1/namespaces/default/events"
    assert (await api.client.get(v1)).status_code == 200  # the view's cache starts on first use
    cache = api.server.caches["/registry/events as events.k8s.io/v1"]
    core = api.server.caches["/registry/events"]
    assert cache.lazy
    created = await api.client.post(
        "/api/v1/namespaces/default/events", json=pod_event("seen", "Pulled", "already present")
    )
    revision = int(created.json()["metadata"]["resourceVersion"])
    await cache.wait_for(revision, 5.0)
    await core.wait_for(revision, 5.0)
    held = cache.objects["/registry/events/default/seen"]
    assert held._stored is not None and held._obj is None and held._raw is None, "converted unasked"
    assert held._stored is core.objects["/registry/events/default/seen"]._stored, "bytes held twice"
    served = (await api.client.get(f"{v1}/seen")).json()
    assert held.obj == served and served["apiVersion"] == "events.k8s.io/v1"
    assert served["regarding"]["name"] == "web" and served["note"] == "already present"


async def test_an_encrypted_resource_is_decoded_as_it_comes(api: API) -> None:
    """Only plain JSON is held undecoded: a value to decrypt is opened at once (``unreadable``)."""
    cache = api.server.caches["/registry/events"]
    cache.transformer = object()  # type: ignore[assignment]  # any transformer at all
    try:
        assert not cache.lazy
    finally:
        cache.transformer = None


def _window_cache(api: API, *, window: int = 0) -> WatchCache:
    """A cache of pods that is never started: only its event window is exercised."""
    served = pods_cache(api)
    return WatchCache(served.store, served.rtype, window=window)


def _change(revision: int, recorded: float) -> CacheEvent:
    obj = Cached(pod(f"p{revision}"), revision)
    return CacheEvent("ADDED", f"/registry/pods/default/p{revision}", revision, obj, None, recorded=recorded)


async def test_the_event_window_grows_while_its_events_are_fresh_and_shrinks_once_they_are_stale(
    api: API,
) -> None:
    cache = _window_cache(api)
    assert cache.capacity == watchcache.LOWER_BOUND_CAPACITY == 100
    for revision in range(1, 101):
        cache._record(_change(revision, recorded=revision * 0.01))
    # Full, and its oldest event is a second old: upstream doubles rather than drop fresh history.
    cache._record(_change(101, recorded=1.5))
    assert (cache.capacity, len(cache.events), cache.oldest) == (200, 101, 0)
    # Two minutes later even the newest quarter is older than 75 s: fill up, then the window halves.
    for revision in range(102, 201):
        cache._record(_change(revision, recorded=2.0))
    cache._record(_change(201, recorded=2.0 + watchcache.EVENT_FRESH_SECONDS + 1))
    assert cache.capacity == 100
    assert [e.revision for e in cache.events] == list(range(102, 202))
    assert cache.oldest == 101  # a watch from 101 on still gets every later event


async def test_a_fixed_window_keeps_its_size_however_fresh_its_events(api: API) -> None:
    cache = _window_cache(api, window=3)
    for revision in range(1, 6):
        cache._record(_change(revision, recorded=0.0))
    assert cache.capacity == 3
    assert [e.revision for e in cache.events] == [3, 4, 5]
    assert cache.oldest == 2
