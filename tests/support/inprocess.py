"""An API server over a fresh SQLite store, and clients of it through the in-process transport.

Component tests (scheduler, controllers, kubelets) run their component against a real API server, the
way the runtime does, and wait on the API itself: ``wait_for`` lists, checks, and if the answer is not
there yet watches from the list's resourceVersion until something changes, then looks again (no sleeps).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controlplane.api.kinds import builtin_types
from controlplane.api.meta import Object
from controlplane.apiserver.server import APIServer
from controlplane.client.config import Config
from controlplane.client.rest import ResourceClient, RESTClient
from controlplane.identity import SYSTEM_MASTERS, UserInfo
from controlplane.store.sqlite import SqliteStore
from tests.support.admission import WITHOUT_CONTROLLERS

CLUSTER = "test"
ADMIN_TOKEN = "admin-test-token"
ADMIN = UserInfo.create("admin", groups=[SYSTEM_MASTERS])
#: Seconds of wall time a test waits for the API to show what it expects.
WAIT_TIMEOUT = 10.0


@dataclass
class InProcessCluster:
    """A running API server; ``client`` is an admin; ``client_for(user)`` makes others."""

    server: APIServer
    store: SqliteStore
    client: RESTClient
    users: dict[str, UserInfo] = field(default_factory=dict)
    _clients: list[RESTClient] = field(default_factory=list)

    def config(self, user: UserInfo | None = None, **options: Any) -> Config:
        """A config for a client of this server as ``user`` (admin by default), no rate limit unless given."""
        token = ADMIN_TOKEN
        if user is not None:
            token = f"token-{user.username}"
            self.users[token] = user
        options.setdefault("qps", -1)
        return Config.for_in_process(
            self.server, CLUSTER, mount_prefix=f"/clusters/{CLUSTER}", bearer_token=token, **options
        )

    def client_for(self, user: UserInfo, **options: Any) -> RESTClient:
        rest = RESTClient(self.config(user, **options))
        self._clients.append(rest)
        return rest

    def resource(self, group: str, version: str, plural: str, namespace: str | None = None) -> ResourceClient:
        return self.client.resource(group, version, plural, namespace)


@asynccontextmanager
async def in_process_cluster(path: Path, **server_options: Any) -> AsyncIterator[InProcessCluster]:
    """An API server over a SQLite store at ``path``; stopped (and every client closed) on exit."""
    store = SqliteStore(CLUSTER, path=path / "store.sqlite3")
    await store.start()
    users: dict[str, UserInfo] = {ADMIN_TOKEN: ADMIN}
    server_options.setdefault("admission_options", WITHOUT_CONTROLLERS)
    server = APIServer(CLUSTER, store, resource_types=builtin_types(), tokens=users.get, **server_options)
    await server.start()
    rest = RESTClient(
        Config.for_in_process(
            server, CLUSTER, mount_prefix=f"/clusters/{CLUSTER}", bearer_token=ADMIN_TOKEN, qps=-1
        )
    )
    cluster = InProcessCluster(server, store, rest, users)
    try:
        yield cluster
    finally:
        for other in cluster._clients:
            await other.aclose()
        await rest.aclose()
        await server.stop()
        await store.close()


async def wait_for(
    resource: ResourceClient, done: Callable[[list[Object]], bool], *, seconds: float = WAIT_TIMEOUT
) -> list[Object]:
    """List until ``done(items)``; between lists, wait for the next watch event (no polling sleeps)."""
    async with asyncio.timeout(seconds):
        while True:
            listed = await resource.list()
            items: list[Object] = listed["items"]
            if done(items):
                return items
            rv = listed["metadata"]["resourceVersion"]
            async with resource.watch(resource_version=rv) as stream:
                async for _ in stream:
                    break


def condition(obj: Object, type: str) -> Object | None:
    """The status condition of ``type``, if the object has one."""
    return next((c for c in obj.get("status", {}).get("conditions") or [] if c["type"] == type), None)
