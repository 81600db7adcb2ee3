"""What only the SQLite backend has to prove: it survives restarts, runs its own timers, and never
answers "database is locked"."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from controlplane.clock import ManualClock
from controlplane.store import EventType, KeyNotFound, LeaseNotFound
from controlplane.store.compaction import RetentionPolicy
from controlplane.store.sqlite import SqliteStore
from controlplane.trace import ListSink
from tests.support.stores import next_events

P = "/registry/pods/default/"


class AwaitableSink(ListSink):
    """A trace sink a test can await: ``await sink.next("store.compact")``."""

    def __init__(self) -> None:
        super().__init__()
        self._arrived = asyncio.Event()

    def emit(self, type: str, /, **fields: Any) -> None:
        super().emit(type, **fields)
        self._arrived.set()

    async def next(self, type: str, seconds: float = 5.0) -> dict[str, Any]:
        seen = len(self.of_type(type))
        async with asyncio.timeout(seconds):
            while len(self.of_type(type)) == seen:
                self._arrived.clear()
                await self._arrived.wait()
        return self.of_type(type)[-1]


async def test_a_restarted_store_has_every_acknowledged_write_and_its_marks(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite3"
    async with SqliteStore("c", path=path) as store:
        for i in range(10):
            await store.put(P + str(i), str(i).encode())
        await store.compact(5)
        lease = await store.lease_grant(600)
        await store.put(P + "leased", b"1", lease=lease.id)
        revision = await store.current_revision()
    async with SqliteStore("c", path=path) as store:
        assert await store.current_revision() == revision
        assert await store.compact_revision() == 5
        assert len((await store.range(P)).kvs) == 11
        await store.lease_revoke(lease.id)  # the lease survived the restart
        assert await store.get(P + "leased") is None
        second = await store.lease_grant(600)
        assert second.id != lease.id


async def test_an_expired_lease_deletes_its_keys_on_the_cluster_clock(tmp_path: Path) -> None:
    clock = ManualClock()
    async with SqliteStore("c", path=tmp_path / "s.db", clock=clock, lease_check_interval=1) as store:
        lease = await store.lease_grant(10)
        await store.put(P + "event-1", b"1", lease=lease.id)
        await store.put(P + "event-2", b"1", lease=lease.id)
        async with await store.watch(P) as watch:
            await clock.advance(5)
            await store.lease_keepalive(lease.id)  # now due at 15 s
            await clock.advance(9)
            assert await store.get(P + "event-1") is not None
            await clock.advance(2)
            events = await next_events(watch, 2)
        assert {e.type for e in events} == {EventType.DELETE}
        assert len({e.revision for e in events}) == 1
        with pytest.raises(LeaseNotFound):
            await store.lease_keepalive(lease.id)


async def test_automatic_compaction_keeps_min_revisions_and_min_age(tmp_path: Path) -> None:
    clock = ManualClock()
    policy = RetentionPolicy(min_revisions=5, min_age=60, interval=10)
    sink = AwaitableSink()
    async with SqliteStore("c", path=tmp_path / "s.db", clock=clock, retention=policy, trace=sink) as store:
        # The compactor saw revision 0 at t=0; these writes are first seen at t=10.
        for i in range(20):
            await store.put(P + "a", str(i).encode())
        for _ in range(6):
            await clock.advance(10)
        assert await store.compact_revision() == 0  # 60 s: revision 20 is not 60 s old yet
        await clock.advance(10)
        compaction = await sink.next("store.compact")
        assert compaction["revision"] == 15
        assert await store.compact_revision() == 15


async def test_readers_writers_and_compaction_together_never_see_a_lock_error(tmp_path: Path) -> None:
    async with SqliteStore("c", path=tmp_path / "s.db") as store:

        async def write(w: int) -> None:
            for i in range(60):
                kv = await store.put(f"{P}{w}-{i % 7}", b"x" * 200)
                if i % 10 == 0:
                    with contextlib.suppress(KeyNotFound):
                        await store.delete(kv.key)

        async def read() -> None:
            for _ in range(60):
                await store.range(P)

        async def compact() -> None:
            for _ in range(10):
                current = await store.current_revision()
                if current - 50 > await store.compact_revision():
                    await store.compact(current - 50)
                await asyncio.sleep(0.01)

        await asyncio.gather(*(write(w) for w in range(16)), *(read() for _ in range(4)), compact())
        assert await store.compact_revision() > 0


async def test_the_file_is_a_healthy_sqlite_database_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    async with SqliteStore("c", path=path) as store:
        await store.put(P + "a", b"1")
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()


async def test_a_failing_write_batch_writes_nothing_and_the_store_goes_on(tmp_path: Path) -> None:
    from controlplane.store import BackendUnavailable

    store = SqliteStore("c", path=tmp_path / "s.db")
    async with store:
        await store.put(P + "a", b"1")
        before = await store.current_revision()

        def explode(batch: object) -> None:
            raise RuntimeError("a bug in a write")

        with pytest.raises(BackendUnavailable):
            await store._submit(explode)
        assert await store.current_revision() == before
        kv = await store.put(P + "b", b"2")  # the writer is still alive
        assert kv.mod_revision == before + 1


async def test_a_get_of_one_key_now_is_answered_from_memory_and_sees_every_acknowledged_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with SqliteStore("c", path=tmp_path / "store.sqlite3") as store:
        first = await store.put(P + "web", b"1")
        await store.put(P + "web", b"2")
        await store.put(P + "gone", b"x")
        await store.delete(P + "gone")

        async def no_reader(query: Any) -> Any:
            raise AssertionError("a current single-key get went to a reader thread")

        monkeypatch.setattr(store, "_read", no_reader)
        kv = await store.get(P + "web")
        assert kv is not None and kv.value == b"2" and kv.version == 2
        assert kv.create_revision == first.mod_revision
        assert await store.get(P + "gone") is None, "a deleted key is not found"
        monkeypatch.undo()
        # An older revision still reads the log.
        old = await store.get(P + "web", revision=first.mod_revision)
        assert old is not None and old.value == b"1"


async def test_a_lone_write_commits_on_the_loop_only_while_the_loop_has_nothing_else_to_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with SqliteStore("c", path=tmp_path / "store.sqlite3") as store:
        assert isinstance(store, SqliteStore)
        writer = store._writer
        assert writer is not None
        threads: list[str] = []
        commit = writer._commit

        def recording(requests: Any) -> Any:
            threads.append(threading.current_thread().name)
            return commit(requests)

        monkeypatch.setattr(writer, "_commit", recording)
        await store.put(P + "idle", b"1")
        assert threads == [threading.current_thread().name], "an idle loop commits inline"
        loop = asyncio.get_running_loop()
        loop.call_soon(loop.call_soon, lambda: None)  # other work is ready when the commit comes
        await store.put(P + "busy", b"1")
        assert threads[1] == writer.thread.name, "a busy loop leaves the fsync to the writer thread"
        assert (await store.get(P + "busy")) is not None
