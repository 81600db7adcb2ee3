"""Client certificates over real TLS: kubectl 1.37 and httpx against the lab's API port.

The API port asks for a client certificate, accepts any, and the demo cluster's API server judges it:
a good one is a user; an expired, not yet valid, foreign, revoked or serving certificate gets
upstream's 401, which kubectl reports as ``You must be logged in to the server (Unauthorized)``. (A
chain that is not even a certificate cannot cross a TLS handshake; the in-process tests send one.)
"""

from __future__ import annotations

import base64
import datetime as dt
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import yaml

from controlplane.client.config import Config
from controlplane.client.transport import ssl_context
from controlplane.identity import SYSTEM_MASTERS
from controlplane.management.commands.kubeconfig import kubeconfig_document
from controlplane.pki import ClusterPKI, ServingPKI
from controlplane.runtime import cluster_dir
from tests.support.certificates import oversized_pair, serving_pair
from tests.support.lab import KUBECTL, ROOT, LiveLab

LOGGED_OUT = "error: You must be logged in to the server (Unauthorized)"


def demo_pki(lab: LiveLab) -> ClusterPKI:
    return ClusterPKI.load_or_create(cluster_dir(lab.data_dir, "demo"))


def write_kubeconfig(lab: LiveLab, path: Path, cert_pem: bytes, key_pem: bytes) -> Path:
    document = kubeconfig_document(
        cluster="demo",
        server=lab.server,
        ca_pem=ServingPKI.load_or_create_ca(lab.data_dir).certificate_pem,
        user="someone",
        credentials={
            "client-certificate-data": base64.b64encode(cert_pem).decode(),
            "client-key-data": base64.b64encode(key_pem).decode(),
        },
    )
    path.write_text(yaml.safe_dump(document))
    return path


def kubectl(lab: LiveLab, kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(KUBECTL), "--kubeconfig", str(kubeconfig), "--cache-dir", str(lab.cache_dir), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def manage(lab: LiveLab, *args: str) -> str:
    made = subprocess.run(
        [sys.executable, "manage.py", *args, "--data-dir", str(lab.data_dir)],
        cwd=ROOT,
        env=lab.env,
        capture_output=True,
        text=True,
        check=True,
    )
    return made.stdout


def cert_kubeconfig(lab: LiveLab, path: Path, user: str, *groups: str) -> Path:
    """A kubeconfig with a new client certificate, made as a student makes one: ``manage.py kubeconfig``."""
    extra = [arg for group in groups for arg in ("--group", group)]
    server = f"https://127.0.0.1:{lab.api}"
    options = ["--cluster", "demo", "--user", user, "--client-cert", "--server", server, *extra]
    path.write_text(manage(lab, "kubeconfig", *options))
    return path


def test_kubectl_with_a_client_certificate_kubeconfig(lab: LiveLab, tmp_path: Path) -> None:
    kubeconfig = cert_kubeconfig(lab, tmp_path / "alice", "alice", SYSTEM_MASTERS)
    namespaces = kubectl(lab, kubeconfig, "get", "ns")
    assert namespaces.returncode == 0, namespaces.stderr
    assert "kube-system" in namespaces.stdout
    whoami = kubectl(lab, kubeconfig, "auth", "whoami", "-o", "yaml")
    assert whoami.returncode == 0, whoami.stderr
    user = yaml.safe_load(whoami.stdout)["status"]["userInfo"]
    assert user["username"] == "alice"
    assert user["groups"] == [SYSTEM_MASTERS, "system:authenticated"]
    assert user["extra"]["authentication.kubernetes.io/credential-id"][0].startswith("X509SHA256=")


def test_the_components_run_on_client_certificates(lab: LiveLab) -> None:
    # The lab's kubelets registered their nodes and keep them Ready: they authenticate (in-process)
    # with their system:node:<name> certificates, and the node authorizer accepts them.
    nodes = lab.eventually(lambda: lab.kubectl_json("get", "nodes")["items"], "the nodes")
    assert {n["metadata"]["name"] for n in nodes} >= {"node-1", "node-2", "node-3"}


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


@pytest.mark.parametrize("case", ["expired", "not-yet-valid", "foreign-ca", "serving-certificate"])
def test_kubectl_with_a_refused_certificate_is_logged_out(lab: LiveLab, tmp_path: Path, case: str) -> None:
    pki = demo_pki(lab)
    if case == "expired":
        yesterday = now() - dt.timedelta(days=2)
        cert, key = pki.issue_client_certificate("admin", [SYSTEM_MASTERS], days=1, now=yesterday)
    elif case == "not-yet-valid":
        cert, key = pki.issue_client_certificate("admin", [SYSTEM_MASTERS], now=now() + dt.timedelta(days=1))
    elif case == "foreign-ca":
        other = ClusterPKI.load_or_create(tmp_path / "other")
        cert, key = other.issue_client_certificate("admin", [SYSTEM_MASTERS])
    else:
        cert_text, key_text = serving_pair(pki.ca, now=now())
        cert, key = cert_text.encode(), key_text.encode()
    kubeconfig = write_kubeconfig(lab, tmp_path / case, cert, key)
    refused = kubectl(lab, kubeconfig, "get", "ns")
    assert refused.returncode == 1
    assert LOGGED_OUT in refused.stderr


def test_a_revoked_certificate_stops_working_at_once(lab: LiveLab, tmp_path: Path) -> None:
    kubeconfig = cert_kubeconfig(lab, tmp_path / "mallory", "mallory", SYSTEM_MASTERS)
    assert kubectl(lab, kubeconfig, "get", "ns").returncode == 0
    revoked = manage(lab, "revokecert", "--cluster", "demo", "--kubeconfig", str(kubeconfig))
    assert "revoked in cluster 'demo'" in revoked
    refused = kubectl(lab, kubeconfig, "get", "ns")
    assert refused.returncode == 1 and LOGGED_OUT in refused.stderr
    # Another certificate of the same user is not affected.
    other = cert_kubeconfig(lab, tmp_path / "mallory-2", "mallory", SYSTEM_MASTERS)
    assert kubectl(lab, other, "get", "ns").returncode == 0


def https(lab: LiveLab, cert_pem: bytes, key_pem: bytes) -> httpx.Response:
    config = Config(
        host=lab.server,
        ca_data=ServingPKI.load_or_create_ca(lab.data_dir).certificate_pem,
        cert_data=cert_pem,
        key_data=key_pem,
    )
    with httpx.Client(verify=ssl_context(config), timeout=30) as client:
        return client.get(f"{lab.server}/api/v1/namespaces")


def test_httpx_gets_upstreams_401_status_for_an_expired_certificate(lab: LiveLab) -> None:
    good = https(lab, *demo_pki(lab).issue_client_certificate("admin", [SYSTEM_MASTERS]))
    assert good.status_code == 200
    expired = demo_pki(lab).issue_client_certificate(
        "admin", [SYSTEM_MASTERS], days=1, now=now() - dt.timedelta(days=2)
    )
    response = https(lab, *expired)
    assert response.status_code == 401
    assert response.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "Unauthorized",
        "reason": "Unauthorized",
        "code": 401,
    }


def test_an_oversized_certificate_is_401_not_a_crash(lab: LiveLab) -> None:
    cert, key = oversized_pair(demo_pki(lab).ca, now=now())
    response = https(lab, cert.encode(), key.encode())
    assert response.status_code == 401
    assert response.json()["reason"] == "Unauthorized"
