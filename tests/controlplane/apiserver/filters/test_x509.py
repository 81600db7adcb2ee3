"""The x509 authenticator on its own: which chains prove a user, and the reason for each one refused."""

from __future__ import annotations

import datetime as dt

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.x509.oid import NameOID

from controlplane.apiserver.filters.x509 import (
    MAX_CHAIN_LENGTH,
    CertificateExpired,
    CertificateNotYetValid,
    CertificateRevoked,
    CertificateTooLarge,
    IncompatibleUsage,
    MalformedCertificate,
    UnknownAuthority,
    X509Authenticator,
    describe,
)
from controlplane.clock import ManualClock
from controlplane.identity import NODES, SYSTEM_MASTERS
from controlplane.pki import CertificateAuthority, certificate_pem, client_certificate, new_ca, new_key
from controlplane.revocation import format_serial
from tests.support.certificates import NOW, client_pair, foreign_ca, oversized_pair, serial_of, serving_pair


@pytest.fixture
def ca() -> CertificateAuthority:
    return new_ca("kubelab-client-ca:test", now=NOW - dt.timedelta(days=30))


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(NOW.timestamp())


@pytest.fixture
def authenticator(ca: CertificateAuthority, clock: ManualClock) -> X509Authenticator:
    return X509Authenticator(ca.certificate, clock=clock)


def test_cn_is_the_user_and_each_o_a_group(
    authenticator: X509Authenticator, ca: CertificateAuthority
) -> None:
    cert, _ = client_pair(ca, "system:node:n1", [NODES, SYSTEM_MASTERS])
    result = authenticator.authenticate([cert])
    assert result is not None and result.error is None and result.user is not None
    assert (result.user.username, result.user.groups) == ("system:node:n1", (NODES, SYSTEM_MASTERS))
    assert result.user.extra["authentication.kubernetes.io/credential-id"][0].startswith("X509SHA256=")
    assert describe(result.user) == "x509 CN=system:node:n1, O=system:nodes, O=system:masters"


def test_no_chain_is_not_a_certificate_at_all(authenticator: X509Authenticator) -> None:
    assert authenticator.authenticate([]) is None
    assert authenticator.authenticate(()) is None


def test_a_certificate_of_another_ca_is_an_unknown_authority(authenticator: X509Authenticator) -> None:
    cert, _ = client_pair(foreign_ca())
    result = authenticator.authenticate([cert])
    assert result is not None and result.user is None
    assert isinstance(result.error, UnknownAuthority)
    assert str(result.error).startswith(f"verifying certificate SN={serial_of(cert)}, SKID=")
    assert str(result.error).endswith("failed: x509: certificate signed by unknown authority")


def test_a_self_signed_look_alike_of_the_ca_is_unknown(authenticator: X509Authenticator) -> None:
    # Same subject as the real CA, another key: the issuer name matches, the signature does not.
    impostor = new_ca("kubelab-client-ca:test", now=NOW - dt.timedelta(days=1))
    cert, _ = client_pair(impostor, "admin", [SYSTEM_MASTERS])
    result = authenticator.authenticate([cert])
    assert result is not None and isinstance(result.error, UnknownAuthority)


async def test_expiry_is_judged_by_the_cluster_clock(
    authenticator: X509Authenticator, ca: CertificateAuthority, clock: ManualClock
) -> None:
    cert, _ = client_pair(ca, days=1)
    first = authenticator.authenticate([cert])
    assert first is not None and first.user is not None
    await clock.advance(dt.timedelta(days=1, seconds=1).total_seconds())
    result = authenticator.authenticate([cert])
    assert result is not None and result.user is None
    assert isinstance(result.error, CertificateExpired)
    assert str(result.error).endswith(
        "x509: certificate has expired or is not yet valid: "
        "current time 2030-01-16T12:00:01Z is after 2030-01-16T12:00:00Z"
    )


def test_a_certificate_from_the_future_is_not_yet_valid(
    authenticator: X509Authenticator, ca: CertificateAuthority
) -> None:
    cert, _ = client_pair(ca, now=NOW + dt.timedelta(hours=1))
    result = authenticator.authenticate([cert])
    assert result is not None and isinstance(result.error, CertificateNotYetValid)
    assert str(result.error).endswith("current time 2030-01-15T12:00:00Z is before 2030-01-15T12:55:00Z")


def test_a_serving_certificate_is_no_client_certificate(
    authenticator: X509Authenticator, ca: CertificateAuthority
) -> None:
    cert, _ = serving_pair(ca)
    result = authenticator.authenticate([cert])
    assert result is not None and isinstance(result.error, IncompatibleUsage)
    assert str(result.error).endswith("x509: certificate specifies an incompatible key usage")


def test_the_ca_itself_is_no_client(authenticator: X509Authenticator, ca: CertificateAuthority) -> None:
    result = authenticator.authenticate([certificate_pem(ca.certificate).decode()])
    assert result is not None and isinstance(result.error, IncompatibleUsage)


