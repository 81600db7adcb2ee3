"""An API server as most API tests drive it: over a given store, with an admin bearer token, through
httpx's ASGI transport (the request pipeline whole, no socket)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx

from controlplane.api.kinds import builtin_types
from controlplane.apiserver.server import APIServer
from controlplane.identity import SYSTEM_MASTERS, UserInfo
from controlplane.store import Store
from tests.support.admission import WITHOUT_CONTROLLERS

TOKEN = "test-admin-token"
ADMIN = UserInfo.create("admin", groups=[SYSTEM_MASTERS])


@asynccontextmanager
async def admin_api(store: Store, **options: Any) -> AsyncIterator[tuple[APIServer, httpx.AsyncClient]]:
    """A started API server over ``store`` (``options`` go to ``APIServer``), and an admin client of it.

    Admission runs without the plugins that need controllers (``WITHOUT_CONTROLLERS``) unless
    ``admission_options`` says otherwise; both are closed on the way out.
    """
    options.setdefault("admission_options", WITHOUT_CONTROLLERS)
    server = APIServer(
        "test",
        store,
        resource_types=builtin_types(),
        tokens=lambda token: ADMIN if token == TOKEN else None,
        **options,
    )
    await server.start()
    client = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=server),
        base_url="http://test",
        headers={"Authorization": f"Bearer {TOKEN}"},
    )
    try:
        yield server, client
    finally:
        await client.aclose()
        await server.stop()
