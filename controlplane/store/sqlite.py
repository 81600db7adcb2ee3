"""The SQLite backend: etcd's data model in one file per cluster, the embedded default.

Every version of every key is a row of one table, ``kv``, stamped with the revision that wrote it::

    revision | sub | key                      | create_revision | version | lease | value | prev_revision
    ---------+-----+--------------------------+-----------------+---------+-------+-------+--------------
          41 |   0 | /registry/pods/ns/web    |              41 |       1 |     0 | {...} |            0
          42 |   0 | /registry/pods/ns/web    |              41 |       2 |     0 | {...} |           41
          43 |   0 | /registry/pods/ns/web    |               0 |       0 |     0 |       |           42
                                                    (revision 43 is a tombstone: the pod was deleted)

Reading at revision R picks, per key, the newest row with ``revision <= R`` that is not a tombstone.
A watch from R replays the rows after R in revision order, then switches to live events.

**One writer path.** kine (k3s' etcd-on-SQL) famously hit "database is locked" under load on SQLite
(k3s #11269): several connections competed for SQLite's single write lock. Here exactly one thread
ever writes. Every write (transactions, compaction, leases) is a request on its queue; the thread takes
all requests waiting, applies them in one SQLite transaction, and commits once: **group commit**. Each
request still gets its own revision, and its caller is answered only after the commit is durable
(WAL with ``synchronous=FULL``: the WAL is fsynced before COMMIT returns). Readers use their own
connections; in WAL mode they read a consistent snapshot and never block the writer.

The bookkeeping (what a transaction writes, with which revisions) is the pure ``mvcc`` module; this
file only persists its decisions and tells the ``WatchHub`` about each commit.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import queue
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from controlplane.clock import SYSTEM_CLOCK, Clock
from controlplane.store import mvcc
from controlplane.store.compaction import Compactor, RetentionPolicy
from controlplane.store.errors import (
    BackendUnavailable,
    Compacted,
    FutureRevision,
    InvalidRequest,
    LeaseNotFound,
    StoreClosed,
    StoreError,
)
from controlplane.store.interface import Store
from controlplane.store.keyindex import KeyIndex, Version
from controlplane.store.kv import Delete, Event, EventType, KeyValue, Lease, RangeResult, Txn, TxnResult
from controlplane.store.watch import DEFAULT_WATCH_CAPACITY, Watch, WatchHub
from controlplane.tasks import cancel_and_wait
from controlplane.trace import NULL_SINK, TraceSink

T = TypeVar("T")

#: Reader threads (each with its own connection) per store. The API server's watch cache answers
#: nearly every read, so the store reads only what the cache cannot (a list continued from an old
#: revision, the etcd panel's history, a cache being filled); and every reader costs each cluster a
#: thread and a connection with its page cache (about 0.4 MB), whether it reads or not.
DEFAULT_READERS = 1

logger = logging.getLogger(__name__)

SCHEMA = """
CREATE TABLE IF NOT EXISTS kv (
    revision        INTEGER NOT NULL,
    sub             INTEGER NOT NULL,
    key             TEXT    NOT NULL,
    create_revision INTEGER NOT NULL,
    version         INTEGER NOT NULL,
    lease           INTEGER NOT NULL,
    value           BLOB    NOT NULL,
    prev_revision   INTEGER NOT NULL,
    PRIMARY KEY (revision, sub)
);
-- No index by key: which key has which revisions is kept in memory (keyindex.py), as etcd does.
DROP INDEX IF EXISTS kv_key_revision;
DROP INDEX IF EXISTS kv_lease;
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT OR IGNORE INTO meta (name, value) VALUES ('revision', 0), ('compact_revision', 0);
CREATE TABLE IF NOT EXISTS lease (id INTEGER PRIMARY KEY, ttl INTEGER NOT NULL, expires_at REAL NOT NULL);
"""

#: Rows of one watch-history page.
HISTORY_PAGE = 1000

_KV_COLUMNS = "key, create_revision, revision, version, lease, value"


def _kv(row: Sequence[Any]) -> KeyValue:
    key, create_revision, mod_revision, version, lease, value = row
    return KeyValue(key, bytes(value), create_revision, mod_revision, version, lease)


def _connect(path: Path, *, readonly: bool = False) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30.0)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    if readonly:
        conn.execute("PRAGMA query_only=ON")
    return conn


# -- the writer thread ---------------------------------------------------------------------------


def _has_other_work(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether callbacks are ready to run on ``loop``: then a commit inline would keep them waiting
    for the disk (an fsync), and the writer thread should wait for it instead.

    Reads the ready queue of CPython's ``BaseEventLoop`` (``_ready``); a loop without one counts
    as idle, and commits stay inline there as before.
    """
    ready = getattr(loop, "_ready", None)
    return bool(ready)


