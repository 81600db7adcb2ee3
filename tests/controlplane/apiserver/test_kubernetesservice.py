"""The ``kubernetes`` Service, its Endpoints and EndpointSlice, kept by the API server's bootstrap controller.

Upstream: pkg/controlplane/controller/kubernetesservice/controller.go, pkg/controlplane/reconcilers/lease.go
and endpointsadapter.go. The loop runs on the cluster clock (a ``ManualClock`` here), so each test moves
time on and waits for the store event the controller's write makes: nothing sleeps.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from controlplane.apiserver.kubernetesservice import (
    HOST_ADDRESS,
    KubernetesServiceOptions,
    MasterLeases,
    advertise_address,
    first_service_ip,
)
from controlplane.clock import ManualClock
from controlplane.store import EventType, Store
from controlplane.store.sqlite import SqliteStore
from tests.controlplane.apiserver.conftest import API
from tests.support.apiserver import admin_api

SERVICE = "/api/v1/namespaces/default/services/kubernetes"
ENDPOINTS = "/api/v1/namespaces/default/endpoints/kubernetes"
SLICE = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes"
SERVICE_KEY = "/registry/services/specs/default/kubernetes"
ENDPOINTS_KEY = "/registry/services/endpoints/default/kubernetes"
#: Written last in each reconciliation: once it is, the Endpoints are too.
SLICE_KEY = "/registry/endpointslices/default/kubernetes"
#: Upstream's timers: reconcile every 10 s, master leases of 15 s.
OPTIONS = KubernetesServiceOptions()


@asynccontextmanager
async def serving(
    store: Store, clock: ManualClock, options: KubernetesServiceOptions = OPTIONS
) -> AsyncIterator[httpx.AsyncClient]:
    async with admin_api(store, clock=clock, kubernetes_service=options) as (_, client):
        yield client


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
async def store(tmp_path: Path, clock: ManualClock) -> AsyncIterator[SqliteStore]:
    store = SqliteStore("test", path=tmp_path / "store.sqlite3", clock=clock)
    await store.start()
    try:
        yield store
    finally:
        await store.close()


async def written(
    store: Store, key: str, kind: EventType, action: Callable[[], Coroutine[Any, Any, object]]
) -> None:
    """Run ``action`` and wait (5 s at most) until ``key`` sees an event of ``kind``."""
    revision = await store.current_revision()
    async with await store.watch(key, from_revision=revision) as watch:
        await action()

        async def first() -> None:
            async for event in watch:
                if event.kv.key == key and event.type is kind:
                    return

        await asyncio.wait_for(first(), 5)


async def test_every_cluster_starts_with_the_kubernetes_service_as_upstream_creates_it(api: API) -> None:
    response = await api.client.get(SERVICE)
    assert response.status_code == 200, response.text
    service = response.json()
    assert service["metadata"]["labels"] == {"component": "apiserver", "provider": "kubernetes"}
    spec = service["spec"]
    assert "selector" not in spec, "a selector would let the endpoints controllers take it over"
    assert (spec["type"], spec["clusterIP"], spec["clusterIPs"]) == ("ClusterIP", "10.96.0.1", ["10.96.0.1"])
    assert spec["ports"] == [{"name": "https", "protocol": "TCP", "port": 443, "targetPort": 6443}]
    assert (spec["sessionAffinity"], spec["ipFamilyPolicy"], spec["ipFamilies"]) == (
        "None",
        "SingleStack",
        ["IPv4"],
    )


async def test_its_endpoints_and_endpointslice_list_the_advertised_address(api: API) -> None:
    endpoints = (await api.client.get(ENDPOINTS)).json()
    assert endpoints["metadata"]["labels"] == {"endpointslice.kubernetes.io/skip-mirror": "true"}
    assert endpoints["subsets"] == [
        {"addresses": [{"ip": HOST_ADDRESS}], "ports": [{"name": "https", "port": 6443, "protocol": "TCP"}]}
    ]
    endpoint_slice = (await api.client.get(SLICE)).json()
    assert endpoint_slice["metadata"]["labels"] == {"kubernetes.io/service-name": "kubernetes"}
    assert "ownerReferences" not in endpoint_slice["metadata"]
    assert endpoint_slice["addressType"] == "IPv4"
    assert endpoint_slice["endpoints"] == [{"addresses": [HOST_ADDRESS], "conditions": {"ready": True}}]
    assert endpoint_slice["ports"] == [{"name": "https", "port": 6443, "protocol": "TCP"}]
    lease = await api.store.get(f"/registry/masterleases/{HOST_ADDRESS}")
    assert lease is not None and lease.lease != 0, "the master lease must expire unless renewed"


async def test_kubectl_shows_the_service_and_its_endpoints_as_on_a_real_cluster(api: API) -> None:
    table = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
    services = (await api.client.get("/api/v1/namespaces/default/services", headers=table)).json()
    assert [row["cells"][:5] for row in services["rows"]] == [
        ["kubernetes", "ClusterIP", "10.96.0.1", "<none>", "443/TCP"]
    ]
    endpoints = (await api.client.get("/api/v1/namespaces/default/endpoints", headers=table)).json()
    assert [row["cells"][:2] for row in endpoints["rows"]] == [["kubernetes", f"{HOST_ADDRESS}:6443"]]


async def test_the_first_service_ip_is_taken_before_anyone_can_ask_for_it(api: API) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "thief"},
        "spec": {"clusterIP": "10.96.0.1", "ports": [{"port": 80}]},
    }
    response = await api.client.post("/api/v1/namespaces/default/services", json=body)
    assert response.status_code == 422, response.text
    assert "provided IP is already allocated" in response.json()["message"]


async def test_readyz_reports_the_bootstrap_controller_hook(api: API) -> None:
    response = await api.client.get("/readyz/poststarthook/bootstrap-controller")
    assert (response.status_code, response.text) == (200, "ok")


async def test_a_deleted_service_comes_back_within_one_interval(
    store: SqliteStore, clock: ManualClock
) -> None:
    async with serving(store, clock) as client:
        uid = (await client.get(SERVICE)).json()["metadata"]["uid"]
        await written(store, SERVICE_KEY, EventType.DELETE, lambda: client.delete(SERVICE))
        assert (await client.get(SERVICE)).status_code == 404
        await written(store, SERVICE_KEY, EventType.PUT, lambda: clock.advance(OPTIONS.interval))
        again = (await client.get(SERVICE)).json()
        assert again["metadata"]["uid"] != uid, "a new Service, created by the bootstrap controller"
        assert again["spec"]["clusterIP"] == "10.96.0.1"


async def test_edited_endpoints_are_put_back(store: SqliteStore, clock: ManualClock) -> None:
    async with serving(store, clock) as client:
        endpoints = (await client.get(ENDPOINTS)).json()
        endpoints["subsets"][0]["addresses"] = [{"ip": "10.0.0.99"}]
        assert (await client.put(ENDPOINTS, json=endpoints)).status_code == 200
        await written(store, ENDPOINTS_KEY, EventType.PUT, lambda: clock.advance(OPTIONS.interval))
        subsets = (await client.get(ENDPOINTS)).json()["subsets"]
        assert subsets[0]["addresses"] == [{"ip": HOST_ADDRESS}]


async def test_a_restart_keeps_the_same_objects_and_duplicates_none(
    store: SqliteStore, clock: ManualClock
) -> None:
    async with serving(store, clock) as client:
        first = [(await client.get(path)).json() for path in (SERVICE, ENDPOINTS, SLICE)]
    async with serving(store, clock) as client:
        again = [(await client.get(path)).json() for path in (SERVICE, ENDPOINTS, SLICE)]
        for before, after in zip(first, again, strict=True):
            assert after == before, f"{before['kind']} changed across a restart"
        for path in (
            "/api/v1/namespaces/default/services",
            "/api/v1/namespaces/default/endpoints",
            "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
        ):
            names = [item["metadata"]["name"] for item in (await client.get(path)).json()["items"]]
            assert names == ["kubernetes"], path


async def test_a_server_whose_service_ip_was_taken_still_starts_and_serves(
    store: SqliteStore, clock: ManualClock
) -> None:
    """Upstream logs "Unable to perform initial Kubernetes service initialization" and serves on."""
    async with serving(store, clock) as client:
        assert (await client.delete(SERVICE)).status_code == 200
        squatter = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "squatter"},
            "spec": {"clusterIP": "10.96.0.1", "ports": [{"port": 80}]},
        }
        created = await client.post("/api/v1/namespaces/default/services", json=squatter)
        assert created.status_code == 201, created.text
    async with serving(store, clock) as client:
        assert (await client.get("/readyz")).status_code == 200
        assert (await client.get(SERVICE)).status_code == 404  # 10.96.0.1 is still the squatter's
        assert (await client.get("/api/v1/namespaces/default/services/squatter")).status_code == 200


async def test_a_lab_served_elsewhere_advertises_its_api_address_and_port(
    store: SqliteStore, clock: ManualClock
) -> None:
    async with serving(store, clock):
        pass  # a first start on the default port
    moved = KubernetesServiceOptions.serving("192.168.56.10", 7443)
    async with serving(store, clock, moved) as client:
        assert (await client.get(SERVICE)).json()["spec"]["ports"][0]["targetPort"] == 7443
        subsets = (await client.get(ENDPOINTS)).json()["subsets"]
        assert subsets[0]["ports"] == [{"name": "https", "port": 7443, "protocol": "TCP"}]
        # The old address's lease was removed when that server stopped.
        assert subsets[0]["addresses"] == [{"ip": "192.168.56.10"}]
        endpoint_slice = (await client.get(SLICE)).json()
        assert endpoint_slice["ports"][0]["port"] == 7443
        assert endpoint_slice["endpoints"][0]["addresses"] == ["192.168.56.10"]


async def test_another_api_server_is_listed_while_its_lease_lives(
    store: SqliteStore, clock: ManualClock
) -> None:
    async with serving(store, clock) as client:
        other = MasterLeases(store, OPTIONS.lease_ttl)
        await other.update("172.18.0.100")  # a second API server, which then dies
        await written(store, SLICE_KEY, EventType.PUT, lambda: clock.advance(OPTIONS.interval))
        addresses = (await client.get(ENDPOINTS)).json()["subsets"][0]["addresses"]
        assert addresses == [{"ip": HOST_ADDRESS}, {"ip": "172.18.0.100"}]
        endpoint_slice = (await client.get(SLICE)).json()
        assert [e["addresses"] for e in endpoint_slice["endpoints"]] == [[HOST_ADDRESS], ["172.18.0.100"]]
        # It renews no more: its lease expires (15 s after it was written) ...
        gone = OPTIONS.lease_ttl - OPTIONS.interval
        await written(
            store, "/registry/masterleases/172.18.0.100", EventType.DELETE, lambda: clock.advance(gone)
        )
        # ... and the next reconciliation drops its address.
        next_tick = 2 * OPTIONS.interval - OPTIONS.lease_ttl
        await written(store, SLICE_KEY, EventType.PUT, lambda: clock.advance(next_tick))
        addresses = (await client.get(ENDPOINTS)).json()["subsets"][0]["addresses"]
        assert addresses == [{"ip": HOST_ADDRESS}]
        endpoint_slice = (await client.get(SLICE)).json()
        assert [e["addresses"] for e in endpoint_slice["endpoints"]] == [[HOST_ADDRESS]]


async def test_a_stopped_server_takes_its_lease_with_it(store: SqliteStore, clock: ManualClock) -> None:
    async with serving(store, clock):
        assert await store.get(f"/registry/masterleases/{HOST_ADDRESS}") is not None
    assert await store.get(f"/registry/masterleases/{HOST_ADDRESS}") is None


@pytest.mark.parametrize(
    ("host", "advertised"),
    [
        (None, HOST_ADDRESS),  # no socket (tests, benchmarks)
        ("127.0.0.1", HOST_ADDRESS),  # loopback: Endpoints may not hold it
        ("0.0.0.0", HOST_ADDRESS),  # a wildcard: upstream picks the host's interface
        ("lab.example.org", HOST_ADDRESS),
        ("::1", HOST_ADDRESS),  # the cluster is IPv4-only
        ("2001:db8::1", HOST_ADDRESS),
        ("169.254.1.1", HOST_ADDRESS),
        ("192.168.56.10", "192.168.56.10"),
    ],
)
def test_the_advertised_address_follows_upstreams_rules(host: str | None, advertised: str) -> None:
    assert advertise_address(host) == advertised


def test_the_service_ip_is_the_first_of_the_range() -> None:
    assert first_service_ip("10.96.0.0/12") == "10.96.0.1"
    assert first_service_ip("10.0.0.0/24") == "10.0.0.1"
    assert OPTIONS.service_ip == "10.96.0.1"
