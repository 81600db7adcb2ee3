"""An API server with RBAC on, and clients for any user: ``lab.as_(user)`` (admin by default)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from controlplane.api.kinds import builtin_types
from controlplane.apiserver.server import APIServer
from controlplane.identity import AUTHENTICATED, SYSTEM_MASTERS, UserInfo
from controlplane.store.sqlite import SqliteStore
from controlplane.trace import ListSink
from tests.support.admission import WITHOUT_CONTROLLERS

ADMIN = UserInfo.create("admin", groups=[SYSTEM_MASTERS, AUTHENTICATED])
RBAC = "/apis/rbac.authorization.k8s.io/v1"


@dataclass
class Lab:
    server: APIServer
    trace: ListSink
    users: dict[str, UserInfo]
    clients: list[httpx.AsyncClient] = field(default_factory=list)

    def as_(self, user: UserInfo = ADMIN) -> httpx.AsyncClient:
        token = f"token-{len(self.users)}"
        self.users[token] = user
        client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=self.server),
            base_url="http://test",
            headers={"Authorization": f"Bearer {token}"},
        )
        self.clients.append(client)
        return client

    async def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = await self.as_().post(path, json=body)
        assert response.status_code == 201, response.text
        created: dict[str, Any] = response.json()
        return created

    async def bind(self, name: str, role: str, subject: dict[str, str], namespace: str = "") -> None:
        """Bind ClusterRole ``role`` to ``subject``: in ``namespace``, or cluster-wide."""
        kind = "RoleBinding" if namespace else "ClusterRoleBinding"
        path = f"{RBAC}/namespaces/{namespace}/rolebindings" if namespace else f"{RBAC}/clusterrolebindings"
        await self.create(
            path,
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": kind,
                "metadata": {"name": name},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                "subjects": [subject],
            },
        )


def user_subject(name: str) -> dict[str, str]:
    return {"kind": "User", "name": name, "apiGroup": "rbac.authorization.k8s.io"}


@pytest.fixture
async def lab(tmp_path: Path) -> AsyncIterator[Lab]:
    trace = ListSink()
    store = SqliteStore("test", path=tmp_path / "store.sqlite3")
    await store.start()
    users: dict[str, UserInfo] = {}
    server = APIServer(
        "test",
        store,
        resource_types=builtin_types(),
        tokens=users.get,
        trace=trace,
        admission_options=WITHOUT_CONTROLLERS,
    )
    await server.start()
    lab = Lab(server, trace, users)
    try:
        # The namespace the tests' RoleBindings live in (NamespaceLifecycle refuses writes elsewhere).
        await lab.create(
            "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}
        )
        yield lab
    finally:
        for client in lab.clients:
            await client.aclose()
        await server.stop()
        await store.close()
