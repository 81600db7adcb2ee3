"""What only the etcd backend has to prove: it keeps each cluster in its own key namespace of a real
etcd, uses etcd's revisions, and turns etcd's answers (compaction, leases, a server going away) into
the store's typed errors. The shared semantics are in test_conformance.py."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator, Awaitable, Callable
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
from tests.support.stores import next_events

pytestmark = pytest.mark.etcd

P = "/registry/pods/default/"


@pytest.fixture
async def store() -> AsyncIterator[EtcdStore]:
    async with etcd.make_store("c") as store:
        yield store


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


async def test_a_watch_has_seen_a_revision_written_under_another_prefix(store: EtcdStore) -> None:
    """etcd tells a watch nothing of other prefixes' writes; the store knows they were not its."""
    async with await store.watch(P) as pods:
        other = await store.put("/registry/configmaps/default/a", b"1")
        assert pods.progress_revision >= other.mod_revision
        assert await store.current_revision() <= pods.progress_revision
        mine = await store.put(P + "a", b"1")
        (event,) = await next_events(pods, 1)
    assert event.kv == mine and pods.progress_revision >= mine.mod_revision


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


# -- watches racing a compaction ------------------------------------------------------------------
#
# etcd replays a watch's history some time (up to 100 ms) after it created the watch, and reads each
# event's previous value only when it sends the event. A compaction can land in between. The store's
# check that ``from_revision`` is not compacted runs before both, so these tests compact right after
# that check: the race the property test (test_properties.py) hits by chance, made certain.


def compact_after_the_watch_check(monkeypatch: pytest.MonkeyPatch, store: EtcdStore, revision: int) -> None:
    """Make ``store`` compact at ``revision`` just after its next readability check has answered."""
    check: Callable[[int], Awaitable[bool]] = store._readable

    async def check_then_compact(at: int) -> bool:
        readable = await check(at)
        monkeypatch.setattr(store, "_readable", check)
        await store.compact(revision)
        return readable

    monkeypatch.setattr(store, "_readable", check_then_compact)


async def events_until_compacted(watch: Watch, n: int, seconds: float = 5.0) -> tuple[list[Event], Compacted]:
    """The events ``watch`` delivers before it ends with ``Compacted`` (at most ``n``, as it must)."""
    events: list[Event] = []
    try:
        async with asyncio.timeout(seconds):
            while True:
                events.append(await anext(watch))
    except Compacted as error:
        assert len(events) <= n
        return events, error
    except TimeoutError:
        pytest.fail(f"the watch delivered {events} and then nothing for {seconds} s")


