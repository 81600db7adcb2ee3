"""``manage.py revokecert``: a client certificate goes on its cluster's revocation list, by any handle."""

from __future__ import annotations

import base64
import io
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from django.core.management import CommandError, call_command
from django.test import override_settings

from controlplane.revocation import RevocationList, format_serial
from controlplane.runtime import cluster_dir, write_cluster_list


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    write_cluster_list(tmp_path, ["demo", "other"])
    with override_settings(KUBELAB_DATA_DIR=tmp_path, KUBELAB_STORE="sqlite"):
        yield tmp_path


def run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def client_kubeconfig(path: Path, cluster: str = "demo") -> tuple[Path, x509.Certificate]:
    text = run("kubeconfig", "--cluster", cluster, "--user", "alice", "--client-cert")
    path.write_text(text)
    user = yaml.safe_load(text)["users"][0]["user"]
    return path, x509.load_pem_x509_certificate(base64.b64decode(user["client-certificate-data"]))


def test_revoke_by_kubeconfig_then_list(data_dir: Path) -> None:
    path, certificate = client_kubeconfig(data_dir / "alice.kubeconfig")
    said = run("revokecert", "--cluster", "demo", "--kubeconfig", str(path))
    assert f"certificate {format_serial(certificate.serial_number)} CN=alice revoked" in said
    assert RevocationList.load(cluster_dir(data_dir, "demo")).is_revoked(certificate.serial_number)
    assert not RevocationList.load(cluster_dir(data_dir, "other")).is_revoked(certificate.serial_number)
    listed = run("revokecert", "--cluster", "demo", "--list")
    assert format_serial(certificate.serial_number) in listed and "CN=alice" in listed
    assert "already revoked" in run("revokecert", "--cluster", "demo", "--kubeconfig", str(path))


def test_revoke_by_certificate_file_and_by_serial(data_dir: Path) -> None:
    _, first = client_kubeconfig(data_dir / "one")
    _, second = client_kubeconfig(data_dir / "two")
    pem = data_dir / "first.crt"
    pem.write_bytes(first.public_bytes(serialization.Encoding.PEM))
    run("revokecert", "--cluster", "demo", "--certificate", str(pem))
    run("revokecert", "--cluster", "demo", "--serial", f"0x{second.serial_number:x}")
    revocations = RevocationList.load(cluster_dir(data_dir, "demo"))
    assert revocations.is_revoked(first.serial_number) and revocations.is_revoked(second.serial_number)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--cluster", "nowhere", "--serial", "01"], "unknown cluster"),
        (["--cluster", "demo", "--serial", "zz"], "not a certificate serial number"),
        (["--cluster", "demo", "--certificate", "/nonexistent.crt"], "no client certificate to revoke"),
    ],
)
def test_mistakes_are_command_errors(data_dir: Path, args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        run("revokecert", *args)


def test_a_token_kubeconfig_has_no_certificate_to_revoke(data_dir: Path) -> None:
    path = data_dir / "token.kubeconfig"
    path.write_text(run("kubeconfig", "--cluster", "demo", "--user", "bob"))
    with pytest.raises(CommandError, match="no client-certificate-data"):
        run("revokecert", "--cluster", "demo", "--kubeconfig", str(path))
