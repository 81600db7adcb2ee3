"""kubectl 1.37 and certificates.k8s.io/v1: a student gets a user of the demo cluster through a CSR.

The student makes a key and a certificate request (here with ``cryptography``, as ``openssl req``
would), creates the CertificateSigningRequest, the admin runs ``kubectl certificate approve``, the
controller manager's signing controller issues the certificate, and a kubeconfig with the key and the
issued certificate is that user.
"""

from __future__ import annotations

import base64
from pathlib import Path

import yaml

from tests.clients.test_kubectl_x509 import kubectl, write_kubeconfig
from tests.support.csr import csr_manifest, key_pem, new_key, request_pem
from tests.support.lab import LiveLab


def test_a_csr_is_approved_issued_and_its_certificate_is_a_user(lab: LiveLab, tmp_path: Path) -> None:
    key = new_key()
    manifest = csr_manifest("student-ada", request_pem(key, "ada", ["students"]), expirationSeconds=86400)
    created = lab.kubectl("create", "-f", "-", input=yaml.safe_dump(manifest))
    assert created.stdout == "certificatesigningrequest.certificates.k8s.io/student-ada created\n"
    header, row = lab.kubectl("get", "csr", "student-ada").stdout.splitlines()
    assert header.split() == ["NAME", "AGE", "SIGNERNAME", "REQUESTOR", "REQUESTEDDURATION", "CONDITION"]
    cells = row.split()
    assert cells[0] == "student-ada" and cells[2:] == [
        "kubernetes.io/kube-apiserver-client",
        "admin",
        "24h",
        "Pending",
    ], row
    by_signer = ("get", "csr", "-o", "name", "--field-selector")
    selected = lab.kubectl(*by_signer, "spec.signerName=kubernetes.io/kube-apiserver-client").stdout
    assert "certificatesigningrequest.certificates.k8s.io/student-ada\n" in selected
    assert lab.kubectl(*by_signer, "spec.signerName=example.com/other").stdout == ""
    approved = lab.kubectl("certificate", "approve", "student-ada")
    assert approved.stdout == "certificatesigningrequest.certificates.k8s.io/student-ada approved\n"
    lab.kubectl(
        "wait", "--for=jsonpath={.status.certificate}", "csr/student-ada", "--timeout=60s", timeout=90
    )
    csr = lab.kubectl_json("get", "csr", "student-ada", "--show-managed-fields")
    assert [(c["type"], c["reason"]) for c in csr["status"]["conditions"]] == [("Approved", "KubectlApprove")]
    # Each door owns only what it may change: the approval, the conditions; the signer, the certificate.
    owned = {entry.get("subresource", ""): entry["fieldsV1"] for entry in csr["metadata"]["managedFields"]}
    assert set(owned["approval"]) == {"f:status"} and set(owned["approval"]["f:status"]) == {"f:conditions"}
    assert owned["status"] == {"f:status": {"f:certificate": {}}}
    assert lab.kubectl("get", "csr", "student-ada").stdout.split()[-1] == "Approved,Issued"
    described = lab.kubectl("describe", "csr", "student-ada").stdout
    for line in ("Requesting User:     admin", "Signer:              kubernetes.io/kube-apiserver-client",
                 "Requested Duration:  24h", "Status:              Approved,Issued",
                 "         Common Name:    ada", "         Organization:   students"):  # fmt: skip
        assert line in described.splitlines(), described
    certificate = base64.b64decode(csr["status"]["certificate"])
    config = write_kubeconfig(lab, tmp_path / "ada.kubeconfig", certificate, key_pem(key))
    whoami = kubectl(lab, config, "auth", "whoami", "-o", "json")
    assert whoami.returncode == 0, whoami.stderr
    user = yaml.safe_load(whoami.stdout)["status"]["userInfo"]
    assert user["username"] == "ada"
    assert user["groups"] == ["students", "system:authenticated"]
    raw = kubectl(lab, config, "get", "--raw", "/api")
    assert raw.returncode == 0 and '"kind":"APIVersions"' in raw.stdout, raw.stderr
    # ada has no RBAC rights yet: authenticated, not authorized.
    refused = kubectl(lab, config, "get", "pods")
    assert 'User "ada" cannot list resource "pods"' in refused.stderr


