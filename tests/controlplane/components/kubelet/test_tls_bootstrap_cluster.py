"""TLS bootstrapping in a running cluster: each joined node's kubelet starts with kubeadm's bootstrap
token only, asks for its client certificate with a CSR that the controller manager approves and signs,
and from then on is ``system:node:<node>``.

Upstream: kubeadm's bootstrap-token phase (phases/bootstraptoken/node/tlsbootstrap.go), the kubelet's
pkg/kubelet/certificate/bootstrap/bootstrap.go, pkg/controller/certificates/approver/sarapprove.go.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509

from controlplane.api import bootstraptoken
from controlplane.client.config import Config
from controlplane.client.rest import RESTClient
from controlplane.components.kubelet.certificate import CertificateManager
from controlplane.identity import SYSTEM_MASTERS
from controlplane.runtime import Cluster, ClusterConfig
from controlplane.store.sqlite import SqliteStore
from tests.support.inprocess import condition

NODES = ("node-1", "node-2")


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[tuple[Cluster, RESTClient]]:
    store = SqliteStore("tls", path=tmp_path / "store.sqlite3")
    cluster = Cluster("tls", ClusterConfig(nodes=len(NODES)), data_dir=tmp_path, store=store)
    cluster.trace.recording = True
    await cluster.start()
    assert cluster.apiserver is not None
    token = cluster.tokens.issue("admin", [SYSTEM_MASTERS])
    client = RESTClient(
        Config.for_in_process(
            cluster.apiserver, "tls", mount_prefix="/clusters/tls", bearer_token=token, qps=-1
        )
    )
    try:
        yield cluster, client
    finally:
        await client.aclose()
        await cluster.stop()


def manager_of(cluster: Cluster, node: str) -> CertificateManager:
    manager = cluster.component_certificates[f"kubelet:{node}"]
    assert isinstance(manager, CertificateManager), "a joined node's kubelet has its own certificate manager"
    return manager


async def test_each_joined_kubelet_gets_its_certificate_through_an_approved_csr(
    cluster: tuple[Cluster, RESTClient],
) -> None:
    running, admin = cluster
    secrets = await admin.resource("", "v1", "secrets", "kube-system").list(
        field_selector="type=bootstrap.kubernetes.io/token"
    )
    assert len(secrets["items"]) == 1, "kubeadm's token for joining nodes"
    token_id = bootstraptoken.get_data(secrets["items"][0], "token-id")
    bindings = admin.resource("rbac.authorization.k8s.io", "v1", "clusterrolebindings")
    for name in ("kubelet-bootstrap", "node-autoapprove-bootstrap", "node-autoapprove-certificate-rotation"):
        await bindings.get(f"kubeadm:{name}")
    csrs = admin.resource("certificates.k8s.io", "v1", "certificatesigningrequests")

    for node in NODES:
        manager = manager_of(running, node)
        assert len(manager.requests) == 1 and manager.requests[0].startswith("node-csr-")
        csr: Any = await csrs.get(manager.requests[0])
        assert csr["spec"]["username"] == f"system:bootstrap:{token_id}"
        approved = condition(csr, "Approved")
        assert approved is not None and approved["reason"] == "AutoApproved"
        issued = x509.load_pem_x509_certificate(base64.b64decode(csr["status"]["certificate"]))
        assert issued.subject.rfc4514_string() == f"CN=system:node:{node},O=system:nodes"
        assert issued.serial_number == manager.serial, "the kubelet presents the certificate it was issued"

    # On the trace: the CSR sent with the token, then everything else as the node itself.
    requests = [
        e
        for e in running.trace.recorder
        if e["type"] == "request.received" and e.get("from") == "kubelet:node-1" and e.get("user")
    ]
    users = [e["user"] for e in requests]
    first_as_node = users.index("system:node:node-1")
    assert set(users[:first_as_node]) == {f"system:bootstrap:{token_id}"}
    assert [e["verb"] for e in requests[:first_as_node]] == ["create", "watch"]
    assert set(users[first_as_node:]) == {"system:node:node-1"}
    assert {"nodes", "leases"} <= {e.get("resource") for e in requests[first_as_node:]}
    lease = await admin.resource("coordination.k8s.io", "v1", "leases", "kube-node-lease").get("node-1")
    assert lease["spec"]["holderIdentity"] == "node-1"


async def test_a_restarted_kubelet_keeps_its_certificate(cluster: tuple[Cluster, RESTClient]) -> None:
    running, admin = cluster
    before = manager_of(running, "node-2").serial

    assert await running.stop_component("kubelet:node-2")
    assert await running.start_component("kubelet:node-2")

    after = manager_of(running, "node-2")
    assert after.requests == [] and after.serial == before, "kubelet-client-current.pem is still there"
    listed = await admin.resource("certificates.k8s.io", "v1", "certificatesigningrequests").list()
    assert len(listed["items"]) == len(NODES)
