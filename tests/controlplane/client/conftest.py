"""A real API server over a fresh SQLite store, reached through the client's own in-process transport.

The client package may not import the API server or the store (hub and spoke); its tests may: they
build the server the way the runtime does and hand the client only the ASGI callable, as the runtime
will. ``make_cluster(watch_cache_window=3)`` gives a server whose watch history is tiny, to make
410 Expired happen on demand.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from controlplane.api.kinds import builtin_types
from controlplane.apiserver.server import APIServer
from controlplane.client.config import Config
from controlplane.client.rest import ResourceClient, RESTClient
from controlplane.identity import SYSTEM_MASTERS, UserInfo
from controlplane.store.sqlite import SqliteStore
from tests.support.admission import WITHOUT_CONTROLLERS

TOKEN = "client-test-token"
ADMIN = UserInfo.create("admin", groups=[SYSTEM_MASTERS])
CLUSTER = "test"


@dataclass
class Cluster:
    """A running API server and an admin client of it through ``InProcessTransport``."""

    server: APIServer
    store: SqliteStore
    client: RESTClient

    def config(self, **options: Any) -> Config:
        """A config for another client of the same server (admin token, no rate limit, unless given)."""
        return _config(self.server, **options)

    def configmaps(self, namespace: str = "default") -> ResourceClient:
        return self.client.resource("", "v1", "configmaps", namespace)


MakeCluster = Callable[..., Awaitable[Cluster]]


@pytest.fixture
async def make_cluster(tmp_path: Path) -> AsyncIterator[MakeCluster]:
    async with AsyncExitStack() as stack:
        count = 0

        async def make(*, watch_cache_window: int = 10_000) -> Cluster:
            nonlocal count
            count += 1
            store = SqliteStore(CLUSTER, path=tmp_path / f"store-{count}.sqlite3")
            await store.start()
            stack.push_async_callback(store.close)
            server = APIServer(
                CLUSTER,
                store,
                resource_types=builtin_types(),
                tokens=lambda token: ADMIN if token == TOKEN else None,
                watch_cache_window=watch_cache_window,
                admission_options=WITHOUT_CONTROLLERS,
            )
            await server.start()
            stack.push_async_callback(server.stop)
            cluster = Cluster(server, store, RESTClient(_config(server)))
            stack.push_async_callback(cluster.client.aclose)
            return cluster

        yield make


def _config(server: APIServer, **options: Any) -> Config:
    options.setdefault("bearer_token", TOKEN)
    options.setdefault("qps", -1)  # rate limiting is tested on its own; here it would only slow tests down
    return Config.for_in_process(server, CLUSTER, mount_prefix=f"/clusters/{CLUSTER}", **options)


@pytest.fixture
async def cluster(make_cluster: MakeCluster) -> Cluster:
    return await make_cluster()


def configmap(name: str, data: dict[str, str] | None = None, namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data or {}}
