"""The kubelet's certificate manager: TLS bootstrapping with a bootstrap token, then rotation with its
own certificate, against an API server and the CSR approving and signing controllers on a ManualClock.

Upstream: k8s.io/client-go util/certificate/certificate_manager.go (nextRotationDeadline, rotateCerts),
util/certificate/csr/csr.go, pkg/kubelet/certificate/bootstrap/bootstrap.go (digestedName).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import random
import stat
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509

from controlplane.api import bootstraptoken
from controlplane.api.bootstraptoken import BootstrapToken
from controlplane.apiserver.filters.x509 import X509Authenticator
from controlplane.client.config import Config
from controlplane.client.manager import Manager
from controlplane.client.rest import RESTClient
from controlplane.clock import ManualClock
from controlplane.components.bootstraptoken import bootstrap_token_phase
from controlplane.components.controllers import csrapproving, csrsigning
from controlplane.components.kubelet import certificate
from controlplane.components.kubelet.certificate import (
    CertificateManager,
    CertificateRequestError,
    KeyPair,
    NodeCertificateStore,
)
from controlplane.pki import CertificateAuthority, new_ca
from tests.support.inprocess import CLUSTER, InProcessCluster, condition, in_process_cluster

#: 2026-01-01T00:00:30Z
START = 1_767_225_630.0
KUBELET_AGENT = "kubelet/v1.37.0-kubelab (node/node-1)"


# -- the pure core -------------------------------------------------------------------------------------


def test_the_rotation_deadline_is_between_70_and_90_percent_of_the_life() -> None:
    assert certificate.next_rotation_deadline(0, 100, 0.0) == 70
    assert certificate.next_rotation_deadline(1000, 2000, 0.5) == 1800
    assert certificate.next_rotation_deadline(0, 100, 0.999999) == pytest.approx(90, abs=1e-3)
    rng = random.Random(3)
    deadlines = [certificate.next_rotation_deadline(0, 86400, rng.random()) for _ in range(200)]
    assert all(0.7 * 86400 <= d < 0.9 * 86400 for d in deadlines)
    assert max(deadlines) - min(deadlines) > 0.15 * 86400, "jittered: nodes made at once renew apart"


def test_the_bootstrap_csr_is_named_by_a_digest_of_its_key_subject_and_usages() -> None:
    key, other = certificate.new_key(), certificate.new_key()
    name = certificate.digested_name(key.public_key(), "node-1")

    assert name.startswith("node-csr-") and len(name) == len("node-csr-") + 43  # base64url of 32 bytes
    assert name == certificate.digested_name(key.public_key(), "node-1"), "the same request, the same name"
    assert name != certificate.digested_name(other.public_key(), "node-1")
    assert name != certificate.digested_name(key.public_key(), "node-2")
    assert name != certificate.digested_name(key.public_key(), "node-1", ["client auth"])


def test_the_csr_asks_the_kubelet_client_signer_for_the_nodes_name() -> None:
    key = certificate.new_key()
    request = certificate.certificate_request(key, "node-1")
    named = certificate.csr_object(request, name="node-csr-x")
    rotation = certificate.csr_object(request, expiration_seconds=None)

    assert named["metadata"] == {"name": "node-csr-x"}
    assert rotation["metadata"] == {"generateName": "csr-"}
    assert named["spec"]["signerName"] == "kubernetes.io/kube-apiserver-client-kubelet"
    assert named["spec"]["usages"] == ["digital signature", "client auth"]
    assert named["spec"]["expirationSeconds"] == 86400 and "expirationSeconds" not in rotation["spec"]
    parsed = x509.load_pem_x509_csr(request)
    assert parsed.subject.rfc4514_string() == "CN=system:node:node-1,O=system:nodes"


def test_a_denied_or_failed_csr_gives_no_certificate() -> None:
    def csr(*conditions: dict[str, str], certificate_pem: str = "") -> dict[str, Any]:
        return {"status": {"conditions": list(conditions), "certificate": certificate_pem}}

    assert certificate.issued_certificate(csr()) is None
    assert certificate.issued_certificate(csr({"type": "Approved", "status": "True"})) is None, (
        "not signed yet"
    )
    with pytest.raises(CertificateRequestError, match="is denied, reason: Nope, message: no"):
        certificate.issued_certificate(
            csr({"type": "Denied", "status": "True", "reason": "Nope", "message": "no"})
        )
    with pytest.raises(CertificateRequestError, match="is failed, reason: SignerValidationFailure"):
        certificate.issued_certificate(
            csr({"type": "Failed", "status": "True", "reason": "SignerValidationFailure"})
        )


# -- against an API server -----------------------------------------------------------------------------


@dataclass
class Node:
    """An API server with the CSR controllers, kubeadm's bootstrap-token phase run, on a ManualClock."""

    cluster: InProcessCluster
    clock: ManualClock
    ca: CertificateAuthority
    token: str
    revoked: set[int]
    path: Path

    def config(self, **options: Any) -> Config:
        return Config.for_in_process(
            self.cluster.server,
            CLUSTER,
            mount_prefix=f"/clusters/{CLUSTER}",
            qps=-1,
            user_agent=KUBELET_AGENT,
            clock=self.clock,
            **options,
        )

    def manager(self, *, token: str | None = None, seed: int = 1) -> CertificateManager:
        bootstrap = self.config(bearer_token=token or self.token)
        made: list[CertificateManager] = []

        def with_certificate() -> RESTClient:
            return RESTClient(self.config(cert_source=made[0].current_pem))

        manager = CertificateManager(
            "node-1",
            clock=self.clock,
            bootstrap=lambda: RESTClient(bootstrap),
            client=with_certificate,
            store=NodeCertificateStore(self.path / "pki"),
            rng=random.Random(seed),
        )
        made.append(manager)
        return manager

    async def csr(self, name: str) -> Any:
        return await self.cluster.resource("certificates.k8s.io", "v1", "certificatesigningrequests").get(
            name
        )

    async def whoami(self, manager: CertificateManager) -> Any:
        async with RESTClient(self.config(cert_source=manager.current_pem)) as client:
            reviews = client.resource("authentication.k8s.io", "v1", "selfsubjectreviews")
            answer = await reviews.create(
                {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
            )
        return answer["status"]["userInfo"]


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[Node]:
    clock = ManualClock(START)
    ca = new_ca("test-cluster-ca", now=dt.datetime.fromtimestamp(START, dt.UTC) - dt.timedelta(days=1))
    revoked: set[int] = set()
    x509_authenticator = X509Authenticator(ca.certificate, clock=clock, is_revoked=revoked.__contains__)
    async with in_process_cluster(tmp_path, clock=clock, client_certificates=x509_authenticator) as cluster:
        token, expires = await bootstrap_token_phase(cluster.client, now=clock.now(), rng=random.Random(5))
        assert expires == START + 86400, "kubeadm's token lives a day"
        controllers = Manager(
            cluster.client, name="kube-controller-manager", clock=clock, rng=random.Random(7)
        )
        csrsigning.add_to_manager(controllers, ca=ca)
        csrapproving.add_to_manager(controllers)
        async with controllers:
            yield Node(cluster, clock, ca, token, revoked, tmp_path)


def approval(csr: Any) -> tuple[str, str]:
    approved = condition(csr, "Approved")
    assert approved is not None
    return approved["reason"], approved["message"]


async def test_a_kubelet_bootstraps_with_its_token_and_is_then_its_node(node: Node) -> None:
    manager = node.manager()
    await manager.start()
    try:
        assert len(manager.requests) == 1 and manager.requests[0].startswith("node-csr-")
        csr = await node.csr(manager.requests[0])
        token_id = node.token.partition(".")[0]
        assert csr["spec"]["username"] == f"system:bootstrap:{token_id}"
        assert "system:bootstrappers:kubeadm:default-node-token" in csr["spec"]["groups"]
        assert approval(csr) == (
            "AutoApproved",
            "Auto approving kubelet client certificate after SubjectAccessReview.",
        )
        assert manager.certificate.subject.rfc4514_string() == "CN=system:node:node-1,O=system:nodes"
        assert (
            manager.certificate.serial_number
            == x509.load_pem_x509_certificate(certificate.issued_certificate(csr) or b"").serial_number
        )
        user = await node.whoami(manager)
        assert user["username"] == "system:node:node-1"
        assert user["groups"] == ["system:nodes", "system:authenticated"]
        kept = (node.path / "pki" / "kubelet-client-current.pem").stat()
        assert stat.S_IMODE(kept.st_mode) == 0o600, "the key is the node's secret"
    finally:
        await manager.stop()

    # A restart keeps the certificate on the node's disk: no new CSR.
    again = node.manager()
    await again.start()
    await again.stop()
    assert again.requests == [] and again.serial == manager.serial


async def test_the_kubelet_rotates_its_certificate_on_its_clock_with_its_certificate(node: Node) -> None:
    manager = node.manager()
    await manager.start()
    try:
        first = manager.certificate
        life = first.not_valid_after_utc.timestamp() - first.not_valid_before_utc.timestamp()
        start = first.not_valid_before_utc.timestamp()
        assert start + 0.7 * life <= manager.deadline <= start + 0.9 * life
        rotated = manager.rotated

        await node.clock.advance(manager.deadline - node.clock.now() - 1)
        assert not rotated.is_set() and len(manager.requests) == 1, "not before its deadline"
        await node.clock.advance(1)
        await asyncio.wait_for(rotated.wait(), 10)

        assert len(manager.requests) == 2 and manager.requests[1].startswith("csr-")
        renewal = await node.csr(manager.requests[1])
        assert renewal["spec"]["username"] == "system:node:node-1", "asked with its own certificate"
        assert approval(renewal) == (
            "AutoApproved",
            "Auto approving self kubelet client certificate after SubjectAccessReview.",
        )
        assert manager.serial != first.serial_number
        assert manager.certificate.not_valid_before_utc.timestamp() > start
        assert (await node.whoami(manager))["username"] == "system:node:node-1"
    finally:
        await manager.stop()


async def test_an_expired_or_refused_certificate_falls_back_to_the_bootstrap_token(node: Node) -> None:
    manager = node.manager()
    await manager.start()
    await manager.stop()
    # A node stopped for longer than its certificate lives: kubeadm's token has expired too, so an
    # administrator made a new one that does not expire.
    longer = BootstrapToken("longer", "0123456789abcdef")
    secrets = node.cluster.resource("", "v1", "secrets", "kube-system")
    await secrets.create(bootstraptoken.token_secret(longer, expiration=None))
    await node.clock.advance(2 * 86400)

    again = node.manager(token=str(longer), seed=2)
    await again.start()
    try:
        assert len(again.requests) == 1 and again.requests[0].startswith("node-csr-")
        assert (await node.csr(again.requests[0]))["spec"]["username"] == "system:bootstrap:longer"
        assert again.serial != manager.serial

        # A revoked certificate is refused (401): the renewal is asked with the token instead.
        node.revoked.add(again.serial)
        await again.request(bootstrap=False)
        assert len(again.requests) == 2 and again.requests[1].startswith("node-csr-")
        assert (await node.csr(again.requests[1]))["spec"]["username"] == "system:bootstrap:longer"
        assert (await node.whoami(again))["username"] == "system:node:node-1"
    finally:
        await again.stop()


def test_an_unreadable_or_deleted_certificate_file_means_bootstrapping_again(tmp_path: Path) -> None:
    store = NodeCertificateStore(tmp_path / "pki")
    assert store.load() is None
    (tmp_path / "pki").mkdir()
    (tmp_path / "pki" / "kubelet-client-current.pem").write_bytes(b"not a certificate")
    assert store.load() is None
    store.forget()
    assert not (tmp_path / "pki" / "kubelet-client-current.pem").exists()
    with pytest.raises(ValueError, match="no private key"):
        KeyPair.from_pem(b"-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n")
