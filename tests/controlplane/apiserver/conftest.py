"""An API server over a fresh SQLite store, driven in-process through httpx's ASGI transport."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from controlplane.api.kinds import builtin_types
from controlplane.apiserver.server import APIServer
from controlplane.identity import SYSTEM_MASTERS, UserInfo
from controlplane.store.sqlite import SqliteStore
from controlplane.trace import ListSink
from tests.support.admission import WITHOUT_CONTROLLERS

TOKEN = "test-admin-token"
ADMIN = UserInfo.create("admin", groups=[SYSTEM_MASTERS])


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
    server = APIServer(
        "test",
        store,
        resource_types=builtin_types(),
        tokens=lambda token: ADMIN if token == TOKEN else None,
        trace=trace,
        admission_options=WITHOUT_CONTROLLERS,
    )
    await server.start()
    transport = httpx.ASGITransport(app=server)
    client = httpx.AsyncClient(
        transport=transport, base_url="http://test", headers={"Authorization": f"Bearer {TOKEN}"}
    )
    try:
        yield API(server, store, client, trace)
    finally:
        await client.aclose()
        await server.stop()
        await store.close()
