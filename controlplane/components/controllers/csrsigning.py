"""The CSR signing controller: issue approved CertificateSigningRequests with the cluster CA.

kube-controller-manager holds the cluster CA's key (``--cluster-signing-cert-file`` and
``--cluster-signing-key-file``) and signs for the three built-in signers that issue certificates the
cluster itself trusts (``controlplane/api/certificates.py`` tells the whole story):

- ``kubernetes.io/kube-apiserver-client``: any client certificate for the API server. Usages may be
  ``client auth`` with ``digital signature`` and ``key encipherment``, nothing else;
- ``kubernetes.io/kube-apiserver-client-kubelet``: a kubelet's client certificate. The subject must
  be ``O=system:nodes`` (only), ``CN=system:node:<name>``, without any subject alternative name, and
  the usages exactly ``client auth`` + ``digital signature`` (+ ``key encipherment``);
- ``kubernetes.io/kubelet-serving``: a kubelet's serving certificate: ``O=system:nodes``,
  ``CN=system:node:<name>``, at least one DNS or IP name and no e-mail or URI, usages ``server auth``
  + ``digital signature`` (+ ``key encipherment``).

For each CSR that is approved, not denied, not failed and not yet issued, it checks the request
against its signer's rules. A request that breaks them gets a ``Failed`` condition (reason
``SignerValidationFailure``) and is never issued; one that keeps them is signed: the requested subject,
names and public key, the requested usages as key usages and extended key usages, valid from five
minutes ago for ``spec.expirationSeconds`` (at least ten minutes) or the controller's maximum
(``--cluster-signing-duration``, a year), whichever is shorter, and never beyond the CA's own end.
The PEM goes into ``status.certificate`` through ``/status``. Other signers' requests are left for
their own signers.

Times are the cluster clock's, as the API server's x509 authenticator checks them against it.

Upstream: ``pkg/controller/certificates/signer/signer.go`` (``handle``, ``duration``, the
``is*`` request checks), ``pkg/controller/certificates/authority/{authority,policies}.go`` (the
certificate template, ``PermissiveSigningPolicy``, ``keyUsagesFromStrings``),
``pkg/apis/certificates/helpers.go`` (``ValidateKubeletClientCSR``, ``ValidateKubeletServingCSR``),
``pkg/controller/certificates/certificate_controller.go`` (skip issued CSRs).
"""

from __future__ import annotations

import base64
import datetime as dt
import logging
from collections.abc import Iterable, Sequence
from typing import Any, Final

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.serialization import Encoding
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID, ObjectIdentifier

from controlplane.api.certificates import (
    FAILED,
    KUBE_APISERVER_CLIENT_KUBELET_SIGNER,
    KUBE_APISERVER_CLIENT_SIGNER,
    KUBELET_SERVING_SIGNER,
    RequestError,
    approved_or_denied,
    certificate_of,
    has_true_condition,
    parse_request,
    request_pem,
)
from controlplane.api.deepcopy import deep_copy
from controlplane.api.meta import Object, format_time
from controlplane.client.manager import Manager
from controlplane.client.reconciler import Controller, Request, Result, TerminalError
from controlplane.clock import Clock
from controlplane.components.controllers.kinds import CERTIFICATE_SIGNING_REQUESTS
from controlplane.pki import CertificateAuthority

logger = logging.getLogger(__name__)

#: ``--cluster-signing-duration``'s default: a year.
DEFAULT_MAX_DURATION: Final = dt.timedelta(hours=8760)
#: ``PermissiveSigningPolicy``'s backdating, and the shortest life ``duration`` gives.
BACKDATE: Final = dt.timedelta(minutes=5)
MIN_DURATION: Final = dt.timedelta(minutes=10)
#: Below this life a certificate's end is not backdated (``Short``: 5 minutes is ~1% of 8 hours).
SHORT: Final = dt.timedelta(hours=8)
SYSTEM_NODES: Final = "system:nodes"
NODE_PREFIX: Final = "system:node:"