@dataclass(slots=True)
class _Request:
    """One write; ``apply`` runs inside the SQLite transaction of the group commit it joins.

    ``inline`` marks a short write (a transaction) that may be committed on the event loop's own
    thread when nothing else is in flight; compaction and lease expiry always go to the writer thread.
    """

    apply: Callable[[_Batch], Any]
    future: asyncio.Future[Any]
    inline: bool = False


@dataclass(slots=True)
class _Batch:
    """The state one group commit works on; it becomes the writer's state only if COMMIT succeeds.

    The current version of each key comes from the writer's in-memory ``index`` (etcd, too, keeps
    its key index in memory), overlaid with what earlier transactions of this batch ``written``.
    Rows are inserted with one statement per batch (``flush_rows``).
    """

    conn: sqlite3.Connection
    revision: int
    compact_revision: int
    leases: dict[int, Lease]
    index: dict[str, KeyValue]
    keyindex: KeyIndex
    events: list[Event] = field(default_factory=list)
    written: dict[str, KeyValue | None] = field(default_factory=dict)
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    #: New versions for the key index, and other changes to make once COMMIT has succeeded.
    versions: list[tuple[str, Version]] = field(default_factory=list)
    after_commit: list[Callable[[], object]] = field(default_factory=list)

    def read(self, key: str) -> KeyValue | None:
        if key in self.written:
            return self.written[key]
        return self.index.get(key)

    def commit_txn(self, txn: Txn) -> TxnResult:
        """Evaluate ``txn`` with the pure MVCC core and stage the rows it writes."""
        outcome = mvcc.evaluate(txn, self.read, self.revision + 1, self.leases.__contains__)
        if outcome.events:
            self.revision += 1
            for sub, e in enumerate(outcome.events):
                kv = e.kv
                self.rows.append(
                    (
                        kv.mod_revision,
                        sub,
                        kv.key,
                        kv.create_revision,
                        kv.version,
                        kv.lease,
                        kv.value,
                        e.prev_kv.mod_revision if e.prev_kv else 0,
                    )
                )
                self.written[kv.key] = kv if kv.version else None
                self.versions.append((kv.key, Version(kv.mod_revision, sub, kv.version)))
            self.events.extend(outcome.events)
        return TxnResult(outcome.succeeded, self.revision, outcome.responses, outcome.events)

    def flush_rows(self) -> None:
        """Insert the staged rows; anything that reads or deletes ``kv`` with SQL calls this first."""
        if self.rows:
            self.conn.executemany(
                "INSERT INTO kv (revision, sub, key, create_revision, version, lease, value, prev_revision)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                self.rows,
            )
            self.rows.clear()


Answer = tuple[asyncio.Future[Any], Any, BaseException | None]


