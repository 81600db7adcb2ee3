"""What only the PostgreSQL backend has to prove: several processes share one cluster (gapless
revisions in commit order, each one's watches see the others' writes), watches wake on NOTIFY, clusters
sharing a database stay apart, and a lost connection is a typed error that heals.

Two ``PostgresStore`` instances on the same cluster and schema stand for two processes: each has its
own writer, listener and connections, exactly as separate processes would.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from controlplane.clock import ManualClock
from controlplane.store import (
    BackendUnavailable,
    Compacted,
    Compare,
    Delete,
    EventType,
    Get,
    KeyNotFound,
    LeaseNotFound,
    Put,
    RevisionMismatch,
    StoreClosed,
    Txn,
)
from controlplane.store.compaction import RetentionPolicy
from controlplane.store.postgres import PostgresStore
from tests.controlplane.store.test_sqlite import AwaitableSink
from tests.support.postgres import connect, fresh_schema, make_store
from tests.support.services import POSTGRES_DSN, free_port
from tests.support.stores import next_events

pytestmark = pytest.mark.postgres

P = "/registry/pods/default/"


@contextlib.asynccontextmanager
async def two_processes(
    cluster: str = "shared", **options: Any
) -> AsyncIterator[tuple[PostgresStore, PostgresStore]]:
    """Two stores on one cluster of one schema, as two processes of a scaled-out lab would be."""
    async with (
        fresh_schema() as schema,
        make_store(cluster, schema=schema, **options) as a,
        make_store(cluster, schema=schema, **options) as b,
    ):
        yield a, b


@contextlib.asynccontextmanager
async def raw_connection() -> AsyncIterator[psycopg.AsyncConnection[Any]]:
    conn = await connect()
    try:
        yield conn
    finally:
        await conn.close()


# -- several processes, one cluster ----------------------------------------------------------------


async def test_two_processes_interleaving_writes_get_gapless_revisions_and_see_each_other() -> None:
    async with two_processes() as (a, b):
        start = await a.current_revision()
        assert await b.current_revision() == start
        watch_a = await a.watch(P, from_revision=start)
        watch_b = await b.watch(P, from_revision=start)

        async def writer(store: PostgresStore, name: str) -> list[int]:
            revisions = []
            for i in range(30):
                kv = await store.put(f"{P}{name}-{i % 4}", f"{name}{i}".encode())
                revisions.append(kv.mod_revision)
                # Writes that take no revision, interleaved: they must not leave a gap either.
                await store.txn(Txn(success=(Delete(P + "never-there"),)))
                with pytest.raises(RevisionMismatch):
                    await store.update(f"{P}{name}-{i % 4}", b"stale", expected_mod_revision=10**9)
            return revisions

        results = await asyncio.gather(
            writer(a, "a1"), writer(a, "a2"), writer(b, "b1"), writer(b, "b2"), writer(b, "b3")
        )
        revisions = sorted(r for rs in results for r in rs)
        assert revisions == list(range(start + 1, start + 151))
        assert await a.current_revision() == await b.current_revision() == start + 150

        seen_a = await next_events(watch_a, 150)
        seen_b = await next_events(watch_b, 150)
        assert [e.revision for e in seen_a] == list(range(start + 1, start + 151))
        assert [(e.type, e.kv, e.prev_kv) for e in seen_a] == [(e.type, e.kv, e.prev_kv) for e in seen_b]
        # Each writer's own puts appear in its order, and every event carries the version it replaced.
        for name in ("a1", "b3"):
            mine = [e.kv.value.decode() for e in seen_a if e.key.startswith(f"{P}{name}-")]
            assert mine == [f"{name}{i}" for i in range(30)]
        for event in seen_a:
            if event.kv.version > 1:
                assert event.prev_kv is not None and event.prev_kv.version == event.kv.version - 1
        await watch_a.close()
        await watch_b.close()


async def test_optimistic_concurrency_holds_across_processes() -> None:
    async with two_processes() as (a, b):
        kv = await a.create(P + "x", b"0")
        results = await asyncio.gather(
            *(
                store.update(P + "x", str(i).encode(), expected_mod_revision=kv.mod_revision)
                for i, store in enumerate([a, b] * 8)
            ),
            return_exceptions=True,
        )
        winners = [r for r in results if not isinstance(r, BaseException)]
        assert len(winners) == 1
        assert all(isinstance(r, RevisionMismatch) for r in results if isinstance(r, BaseException))
        assert await b.get(P + "x") == winners[0]


async def test_a_write_from_another_connection_through_the_txn_function_wakes_the_watch() -> None:
    async with make_store("c") as store, raw_connection() as conn:
        async with await store.watch(P) as watch:
            # What any other process's store sends for a put: one call of the cluster's txn function.
            query = sql.SQL("SELECT * FROM {}.txn1(%s, %s, '', '', 0, 'P', %s, 0, '')").format(
                sql.Identifier(store.schema)
            )
            cur = await conn.execute(query, ("c", (P + "outside").encode(), b"hello"))
            row = await cur.fetchone()
            assert row is not None
            succeeded, revision = row[0], row[1]
            assert succeeded
            (event,) = await next_events(watch, 1)
        assert (event.type, event.key, event.kv.value, event.revision) == (
            EventType.PUT,
            P + "outside",
            b"hello",
            revision,
        )
        assert (await store.get(P + "outside")) == event.kv


async def test_watches_wake_on_notify_and_never_poll() -> None:
    async with make_store("c") as store, raw_connection() as conn:
        async with await store.watch(P) as watch:
            first = await store.put(P + "a", b"1")
            assert (await next_events(watch, 1))[0].kv == first  # the watch is live
            # A commit that sends no notification: a polling listener would find it, ours must not.
            schema = sql.Identifier(store.schema)
            async with conn.transaction():
                await conn.execute(
                    sql.SQL("UPDATE {}.revisions SET revision = revision + 1 WHERE cluster = 'c'").format(
                        schema
                    )
                )
                await conn.execute(
                    sql.SQL(
                        "INSERT INTO {}.kv (cluster, key, revision, sub, create_revision, version, lease,"
                        " value, prev_revision) VALUES ('c', %s, %s, 0, %s, 1, 0, 'quiet', 0)"
                    ).format(schema),
                    ((P + "quiet").encode(), first.mod_revision + 1, first.mod_revision + 1),
                )
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.5):
                    await anext(watch)
            # The notification alone wakes the listener, which then reads the rows it missed.
            await conn.execute("SELECT pg_notify(%s, %s)", (store._channel, str(first.mod_revision + 1)))
            (event,) = await next_events(watch, 1)
        assert (event.key, event.revision, event.kv.value) == (P + "quiet", first.mod_revision + 1, b"quiet")


async def test_an_uncommitted_write_is_invisible_until_commit() -> None:
    async with make_store("c") as store, raw_connection() as conn:
        async with await store.watch(P) as watch:
            query = sql.SQL("SELECT * FROM {}.txn1('c', %s, '', '', 0, 'P', 'v', 0, '')").format(
                sql.Identifier(store.schema)
            )
            await conn.execute("BEGIN")
            await conn.execute(query, ((P + "pending").encode(),))
            assert await store.get(P + "pending") is None
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.3):
                    await anext(watch)
            await conn.execute("COMMIT")
            (event,) = await next_events(watch, 1)
        assert event.key == P + "pending"


async def test_compaction_by_one_process_is_seen_by_the_other() -> None:
    async with two_processes() as (a, b):
        v1 = await a.put(P + "k", b"1")
        v2 = await b.put(P + "k", b"2")
        await a.put(P + "k", b"3")
        await a.compact(v2.mod_revision)
        assert await b.compact_revision() == v2.mod_revision
        with pytest.raises(Compacted):
            await b.get(P + "k", revision=v1.mod_revision)
        assert (await b.get(P + "k", revision=v2.mod_revision)) == v2
        with pytest.raises(Compacted):
            await b.watch(P, from_revision=v1.mod_revision)
        with pytest.raises(Compacted):
            await b.compact(v2.mod_revision)


# -- leases across processes ------------------------------------------------------------------------


async def test_a_lease_granted_in_one_process_is_revoked_from_the_other_in_one_revision() -> None:
    async with two_processes() as (a, b):
        lease = await a.lease_grant(60)
        await b.put(P + "x", b"1", lease=lease.id)
        await a.put(P + "y", b"1", lease=lease.id)
        async with await a.watch(P) as watch:
            revision = await b.lease_revoke(lease.id)
            events = await next_events(watch, 2)
        assert {(e.type, e.key, e.revision) for e in events} == {
            (EventType.DELETE, P + "x", revision),
            (EventType.DELETE, P + "y", revision),
        }
        assert all(e.prev_kv is not None and e.prev_kv.lease == lease.id for e in events)
        assert await a.current_revision() == revision


async def test_an_expired_lease_deletes_its_keys_in_one_revision_on_the_cluster_clock() -> None:
    clock = ManualClock()
    async with two_processes(clock=clock, lease_check_interval=1) as (a, b):
        lease = await a.lease_grant(10)
        await a.put(P + "one", b"1", lease=lease.id)
        await b.put(P + "two", b"1", lease=lease.id)
        before = await a.current_revision()
        async with await b.watch(P) as watch:
            await clock.advance(5)
            await b.lease_keepalive(lease.id)  # now due at 15 s
            await clock.advance(9)
            assert await a.get(P + "one") is not None
            await clock.advance(2)
            events = await next_events(watch, 2)
        assert {(e.type, e.key) for e in events} == {
            (EventType.DELETE, P + "one"),
            (EventType.DELETE, P + "two"),
        }
        assert {e.revision for e in events} == {before + 1}
        with pytest.raises(LeaseNotFound):
            await a.lease_keepalive(lease.id)


async def test_when_two_processes_expire_the_same_lease_only_one_revokes_it() -> None:
    clock = ManualClock()
    # Expiry tasks that never run on their own (an hour between looks): the race is staged below.
    async with two_processes(clock=clock, lease_check_interval=3600) as (a, b):
        lease = await a.lease_grant(10)
        await a.put(P + "one", b"1", lease=lease.id)
        before = await a.current_revision()
        now = clock.now() + 11
        outcomes = await asyncio.gather(*(store._revoke(lease.id, now) for store in (a, b, a, b)))
        assert sorted(outcomes, key=str) == [before + 1, None, None, None]
        assert await b.current_revision() == before + 1
        assert await b.get(P + "one") is None


# -- clusters sharing a database --------------------------------------------------------------------


async def test_clusters_sharing_a_schema_keep_their_own_keys_revisions_and_watches() -> None:
    async with (
        fresh_schema() as schema,
        make_store("red", schema=schema) as red,
        make_store("blue", schema=schema) as blue,
    ):
        async with await blue.watch(P) as blue_watch:
            for i in range(3):
                await red.put(P + f"r{i}", b"red")
            mine = await blue.put(P + "b", b"blue")
            (event,) = await next_events(blue_watch, 1)
        assert event.kv == mine
        assert mine.mod_revision == 1
        assert await red.current_revision() == 3
        assert [kv.key for kv in (await red.range(P)).kvs] == [P + "r0", P + "r1", P + "r2"]
        assert [kv.key for kv in (await blue.range(P)).kvs] == [P + "b"]
        await red.compact(3)
        assert await blue.compact_revision() == 0
        assert (await blue.get(P + "b", revision=1)) == mine


async def test_keys_sort_by_code_point_like_python_strings() -> None:
    keys = [P + name for name in ("z", "é", "a", "\U0001f600", "A", "a\u00e9", "ab", "\x7f")]
    async with make_store("c") as store:
        for key in keys:
            await store.put(key, key.encode())
        listed = await store.range(P)
        assert [kv.key for kv in listed.kvs] == sorted(keys)
        assert [kv.value for kv in listed.kvs] == [k.encode() for k in sorted(keys)]
        page = await store.range(P, start=sorted(keys)[2] + "\0", limit=2)
        assert [kv.key for kv in page.kvs] == sorted(keys)[3:5]
        assert (page.more, page.count) == (True, len(keys) - 3)


# -- transactions and group commit ------------------------------------------------------------------


async def test_general_transactions_and_the_one_key_fast_path_agree() -> None:
    async with make_store("c") as store:
        created = await store.create(P + "a", b"1")  # the one-key path
        result = await store.txn(  # the general path: two compares, several keys
            Txn(
                compares=(Compare.unchanged(P + "a", created.mod_revision), Compare.absent(P + "b")),
                success=(Put(P + "b", b"2"), Get(P + "a"), Delete(P + "a"), Get(P + "a")),
                failure=(Get(P + "b"),),
            )
        )
        assert result.succeeded
        assert [type(r).__name__ for r in result.responses] == [
            "PutResponse",
            "GetResponse",
            "DeleteResponse",
            "GetResponse",
        ]
        assert result.responses[1].kv == created  # type: ignore[union-attr]
        assert result.responses[3].kv is None  # type: ignore[union-attr]
        assert [(e.type, e.key) for e in result.events] == [
            (EventType.PUT, P + "b"),
            (EventType.DELETE, P + "a"),
        ]
        again = await store.txn(
            Txn(compares=(Compare.absent(P + "b"),), success=(Put(P + "c", b"3"),), failure=(Get(P + "b"),))
        )
        assert not again.succeeded and again.revision == result.revision
        assert again.responses[0].kv == result.events[0].kv  # type: ignore[union-attr]
        with pytest.raises(KeyNotFound):
            await store.delete(P + "a")


async def test_concurrent_writers_of_one_process_share_commits() -> None:
    async with make_store("c") as store:
        batches: list[int] = []
        commit = store._commit

        async def recording_commit(conn: Any, batch: list[Any]) -> None:
            batches.append(len(batch))
            await commit(conn, batch)

        store._commit = recording_commit  # type: ignore[method-assign]
        start = await store.current_revision()
        kvs = await asyncio.gather(*(store.put(f"{P}{i}", b"x") for i in range(100)))
        assert sorted(kv.mod_revision for kv in kvs) == list(range(start + 1, start + 101))
        assert sum(batches) == 100
        assert max(batches) > 1  # several callers answered by one COMMIT


async def test_a_failing_statement_in_a_group_commit_fails_alone() -> None:
    async with make_store("c") as store:

        def handle(row: Any) -> tuple[Any, tuple[()]]:
            return row, ()

        results = await asyncio.gather(
            *(store.put(f"{P}{i}", b"x") for i in range(10)),
            store._write("SELECT 1 / 0", (), handle),
            *(store.put(f"{P}{i}", b"y") for i in range(10, 20)),
            return_exceptions=True,
        )
        assert isinstance(results[10], BackendUnavailable)
        assert all(not isinstance(r, BaseException) for i, r in enumerate(results) if i != 10)
        assert (await store.range(P)).count == 20


# -- failures ---------------------------------------------------------------------------------------


async def test_an_unreachable_server_is_backend_unavailable() -> None:
    store = PostgresStore("c", dsn=f"postgresql://postgres@127.0.0.1:{free_port()}/test", connect_timeout=1)
    with pytest.raises(BackendUnavailable):
        await store.start()
    await store.close()
    with pytest.raises(StoreClosed):
        await store.put(P + "a", b"1")


class Proxy:
    """A TCP forwarder to the test server that a test can cut and restore, like a network failure."""

    def __init__(self) -> None:
        info = conninfo_to_dict(POSTGRES_DSN)
        self._target = (str(info.get("host") or "127.0.0.1"), int(str(info.get("port") or 5432)))
        self.port = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    @property
    def dsn(self) -> str:
        return make_conninfo(POSTGRES_DSN, host="127.0.0.1", port=self.port)

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._forward, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def cut(self) -> None:
        """Stop accepting and close every forwarded connection."""
        assert self._server is not None
        self._server.close()
        for writer in list(self._writers):
            writer.close()
        self._writers.clear()

    async def _forward(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        server_r, server_w = await asyncio.open_connection(*self._target)
        self._writers |= {client_w, server_w}

        async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            with contextlib.suppress(ConnectionError, OSError):
                while data := await reader.read(65536):
                    writer.write(data)
                    await writer.drain()
            writer.close()

        await asyncio.gather(pipe(client_r, server_w), pipe(server_r, client_w))


async def test_a_lost_database_is_backend_unavailable_and_the_store_heals() -> None:
    proxy = Proxy()
    await proxy.start()
    async with (
        fresh_schema() as schema,
        make_store("c", schema=schema, dsn=proxy.dsn, connect_timeout=1) as store,
        make_store("c", schema=schema) as other,
    ):
        watch = await store.watch(P)
        first = await store.put(P + "a", b"1")
        assert (await next_events(watch, 1))[0].kv == first
        await proxy.cut()
        with pytest.raises(BackendUnavailable):
            await store.put(P + "b", b"1")
        with pytest.raises(BackendUnavailable):
            await store.get(P + "a")
        meanwhile = await other.put(P + "c", b"1")  # committed while this store is cut off
        await proxy.start()
        healed = await store.put(P + "d", b"1")
        events = await next_events(watch, 2)
        assert [e.kv for e in events] == [meanwhile, healed]
        assert await other.get(P + "b") is None  # the failed write wrote nothing
        await watch.close()


async def test_the_connection_reopens_and_catches_up_on_commits_it_missed() -> None:
    async with two_processes() as (a, b), raw_connection() as admin, await a.watch(P) as watch:
        assert a._conn is not None
        await admin.execute("SELECT pg_terminate_backend(%s)", (a._conn.info.backend_pid,))
        written = [await b.put(f"{P}{i}", str(i).encode()) for i in range(5)]
        events = await next_events(watch, 5, seconds=10)
        assert [e.kv for e in events] == written
        mine = await a.put(P + "mine", b"1")  # and it writes again
        assert (await next_events(watch, 1))[0].kv == mine


async def test_automatic_compaction_keeps_min_revisions_and_min_age() -> None:
    clock = ManualClock()
    policy = RetentionPolicy(min_revisions=5, min_age=60, interval=10)
    sink = AwaitableSink()
    async with make_store("c", clock=clock, retention=policy, trace=sink) as store:
        # The compactor saw revision 0 at t=0; these writes are first seen at t=10.
        for i in range(20):
            await store.put(P + "a", str(i).encode())
        for _ in range(6):
            await clock.advance(10)
        # The compactor reads the marks from the database, so give a wrong early compaction time to land.
        await asyncio.sleep(0.2)
        assert not sink.of_type("store.compact")  # 60 s: revision 20 is not 60 s old yet
        await clock.advance(10)
        compaction = await sink.next("store.compact")
        assert compaction["revision"] == 15
        assert await store.compact_revision() == 15
        with pytest.raises(Compacted):
            await store.get(P + "a", revision=14)


async def test_a_restarted_store_finds_its_cluster_as_it_was() -> None:
    async with fresh_schema() as schema:
        async with PostgresStore("c", dsn=POSTGRES_DSN, schema=schema) as store:
            kv = await store.put(P + "a", b"1")
            await store.compact(kv.mod_revision)
        async with PostgresStore("c", dsn=POSTGRES_DSN, schema=schema) as store:
            assert await store.current_revision() == kv.mod_revision
            assert await store.compact_revision() == kv.mod_revision
            assert await store.get(P + "a") == kv
