"""kubectl 1.37 and the kubelets' TLS bootstrapping: the joined nodes' CSRs in ``kubectl get csr``,
kubeadm's bootstrap token Secret and bindings, and the token itself as a kubectl credential.

Upstream: kubeadm's bootstrap-token phase (tlsbootstrap.go), the kubelet's bootstrap.go, the bootstrap
token authenticator (plugin/pkg/auth/authenticator/token/bootstrap/bootstrap.go).
"""

from __future__ import annotations

import base64
from pathlib import Path

import yaml

from controlplane.management.commands.kubeconfig import kubeconfig_document
from controlplane.pki import ServingPKI
from tests.clients.test_kubectl_x509 import kubectl
from tests.support.lab import LiveLab

KUBELET_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet"
NODE_GROUP = "system:bootstrappers:kubeadm:default-node-token"


def bootstrap_token(lab: LiveLab) -> str:
    secrets = lab.kubectl_json(
        "get",
        "secrets",
        "-n",
        "kube-system",
        "--field-selector",
        "type=bootstrap.kubernetes.io/token",
        "-o",
        "json",
    )["items"]
    assert len(secrets) == 1, secrets
    data = {key: base64.b64decode(value).decode() for key, value in secrets[0]["data"].items()}
    assert secrets[0]["metadata"]["name"] == f"bootstrap-token-{data['token-id']}"
    assert data["usage-bootstrap-authentication"] == "true" and data["auth-extra-groups"] == NODE_GROUP
    return f"{data['token-id']}.{data['token-secret']}"


def test_kubectl_get_csr_lists_the_kubelets_approved_and_issued_csrs(lab: LiveLab) -> None:
    token_id = bootstrap_token(lab).partition(".")[0]

    def kubelet_rows() -> list[list[str]]:
        rows = [line.split() for line in lab.kubectl("get", "csr").stdout.splitlines()[1:]]
        kubelets = [row for row in rows if row[2] == KUBELET_SIGNER]
        assert len(kubelets) >= 3 and all(row[-1] == "Approved,Issued" for row in kubelets), rows
        return kubelets

    rows = lab.eventually(kubelet_rows, "the kubelets' CSRs issued")
    first = [row for row in rows if row[0].startswith("node-csr-")]
    assert len(first) == 3, rows  # node-1 to node-3 joined with the token
    assert {row[3] for row in first} == {f"system:bootstrap:{token_id}"}
    # Renewals, if the lab ran long enough for any, are asked by the node itself.
    assert all(row[3].startswith("system:node:") for row in rows if row[0].startswith("csr-"))
    described = lab.kubectl("describe", "csr", first[0][0]).stdout.splitlines()
    for line in (
        f"Requesting User:     system:bootstrap:{token_id}",
        f"Signer:              {KUBELET_SIGNER}",
        "Status:              Approved,Issued",
        "         Organization:   system:nodes",
    ):
        assert line in described, described
    subjects = {
        yaml.safe_load(lab.kubectl("get", "csr", row[0], "-o", "yaml").stdout)["spec"]["username"]
        for row in first
    }
    assert subjects == {f"system:bootstrap:{token_id}"}


def test_kubeadms_bindings_let_the_token_ask_and_the_nodes_renew(lab: LiveLab) -> None:
    bindings = lab.kubectl(
        "get",
        "clusterrolebindings",
        "kubeadm:kubelet-bootstrap",
        "kubeadm:node-autoapprove-bootstrap",
        "kubeadm:node-autoapprove-certificate-rotation",
        "-o",
        "custom-columns=NAME:.metadata.name,ROLE:.roleRef.name,SUBJECT:.subjects[0].name",
        "--no-headers",
    ).stdout.splitlines()
    assert [line.split() for line in bindings] == [
        ["kubeadm:kubelet-bootstrap", "system:node-bootstrapper", NODE_GROUP],
        [
            "kubeadm:node-autoapprove-bootstrap",
            "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
            NODE_GROUP,
        ],
        [
            "kubeadm:node-autoapprove-certificate-rotation",
            "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
            "system:nodes",
        ],
    ]


def test_the_bootstrap_token_is_a_kubectl_credential_for_its_bootstrap_user(
    lab: LiveLab, tmp_path: Path
) -> None:
    token = bootstrap_token(lab)
    document = kubeconfig_document(
        cluster="demo",
        server=lab.server,
        ca_pem=ServingPKI.load_or_create_ca(lab.data_dir).certificate_pem,
        user="joining-node",
        credentials={"token": token},
    )
    config = tmp_path / "bootstrap.kubeconfig"
    config.write_text(yaml.safe_dump(document))

    whoami = kubectl(lab, config, "auth", "whoami", "-o", "json")
    assert whoami.returncode == 0, whoami.stderr
    user = yaml.safe_load(whoami.stdout)["status"]["userInfo"]
    assert user["username"] == f"system:bootstrap:{token.partition('.')[0]}"
    assert user["groups"] == ["system:bootstrappers", NODE_GROUP, "system:authenticated"]
    # What a bootstrapper may do: ask for certificates, not read the cluster.
    assert (
        kubectl(lab, config, "auth", "can-i", "create", "certificatesigningrequests").stdout.strip() == "yes"
    )
    refused = kubectl(lab, config, "get", "pods", "-A")
    assert "cannot list resource" in refused.stderr, refused.stderr
    wrong = kubectl(lab, config, "--token", token[:-1] + ("0" if token[-1] != "0" else "1"), "get", "nodes")
    assert wrong.returncode != 0 and "Unauthorized" in wrong.stderr, wrong.stderr
