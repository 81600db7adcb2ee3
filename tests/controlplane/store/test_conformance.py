"""The store conformance suite: etcd v3 semantics that every backend must keep.

Each test runs against SQLite, PostgreSQL and a real etcd (see conftest.py). Where the suite and a
backend disagree, the backend is wrong: these are the semantics kube-apiserver relies on.
"""

from __future__ import annotations

import asyncio

import pytest

from controlplane.store import (
    Compacted,
    Compare,
    Delete,
    DeleteResponse,
    DuplicateKey,
    Event,
    EventType,
    FutureRevision,
    Get,
    GetResponse,
    KeyExists,
    KeyNotFound,
    KeyOutsidePrefix,
    LeaseNotFound,
    Put,
    PutResponse,
    RequestTooLarge,
    RevisionMismatch,
    Store,
    StoreClosed,
    Txn,
    WatcherTooSlow,
)
from controlplane.trace import ListSink, request_context
from tests.controlplane.store.conftest import StoreFactory
from tests.support.stores import next_events

P = "/registry/pods/default/"


# -- revisions and key metadata ---------------------------------------------------------------------


async def test_every_write_takes_exactly_one_revision(store: Store) -> None:
    start = await store.current_revision()
    a = await store.create(P + "a", b"1")
    b = await store.put(P + "b", b"1")
    assert (a.mod_revision, b.mod_revision) == (start + 1, start + 2)
    assert await store.current_revision() == start + 2


async def test_a_multi_key_transaction_commits_as_one_revision(store: Store) -> None:
    start = await store.current_revision()
    result = await store.txn(Txn(success=(Put(P + "a", b"1"), Put(P + "b", b"2"), Put(P + "c", b"3"))))
    assert result.succeeded
    assert result.revision == start + 1
    assert [e.kv.mod_revision for e in result.events] == [start + 1] * 3
    listed = await store.range(P)
    assert [kv.key for kv in listed.kvs] == [P + "a", P + "b", P + "c"]


async def test_a_transaction_that_writes_nothing_takes_no_revision(store: Store) -> None:
    kv = await store.create(P + "a", b"1")
    stale = Compare.unchanged(P + "a", 999)
    failed = await store.txn(Txn(compares=(stale,), success=(Put(P + "a", b"x"),), failure=(Get(P + "a"),)))
    assert not failed.succeeded
    assert failed.revision == kv.mod_revision
    assert failed.responses == (GetResponse(kv),)
    nothing = await store.txn(Txn(success=(Delete(P + "absent"),)))
    assert nothing.responses == (DeleteResponse(0, None),)
    assert nothing.revision == kv.mod_revision
    assert await store.current_revision() == kv.mod_revision


async def test_version_counts_writes_since_creation_and_restarts_after_delete(store: Store) -> None:
    v1 = await store.create(P + "a", b"1")
    v2 = await store.update(P + "a", b"2", expected_mod_revision=v1.mod_revision)
    assert (v2.create_revision, v2.version) == (v1.mod_revision, 2)
    _, deleted_at = await store.delete(P + "a")
    again = await store.create(P + "a", b"3")
    assert again.create_revision == again.mod_revision == deleted_at + 1
    assert again.version == 1


async def test_put_response_carries_the_previous_value(store: Store) -> None:
    first = await store.put(P + "a", b"1")
    result = await store.txn(Txn(success=(Put(P + "a", b"2"),)))
    assert result.responses == (PutResponse(first),)


async def test_operations_in_one_transaction_see_each_others_writes(store: Store) -> None:
    result = await store.txn(Txn(success=(Put(P + "a", b"1"), Get(P + "a"), Delete(P + "b"))))
    get = result.responses[1]
    assert isinstance(get, GetResponse)
    assert get.kv is not None and get.kv.value == b"1"


# -- optimistic concurrency --------------------------------------------------------------------------


async def test_create_refuses_an_existing_key_and_returns_it(store: Store) -> None:
    kv = await store.create(P + "a", b"1")
    with pytest.raises(KeyExists) as caught:
        await store.create(P + "a", b"2")
    assert caught.value.current == kv
    assert (await store.get(P + "a")) == kv


async def test_update_with_a_stale_revision_conflicts_and_returns_the_current_value(store: Store) -> None:
    v1 = await store.create(P + "a", b"1")
    v2 = await store.update(P + "a", b"2", expected_mod_revision=v1.mod_revision)
    with pytest.raises(RevisionMismatch) as caught:
        await store.update(P + "a", b"3", expected_mod_revision=v1.mod_revision)
    assert caught.value.current == v2
    assert (await store.get(P + "a")) == v2


