"""/livez, /readyz and /healthz as kube-apiserver writes them (apiserver pkg/server/healthz/healthz.go)."""

from __future__ import annotations

from pathlib import Path

import httpx

from controlplane.api.kinds import builtin_types
from controlplane.apiserver.server import APIServer
from controlplane.store.sqlite import SqliteStore
from tests.controlplane.apiserver.conftest import API

LIVEZ_CHECKS = (
    "[+]ping ok\n"
    "[+]log ok\n"
    "[+]etcd ok\n"
    "[+]poststarthook/apiserver/bootstrap-system-flowcontrol-configuration ok\n"
    "[+]poststarthook/bootstrap-controller ok\n"
    "[+]poststarthook/rbac/bootstrap-roles ok\n"
    "[+]poststarthook/scheduling/bootstrap-system-priority-classes ok\n"
    "[+]poststarthook/start-system-namespaces-controller ok\n"
)


async def test_a_healthy_server_answers_a_bare_ok(api: API) -> None:
    for path in ("/livez", "/readyz", "/healthz"):
        response = await api.client.get(path, headers={"Authorization": ""})
        assert (response.status_code, response.text) == (200, "ok"), path
        assert response.headers["content-type"] == "text/plain; charset=utf-8"
        assert response.headers["x-content-type-options"] == "nosniff"


async def test_verbose_lists_every_check_and_readyz_has_more(api: API) -> None:
    livez = await api.client.get("/livez?verbose")
    assert (livez.status_code, livez.text) == (200, LIVEZ_CHECKS + "livez check passed\n")
    readyz = await api.client.get("/readyz", params={"verbose": ""})
    assert readyz.text.splitlines() == [
        "[+]ping ok",
        "[+]log ok",
        "[+]etcd ok",
        "[+]informer-sync ok",
        "[+]poststarthook/apiserver/bootstrap-system-flowcontrol-configuration ok",
        "[+]poststarthook/bootstrap-controller ok",
        "[+]poststarthook/rbac/bootstrap-roles ok",
        "[+]poststarthook/scheduling/bootstrap-system-priority-classes ok",
        "[+]poststarthook/start-system-namespaces-controller ok",
        "[+]shutdown ok",
        "readyz check passed",
    ]
    healthz = await api.client.get("/healthz?verbose=true")
    assert healthz.text == LIVEZ_CHECKS + "healthz check passed\n"


async def test_excluded_checks_and_names_that_match_none(api: API) -> None:
    response = await api.client.get("/livez?verbose&exclude=etcd&exclude=nope&exclude=log")
    assert response.status_code == 200
    lines = response.text.splitlines()
    assert lines[1:3] == ["[+]log excluded: ok", "[+]etcd excluded: ok"]
    assert lines[-2:] == [
        'warn: some health checks cannot be excluded: no matches for "nope"',
        "livez check passed",
    ]


async def test_one_check_has_a_path_of_its_own(api: API) -> None:
    for path in (
        "/livez/ping",
        "/readyz/etcd",
        "/readyz/informer-sync",
        "/healthz/poststarthook/rbac/bootstrap-roles",
    ):
        response = await api.client.get(path)
        assert (response.status_code, response.text) == (200, "ok"), path
    unknown = await api.client.get("/readyz/nope")
    assert unknown.status_code == 404
    assert unknown.json()["reason"] == "NotFound"
    # Only the root endpoints are public (system:public-info-viewer): a single check needs credentials.
    anonymous = await api.client.get("/livez/ping", headers={"Authorization": ""})
    assert anonymous.status_code in (401, 403)


async def test_a_server_not_yet_started_is_not_ready_and_says_which_check_failed(tmp_path: Path) -> None:
    store = SqliteStore("test", path=tmp_path / "store.sqlite3")
    await store.start()
    server = APIServer("test", store, resource_types=builtin_types(), tokens=lambda token: None)
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=server), base_url="http://test"
        ) as client:
            readyz = await client.get("/readyz")
            livez = await client.get("/livez")
    finally:
        await store.close()
    assert readyz.status_code == 500
    lines = readyz.text.splitlines()
    assert "[+]etcd ok" in lines
    assert "[-]informer-sync failed: reason withheld" in lines
    assert "[-]poststarthook/rbac/bootstrap-roles failed: reason withheld" in lines
    assert "[+]shutdown ok" in lines
    assert readyz.text.endswith("readyz check failed\n")
    assert livez.status_code == 500
    assert livez.text.endswith("livez check failed\n")


async def test_a_closed_store_fails_the_etcd_check(api: API) -> None:
    await api.store.close()
    response = await api.client.get("/livez")
    assert response.status_code == 500
    assert "[-]etcd failed: reason withheld\n" in response.text
    single = await api.client.get("/livez/etcd")
    assert single.status_code == 500
    assert single.text.startswith("internal server error: error getting data from etcd: ")
