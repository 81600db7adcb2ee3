"""Cluster IPs and node ports are claimed in the Service's own transaction: never two holders of one value.

The registry writes a Service with the claim keys of the values it holds (``/registry/ipaddresses/<ip>``,
``/registry/ranges/servicenodeports/<port>``), each guarded by "must not exist"; see the docstrings of
``controlplane.apiserver.registry`` and ``controlplane.api.strategies.services``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controlplane.api.kinds import builtin_types
from controlplane.api.strategies.services import NodePortRange, ServiceIPRange
from controlplane.apiserver.registry import asked_or_held
from tests.controlplane.apiserver.conftest import API
from tests.support.lab import LiveLab

SERVICES = "/api/v1/namespaces/default/services"
IP_KEY = "/registry/ipaddresses/"
PORT_KEY = "/registry/ranges/servicenodeports/"


def service(
    name: str, *, cluster_ip: str | None = None, type: str = "ClusterIP", **spec: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {"type": type, "ports": [{"port": 80}], **spec},
    }
    if cluster_ip is not None:
        body["spec"]["clusterIP"] = cluster_ip
    return body


#: Held by every cluster's ``kubernetes`` Service from the start (``apiserver/kubernetesservice.py``)
#: and by kube-system's ``kube-dns`` (kubeadm's CoreDNS addon, ``apiserver/kubesystemaddons.py``).
KUBERNETES_SERVICE_IP = "10.96.0.1"
KUBE_DNS_IP = "10.96.0.10"


async def claimed(api: API, prefix: str) -> dict[str, int]:
    """The tests' claim keys under ``prefix`` (the value part of the key) with their mod revisions."""
    page = await api.store.range(prefix)
    values = {kv.key[len(prefix) :]: kv.mod_revision for kv in page.kvs}
    if prefix == IP_KEY:
        assert KUBERNETES_SERVICE_IP in values, "the kubernetes Service lost its IP"
        assert KUBE_DNS_IP in values, "kube-dns lost its IP"
        values.pop(KUBERNETES_SERVICE_IP)
        values.pop(KUBE_DNS_IP)
    return values


# -- cluster IPs --------------------------------------------------------------------------------------


async def test_a_service_claims_its_cluster_ip_in_the_same_revision(api: API) -> None:
    created = await api.client.post(SERVICES, json=service("a", cluster_ip="10.96.0.50"))
    assert created.status_code == 201, created.text
    revision = int(created.json()["metadata"]["resourceVersion"])
    assert await claimed(api, IP_KEY) == {"10.96.0.50": revision}
    record = await api.store.get(IP_KEY + "10.96.0.50")
    assert record is not None
    assert b'"name":"a"' in record.value and b'"resource":"services"' in record.value


async def test_a_second_service_asking_for_a_taken_ip_gets_upstreams_422_and_nothing_is_written(
    api: API,
) -> None:
    assert (await api.client.post(SERVICES, json=service("a", cluster_ip="10.96.0.50"))).status_code == 201
    before = await api.store.current_revision()
    response = await api.client.post(SERVICES, json=service("b", cluster_ip="10.96.0.50"))
    assert response.status_code == 422
    status = response.json()
    assert status["reason"] == "Invalid"
    assert status["message"] == (
        'Service "b" is invalid: spec.clusterIPs: Invalid value: ["10.96.0.50"]: '
        "failed to allocate IP 10.96.0.50: provided IP is already allocated"
    )
    assert status["details"]["causes"][0]["field"] == "spec.clusterIPs"
    assert await api.store.current_revision() == before
    assert await api.store.get("/registry/services/specs/default/b") is None


async def test_two_services_racing_for_one_ip_one_wins(api: API) -> None:
    responses = await asyncio.gather(
        *(api.client.post(SERVICES, json=service(f"race-{i}", cluster_ip="10.96.0.77")) for i in range(4))
    )
    codes = sorted(r.status_code for r in responses)
    assert codes == [201, 422, 422, 422]
    winner = next(r.json()["metadata"]["name"] for r in responses if r.status_code == 201)
    names = [s["metadata"]["name"] for s in (await api.client.get(SERVICES)).json()["items"]]
    assert [n for n in names if n.startswith("race-")] == [winner]


async def test_a_taken_proposal_is_chosen_again(api: API) -> None:
    ips = ServiceIPRange()
    first_choice = ips.candidate("default/web", 0)
    await api.store.put(IP_KEY + first_choice, b"{}")  # someone holds the deterministic proposal
    response = await api.client.post(SERVICES, json=service("web"))
    assert response.status_code == 201, response.text
    spec = response.json()["spec"]
    assert spec["clusterIP"] == ips.candidate("default/web", 1) != first_choice
    assert spec["clusterIPs"] == [spec["clusterIP"]]
    assert set(await claimed(api, IP_KEY)) == {first_choice, spec["clusterIP"]}


