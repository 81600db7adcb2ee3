"""The lab's certificates, checked the way a TLS client checks them (``cryptography``'s verifier).

The serving certificate must chain to the serving CA, name the hosts kubectl connects to and be good
for ``serverAuth``; client certificates must chain to their cluster's CA (and no other), carry the
user as CN and the groups as O, and be good for ``clientAuth``. Keys are private files; a CA is kept
for good, the serving certificate replaced when it no longer fits. A cluster loads its own PKI and
token registry as it starts.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import stat
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from cryptography.x509.verification import (
    Criticality,
    ExtensionPolicy,
    PolicyBuilder,
    Store,
    VerificationError,
)

from controlplane.identity import SYSTEM_MASTERS
from controlplane.pki import (
    BACKDATE,
    RENEW_BEFORE,
    ClusterPKI,
    PKIError,
    ServingPKI,
    certificate_hosts,
    key_pem,
    new_ca,
    new_key,
    normalize_hosts,
    public_key_pem,
    serving_certificate,
    serving_certificate_problem,
)
from controlplane.runtime import Cluster, Lab, LabConfig
from controlplane.store.factory import open_store
from controlplane.tokens import TokenRegistry

NOW = dt.datetime(2030, 1, 15, 12, 0, tzinfo=dt.UTC)


def clock() -> dt.datetime:
    """The wall clock of these tests: always ``NOW``."""
    return NOW


def server_chain(pki: ServingPKI, host: str, *, now: dt.datetime = NOW) -> list[x509.Certificate]:
    """Verify the serving certificate for ``host`` as a TLS client would; the verified chain."""
    subject: x509.verification.Subject
    try:
        subject = x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        subject = x509.DNSName(host)
    verifier = PolicyBuilder().store(Store([pki.ca.certificate])).time(now).build_server_verifier(subject)
    return verifier.verify(pki.certificate, [])


def client_chain(ca: x509.Certificate, certificate: x509.Certificate, *, now: dt.datetime = NOW) -> None:
    """Verify a client certificate as a TLS server would (chain, validity, ``clientAuth``).

    The web PKI profile wants a SAN in client certificates too; Kubernetes' have none (the user is the
    CN), and Go's verifier, like kube-apiserver's, does not ask for one.
    """
    leaf = ExtensionPolicy.webpki_defaults_ee().may_be_present(
        x509.SubjectAlternativeName, Criticality.AGNOSTIC, None
    )
    verifier = (
        PolicyBuilder()
        .store(Store([ca]))
        .time(now)
        .extension_policies(ca_policy=ExtensionPolicy.webpki_defaults_ca(), ee_policy=leaf)
        .build_client_verifier()
    )
    verifier.verify(certificate, [])


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# -- the serving side -----------------------------------------------------------------------------------


def test_serving_certificate_verifies_for_every_default_host_and_the_api_host(tmp_path: Path) -> None:
    pki = ServingPKI.load_or_create(tmp_path, ["lab.example.org", "10.1.2.3"], now=clock)
    for host in ("127.0.0.1", "::1", "localhost", "lab.example.org", "10.1.2.3"):
        chain = server_chain(pki, host)
        assert chain[0] == pki.certificate and chain[-1] == pki.ca.certificate
    with pytest.raises(VerificationError):
        server_chain(pki, "other.example.org")
    assert pki.hosts == ("10.1.2.3", "127.0.0.1", "::1", "lab.example.org", "localhost")


def test_serving_certificate_profile(tmp_path: Path) -> None:
    pki = ServingPKI.load_or_create(tmp_path, ["127.0.0.1"], now=clock)
    cert = pki.certificate
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False
    assert list(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == [
        ExtendedKeyUsageOID.SERVER_AUTH
    ]
    usage = cert.extensions.get_extension_for_class(x509.KeyUsage).value
    assert usage.digital_signature and not usage.key_cert_sign
    assert cert.not_valid_before_utc == NOW - BACKDATE
    assert cert.not_valid_after_utc == NOW + dt.timedelta(days=365)
    assert isinstance(cert.public_key(), ec.EllipticCurvePublicKey)
    # Not a client certificate: a server certificate does not authenticate anyone.
    with pytest.raises(VerificationError):
        client_chain(pki.ca.certificate, cert)
    # The files that daphne's ssl: endpoint reads.
    assert x509.load_pem_x509_certificate(pki.certificate_path.read_bytes()) == cert
    assert pki.key_path.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----")


def test_the_serving_ca_is_a_ca(tmp_path: Path) -> None:
    ca = ServingPKI.load_or_create_ca(tmp_path, now=clock).certificate
    constraints = ca.extensions.get_extension_for_class(x509.BasicConstraints).value
    assert constraints.ca and constraints.path_length == 0
    usage = ca.extensions.get_extension_for_class(x509.KeyUsage).value
    assert usage.key_cert_sign and usage.crl_sign
    ca.verify_directly_issued_by(ca)  # self-signed
    assert ca.not_valid_after_utc == NOW + dt.timedelta(days=3650)


def test_key_files_are_private_and_certificates_public(tmp_path: Path) -> None:
    pki = ServingPKI.load_or_create(tmp_path, [], now=clock)
    assert mode(pki.key_path) == 0o600
    assert mode(pki.directory / "serving-ca.key") == 0o600
    assert mode(pki.certificate_path) == 0o644
    assert mode(pki.ca_path) == 0o644
    cluster = ClusterPKI.load_or_create(tmp_path / "clusters" / "demo", now=clock)
    assert mode(cluster.directory / "ca.key") == 0o600
    assert mode(cluster.service_account_key_path) == 0o600
    assert mode(cluster.service_account_public_key_path) == 0o644
    assert not list(tmp_path.rglob("*.tmp")), "temporary files left behind"


def test_the_serving_certificate_is_kept_while_it_fits(tmp_path: Path) -> None:
    first = ServingPKI.load_or_create(tmp_path, ["127.0.0.1"], now=clock)
    again = ServingPKI.load_or_create(tmp_path, ["127.0.0.1", "localhost", "[::1]"], now=clock)
    assert again.certificate.serial_number == first.certificate.serial_number
    assert again.key_path.read_bytes() == first.key_path.read_bytes()


def test_a_new_api_host_gets_a_new_certificate_from_the_same_ca(tmp_path: Path) -> None:
    first = ServingPKI.load_or_create(tmp_path, ["127.0.0.1"], now=clock)
    moved = ServingPKI.load_or_create(tmp_path, ["lab.example.org"], now=clock)
    assert moved.certificate.serial_number != first.certificate.serial_number
    assert moved.ca.certificate == first.ca.certificate  # kubeconfigs made before still work
    server_chain(moved, "lab.example.org")
    assert "lab.example.org" in certificate_hosts(
        x509.load_pem_x509_certificate(moved.certificate_path.read_bytes())
    )
    # And back: the certificate names exactly the hosts the port is served under.
    back = ServingPKI.load_or_create(tmp_path, ["127.0.0.1"], now=clock)
    assert "lab.example.org" not in back.hosts


def test_a_serving_certificate_near_its_end_is_renewed(tmp_path: Path) -> None:
    first = ServingPKI.load_or_create(tmp_path, [], now=clock)
    still_fine = NOW + dt.timedelta(days=365) - RENEW_BEFORE - dt.timedelta(days=1)
    assert ServingPKI.load_or_create(tmp_path, [], now=lambda: still_fine).certificate == first.certificate
    late = NOW + dt.timedelta(days=365) - RENEW_BEFORE + dt.timedelta(days=1)
    renewed = ServingPKI.load_or_create(tmp_path, [], now=lambda: late)
    assert renewed.certificate != first.certificate
    assert renewed.certificate.not_valid_after_utc == late + dt.timedelta(days=365)
    server_chain(renewed, "127.0.0.1", now=late)


def test_a_certificate_not_signed_by_the_serving_ca_is_replaced(tmp_path: Path) -> None:
    pki = ServingPKI.load_or_create(tmp_path, [], now=clock)
    stranger = new_ca("someone else", now=NOW)
    key = new_key()
    foreign = serving_certificate(stranger, key.public_key(), [], now=NOW)
    reason = serving_certificate_problem(foreign, key, pki.ca.certificate, [], now=NOW)
    assert reason == "the serving CA did not sign it"
    assert serving_certificate_problem(pki.certificate, key, pki.ca.certificate, [], now=NOW) == (
        "its key does not match it"
    )
    assert serving_certificate_problem(pki.certificate, pki.key, pki.ca.certificate, [], now=NOW) is None
    # A damaged certificate file is made again.
    pki.certificate_path.write_text("not a certificate")
    assert ServingPKI.load_or_create(tmp_path, [], now=clock).certificate != pki.certificate


def test_normalize_hosts() -> None:
    assert normalize_hosts(["[::1]", "0.0.0.0", "::", "", "Lab.Example.ORG.", "0:0::1"]) == (
        "127.0.0.1",
        "::1",
        "lab.example.org",
        "localhost",
    )


def test_a_ca_is_never_replaced_behind_the_kubeconfigs_back(tmp_path: Path) -> None:
    ca = ServingPKI.load_or_create_ca(tmp_path, now=clock)
    assert ServingPKI.load_or_create_ca(tmp_path, now=clock).certificate == ca.certificate
    (tmp_path / "pki" / "serving-ca.key").unlink()
    with pytest.raises(PKIError, match=r"serving-ca\.key is missing"):
        ServingPKI.load_or_create_ca(tmp_path, now=clock)
    # A key that does not belong to the certificate is an error too.
    (tmp_path / "pki" / "serving-ca.key").write_bytes(
        ClusterPKI.load_or_create(tmp_path / "c", now=clock).directory.joinpath("ca.key").read_bytes()
    )
    with pytest.raises(PKIError, match="is not the key of"):
        ServingPKI.load_or_create_ca(tmp_path, now=clock)


def test_a_ca_key_without_its_certificate_is_made_afresh(tmp_path: Path) -> None:
    # What a crash between the two writes of a new CA leaves: nobody can trust that CA yet.
    first = ServingPKI.load_or_create_ca(tmp_path, now=clock)
    (tmp_path / "pki" / "serving-ca.crt").unlink()
    second = ServingPKI.load_or_create_ca(tmp_path, now=clock)
    assert second.certificate != first.certificate


def test_concurrent_creation_makes_one_ca(tmp_path: Path) -> None:
    with ThreadPoolExecutor(4) as pool:
        pkis = list(pool.map(lambda _: ServingPKI.load_or_create(tmp_path, [], now=clock), range(8)))
    assert len({p.ca.certificate.serial_number for p in pkis}) == 1
    assert len({p.certificate.serial_number for p in pkis}) == 1


# -- the client side ----------------------------------------------------------------------------------


def test_client_certificates_carry_user_and_groups_and_chain_to_the_cluster_ca(tmp_path: Path) -> None:
    pki = ClusterPKI.load_or_create(tmp_path / "demo", now=clock)
    cert_pem, key_pem = pki.issue_client_certificate("admin", [SYSTEM_MASTERS, "teachers"], days=30)
    cert = x509.load_pem_x509_certificate(cert_pem)
    assert key_pem.startswith(b"-----BEGIN PRIVATE KEY-----")
    assert [a.value for a in cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)] == ["admin"]
    assert [a.value for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)] == [
        SYSTEM_MASTERS,
        "teachers",
    ]
    assert list(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == [
        ExtendedKeyUsageOID.CLIENT_AUTH
    ]
    assert cert.not_valid_after_utc == NOW + dt.timedelta(days=30)
    client_chain(pki.ca.certificate, cert)


def test_a_client_certificate_means_nothing_to_another_cluster(tmp_path: Path) -> None:
    demo = ClusterPKI.load_or_create(tmp_path / "demo", now=clock)
    other = ClusterPKI.load_or_create(tmp_path / "other", now=clock)
    assert demo.ca.certificate != other.ca.certificate
    cert = x509.load_pem_x509_certificate(
        demo.issue_client_certificate("system:node:n1", ["system:nodes"])[0]
    )
    with pytest.raises(VerificationError):
        client_chain(other.ca.certificate, cert)
    client_chain(demo.ca.certificate, cert)


def test_a_client_certificate_may_start_at_another_time(tmp_path: Path) -> None:
    # A component's certificate starts at its cluster's time, not the wall clock's.
    pki = ClusterPKI.load_or_create(tmp_path / "demo", now=clock)
    start = NOW - dt.timedelta(days=400)
    cert_pem, _ = pki.issue_client_certificate("system:kube-scheduler", days=0.5, now=start)
    cert = x509.load_pem_x509_certificate(cert_pem)
    assert cert.not_valid_before_utc == start - BACKDATE
    assert cert.not_valid_after_utc == start + dt.timedelta(hours=12)


def test_the_cluster_pki_is_kept_across_loads(tmp_path: Path) -> None:
    first = ClusterPKI.load_or_create(tmp_path / "demo", now=clock)
    second = ClusterPKI.load_or_create(tmp_path / "demo", now=clock)
    assert second.ca.certificate == first.ca.certificate
    assert second.service_account_public_key_pem == first.service_account_public_key_pem
    assert first.ca.common_name == "kubelab-client-ca:demo"


def test_the_service_account_key_is_ecdsa_p256_with_its_public_half_beside_it(tmp_path: Path) -> None:
    pki = ClusterPKI.load_or_create(tmp_path / "demo", now=clock)
    assert isinstance(pki.service_account_key, ec.EllipticCurvePrivateKey)
    assert pki.service_account_key.curve.name == "secp256r1"
    assert pki.service_account_public_key_path.read_bytes() == pki.service_account_public_key_pem
    assert pki.service_account_public_key_pem.startswith(b"-----BEGIN PUBLIC KEY-----")


def test_a_client_certificate_needs_a_user(tmp_path: Path) -> None:
    pki = ClusterPKI.load_or_create(tmp_path / "demo", now=clock)
    with pytest.raises(ValueError, match="user name"):
        pki.issue_client_certificate("")


# -- the runtime ---------------------------------------------------------------------------------------


async def test_a_started_cluster_has_its_identities(tmp_path: Path) -> None:
    lab = Lab(LabConfig(data_dir=tmp_path, store_url="sqlite", demo_cluster="demo"))
    await lab.start()
    try:
        demo = lab.cluster("demo")
        assert demo.pki.ca_path == tmp_path / "clusters" / "demo" / "pki" / "ca.crt"
        assert demo.pki.ca_path.exists() and demo.pki.service_account_key_path.exists()
        # No component holds a token: each has a client certificate of the cluster's CA, by its own user.
        assert demo.tokens.entries() == []
        subjects = {
            trace_id: certificate.certificate.subject.rfc4514_string()
            for trace_id, certificate in demo.component_certificates.items()
        }
        assert subjects["scheduler"] == "CN=system:kube-scheduler"
        assert subjects["controller-manager"] == "CN=system:kube-controller-manager"
        assert subjects["kubelet:node-1"] == "CN=system:node:node-1,O=system:nodes"
        assert subjects["kube-proxy:node-3"] == "CN=system:kube-proxy"
        assert subjects["kubelet:control-plane"] == "CN=system:node:control-plane,O=system:nodes"
        assert len(subjects) == 9, "scheduler, controller manager, 4 kubelets, 3 kube-proxies"
        assert all(
            certificate.certificate.issuer == demo.pki.ca.certificate.subject
            for certificate in demo.component_certificates.values()
        )
        token = TokenRegistry.load(demo.data_dir).issue("admin", [SYSTEM_MASTERS])
        user = demo.tokens.authenticate(token)  # issued "by another process", known at once
        assert user is not None and user.groups == (SYSTEM_MASTERS,)
    finally:
        await lab.stop()
    # The next start keeps the same CA.
    again = Lab(LabConfig(data_dir=tmp_path, store_url="sqlite", demo_cluster="demo"))
    await again.start()
    try:
        assert again.cluster("demo").pki.ca.certificate == demo.pki.ca.certificate
    finally:
        await again.stop()


def test_an_unstarted_cluster_has_no_identities_yet(tmp_path: Path) -> None:
    cluster = Cluster("demo", data_dir=tmp_path, store=open_store("demo", url="sqlite", data_dir=tmp_path))
    with pytest.raises(RuntimeError, match="has not started"):
        cluster.pki  # noqa: B018
    with pytest.raises(RuntimeError, match="has not started"):
        cluster.tokens  # noqa: B018
    with pytest.raises(RuntimeError, match="has not started"):
        cluster.revocations  # noqa: B018


def test_an_rsa_service_account_key_on_disk_is_still_used(tmp_path: Path) -> None:
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    (tmp_path / "demo" / "pki").mkdir(parents=True)
    (tmp_path / "demo" / "pki" / "sa.key").write_bytes(key_pem(rsa_key))
    pki = ClusterPKI.load_or_create(tmp_path / "demo", now=clock)
    assert isinstance(pki.service_account_key, rsa.RSAPrivateKey)
    assert pki.service_account_public_key_pem == public_key_pem(rsa_key)


def test_a_service_account_key_on_a_curve_jws_cannot_use_is_refused(tmp_path: Path) -> None:
    (tmp_path / "demo" / "pki").mkdir(parents=True)
    odd = ec.generate_private_key(ec.SECP256K1())
    (tmp_path / "demo" / "pki" / "sa.key").write_bytes(key_pem(odd))
    with pytest.raises(PKIError, match="P-256, P-384 or P-521"):
        ClusterPKI.load_or_create(tmp_path / "demo", now=clock)
