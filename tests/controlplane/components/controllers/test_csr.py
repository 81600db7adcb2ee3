"""The CSR signing, approving and cleaning controllers against an in-process API server.

A student (``alice``) creates CertificateSigningRequests; the admin approves or denies them through
``/approval``; the signing controller issues approved ones with a test CA. Time is a ``ManualClock``
shared by the API server and the controllers.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final

from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from controlplane.api.meta import Object, format_time
from controlplane.client.manager import Manager
from controlplane.client.rest import ResourceClient
from controlplane.clock import ManualClock
from controlplane.components.controllers import csrapproving, csrcleaner, csrsigning
from controlplane.identity import UserInfo
from controlplane.pki import CertificateAuthority, issued_by, new_ca
from tests.support.csr import csr_manifest, issued, new_key, request_pem
from tests.support.inprocess import InProcessCluster, condition, in_process_cluster, wait_for

#: 2026-01-01T00:00:30Z
START = 1_767_225_630.0
ALICE = UserInfo.create("alice", uid="alice-uid", groups=["students", "system:authenticated"])


def make_ca() -> CertificateAuthority:
    return new_ca("test-cluster-ca", now=dt.datetime.fromtimestamp(START, dt.UTC) - dt.timedelta(days=1))


@asynccontextmanager
async def csr_controllers(
    cluster: InProcessCluster, clock: ManualClock, ca: CertificateAuthority, *, cleaner: bool = False
) -> AsyncIterator[Manager]:
    manager = Manager(cluster.client, name="kube-controller-manager", clock=clock, rng=random.Random(7))
    csrsigning.add_to_manager(manager, ca=ca)
    csrapproving.add_to_manager(manager)
    if cleaner:
        csrcleaner.add_to_manager(manager)
    async with manager:
        yield manager


def csrs(cluster: InProcessCluster, user: UserInfo | None = None) -> ResourceClient:
    client = cluster.client if user is None else cluster.client_for(user)
    return client.resource("certificates.k8s.io", "v1", "certificatesigningrequests")


async def grant(cluster: InProcessCluster, name: str, rules: list[Object], subject: Object) -> None:
    rbac = "rbac.authorization.k8s.io"
    await cluster.resource(rbac, "v1", "clusterroles").create({"metadata": {"name": name}, "rules": rules})
    await cluster.resource(rbac, "v1", "clusterrolebindings").create(
        {
            "metadata": {"name": name},
            "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": name},
            "subjects": [subject],
        }
    )


async def set_approval(resource: ResourceClient, name: str, kind: str, reason: str = "ByTest") -> Any:
    csr = await resource.get(name)
    csr.setdefault("status", {}).setdefault("conditions", []).append(
        {"type": kind, "status": "True", "reason": reason, "message": "by the test"}
    )
    return await resource.client.request_json("PUT", resource.path(name, "approval"), body=csr)


def find(items: list[Object], name: str) -> Object | None:
    return next((i for i in items if i["metadata"]["name"] == name), None)


def is_issued(csr: Object | None) -> bool:
    return csr is not None and bool(csr.get("status", {}).get("certificate"))


def csr_rule(resource: str, verbs: str = "create get list watch") -> Object:
    return {"apiGroups": ["certificates.k8s.io"], "resources": [resource], "verbs": verbs.split()}


RBAC: Final = "rbac.authorization.k8s.io"
BOOTSTRAPPERS: Final = {"kind": "Group", "name": "system:bootstrappers", "apiGroup": RBAC}
NODES: Final = {"kind": "Group", "name": "system:nodes", "apiGroup": RBAC}


async def test_an_approved_client_csr_is_issued_for_the_requested_subject_and_duration(
    tmp_path: Path,
) -> None:
    clock = ManualClock(START)
    ca = make_ca()
    async with in_process_cluster(tmp_path, clock=clock) as cluster, csr_controllers(cluster, clock, ca):
        alice = {"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}
        await grant(cluster, "csr-creator", [csr_rule("certificatesigningrequests")], alice)
        key = new_key()
        pem = request_pem(key, "alice", ["developers"])
        mine = csrs(cluster, ALICE)
        usages = ["client auth", "digital signature"]
        sent = csr_manifest("alice", pem, usages=usages, expirationSeconds=3600, username="mallory")
        sent["spec"]["groups"] = ["system:masters"]
        created = await mine.create(sent)
        spec = created["spec"]
        assert (spec["username"], spec["uid"], spec["groups"]) == (
            "alice",
            "alice-uid",
            ["students", "system:authenticated"],
        ), "the requester is the one who sent it, whatever the body said"
        assert created["status"] == {}
        await set_approval(csrs(cluster), "alice", "Approved")
        [done] = await wait_for(
            csrs(cluster), lambda items: bool(items[0].get("status", {}).get("certificate"))
        )
        certificate = issued(done)
        assert issued_by(certificate, ca.certificate)
        assert certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "alice"
        assert [a.value for a in certificate.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)] == [
            "developers"
        ]
        start = dt.datetime.fromtimestamp(START, dt.UTC)
        assert certificate.not_valid_before_utc == start - dt.timedelta(minutes=5)
        assert certificate.not_valid_after_utc == start + dt.timedelta(hours=1), "short: not backdated"
        extended = certificate.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
        assert list(extended) == [ExtendedKeyUsageOID.CLIENT_AUTH]
        approved = condition(done, "Approved")
        assert approved is not None and approved["lastTransitionTime"] == format_time(START)
        assert condition(done, "Failed") is None


async def test_a_request_that_breaks_its_signers_rules_fails_and_is_not_issued(tmp_path: Path) -> None:
    clock = ManualClock(START)
    async with (
        in_process_cluster(tmp_path, clock=clock) as cluster,
        csr_controllers(cluster, clock, make_ca()),
    ):
        resource = csrs(cluster)
        pem = request_pem(new_key(), "system:node:n1", ["system:nodes"])
        await resource.create(
            csr_manifest(
                "wrong-usages",
                pem,
                signer="kubernetes.io/kube-apiserver-client-kubelet",
                usages=["client auth", "server auth"],
            )
        )
        await set_approval(resource, "wrong-usages", "Approved")
        [failed] = await wait_for(resource, lambda items: condition(items[0], "Failed") is not None)
        found = condition(failed, "Failed")
        assert found is not None
        assert (found["reason"], found["message"]) == (
            "SignerValidationFailure",
            "usages did not match [client auth digital signature key encipherment]",
        )
        assert "certificate" not in failed["status"]


async def test_a_denied_csr_is_never_issued_and_cannot_be_approved_too(tmp_path: Path) -> None:
    clock = ManualClock(START)
    async with (
        in_process_cluster(tmp_path, clock=clock) as cluster,
        csr_controllers(cluster, clock, make_ca()),
    ):
        resource = csrs(cluster)
        await resource.create(csr_manifest("denied", request_pem(new_key(), "bob")))
        denied = await set_approval(resource, "denied", "Denied")
        assert [c["type"] for c in denied["status"]["conditions"]] == ["Denied"]
        try:
            await set_approval(resource, "denied", "Approved")
        except Exception as error:  # the client raises its APIError subclass for 422
            assert "Approved and Denied conditions are mutually exclusive" in str(error)
        else:
            raise AssertionError("Approved after Denied was accepted")
        # The signer looked at it (it was written to) and left it alone.
        assert "certificate" not in (await resource.get("denied"))["status"]


async def test_kubelet_client_csrs_are_approved_after_a_subject_access_review(tmp_path: Path) -> None:
    clock = ManualClock(START)
    async with (
        in_process_cluster(tmp_path, clock=clock) as cluster,
        csr_controllers(cluster, clock, make_ca()),
    ):
        node = UserInfo.create("system:node:n1", groups=["system:nodes", "system:authenticated"])
        bootstrapper = UserInfo.create("system:bootstrap:abcdef", groups=["system:bootstrappers"])
        await grant(cluster, "bootstrappers-create", [csr_rule("certificatesigningrequests")], BOOTSTRAPPERS)
        await grant(cluster, "nodes-create", [csr_rule("certificatesigningrequests")], NODES)
        kubelet_usages = ["digital signature", "client auth"]
        kubelet = "kubernetes.io/kube-apiserver-client-kubelet"
        # A renewal by the node itself: needs selfnodeclient, which nobody has granted yet.
        renewal_pem = request_pem(new_key(), "system:node:n1", ["system:nodes"])
        await csrs(cluster, node).create(
            csr_manifest("renewal", renewal_pem, signer=kubelet, usages=kubelet_usages)
        )
        # A first certificate asked by a bootstrap token: nodeclient, granted to the bootstrappers.
        nodeclient = csr_rule("certificatesigningrequests/nodeclient", "create")
        await grant(cluster, "bootstrappers-nodeclient", [nodeclient], BOOTSTRAPPERS)
        first_pem = request_pem(new_key(), "system:node:n2", ["system:nodes"])
        await csrs(cluster, bootstrapper).create(
            csr_manifest("first", first_pem, signer=kubelet, usages=kubelet_usages)
        )
        resource = csrs(cluster)
        items = await wait_for(resource, lambda items: is_issued(find(items, "first")))
        first = find(items, "first")
        assert first is not None
        approved = condition(first, "Approved")
        assert approved is not None
        assert (approved["reason"], approved["message"]) == (
            "AutoApproved",
            "Auto approving kubelet client certificate after SubjectAccessReview.",
        )
        renewal = find(items, "renewal")
        assert renewal is not None and condition(renewal, "Approved") is None, "selfnodeclient not granted"
        # Granting it (the kubeadm binding for system:nodes) lets the waiting renewal through.
        selfnodeclient = csr_rule("certificatesigningrequests/selfnodeclient", "create")
        await grant(cluster, "nodes-selfnodeclient", [selfnodeclient], NODES)
        # The renewal is looked at again after its back-off (at most upstream's 1000 s), on the clock.
        await clock.advance(1000)
        items = await wait_for(resource, lambda items: is_issued(find(items, "renewal")))
        renewal = find(items, "renewal")
        assert renewal is not None
        approved = condition(renewal, "Approved")
        assert approved is not None
        assert (
            approved["message"] == "Auto approving self kubelet client certificate after SubjectAccessReview."
        )


async def test_a_user_csr_is_left_pending_for_a_human(tmp_path: Path) -> None:
    clock = ManualClock(START)
    async with (
        in_process_cluster(tmp_path, clock=clock) as cluster,
        csr_controllers(cluster, clock, make_ca()),
    ):
        resource = csrs(cluster)
        await resource.create(csr_manifest("human", request_pem(new_key(), "carol")))
        # A later CSR that is approved and issued shows the controllers have seen both.
        await resource.create(csr_manifest("later", request_pem(new_key(), "dave")))
        await set_approval(resource, "later", "Approved")
        items = await wait_for(resource, lambda items: is_issued(find(items, "later")))
        human = find(items, "human")
        assert human is not None and human["status"] == {}


def test_the_cleaner_deadlines_are_upstreams() -> None:
    created = {"metadata": {"creationTimestamp": format_time(START)}, "status": {}}
    assert csrcleaner.deadline(created) == START + 24 * 3600
    denied = {
        "metadata": {"creationTimestamp": format_time(START)},
        "status": {
            "conditions": [{"type": "Denied", "status": "True", "lastUpdateTime": format_time(START + 5)}]
        },
    }
    assert csrcleaner.deadline(denied) == START + 5 + 3600
    approved_only = {
        "metadata": {"creationTimestamp": format_time(START)},
        "status": {
            "conditions": [{"type": "Approved", "status": "True", "lastUpdateTime": format_time(START)}]
        },
    }
    assert csrcleaner.deadline(approved_only) is None, "approved, not issued yet: the signer's turn"


async def test_the_cleaner_deletes_a_denied_csr_an_hour_later(tmp_path: Path) -> None:
    clock = ManualClock(START)
    async with (
        in_process_cluster(tmp_path, clock=clock) as cluster,
        csr_controllers(cluster, clock, make_ca(), cleaner=True),
    ):
        resource = csrs(cluster)
        await resource.create(csr_manifest("refused", request_pem(new_key(), "eve")))
        await set_approval(resource, "refused", "Denied")
        await clock.advance(3601)
        assert await wait_for(resource, lambda items: not items) == []


def test_durations_are_capped_as_upstreams() -> None:
    year = csrsigning.DEFAULT_MAX_DURATION
    assert csrsigning.duration(None, year) == year
    assert csrsigning.duration(600, year) == dt.timedelta(minutes=10)
    assert csrsigning.duration(10 * 365 * 86400, year) == year
    assert csrsigning.duration(7200, dt.timedelta(hours=1)) == dt.timedelta(hours=1)


def test_the_kubelet_signers_rules() -> None:
    key = new_key()

    def parsed(cn: str, orgs: list[str], dns: tuple[str, ...] = ()) -> x509.CertificateSigningRequest:
        return x509.load_pem_x509_csr(request_pem(key, cn, orgs, dns_names=dns))

    client = ["digital signature", "key encipherment", "client auth"]
    assert csrsigning.kubelet_client_problem(parsed("system:node:n1", ["system:nodes"]), client) is None
    assert (
        csrsigning.kubelet_client_problem(parsed("system:node:n1", ["system:masters"]), client)
        == "subject organization is not system:nodes"
    )
    assert (
        csrsigning.kubelet_client_problem(parsed("alice", ["system:nodes"]), client)
        == "subject common name does not begin with system:node:"
    )
    assert (
        csrsigning.kubelet_client_problem(parsed("system:node:n1", ["system:nodes"], ("n1",)), client)
        == "DNS subjectAltNames are not allowed"
    )
    serving = ["digital signature", "server auth"]
    assert (
        csrsigning.kubelet_serving_problem(parsed("system:node:n1", ["system:nodes"], ("n1",)), serving)
        is None
    )
    assert (
        csrsigning.kubelet_serving_problem(parsed("system:node:n1", ["system:nodes"]), serving)
        == "DNS or IP subjectAltName is required"
    )
    assert (
        csrsigning.apiserver_client_problem(parsed("x", []), ["server auth"])
        == "invalid usage for client certificate: server auth"
    )
    assert (
        csrsigning.apiserver_client_problem(parsed("x", []), ["digital signature"])
        == "missing required usage for client certificate: client auth"
    )
