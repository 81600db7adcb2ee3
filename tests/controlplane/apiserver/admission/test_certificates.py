"""CertificateApproval, CertificateSigning and CertificateSubjectRestriction on a real API server:
RBAC on ``certificatesigningrequests/approval`` (or ``/status``) is not enough, the user also needs
``approve`` (or ``sign``) on the signer, by name or ``<domain>/*``."""

from __future__ import annotations

import base64
import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from controlplane.api.meta import Object
from controlplane.client.errors import APIError
from controlplane.client.rest import ResourceClient
from controlplane.identity import UserInfo
from controlplane.pki import certificate_pem, new_ca
from tests.support.csr import csr_manifest, new_key, request_pem
from tests.support.inprocess import InProcessCluster, in_process_cluster

RBAC = "rbac.authorization.k8s.io"
GROUP = "certificates.k8s.io"
APPROVER = UserInfo.create("approver", groups=["system:authenticated"])
SIGNER = UserInfo.create("signer", groups=["system:authenticated"])


async def grant(cluster: InProcessCluster, user: str, name: str, rules: list[Object]) -> None:
    await cluster.resource(RBAC, "v1", "clusterroles").create({"metadata": {"name": name}, "rules": rules})
    await cluster.resource(RBAC, "v1", "clusterrolebindings").create(
        {
            "metadata": {"name": name},
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": name},
            "subjects": [{"kind": "User", "name": user, "apiGroup": RBAC}],
        }
    )


def csrs(cluster: InProcessCluster, user: UserInfo | None = None) -> ResourceClient:
    client = cluster.client if user is None else cluster.client_for(user)
    return client.resource(GROUP, "v1", "certificatesigningrequests")


async def put(resource: ResourceClient, name: str, subresource: str, body: Object) -> Any:
    return await resource.client.request_json("PUT", resource.path(name, subresource), body=body)


def approved(csr: Object) -> Object:
    csr.setdefault("status", {}).setdefault("conditions", []).append(
        {"type": "Approved", "status": "True", "reason": "ByHand"}
    )
    return csr


async def test_approving_needs_approve_on_the_signer_by_name_or_domain(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster:
        await csrs(cluster).create(
            csr_manifest("mine", request_pem(new_key(), "x"), signer="example.com/team-a")
        )
        writes = [{"apiGroups": [GROUP], "resources": ["certificatesigningrequests",
                   "certificatesigningrequests/approval"], "verbs": ["get", "update"]}]  # fmt: skip
        await grant(cluster, "approver", "approval-writer", writes)
        theirs = csrs(cluster, APPROVER)
        with pytest.raises(APIError) as refused:
            await put(theirs, "mine", "approval", approved(await theirs.get("mine")))
        assert refused.value.code == 403
        assert refused.value.message == (
            'certificatesigningrequests.certificates.k8s.io "mine" is forbidden: '
            'user not permitted to approve requests with signerName "example.com/team-a"'
        )
        # Another signer of the domain is not this one.
        other = [{"apiGroups": [GROUP], "resources": ["signers"], "resourceNames": ["example.com/team-b"],
                  "verbs": ["approve"]}]  # fmt: skip
        await grant(cluster, "approver", "team-b-approver", other)
        with pytest.raises(APIError) as still:
            await put(theirs, "mine", "approval", approved(await theirs.get("mine")))
        assert still.value.code == 403
        domain = [{"apiGroups": [GROUP], "resources": ["signers"], "resourceNames": ["example.com/*"],
                   "verbs": ["approve"]}]  # fmt: skip
        await grant(cluster, "approver", "example-approver", domain)
        done = await put(theirs, "mine", "approval", approved(await theirs.get("mine")))
        assert [c["type"] for c in done["status"]["conditions"]] == ["Approved"]


async def test_issuing_needs_sign_on_the_signer(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster:
        admin = csrs(cluster)
        await admin.create(csr_manifest("mine", request_pem(new_key(), "x"), signer="example.com/team-a"))
        await put(admin, "mine", "approval", approved(await admin.get("mine")))
        writes = [{"apiGroups": [GROUP], "resources": ["certificatesigningrequests",
                   "certificatesigningrequests/status"], "verbs": ["get", "update"]}]  # fmt: skip
        await grant(cluster, "signer", "status-writer", writes)
        theirs = csrs(cluster, SIGNER)
        ca = new_ca("team-a", now=dt.datetime.now(dt.UTC))
        issued = await theirs.get("mine")
        issued["status"]["certificate"] = base64.b64encode(certificate_pem(ca.certificate)).decode()
        with pytest.raises(APIError) as refused:
            await theirs.update_status(issued)
        assert refused.value.code == 403
        assert refused.value.message.endswith(
            'user not permitted to sign requests with signerName "example.com/team-a"'
        )
        sign = [{"apiGroups": [GROUP], "resources": ["signers"], "resourceNames": ["example.com/team-a"],
                 "verbs": ["sign"]}]  # fmt: skip
        await grant(cluster, "signer", "team-a-signer", sign)
        done = await theirs.update_status(issued)
        assert done["status"]["certificate"] == issued["status"]["certificate"]
        # A status write that leaves what the signer owns alone needs no signer permission.
        await grant(cluster, "approver", "status-writer-2", writes)
        current = await csrs(cluster, APPROVER).get("mine")
        current["metadata"]["annotations"] = {"note": "checked"}
        noted = await csrs(cluster, APPROVER).update_status(current)
        assert noted["metadata"]["annotations"] == {"note": "checked"}


async def test_nobody_asks_the_client_signer_for_system_masters(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster:
        pem = request_pem(new_key(), "root", ["system:masters"])
        with pytest.raises(APIError) as refused:
            await csrs(cluster).create(csr_manifest("root", pem))
        assert refused.value.code == 403
        assert refused.value.message == (
            'certificatesigningrequests.certificates.k8s.io "root" is forbidden: '
            "use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed"
        )
        # Another signer may be asked: the restriction is about the cluster's own client signer.
        created = await csrs(cluster).create(csr_manifest("other", pem, signer="example.com/x"))
        assert created["spec"]["signerName"] == "example.com/x"
