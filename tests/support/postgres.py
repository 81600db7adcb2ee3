"""PostgreSQL stores for the tests: a fresh schema per store, dropped afterwards.

Every ``make_store`` gets a schema of its own (``kubelab_test_<random>``), so tests never see each
other's rows or notifications, and a test that compacts cannot disturb another. The server is
``tests.support.services.POSTGRES_DSN``; if it cannot be reached the test is skipped locally and
fails in CI (``service_missing``).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

import psycopg
from psycopg import sql

from controlplane.store.postgres import PostgresStore
from tests.support.services import POSTGRES_DSN, service_missing


async def connect(dsn: str = POSTGRES_DSN) -> psycopg.AsyncConnection[Any]:
    """An autocommit connection to the test server, or skip (fail in CI) if there is none."""
    try:
        return await psycopg.AsyncConnection.connect(dsn, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError:
        service_missing(f"PostgreSQL at {dsn}")
        raise  # not reached: service_missing skips or fails


def new_schema() -> str:
    return f"kubelab_test_{uuid.uuid4().hex[:12]}"


@contextlib.asynccontextmanager
async def fresh_schema(dsn: str = POSTGRES_DSN) -> AsyncIterator[str]:
    """A schema name no one uses yet; the schema (if a store created it) is dropped afterwards."""
    admin = await connect(dsn)
    schema = new_schema()
    try:
        yield schema
    finally:
        try:
            await admin.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
        finally:
            await admin.close()


@contextlib.asynccontextmanager
async def make_store(cluster: str = "test", **options: Any) -> AsyncIterator[PostgresStore]:
    """A started ``PostgresStore`` in a fresh schema; options go to its constructor.

    ``schema=`` (e.g. from ``fresh_schema``) puts the store in a schema the caller manages, for tests
    that open several stores on one cluster, as several processes would.
    """
    dsn = options.pop("dsn", POSTGRES_DSN)
    async with contextlib.AsyncExitStack() as stack:
        if "schema" not in options:
            options["schema"] = await stack.enter_async_context(fresh_schema(dsn))
        store = await stack.enter_async_context(PostgresStore(cluster, dsn=dsn, **options))
        assert isinstance(store, PostgresStore)
        yield store