async def test_a_compaction_at_a_deletes_revision_during_the_replay_cannot_drop_the_delete(
    store: EtcdStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # etcd (before the fix of its issue #18089) removes a tombstone at the compaction revision, and a
    # watch whose start revision is that revision replays without the DELETE. A watch from `before`
    # that started etcd at before + 1 skipped the DELETE and waited for it forever.
    await store.put(P + "a", b"1")
    before = await store.current_revision()
    _, deleted_at = await store.delete(P + "a")
    await store.put(P + "b", b"2")
    compact_after_the_watch_check(monkeypatch, store, deleted_at)
    async with await store.watch(P, from_revision=before) as watch:
        events, ended = await events_until_compacted(watch, 2)
    assert events == []  # the history after `before` is no longer whole: nothing of it, and Compacted
    assert ended.compact_revision == deleted_at == await store.compact_revision()


async def test_a_compaction_during_the_replay_cannot_deliver_an_event_without_its_previous_value(
    store: EtcdStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Once the history before the update is compacted, etcd sends the update without prev_kv; delivered
    # as it came, the event said the key had no previous value.
    created = await store.put(P + "a", b"")
    updated = await store.put(P + "a", b"2")
    compact_after_the_watch_check(monkeypatch, store, updated.mod_revision)
    async with await store.watch(P, from_revision=created.mod_revision) as watch:
        events, ended = await events_until_compacted(watch, 1)
    assert [(e.kv, e.prev_kv) for e in events] in ([], [(updated, created)])  # never a prev_kv of None
    assert ended.compact_revision == updated.mod_revision


async def test_a_watch_from_the_compaction_mark_sees_a_delete_right_after_it(store: EtcdStore) -> None:
    kv = await store.put(P + "a", b"1")
    await store.compact(kv.mod_revision)
    async with await store.watch(P, from_revision=kv.mod_revision) as watch:
        _, deleted_at = await store.delete(P + "a")
        (deleted,) = await next_events(watch, 1)
    assert (deleted.type, deleted.kv.mod_revision, deleted.prev_kv) == (EventType.DELETE, deleted_at, kv)


async def test_a_replay_larger_than_a_message_arrives_whole_and_in_order(store: EtcdStore) -> None:
    before = await store.current_revision()
    big = b"x" * (600 * 1024)  # together more than etcd's 1.5 MiB: etcd sends the replay in fragments
    written = [await store.put(P + name, big + name.encode()) for name in ("a", "b", "c", "a")]
    async with await store.watch(P, from_revision=before) as watch:
        events = await next_events(watch, 4)
    assert [e.kv for e in events] == written
    assert [e.prev_kv for e in events] == [None, None, None, written[0]]


# -- watch messages as the JSON gateway sends them ------------------------------------------------
#
# Not every message shape can be timed from a test with a real etcd, so these tests script the watch
# stream (the gateway's JSON, one message a line) while every other request goes to the real etcd:
# that is where the store reads back what a message lacks.


def gateway_kv(store: EtcdStore, kv: KeyValue) -> dict[str, Any]:
    """``kv`` as the gateway writes it: base64 key and value, int64 as strings, zero fields left out."""
    data: dict[str, Any] = {"key": base64.b64encode((store.namespace + kv.key).encode()).decode()}
    for name in ("create_revision", "mod_revision", "version", "lease"):
        if getattr(kv, name):
            data[name] = str(getattr(kv, name))
    if kv.value:
        data["value"] = base64.b64encode(kv.value).decode()
    return data


def put_event(store: EtcdStore, kv: KeyValue, prev: KeyValue | None = None) -> dict[str, Any]:
    event = {"kv": gateway_kv(store, kv)}
    if prev is not None:
        event["prev_kv"] = gateway_kv(store, prev)
    return event


def delete_event(store: EtcdStore, key: str, revision: int) -> dict[str, Any]:
    return {"type": "DELETE", "kv": gateway_kv(store, KeyValue(key, b"", 0, revision, 0))}


def message(revision: int, **result: Any) -> dict[str, Any]:
    return {"result": {"header": {"revision": str(revision)}, **result}}


async def scripted_watch(
    store: EtcdStore,
    messages: list[dict[str, Any]],
    *,
    from_revision: int,
    end: bool = False,
    gate: asyncio.Event | None = None,
    requests: list[dict[str, Any]] | None = None,
) -> Watch:
    """A watch of ``P`` whose etcd stream is "created", then ``messages`` (once ``gate`` is set, if
    given); the stream then stays open, or ends. The watch request is appended to ``requests``."""
    requests = [] if requests is None else requests

    async def stream() -> AsyncIterator[bytes]:
        yield json.dumps(message(from_revision, created=True)).encode() + b"\n"
        if gate is not None:
            await gate.wait()
        for each in messages:
            yield json.dumps(each).encode() + b"\n"
        if not end:
            await asyncio.Event().wait()

    def handler(request: httpx.Request) -> httpx.Response:
        assert requests is not None
        requests.append(json.loads(request.content))
        return httpx.Response(200, content=stream())

    real = store._watch_client
    assert real is not None
    await real.aclose()
    store._watch_client = httpx.AsyncClient(base_url=store.endpoint, transport=httpx.MockTransport(handler))
    watch = await store.watch(P, from_revision=from_revision)
    (create,) = [r["create_request"] for r in requests]
    assert create["prev_kv"] is True
    return watch


async def test_an_event_without_its_previous_value_gets_it_from_etcd(store: EtcdStore) -> None:
    v1 = await store.put(P + "a", b"")  # an empty value: the gateway leaves "value" out
    v2 = await store.put(P + "a", b"2")
    v3 = await store.put(P + "a", b"")
    _, deleted_at = await store.delete(P + "a")
    events = [put_event(store, v2), put_event(store, v3), delete_event(store, P + "a", deleted_at)]
    messages = [message(deleted_at, events=events)]
    async with await scripted_watch(store, messages, from_revision=v1.mod_revision) as watch:
        got = await next_events(watch, 3)
    assert [(e.type, e.kv, e.prev_kv) for e in got] == [
        (EventType.PUT, v2, v1),
        (EventType.PUT, v3, v2),
        (EventType.DELETE, KeyValue(P + "a", b"", 0, deleted_at, 0), v3),
    ]
    assert v1.value == v3.value == b""


async def test_an_event_whose_previous_value_is_compacted_ends_the_watch_with_compacted(
    store: EtcdStore,
) -> None:
    created = await store.put(P + "a", b"1")
    other = await store.put(P + "b", b"1")
    updated = await store.put(P + "a", b"2")
    events = [put_event(store, other), put_event(store, updated)]  # etcd could not read updated's prev
    messages = [message(updated.mod_revision, events=events)]
    compacted = asyncio.Event()
    async with await scripted_watch(
        store, messages, from_revision=created.mod_revision, gate=compacted
    ) as watch:
        await store.compact(updated.mod_revision)  # after the watch was created, before etcd sent it
        compacted.set()
        delivered, ended = await events_until_compacted(watch, 2)
    assert [(e.kv, e.prev_kv) for e in delivered] == [(other, None)]  # the events before it are right
    assert (ended.revision, ended.compact_revision) == (other.mod_revision, updated.mod_revision)


async def test_events_of_the_start_revision_are_neither_delivered_nor_completed(store: EtcdStore) -> None:
    # The watch starts etcd at from_revision itself; etcd's events there (whose previous values may be
    # compacted) are history the caller already has.
    await store.put(P + "a", b"1")
    again = await store.put(P + "a", b"2")
    later = await store.put(P + "b", b"1")
    await store.compact(again.mod_revision)
    messages = [message(later.mod_revision, events=[put_event(store, again), put_event(store, later)])]
    requests: list[dict[str, Any]] = []
    async with await scripted_watch(
        store, messages, from_revision=again.mod_revision, requests=requests
    ) as watch:
        (event,) = await next_events(watch, 1)
    assert (event.kv, event.prev_kv) == (later, None)
    assert requests[0]["create_request"]["start_revision"] == str(again.mod_revision)


async def test_every_event_of_several_messages_and_fragments_is_delivered_in_order(store: EtcdStore) -> None:
    before = await store.current_revision()
    kvs = [await store.put(P + name, name.encode()) for name in ("a", "b", "c", "d", "e")]
    txn = await store.txn(Txn(success=(Put(P + "a", b"A"), Put(P + "f", b""))))
    messages = [
        message(kvs[1].mod_revision, events=[put_event(store, kv) for kv in kvs[:2]]),
        message(txn.revision, fragment=True, events=[put_event(store, kv) for kv in kvs[2:4]]),
        message(txn.revision, fragment=True, events=[put_event(store, kvs[4])]),
        message(txn.revision, events=[put_event(store, e.kv, e.prev_kv) for e in txn.events]),
    ]
    async with await scripted_watch(store, messages, from_revision=before) as watch:
        events = await next_events(watch, 7)
    assert [(e.kv, e.prev_kv) for e in events] == [(kv, None) for kv in kvs] + [
        (e.kv, e.prev_kv) for e in txn.events
    ]


async def test_etcd_cancelling_a_watch_for_compaction_ends_it_with_compacted(store: EtcdStore) -> None:
    before = await store.current_revision()
    kv = await store.put(P + "a", b"1")
    messages = [
        message(kv.mod_revision, events=[put_event(store, kv)]),
        {"result": {"header": {}, "canceled": True, "compact_revision": str(kv.mod_revision + 5)}},
    ]
    async with await scripted_watch(store, messages, from_revision=before) as watch:
        delivered, ended = await events_until_compacted(watch, 1)
    assert [e.kv for e in delivered] == [kv]
    assert (ended.revision, ended.compact_revision) == (kv.mod_revision, kv.mod_revision + 5)


async def test_a_watch_stream_that_ends_or_breaks_ends_the_watch_with_an_error(store: EtcdStore) -> None:
    before = await store.current_revision()
    kv = await store.put(P + "a", b"1")
    messages = [message(kv.mod_revision, events=[put_event(store, kv)])]
    async with await scripted_watch(store, messages, from_revision=before, end=True) as watch:
        (event,) = await next_events(watch, 1)
        with pytest.raises(BackendUnavailable, match="ended the watch stream"):
            async with asyncio.timeout(5):
                await anext(watch)
    assert event.kv == kv
    messages = [message(kv.mod_revision, events=[{"type": "PUT", "kv": "not a kv"}])]
    async with await scripted_watch(store, messages, from_revision=before) as watch:
        with pytest.raises(BackendUnavailable, match="malformed"):
            async with asyncio.timeout(5):
                await anext(watch)


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