async def test_delete_releases_the_ip_in_the_deleting_revision(api: API) -> None:
    assert (await api.client.post(SERVICES, json=service("a", cluster_ip="10.96.0.50"))).status_code == 201
    deleted = await api.client.delete(f"{SERVICES}/a")
    assert deleted.status_code == 200
    assert await claimed(api, IP_KEY) == {}
    again = await api.client.post(SERVICES, json=service("b", cluster_ip="10.96.0.50"))
    assert again.status_code == 201, again.text


async def test_a_finalizer_keeps_the_claim_until_the_service_is_gone(api: API) -> None:
    body = service("held", cluster_ip="10.96.0.60")
    body["metadata"]["finalizers"] = ["example.com/hold"]
    assert (await api.client.post(SERVICES, json=body)).status_code == 201
    assert (await api.client.delete(f"{SERVICES}/held")).status_code == 200
    assert "10.96.0.60" in await claimed(api, IP_KEY)
    patch = await api.client.patch(
        f"{SERVICES}/held",
        json={"metadata": {"finalizers": None}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert patch.status_code == 200, patch.text
    assert await api.store.get("/registry/services/specs/default/held") is None
    assert await claimed(api, IP_KEY) == {}


async def test_turning_external_name_releases_the_ip_and_back_claims_one(api: API) -> None:
    created = (await api.client.post(SERVICES, json=service("flip", cluster_ip="10.96.0.70"))).json()
    created["spec"] = {"type": "ExternalName", "externalName": "example.com"}
    updated = await api.client.put(f"{SERVICES}/flip", json=created)
    assert updated.status_code == 200, updated.text
    assert "clusterIP" not in updated.json()["spec"]
    assert await claimed(api, IP_KEY) == {}
    back = updated.json()
    back["spec"] = {"type": "ClusterIP", "ports": [{"port": 80}]}
    again = await api.client.put(f"{SERVICES}/flip", json=back)
    assert again.status_code == 200, again.text
    assert list(await claimed(api, IP_KEY)) == [again.json()["spec"]["clusterIP"]]


async def test_an_update_asking_for_a_taken_ip_is_422_and_keeps_the_old_claim(api: API) -> None:
    await api.client.post(SERVICES, json=service("taken", cluster_ip="10.96.0.80"))
    created = (
        await api.client.post(SERVICES, json=service("ext", type="ExternalName", externalName="a.b"))
    ).json()
    created["spec"] = {"type": "ClusterIP", "clusterIP": "10.96.0.80", "ports": [{"port": 80}]}
    response = await api.client.put(f"{SERVICES}/ext", json=created)
    assert response.status_code == 422
    assert "provided IP is already allocated" in response.json()["message"]
    assert list(await claimed(api, IP_KEY)) == ["10.96.0.80"]
    assert (await api.client.get(f"{SERVICES}/ext")).json()["spec"]["type"] == "ExternalName"


# -- node ports ----------------------------------------------------------------------------------------


async def test_node_ports_are_claimed_and_a_taken_one_is_422(api: API) -> None:
    first = service("np-a", type="NodePort", ports=[{"port": 80, "nodePort": 30080}])
    created = await api.client.post(SERVICES, json=first)
    assert created.status_code == 201, created.text
    assert "30080" in await claimed(api, PORT_KEY)
    second = service("np-b", type="NodePort", ports=[{"port": 80, "nodePort": 30080}])
    response = await api.client.post(SERVICES, json=second)
    assert response.status_code == 422
    assert response.json()["message"] == (
        'Service "np-b" is invalid: spec.ports[0].nodePort: Invalid value: 30080: '
        "provided port is already allocated"
    )
    assert await api.store.get("/registry/services/specs/default/np-b") is None


async def test_a_taken_node_port_proposal_is_chosen_again(api: API) -> None:
    ports = NodePortRange()
    first_choice = ports.candidate("default/np/ports/0", 0)
    await api.store.put(f"{PORT_KEY}{first_choice}", b"{}")
    response = await api.client.post(SERVICES, json=service("np", type="NodePort"))
    assert response.status_code == 201, response.text
    node_port = response.json()["spec"]["ports"][0]["nodePort"]
    assert node_port != first_choice and ports.contains(node_port)
    assert set(await claimed(api, PORT_KEY)) == {str(first_choice), str(node_port)}


async def test_node_ports_are_released_when_the_type_no_longer_needs_them(api: API) -> None:
    created = (await api.client.post(SERVICES, json=service("np", type="NodePort"))).json()
    node_port = created["spec"]["ports"][0]["nodePort"]
    assert list(await claimed(api, PORT_KEY)) == [str(node_port)]
    patched = await api.client.patch(
        f"{SERVICES}/np",
        json={"spec": {"type": "ClusterIP"}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert patched.status_code == 200, patched.text
    assert "nodePort" not in patched.json()["spec"]["ports"][0]
    assert await claimed(api, PORT_KEY) == {}
    assert list(await claimed(api, IP_KEY)) == [created["spec"]["clusterIP"]]  # the IP is still held


async def test_an_update_keeps_held_values_when_a_new_choice_collides(api: API) -> None:
    """A PUT that leaves the cluster IP out keeps it; only the colliding new node port is chosen again."""
    created = (await api.client.post(SERVICES, json=service("grow", cluster_ip="10.96.0.90"))).json()
    ports = NodePortRange()
    first_choice = ports.candidate("default/grow/ports/0", 0)
    await api.store.put(f"{PORT_KEY}{first_choice}", b"{}")
    created["spec"] = {"type": "NodePort", "ports": [{"port": 80}]}  # no clusterIP: kubectl replace
    response = await api.client.put(f"{SERVICES}/grow", json=created)
    assert response.status_code == 200, response.text
    spec = response.json()["spec"]
    assert spec["clusterIP"] == "10.96.0.90"
    assert spec["ports"][0]["nodePort"] not in (None, first_choice)
    assert set(await claimed(api, PORT_KEY)) == {str(first_choice), str(spec["ports"][0]["nodePort"])}


# -- dry run -------------------------------------------------------------------------------------------


async def test_a_dry_run_claims_nothing_but_reports_a_taken_ip(api: API) -> None:
    dry = await api.client.post(SERVICES + "?dryRun=All", json=service("dry", cluster_ip="10.96.0.51"))
    assert dry.status_code == 201, dry.text
    assert await claimed(api, IP_KEY) == {}
    assert await api.store.get("/registry/services/specs/default/dry") is None
    assert (await api.client.post(SERVICES, json=service("real", cluster_ip="10.96.0.51"))).status_code == 201
    again = await api.client.post(SERVICES + "?dryRun=All", json=service("dry", cluster_ip="10.96.0.51"))
    assert again.status_code == 422
    assert "provided IP is already allocated" in again.json()["message"]


async def test_a_dry_run_delete_keeps_the_claim(api: API) -> None:
    await api.client.post(SERVICES, json=service("keep", cluster_ip="10.96.0.52"))
    assert (await api.client.delete(f"{SERVICES}/keep?dryRun=All")).status_code == 200
    assert list(await claimed(api, IP_KEY)) == ["10.96.0.52"]


# -- the claim keys are internal -----------------------------------------------------------------------


def test_no_resource_type_is_stored_under_the_claim_keys() -> None:
    for rtype in builtin_types():
        if rtype.storage_prefix is None:
            continue
        prefix = rtype.prefix()
        assert not IP_KEY.startswith(prefix) and not PORT_KEY.startswith(prefix), rtype.plural
        assert not prefix.startswith(("/registry/ipaddresses/", "/registry/ranges/")), rtype.plural


async def test_the_claim_keys_are_not_served(api: API) -> None:
    await api.client.post(SERVICES, json=service("a", cluster_ip="10.96.0.50"))
    assert (await api.client.get("/apis/networking.k8s.io/v1/ipaddresses")).status_code == 404
    # The group serves Ingresses and NetworkPolicies; the allocator's claims are not among them.
    resources = (await api.client.get("/apis/networking.k8s.io/v1")).json()["resources"]
    assert "ipaddresses" not in [r["name"] for r in resources]
    listed = (await api.client.get("/api/v1/services")).json()["items"]
    assert [s["metadata"]["name"] for s in listed] == ["a", "kubernetes", "kube-dns"]  # no claim keys


def test_asked_or_held_counts_held_values_as_asked_for() -> None:
    held = {"spec": {"clusterIP": "10.96.0.9", "ports": [{"port": 80, "nodePort": 30001}]}}
    asked = {"spec": {"type": "NodePort", "ports": [{"port": 81, "nodePort": 30002}]}}
    merged = asked_or_held(held, asked)
    assert merged["spec"]["clusterIP"] == "10.96.0.9"
    assert [p["nodePort"] for p in merged["spec"]["ports"]] == [30001, 30002]
    assert merged["spec"]["type"] == "NodePort"
    assert held["spec"]["ports"] == [{"port": 80, "nodePort": 30001}]  # inputs untouched


# -- kubectl against a live lab ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveLab]:
    live = LiveLab(Path(tmp_path_factory.mktemp("lab")))
    try:
        yield live
    finally:
        live.stop()


def test_kubectl_create_service_twice_with_one_cluster_ip_shows_upstreams_error(lab: LiveLab) -> None:
    args = ("create", "service", "clusterip", "dup", "--tcp=80", "--clusterip=10.96.0.50")
    lab.kubectl(*args)
    again = lab.kubectl(*args, check=False)
    assert again.returncode == 1
    # kubectl's create service wraps the Status message (kubectl pkg/cmd/create/create_service.go).
    assert again.stderr.strip() == (
        'error: failed to create ClusterIP service: Service "dup" is invalid: '
        'spec.clusterIPs: Invalid value: ["10.96.0.50"]: '
        "failed to allocate IP 10.96.0.50: provided IP is already allocated"
    )
    other = lab.kubectl(
        "create", "service", "clusterip", "dup2", "--tcp=80", "--clusterip=10.96.0.50", check=False
    )
    assert "provided IP is already allocated" in other.stderr
    lab.kubectl("delete", "service", "dup")
    lab.kubectl("create", "service", "clusterip", "dup2", "--tcp=80", "--clusterip=10.96.0.50")