def test_a_revoked_certificate_is_refused_and_only_that_one(
    ca: CertificateAuthority, clock: ManualClock
) -> None:
    revoked_cert, _ = client_pair(ca, "mallory")
    good_cert, _ = client_pair(ca, "mallory")
    revoked = {serial_of(revoked_cert)}
    authenticator = X509Authenticator(ca.certificate, clock=clock, is_revoked=revoked.__contains__)
    result = authenticator.authenticate([revoked_cert])
    assert result is not None and isinstance(result.error, CertificateRevoked)
    # As ``openssl x509 -serial`` prints it: an even number of hex digits (a leading 0 when needed).
    assert f"x509: certificate with serial {format_serial(serial_of(revoked_cert))}" in str(result.error)
    assert str(result.error).endswith("has been revoked")
    still = authenticator.authenticate([good_cert])
    assert still is not None and still.user is not None and still.user.username == "mallory"


def test_revocation_is_checked_on_every_request(ca: CertificateAuthority, clock: ManualClock) -> None:
    cert, _ = client_pair(ca)
    revoked: set[int] = set()
    authenticator = X509Authenticator(ca.certificate, clock=clock, is_revoked=revoked.__contains__)
    first = authenticator.authenticate([cert])
    assert first is not None and first.user is not None  # the signature check is now cached
    revoked.add(serial_of(cert))
    again = authenticator.authenticate([cert])
    assert again is not None and isinstance(again.error, CertificateRevoked)


@pytest.mark.parametrize(
    "chain",
    [
        ["not a certificate"],
        ["-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"],
        ["-----BEGIN CERTIFICATE-----\n\u00e9\u00e9\u00e9\n-----END CERTIFICATE-----\n"],
        [b"-----BEGIN CERTIFICATE-----"],
        [None],
        [42],
    ],
)
def test_garbage_is_malformed_never_a_crash(authenticator: X509Authenticator, chain: list[object]) -> None:
    result = authenticator.authenticate(chain)
    assert result is not None and result.user is None
    assert isinstance(result.error, MalformedCertificate)
    assert str(result.error).startswith("x509: malformed certificate")


def test_oversized_chains_are_refused_before_parsing(
    authenticator: X509Authenticator, ca: CertificateAuthority
) -> None:
    cert, _ = client_pair(ca)
    too_long = authenticator.authenticate([cert] * (MAX_CHAIN_LENGTH + 1))
    assert too_long is not None and isinstance(too_long.error, CertificateTooLarge)
    big, _ = oversized_pair(ca)
    too_big = authenticator.authenticate([big])
    assert too_big is not None and isinstance(too_big.error, CertificateTooLarge)
    assert "is more than" in str(too_big.error)


def test_a_certificate_without_a_common_name_proves_nobody_without_an_error(
    authenticator: X509Authenticator, ca: CertificateAuthority
) -> None:
    # Upstream's CommonNameUserConversion: (nil, false, nil), so the token authenticators get their turn.
    key = new_key()
    certificate = client_certificate(ca, key.public_key(), "placeholder", now=NOW)
    nameless = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, SYSTEM_MASTERS)]))
        .issuer_name(ca.certificate.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(certificate.not_valid_before_utc)
        .not_valid_after(certificate.not_valid_after_utc)
        .sign(ca.key, hashes.SHA256())
    )
    result = authenticator.authenticate([certificate_pem(nameless).decode()])
    assert result is not None and result.user is None and result.error is None


def test_only_the_first_certificate_of_the_chain_is_the_clients(
    authenticator: X509Authenticator, ca: CertificateAuthority
) -> None:
    good, _ = client_pair(ca, "first")
    foreign, _ = client_pair(foreign_ca(), "second")
    result = authenticator.authenticate([good, foreign])
    assert result is not None and result.user is not None and result.user.username == "first"
    refused = authenticator.authenticate([foreign, good])
    assert refused is not None and isinstance(refused.error, UnknownAuthority)


@pytest.mark.parametrize(
    ("edge", "offset", "refused"),
    [
        ("not_valid_before_utc", -1e-6, CertificateNotYetValid),
        ("not_valid_before_utc", 0.0, None),
        ("not_valid_before_utc", 1.5, None),
        ("not_valid_after_utc", -1.5, None),
        ("not_valid_after_utc", 0.0, None),
        ("not_valid_after_utc", 1e-6, CertificateExpired),
    ],
)
async def test_the_validity_window_is_exact_at_its_edges(
    ca: CertificateAuthority, edge: str, offset: float, refused: type[Exception] | None
) -> None:
    cert, _ = client_pair(ca, days=1)
    when = getattr(x509.load_pem_x509_certificate(cert.encode()), edge).timestamp() + offset
    authenticator = X509Authenticator(ca.certificate, clock=ManualClock(NOW.timestamp()))
    assert authenticator.authenticate([cert]).user is not None  # type: ignore[union-attr]  # remembered
    authenticator.clock = ManualClock(when)
    result = authenticator.authenticate([cert])
    assert result is not None
    if refused is None:
        assert result.error is None and result.user is not None
    else:
        assert isinstance(result.error, refused) and result.user is None
