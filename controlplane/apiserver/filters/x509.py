"""X.509 client certificates: a user proven by the TLS handshake rather than by a header.

During the TLS handshake the API server may ask the client for a certificate. A client that has one
sends it, and proves it holds the matching private key by signing the handshake with it; nobody who
merely copied the certificate (it is public) can do that. The API server then trusts the certificate's
**subject** if a CA it trusts for clients (``--client-ca-file``) signed it:

- the **common name** (``CN``) is the user name: ``CN=system:node:node-1``;
- each **organization** (``O``) is a group: ``O=system:nodes``. ``O=system:masters`` makes a cluster
  admin, whoever the CN names.

That is kube-apiserver's x509 authenticator (k8s.io/apiserver ``pkg/authentication/request/x509``,
``x509.go``: ``Authenticator.AuthenticateRequest`` and ``CommonNameUserConversion``). It refuses a
certificate, with Go's ``crypto/x509`` error, when

- another CA signed it: ``x509: certificate signed by unknown authority``;
- it is outside its validity window: ``x509: certificate has expired or is not yet valid: current time
  ... is after ...`` (or ``before``). Kubelab checks the window against the **cluster clock**, the
  time everything else in the cluster reads, so a lesson that moves a cluster's clock forward sees its
  certificates expire;
- its extended key usage does not include ``clientAuth`` (a serving certificate is not a client
  certificate): ``x509: certificate specifies an incompatible key usage``;
- it was **revoked** (``controlplane.revocation``; upstream has no revocation, see there).

A certificate without a common name authenticates nobody, but is no error either (upstream's
``CommonNameUserConversion``). A refused certificate does not end authentication: the union
authenticator (``request/union/union.go``) collects the error and tries the bearer token next, and
only if nothing accepts the request is it 401 Unauthorized (``authentication.py``).

**How the certificate reaches the API server.** One API port serves every cluster, and each cluster has
its own client CA, so the TLS listener cannot verify a client certificate itself: it asks for one,
accepts any, and hands the chain to the application in the ASGI scope, as the ASGI TLS extension says
(``scope["extensions"]["tls"]["client_cert_chain"]``: PEM strings, the client's certificate first; see
``controlplane.management.apiport``). Each cluster's API server then checks the chain against its own
CA, here. The in-process transport puts a component's certificate in the same place, so a component in
the lab's process meets the same checks as kubectl.

**Deviations.** Upstream builds a chain through the client's intermediate certificates; a Kubelab CA may
sign only end-entity certificates (path length 0), so the client's certificate must be signed by the
cluster CA directly and the rest of the chain is ignored. Upstream also checks the CA's own validity
window; here only the client certificate's is checked against the cluster clock, because a cluster's
clock may start before the CA was made (tests start theirs in 2023). Chains are capped
(``MAX_CHAIN_LENGTH``, ``MAX_CHAIN_BYTES``): TLS caps them on the wire, the in-process scope does not.

Parsing a certificate and checking its signature cost more than the rest together, so what depends on
the chain alone (the parsed certificate, whether the cluster CA signed it, its key usage, its user) is
remembered per chain, keyed by the chain's bytes; the validity window and the revocation list are
checked on every request (upstream's ``AuthenticateRequest`` in ``x509.go`` verifies with the current
time on each request, too). The window is kept in POSIX seconds as well, so that a request well inside
it costs two float comparisons; one within a second of its edges, or outside it, is judged by
``check_validity`` exactly as before.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from controlplane.clock import Clock
from controlplane.identity import AUTHENTICATED, UserInfo
from controlplane.pki import issued_by
from controlplane.revocation import format_serial

#: At most this many certificates in a chain, and this many characters of PEM in all.
MAX_CHAIN_LENGTH = 8
MAX_CHAIN_BYTES = 32 * 1024
#: Chains whose signature check is remembered (a cluster has a few dozen clients).
SIGNATURE_CACHE_SIZE = 1024

#: ``extra`` key of the certificate's fingerprint, as upstream records it for audit.
CREDENTIAL_ID = "authentication.kubernetes.io/credential-id"


class CertificateRejected(Exception):
    """A client certificate that proves nobody: the message says why, in Go's ``crypto/x509`` words."""


class MalformedCertificate(CertificateRejected):
    """Not a certificate at all (garbage PEM, a chain that is no list of PEM strings)."""


class CertificateTooLarge(CertificateRejected):
    """A chain longer or bigger than any real client sends."""


class UnknownAuthority(CertificateRejected):
    """Signed by a CA this cluster does not trust for clients (another cluster's, or anyone's)."""


class CertificateExpired(CertificateRejected):
    """Past its ``notAfter`` by the cluster clock."""


class CertificateNotYetValid(CertificateRejected):
    """Before its ``notBefore`` by the cluster clock."""


class IncompatibleUsage(CertificateRejected):
    """Not meant for client authentication (a serving certificate, a CA)."""