async def test_update_and_delete_of_a_missing_key_are_not_found(store: Store) -> None:
    with pytest.raises(KeyNotFound):
        await store.update(P + "nope", b"1", expected_mod_revision=1)
    with pytest.raises(KeyNotFound):
        await store.delete(P + "nope")


async def test_delete_if_unchanged(store: Store) -> None:
    v1 = await store.create(P + "a", b"1")
    await store.update(P + "a", b"2", expected_mod_revision=v1.mod_revision)
    with pytest.raises(RevisionMismatch):
        await store.delete(P + "a", expected_mod_revision=v1.mod_revision)
    assert await store.get(P + "a") is not None


async def test_concurrent_updates_from_one_read_let_exactly_one_win(store: Store) -> None:
    kv = await store.create(P + "a", b"0")
    results = await asyncio.gather(
        *(store.update(P + "a", str(i).encode(), expected_mod_revision=kv.mod_revision) for i in range(10)),
        return_exceptions=True,
    )
    winners = [r for r in results if not isinstance(r, BaseException)]
    assert len(winners) == 1
    assert all(isinstance(r, RevisionMismatch) for r in results if isinstance(r, BaseException))


# -- reads -------------------------------------------------------------------------------------------


async def test_reads_at_a_past_revision_see_the_store_as_it_was(store: Store) -> None:
    v1 = await store.create(P + "a", b"1")
    await store.update(P + "a", b"2", expected_mod_revision=v1.mod_revision)
    _, deleted_at = await store.delete(P + "a")
    assert await store.get(P + "a") is None
    assert (await store.get(P + "a", revision=v1.mod_revision)) == v1
    past = await store.range(P, revision=deleted_at - 1)
    assert [kv.value for kv in past.kvs] == [b"2"]
    assert past.revision == deleted_at - 1


async def test_range_pages_with_limit_more_count_and_start(store: Store) -> None:
    for name in "edcba":
        await store.put(P + name, name.encode())
    await store.put("/registry/pods/other/z", b"z")
    first = await store.range(P, limit=2)
    assert [kv.key for kv in first.kvs] == [P + "a", P + "b"]
    assert (first.more, first.count) == (True, 5)
    rest = await store.range(P, start=first.kvs[-1].key + "\0", revision=first.revision, limit=10)
    assert [kv.key for kv in rest.kvs] == [P + "c", P + "d", P + "e"]
    assert not rest.more
    everything = await store.range("/registry/pods/")
    assert everything.count == 6 and not everything.more


async def test_range_revision_is_the_current_revision(store: Store) -> None:
    kv = await store.put(P + "a", b"1")
    await store.put("/registry/other/x", b"1")
    result = await store.range(P)
    assert result.revision == kv.mod_revision + 1


async def test_a_read_in_the_future_is_refused(store: Store) -> None:
    current = await store.current_revision()
    with pytest.raises(FutureRevision):
        await store.get(P + "a", revision=current + 5)


# -- compaction --------------------------------------------------------------------------------------


async def test_compaction_drops_history_but_not_the_present(store: Store) -> None:
    v1 = await store.create(P + "a", b"1")
    v2 = await store.update(P + "a", b"2", expected_mod_revision=v1.mod_revision)
    await store.create(P + "b", b"1")
    await store.delete(P + "b")
    mark = await store.current_revision()
    await store.put(P + "c", b"1")
    await store.compact(mark)
    assert await store.compact_revision() == mark
    with pytest.raises(Compacted) as caught:
        await store.get(P + "a", revision=v1.mod_revision)
    assert caught.value.compact_revision == mark
    assert (await store.get(P + "a", revision=mark)) == v2
    assert [kv.key for kv in (await store.range(P)).kvs] == [P + "a", P + "c"]
    with pytest.raises(Compacted):
        await store.range(P, revision=mark - 1)


async def test_compacting_backwards_or_into_the_future_is_refused(store: Store) -> None:
    for i in range(3):
        await store.put(P + "a", str(i).encode())
    current = await store.current_revision()
    with pytest.raises(FutureRevision):
        await store.compact(current + 1)
    await store.compact(current - 1)
    with pytest.raises(Compacted):
        await store.compact(current - 2)


# -- watch -------------------------------------------------------------------------------------------


