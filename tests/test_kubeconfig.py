"""``manage.py kubeconfig``: a kubeconfig kubectl can use, with a new credential, for known clusters."""

from __future__ import annotations

import base64
import io
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.x509.verification import PolicyBuilder, Store
from django.core.management import CommandError, call_command
from django.test import override_settings

from config.settings import BASE_DIR
from controlplane.apiserver.filters.x509 import UnknownAuthority, X509Authenticator
from controlplane.clock import SYSTEM_CLOCK
from controlplane.identity import SYSTEM_MASTERS
from controlplane.management.commands.kubeconfig import server_url
from controlplane.pki import ClusterPKI, ServingPKI
from controlplane.runtime import cluster_dir, write_cluster_list
from controlplane.tokens import TOKENS_FILE, TokenRegistry


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    """A lab's data directory with the clusters demo and other (as runlab leaves it)."""
    write_cluster_list(tmp_path, ["demo", "other"])
    with override_settings(
        KUBELAB_DATA_DIR=tmp_path, KUBELAB_STORE="sqlite", KUBELAB_API_ADDRESS="127.0.0.1:6443"
    ):
        yield tmp_path


def kubeconfig(*args: str) -> tuple[dict[str, Any], str]:
    """Run the command; its output parsed as YAML, and what it wrote to stderr."""
    out, err = io.StringIO(), io.StringIO()
    call_command("kubeconfig", *args, stdout=out, stderr=err)
    document = yaml.safe_load(out.getvalue())
    assert isinstance(document, dict)
    return document, err.getvalue()


def the_one(document: dict[str, Any], section: str) -> dict[str, Any]:
    [entry] = document[section]
    assert isinstance(entry, dict)
    return entry


def test_the_admin_kubeconfig(data_dir: Path) -> None:
    document, err = kubeconfig("--cluster", "demo", "--user", "admin")
    assert err == ""
    assert document["apiVersion"] == "v1" and document["kind"] == "Config"
    cluster = the_one(document, "clusters")
    assert cluster["name"] == "demo"
    assert cluster["cluster"]["server"] == "https://127.0.0.1:6443/clusters/demo"
    user = the_one(document, "users")
    assert user["name"] == "admin@demo"
    assert set(user["user"]) == {"token"}
    context = the_one(document, "contexts")
    assert context == {"name": "admin@demo", "context": {"cluster": "demo", "user": "admin@demo"}}
    assert document["current-context"] == "admin@demo"

    # The token is admin's, in system:masters, and the cluster kept only its hash.
    token = user["user"]["token"]
    authenticated = TokenRegistry.load(cluster_dir(data_dir, "demo")).authenticate(token)
    assert authenticated is not None
    assert (authenticated.username, authenticated.groups) == ("admin", (SYSTEM_MASTERS,))
    assert token not in (cluster_dir(data_dir, "demo") / TOKENS_FILE).read_text()
    # A token of demo is nothing to the other cluster.
    assert TokenRegistry.load(cluster_dir(data_dir, "other")).authenticate(token) is None


def test_the_ca_data_verifies_the_api_ports_certificate(data_dir: Path) -> None:
    document, _ = kubeconfig("--cluster", "demo", "--user", "admin")
    ca_pem = base64.b64decode(the_one(document, "clusters")["cluster"]["certificate-authority-data"])
    ca = x509.load_pem_x509_certificate(ca_pem)
    # What runlab serves (made after the kubeconfig: the serving CA is the same).
    serving = ServingPKI.load_or_create(data_dir, ["127.0.0.1"])
    verifier = PolicyBuilder().store(Store([ca])).build_server_verifier(x509.DNSName("localhost"))
    chain = verifier.verify(serving.certificate, [])
    assert chain[-1] == ca


def test_every_run_issues_a_new_token(data_dir: Path) -> None:
    tokens = {
        the_one(kubeconfig("--cluster", "demo", "--user", "admin")[0], "users")["user"]["token"] for _ in "ab"
    }
    assert len(tokens) == 2
    registry = TokenRegistry.load(cluster_dir(data_dir, "demo"))
    assert all(registry.authenticate(t) is not None for t in tokens)


def test_other_users_get_only_the_groups_they_are_given(data_dir: Path) -> None:
    registry = TokenRegistry.load(cluster_dir(data_dir, "demo"))
    document, _ = kubeconfig("--cluster", "demo", "--user", "alice")
    alice = registry.authenticate(the_one(document, "users")["user"]["token"])
    assert alice is not None and (alice.username, alice.groups) == ("alice", ())
    document, _ = kubeconfig("--cluster", "demo", "--user", "bob", "--group", "students", "--group", "team-a")
    bob = registry.authenticate(the_one(document, "users")["user"]["token"])
    assert bob is not None and bob.groups == ("students", "team-a")
    assert the_one(document, "users")["name"] == "bob@demo"


