"""kubeadm's addon phase at the API server's start: kube-proxy's and CoreDNS's objects in kube-system,
created once (a later start leaves them, and what a student deleted, alone); componentstatuses; and
what kubeadm init uploads before them: kubeadm-config, kubelet-config, cluster-info and their RBAC."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from controlplane.apiserver.kubeadmconfig import (
    CLUSTER_CONFIGURATION,
    CLUSTER_INFO_ROLE,
    KubeadmInit,
    cluster_info_kubeconfig,
    go_duration,
    kubelet_configuration,
    upload_kubelet_config_objects,
)
from controlplane.apiserver.kubesystemaddons import (
    COREDNS_IMAGE,
    DNS_SERVICE_IP,
    KUBE_PROXY_IMAGE,
    ensure_kube_system_addons,
    ensure_kubeadm_init,
)
from controlplane.client.config import Config
from controlplane.client.rest import RESTClient
from controlplane.identity import SYSTEM_MASTERS
from controlplane.runtime import Lab, LabConfig
from controlplane.store.sqlite import SqliteStore
from controlplane.timing import CLASSROOM, UPSTREAM
from tests.controlplane.apiserver.conftest import API
from tests.support.apiserver import admin_api
from tests.support.inprocess import wait_for

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


# -- what kubeadm init uploads before its addons (kubeadmconfig.py) ----------------------------------

CLUSTER_INFO = "/api/v1/namespaces/kube-public/configmaps/cluster-info"
KUBEADM_CONFIG = f"{KS}/configmaps/kubeadm-config"
KUBELET_CONFIG = f"{KS}/configmaps/kubelet-config"
CA_PEM = b"-----BEGIN CERTIFICATE-----\nMIIBserving\n-----END CERTIFICATE-----\n"
INIT = KubeadmInit.for_cluster(
    "demo", public_ip="172.18.0.1", secure_port=6443, ca_pem=CA_PEM, timing=CLASSROOM
)
#: The objects of kubeadm's three phases, by (namespace, plural, name).
UPLOADS = [
    ("kube-system", "configmaps", "kubeadm-config"),
    ("kube-system", "roles", "kubeadm:nodes-kubeadm-config"),
    ("kube-system", "rolebindings", "kubeadm:nodes-kubeadm-config"),
    ("kube-system", "configmaps", "kubelet-config"),
    ("kube-system", "roles", "kubeadm:kubelet-config"),
    ("kube-system", "rolebindings", "kubeadm:kubelet-config"),
    ("kube-public", "configmaps", "cluster-info"),
    ("kube-public", "roles", "kubeadm:bootstrap-signer-clusterinfo"),
    ("kube-public", "rolebindings", "kubeadm:bootstrap-signer-clusterinfo"),
]


def path_of(namespace: str, plural: str, name: str) -> str:
    group = "/api/v1" if plural == "configmaps" else RBAC
    return f"{group}/namespaces/{namespace}/{plural}/{name}"


def as_user(user: str, *groups: str) -> dict[str, str]:
    """Impersonation headers: the admin acts as ``user`` in ``groups`` (and system:authenticated)."""
    headers = {"Impersonate-User": user}
    if groups:
        headers["Impersonate-Group"] = groups[0]
    return headers


async def test_kubeadms_uploads_have_upstreams_names_keys_and_rbac(tmp_path: Path) -> None:
    store = SqliteStore("test", path=tmp_path / "store.sqlite3")
    await store.start()
    try:
        async with admin_api(store, kubeadm=INIT) as (_, client):
            kubeadm_config = await get(client, KUBEADM_CONFIG)
            assert kubeadm_config["data"] == {"ClusterConfiguration": CLUSTER_CONFIGURATION}
            assert (
                "labels" not in kubeadm_config["metadata"] and "annotations" not in kubeadm_config["metadata"]
            )
            kubelet = await get(client, KUBELET_CONFIG)
            assert list(kubelet["data"]) == ["kubelet"]
            assert kubelet["data"]["kubelet"] == kubelet_configuration(CLASSROOM)[0]
            # A configuration with the classroom's timers is one the administrator supplied: unsigned.
            assert "annotations" not in kubelet["metadata"]
            info = await get(client, CLUSTER_INFO)
            assert info["data"] == {
                "kubeconfig": cluster_info_kubeconfig("https://172.18.0.1:6443/clusters/demo", CA_PEM)
            }
            for namespace, role, config_map, subjects in [
                (
                    "kube-system",
                    "kubeadm:nodes-kubeadm-config",
                    "kubeadm-config",
                    [("Group", "system:bootstrappers:kubeadm:default-node-token"), ("Group", "system:nodes")],
                ),
                (
                    "kube-system",
                    "kubeadm:kubelet-config",
                    "kubelet-config",
                    [("Group", "system:nodes"), ("Group", "system:bootstrappers:kubeadm:default-node-token")],
                ),
                (
                    "kube-public",
                    "kubeadm:bootstrap-signer-clusterinfo",
                    "cluster-info",
                    [("User", "system:anonymous")],
                ),
            ]:
                rules = (await get(client, path_of(namespace, "roles", role)))["rules"]
                assert rules == [
                    {
                        "verbs": ["get"],
                        "apiGroups": [""],
                        "resources": ["configmaps"],
                        "resourceNames": [config_map],
                    }
                ]
                binding = await get(client, path_of(namespace, "rolebindings", role))
                assert binding["roleRef"] == {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "Role",
                    "name": role,
                }
                assert [(s["kind"], s["name"]) for s in binding["subjects"]] == subjects

            # What each may read: a joining node's token and the nodes the two configurations ...
            token = as_user("system:bootstrap:abc123", "system:bootstrappers:kubeadm:default-node-token")
            for path in (KUBEADM_CONFIG, KUBELET_CONFIG):
                assert (await client.get(path, headers=token)).status_code == 200
            assert (await client.get(f"{KS}/configmaps/coredns", headers=token)).status_code == 403
            node = as_user("kubelab:some-node", "system:nodes")
            assert (await client.get(KUBELET_CONFIG, headers=node)).status_code == 200
            # ... and anyone cluster-info, nothing else of kube-public.
            anonymous = as_user("system:anonymous", "system:unauthenticated")
            assert (await client.get(CLUSTER_INFO, headers=anonymous)).status_code == 200
            listed = await client.get("/api/v1/namespaces/kube-public/configmaps", headers=anonymous)
            assert listed.status_code == 403
    finally:
        await store.close()


async def test_an_anonymous_client_reads_cluster_info_where_anonymous_requests_are_served(
    tmp_path: Path,
) -> None:
    store = SqliteStore("test", path=tmp_path / "store.sqlite3")
    await store.start()
    try:
        async with admin_api(store, kubeadm=INIT, anonymous=True) as (server, _):
            transport = httpx.ASGITransport(app=server)
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as nobody:
                info = await nobody.get(CLUSTER_INFO)
                assert info.status_code == 200, info.text
                assert info.json()["data"]["kubeconfig"].startswith("apiVersion: v1\nclusters:\n- cluster:\n")
                refused = await nobody.get(KUBEADM_CONFIG)
                assert refused.status_code == 403
                assert refused.json()["message"] == (
                    'configmaps "kubeadm-config" is forbidden: User "system:anonymous" cannot get resource '
                    '"configmaps" in API group "" in the namespace "kube-system"'
                )
    finally:
        await store.close()


async def test_kubeadms_uploads_are_left_as_kubeadm_left_them(tmp_path: Path) -> None:
    """Made once: a restart writes nothing, what a student deleted or edited stays so; a phase whose
    three objects are all gone runs again, as does every phase on a cluster made before it existed."""
    store = SqliteStore("test", path=tmp_path / "store.sqlite3")
    await store.start()
    try:
        async with admin_api(store) as (server, client):  # a cluster from before the uploads
            assert (await client.get(KUBEADM_CONFIG)).status_code == 404
        async with admin_api(store, kubeadm=INIT) as (server, client):  # its next start: they arrive
            before = {key: await get(client, path_of(*key)) for key in UPLOADS}
            assert await ensure_kubeadm_init(server.registries, INIT) == [], "every phase ran already"
            assert (await client.delete(KUBELET_CONFIG)).status_code == 200
            patch = {"data": {"ClusterConfiguration": "edited"}}
            headers = {"Content-Type": "application/merge-patch+json"}
            assert (await client.patch(KUBEADM_CONFIG, json=patch, headers=headers)).status_code == 200
            for plural, name in [
                ("configmaps", "cluster-info"),
                ("roles", CLUSTER_INFO_ROLE),
                ("rolebindings", CLUSTER_INFO_ROLE),
            ]:
                assert (await client.delete(path_of("kube-public", plural, name))).status_code == 200
        async with admin_api(store, kubeadm=INIT) as (server, client):  # a restart
            assert (await client.get(KUBELET_CONFIG)).status_code == 404, "kubeadm does not make it again"
            assert (await get(client, KUBEADM_CONFIG))["data"] == {"ClusterConfiguration": "edited"}
            untouched = [key for key in UPLOADS if key[0] == "kube-system" and key[1] != "configmaps"]
            for key in untouched:  # the Roles and RoleBindings: not written again
                again = await get(client, path_of(*key))
                assert again["metadata"]["resourceVersion"] == before[key]["metadata"]["resourceVersion"]
            # The whole bootstrap-token phase was deleted: it ran again.
            info = await get(client, CLUSTER_INFO)
            assert (
                info["metadata"]["uid"]
                != before[("kube-public", "configmaps", "cluster-info")]["metadata"]["uid"]
            )
    finally:
        await store.close()


def test_the_kubelet_configuration_is_kubeadms_with_the_clusters_timers() -> None:
    upstream, signed = kubelet_configuration(UPSTREAM)
    assert signed, "upstream's timers are the kubelet's defaults: kubeadm's own configuration"
    parsed = yaml.safe_load(upstream)
    assert (
        parsed["apiVersion"] == "kubelet.config.k8s.io/v1beta1" and parsed["kind"] == "KubeletConfiguration"
    )
    assert parsed["clusterDNS"] == [DNS_SERVICE_IP] and parsed["clusterDomain"] == "cluster.local"
    assert parsed["staticPodPath"] == "/etc/kubernetes/manifests" and parsed["rotateCertificates"] is True
    assert (parsed["nodeStatusUpdateFrequency"], parsed["syncFrequency"]) == ("0s", "0s")
    assert "nodeLeaseDurationSeconds" not in parsed
    lines = [line.split(":")[0] for line in upstream.splitlines() if not line.startswith((" ", "-"))]
    assert lines == sorted(lines), "sigs.k8s.io/yaml sorts the keys"
    classroom, signed = kubelet_configuration(CLASSROOM)
    assert not signed
    ours = yaml.safe_load(classroom)
    assert ours["nodeStatusUpdateFrequency"] == "2s" and ours["nodeStatusReportFrequency"] == "1m0s"
    assert ours["syncFrequency"] == "12s" and ours["nodeLeaseDurationSeconds"] == 8
    assert {k: v for k, v in ours.items() if k not in parsed} == {"nodeLeaseDurationSeconds": 8}
    [(_, config_map), *_] = upload_kubelet_config_objects(UPSTREAM)
    digest = hashlib.sha256(upstream.encode()).hexdigest()
    assert config_map["metadata"]["annotations"] == {
        "kubeadm.kubernetes.io/component-config.hash": f"sha256:{digest}"
    }


def test_the_cluster_configuration_is_this_labs() -> None:
    parsed = yaml.safe_load(CLUSTER_CONFIGURATION)
    assert parsed["apiVersion"] == "kubeadm.k8s.io/v1beta4" and parsed["kind"] == "ClusterConfiguration"
    assert parsed["kubernetesVersion"] == "v1.37.0" and parsed["clusterName"] == "kubernetes"
    assert parsed["networking"] == {
        "dnsDomain": "cluster.local",
        "podSubnet": "10.244.0.0/14",
        "serviceSubnet": "10.96.0.0/12",
    }
    assert parsed["encryptionAlgorithm"] == "ECDSA-P256"
    lines = [line.split(":")[0] for line in CLUSTER_CONFIGURATION.splitlines() if not line.startswith(" ")]
    assert lines == sorted(lines)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (0.5, "500ms"),
        (2, "2s"),
        (1.5, "1.5s"),
        (12, "12s"),
        (60, "1m0s"),
        (300, "5m0s"),
        (3600, "1h0m0s"),
        (5400.25, "1h30m0.25s"),
    ],
)
def test_durations_are_written_as_go_writes_them(seconds: float, text: str) -> None:
    assert go_duration(seconds) == text


async def test_a_labs_cluster_keeps_them_across_a_restart(tmp_path: Path) -> None:
    """A lab's cluster (runtime.py): the uploads, cluster-info signed with the joined node's token and
    the API server's extension-apiserver-authentication; started again, nothing of it is rewritten."""
    names = [
        ("kube-public", "cluster-info"),
        ("kube-system", "kubeadm-config"),
        ("kube-system", "kubelet-config"),
        ("kube-system", "extension-apiserver-authentication"),
    ]

    async def config_maps(running: Lab) -> dict[tuple[str, str], Any]:
        demo = running.cluster("demo")
        assert demo.apiserver is not None
        token = await asyncio.to_thread(demo.tokens.issue, "test-admin", [SYSTEM_MASTERS])
        config = Config.for_in_process(
            demo.apiserver, "demo", mount_prefix="/clusters/demo", bearer_token=token, qps=-1
        )
        async with RESTClient(config) as client:
            await wait_for(
                client.resource("", "v1", "configmaps", "kube-public"),
                lambda items: any(
                    k.startswith("jws-kubeconfig-") for cm in items for k in cm.get("data") or {}
                ),
            )
            return {
                (namespace, name): await client.resource("", "v1", "configmaps", namespace).get(name)
                for namespace, name in names
            }

    config = LabConfig(data_dir=tmp_path, components=("controller-manager", "kubelet"), nodes=1)
    running = Lab(config)
    await running.start()
    try:
        first = await config_maps(running)
        demo = running.cluster("demo")
        assert first[("kube-system", "extension-apiserver-authentication")]["data"] == {
            "client-ca-file": demo.pki.ca.certificate_pem.decode()
        }
        # No HTTPS port in this lab: cluster-info trusts the cluster's own CA, as kube-root-ca.crt does.
        kubeconfig = first[("kube-public", "cluster-info")]["data"]["kubeconfig"]
        assert kubeconfig == cluster_info_kubeconfig("https://172.18.0.1:6443/clusters/demo", demo.root_ca)
    finally:
        await running.stop()
    running = Lab(config)
    await running.start()
    try:
        again = await config_maps(running)
        await asyncio.sleep(0.5)  # the signer and the trust controller have looked: still nothing written
        again = await config_maps(running)
    finally:
        await running.stop()
    for key in names:
        assert again[key]["metadata"]["resourceVersion"] == first[key]["metadata"]["resourceVersion"], key