class CertificateRevoked(CertificateRejected):
    """On the cluster's revocation list."""


@dataclass(frozen=True, slots=True)
class X509Result:
    """What the authenticator made of a chain: a user, a refusal, or neither (a certificate without CN)."""

    user: UserInfo | None = None
    error: CertificateRejected | None = None
    certificate: x509.Certificate | None = None
    #: ``user`` in ``system:authenticated`` too, as the authenticator chain hands it on, and how the
    #: trace says it was proven (``describe``); worked out once per chain.
    authenticated: UserInfo | None = None
    how: str = ""


def _go_time(when: dt.datetime) -> str:
    """A time as Go's ``time.RFC3339`` prints it in crypto/x509's validity error."""
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _identifier(certificate: x509.Certificate) -> str:
    """Upstream's ``certificateIdentifier``: ``SN=<decimal>, SKID=AB:CD.., AKID=..``."""

    def key_id(extension: type[x509.SubjectKeyIdentifier] | type[x509.AuthorityKeyIdentifier]) -> str:
        try:
            value = certificate.extensions.get_extension_for_class(extension).value
        except (x509.ExtensionNotFound, ValueError):
            return ""
        digest = value.digest if isinstance(value, x509.SubjectKeyIdentifier) else value.key_identifier
        return ":".join(f"{b:02X}" for b in digest or b"")

    return (
        f"SN={certificate.serial_number}, SKID={key_id(x509.SubjectKeyIdentifier)}, "
        f"AKID={key_id(x509.AuthorityKeyIdentifier)}"
    )


def parse_chain(chain: Sequence[object]) -> list[x509.Certificate]:
    """The certificates of a ``client_cert_chain``; ``MalformedCertificate``/``CertificateTooLarge``."""
    if len(chain) > MAX_CHAIN_LENGTH:
        raise CertificateTooLarge(
            f"x509: a chain of {len(chain)} certificates is more than {MAX_CHAIN_LENGTH}"
        )
    if not all(isinstance(pem, str) for pem in chain):
        raise MalformedCertificate("x509: malformed certificate: the chain must be a list of PEM strings")
    pems = [pem for pem in chain if isinstance(pem, str)]
    size = sum(len(pem) for pem in pems)
    if size > MAX_CHAIN_BYTES:
        raise CertificateTooLarge(f"x509: a chain of {size} bytes is more than {MAX_CHAIN_BYTES}")
    certificates = []
    for pem in pems:
        try:
            certificates.append(x509.load_pem_x509_certificate(pem.encode("utf-8", "replace")))
        except ValueError as error:
            raise MalformedCertificate(f"x509: malformed certificate: {error}") from None
    return certificates


def _extended_key_usages(certificate: x509.Certificate) -> set[x509.ObjectIdentifier] | None:
    """The certificate's extended key usages; None if it names none (then it is good for any)."""
    try:
        return set(certificate.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value)
    except x509.ExtensionNotFound:
        return None


def _is_ca(certificate: x509.Certificate) -> bool:
    try:
        return bool(certificate.extensions.get_extension_for_class(x509.BasicConstraints).value.ca)
    except x509.ExtensionNotFound:
        return False


def check_validity(certificate: x509.Certificate, *, now: dt.datetime) -> None:
    """``CertificateExpired``/``CertificateNotYetValid`` unless ``now`` is inside its window (Go's words)."""
    if now < certificate.not_valid_before_utc:
        raise CertificateNotYetValid(
            "x509: certificate has expired or is not yet valid: "
            f"current time {_go_time(now)} is before {_go_time(certificate.not_valid_before_utc)}"
        )
    if now > certificate.not_valid_after_utc:
        raise CertificateExpired(
            "x509: certificate has expired or is not yet valid: "
            f"current time {_go_time(now)} is after {_go_time(certificate.not_valid_after_utc)}"
        )


def check_usage(certificate: x509.Certificate) -> None:
    """``IncompatibleUsage`` unless the certificate may authenticate a client (Go's ``KeyUsages`` check)."""
    usages = _extended_key_usages(certificate)
    if _is_ca(certificate) or (
        usages is not None
        and not usages & {ExtendedKeyUsageOID.CLIENT_AUTH, ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE}
    ):
        raise IncompatibleUsage("x509: certificate specifies an incompatible key usage")


