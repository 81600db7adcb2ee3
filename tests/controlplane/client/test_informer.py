"""Informers: a cache kept by list and watch, handlers told of every change, and the Zulip test.

The last test is Zulip's ``verify_action`` pattern applied to informers: replay the events an
informer delivered onto a stale copy of the state, and the result must equal a fresh list at the same
resourceVersion, however the changes were interleaved with lost watches and relists.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from controlplane.api import serializer
from controlplane.api.meta import Object
from controlplane.client import informer as informer_module
from controlplane.client.cache import (
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    field_index_func,
    meta_namespace_key_func,
)
from controlplane.client.delta_fifo import Delta, DeltaType
from controlplane.client.informer import (
    ResourceEventHandlerFuncs,
    SharedIndexInformer,
    SharedInformerFactory,
    strip_managed_fields,
    wait_for_cache_sync,
)
from controlplane.client.reflector import ListWatch
from controlplane.client.rest import ResourceClient
from controlplane.client.sharing import FrozenDict, SharedObjectChanged, SharedVersions, intern_strings
from controlplane.client.watch import decode_event, split_event
from controlplane.clock import ManualClock
from tests.controlplane.client.conftest import Cluster, MakeCluster, configmap
from tests.controlplane.client.helpers import GatedListWatch, NoBackoff, ScriptedListWatch, cm, cm_list

Seen = tuple[str, str, str]  # (handler, name, resourceVersion or "unknown")


def name_of(obj: Object | DeletedFinalStateUnknown) -> str:
    if isinstance(obj, DeletedFinalStateUnknown):
        return obj.key.partition("/")[2]
    return str(obj["metadata"]["name"])


def rv_of(obj: Object | DeletedFinalStateUnknown) -> str:
    if isinstance(obj, DeletedFinalStateUnknown):
        return "unknown"
    return str(obj["metadata"]["resourceVersion"])


class Recorder:
    """A handler that queues what it is told, to be awaited by the test."""

    def __init__(self) -> None:
        self.seen: asyncio.Queue[Seen] = asyncio.Queue()
        self.deleted: list[Object | DeletedFinalStateUnknown] = []
        self.updates: list[tuple[Object, Object]] = []

    def on_add(self, obj: Object) -> None:
        self.seen.put_nowait(("add", name_of(obj), rv_of(obj)))

    def on_update(self, old: Object, new: Object) -> None:
        self.updates.append((old, new))
        self.seen.put_nowait(("update", name_of(new), rv_of(new)))

    def on_delete(self, obj: Object | DeletedFinalStateUnknown) -> None:
        self.deleted.append(obj)
        self.seen.put_nowait(("delete", name_of(obj), rv_of(obj)))

    async def next(self, count: int = 1) -> list[Seen]:
        async with asyncio.timeout(10):
            return [await self.seen.get() for _ in range(count)]


def informer_for(resource: ResourceClient, **options: Any) -> tuple[SharedIndexInformer, GatedListWatch]:
    lw = GatedListWatch(ListWatch(resource))
    options.setdefault("reflector_options", {"backoff": NoBackoff()})
    return SharedIndexInformer(lw, rng=random.Random(0), name="configmaps", **options), lw


async def test_handlers_hear_of_every_add_update_and_delete(cluster: Cluster) -> None:
    cms = cluster.configmaps()
    before = await cms.create(configmap("before"))
    informer, _ = informer_for(cms)
    recorder = Recorder()
    informer.add_event_handler(recorder)
    async with informer:
        await informer.wait_for_sync()
        assert informer.has_synced()
        assert await recorder.next() == [("add", "before", before["metadata"]["resourceVersion"])]

        created = await cms.create(configmap("new", {"v": "1"}))
        assert await recorder.next() == [("add", "new", created["metadata"]["resourceVersion"])]
        assert informer.indexer.get_by_key("default/new") == created

        updated = await cms.update(dict(created, data={"v": "2"}))
        assert await recorder.next() == [("update", "new", updated["metadata"]["resourceVersion"])]
        old, new = recorder.updates[-1]
        assert (old["data"], new["data"]) == ({"v": "1"}, {"v": "2"})

        await cms.delete("new")
        [(kind, name, _)] = await recorder.next()
        assert (kind, name) == ("delete", "new")
        assert recorder.deleted[-1]["data"] == {"v": "2"}  # type: ignore[index]
        assert informer.indexer.get_by_key("default/new") is None
        assert informer.last_sync_resource_version


async def test_a_deletion_missed_while_disconnected_arrives_as_deleted_final_state_unknown(
    make_cluster: MakeCluster,
) -> None:
    cluster = await make_cluster(watch_cache_window=3)
    cms = cluster.configmaps()
    await cms.create(configmap("kept"))
    doomed = await cms.create(configmap("doomed", {"last": "state"}))
    informer, lw = informer_for(cms)
    recorder = Recorder()
    informer.add_event_handler(recorder)
    lw.gate.clear()  # the first watch waits: everything below happens while we are not watching
    async with informer:
        await informer.wait_for_sync()
        assert sorted(s[1] for s in await recorder.next(2)) == ["doomed", "kept"]

        await cms.delete("doomed")
        for i in range(4):
            await cms.create(configmap(f"new-{i}"))
        lw.gate.set()  # the watch resumes from a resourceVersion the server no longer has: 410, relist

        seen = await recorder.next(5)
        assert sorted(s[:2] for s in seen) == [
            ("add", "new-0"),
            ("add", "new-1"),
            ("add", "new-2"),
            ("add", "new-3"),
            ("delete", "doomed"),
        ]
        [final] = recorder.deleted
        assert final == DeletedFinalStateUnknown("default/doomed", doomed)
        assert informer.reflector is not None and informer.reflector.list_count == 2
        assert recorder.seen.empty()  # "kept" did not change: the relist does not report it


async def test_resync_redelivers_the_cache_to_the_handlers_that_asked() -> None:
    clock = ManualClock(start=0.0)
    lw = ScriptedListWatch(cm_list("10", cm("a", "3"), cm("b", "4")))
    informer = SharedIndexInformer(lw, clock=clock, reflector_options={"backoff": NoBackoff()})
    resyncing, quiet = Recorder(), Recorder()
    informer.add_event_handler(resyncing, resync_period=30.0)
    informer.add_event_handler(quiet, resync_period=0)
    async with informer:
        await informer.wait_for_sync()
        await lw.watchers.get()
        assert len(await resyncing.next(2)) == 2
        assert len(await quiet.next(2)) == 2
        await clock.advance(30)
        assert sorted(await resyncing.next(2)) == [("update", "a", "3"), ("update", "b", "4")]
        old, new = resyncing.updates[-1]
        assert old == new
        assert quiet.seen.empty()


async def test_a_handler_added_later_hears_about_the_cached_objects_first() -> None:
    lw = ScriptedListWatch(cm_list("10", cm("a", "3")))
    informer = SharedIndexInformer(lw, clock=ManualClock(), reflector_options={"backoff": NoBackoff()})
    async with informer:
        await informer.wait_for_sync()
        late = Recorder()
        registration = informer.add_event_handler(late)
        assert await late.next() == [("add", "a", "3")]
        assert registration.has_synced()
        watcher = await lw.watchers.get()
        watcher.add(cm("b", "11"))
        assert await late.next() == [("add", "b", "11")]
        await informer.remove_event_handler(registration)


async def test_a_handler_registration_can_be_awaited_until_it_has_seen_the_first_list() -> None:
    lw = ScriptedListWatch(cm_list("10", cm("a", "3"), cm("b", "4")))
    informer = SharedIndexInformer(lw, clock=ManualClock(), reflector_options={"backoff": NoBackoff()})
    gate = asyncio.Event()
    seen: list[str] = []

    async def slow(obj: Object) -> None:
        await gate.wait()
        seen.append(obj["metadata"]["name"])

    early = informer.add_event_handler(ResourceEventHandlerFuncs(add_func=slow))
    async with informer:
        await informer.wait_for_sync()
        waiting = asyncio.create_task(early.wait_for_sync())
        await asyncio.sleep(0)
        assert not waiting.done() and not early.has_synced(), "the informer synced, its handler not yet"
        gate.set()
        await asyncio.wait_for(waiting, 10)
        assert early.has_synced() and seen == ["a", "b"]
        late = informer.add_event_handler(ResourceEventHandlerFuncs(add_func=slow))
        await asyncio.wait_for(late.wait_for_sync(), 10)
        assert seen == ["a", "b", "a", "b"]


async def test_a_failing_handler_does_not_stop_the_others(caplog: pytest.LogCaptureFixture) -> None:
    lw = ScriptedListWatch(cm_list("10", cm("a", "3")))
    informer = SharedIndexInformer(lw, clock=ManualClock(), reflector_options={"backoff": NoBackoff()})

    def explode(obj: Object) -> None:
        raise RuntimeError("handler bug")

    informer.add_event_handler(ResourceEventHandlerFuncs(add_func=explode))
    recorder = Recorder()
    informer.add_event_handler(recorder)
    async with informer:
        await wait_for_cache_sync(informer)
        assert await recorder.next() == [("add", "a", "3")]
        (await lw.watchers.get()).add(cm("b", "11"))
        assert await recorder.next() == [("add", "b", "11")]
    assert "handler bug" in caplog.text


async def test_async_handlers_are_awaited() -> None:
    lw = ScriptedListWatch(cm_list("10", cm("a", "3")))
    informer = SharedIndexInformer(lw, clock=ManualClock(), reflector_options={"backoff": NoBackoff()})
    done: asyncio.Queue[str] = asyncio.Queue()

    async def on_add(obj: Object) -> None:
        await asyncio.sleep(0)
        done.put_nowait(name_of(obj))

    informer.add_event_handler(ResourceEventHandlerFuncs(add_func=on_add))
    async with informer, asyncio.timeout(5):
        assert await done.get() == "a"


async def test_the_factory_shares_one_informer_per_resource(cluster: Cluster) -> None:
    pods = cluster.client.resource("", "v1", "pods", "default")
    for name, node in (("p1", "n1"), ("p2", "n1"), ("p3", "")):
        pod = {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
        if node:
            pod["spec"]["nodeName"] = node  # type: ignore[index]
        await pods.create(pod)
    factory = SharedInformerFactory(cluster.client, rng=random.Random(5))
    informer = factory.informer_for(
        "", "v1", "pods", indexers={"nodeName": field_index_func("spec.nodeName")}
    )
    assert factory.informer_for("", "v1", "pods") is informer
    namespaces = factory.informer_for("", "v1", "namespaces")
    factory.start()
    try:
        async with asyncio.timeout(10):
            synced = await factory.wait_for_cache_sync()
        assert synced == {("", "v1", "pods"): True, ("", "v1", "namespaces"): True}
        assert [meta_namespace_key_func(p) for p in informer.indexer.by_index("nodeName", "n1")] == [
            "default/p1",
            "default/p2",
        ]
        assert len(informer.indexer.by_index(NAMESPACE_INDEX, "default")) == 3
        assert "kube-system" in namespaces.indexer.list_keys()
    finally:
        await factory.shutdown()


# -- Zulip's verify_action, for informers --------------------------------------------------------------------


class Replayer:
    """Applies what the informer tells its handlers onto a copy of the state it started from."""

    def __init__(self) -> None:
        self.state: dict[str, Object] = {}
        self.latest = 0
        self.unknown_deletions = 0
        self.changed = asyncio.Event()

    def _saw(self, rv: str) -> None:
        self.latest = max(self.latest, int(rv))
        self.changed.set()

    def on_add(self, obj: Object) -> None:
        self.state[meta_namespace_key_func(obj)] = obj
        self._saw(obj["metadata"]["resourceVersion"])

    def on_update(self, old: Object, new: Object) -> None:
        assert meta_namespace_key_func(old) in self.state
        self.state[meta_namespace_key_func(new)] = new
        self._saw(new["metadata"]["resourceVersion"])

    def on_delete(self, obj: Object | DeletedFinalStateUnknown) -> None:
        key = meta_namespace_key_func(obj)
        assert key in self.state
        del self.state[key]
        if isinstance(obj, DeletedFinalStateUnknown):
            self.unknown_deletions += 1
            assert obj.obj is not None
        else:
            self._saw(obj["metadata"]["resourceVersion"])

    async def reach(self, rv: int) -> None:
        async with asyncio.timeout(10):
            while self.latest < rv:
                self.changed.clear()
                await self.changed.wait()


async def random_changes(cms: ResourceClient, rng: random.Random, names: set[str], count: int) -> None:
    """``count`` random creates, updates and deletes of ConfigMaps."""
    for _ in range(count):
        action = rng.choice(["create", "update", "delete"]) if names else "create"
        if action == "create":
            name = f"cm-{rng.randrange(1_000_000)}"
            if name in names:
                continue
            await cms.create(configmap(name, {"v": str(rng.random())}))
            names.add(name)
        elif action == "update":
            name = rng.choice(sorted(names))
            current = await cms.get(name)
            await cms.update(dict(current, data={"v": str(rng.random())}))
        else:
            name = rng.choice(sorted(names))
            await cms.delete(name)
            names.discard(name)


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_replaying_watch_events_onto_a_stale_cache_equals_a_fresh_list(
    make_cluster: MakeCluster, seed: int
) -> None:
    rng = random.Random(seed)
    cluster = await make_cluster(watch_cache_window=5)
    cms = cluster.configmaps()
    names: set[str] = set()
    await random_changes(cms, rng, names, 6)  # the state before the informer starts

    informer, lw = informer_for(cms)
    replayer = Replayer()
    informer.add_event_handler(replayer)
    async with informer:
        await informer.wait_for_sync()

        # 1. Changes while the informer watches.
        await random_changes(cms, rng, names, 15)

        # Everything so far has reached the informer: the object deleted below is in its cache.
        seen = await cms.create(configmap("step-1-done"))
        await replayer.reach(int(seen["metadata"]["resourceVersion"]))

        # 2. The watch is lost; more changes than the server keeps in its window, including a deletion.
        lw.gate.clear()
        lw.watch_requested.clear()
        lw.cut.set()
        await lw.watch_requested.wait()  # the watch has ended: the reflector's next one waits at the gate
        await cms.delete(sorted(names)[0])
        names.remove(sorted(names)[0])
        await random_changes(cms, rng, names, 12)
        lw.cut.clear()
        lw.gate.set()  # 410 Expired, then a relist

        # 3. And changes again, live.
        await random_changes(cms, rng, names, 10)
        last = await cms.create(configmap("the-last-one"))
        await replayer.reach(int(last["metadata"]["resourceVersion"]))

        fresh = await cms.list()
        assert fresh["metadata"]["resourceVersion"] == last["metadata"]["resourceVersion"]
        expected = {meta_namespace_key_func(item): item for item in fresh["items"]}
        assert {meta_namespace_key_func(o): o for o in informer.indexer.list()} == expected
        assert replayer.state == expected
        assert informer.reflector is not None and informer.reflector.list_count >= 2
        assert replayer.unknown_deletions >= 1


async def test_a_factorys_transform_strips_managed_fields_before_anything_is_cached(cluster: Cluster) -> None:
    """kube-controller-manager's informers (WithTransform): the cache and the handlers never see
    managedFields, though the server keeps them."""
    configmaps = cluster.client.resource("", "v1", "configmaps", "default")
    await configmaps.create(configmap("settings"))
    assert (await configmaps.get("settings"))["metadata"]["managedFields"]
    factory = SharedInformerFactory(cluster.client, rng=random.Random(5), transform=strip_managed_fields)
    informer = factory.informer_for("", "v1", "configmaps")
    heard: list[dict[str, Any]] = []
    both_heard = asyncio.Event()

    def on_add(obj: dict[str, Any]) -> None:
        heard.append(obj)
        if len(heard) == 2:
            both_heard.set()

    informer.add_event_handler(ResourceEventHandlerFuncs(add_func=on_add))
    factory.start()
    try:
        async with asyncio.timeout(10):
            await factory.wait_for_cache_sync()
            await configmaps.create(configmap("later"))
            await both_heard.wait()
        cached = informer.indexer.get_by_key("default/settings")
        assert cached is not None and cached["metadata"]["name"] == "settings"
        assert all("managedFields" not in obj["metadata"] for obj in [*informer.indexer.list(), *heard])
    finally:
        await factory.shutdown()


def decoded(obj: Object) -> Object:
    """``obj`` as a watch delivers it: freshly decoded, sharing no string value with anything."""
    copy: Object = serializer.decode(serializer.encode(obj))
    return copy


def pod_of_a_replica_set(name: str, rv: str) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "resourceVersion": rv, "labels": {"app": "web"}},
        "spec": {
            "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10", "args": ["--v", "2"]}],
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists"}],
        },
    }


def test_interning_makes_equal_string_values_one_string_and_keeps_the_objects_apart() -> None:
    first, second = decoded(pod_of_a_replica_set("a", "1")), decoded(pod_of_a_replica_set("b", "2"))
    image = first["spec"]["containers"][0]["image"]
    assert image == second["spec"]["containers"][0]["image"]
    assert image is not second["spec"]["containers"][0]["image"]  # the decoder shares keys, not values

    expected = [pod_of_a_replica_set("a", "1"), pod_of_a_replica_set("b", "2")]
    assert [intern_strings(first), intern_strings(second)] == expected

    first_container, second_container = first["spec"]["containers"][0], second["spec"]["containers"][0]
    assert first_container["image"] is second_container["image"]
    assert first_container["args"][1] is second_container["args"][1]  # in lists too
    assert first["metadata"]["labels"]["app"] is second["metadata"]["labels"]["app"]
    # Only strings are shared: a change to one object's dicts or lists stays in that object.
    first_container["args"].append("--extra")
    first["spec"]["tolerations"][0]["operator"] = "Equal"
    first["metadata"]["labels"]["app"] = "changed"
    assert second == pod_of_a_replica_set("b", "2")


async def test_cached_objects_share_equal_strings_and_nothing_else() -> None:
    lw = ScriptedListWatch(
        {
            "kind": "PodList",
            "metadata": {"resourceVersion": "10"},
            "items": [decoded(pod_of_a_replica_set("a", "3"))],
        }
    )
    informer = SharedIndexInformer(lw, clock=ManualClock(), reflector_options={"backoff": NoBackoff()})
    recorder = Recorder()
    informer.add_event_handler(recorder)
    async with informer:
        await informer.wait_for_sync()
        watcher = await lw.watchers.get()
        watcher.add(decoded(pod_of_a_replica_set("b", "11")))
        assert await recorder.next(2) == [("add", "a", "3"), ("add", "b", "11")]
        a, b = informer.indexer.get_by_key("default/a"), informer.indexer.get_by_key("default/b")
        assert a is not None and b is not None
        assert a["spec"]["containers"][0]["image"] is b["spec"]["containers"][0]["image"]
        assert a["spec"]["tolerations"] is not b["spec"]["tolerations"]
        a["spec"]["tolerations"][0]["operator"] = "Equal"  # a careless handler, changing the cache
        assert b == pod_of_a_replica_set("b", "11")


async def test_a_resync_does_not_transform_the_cached_objects_again() -> None:
    clock = ManualClock(start=0.0)
    lw = ScriptedListWatch(cm_list("10", cm("a", "3"), cm("b", "4")))
    transformed: list[str] = []

    def transform(obj: Object) -> Object:
        transformed.append(obj["metadata"]["name"])
        return obj

    informer = SharedIndexInformer(
        lw, clock=clock, transform=transform, reflector_options={"backoff": NoBackoff()}
    )
    recorder = Recorder()
    informer.add_event_handler(recorder, resync_period=30.0)
    async with informer:
        await informer.wait_for_sync()
        await lw.watchers.get()
        assert len(await recorder.next(2)) == 2
        await clock.advance(30)
        assert sorted(await recorder.next(2)) == [("update", "a", "3"), ("update", "b", "4")]
        assert sorted(transformed) == ["a", "b"]


async def test_two_informers_caching_one_version_hold_one_frozen_object(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A scheduler's and a kubelet's informer: their own lists and watches, one copy of the pod."""
    versions = SharedVersions()

    def with_uid(obj: Object) -> Object:
        obj["metadata"]["uid"] = "uid-a"
        return decoded(obj)

    informers = [
        SharedIndexInformer(
            ScriptedListWatch(
                {
                    "kind": "PodList",
                    "metadata": {"resourceVersion": "10"},
                    "items": [with_uid(pod_of_a_replica_set("a", "3"))],
                }
            ),
            clock=ManualClock(),
            reflector_options={"backoff": NoBackoff()},
            shared_versions=versions,
        )
        for _ in range(2)
    ]
    careless = Recorder()

    tried = asyncio.Event()

    def change_it(obj: Object) -> None:
        tried.set()
        obj["metadata"]["labels"]["app"] = "changed"

    informers[0].add_event_handler(ResourceEventHandlerFuncs(add_func=change_it))
    informers[1].add_event_handler(careless)
    async with informers[0], informers[1]:
        await wait_for_cache_sync(*informers)
        assert await careless.next() == [("add", "a", "3")]
        async with asyncio.timeout(10):
            await tried.wait()  # the handler raised and its task logged it in that same step
        first, second = (informer.indexer.get_by_key("default/a") for informer in informers)
        assert first is second and isinstance(first, FrozenDict)
        expected = pod_of_a_replica_set("a", "3")
        expected["metadata"]["uid"] = "uid-a"
        assert first == expected
    assert any(isinstance(r.exc_info[1], SharedObjectChanged) for r in caplog.records if r.exc_info)


