"""Client certificates for the authentication tests: good ones, and every way one can be bad.

Each builder returns PEM (what travels in ``client_cert_chain`` and in a kubeconfig) made with the same
``controlplane.pki`` functions the lab uses, at a time the test chooses.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from controlplane.pki import (
    CertificateAuthority,
    certificate_pem,
    client_certificate,
    key_pem,
    new_ca,
    new_key,
    serving_certificate,
)

NOW = dt.datetime(2030, 1, 15, 12, 0, tzinfo=dt.UTC)


def client_pair(
    ca: CertificateAuthority,
    user: str = "alice",
    groups: Iterable[str] = (),
    *,
    now: dt.datetime = NOW,
    days: float = 1,
) -> tuple[str, str]:
    """``(cert_pem, key_pem)`` of a client certificate of ``ca`` valid from ``now`` (less 5 minutes)."""
    key = new_key()
    certificate = client_certificate(ca, key.public_key(), user, groups, now=now, days=days)
    return certificate_pem(certificate).decode(), key_pem(key).decode()


def serving_pair(ca: CertificateAuthority, *, now: dt.datetime = NOW) -> tuple[str, str]:
    """A certificate of ``ca`` good for ``serverAuth`` only (for 127.0.0.1): no client certificate."""
    key = new_key()
    return certificate_pem(serving_certificate(ca, key.public_key(), [], now=now)).decode(), key_pem(
        key
    ).decode()


def foreign_ca(now: dt.datetime = NOW) -> CertificateAuthority:
    return new_ca("someone-elses-ca", now=now)


def oversized_pair(
    ca: CertificateAuthority, *, now: dt.datetime = NOW, size: int = 40_000
) -> tuple[str, str]:
    """A client certificate of ``ca``, good in every way but its size (a huge SAN list)."""
    key = new_key()
    names = [x509.DNSName(f"padding-{i:05d}.example.org") for i in range(size // 24)]
    certificate = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "big")]))
        .issuer_name(ca.certificate.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .sign(ca.key, hashes.SHA256())
    )
    return certificate_pem(certificate).decode(), key_pem(key).decode()


def serial_of(cert_pem: str) -> int:
    return x509.load_pem_x509_certificate(cert_pem.encode()).serial_number