def user_of(certificate: x509.Certificate) -> UserInfo | None:
    """Upstream's ``CommonNameUserConversion``: CN the user, each O a group; None without a CN.

    ``extra`` carries the certificate's SHA-256 fingerprint as its credential id, which audit shows.
    """
    names = certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    user = str(names[0].value) if names else ""
    if not user:
        return None
    groups = [str(a.value) for a in certificate.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
    fingerprint = certificate.fingerprint(hashes.SHA256()).hex()
    return UserInfo.create(user, groups=groups, extra={CREDENTIAL_ID: [f"X509SHA256={fingerprint}"]})


def describe(user: UserInfo) -> str:
    """How the trace says who a certificate proved: ``x509 CN=system:node:n1, O=system:nodes``."""
    organizations = "".join(f", O={group}" for group in user.groups)
    return f"x509 CN={user.username}{organizations}"


@dataclass(frozen=True, slots=True)
class _Checked:
    """What never changes about a chain: its client certificate, whether the CA signed it and its key
    usage allows a client (the first such refusal, or None), and the user it names."""

    certificate: x509.Certificate
    #: The refusal's type and message (a new exception is raised each time, never this one again).
    refusal: tuple[type[CertificateRejected], str] | None
    user: UserInfo | None
    #: The validity window in POSIX seconds, shrunk by a second at each end (see ``_verify``).
    surely_valid_from: float
    surely_valid_until: float
    #: ``X509Result.authenticated`` and ``X509Result.how``.
    authenticated: UserInfo | None
    how: str
    #: The certificate's serial number, for the revocation check (read from the DER only once).
    serial: int


class X509Authenticator:
    """One cluster's client-certificate authenticator: its client CA, its clock, its revocation list."""

    def __init__(
        self,
        ca: x509.Certificate,
        *,
        clock: Clock,
        is_revoked: Callable[[int], bool] = lambda serial: False,
    ) -> None:
        self.ca = ca
        self.clock = clock
        self.is_revoked = is_revoked
        #: Chains seen lately, with what never changes about them (the oldest is dropped first).
        self._checked: dict[tuple[str, ...], _Checked] = {}

    def now(self) -> dt.datetime:
        return dt.datetime.fromtimestamp(self.clock.now(), dt.UTC)

    def _check(self, certificate: x509.Certificate) -> _Checked:
        """The checks whose answer depends on the certificate alone (the signature is the costly one)."""
        refusal: tuple[type[CertificateRejected], str] | None = None
        if not issued_by(certificate, self.ca):
            refusal = (UnknownAuthority, "x509: certificate signed by unknown authority")
        else:
            try:
                check_usage(certificate)
            except IncompatibleUsage as error:
                refusal = (IncompatibleUsage, str(error))
        user = user_of(certificate)
        return _Checked(
            certificate,
            refusal,
            user,
            certificate.not_valid_before_utc.timestamp() + 1,
            certificate.not_valid_after_utc.timestamp() - 1,
            None if user is None else user.with_groups(AUTHENTICATED),
            "" if user is None else describe(user),
            certificate.serial_number,
        )

    def _checked_chain(self, chain: Sequence[object]) -> _Checked:
        key = tuple([pem for pem in chain if isinstance(pem, str)])
        known = self._checked.get(key) if len(key) == len(chain) else None
        if known is None:
            certificates = parse_chain(chain)  # refuses garbage and oversized chains
            known = self._check(certificates[0])
            if len(self._checked) >= SIGNATURE_CACHE_SIZE:
                del self._checked[next(iter(self._checked))]
            self._checked[key] = known
        return known

    def _verify(self, checked: _Checked) -> None:
        """Raise the ``CertificateRejected`` that says why this cluster refuses the chain, if it does.

        The order is Go's: the chain to a trusted CA, the validity window, the key usage; revocation
        (Kubelab's own) last, for a certificate that would otherwise be accepted.
        """
        if checked.refusal is not None and checked.refusal[0] is UnknownAuthority:
            raise UnknownAuthority(checked.refusal[1])
        now = self.clock.now()
        # A second inside the window either side is inside it whatever the rounding of ``now`` to
        # a datetime's microseconds; anything else is judged by ``check_validity``, as it always was.
        if not checked.surely_valid_from <= now <= checked.surely_valid_until:
            check_validity(checked.certificate, now=dt.datetime.fromtimestamp(now, dt.UTC))
        if checked.refusal is not None:
            raise checked.refusal[0](checked.refusal[1])
        serial = checked.serial
        if self.is_revoked(serial):
            raise CertificateRevoked(
                f"x509: certificate with serial {format_serial(serial)} has been revoked"
            )

    def authenticate(self, chain: Sequence[object]) -> X509Result | None:
        """The user ``chain`` proves, why it proves nobody, or None if the request has no certificate."""
        if not chain:
            return None
        try:
            checked = self._checked_chain(chain)
        except CertificateRejected as error:
            return X509Result(error=error)
        leaf = checked.certificate
        try:
            self._verify(checked)
        except CertificateRejected as error:
            # Upstream's wording: "verifying certificate SN=..., SKID=..., AKID=... failed: <Go error>".
            wrapped = type(error)(f"verifying certificate {_identifier(leaf)} failed: {error}")
            return X509Result(error=wrapped, certificate=leaf)
        return X509Result(
            user=checked.user, certificate=leaf, authenticated=checked.authenticated, how=checked.how
        )