def test_a_denied_csr_shows_denied_and_is_never_issued(lab: LiveLab) -> None:
    manifest = csr_manifest("student-bob", request_pem(new_key(), "bob"))
    lab.kubectl("create", "-f", "-", input=yaml.safe_dump(manifest))
    denied = lab.kubectl("certificate", "deny", "student-bob", "-v=8")
    assert denied.stdout == "certificatesigningrequest.certificates.k8s.io/student-bob denied\n"
    # kubectl's typed client sends the CSR to /approval as protobuf, which the server decodes.
    put = denied.stderr.split('verb="PUT"', 1)[1]
    assert "/student-bob/approval" in put.splitlines()[0]
    lines = put.splitlines()[1:]
    headers = lines[: next(i for i, line in enumerate(lines) if not line.startswith("\t"))]
    assert "\tContent-Type: application/vnd.kubernetes.protobuf" in headers
    assert lab.kubectl("get", "csr", "student-bob").stdout.splitlines()[1].split()[-1] == "Denied"
    csr = lab.kubectl_json("get", "csr", "student-bob")
    assert [c["type"] for c in csr["status"]["conditions"]] == ["Denied"]
    assert "certificate" not in csr["status"]
    # kubectl itself refuses to approve a denied request (even with --force); the API server would
    # too (Approved and Denied are mutually exclusive: tests/controlplane/.../test_csr.py).
    again = lab.kubectl("certificate", "approve", "student-bob", "--force", check=False)
    assert again.stderr == 'error: certificate signing request "student-bob" is already Denied\n'


def test_approving_needs_approve_on_the_signer(lab: LiveLab, tmp_path: Path) -> None:
    """A user who may update ``certificatesigningrequests/approval`` but has no ``approve`` on the
    ``signers`` resource for the signer gets 403 from the CertificateApproval admission plugin."""
    manifest = csr_manifest("student-cy", request_pem(new_key(), "cy"))
    lab.kubectl("create", "-f", "-", input=yaml.safe_dump(manifest))
    lab.kubectl(
        "create", "clusterrole", "csr-approval-only", "--verb=get,list,update",
        "--resource=certificatesigningrequests,certificatesigningrequests/approval",
    )  # fmt: skip
    lab.kubectl(
        "create",
        "clusterrolebinding",
        "csr-approval-only",
        "--clusterrole=csr-approval-only",
        "--user=approver",
    )
    refused = lab.kubectl("certificate", "approve", "student-cy", "--as=approver", check=False)
    assert refused.returncode != 0
    assert (
        'certificatesigningrequests.certificates.k8s.io "student-cy" is forbidden: '
        'user not permitted to approve requests with signerName "kubernetes.io/kube-apiserver-client"'
    ) in refused.stderr
    # ``signers`` is no resource the server serves, so ``kubectl create clusterrole`` refuses it: the
    # rule is written out, as upstream's documentation writes it.
    signer_role = """
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: client-signer-approver}
rules:
- apiGroups: [certificates.k8s.io]
  resources: [signers]
  resourceNames: ["kubernetes.io/*"]
  verbs: [approve]
"""
    lab.kubectl("create", "-f", "-", input=signer_role)
    lab.kubectl(
        "create", "clusterrolebinding", "client-signer-approver", "--clusterrole=client-signer-approver",
        "--user=approver",
    )  # fmt: skip
    lab.eventually(
        lambda: (
            lab.kubectl("certificate", "approve", "student-cy", "--as=approver", check=False).returncode == 0
        ),
        "approve on kubernetes.io/* to take effect",
    )
    assert lab.kubectl_json("get", "csr", "student-cy")["status"]["conditions"][0]["type"] == "Approved"