class _Writer:
    """The one writer of a cluster's SQLite file: group commits, on its own thread or inline.

    Requests submitted during one turn of the event loop are committed together (``submit`` schedules
    one ``flush`` per turn). A flush hands its batch to the writer thread, so the loop keeps serving
    while SQLite waits for the disk; batches that pile up meanwhile are merged into the next commit.
    When a single short transaction arrives, nothing else is in flight and the loop has nothing else
    ready to run, the hop to the thread and back (about 80 µs here, as long as half an fsync) would
    dominate, so that one is committed inline on the loop's thread instead. (With other work ready,
    the loop goes on with it while the thread waits for the disk.) Commits are published in revision
    order either way: inline commits happen only while no threaded batch is queued, running or
    undelivered. Reads of one key now never wait for either: the ``index`` answers them.
    """

    def __init__(
        self,
        conn: sqlite3.Connection,
        loop: asyncio.AbstractEventLoop,
        max_batch: int,
        keyindex: KeyIndex,
        keyindex_lock: threading.Lock,
    ) -> None:
        self.conn = conn
        self.keyindex = keyindex
        self.keyindex_lock = keyindex_lock
        self.loop = loop
        self.max_batch = max_batch
        self.inline_commits = True
        self.queue: queue.SimpleQueue[list[_Request] | None] = queue.SimpleQueue()
        self.pending: list[_Request] = []
        self.in_flight = 0  # threaded batches not yet delivered; touched only on the loop's thread
        self.flush_scheduled = False
        meta = dict(conn.execute("SELECT name, value FROM meta").fetchall())
        # The revision is the newest row's; meta keeps it too for when compaction removes that row.
        newest = conn.execute("SELECT MAX(revision) FROM kv").fetchone()[0] or 0
        self.revision: int = max(meta["revision"], newest)
        self.compact_revision: int = meta["compact_revision"]
        self.leases: dict[int, Lease] = {
            row[0]: Lease(row[0], row[1], row[2])
            for row in conn.execute("SELECT id, ttl, expires_at FROM lease").fetchall()
        }
        latest = (
            "SELECT key, create_revision, MAX(revision) AS revision, version, lease, value"
            " FROM kv GROUP BY key"
        )
        self.index: dict[str, KeyValue] = {
            row[0]: _kv(row) for row in conn.execute(f"SELECT * FROM ({latest}) WHERE version > 0")
        }
        keyindex.load(conn.execute("SELECT key, revision, sub, version FROM kv ORDER BY revision, sub"))
        #: What the key index knows: readers take their "current revision" from here.
        self.indexed_revision = self.revision
        self.indexed_compact_revision = self.compact_revision
        self.on_commit: Callable[[list[Event], int, int], None] = lambda events, rev, compact: None
        self.thread = threading.Thread(target=self._run, name="store-writer", daemon=True)

    # -- on the event loop's thread --------------------------------------------------------------

    def submit(self, request: _Request) -> None:
        self.pending.append(request)
        if not self.flush_scheduled:
            self.flush_scheduled = True
            self.loop.call_soon(self.flush)

    def flush(self) -> None:
        self.flush_scheduled = False
        batch, self.pending = self.pending, []
        if not batch:
            return
        if (
            self.inline_commits
            and self.in_flight == 0
            and len(batch) == 1
            and batch[0].inline
            and not _has_other_work(self.loop)
        ):
            self._commit(batch)()
            return
        self.in_flight += 1
        self.queue.put(batch)

    def stop(self) -> None:
        self.flush()
        self.queue.put(None)

    # -- on the writer thread --------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            first = self.queue.get()
            if first is None:
                return
            batches, requests = 1, list(first)
            stop = False
            with contextlib.suppress(queue.Empty):
                while len(requests) < self.max_batch:
                    more = self.queue.get_nowait()
                    if more is None:
                        stop = True
                        break
                    batches += 1
                    requests.extend(more)
            deliver = self._commit(requests)

            def done(deliver: Callable[[], None] = deliver, batches: int = batches) -> None:
                self.in_flight -= batches
                deliver()

            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody is waiting any more
                self.loop.call_soon_threadsafe(done)
            if stop:
                return

    # -- on either -------------------------------------------------------------------------------

    def _commit(self, requests: list[_Request]) -> Callable[[], None]:
        """Apply ``requests`` in one SQLite transaction; returns what tells the loop about it."""
        state = _Batch(
            self.conn, self.revision, self.compact_revision, dict(self.leases), self.index, self.keyindex
        )
        answers: list[Answer] = []
        try:
            self.conn.execute("BEGIN IMMEDIATE")
            for request in requests:
                # Each request is evaluated completely before it stages rows, so a request that
                # fails (a lease that does not exist) leaves nothing behind and the others go on.
                try:
                    answers.append((request.future, request.apply(state), None))
                except StoreError as error:
                    answers.append((request.future, None, error))
            state.flush_rows()
            self.conn.execute("COMMIT")
        except Exception as error:  # SQLite failed (disk full, I/O error), or a bug: write nothing
            with contextlib.suppress(sqlite3.Error):
                self.conn.execute("ROLLBACK")
            if not isinstance(error, sqlite3.Error):
                logger.exception("a store write batch failed unexpectedly; it was rolled back")
            failure = BackendUnavailable(f"SQLite write failed, nothing was written: {error}")
            return self._answer([(r.future, None, failure) for r in requests], [], self.revision)
        self.revision = state.revision
        self.compact_revision = state.compact_revision
        self.leases = state.leases
        for key, kv in state.written.items():
            if kv is None:
                self.index.pop(key, None)
            else:
                self.index[key] = kv
        with self.keyindex_lock:
            for key, version in state.versions:
                self.keyindex.add(key, version)
            for change in state.after_commit:
                change()
            self.indexed_revision = state.revision
            self.indexed_compact_revision = state.compact_revision
        return self._answer(answers, state.events, state.revision)

    def _answer(self, answers: list[Answer], events: list[Event], revision: int) -> Callable[[], None]:
        compact_revision = self.compact_revision

        def deliver() -> None:
            # Watches first: when a writer hears "committed", watchers already have the event.
            self.on_commit(events, revision, compact_revision)
            for future, result, error in answers:
                if future.done():
                    continue
                if error is not None:
                    future.set_exception(error)
                else:
                    future.set_result(result)

        return deliver


