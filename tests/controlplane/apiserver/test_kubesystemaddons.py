"""kubeadm's addon phase at the API server's start: kube-proxy's and CoreDNS's objects in kube-system,
created once (a later start leaves them, and what a student deleted, alone); componentstatuses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from controlplane.apiserver.kubesystemaddons import (
    COREDNS_IMAGE,
    DNS_SERVICE_IP,
    KUBE_PROXY_IMAGE,
    ensure_kube_system_addons,
)
from controlplane.store.sqlite import SqliteStore
from tests.controlplane.apiserver.conftest import API
from tests.support.apiserver import admin_api

KS = "/api/v1/namespaces/kube-system"
APPS = "/apis/apps/v1/namespaces/kube-system"
RBAC = "/apis/rbac.authorization.k8s.io/v1"


async def get(client: httpx.AsyncClient, path: str) -> Any:
    response = await client.get(path)
    assert response.status_code == 200, response.text
    return response.json()


async def test_the_api_server_starts_with_kube_proxy_and_coredns(api: API) -> None:
    ds = await get(api.client, f"{APPS}/daemonsets/kube-proxy")
    assert ds["metadata"]["labels"] == {"k8s-app": "kube-proxy"}
    pod = ds["spec"]["template"]["spec"]
    assert pod["hostNetwork"] is True and pod["priorityClassName"] == "system-node-critical"
    assert pod["tolerations"] == [{"operator": "Exists"}]
    assert pod["containers"][0]["image"] == KUBE_PROXY_IMAGE
    assert pod["serviceAccountName"] == "kube-proxy"
    await get(api.client, f"{KS}/serviceaccounts/kube-proxy")
    proxy_config = await get(api.client, f"{KS}/configmaps/kube-proxy")
    assert "kind: KubeProxyConfiguration" in proxy_config["data"]["config.conf"]
    binding = await get(api.client, f"{RBAC}/clusterrolebindings/kubeadm:node-proxier")
    assert binding["roleRef"]["name"] == "system:node-proxier"

    deploy = await get(api.client, f"{APPS}/deployments/coredns")
    assert deploy["spec"]["replicas"] == 2
    assert deploy["metadata"]["labels"] == {"k8s-app": "kube-dns"}
    spec = deploy["spec"]["template"]["spec"]
    assert spec["priorityClassName"] == "system-cluster-critical"
    assert {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"} in spec["tolerations"]
    assert spec["containers"][0]["image"] == COREDNS_IMAGE
    corefile = (await get(api.client, f"{KS}/configmaps/coredns"))["data"]["Corefile"]
    assert corefile.startswith(".:53 {") and "forward . /etc/resolv.conf" in corefile
    svc = await get(api.client, f"{KS}/services/kube-dns")
    assert svc["spec"]["clusterIP"] == DNS_SERVICE_IP == "10.96.0.10"
    assert [(p["name"], p["port"], p["protocol"]) for p in svc["spec"]["ports"]] == [
        ("dns", 53, "UDP"),
        ("dns-tcp", 53, "TCP"),
        ("metrics", 9153, "TCP"),
    ]
    assert svc["spec"]["selector"] == {"k8s-app": "kube-dns"}
    await get(api.client, f"{KS}/serviceaccounts/coredns")
    role = await get(api.client, f"{RBAC}/clusterroles/system:coredns")
    assert {
        "apiGroups": ["discovery.k8s.io"],
        "resources": ["endpointslices"],
        "verbs": ["list", "watch"],
    } in (role["rules"])
    coredns_binding = await get(api.client, f"{RBAC}/clusterrolebindings/system:coredns")
    assert coredns_binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "coredns", "namespace": "kube-system"}
    ]


async def test_the_phase_runs_once_and_never_brings_back_what_was_deleted(tmp_path: Path) -> None:
    store = SqliteStore("test", path=tmp_path / "store.sqlite3")
    await store.start()
    try:
        async with admin_api(store) as (server, client):
            ds = await get(client, f"{APPS}/daemonsets/kube-proxy")
            assert not await ensure_kube_system_addons(server.registries), "it ran at the start already"
            assert (await client.delete(f"{APPS}/deployments/coredns")).status_code == 200
            patch = {"metadata": {"labels": {"edited": "yes"}}}
            headers = {"Content-Type": "application/merge-patch+json"}
            assert (
                await client.patch(f"{KS}/configmaps/coredns", json=patch, headers=headers)
            ).status_code == 200
        async with admin_api(store) as (server, client):  # the cluster starts again
            again = await get(client, f"{APPS}/daemonsets/kube-proxy")
            assert again["metadata"]["resourceVersion"] == ds["metadata"]["resourceVersion"], "left alone"
            assert (await client.get(f"{APPS}/deployments/coredns")).status_code == 404, (
                "kubeadm does not recreate"
            )
            edited = await get(client, f"{KS}/configmaps/coredns")
            assert edited["metadata"]["labels"] == {"edited": "yes"}
    finally:
        await store.close()


async def test_componentstatuses_are_deprecated_and_read_only(api: API) -> None:
    response = await api.client.get("/api/v1/componentstatuses")
    assert response.status_code == 200
    assert response.headers["Warning"] == '299 - "v1 ComponentStatus is deprecated in v1.19+"'
    body = response.json()
    assert body["kind"] == "ComponentStatusList"
    # No component runs beside this bare API server: the probes of its two servers are refused.
    conditions = {item["metadata"]["name"]: item["conditions"][0] for item in body["items"]}
    assert conditions["etcd-0"] == {"type": "Healthy", "status": "True", "message": "ok"}
    assert conditions["scheduler"]["status"] == "False"
    assert conditions["controller-manager"]["message"] == (
        'Get "https://127.0.0.1:10257/healthz": dial tcp 127.0.0.1:10257: connect: connection refused'
    )
    api.server.components_healthy = lambda name: name == "scheduler"
    one = (await get(api.client, "/api/v1/componentstatuses/scheduler"))["conditions"][0]
    assert (one["status"], one["message"]) == ("True", "ok")
    table = await api.client.get(
        "/api/v1/componentstatuses", headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
    )
    assert [c["name"] for c in table.json()["columnDefinitions"]] == ["Name", "Status", "Message", "Error"]
    assert table.json()["rows"][2]["cells"] == ["scheduler", "Healthy", "ok", ""]
    missing = await api.client.get("/api/v1/componentstatuses/kubelet")
    assert missing.status_code == 500
    assert missing.json()["message"] == "Internal error occurred: Component not found: kubelet"
    refused = await api.client.delete("/api/v1/componentstatuses/scheduler")
    assert refused.status_code == 405