def test_a_client_certificate_instead_of_a_token(data_dir: Path) -> None:
    document, _ = kubeconfig("--cluster", "demo", "--user", "admin", "--client-cert")
    user = the_one(document, "users")["user"]
    assert set(user) == {"client-certificate-data", "client-key-data"}
    cert = x509.load_pem_x509_certificate(base64.b64decode(user["client-certificate-data"]))
    key = serialization.load_pem_private_key(base64.b64decode(user["client-key-data"]), None)
    assert key.public_key() == cert.public_key()
    chain = [base64.b64decode(user["client-certificate-data"]).decode()]
    demo = X509Authenticator(
        ClusterPKI.load_or_create(cluster_dir(data_dir, "demo")).ca.certificate, clock=SYSTEM_CLOCK
    )
    identity = demo.authenticate(chain)
    assert identity is not None and identity.user is not None
    assert (identity.user.username, identity.user.groups) == ("admin", (SYSTEM_MASTERS,))
    other = ClusterPKI.load_or_create(cluster_dir(data_dir, "other")).ca.certificate
    refused = X509Authenticator(other, clock=SYSTEM_CLOCK).authenticate(chain)
    assert refused is not None and isinstance(refused.error, UnknownAuthority)
    assert not (cluster_dir(data_dir, "demo") / TOKENS_FILE).exists()


def test_server_option(data_dir: Path) -> None:
    document, _ = kubeconfig("--cluster", "demo", "--user", "admin", "--server", "https://127.0.0.1:7443/")
    assert the_one(document, "clusters")["cluster"]["server"] == "https://127.0.0.1:7443/clusters/demo"
    with pytest.raises(CommandError, match="https"):
        kubeconfig("--cluster", "demo", "--user", "admin", "--server", "http://127.0.0.1:6443")


def test_the_api_address_setting_is_the_default_server(data_dir: Path) -> None:
    with override_settings(KUBELAB_API_ADDRESS="0.0.0.0:16443"):
        document, _ = kubeconfig("--cluster", "other", "--user", "admin")
    assert the_one(document, "clusters")["cluster"]["server"] == "https://127.0.0.1:16443/clusters/other"


def test_a_host_the_certificate_does_not_name_is_warned_about(data_dir: Path) -> None:
    ServingPKI.load_or_create(data_dir, ["127.0.0.1"])
    _, err = kubeconfig("--cluster", "demo", "--user", "admin", "--server", "https://lab.example.org:6443")
    assert "warning:" in err and "not lab.example.org" in err and "--tls-san lab.example.org" in err
    _, err = kubeconfig("--cluster", "demo", "--user", "admin", "--server", "https://localhost:6443")
    assert err == ""


def test_an_unknown_cluster_is_an_error(data_dir: Path) -> None:
    with pytest.raises(CommandError, match=r"unknown cluster 'nope': the lab in .* has demo, other"):
        kubeconfig("--cluster", "nope", "--user", "admin")
    with pytest.raises(CommandError, match="invalid cluster name"):
        kubeconfig("--cluster", "Not_A_Name", "--user", "admin")
    assert not cluster_dir(data_dir, "nope").exists()


def test_a_lab_without_clusters_says_how_to_get_one(tmp_path: Path) -> None:
    with (
        override_settings(KUBELAB_DATA_DIR=tmp_path),
        pytest.raises(CommandError, match=r"manage\.py runlab"),
    ):
        kubeconfig("--cluster", "demo", "--user", "admin")


@pytest.mark.parametrize(
    ("base", "url"),
    [
        ("https://lab.example.org", "https://lab.example.org/clusters/demo"),
        ("https://[::1]:6443/", "https://[::1]:6443/clusters/demo"),
        ("https://lab.example.org/kubelab", "https://lab.example.org/kubelab/clusters/demo"),
        ("https://127.0.0.1:6443/clusters/demo", "https://127.0.0.1:6443/clusters/demo"),
    ],
)
def test_server_urls(base: str, url: str) -> None:
    assert server_url(base, "demo") == url


def test_the_command_line_prints_only_yaml_on_stdout(tmp_path: Path) -> None:
    write_cluster_list(tmp_path, ["demo"])
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBELAB_")}
    result = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "kubeconfig",
            "--cluster",
            "demo",
            "--user",
            "admin",
            "--data-dir",
            str(tmp_path),
        ],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    document = yaml.safe_load(result.stdout)
    assert document["current-context"] == "admin@demo"
    assert (tmp_path / "pki" / "serving-ca.crt").exists()