#: ``keyUsageDict``: usages that are X.509 key usage bits.
KEY_USAGES: Final[dict[str, str]] = {
    "signing": "digital_signature",
    "digital signature": "digital_signature",
    "content commitment": "content_commitment",
    "key encipherment": "key_encipherment",
    "key agreement": "key_agreement",
    "data encipherment": "data_encipherment",
    "cert sign": "key_cert_sign",
    "crl sign": "crl_sign",
    "encipher only": "encipher_only",
    "decipher only": "decipher_only",
}
#: ``extKeyUsageDict``: usages that are extended key usages.
EXTENDED_KEY_USAGES: Final[dict[str, ObjectIdentifier]] = {
    "any": ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE,
    "server auth": ExtendedKeyUsageOID.SERVER_AUTH,
    "client auth": ExtendedKeyUsageOID.CLIENT_AUTH,
    "code signing": ExtendedKeyUsageOID.CODE_SIGNING,
    "email protection": ExtendedKeyUsageOID.EMAIL_PROTECTION,
    "s/mime": ExtendedKeyUsageOID.EMAIL_PROTECTION,
    "ipsec end system": ObjectIdentifier("1.3.6.1.5.5.7.3.5"),
    "ipsec tunnel": ObjectIdentifier("1.3.6.1.5.5.7.3.6"),
    "ipsec user": ObjectIdentifier("1.3.6.1.5.5.7.3.7"),
    "timestamping": ExtendedKeyUsageOID.TIME_STAMPING,
    "ocsp signing": ExtendedKeyUsageOID.OCSP_SIGNING,
    "microsoft sgc": ObjectIdentifier("1.3.6.1.4.1.311.10.3.3"),
    "netscape sgc": ObjectIdentifier("2.16.840.1.113730.4.1"),
}


class SigningError(ValueError):
    """The CA cannot sign this request (an unknown usage, a CA that has expired)."""


# -- the signers' rules ---------------------------------------------------------------------------


def _organizations(request: x509.CertificateSigningRequest) -> list[str]:
    return [str(a.value) for a in request.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]


def _common_name(request: x509.CertificateSigningRequest) -> str:
    values = request.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return str(values[0].value) if values else ""


def _alternative_names(request: x509.CertificateSigningRequest) -> x509.SubjectAlternativeName | None:
    try:
        return request.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return None


def _names_of(san: x509.SubjectAlternativeName | None, kind: type[x509.GeneralName]) -> list[Any]:
    return list(san.get_values_for_type(kind)) if san is not None else []  # type: ignore[arg-type]


def _usages_did_not_match(required: Iterable[str]) -> str:
    return "usages did not match [" + " ".join(sorted(required)) + "]"


def kubelet_client_problem(request: x509.CertificateSigningRequest, usages: Sequence[str]) -> str | None:
    """``ValidateKubeletClientCSR``: why this is not a kubelet's client certificate request, or None."""
    if _organizations(request) != [SYSTEM_NODES]:
        return "subject organization is not system:nodes"
    san = _alternative_names(request)
    if _names_of(san, x509.DNSName):
        return "DNS subjectAltNames are not allowed"
    if _names_of(san, x509.RFC822Name):
        return "Email subjectAltNames are not allowed"
    if _names_of(san, x509.IPAddress):
        return "IP subjectAltNames are not allowed"
    if _names_of(san, x509.UniformResourceIdentifier):
        return "URI subjectAltNames are not allowed"
    if not _common_name(request).startswith(NODE_PREFIX):
        return "subject common name does not begin with system:node:"
    required = {"digital signature", "key encipherment", "client auth"}
    if set(usages) not in (required, required - {"key encipherment"}):
        return _usages_did_not_match(required)
    return None


