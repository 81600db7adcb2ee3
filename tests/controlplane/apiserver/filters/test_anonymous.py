"""Anonymous requests (``--anonymous-auth``): refused unless the cluster switches them on, and then
``system:anonymous`` in ``system:unauthenticated``, for RBAC to judge; a wrong credential stays a 401."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.support.inprocess import in_process_cluster

NAMESPACES = "/clusters/test/api/v1/namespaces"


async def get(server: object, path: str, token: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    transport = httpx.ASGITransport(app=server)  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=transport, base_url="http://lab", headers=headers) as client:
        return await client.get(path.removeprefix("/clusters/test"))


async def test_a_request_without_credentials_is_refused_by_default(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster:
        response = await get(cluster.server, NAMESPACES)
        assert response.status_code == 401
        assert response.json()["reason"] == "Unauthorized"


async def test_switched_on_it_is_system_anonymous_and_rbac_decides(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path, anonymous=True) as cluster:
        listed = await get(cluster.server, NAMESPACES)
        assert listed.status_code == 403
        assert listed.json()["message"] == (
            'namespaces is forbidden: User "system:anonymous" cannot list resource "namespaces" '
            'in API group "" at the cluster scope'
        )
        bad_token = await get(cluster.server, NAMESPACES, token="not-a-token")
        assert bad_token.status_code == 401  # a wrong credential is never anonymous
        cluster.server.authenticator.anonymous = False  # switched off again, live
        assert (await get(cluster.server, NAMESPACES)).status_code == 401
