"""Build a started store of any backend for a test, and close it afterwards.

``make_store(backend, ...)`` is an async context manager; the conformance suite runs every test
against each backend through it. Backend-specific set-up (a PostgreSQL schema per test, an etcd
server on a loopback port) lives in ``tests/support/postgres.py`` and ``tests/support/etcd.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from controlplane.store import Event, Store, Watch

BACKENDS = ("sqlite", "postgres", "etcd")


@contextlib.asynccontextmanager
async def make_store(backend: str, cluster: str = "test", **options: Any) -> AsyncIterator[Store]:
    """A started store of ``backend``; options are passed to the backend's constructor."""
    if backend == "sqlite":
        from controlplane.store.sqlite import SqliteStore

        with tempfile.TemporaryDirectory(prefix="kubelab-store-") as tmp:
            store: Store = SqliteStore(cluster, path=Path(tmp) / f"{cluster}.sqlite3", **options)
            await store.start()
            try:
                yield store
            finally:
                await store.close()
    elif backend == "postgres":
        from tests.support import postgres

        async with postgres.make_store(cluster, **options) as store:
            yield store
    elif backend == "etcd":
        from tests.support import etcd

        async with etcd.make_store(cluster, **options) as store:
            yield store
    else:
        raise ValueError(f"unknown backend {backend!r}")


async def next_events(watch: Watch, n: int, seconds: float = 5.0) -> list[Event]:
    """The next ``n`` events of ``watch``, failing the test if they do not come within ``seconds``."""
    events: list[Event] = []
    async with asyncio.timeout(seconds):
        while len(events) < n:
            events.append(await anext(watch))
    return events
