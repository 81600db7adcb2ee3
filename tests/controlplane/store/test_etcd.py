"""What only the etcd backend has to prove: it keeps each cluster in its own key namespace of a real
etcd, uses etcd's revisions, and turns etcd's answers (compaction, leases, a server going away) into
the store's typed errors. The shared semantics are in test_conformance.py."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from controlplane.store import (
    BackendUnavailable,
    Compacted,
    Compare,
    Delete,
    Event,
    EventType,
    Get,
    GetResponse,
    KeyValue,
    LeaseNotFound,
    Put,
    StoreClosed,
    Txn,
    Watch,
)
from controlplane.store.etcd import EtcdStore
from controlplane.trace import ListSink
from tests.support import etcd
from tests.support.services import free_port, service_missing

pytestmark = pytest.mark.etcd

P = "/registry/pods/default/"


@pytest.fixture
async def store() -> AsyncIterator[EtcdStore]:
    async with etcd.make_store("c") as store:
        yield store


async def next_events(watch: Watch, n: int, seconds: float = 5.0) -> list[Event]:
    """The next ``n`` events of ``watch``, failing the test if they do not come within ``seconds``."""
    events: list[Event] = []
    async with asyncio.timeout(seconds):
        while len(events) < n:
            events.append(await anext(watch))
    return events


async def raw_range(store: EtcdStore, key: bytes) -> dict[str, Any]:
    """Read ``key`` from etcd directly, bypassing the store."""
    async with httpx.AsyncClient(base_url=store.endpoint, trust_env=False) as client:
        response = await client.post("/v3/kv/range", json={"key": base64.b64encode(key).decode()})
    response.raise_for_status()
    data: dict[str, Any] = response.json()
    return data


# -- namespacing and revisions ---------------------------------------------------------------------


async def test_a_cluster_keeps_its_keys_under_its_namespace_with_etcds_revisions(store: EtcdStore) -> None:
    kv = await store.put(P + "web-0", b'{"kind":"Pod"}')
    raw = await raw_range(store, (store.namespace + P + "web-0").encode())
    (stored,) = raw["kvs"]
    assert base64.b64decode(stored["value"]) == b'{"kind":"Pod"}'
    assert int(stored["mod_revision"]) == kv.mod_revision
    assert int(raw["header"]["revision"]) == await store.current_revision()
    assert (await raw_range(store, (P + "web-0").encode())).get("kvs") is None  # not at the root


async def test_two_clusters_on_one_etcd_do_not_see_each_other() -> None:
    async with etcd.make_store("a") as a, etcd.make_store("b") as b:
        assert a.endpoint == b.endpoint and a.namespace != b.namespace
        async with await b.watch(P) as b_watch:
            in_a = await a.put(P + "x", b"from a")
            assert await b.get(P + "x") is None
            assert (await b.range(P)).count == 0
            in_b = await b.create(P + "x", b"from b")  # no KeyExists: a's key is not b's
            (event,) = await next_events(b_watch, 1)
        assert event.kv == in_b  # b's watch skipped a's write and saw its own
        assert in_b.mod_revision > in_a.mod_revision  # one etcd, one revision counter
        assert (await a.get(P + "x")) == in_a
        assert [kv.value for kv in (await a.range(P)).kvs] == [b"from a"]


def test_a_cluster_name_must_be_usable_as_a_namespace() -> None:
    with pytest.raises(ValueError, match="namespace"):
        EtcdStore("a/b", endpoint="http://127.0.0.1:1")
    assert EtcdStore("a", endpoint="http://127.0.0.1:1/").namespace == "/kubelab/a"


# -- transactions ----------------------------------------------------------------------------------


async def test_crud_returns_the_versions_etcd_stored(store: EtcdStore) -> None:
    created = await store.create(P + "a", b"1")
    assert created == await store.get(P + "a")
    assert created.create_revision == created.mod_revision and created.version == 1
    updated = await store.update(P + "a", b"2", expected_mod_revision=created.mod_revision)
    assert updated == await store.get(P + "a")
    assert (updated.create_revision, updated.version) == (created.create_revision, 2)
    deleted, revision = await store.delete(P + "a", expected_mod_revision=updated.mod_revision)
    assert deleted == updated
    assert revision == await store.current_revision() == updated.mod_revision + 1
    assert await store.get(P + "a") is None
    assert await store.get(P + "a", revision=created.mod_revision) == created


async def test_a_transactions_events_are_the_versions_etcd_wrote(store: EtcdStore) -> None:
    lease = await store.lease_grant(60)
    old = await store.put(P + "a", b"1")
    await store.put(P + "gone", b"1")
    result = await store.txn(
        Txn(success=(Put(P + "a", b"2", lease=lease.id), Put(P + "new", b"3"), Delete(P + "gone")))
    )
    put_a, put_new, delete = result.events
    assert put_a.kv == await store.get(P + "a")
    assert put_a.kv.lease == lease.id and put_a.prev_kv == old
    assert put_new.kv == await store.get(P + "new") and put_new.prev_kv is None
    assert delete.type is EventType.DELETE
    assert delete.kv == KeyValue(P + "gone", b"", 0, result.revision, 0)
    assert await store.get(P + "gone") is None


@pytest.mark.parametrize(
    ("compare", "holds"),
    [
        (Compare(P + "a", "version", ">", 1), True),
        (Compare(P + "a", "version", "<", 2), False),
        (Compare(P + "a", "version", "=", 2), True),
        (Compare(P + "a", "create_revision", "!=", 0), True),
        (Compare(P + "a", "mod_revision", "<", 0), False),
        (Compare(P + "absent", "create_revision", "=", 0), True),
        (Compare(P + "absent", "version", ">", 0), False),
    ],
)
async def test_each_compare_is_evaluated_by_etcd(store: EtcdStore, compare: Compare, holds: bool) -> None:
    await store.put(P + "a", b"1")
    current = await store.put(P + "a", b"2")
    result = await store.txn(Txn(compares=(compare,), success=(Get(P + "a"),), failure=()))
    assert result.succeeded is holds
    assert result.responses == ((GetResponse(current),) if holds else ())
    assert result.revision == current.mod_revision


async def test_an_unknown_lease_is_named_in_the_error(store: EtcdStore) -> None:
    lease = await store.lease_grant(60)
    before = await store.current_revision()
    with pytest.raises(LeaseNotFound) as caught:
        await store.txn(
            Txn(success=(Put(P + "a", b"1", lease=lease.id), Put(P + "b", b"1", lease=987654321)))
        )
    assert caught.value.lease_id == 987654321
    assert await store.current_revision() == before


# -- watch -----------------------------------------------------------------------------------------


async def test_watch_events_carry_the_previous_value(store: EtcdStore) -> None:
    sink = ListSink()
    async with etcd.make_store("traced", trace=sink) as traced:
        v1 = await traced.create(P + "a", b"1")
        async with await traced.watch(P, from_revision=v1.mod_revision - 1) as watch:
            v2 = await traced.update(P + "a", b"2", expected_mod_revision=v1.mod_revision)
            _, deleted_at = await traced.delete(P + "a")
            created, updated, deleted = await next_events(watch, 3)
    assert (created.type, created.kv, created.prev_kv) == (EventType.PUT, v1, None)
    assert (updated.type, updated.kv, updated.prev_kv) == (EventType.PUT, v2, v1)
    assert (deleted.type, deleted.kv, deleted.prev_kv) == (
        EventType.DELETE,
        KeyValue(P + "a", b"", 0, deleted_at, 0),
        v2,
    )
    (opened,) = sink.of_type("watch.opened")
    assert (opened["prefix"], opened["revision"]) == (P, v1.mod_revision - 1)


async def test_closing_a_watch_stops_its_etcd_stream_but_not_the_others(store: EtcdStore) -> None:
    closed = await store.watch(P)
    async with await store.watch(P) as kept:
        (feeder,) = [t for t in asyncio.all_tasks() if t.get_name() == f"etcd-watch-{closed.id}"]
        await closed.close()
        async with asyncio.timeout(5):
            await asyncio.wait([feeder])
        assert feeder.cancelled()
        kv = await store.put(P + "a", b"1")
        (event,) = await next_events(kept, 1)
    assert event.kv == kv
    with pytest.raises(StopAsyncIteration):
        await anext(closed)


# -- compaction ------------------------------------------------------------------------------------


async def test_reads_and_watches_before_the_mark_fail_with_compacted(store: EtcdStore) -> None:
    first = await store.put(P + "a", b"0")
    for i in range(1, 5):
        await store.put(P + "a", str(i).encode())
    mark = await store.current_revision() - 1
    await store.compact(mark)
    await store.compact(mark)  # compacting at the mark again is a no-op, as the contract says
    assert await store.compact_revision() == mark
    with pytest.raises(Compacted) as read:
        await store.get(P + "a", revision=first.mod_revision)
    assert (read.value.revision, read.value.compact_revision) == (first.mod_revision, mark)
    with pytest.raises(Compacted) as watched:
        # etcd itself would accept start_revision == mark; the store contract refuses from_revision < mark
        await store.watch(P, from_revision=mark - 1)
    assert (watched.value.revision, watched.value.compact_revision) == (mark - 1, mark)
    async with await store.watch(P, from_revision=mark) as watch:
        (event,) = await next_events(watch, 1)
    assert event.revision == mark + 1 and event.prev_kv is not None


async def test_a_compaction_by_another_cluster_on_the_same_etcd_is_seen() -> None:
    async with etcd.make_store("a") as a, etcd.make_store("b") as b:
        old = await a.put(P + "a", b"1")
        for i in range(10):
            await b.put(P + "b", str(i).encode())
        assert await a.compact_revision() == 0
        mark = await b.current_revision() - 3
        await b.compact(mark)
        assert await a.compact_revision() == mark
        with pytest.raises(Compacted) as caught:
            await a.get(P + "a", revision=old.mod_revision)
        assert caught.value.compact_revision == mark
        with pytest.raises(Compacted):
            await a.compact(mark - 1)


# -- leases ----------------------------------------------------------------------------------------


async def test_an_expired_lease_deletes_its_keys_in_one_revision(store: EtcdStore) -> None:
    lease = await store.lease_grant(1)  # etcd's own wall clock; the test server allows 1 s
    assert lease.ttl == 1
    await store.put(P + "a", b"1", lease=lease.id)
    await store.put(P + "b", b"1", lease=lease.id)
    kept = await store.put(P + "c", b"1")
    async with await store.watch(P) as watch:
        events = await next_events(watch, 2, seconds=15)
    assert {(e.type, e.key) for e in events} == {(EventType.DELETE, P + "a"), (EventType.DELETE, P + "b")}
    assert len({e.revision for e in events}) == 1
    assert [kv for kv in (await store.range(P)).kvs] == [kept]
    with pytest.raises(LeaseNotFound):
        await store.lease_keepalive(lease.id)
    with pytest.raises(LeaseNotFound):
        await store.lease_revoke(lease.id)


# -- failures --------------------------------------------------------------------------------------


async def test_an_unreachable_etcd_is_backend_unavailable() -> None:
    store = EtcdStore("c", endpoint=f"http://127.0.0.1:{free_port()}", timeout=2)
    with pytest.raises(BackendUnavailable, match="unreachable"):
        await store.start()
    await store.close()


async def test_etcd_going_away_ends_watches_and_requests_with_backend_unavailable() -> None:
    binary = etcd.etcd_binary()
    if binary is None:
        service_missing("etcd (Debian package etcd-server)")
        return
    server = etcd.EtcdServer(binary)
    await asyncio.to_thread(server.start)
    try:
        async with EtcdStore("c", endpoint=server.endpoint, timeout=2) as store:
            await store.put(P + "a", b"1")
            watch = await store.watch(P)
            await asyncio.to_thread(server.stop)
            with pytest.raises(BackendUnavailable):
                async with asyncio.timeout(10):
                    await anext(watch)
            with pytest.raises(BackendUnavailable):
                await store.put(P + "b", b"1")
    finally:
        await asyncio.to_thread(server.stop)


async def test_a_closed_store_refuses_requests() -> None:
    async with etcd.make_store("c") as store:
        pass
    with pytest.raises(StoreClosed):
        await store.get(P + "a")
    with pytest.raises(StoreClosed):
        await store.watch(P)