# -- the store -------------------------------------------------------------------------------------


class SqliteStore(Store):
    """A cluster's store in one SQLite file (WAL, fsync on commit, one writer thread)."""

    backend = "sqlite"

    def __init__(
        self,
        cluster: str,
        *,
        path: Path,
        clock: Clock = SYSTEM_CLOCK,
        trace: TraceSink = NULL_SINK,
        retention: RetentionPolicy | None = None,
        watch_capacity: int = DEFAULT_WATCH_CAPACITY,
        readers: int = DEFAULT_READERS,
        max_batch: int = 512,
        lease_check_interval: float = 0.5,
    ) -> None:
        super().__init__(cluster, trace=trace, watch_capacity=watch_capacity)
        self.path = Path(path)
        self.clock = clock
        self.retention = retention
        self.lease_check_interval = lease_check_interval
        self._readers = readers
        self._max_batch = max_batch
        self._hub = WatchHub(trace=trace)
        self._writer: _Writer | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._local = threading.local()
        self._reader_conns: list[sqlite3.Connection] = []
        self._reader_lock = threading.Lock()
        self._keyindex = KeyIndex()
        self._keyindex_lock = threading.Lock()
        self._tasks: list[asyncio.Task[None]] = []
        self._revision = 0
        self._compact_revision = 0
        self._lease_expiry: dict[int, float] = {}
        self._lease_ids = itertools.count(1)
        self._closed = False

    # -- lifecycle -------------------------------------------------------------------------------

    async def start(self) -> None:
        if self._writer is not None:
            return
        if self._closed:
            raise StoreClosed()
        loop = asyncio.get_running_loop()
        try:
            conn = await asyncio.to_thread(self._open_writer_connection)
        except sqlite3.Error as error:
            raise BackendUnavailable(f"cannot open SQLite store {self.path}: {error}") from error
        # Loading the key index reads the whole log: off the event loop.
        writer = await asyncio.to_thread(
            _Writer, conn, loop, self._max_batch, self._keyindex, self._keyindex_lock
        )
        writer.on_commit = self._on_commit
        self._revision = writer.revision
        self._compact_revision = writer.compact_revision
        self._lease_expiry = {lease.id: lease.expires_at for lease in writer.leases.values()}
        self._lease_ids = itertools.count(max(writer.leases, default=0) + 1)
        self._executor = ThreadPoolExecutor(self._readers, thread_name_prefix=f"store-{self.cluster}-read")
        writer.thread.name = f"store-{self.cluster}-write"
        writer.thread.start()
        self._writer = writer
        self._tasks.append(asyncio.create_task(self._expire_leases(), name=f"store-{self.cluster}-leases"))
        if self.retention is not None and self.retention.interval > 0:
            self._tasks.append(asyncio.create_task(self._compact_periodically(self.retention)))

    def _open_writer_connection(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = _connect(self.path)
        conn.executescript(SCHEMA)
        return conn

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        await cancel_and_wait(*self._tasks)
        self._tasks.clear()
        self._hub.close(StoreClosed())
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.stop()
            await asyncio.to_thread(writer.thread.join)
            # Let the writer's last answers reach their callers before the loop moves on.
            await asyncio.sleep(0)
            with contextlib.suppress(sqlite3.Error):
                writer.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            writer.conn.close()
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None
        with self._reader_lock:
            for conn in self._reader_conns:
                conn.close()
            self._reader_conns.clear()

    # -- plumbing --------------------------------------------------------------------------------

    def _submit(self, apply: Callable[[_Batch], T], *, inline: bool = False) -> asyncio.Future[T]:
        if self._writer is None:
            raise StoreClosed()
        future: asyncio.Future[T] = self._writer.loop.create_future()
        self._writer.submit(_Request(apply, future, inline))
        return future

    def _on_commit(self, events: list[Event], revision: int, compact_revision: int) -> None:
        self._revision = revision
        self._compact_revision = compact_revision
        if events:
            self._hub.publish(events)

    def _reader(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = _connect(self.path, readonly=True)
            self._local.conn = conn
            with self._reader_lock:
                self._reader_conns.append(conn)
        return conn

    async def _read(self, query: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``query`` on a reader connection inside one snapshot (a read transaction)."""
        if self._executor is None:
            raise StoreClosed()

        def run() -> T:
            conn = self._reader()
            conn.execute("BEGIN")
            try:
                return query(conn)
            finally:
                conn.execute("COMMIT")

        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, run)
        except sqlite3.Error as error:
            raise BackendUnavailable(f"SQLite read failed: {error}") from error
        except RuntimeError as error:  # executor shut down under us
            raise StoreClosed() from error

    @staticmethod
    def _snapshot_meta(conn: sqlite3.Connection) -> tuple[int, int]:
        """The current revision and the compaction mark, as of the reader's snapshot."""
        revision, newest, compacted = conn.execute(
            "SELECT (SELECT value FROM meta WHERE name = 'revision'), (SELECT MAX(revision) FROM kv),"
            " (SELECT value FROM meta WHERE name = 'compact_revision')"
        ).fetchone()
        return max(revision, newest or 0), compacted

    # -- revisions -------------------------------------------------------------------------------

    async def current_revision(self) -> int:
        return self._revision

    async def compact_revision(self) -> int:
        return self._compact_revision

    async def _compact(self, revision: int) -> None:
        def apply(batch: _Batch) -> None:
            if revision > batch.revision:
                raise FutureRevision(revision, batch.revision)
            if revision <= batch.compact_revision:
                raise Compacted(revision, batch.compact_revision)
            batch.flush_rows()
            # Versions superseded by a newer one at or before the mark are unreachable from any
            # revision >= mark; so are tombstones at or before it. The key index says which rows
            # those are; it forgets them itself once the deletion has committed.
            with self._keyindex_lock:
                doomed = batch.keyindex.dropped(revision, batch.versions)
            batch.conn.executemany("DELETE FROM kv WHERE revision = ? AND sub = ?", doomed)
            batch.after_commit.append(lambda: batch.keyindex.compact(revision))
            batch.conn.executemany(
                "UPDATE meta SET value = ? WHERE name = ?",
                [(revision, "compact_revision"), (batch.revision, "revision")],
            )
            batch.compact_revision = revision

        await self._submit(apply)

    async def _compact_periodically(self, policy: RetentionPolicy) -> None:
        compactor = Compactor(policy)
        while True:
            compactor.observe(self.clock.now(), self._revision)
            target = compactor.target(self.clock.now(), self._revision, self._compact_revision)
            if target is not None:
                with contextlib.suppress(Compacted, FutureRevision):
                    await self.compact(target)
            await self.clock.sleep(policy.interval)

    # -- reads -----------------------------------------------------------------------------------

    async def _range(self, begin: str, end: str, *, revision: int | None, limit: int) -> RangeResult:
        writer = self._writer
        if revision is None and end == begin + "\0" and writer is not None:
            # One key, now: the writer's in-memory index holds every key's current version, as
            # etcd answers from its in-memory tree and memory-mapped pages, with no disk read. (A
            # read on a reader thread costs the loop two thread hops, which the API server's
            # read-modify-writes paid on every update.) The index changes only after a COMMIT
            # succeeded, so this sees every write that has been acknowledged, and no uncommitted one.
            kv = writer.index.get(begin)
            at = max(writer.indexed_revision, kv.mod_revision if kv is not None else 0)
            return RangeResult((kv,) if kv is not None else (), at, False, int(kv is not None))

        def query(conn: sqlite3.Connection) -> RangeResult:
            writer = self._writer
            if writer is None:
                raise StoreClosed()
            # Which versions: from the in-memory key index, as etcd's treeIndex answers it.
            with self._keyindex_lock:
                current, compacted = writer.indexed_revision, writer.indexed_compact_revision
                at = current if revision is None else revision
                mvcc.check_read_revision(at, current=current, compacted=compacted)
                found = list(self._keyindex.range(begin, end, at))
            more = limit > 0 and len(found) > limit
            wanted = found[:limit] if more else found
            # Their values: from the log, by revision. Every row read here was committed before the
            # index knew of it; one that is gone was compacted away after the index was consulted.
            rows: dict[tuple[int, int], tuple[Any, ...]] = {}
            for chunk in range(0, len(wanted), 400):
                part = wanted[chunk : chunk + 400]
                marks = ",".join("(?,?)" for _ in part)
                params = [x for _, v in part for x in (v.revision, v.sub)]
                for row in conn.execute(
                    "SELECT revision, sub, key, create_revision, version, lease, value FROM kv"
                    f" WHERE (revision, sub) IN (VALUES {marks})",
                    params,
                ):
                    rows[(row[0], row[1])] = row
            kvs = []
            for key, version in wanted:
                row = rows.get((version.revision, version.sub))
                if row is None:
                    raise Compacted(at, self._writer.indexed_compact_revision if self._writer else at)
                kvs.append(KeyValue(key, bytes(row[6]), row[3], row[0], row[4], row[5]))
            return RangeResult(tuple(kvs), at, more, len(found))

        return await self._read(query)

    # -- writes ----------------------------------------------------------------------------------

    async def _txn(self, txn: Txn) -> TxnResult:
        return await self._submit(lambda batch: batch.commit_txn(txn), inline=True)

    # -- watch -----------------------------------------------------------------------------------

    async def _watch(self, prefix: str, from_revision: int | None) -> Watch:
        if self._writer is None:
            raise StoreClosed()
        start = self._revision if from_revision is None else from_revision
        end = mvcc.prefix_end(prefix)

        async def read_history(after: int) -> tuple[int, AsyncIterator[Sequence[Event]]]:
            def snapshot(conn: sqlite3.Connection) -> int:
                current, compacted = self._snapshot_meta(conn)
                if after < compacted:
                    raise Compacted(after, compacted)
                return max(current, after)

            head = await self._read(snapshot)
            return head, self._history(prefix, end, after, head)

        return await self._hub.open(prefix, start, read_history, capacity=self.watch_capacity)

    async def _history(self, prefix: str, end: str, after: int, head: int) -> AsyncIterator[Sequence[Event]]:
        """Pages of the events under ``prefix`` in (after, head], each page read in one snapshot."""
        cursor = (after, 1 << 62)  # (revision, sub) of the last event delivered: all of ``after``

        def page(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
            _, compacted = self._snapshot_meta(conn)
            if cursor[0] < compacted:
                # Compaction ran while we replayed: rows we still need may be gone.
                raise Compacted(cursor[0], compacted)
            return conn.execute(
                "SELECT k.revision, k.sub, k.key, k.create_revision, k.version, k.lease, k.value,"
                " p.create_revision, p.revision, p.version, p.lease, p.value"
                " FROM kv AS k LEFT JOIN kv AS p ON p.key = k.key AND p.revision = k.prev_revision"
                " WHERE (k.revision > ?1 OR (k.revision = ?1 AND k.sub > ?2)) AND k.revision <= ?3"
                " AND k.key >= ?4 AND k.key < ?5 ORDER BY k.revision, k.sub LIMIT ?6",
                (cursor[0], cursor[1], head, prefix, end, HISTORY_PAGE),
            ).fetchall()

        # Stop as soon as everything up to ``head`` is delivered: one more read would check the
        # compaction mark again, and a compaction past ``head`` has removed nothing this watch still
        # owes (etcd keeps such a watch going, and so must we).
        if after >= head:
            return
        while True:
            rows = await self._read(page)
            if not rows:
                return
            cursor = (rows[-1][0], rows[-1][1])
            yield [self._history_event(row) for row in rows]
            if cursor[0] >= head and len(rows) < HISTORY_PAGE:
                return

    @staticmethod
    def _history_event(row: tuple[Any, ...]) -> Event:
        rev, _sub, key, create_rev, version, lease, value, *prev = row
        prev_kv = None
        if prev[1] is not None:
            prev_kv = KeyValue(key, bytes(prev[4]), prev[0], prev[1], prev[2], prev[3])
        if version == 0:
            return Event(EventType.DELETE, mvcc.tombstone(key, rev), prev_kv)
        return Event(EventType.PUT, KeyValue(key, bytes(value), create_rev, rev, version, lease), prev_kv)

    # -- leases ----------------------------------------------------------------------------------

    async def lease_grant(self, ttl: int) -> Lease:
        if ttl <= 0:
            raise InvalidRequest(f"lease TTL must be positive, got {ttl}")
        lease = Lease(next(self._lease_ids), ttl, self.clock.now() + ttl)

        def apply(batch: _Batch) -> Lease:
            batch.conn.execute(
                "INSERT INTO lease (id, ttl, expires_at) VALUES (?, ?, ?)", (lease.id, ttl, lease.expires_at)
            )
            batch.leases[lease.id] = lease
            return lease

        granted = await self._submit(apply)
        self._lease_expiry[granted.id] = granted.expires_at
        return granted

    async def lease_keepalive(self, lease_id: int) -> Lease:
        now = self.clock.now()

        def apply(batch: _Batch) -> Lease:
            lease = batch.leases.get(lease_id)
            if lease is None or lease.expires_at <= now:
                raise LeaseNotFound(lease_id)
            renewed = Lease(lease_id, lease.ttl, now + lease.ttl)
            batch.conn.execute("UPDATE lease SET expires_at = ? WHERE id = ?", (renewed.expires_at, lease_id))
            batch.leases[lease_id] = renewed
            return renewed

        renewed = await self._submit(apply)
        self._lease_expiry[lease_id] = renewed.expires_at
        return renewed

    async def lease_revoke(self, lease_id: int) -> int:
        result = await self._submit(lambda batch: self._revoke(batch, lease_id))
        self._revoked(lease_id, result)
        return result.revision

    def _revoked(self, lease_id: int, result: TxnResult) -> None:
        """After a revocation (by request or by expiry): forget the lease and trace its deletions."""
        self._lease_expiry.pop(lease_id, None)
        if self.trace.enabled:
            self._trace_txn(Txn(success=tuple(Delete(e.key) for e in result.events)), result, None)

    @staticmethod
    def _revoke(batch: _Batch, lease_id: int) -> TxnResult:
        """Delete the lease and, as one revision, every key still attached to it."""
        if lease_id not in batch.leases:
            raise LeaseNotFound(lease_id)
        attached = {key for key, kv in batch.index.items() if kv.lease == lease_id}
        for key, written in batch.written.items():  # earlier writes of this same batch
            if written is not None and written.lease == lease_id:
                attached.add(key)
            else:
                attached.discard(key)
        keys = sorted(attached)
        del batch.leases[lease_id]
        batch.conn.execute("DELETE FROM lease WHERE id = ?", (lease_id,))
        return batch.commit_txn(Txn(success=tuple(Delete(key) for key in keys)))

    async def _expire_leases(self) -> None:
        """Revoke leases whose TTL ran out on the cluster clock (etcd's lessor does the same)."""
        while True:
            await self.clock.sleep(self.lease_check_interval)
            now = self.clock.now()
            for lease_id in [i for i, at in self._lease_expiry.items() if at <= now]:

                def expire(batch: _Batch, lease_id: int = lease_id, now: float = now) -> TxnResult | None:
                    lease = batch.leases.get(lease_id)
                    if lease is None or lease.expires_at > now:
                        return None  # revoked meanwhile, or kept alive just in time
                    return self._revoke(batch, lease_id)

                with contextlib.suppress(StoreError):
                    result = await self._submit(expire)
                    if result is not None:
                        self._revoked(lease_id, result)


def read_latest(path: Path, prefix: str) -> list[KeyValue]:
    """The current value of every key under ``prefix`` in a store file, without opening the store.

    A read-only snapshot through a connection of its own (``mode=ro``): safe while another process
    serves the file, and it never writes. For tools that look at the raw values, such as
    ``manage.py encryption status`` counting which key encrypted what.
    """
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30.0)
    try:
        end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        latest = (
            "SELECT key, create_revision, MAX(revision) AS revision, version, lease, value"
            " FROM kv WHERE key >= ? AND key < ? GROUP BY key"
        )
        rows = conn.execute(f"SELECT * FROM ({latest}) WHERE version > 0 ORDER BY key", (prefix, end))
        return [_kv(row) for row in rows.fetchall()]
    finally:
        conn.close()