def kubelet_serving_problem(request: x509.CertificateSigningRequest, usages: Sequence[str]) -> str | None:
    """``ValidateKubeletServingCSR``: why this is not a kubelet's serving certificate request, or None."""
    if _organizations(request) != [SYSTEM_NODES]:
        return "subject organization is not system:nodes"
    san = _alternative_names(request)
    if not _names_of(san, x509.DNSName) and not _names_of(san, x509.IPAddress):
        return "DNS or IP subjectAltName is required"
    if _names_of(san, x509.RFC822Name):
        return "Email subjectAltNames are not allowed"
    if _names_of(san, x509.UniformResourceIdentifier):
        return "URI subjectAltNames are not allowed"
    required = {"digital signature", "key encipherment", "server auth"}
    if set(usages) not in (required, required - {"key encipherment"}):
        return _usages_did_not_match(required)
    if not _common_name(request).startswith(NODE_PREFIX):
        return "subject common name does not begin with system:node:"
    return None


def apiserver_client_problem(request: x509.CertificateSigningRequest, usages: Sequence[str]) -> str | None:
    """``validAPIServerClientUsages``: client auth required; digital signature, key encipherment optional."""
    for usage in usages:
        if usage not in ("digital signature", "key encipherment", "client auth"):
            return f"invalid usage for client certificate: {usage}"
    if "client auth" not in usages:
        return "missing required usage for client certificate: client auth"
    return None


#: The signers this controller issues for, each with its check (``getCSRVerificationFuncForSignerName``).
SIGNERS: Final = {
    KUBE_APISERVER_CLIENT_SIGNER: apiserver_client_problem,
    KUBE_APISERVER_CLIENT_KUBELET_SIGNER: kubelet_client_problem,
    KUBELET_SERVING_SIGNER: kubelet_serving_problem,
}


# -- signing --------------------------------------------------------------------------------------


def duration(expiration_seconds: Any, maximum: dt.timedelta) -> dt.timedelta:
    """``signer.duration``: the requested life within [10 minutes, ``maximum``]; ``maximum`` if none."""
    if not isinstance(expiration_seconds, int) or isinstance(expiration_seconds, bool):
        return maximum
    requested = dt.timedelta(seconds=expiration_seconds)
    return max(MIN_DURATION, min(requested, maximum))


def _key_usage(usages: Sequence[str]) -> x509.KeyUsage | None:
    bits = {KEY_USAGES[u] for u in usages if u in KEY_USAGES}
    if not bits:
        return None  # Go leaves the extension out when no bit is set
    if bits & {"encipher_only", "decipher_only"} and "key_agreement" not in bits:
        raise SigningError("encipher only and decipher only need key agreement")
    names = (
        "digital_signature",
        "content_commitment",
        "key_encipherment",
        "data_encipherment",
        "key_agreement",
        "key_cert_sign",
        "crl_sign",
        "encipher_only",
        "decipher_only",
    )
    return x509.KeyUsage(**{name: name in bits for name in names})


def sign(
    ca: CertificateAuthority,
    request: x509.CertificateSigningRequest,
    usages: Sequence[str],
    ttl: dt.timedelta,
    *,
    now: dt.datetime,
) -> x509.Certificate:
    """``CertificateAuthority.Sign`` with ``PermissiveSigningPolicy``: the request's subject, names
    and key, the usages asked for, valid from ``now - 5 min`` for ``ttl``, capped by the CA's end."""
    unknown = [u for u in usages if u not in KEY_USAGES and u not in EXTENDED_KEY_USAGES]
    if unknown:
        raise SigningError(f"unrecognized usage: {unknown[0]}")
    key = request.public_key()
    if not isinstance(key, (ec.EllipticCurvePublicKey, rsa.RSAPublicKey)):
        raise SigningError(f"unsupported public key type {type(key).__name__}")
    ca_end = ca.certificate.not_valid_after_utc
    if now >= ca_end:
        raise SigningError(f"refusing to sign a certificate that expired in the past: NotAfter={ca_end}")
    not_after = now + ttl if ttl < SHORT else now + ttl - BACKDATE
    builder = (
        x509.CertificateBuilder()
        .subject_name(request.subject)
        .issuer_name(ca.certificate.subject)
        .public_key(key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(min(not_after, ca_end))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.key.public_key()), critical=False
        )
    )
    key_usage = _key_usage(usages)
    if key_usage is not None:
        builder = builder.add_extension(key_usage, critical=True)
    extended = list(dict.fromkeys(EXTENDED_KEY_USAGES[u] for u in usages if u in EXTENDED_KEY_USAGES))
    if extended:
        builder = builder.add_extension(x509.ExtendedKeyUsage(extended), critical=False)
    san = _alternative_names(request)
    if san is not None:
        builder = builder.add_extension(san, critical=False)
    return builder.sign(ca.key, hashes.SHA256())


