"""An API server over a fresh SQLite store, driven in-process through httpx's ASGI transport."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from controlplane.apiserver.server import APIServer
from controlplane.store.sqlite import SqliteStore
from controlplane.trace import ListSink
from tests.support.apiserver import admin_api


@dataclass
class API:
    server: APIServer
    store: SqliteStore
    client: httpx.AsyncClient
    trace: ListSink


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[API]:
    trace = ListSink()
    store = SqliteStore("test", path=tmp_path / "store.sqlite3", trace=trace)
    await store.start()
    try:
        async with admin_api(store, trace=trace) as (server, client):
            yield API(server, store, client, trace)
    finally:
        await store.close()
