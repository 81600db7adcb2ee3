"""The reflector: list at "0" in pages, watch from the list's resourceVersion, relist on 410, back off."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from controlplane.client.cache import Indexer
from controlplane.client.errors import Expired, TooManyRequests
from controlplane.client.reflector import ListWatch, Reflector
from controlplane.client.rest import ListOptions
from controlplane.client.watch import FakeWatcher
from controlplane.clock import ManualClock
from tests.controlplane.client.conftest import MakeCluster, configmap
from tests.controlplane.client.helpers import GatedListWatch, NoBackoff, ScriptedListWatch, cm, cm_list, until

EXPIRED = {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old resource version: 5 (9)"}


@asynccontextmanager
async def running(reflector: Reflector) -> AsyncIterator[asyncio.Task[None]]:
    task = asyncio.create_task(reflector.run(), name="reflector under test")
    try:
        yield task
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_lists_at_zero_in_pages_then_watches_from_the_lists_resource_version() -> None:
    lw = ScriptedListWatch(
        cm_list("10", cm("a", "3"), continue_="page-2"),
        cm_list("", cm("b", "7")),
    )
    store = Indexer()
    reflector = Reflector(lw, store, clock=ManualClock(), rng=random.Random(1), backoff=NoBackoff())
    async with running(reflector):
        watcher = await lw.watchers.get()
        first, second = lw.list_calls
        assert first == ListOptions(resource_version="0", limit=500)
        assert second == ListOptions(limit=500, continue_="page-2")  # no resourceVersion with a token
        assert sorted(store.list_keys()) == ["default/a", "default/b"]
        assert reflector.last_sync_resource_version == "10"

        [watch] = lw.watch_calls
        assert watch.resource_version == "10"
        assert watch.allow_watch_bookmarks
        assert watch.timeout_seconds is not None and 300 <= watch.timeout_seconds < 600

        watcher.add(cm("c", "11"))
        watcher.modify(cm("a", "12", {"x": "y"}))
        watcher.delete(cm("b", "13"))
        watcher.bookmark("20")
        await until(lambda: reflector.last_sync_resource_version == "20")
        assert sorted(store.list_keys()) == ["default/a", "default/c"]
        assert store.get_by_key("default/a") == cm("a", "12", {"x": "y"})


async def test_a_watch_that_ends_normally_is_resumed_without_listing() -> None:
    lw = ScriptedListWatch(cm_list("10"))
    reflector = Reflector(lw, Indexer(), clock=ManualClock(), backoff=NoBackoff())
    async with running(reflector):
        first = await lw.watchers.get()
        first.add(cm("a", "11"))
        first.close()  # the server's timeoutSeconds passed
        await lw.watchers.get()
        assert [w.resource_version for w in lw.watch_calls] == ["10", "11"]
        assert len(lw.list_calls) == 1


async def test_410_on_the_watch_relists_at_the_last_resource_version_after_a_backoff() -> None:
    lw = ScriptedListWatch(cm_list("10", cm("a", "3")), cm_list("30", cm("b", "25")))
    store = Indexer()
    backoff = NoBackoff()
    reflector = Reflector(lw, store, clock=ManualClock(), backoff=backoff)
    async with running(reflector):
        watcher = await lw.watchers.get()
        watcher.bookmark("15")
        watcher.error(EXPIRED)
        await lw.watchers.get()
        assert [o.resource_version for o in lw.list_calls] == ["0", "15"]
        assert lw.list_calls[1].limit is None  # not paged: a list "not older than 15" the cache can serve
        assert backoff.count == 1
        assert reflector.list_count == 2
        assert store.list_keys() == ["default/b"]
        assert lw.watch_calls[-1].resource_version == "30"


async def test_a_relist_that_is_too_old_as_well_lists_the_latest_at_once() -> None:
    expired = Expired(EXPIRED)
    lw = ScriptedListWatch(cm_list("10"), expired, cm_list("40"))
    backoff = NoBackoff()
    reflector = Reflector(lw, Indexer(), clock=ManualClock(), backoff=backoff)
    async with running(reflector):
        (await lw.watchers.get()).error(EXPIRED)
        await lw.watchers.get()
        assert [o.resource_version for o in lw.list_calls] == ["0", "10", ""]
        assert backoff.count == 1  # no wait between the failed list and the one at ""
        assert reflector.last_sync_resource_version == "40"


async def test_a_paged_first_list_keeps_later_lists_paged() -> None:
    lw = ScriptedListWatch(
        cm_list("10", cm("a", "3"), continue_="t"),
        cm_list("", cm("b", "4")),
        cm_list("30", cm("a", "3")),
    )
    reflector = Reflector(lw, Indexer(), clock=ManualClock(), backoff=NoBackoff())
    async with running(reflector):
        (await lw.watchers.get()).error(EXPIRED)
        await lw.watchers.get()
        assert lw.list_calls[2] == ListOptions(resource_version="10", limit=500)


async def test_429_on_opening_a_watch_backs_off_and_watches_again() -> None:
    class Refusing(FakeWatcher):
        async def start(self) -> None:
            raise TooManyRequests({"code": 429, "reason": "TooManyRequests", "message": "slow down"})

    lw = ScriptedListWatch(cm_list("10"))
    lw.make_watcher = Refusing
    backoff = NoBackoff()
    reflector = Reflector(lw, Indexer(), clock=ManualClock(), backoff=backoff)
    async with running(reflector):
        for _ in range(3):
            await lw.watchers.get()
        assert len(lw.list_calls) == 1
        await until(lambda: backoff.count >= 2)


async def test_a_watch_that_ends_at_once_without_events_counts_as_a_failure() -> None:
    lw = ScriptedListWatch(cm_list("10"), cm_list("11"))
    backoff = NoBackoff()
    reflector = Reflector(lw, Indexer(), clock=ManualClock(), backoff=backoff)
    async with running(reflector):
        (await lw.watchers.get()).close()
        await lw.watchers.get()
        assert len(lw.list_calls) == 2
        assert backoff.count == 1


async def test_resync_ticks_on_the_clock() -> None:
    resyncs: list[float] = []

    class Store(Indexer):
        def resync(self) -> None:
            resyncs.append(clock.now())

    clock = ManualClock(start=0.0)
    lw = ScriptedListWatch(cm_list("10"))
    reflector = Reflector(lw, Store(), clock=clock, resync_period=30.0, backoff=NoBackoff())
    async with running(reflector):
        await lw.watchers.get()
        await clock.advance(29)
        assert resyncs == []
        await clock.advance(1)
        await clock.advance(30)
        assert resyncs == [30.0, 60.0]


async def test_a_reflector_relists_after_410_from_a_real_api_server(make_cluster: MakeCluster) -> None:
    cluster = await make_cluster(watch_cache_window=3)
    cms = cluster.configmaps()
    await cms.create(configmap("kept"))
    await cms.create(configmap("doomed"))
    lw = GatedListWatch(ListWatch(cms))
    lw.gate.clear()  # hold the first watch
    store = Indexer()
    reflector = Reflector(lw, store, rng=random.Random(1), backoff=NoBackoff())
    async with asyncio.timeout(20), running(reflector):
        await lw.watch_requested.wait()  # listed; the watch waits at the gate
        assert sorted(store.list_keys()) == ["default/doomed", "default/kept"]
        listed_at = reflector.last_sync_resource_version

        # While the reflector is not watching, more changes than the server's window keeps.
        await cms.delete("doomed")
        for i in range(5):
            await cms.create(configmap(f"new-{i}"))

        lw.watch_requested.clear()
        lw.gate.set()
        await (
            lw.watch_requested.wait()
        )  # the watch from `listed_at` got 410; this is the one after the relist
        assert lw.lists == 2
        assert int(reflector.last_sync_resource_version) > int(listed_at)
        fresh = await cms.list()
        assert sorted(store.list_keys()) == sorted(f"default/{i['metadata']['name']}" for i in fresh["items"])