async def test_informers_of_a_process_decode_one_watch_line_once_per_transform(
    make_cluster: MakeCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same watch line reaches the scheduler, the controller manager and a kubelet: the first
    informer decodes, transforms and shares it; the next ones with the same transform find the
    shared copy by the bytes' digest. Another transform gets its own copy."""
    cluster = await make_cluster()
    versions = SharedVersions()
    decoded_lines: list[bytes] = []
    real_decode = decode_event

    def counting(line: bytes) -> Any:
        decoded_lines.append(line)
        return real_decode(line)

    monkeypatch.setattr(informer_module, "decode_event", counting)
    informers = [
        SharedIndexInformer(
            ListWatch(cluster.configmaps()),
            transform=transform,
            shared_versions=versions,
            reflector_options={"backoff": NoBackoff()},
        )
        for transform in (strip_managed_fields, strip_managed_fields, strip_managed_fields, None)
    ]
    seen = [Recorder() for _ in informers]
    for informer, recorder in zip(informers, seen, strict=True):
        informer.add_event_handler(recorder)
    async with informers[0], informers[1], informers[2], informers[3]:
        await wait_for_cache_sync(*informers)
        created = await cluster.configmaps().create(configmap("shared", {"k": "v"}))
        for recorder in seen:
            assert await recorder.next() == [("add", "shared", created["metadata"]["resourceVersion"])]
        held = [informer.indexer.get_by_key("default/shared") for informer in informers]
    stripped, plain = held[0], held[3]
    assert stripped is not None and plain is not None
    assert held[1] is stripped and held[2] is stripped, "informers with one transform hold copies"
    assert isinstance(stripped, FrozenDict) and "managedFields" not in stripped["metadata"]
    assert plain is not stripped and plain["metadata"]["managedFields"], "the transforms mixed"
    assert {k: v for k, v in plain["metadata"].items() if k != "managedFields"} == stripped["metadata"]
    added = [line for line in decoded_lines if line.startswith(b'{"type":"ADDED"')]
    assert len(added) == 2, f"{len(added)} decodes of the ADDED line for 2 transforms"


def test_split_event_finds_the_object_bytes_only_in_the_api_servers_layout() -> None:
    obj = b'{"metadata":{"name":"a","uid":"u","resourceVersion":"7"}}'
    assert split_event(b'{"type":"MODIFIED","object":' + obj + b"}") == (b"MODIFIED", obj)
    assert split_event(b'{"object":' + obj + b',"type":"ADDED"}') is None  # keys the other way
    assert split_event(b'{ "type": "ADDED", "object": ' + obj + b"}") is None  # spaced out
    assert split_event(b'{"type":"ADDED","object":' + obj + b"}x") is None  # more after it
    assert split_event(b'{"type":"ADDED"}') is None  # no object


def test_an_informers_transform_runs_once_even_when_another_informer_shares_the_version_anew() -> None:
    """Two informers of one process get the same watch line; only one has a transform, so each
    shares its own copy of the version (the registry then names the second). The first one's
    delta must still not be transformed again: its object is frozen, and a transform may change
    whatever it is given (client-go's ``TransformFunc``)."""
    versions = SharedVersions()
    calls: list[str] = []

    def annotate(obj: Object) -> Object:
        calls.append(obj["metadata"]["name"])
        obj["metadata"]["annotations"] = {"seen-by": "a"}  # changes its input, as transforms may
        return obj

    def informer(transform: Any) -> SharedIndexInformer:
        return SharedIndexInformer(
            ScriptedListWatch(cm_list("1")), transform=transform, shared_versions=versions
        )

    first, second = informer(annotate), informer(None)
    obj = cm("a", "3")
    obj["metadata"]["uid"] = "uid-a"
    line = serializer.encode({"type": "ADDED", "object": obj})
    mine, theirs = first._decode(line), second._decode(line)
    assert mine.object is not theirs.object and mine.object["metadata"]["annotations"] == {"seen-by": "a"}
    first._handle_deltas([Delta(DeltaType.ADDED, mine.object)])
    second._handle_deltas([Delta(DeltaType.ADDED, theirs.object)])
    assert calls == ["a"], f"the transform ran {len(calls)} times for one event"
    assert first.indexer.get_by_key("default/a") is mine.object
    assert second.indexer.get_by_key("default/a") is theirs.object
