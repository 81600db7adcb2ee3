"""Keys and PKCS#10 certificate requests for the CertificateSigningRequest tests, made as a student
would make them (``openssl req -new``), with ``cryptography``."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def request_pem(
    key: ec.EllipticCurvePrivateKey,
    common_name: str,
    organizations: Sequence[str] = (),
    *,
    dns_names: Sequence[str] = (),
) -> bytes:
    """A PEM ``CERTIFICATE REQUEST`` for ``CN=<common_name>`` and one ``O=`` per organization."""
    name = x509.Name(
        [
            *(x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )
    builder = x509.CertificateSigningRequestBuilder().subject_name(name)
    if dns_names:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.DNSName(d) for d in dns_names]), critical=False
        )
    return builder.sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


def csr_manifest(
    name: str,
    pem: bytes,
    *,
    signer: str = "kubernetes.io/kube-apiserver-client",
    usages: Sequence[str] = ("client auth",),
    **spec: Any,
) -> dict[str, Any]:
    """A ``certificates.k8s.io/v1`` CertificateSigningRequest asking ``signer`` to sign ``pem``."""
    return {
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {
            "request": base64.b64encode(pem).decode(),
            "signerName": signer,
            "usages": list(usages),
            **spec,
        },
    }


def issued(csr: dict[str, Any]) -> x509.Certificate:
    """The certificate in ``status.certificate``."""
    return x509.load_pem_x509_certificate(base64.b64decode(csr["status"]["certificate"]))
