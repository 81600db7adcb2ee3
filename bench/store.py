"""The cluster store: durable commit throughput, watch latency, and a churn run with compaction.

What is measured, and why (the store is the bottom of the control plane: every object write is one
durable commit, every component learns of it through a watch):

``sqlite.single_writer.commits_per_s``
    One writer calling ``store.put`` back to back on SqliteStore, against a raw ``sqlite3`` loop with
    the same durability (WAL, ``synchronous=FULL``, one row per commit, a fresh file in the same temp
    directory). The store adds MVCC bookkeeping, a writer thread and an asyncio hop per commit; the
    target bounds that overhead: ``>= 0.7`` of raw.
``sqlite.writers_64.commits_per_s``
    64 concurrent writers; the baseline is the raw *single-row* rate, so the ratio shows what group
    commit buys (many callers answered by one fsync): ``>= 5``.
``sqlite.watch_latency.p50_ms`` / ``.p99_ms``
    1000 watchers on one prefix while one writer commits 20 writes/s. Latency is from just before the
    ``put`` call (submit) to the moment a watcher's ``async for`` yields the event, so it includes the
    durable commit itself and the fan-out to all 1000 watchers; p99 ``<= 50`` ms.
    ``.ack_p50_ms`` / ``.ack_p99_ms`` report the same deliveries measured from the moment ``put``
    returned (commit acknowledged); negative values mean the watcher had the event before the writer
    saw its acknowledgement (the store publishes to watches first).
``postgres.single_writer.commits_per_s`` / ``postgres.writers_64.commits_per_s``
    The same commit figures on PostgresStore, against a raw psycopg autocommit ``INSERT`` loop into a
    regular (logged) table: a ``TEMP`` table would skip the WAL flush at commit and not be the same
    durability. Single writer ``>= 0.6`` of raw; the 64-writer figure is reported against the same raw
    single-row rate for information (it has no target).
``sqlite.churn.lock_errors`` / ``sqlite.churn.commits``
    A run (10 minutes by default, ``--churn-seconds``) of concurrent writers creating, updating and
    deleting keys (with optimistic-concurrency conflicts on shared keys), multi-key transactions,
    leases that expire, readers at old revisions, watchers that stop and resume from their last
    revision, automatic compaction with a small retention policy and explicit ``compact`` calls.
    Every exception that is not the store's documented answer to the request (``KeyExists``,
    ``RevisionMismatch``, ``Compacted``...) counts as a lock error: ``== 0``.

Raw and store rounds alternate (best of ``--rounds``), each on a fresh database, so disk noise hits
both alike. When PostgreSQL is unreachable its lines say so (``"met": false`` and an ``"error"``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import logging
import os
import random
import secrets
import sqlite3
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.report import Reporter
from bench.stats import summarize
from bench.timing import Deadline, alternate, rate_for
from controlplane.store.compaction import RetentionPolicy
from controlplane.store.errors import (
    Compacted,
    KeyExists,
    KeyNotFound,
    LeaseNotFound,
    RevisionMismatch,
    StoreError,
    WatcherTooSlow,
)
from controlplane.store.interface import Store
from controlplane.store.kv import Delete, Put, Txn
from controlplane.store.watch import Watch

DEFAULT_DSN = "postgresql://postgres@127.0.0.1:5432/test"

#: The value every benchmark write carries: about the size of a small Kubernetes object.
VALUE = (b'{"kind":"Pod","apiVersion":"v1","metadata":{"name":"bench"},"spec":' + b"x" * 1024)[:1024]

BACKENDS = ("sqlite", "postgres")


@dataclass(frozen=True, slots=True)
class Settings:
    """How big a run is; ``--quick`` shrinks durations, never the shape of a measurement."""

    duration: float
    rounds: int
    writers: int
    watchers: int
    watch_seconds: float
    write_rate: float
    churn_seconds: float
    churn_backends: tuple[str, ...]
    dsn: str
    directory: Path | None

    @classmethod
    def from_options(cls, options: argparse.Namespace) -> Settings:
        quick = bool(options.quick)
        return cls(
            duration=options.duration if options.duration is not None else (1.0 if quick else 3.0),
            rounds=options.rounds if options.rounds is not None else (3 if quick else 5),
            writers=options.writers,
            watchers=options.watchers,
            watch_seconds=(
                options.watch_seconds if options.watch_seconds is not None else (3.0 if quick else 15.0)
            ),
            write_rate=options.write_rate,
            churn_seconds=(
                options.churn_seconds if options.churn_seconds is not None else (25.0 if quick else 600.0)
            ),
            churn_backends=tuple(b for b in options.churn_backend.split(",") if b),
            dsn=options.dsn,
            directory=options.dir,
        )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("store")
    group.add_argument("--duration", type=float, help="seconds per throughput round (3; --quick 1)")
    group.add_argument("--rounds", type=int, help="alternating raw/store rounds, best kept (5; --quick 3)")
    group.add_argument("--writers", type=int, default=64, help="concurrent writers (64)")
    group.add_argument("--watchers", type=int, default=1000, help="watchers on one prefix (1000)")
    group.add_argument("--watch-seconds", type=float, help="length of the watch-latency run (15; --quick 3)")
    group.add_argument("--write-rate", type=float, default=20.0, help="writes/s during the watch run (20)")
    group.add_argument("--churn-seconds", type=float, help="length of the churn run (600; --quick 25)")
    group.add_argument(
        "--churn-backend",
        default="sqlite",
        help="backends to churn, comma-separated: sqlite, postgres (sqlite)",
    )
    group.add_argument(
        "--dsn",
        default=os.environ.get(
            "KUBELAB_BENCH_POSTGRES", os.environ.get("KUBELAB_TEST_POSTGRES", DEFAULT_DSN)
        ),
        help=f"PostgreSQL to measure ({DEFAULT_DSN}; env KUBELAB_BENCH_POSTGRES)",
    )
    group.add_argument("--dir", type=Path, help="where temporary SQLite files go (the system temp dir)")


async def run(options: argparse.Namespace, reporter: Reporter) -> None:
    settings = Settings.from_options(options)
    for backend in BACKENDS:
        parts = (
            ("single_writer", "writers_64", "watch_latency")
            if backend == "sqlite"
            else ("single_writer", "writers_64")
        )
        if not any(reporter.wants(f"{backend}.{part}") for part in parts):
            continue
        problem = backend_problem(backend, settings)
        if problem is not None:
            report_unavailable(reporter, backend, settings, problem)
            continue
        if reporter.wants(f"{backend}.single_writer"):
            await measure_single_writer(reporter, backend, settings)
        if reporter.wants(f"{backend}.writers_64"):
            await measure_concurrent_writers(reporter, backend, settings)
        if backend == "sqlite" and reporter.wants(f"{backend}.watch_latency"):
            await measure_watch_latency(reporter, backend, settings)
    for backend in settings.churn_backends:
        if reporter.wants(f"{backend}.churn"):
            problem = backend_problem(backend, settings)
            if problem is not None:
                reporter.error(f"{backend}.churn.lock_errors", "errors", problem, target="== 0")
                continue
            await measure_churn(reporter, backend, settings)


# -- backends --------------------------------------------------------------------------------------


def backend_problem(backend: str, settings: Settings) -> str | None:
    """Why ``backend`` cannot be measured here, or None."""
    if backend == "sqlite":
        try:
            importlib.import_module("controlplane.store.sqlite")
        except ImportError as error:
            return f"SqliteStore is not available: {error}"
        return None
    if backend == "postgres":
        try:
            import psycopg

            importlib.import_module("controlplane.store.postgres")
        except ImportError as error:
            return f"PostgresStore is not available: {error}"
        try:
            with psycopg.connect(settings.dsn, connect_timeout=3) as conn:
                conn.execute("SELECT 1")
        except psycopg.Error as error:
            return f"PostgreSQL at {settings.dsn} is unreachable: {error}".strip()
        return None
    return f"unknown backend {backend!r}"


def report_unavailable(reporter: Reporter, backend: str, settings: Settings, problem: str) -> None:
    reporter.error(
        f"{backend}.single_writer.commits_per_s", "commits/s", problem, target=_single_target(backend)
    )
    reporter.error(
        f"{backend}.writers_64.commits_per_s",
        "commits/s",
        problem,
        target=">= 5" if backend == "sqlite" else None,
    )
    if backend == "sqlite":
        reporter.error(f"{backend}.watch_latency.p50_ms", "ms", problem)
        reporter.error(f"{backend}.watch_latency.p99_ms", "ms", problem, target="<= 50")


def _single_target(backend: str) -> str:
    return ">= 0.7" if backend == "sqlite" else ">= 0.6"


@contextlib.contextmanager
def temp_dir(settings: Settings) -> Iterator[Path]:
    """A fresh directory in the same place for raw and store rounds alike."""
    with tempfile.TemporaryDirectory(prefix="kubelab-bench-", dir=settings.directory) as tmp:
        yield Path(tmp)


class OpenStore:
    """A started store for one measurement, and how to close it exactly once."""

    def __init__(self, store: Store, path: Path | None) -> None:
        self.store = store
        self.path = path
        self.closed = False

    async def close(self) -> None:
        if not self.closed:
            self.closed = True
            await self.store.close()


@contextlib.asynccontextmanager
async def open_store(
    backend: str, settings: Settings, *, retention: RetentionPolicy | None = None
) -> AsyncIterator[OpenStore]:
    """A started store on a fresh database (a temp file, or a schema of its own dropped afterwards)."""
    if backend == "sqlite":
        from controlplane.store.sqlite import SqliteStore

        with temp_dir(settings) as tmp:
            path = tmp / "store.sqlite3"
            opened = OpenStore(SqliteStore("bench", path=path, retention=retention), path)
            await opened.store.start()
            try:
                yield opened
            finally:
                await opened.close()
    elif backend == "postgres":
        from controlplane.store.postgres import PostgresStore

        schema = f"kubelab_bench_{os.getpid()}_{secrets.token_hex(4)}"
        store = PostgresStore("bench", dsn=settings.dsn, retention=retention, schema=schema)
        opened = OpenStore(store, None)
        try:
            await store.start()
            yield opened
        finally:
            try:
                await opened.close()
            finally:
                await asyncio.to_thread(drop_schema, settings.dsn, schema)
    else:
        raise ValueError(f"unknown backend {backend!r}")


def drop_schema(dsn: str, schema: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


# -- raw baselines ---------------------------------------------------------------------------------


def raw_sqlite_rate(settings: Settings) -> float:
    """Commits/s of a plain sqlite3 loop: WAL, synchronous=FULL, one INSERT per commit."""
    with temp_dir(settings) as tmp:
        conn = sqlite3.connect(tmp / "raw.sqlite3", isolation_level=None)  # autocommit: 1 row = 1 commit
        try:
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            conn.execute("PRAGMA synchronous=FULL")
            level = conn.execute("PRAGMA synchronous").fetchone()[0]
            if mode != "wal" or level != 2:
                raise RuntimeError(f"raw baseline durability is not WAL/FULL: {mode}/{level}")
            conn.execute("CREATE TABLE kv (id INTEGER PRIMARY KEY, key TEXT NOT NULL, value BLOB NOT NULL)")
            counter = iter(range(1 << 62))

            def step() -> None:
                conn.execute(
                    "INSERT INTO kv (key, value) VALUES (?, ?)",
                    (f"/registry/raw/{next(counter):010d}", VALUE),
                )

            for _ in range(10):  # warm up: the first commits create the WAL file
                step()
            return rate_for(settings.duration, step).per_second
        finally:
            conn.close()


def raw_postgres_rate(settings: Settings) -> float:
    """Commits/s of a plain psycopg autocommit loop: one INSERT (one durable commit) per call."""
    import psycopg
    from psycopg import sql

    schema = f"kubelab_bench_raw_{os.getpid()}_{secrets.token_hex(4)}"
    with psycopg.connect(settings.dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        try:
            table = sql.Identifier(schema, "kv")
            conn.execute(
                sql.SQL(
                    "CREATE TABLE {} (id bigserial PRIMARY KEY, key text NOT NULL, value bytea NOT NULL)"
                ).format(table)
            )
            insert = sql.SQL("INSERT INTO {} (key, value) VALUES (%s, %s)").format(table)
            counter = iter(range(1 << 62))

            def step() -> None:
                conn.execute(insert, (f"/registry/raw/{next(counter):010d}", VALUE))

            for _ in range(10):
                step()
            return rate_for(settings.duration, step).per_second
        finally:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def raw_rate(backend: str, settings: Settings) -> float:
    return raw_sqlite_rate(settings) if backend == "sqlite" else raw_postgres_rate(settings)


def postgres_durability(dsn: str) -> dict[str, str]:
    """The server settings that decide what a commit costs, reported next to the figures."""
    import psycopg

    with psycopg.connect(dsn, connect_timeout=3) as conn:
        return {
            name: str(conn.execute(f"SHOW {name}").fetchone()[0])  # type: ignore[index]
            for name in ("synchronous_commit", "fsync", "wal_sync_method", "commit_delay")
        }


# -- throughput ------------------------------------------------------------------------------------


async def store_rate(backend: str, settings: Settings, writers: int) -> float:
    """Commits/s of ``writers`` concurrent tasks calling ``store.put`` on new keys for the duration."""
    async with open_store(backend, settings) as opened:
        store = opened.store
        for i in range(10):  # warm up: connections, statement caches, the first WAL pages
            await store.put(f"/registry/warmup/{i:04d}", VALUE)
        counts = [0] * writers
        deadline = Deadline(settings.duration)

        async def writer(n: int) -> None:
            while not deadline.expired():
                await store.put(f"/registry/bench/{n:03d}/{counts[n]:010d}", VALUE)
                counts[n] += 1

        await asyncio.gather(*(writer(n) for n in range(writers)))
        return sum(counts) / deadline.elapsed()


async def measure_single_writer(reporter: Reporter, backend: str, settings: Settings) -> None:
    metric = f"{backend}.single_writer.commits_per_s"
    target = _single_target(backend)
    try:
        rounds = await alternate(
            settings.rounds,
            [
                ("raw", lambda: raw_rate(backend, settings)),
                ("store", lambda: store_rate(backend, settings, 1)),
            ],
        )
    except Exception as error:
        reporter.error(metric, "commits/s", error, target=target)
        return
    reporter.emit(
        metric,
        rounds.best("store"),
        "commits/s",
        baseline=rounds.best("raw"),
        target=target,
        samples=_r(rounds.samples["store"]),
        baseline_samples=_r(rounds.samples["raw"]),
        paired_ratios=_paired(rounds.samples["store"], rounds.samples["raw"]),
        seconds_per_round=settings.duration,
        durability=_durability(backend, settings),
    )


async def measure_concurrent_writers(reporter: Reporter, backend: str, settings: Settings) -> None:
    metric = f"{backend}.writers_64.commits_per_s"
    target = ">= 5" if backend == "sqlite" else None
    try:
        rounds = await alternate(
            settings.rounds,
            [
                ("raw", lambda: raw_rate(backend, settings)),
                ("store", lambda: store_rate(backend, settings, settings.writers)),
            ],
        )
    except Exception as error:
        reporter.error(metric, "commits/s", error, target=target)
        return
    note = "baseline is the raw single-row rate" + ("" if target else "; no target for this")
    reporter.emit(
        metric,
        rounds.best("store"),
        "commits/s",
        baseline=rounds.best("raw"),
        target=target,
        writers=settings.writers,
        samples=_r(rounds.samples["store"]),
        baseline_samples=_r(rounds.samples["raw"]),
        paired_ratios=_paired(rounds.samples["store"], rounds.samples["raw"]),
        seconds_per_round=settings.duration,
        note=note,
    )


def _durability(backend: str, settings: Settings) -> str | dict[str, str]:
    if backend == "sqlite":
        return "WAL, synchronous=FULL, one row per commit (raw and store)"
    try:
        return postgres_durability(settings.dsn)
    except Exception as error:
        return f"unknown: {error}"


def _paired(values: list[float], baselines: list[float]) -> list[float | None]:
    """Each round's store/raw ratio: adjacent rounds share the disk's mood, so these show its noise."""
    return [round(v / b, 3) if b else None for v, b in zip(values, baselines, strict=True)]


def _r(values: list[float]) -> list[float]:
    return [round(v, 1) for v in values]


# -- watch latency ---------------------------------------------------------------------------------


async def measure_watch_latency(reporter: Reporter, backend: str, settings: Settings) -> None:
    base = f"{backend}.watch_latency"
    try:
        result = await watch_latency(backend, settings)
    except Exception as error:
        reporter.error(f"{base}.p50_ms", "ms", error)
        reporter.error(f"{base}.p99_ms", "ms", error, target="<= 50")
        return
    submit, ack = summarize(result.submit_ms), summarize(result.ack_ms)
    # A watcher that missed events has not met the target, whatever the percentiles say.
    missed: dict[str, Any] = {"error": f"{result.missed} deliveries missed"} if result.missed else {}
    shape: dict[str, Any] = {
        "watchers": settings.watchers,
        "writes": result.writes,
        "write_rate": settings.write_rate,
        "deliveries": submit.count,
        "missed": result.missed,
        "watch_errors": result.errors[:5],
    }
    measured = "submit-to-received: from just before put() to the watcher's async-for yielding the event"
    reporter.emit(f"{base}.p50_ms", submit.p50, "ms", measured=measured, **shape)
    reporter.emit(
        f"{base}.p99_ms",
        submit.p99,
        "ms",
        target="<= 50",
        measured=measured,
        max_ms=round(submit.max, 3),
        **missed,
        **shape,
    )
    acked = "ack-to-received: from put() returning to the watcher yielding the event (negative: before)"
    reporter.emit(f"{base}.ack_p50_ms", ack.p50, "ms", measured=acked)
    reporter.emit(f"{base}.ack_p99_ms", ack.p99, "ms", measured=acked, max_ms=round(ack.max, 3))


@dataclass(slots=True)
class WatchRun:
    writes: int
    submit_ms: list[float]
    ack_ms: list[float]
    missed: int
    errors: list[str]


async def watch_latency(backend: str, settings: Settings) -> WatchRun:
    """One writer at ``write_rate`` writes/s, ``watchers`` watches on its prefix; every delivery timed."""
    prefix = "/registry/pods/"
    writes = max(1, round(settings.watch_seconds * settings.write_rate))
    submitted: list[float] = [0.0] * writes
    acked: list[float] = [0.0] * writes
    received: list[list[float]] = [[] for _ in range(writes)]
    errors: list[str] = []

    async with open_store(backend, settings) as opened:
        store = opened.store
        await store.put(prefix + "warmup", VALUE)
        watches = [await store.watch(prefix) for _ in range(settings.watchers)]
        index_of = {f"{prefix}bench-{i:06d}": i for i in range(writes)}

        async def consume(watch: Watch) -> None:
            try:
                async for event in watch:
                    now = time.perf_counter()
                    i = index_of.get(event.key)
                    if i is None:
                        continue
                    received[i].append(now)
                    if i == writes - 1:
                        return
            except StoreError as error:
                errors.append(f"{type(error).__name__}: {error}")

        consumers = [asyncio.create_task(consume(w)) for w in watches]
        start = time.perf_counter() + 0.1
        for i in range(writes):
            await asyncio.sleep(max(0.0, start + i / settings.write_rate - time.perf_counter()))
            submitted[i] = time.perf_counter()
            await store.put(f"{prefix}bench-{i:06d}", VALUE)
            acked[i] = time.perf_counter()
        _, pending = await asyncio.wait(consumers, timeout=10.0)
        for task in pending:
            task.cancel()
        for watch in watches:
            await watch.close()
        await asyncio.gather(*pending, return_exceptions=True)

    submit_ms = [(t - submitted[i]) * 1000 for i in range(writes) for t in received[i]]
    ack_ms = [(t - acked[i]) * 1000 for i in range(writes) for t in received[i]]
    missed = writes * settings.watchers - len(submit_ms)
    if not submit_ms:
        raise RuntimeError(f"no watcher received any event ({'; '.join(errors[:3])})")
    return WatchRun(writes, submit_ms, ack_ms, missed, errors)


# -- churn -----------------------------------------------------------------------------------------

#: Answers the store gives by contract in the churn workload: counted, never errors.
ExpectedErrors = tuple[type[BaseException], ...]


@dataclass(slots=True)
class ChurnStats:
    commits: Counter[str] = field(default_factory=Counter)
    expected: Counter[str] = field(default_factory=Counter)
    unexpected: int = 0
    locked: int = 0
    samples: list[str] = field(default_factory=list)
    watch_events: int = 0
    watch_resumes: int = 0
    compactions: int = 0
    revision: int = 0
    compact_revision: int = 0

    def error(self, where: str, error: BaseException | str) -> None:
        message = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
        self.unexpected += 1
        if "locked" in message.lower() or "busy" in message.lower():
            self.locked += 1
        if len(self.samples) < 10:
            self.samples.append(f"{where}: {message}")

    async def attempt(self, where: str, call: Awaitable[Any], expected: ExpectedErrors = ()) -> Any:
        """Await ``call``; count an expected answer by type, anything else as an error. None if it failed."""
        try:
            return await call
        except expected as error:
            self.expected[f"{where}: {type(error).__name__}"] += 1
        except asyncio.CancelledError:
            raise
        except Exception as error:
            self.error(where, error)
        return None


class _ErrorLogHandler(logging.Handler):
    """Counts ERROR log records (a backend's background task failing) as churn errors."""

    def __init__(self, stats: ChurnStats) -> None:
        super().__init__(logging.ERROR)
        self.stats = stats

    def emit(self, record: logging.LogRecord) -> None:
        self.stats.error(f"log {record.name}", record.getMessage())


async def measure_churn(reporter: Reporter, backend: str, settings: Settings) -> None:
    base = f"{backend}.churn"
    stats = ChurnStats()
    loop = asyncio.get_running_loop()
    previous_handler = loop.get_exception_handler()
    log_handler = _ErrorLogHandler(stats)
    logging.getLogger().addHandler(log_handler)
    loop.set_exception_handler(lambda _loop, context: stats.error("event loop", str(context.get("message"))))
    started = time.perf_counter()
    integrity = None
    try:
        integrity = await churn(backend, settings, stats)
        if integrity not in (None, "ok"):
            stats.error("integrity_check", str(integrity))
    except Exception as error:
        stats.error("churn", error)
    finally:
        loop.set_exception_handler(previous_handler)
        logging.getLogger().removeHandler(log_handler)
    elapsed = time.perf_counter() - started
    total = sum(stats.commits.values())
    reporter.emit(
        f"{base}.lock_errors",
        stats.unexpected,
        "errors",
        target="== 0",
        seconds=round(elapsed, 1),
        database_locked=stats.locked,
        errors=stats.samples,
        expected_answers=dict(stats.expected),
        explicit_compactions=stats.compactions,
        revision=stats.revision,
        compact_revision=stats.compact_revision,
        integrity=integrity,
    )
    reporter.emit(
        f"{base}.commits",
        total,
        "commits",
        seconds=round(elapsed, 1),
        commits_per_s=round(total / elapsed, 1) if elapsed > 0 else None,
        by_kind=dict(stats.commits),
        watch_events=stats.watch_events,
        watch_resumes=stats.watch_resumes,
    )


async def churn(backend: str, settings: Settings, stats: ChurnStats) -> str | None:
    """Run the churn workload; returns SQLite's integrity check of the file afterwards (None for others)."""
    retention = RetentionPolicy(min_revisions=300, min_age=2.0, interval=1.0)
    async with open_store(backend, settings, retention=retention) as opened:
        store = opened.store
        stop = asyncio.Event()
        watches: set[Watch] = set()
        tasks = [
            *(asyncio.create_task(churn_writer(store, n, stop, stats)) for n in range(12)),
            *(asyncio.create_task(churn_contender(store, n, stop, stats)) for n in range(4)),
            *(asyncio.create_task(churn_watcher(store, n, stop, stats, watches)) for n in range(16)),
            *(asyncio.create_task(churn_reader(store, stop, stats)) for _ in range(2)),
            asyncio.create_task(churn_leases(store, stop, stats)),
            asyncio.create_task(churn_compactor(store, stop, stats)),
        ]
        await _sleep_until(tasks, settings.churn_seconds)
        stop.set()
        stats.revision = await store.current_revision()
        stats.compact_revision = await store.compact_revision()
        for watch in list(watches):
            await watch.close()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                stats.error("task", result)
        await opened.close()
        if opened.path is None:
            return None
        return await asyncio.to_thread(_integrity_check, opened.path)


async def _sleep_until(tasks: list[asyncio.Task[None]], seconds: float) -> None:
    """Sleep ``seconds``, or until a task dies early (its error is counted when it is gathered)."""
    await asyncio.wait(tasks, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)


def _integrity_check(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return "; ".join(str(row[0]) for row in conn.execute("PRAGMA integrity_check").fetchall())
    finally:
        conn.close()


CHURN_PREFIX = "/registry/churn/"


async def churn_writer(store: Store, n: int, stop: asyncio.Event, stats: ChurnStats) -> None:
    """Creates, updates and deletes keys only it writes: every conflict here would be a store bug."""
    rng = random.Random(n)
    owned: dict[str, int] = {}  # key -> mod_revision
    serial = 0
    while not stop.is_set():
        roll = rng.random()
        if len(owned) < 20 or roll < 0.35:
            serial += 1
            key = f"{CHURN_PREFIX}owned/{n:02d}/{serial:08d}"
            kv = await stats.attempt("create", store.create(key, VALUE))
            if kv is not None:
                owned[key] = kv.mod_revision
                stats.commits["create"] += 1
        elif roll < 0.75:
            key = rng.choice(list(owned))
            kv = await stats.attempt("update", store.update(key, VALUE, expected_mod_revision=owned[key]))
            if kv is not None:
                owned[key] = kv.mod_revision
                stats.commits["update"] += 1
        elif roll < 0.92:
            key = rng.choice(list(owned))
            deleted = await stats.attempt("delete", store.delete(key, expected_mod_revision=owned.pop(key)))
            if deleted is not None:
                stats.commits["delete"] += 1
        else:
            keys = rng.sample(list(owned), 3)
            serial += 1
            new = f"{CHURN_PREFIX}owned/{n:02d}/{serial:08d}"
            txn = Txn(success=(Put(keys[0], VALUE), Put(new, VALUE), Delete(keys[1])))
            result = await stats.attempt("txn", store.txn(txn))
            if result is not None:
                del owned[keys[1]]
                for event in result.events:
                    if event.key in (keys[0], new):
                        owned[event.key] = event.kv.mod_revision
                stats.commits["txn"] += 1


async def churn_contender(store: Store, n: int, stop: asyncio.Event, stats: ChurnStats) -> None:
    """Read-modify-write on a few shared keys, racing the other contenders (GuaranteedUpdate's loop)."""
    rng = random.Random(1000 + n)
    conflicts: ExpectedErrors = (KeyExists, KeyNotFound, RevisionMismatch)
    while not stop.is_set():
        key = f"{CHURN_PREFIX}shared/{rng.randrange(8)}"
        current = await stats.attempt("get", store.get(key))
        roll = rng.random()
        if current is None:
            if await stats.attempt("create", store.create(key, VALUE), conflicts) is not None:
                stats.commits["create"] += 1
        elif roll < 0.85:
            update = store.update(key, VALUE, expected_mod_revision=current.mod_revision)
            if await stats.attempt("update", update, conflicts) is not None:
                stats.commits["update"] += 1
        else:
            delete = store.delete(key, expected_mod_revision=current.mod_revision)
            if await stats.attempt("delete", delete, conflicts) is not None:
                stats.commits["delete"] += 1


async def churn_watcher(
    store: Store, n: int, stop: asyncio.Event, stats: ChurnStats, watches: set[Watch]
) -> None:
    """Watches the churn prefix, checking order; now and then stops and resumes from its last revision."""
    rng = random.Random(2000 + n)
    resume_from: int | None = None
    while not stop.is_set():
        watch = await stats.attempt(
            "watch", store.watch(CHURN_PREFIX, from_revision=resume_from), (Compacted,)
        )
        if watch is None:
            resume_from = None  # history is gone: start again from now (a client would re-list)
            await asyncio.sleep(0.05)
            continue
        watches.add(watch)
        last = watch.from_revision
        until = time.perf_counter() + rng.uniform(1.0, 6.0)
        try:
            async for event in watch:
                if event.revision < last:
                    stats.error("watch", f"event at revision {event.revision} after {last}")
                last = event.revision
                stats.watch_events += 1
                if time.perf_counter() > until or stop.is_set():
                    break
        except (Compacted, WatcherTooSlow) as error:
            stats.expected[f"watch: {type(error).__name__}"] += 1
        except StoreError as error:
            if not stop.is_set():
                stats.error("watch", error)
        finally:
            watches.discard(watch)
            await watch.close()
        resume_from = last
        stats.watch_resumes += 1


async def churn_reader(store: Store, stop: asyncio.Event, stats: ChurnStats) -> None:
    """Lists the prefix in pages, and reads at old revisions (which compaction may have discarded)."""
    rng = random.Random(3000)
    while not stop.is_set():
        page = await stats.attempt("range", store.range(CHURN_PREFIX, limit=200))
        if page is not None and page.revision > 1:
            old = rng.randrange(1, page.revision)
            await stats.attempt("range@old", store.range(CHURN_PREFIX, revision=old, limit=50), (Compacted,))
        await asyncio.sleep(0.05)


async def churn_leases(store: Store, stop: asyncio.Event, stats: ChurnStats) -> None:
    """Leases with keys attached: some kept alive, some revoked, most left to expire."""
    rng = random.Random(4000)
    serial = 0
    live: list[int] = []
    while not stop.is_set():
        lease = await stats.attempt("lease_grant", store.lease_grant(1))
        if lease is not None:
            live.append(lease.id)
            for _ in range(3):
                serial += 1
                key = f"{CHURN_PREFIX}leased/{serial:08d}"
                if await stats.attempt("put", store.put(key, VALUE, lease=lease.id), (LeaseNotFound,)):
                    stats.commits["put_leased"] += 1
        if live and rng.random() < 0.3:
            await stats.attempt("keepalive", store.lease_keepalive(rng.choice(live)), (LeaseNotFound,))
        revoke = live and rng.random() < 0.2
        if revoke and await stats.attempt("revoke", store.lease_revoke(live.pop()), (LeaseNotFound,)):
            stats.commits["lease_revoke"] += 1
        live = live[-20:]
        await asyncio.sleep(0.1)


async def churn_compactor(store: Store, stop: asyncio.Event, stats: ChurnStats) -> None:
    """Explicit compactions (kube-apiserver's, every second here), racing the automatic ones."""
    while not stop.is_set():
        await asyncio.sleep(1.0)
        current = await stats.attempt("current_revision", store.current_revision())
        mark = await stats.attempt("compact_revision", store.compact_revision())
        if current is None or mark is None:
            continue
        target = current - 100
        if target <= mark:
            continue
        try:
            await store.compact(target)
        except Compacted:  # the automatic compactor got there first
            stats.expected["compact: Compacted"] += 1
        except Exception as error:
            stats.error("compact", error)
        else:
            stats.compactions += 1