def _usages(csr: Object) -> list[str]:
    return [str(u) for u in (csr.get("spec") or {}).get("usages") or []]


class CSRSigner:
    """The reconciler: one CSR per request, by name."""

    def __init__(
        self, manager: Manager, *, ca: CertificateAuthority, max_duration: dt.timedelta = DEFAULT_MAX_DURATION
    ) -> None:
        # A client of its own, as each of kube-controller-manager's controllers has (its own token
        # bucket): a joining kubelet waits for this controller, not for the others' start-up work.
        self.client = manager.client.with_own_rate_limiter()
        self.csrs = manager.cache(CERTIFICATE_SIGNING_REQUESTS)
        self.clock: Clock = manager.clock
        self.ca = ca
        self.max_duration = max_duration

    def _now(self) -> dt.datetime:
        return dt.datetime.fromtimestamp(self.clock.now(), dt.UTC)

    async def reconcile(self, request: Request) -> Result:
        csr = self.csrs.get_by_key(request.name)
        if csr is None or certificate_of(csr):
            return Result()  # gone, or issued already (certificate_controller.go's syncFunc)
        approved, denied = approved_or_denied(csr)
        if not approved or denied or has_true_condition(csr, FAILED):
            return Result()
        spec = csr.get("spec") or {}
        check = SIGNERS.get(str(spec.get("signerName") or ""))
        if check is None:
            return Result()  # another signer's request
        try:
            x509_request = parse_request(request_pem(csr))
        except RequestError as error:
            raise TerminalError(f"unable to parse csr {request.name!r}: {error}") from error
        usages = _usages(csr)
        problem = check(x509_request, usages)
        updated = deep_copy(csr)
        status = updated.setdefault("status", {})
        if problem is not None:
            logger.info("csr %s fails its signer's checks: %s", request.name, problem)
            status.setdefault("conditions", []).append(
                {
                    "type": FAILED,
                    "status": "True",
                    "reason": "SignerValidationFailure",
                    "message": problem,
                    "lastUpdateTime": format_time(self.clock.now()),
                }
            )
        else:
            ttl = duration(spec.get("expirationSeconds"), self.max_duration)
            try:
                certificate = sign(self.ca, x509_request, usages, ttl, now=self._now())
            except SigningError as error:
                raise TerminalError(f"error auto signing csr: {error}") from error
            status["certificate"] = base64.b64encode(certificate.public_bytes(Encoding.PEM)).decode()
        csrs = self.client.resource(
            CERTIFICATE_SIGNING_REQUESTS.group,
            CERTIFICATE_SIGNING_REQUESTS.version,
            CERTIFICATE_SIGNING_REQUESTS.plural,
        )
        await csrs.update_status(updated)
        return Result()


def add_to_manager(
    manager: Manager, *, ca: CertificateAuthority, max_duration: dt.timedelta = DEFAULT_MAX_DURATION
) -> Controller:
    """Add the CSR signing controller (for CertificateSigningRequests) to ``manager``."""
    return manager.new_controller(
        "csrsigning", CSRSigner(manager, ca=ca, max_duration=max_duration), for_=CERTIFICATE_SIGNING_REQUESTS
    )


__all__ = [
    "DEFAULT_MAX_DURATION",
    "SIGNERS",
    "CSRSigner",
    "SigningError",
    "add_to_manager",
    "apiserver_client_problem",
    "duration",
    "kubelet_client_problem",
    "kubelet_serving_problem",
    "sign",
]