async def test_watch_replays_history_after_the_revision_then_goes_live(store: Store) -> None:
    v1 = await store.create(P + "a", b"1")
    v2 = await store.update(P + "a", b"2", expected_mod_revision=v1.mod_revision)
    await store.put("/registry/services/default/s", b"x")  # another prefix: not seen
    async with await store.watch(P, from_revision=v1.mod_revision) as watch:
        _, deleted_at = await store.delete(P + "a")
        replayed, deleted = await next_events(watch, 2)
    assert (replayed.type, replayed.kv, replayed.prev_kv) == (EventType.PUT, v2, v1)
    assert deleted.type is EventType.DELETE
    assert (deleted.key, deleted.revision, deleted.prev_kv) == (P + "a", deleted_at, v2)


async def test_watch_from_now_sees_only_new_events(store: Store) -> None:
    await store.put(P + "old", b"1")
    async with await store.watch(P) as watch:
        new = await store.put(P + "new", b"1")
        (event,) = await next_events(watch, 1)
    assert event.kv == new


async def test_watch_delivers_every_event_in_order_exactly_once_to_concurrent_writers(store: Store) -> None:
    start = await store.current_revision()
    async with await store.watch(P, from_revision=start) as watch:

        async def writer(w: int) -> None:
            for i in range(25):
                await store.put(f"{P}w{w}-{i % 5}", f"{w}/{i}".encode())

        await asyncio.gather(*(writer(w) for w in range(8)))
        events = await next_events(watch, 200)
    revisions = [e.revision for e in events]
    assert revisions == list(range(start + 1, start + 201))


async def test_events_of_one_transaction_share_its_revision(store: Store) -> None:
    async with await store.watch(P) as watch:
        result = await store.txn(Txn(success=(Put(P + "a", b"1"), Put(P + "b", b"1"))))
        events = await next_events(watch, 2)
    assert [(e.key, e.revision) for e in events] == [(P + "a", result.revision), (P + "b", result.revision)]


async def test_watch_from_a_compacted_revision_fails_with_compacted(store: Store) -> None:
    for i in range(5):
        await store.put(P + "a", str(i).encode())
    mark = await store.current_revision() - 1
    await store.compact(mark)
    with pytest.raises(Compacted):
        await store.watch(P, from_revision=mark - 2)
    async with await store.watch(P, from_revision=mark) as watch:
        (event,) = await next_events(watch, 1)
    assert event.revision == mark + 1


async def test_watch_from_a_future_revision_waits_for_it(store: Store) -> None:
    current = await store.current_revision()
    async with await store.watch(P, from_revision=current + 2) as watch:
        for i in range(4):
            await store.put(P + "a", str(i).encode())
        events = await next_events(watch, 2)
    assert [e.revision for e in events] == [current + 3, current + 4]


async def test_a_slow_watcher_is_closed_without_slowing_writers_or_other_watchers(
    store_factory: StoreFactory,
) -> None:
    async with store_factory(watch_capacity=20) as store:
        slow = await store.watch(P)
        fast = await store.watch(P)
        received: list[Event] = []

        async def consume() -> None:
            async for event in fast:
                received.append(event)
                if len(received) == 100:
                    return

        consumer = asyncio.create_task(consume())
        for i in range(100):
            await store.put(P + "a", str(i).encode())
        async with asyncio.timeout(5):
            await consumer
        assert len(received) == 100
        with pytest.raises(WatcherTooSlow):
            async with asyncio.timeout(5):
                async for _ in slow:
                    pass
        await slow.close()
        await fast.close()


async def test_closing_the_store_ends_its_watches(store_factory: StoreFactory) -> None:
    async with store_factory() as store:
        watch = await store.watch(P)
    with pytest.raises(StoreClosed):
        async with asyncio.timeout(5):
            await anext(watch)


# -- leases ------------------------------------------------------------------------------------------


async def test_revoking_a_lease_deletes_its_keys_in_one_revision(store: Store) -> None:
    lease = await store.lease_grant(60)
    await store.put(P + "a", b"1", lease=lease.id)
    await store.put(P + "b", b"1", lease=lease.id)
    await store.put(P + "c", b"1")
    async with await store.watch(P) as watch:
        revision = await store.lease_revoke(lease.id)
        events = await next_events(watch, 2)
    assert {(e.type, e.key) for e in events} == {(EventType.DELETE, P + "a"), (EventType.DELETE, P + "b")}
    assert {e.revision for e in events} == {revision}
    assert [kv.key for kv in (await store.range(P)).kvs] == [P + "c"]
    with pytest.raises(LeaseNotFound):
        await store.lease_keepalive(lease.id)


