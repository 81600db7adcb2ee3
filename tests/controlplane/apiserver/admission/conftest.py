"""An API server with admission configured per test, and clients for an admin, a user and two kubelets."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from controlplane.api.kinds import builtin_types
from controlplane.api.meta import Object
from controlplane.apiserver.admission.setup import AdmissionOptions
from controlplane.apiserver.server import APIServer
from controlplane.identity import NODES, SYSTEM_MASTERS, UserInfo, node_user
from controlplane.store.sqlite import SqliteStore
from controlplane.trace import ListSink

USERS = {
    "admin": UserInfo.create("admin", groups=[SYSTEM_MASTERS]),
    "alice": UserInfo.create("alice", groups=["system:authenticated"]),
    "node-1": UserInfo.create(node_user("node-1"), groups=[NODES, "system:authenticated"]),
    "node-2": UserInfo.create(node_user("node-2"), groups=[NODES, "system:authenticated"]),
}


@dataclass
class AdmissionAPI:
    server: APIServer
    store: SqliteStore
    trace: ListSink
    clients: dict[str, httpx.AsyncClient] = field(default_factory=dict)

    @property
    def admin(self) -> httpx.AsyncClient:
        return self.clients["admin"]

    def as_(self, user: str) -> httpx.AsyncClient:
        return self.clients[user]

    async def synced(self) -> None:
        """Wait until every watch cache has seen the store's latest revision (what admission reads)."""
        revision = await self.store.current_revision()
        for cache in self.server.caches.values():
            if cache.ready:
                assert await cache.wait_for(revision, 5.0)

    async def create(self, path: str, obj: Object, *, user: str = "admin") -> httpx.Response:
        return await self.clients[user].post(path, json=obj)

    def steps(self, plugin: str | None = None) -> list[dict[str, Any]]:
        events = self.trace.of_type("admission.step")
        return [e for e in events if plugin is None or e["plugin"] == plugin]


Factory = Callable[..., AbstractAsyncContextManager[AdmissionAPI]]


@pytest.fixture
def admission_api(tmp_path: Path) -> Factory:
    """``async with admission_api(options) as api``: a server with those admission options."""

    @asynccontextmanager
    async def make(
        options: AdmissionOptions | None = None, **server_options: Any
    ) -> AsyncIterator[AdmissionAPI]:
        trace = ListSink()
        store = SqliteStore("test", path=tmp_path / "store.sqlite3")
        await store.start()
        tokens = {f"token-{name}": user for name, user in USERS.items()}
        server = APIServer(
            "test",
            store,
            resource_types=builtin_types(),
            tokens=tokens.get,
            trace=trace,
            admission_options=options or AdmissionOptions(service_account_retry_interval=0.01),
            **server_options,
        )
        await server.start()
        api = AdmissionAPI(server, store, trace)
        for name in USERS:
            api.clients[name] = httpx.AsyncClient(
                transport=httpx.ASGITransport(app=server),
                base_url="http://test",
                headers={"Authorization": f"Bearer token-{name}"},
            )
        try:
            yield api
        finally:
            for client in api.clients.values():
                await client.aclose()
            await server.stop()
            await store.close()

    return make


def pod(name: str = "web", **spec: Any) -> Object:
    body: Object = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}], **spec},
    }
    return body


def namespace(name: str, **labels: str) -> Object:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def service_account(name: str = "default", **fields: Any) -> Object:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}, **fields}
