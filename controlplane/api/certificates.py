"""CertificateSigningRequests: asking the cluster to sign a certificate for a key you made yourself.

A client certificate is a public key plus a name (``CN``, the user) and groups (``O``), signed by a CA
the API server trusts (``pki.py``). Whoever holds the CA's private key decides who exists. A
**CertificateSigningRequest** (CSR, ``certificates.k8s.io/v1``) lets anyone *ask* for such a signature
without ever seeing that key:

1. The requester makes a private key and a PKCS#10 certificate request (``openssl req -new`` or
   ``cryptography``'s ``CertificateSigningRequestBuilder``): the public key, the subject it wants,
   signed with its private key to prove it holds it. It puts the PEM (base64 again in JSON) in
   ``spec.request``, names a **signer** (``spec.signerName``) and the **usages** it wants, and may ask
   for a shorter life (``spec.expirationSeconds``, at least 600). The API server writes *who asked*
   into ``spec.username``/``uid``/``groups``/``extra``: the requester cannot choose them.
2. Someone with ``approve`` on the signer (``certificates.k8s.io/signers``, resource name the signer)
   adds an ``Approved`` or ``Denied`` condition through the ``/approval`` subresource
   (``kubectl certificate approve|deny``). Approved and Denied exclude each other, and no condition of
   the three is ever removed.
3. The signer (kube-controller-manager's ``csrsigning`` controller for the ``kubernetes.io/*``
   signers) checks the request against its own rules, signs it and writes the certificate into
   ``status.certificate`` through ``/status``, or adds a ``Failed`` condition.

The requester then uses its key with the issued certificate, as in any kubeconfig.

This module holds what the API server, the printers and the controllers share: the signer names, the
usages, the conditions and reading the request. Upstream: ``pkg/apis/certificates`` (``types.go``,
``helpers.go``), ``staging/src/k8s.io/api/certificates/v1/types.go``.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any, Final

from cryptography import x509

GROUP: Final = "certificates.k8s.io"
VERSION: Final = "v1"
RESOURCE: Final = "certificatesigningrequests"
KIND: Final = "CertificateSigningRequest"

#: The signers kube-controller-manager's ``csrsigning`` controller issues for (``types.go``).
KUBE_APISERVER_CLIENT_SIGNER: Final = "kubernetes.io/kube-apiserver-client"
KUBE_APISERVER_CLIENT_KUBELET_SIGNER: Final = "kubernetes.io/kube-apiserver-client-kubelet"
KUBELET_SERVING_SIGNER: Final = "kubernetes.io/kubelet-serving"
#: The v1beta1 default, refused by v1 (``LegacyUnknownSignerName``).
LEGACY_UNKNOWN_SIGNER: Final = "kubernetes.io/legacy-unknown"

#: The condition types (``RequestConditionType``).
APPROVED: Final = "Approved"
DENIED: Final = "Denied"
FAILED: Final = "Failed"

#: Every usage ``spec.usages`` may name (``KeyUsage``), in upstream's order.
VALID_USAGES: Final = (
    "signing",
    "digital signature",
    "content commitment",
    "key encipherment",
    "key agreement",
    "data encipherment",
    "cert sign",
    "crl sign",
    "encipher only",
    "decipher only",
    "any",
    "server auth",
    "client auth",
    "code signing",
    "email protection",
    "s/mime",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "timestamping",
    "ocsp signing",
    "microsoft sgc",
    "netscape sgc",
)

#: The shortest life a request may ask for (``spec.expirationSeconds``), in seconds.
MIN_EXPIRATION_SECONDS: Final = 600


class RequestError(ValueError):
    """``spec.request`` is not base64 of a PEM ``CERTIFICATE REQUEST`` that parses."""


def request_pem(csr: Mapping[str, Any]) -> bytes:
    """The PEM in ``spec.request`` (base64 in JSON); ``RequestError`` if it is not base64."""
    value = (csr.get("spec") or {}).get("request")
    if not isinstance(value, str):
        raise RequestError("PEM block type must be CERTIFICATE REQUEST")
    try:
        return base64.b64decode("".join(value.split()), validate=True)
    except (binascii.Error, ValueError) as error:
        raise RequestError(str(error)) from error


def parse_request(pem: bytes) -> x509.CertificateSigningRequest:
    """The PKCS#10 request in ``pem`` (``certificates.ParseCSR``), its signature not yet checked."""
    begin = pem.find(b"-----BEGIN ")
    if begin < 0 or not pem[begin:].startswith(b"-----BEGIN CERTIFICATE REQUEST-----"):
        raise RequestError("PEM block type must be CERTIFICATE REQUEST")
    try:
        return x509.load_pem_x509_csr(pem[begin:])
    except ValueError as error:
        raise RequestError(f"x509: malformed certificate request: {error}") from error


def conditions(csr: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    status = csr.get("status")
    found = status.get("conditions") if isinstance(status, Mapping) else None
    return [c for c in found if isinstance(c, Mapping)] if isinstance(found, list) else []


def has_true_condition(csr: Mapping[str, Any], condition_type: str) -> bool:
    """``HasTrueCondition``: a condition of that type whose status is True (or unset, as v1 defaults)."""
    return any(
        c.get("type") == condition_type and c.get("status", "True") in ("True", "") for c in conditions(csr)
    )


def approved_or_denied(csr: Mapping[str, Any]) -> tuple[bool, bool]:
    """``GetCertApprovalCondition``: whether the CSR is approved, and whether it is denied."""
    types = {c.get("type") for c in conditions(csr)}
    return APPROVED in types, DENIED in types


def certificate_of(csr: Mapping[str, Any]) -> bytes:
    """The issued certificate's PEM (``status.certificate``, base64 in JSON), or b"" before issue."""
    status = csr.get("status")
    value = status.get("certificate") if isinstance(status, Mapping) else None
    if not isinstance(value, str) or not value:
        return b""
    try:
        return base64.b64decode(value)
    except (binascii.Error, ValueError):
        return b""


def status_text(csr: Mapping[str, Any]) -> str:
    """The CONDITION column (printers.go ``extractCSRStatus``): Denied over Approved over Pending,
    then ``,Failed`` and ``,Issued``."""
    approved, denied = approved_or_denied(csr)
    text = "Denied" if denied else "Approved" if approved else "Pending"
    if any(c.get("type") == FAILED for c in conditions(csr)):
        text += ",Failed"
    status = csr.get("status")
    if isinstance(status, Mapping) and status.get("certificate"):
        text += ",Issued"
    return text


__all__ = [
    "APPROVED",
    "DENIED",
    "FAILED",
    "GROUP",
    "KIND",
    "KUBELET_SERVING_SIGNER",
    "KUBE_APISERVER_CLIENT_KUBELET_SIGNER",
    "KUBE_APISERVER_CLIENT_SIGNER",
    "LEGACY_UNKNOWN_SIGNER",
    "MIN_EXPIRATION_SECONDS",
    "RESOURCE",
    "VALID_USAGES",
    "VERSION",
    "RequestError",
    "approved_or_denied",
    "certificate_of",
    "conditions",
    "has_true_condition",
    "parse_request",
    "request_pem",
    "status_text",
]