async def test_a_put_with_an_unknown_lease_writes_nothing(store: Store) -> None:
    before = await store.current_revision()
    with pytest.raises(LeaseNotFound):
        await store.put(P + "a", b"1", lease=123456789)
    assert await store.current_revision() == before
    assert await store.get(P + "a") is None


async def test_keepalive_extends_a_lease(store: Store) -> None:
    lease = await store.lease_grant(30)
    renewed = await store.lease_keepalive(lease.id)
    assert renewed.id == lease.id and renewed.ttl == 30
    assert renewed.expires_at >= lease.expires_at


# -- bad input ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["/other/pods/a", "registry/pods/a", "", "/registr"])
async def test_keys_outside_the_cluster_prefix_are_refused(store: Store, key: str) -> None:
    before = await store.current_revision()
    with pytest.raises(KeyOutsidePrefix):
        await store.put(key, b"1")
    with pytest.raises(KeyOutsidePrefix):
        await store.txn(Txn(success=(Put(P + "ok", b"1"), Put(key, b"1"))))
    assert await store.current_revision() == before
    assert await store.get(P + "ok") is None


async def test_a_request_over_the_size_limit_is_refused_and_writes_nothing(store: Store) -> None:
    before = await store.current_revision()
    with pytest.raises(RequestTooLarge):
        await store.put(P + "big", b"x" * (1536 * 1024 + 1))
    with pytest.raises(RequestTooLarge):
        await store.txn(Txn(success=(Put(P + "a", b"x" * 800_000), Put(P + "b", b"x" * 800_000))))
    assert await store.current_revision() == before
    ok = await store.put(P + "big", b"x" * (1024 * 1024))
    assert len((await store.get(P + "big") or ok).value) == 1024 * 1024


async def test_a_transaction_writing_a_key_twice_is_refused(store: Store) -> None:
    with pytest.raises(DuplicateKey):
        await store.txn(Txn(success=(Put(P + "a", b"1"), Delete(P + "a"))))
    assert await store.get(P + "a") is None


# -- trace -------------------------------------------------------------------------------------------


async def test_each_operation_is_traced_with_the_request_that_caused_it(store_factory: StoreFactory) -> None:
    sink = ListSink()
    async with store_factory(trace=sink) as store:
        with request_context("req-123"):
            kv = await store.create(P + "a", b"1")
        await store.put(P + "b", b"1")
        with request_context("req-456"):
            await store.range(P)
    edge = {"from": "apiserver", "to": "etcd"}
    reads = [e for e in sink.of_type("store.txn") if e["op"] == "range"]
    assert reads == [
        {"type": "store.txn", "cluster": "test", "id": "req-456", "op": "range", "key": P}
        | edge
        | {"revision": kv.mod_revision + 1, "count": 2}
    ]
    txns = [e for e in sink.of_type("store.txn") if e["op"] == "txn"]
    assert txns[0]["id"] == "req-123"
    assert txns[0]["revision"] == kv.mod_revision
    assert txns[0]["writes"] == [{"type": "PUT", "key": P + "a"}]
    assert txns[0]["compares"] == [{"key": P + "a", "target": "create_revision", "op": "=", "value": 0}]
    assert txns[1]["id"] is None
    assert all(e["from"] == "apiserver" and e["to"] == "etcd" for e in txns)


async def test_compactions_and_watches_are_traced_on_the_diagrams_edges(store_factory: StoreFactory) -> None:
    sink = ListSink()
    async with store_factory(trace=sink) as store:
        first = await store.put(P + "a", b"1")
        async with await store.watch(P, from_revision=first.mod_revision) as watch:
            second = await store.put(P + "a", b"2")
            event = await anext(aiter(watch))
        await store.compact(second.mod_revision)
    assert event.revision == second.mod_revision
    (compacted,) = sink.of_type("store.compact")
    assert (compacted["from"], compacted["to"], compacted["revision"]) == (
        "apiserver",
        "etcd",
        second.mod_revision,
    )
    (opened,) = sink.of_type("watch.opened")
    (delivered,) = sink.of_type("watch.event")
    (closed,) = sink.of_type("watch.closed")
    for traced in (opened, delivered, closed):
        assert (traced["from"], traced["to"], traced["source"]) == ("etcd", "apiserver", "store")
        assert traced["watch"] == opened["watch"]
    assert (delivered["revision"], delivered["key"], delivered["event"]) == (
        second.mod_revision,
        P + "a",
        "PUT",
    )
