"""Certificates: how kubectl knows it talks to the real API server, and how the server knows who asks.

Three kinds of certificate, all X.509, all made here with ``cryptography``:

- A **certificate authority** (CA) is a key pair plus a certificate that says "I may sign
  certificates" (``BasicConstraints: CA=true``, key usage ``keyCertSign``), signed by itself. Trusting
  a CA means: believe every certificate it signed. A kubeconfig carries the CA it trusts as
  ``certificate-authority-data``; kube-apiserver trusts the CA named by ``--client-ca-file``.
- A **serving certificate** is what the API server shows when a TLS connection opens. It names the
  host names and IP addresses the server may be reached under (*subject alternative names*, SANs) and
  is good for ``serverAuth`` only. kubectl checks that a CA it trusts signed it, that it has not
  expired, and that the host in the kubeconfig's ``server:`` URL is one of its SANs; otherwise it
  refuses to talk (and never sends a token). Upstream: ``--tls-cert-file``/``--tls-private-key-file``.
- A **client certificate** proves who the *client* is, if the server asks for one during the
  handshake. kube-apiserver reads the user name from its subject's common name (``CN``) and the groups
  from its organizations (``O``): ``CN=system:node:n1, O=system:nodes`` is the kubelet of node n1.
  It is good for ``clientAuth`` only.

How Kubelab splits them. One API port serves every cluster at ``https://HOST:PORT/clusters/<name>``,
and one TLS listener shows one certificate, so the serving side is lab-wide: a **serving CA** in
``<data dir>/pki/`` signs the API port's serving certificate, and every kubeconfig trusts that CA. The
client side is per cluster, as in a real cluster: each cluster has its own **client CA** (its client
certificates mean nothing to another cluster) and its own **ServiceAccount signing key** (an RSA key
pair, as upstream's ``sa.key``/``sa.pub``, for the ServiceAccount tokens that come later), under
``<data dir>/clusters/<name>/pki/``. Upstream separates the two CAs in the same way (``--tls-cert-file``
versus ``--client-ca-file``); kubeadm just happens to use one CA for both.

Files. Keys are written with mode 0600, certificates 0644, each atomically (a temporary file renamed
over the old one), under an advisory lock so that ``runlab`` and ``manage.py kubeconfig`` can create
them at the same time. A CA, once made, is never replaced behind anyone's back: every kubeconfig
depends on it. The serving certificate is replaced whenever it no longer fits: the hosts changed, it
expires within 30 days, or the serving CA is not the one that signed it.

The certificate builders (``new_ca``, ``serving_certificate``, ``client_certificate``) are functions
of their arguments and the time they are given (apart from fresh serial numbers): tests build
certificates "in 2030" without waiting. File handling is kept thin, around them.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import ipaddress
import logging
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

logger = logging.getLogger(__name__)

#: The wall clock, in UTC. Certificates use real time, never a cluster's (possibly scaled) clock:
#: the other side of a TLS handshake checks them against its own wall clock.
Now = Callable[[], dt.datetime]


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


#: Lifetimes, as kubeadm: CAs ten years, everything they sign one year.
CA_DAYS = 3650
SERVING_DAYS = 365
CLIENT_DAYS = 365
#: A serving certificate that expires sooner than this is replaced on the next start.
RENEW_BEFORE = dt.timedelta(days=30)
#: Certificates are valid from a little before "now", for clients whose clock is slightly behind.
BACKDATE = dt.timedelta(minutes=5)
#: Hosts that every serving certificate names, whatever address the API port listens on.
DEFAULT_SERVING_HOSTS = ("127.0.0.1", "::1", "localhost")
#: Wildcard listen addresses: not something a client can connect to, so never a SAN.
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::"})

#: The keys Kubelab makes: ECDSA P-256, for CAs, certificates and the ServiceAccount key alike, as
#: kubeadm makes them with ``encryptionAlgorithm: ECDSA-P256`` (its default is RSA-2048). They are
#: small, fast to make, and accepted by every Kubernetes client; ServiceAccount tokens are then
#: ES256, and signing one costs a tenth of an RS256 signature, which the kubelet asks for per pod.
#: A CA or an ``sa.key`` brought by an operator (or made by an older Kubelab) may also be RSA.
PrivateKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey

#: The curves a JWS signature may use (ES256, ES384, ES512), by their ``cryptography`` names.
_JWS_CURVES = frozenset({"secp256r1", "secp384r1", "secp521r1"})

SERVING_CA_NAME = "kubelab-serving-ca"
SERVING_CERTIFICATE_NAME = "kube-apiserver"


class PKIError(RuntimeError):
    """A certificate or key on disk that cannot be used (unreadable, or a key that does not match)."""


# -- keys ----------------------------------------------------------------------------------------------


def new_key() -> ec.EllipticCurvePrivateKey:
    """A fresh ECDSA P-256 private key."""
    return ec.generate_private_key(ec.SECP256R1())


def new_service_account_key() -> ec.EllipticCurvePrivateKey:
    """A fresh ``sa.key``: ECDSA P-256, as kubeadm's ``ECDSA-P256`` makes it (tokens are ES256)."""
    return new_key()


def key_pem(key: PrivateKey) -> bytes:
    """``key`` as unencrypted PKCS#8 PEM (``-----BEGIN PRIVATE KEY-----``)."""
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def public_key_pem(key: PrivateKey) -> bytes:
    """The public half of ``key`` as SubjectPublicKeyInfo PEM (``-----BEGIN PUBLIC KEY-----``)."""
    return key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def certificate_pem(certificate: x509.Certificate) -> bytes:
    return certificate.public_bytes(serialization.Encoding.PEM)


def load_key(data: bytes) -> PrivateKey:
    key = serialization.load_pem_private_key(data, password=None)
    if not isinstance(key, (ec.EllipticCurvePrivateKey, rsa.RSAPrivateKey)):
        raise PKIError(f"unsupported key type {type(key).__name__}: use ECDSA or RSA")
    return key


def _same_public_key(key: PrivateKey, certificate: x509.Certificate) -> bool:
    spki = serialization.PublicFormat.SubjectPublicKeyInfo
    der = serialization.Encoding.DER
    return key.public_key().public_bytes(der, spki) == certificate.public_key().public_bytes(der, spki)


# -- building certificates (pure, apart from serial numbers) ----------------------------------------


@dataclass(frozen=True, slots=True)
class CertificateAuthority:
    """A CA: its certificate and the key that signs with it."""

    certificate: x509.Certificate
    key: PrivateKey

    @property
    def certificate_pem(self) -> bytes:
        return certificate_pem(self.certificate)

    @property
    def common_name(self) -> str:
        return _common_name(self.certificate)


def new_ca(
    common_name: str, *, now: dt.datetime, days: int = CA_DAYS, key: PrivateKey | None = None
) -> CertificateAuthority:
    """A self-signed CA that may sign end-entity certificates (not further CAs: path length 0)."""
    key = key or new_key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(ski, critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski), critical=False)
        .sign(key, hashes.SHA256())
    )
    return CertificateAuthority(certificate, key)


def _leaf(
    ca: CertificateAuthority,
    subject: x509.Name,
    public_key: ec.EllipticCurvePublicKey | rsa.RSAPublicKey,
    *,
    usage: x509.ObjectIdentifier,
    now: dt.datetime,
    days: float,
    san: x509.SubjectAlternativeName | None = None,
) -> x509.Certificate:
    """An end-entity certificate signed by ``ca``, good for one extended key usage."""
    not_after = min(now + dt.timedelta(days=days), ca.certificate.not_valid_after_utc)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca.certificate.subject)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                # RSA key exchange (TLS 1.2) encrypts with the certificate's key; ECDSA never does.
                key_encipherment=isinstance(public_key, rsa.RSAPublicKey),
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.key.public_key()), critical=False
        )
    )
    if san is not None:
        builder = builder.add_extension(san, critical=False)
    return builder.sign(ca.key, hashes.SHA256())


def normalize_hosts(hosts: Iterable[str]) -> tuple[str, ...]:
    """The SANs for ``hosts`` plus the defaults: IPs in canonical form, names lower-case, sorted.

    ``[::1]`` is ``::1``; wildcard listen addresses (``0.0.0.0``, ``::``) and empty strings are dropped.
    """
    names: set[str] = set(DEFAULT_SERVING_HOSTS)
    for raw in hosts:
        host = raw.strip().strip("[]").lower().rstrip(".")
        if not host:
            continue
        with contextlib.suppress(ValueError):  # an IP address in its canonical form
            host = str(ipaddress.ip_address(host))
        if host not in WILDCARD_HOSTS:
            names.add(host)
    return tuple(sorted(names))


def _general_name(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def serving_certificate(
    ca: CertificateAuthority,
    public_key: ec.EllipticCurvePublicKey | rsa.RSAPublicKey,
    hosts: Iterable[str],
    *,
    now: dt.datetime,
    days: int = SERVING_DAYS,
) -> x509.Certificate:
    """The API port's certificate: ``serverAuth``, naming ``normalize_hosts(hosts)`` as its SANs."""
    san = x509.SubjectAlternativeName([_general_name(h) for h in normalize_hosts(hosts)])
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, SERVING_CERTIFICATE_NAME)])
    return _leaf(ca, subject, public_key, usage=ExtendedKeyUsageOID.SERVER_AUTH, now=now, days=days, san=san)


def client_certificate(
    ca: CertificateAuthority,
    public_key: ec.EllipticCurvePublicKey | rsa.RSAPublicKey,
    user: str,
    groups: Iterable[str] = (),
    *,
    now: dt.datetime,
    days: float = CLIENT_DAYS,
) -> x509.Certificate:
    """A ``clientAuth`` certificate for ``user``: ``CN=<user>``, one ``O=<group>`` per group (upstream)."""
    if not user:
        raise ValueError("a client certificate needs a user name")
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in dict.fromkeys(groups)]
    subject = x509.Name([*attributes, x509.NameAttribute(NameOID.COMMON_NAME, user)])
    return _leaf(ca, subject, public_key, usage=ExtendedKeyUsageOID.CLIENT_AUTH, now=now, days=days)


# -- reading certificates ----------------------------------------------------------------------------


def _common_name(certificate: x509.Certificate) -> str:
    values = certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return str(values[0].value) if values else ""


def certificate_hosts(certificate: x509.Certificate) -> tuple[str, ...]:
    """The DNS names and IP addresses a certificate names, sorted as ``normalize_hosts`` sorts."""
    try:
        san = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return ()
    hosts = [name.lower() for name in san.get_values_for_type(x509.DNSName)]
    hosts += [str(ip) for ip in san.get_values_for_type(x509.IPAddress)]
    return tuple(sorted(set(hosts)))


def issued_by(certificate: x509.Certificate, ca: x509.Certificate) -> bool:
    """Whether ``ca`` signed ``certificate`` (its issuer name and its signature)."""
    try:
        certificate.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def serving_certificate_problem(
    certificate: x509.Certificate,
    key: PrivateKey,
    ca: x509.Certificate,
    hosts: Iterable[str],
    *,
    now: dt.datetime,
) -> str | None:
    """Why the serving certificate must be replaced, or None if it still fits."""
    if not _same_public_key(key, certificate):
        return "its key does not match it"
    if not issued_by(certificate, ca):
        return "the serving CA did not sign it"
    wanted = normalize_hosts(hosts)
    if certificate_hosts(certificate) != wanted:
        return f"it names {', '.join(certificate_hosts(certificate))}, the API port needs {', '.join(wanted)}"
    if now < certificate.not_valid_before_utc:
        return "it is not valid yet"
    if certificate.not_valid_after_utc - now < RENEW_BEFORE:
        return f"it expires on {certificate.not_valid_after_utc:%Y-%m-%d}"
    return None


# -- files (thin) ---------------------------------------------------------------------------------------


def write_atomic(path: Path, data: bytes, *, mode: int) -> None:
    """Replace ``path`` with ``data``: readers see the old file or the new one, never half of one.

    The file has ``mode`` from the moment it exists (a key is never readable by others, even briefly).
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.fchmod(fd, mode)  # os.open's mode is filtered by the umask
        with os.fdopen(fd, "wb") as f:
            fd = -1
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        tmp.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def locked(directory: Path, name: str = ".lock") -> Iterator[None]:
    """Hold the lock file ``<directory>/<name>`` exclusively (other processes and threads wait)."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(directory / name, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _load_certificate(path: Path, data: bytes) -> x509.Certificate:
    try:
        return x509.load_pem_x509_certificate(data)
    except ValueError as error:
        raise PKIError(f"{path} is not a PEM certificate: {error}") from error


def _load_key(path: Path, data: bytes) -> PrivateKey:
    try:
        return load_key(data)
    except (ValueError, TypeError) as error:
        raise PKIError(f"{path} is not an unencrypted PEM private key: {error}") from error


def load_or_create_ca(
    directory: Path, stem: str, common_name: str, *, now: Now = utc_now
) -> CertificateAuthority:
    """The CA in ``<directory>/<stem>.crt`` and ``.key``, made (and written) if there is no certificate.

    The caller holds ``locked(directory)``. A certificate without its key, or with a key that does not
    match, is an error, never silently replaced: kubeconfigs trust that certificate.
    """
    cert_path, key_path = directory / f"{stem}.crt", directory / f"{stem}.key"
    cert_data, key_data = _read(cert_path), _read(key_path)
    if cert_data is None:
        # No certificate: nobody can trust this CA yet (a key alone is what a crash between the two
        # writes leaves behind), so it is made afresh. The key is written first for that reason.
        ca = new_ca(common_name, now=now())
        write_atomic(key_path, key_pem(ca.key), mode=0o600)
        write_atomic(cert_path, ca.certificate_pem, mode=0o644)
        return ca
    if key_data is None:
        raise PKIError(
            f"{key_path} is missing: restore it, or remove {cert_path} to make a new CA "
            "(every kubeconfig that trusts the old one must then be made again)"
        )
    ca = CertificateAuthority(_load_certificate(cert_path, cert_data), _load_key(key_path, key_data))
    if not _same_public_key(ca.key, ca.certificate):
        raise PKIError(f"{key_path} is not the key of {cert_path}")
    return ca


# -- the lab's serving PKI ---------------------------------------------------------------------------


def serving_directory(data_dir: Path) -> Path:
    """Where the lab-wide serving CA and the API port's certificate live: ``<data dir>/pki``."""
    return data_dir / "pki"


@dataclass(frozen=True, slots=True)
class ServingPKI:
    """The API port's TLS identity: the serving CA and the certificate it signed for the port."""

    directory: Path
    ca: CertificateAuthority
    certificate: x509.Certificate
    key: PrivateKey

    @property
    def ca_path(self) -> Path:
        return self.directory / "serving-ca.crt"

    @property
    def certificate_path(self) -> Path:
        return self.directory / "apiserver.crt"

    @property
    def key_path(self) -> Path:
        return self.directory / "apiserver.key"

    @property
    def hosts(self) -> tuple[str, ...]:
        return certificate_hosts(self.certificate)

    @staticmethod
    def load_or_create_ca(data_dir: Path, *, now: Now = utc_now) -> CertificateAuthority:
        """Only the serving CA (what a kubeconfig needs), made if missing; the certificate is untouched."""
        directory = serving_directory(data_dir)
        with locked(directory):
            return load_or_create_ca(directory, "serving-ca", SERVING_CA_NAME, now=now)

    @classmethod
    def load_or_create(cls, data_dir: Path, hosts: Iterable[str], *, now: Now = utc_now) -> ServingPKI:
        """The serving CA and a serving certificate for ``hosts`` (plus the defaults), made as needed.

        The certificate (and its key) is made anew when it does not exist or no longer fits (see
        ``serving_certificate_problem``); otherwise the one on disk is kept.
        """
        hosts = normalize_hosts(hosts)
        directory = serving_directory(data_dir)
        with locked(directory):
            ca = load_or_create_ca(directory, "serving-ca", SERVING_CA_NAME, now=now)
            pki = cls._load(directory, ca)
            if pki is None:
                reason = "there is none"
            else:
                problem = serving_certificate_problem(
                    pki.certificate, pki.key, ca.certificate, hosts, now=now()
                )
                if problem is None:
                    return pki
                reason = problem
            logger.info("making a new serving certificate for %s: %s", ", ".join(hosts), reason)
            key = new_key()
            certificate = serving_certificate(ca, key.public_key(), hosts, now=now())
            pki = cls(directory, ca, certificate, key)
            write_atomic(pki.key_path, key_pem(key), mode=0o600)
            write_atomic(pki.certificate_path, certificate_pem(certificate), mode=0o644)
            return pki

    @classmethod
    def _load(cls, directory: Path, ca: CertificateAuthority) -> ServingPKI | None:
        """The serving certificate on disk, or None if it is missing or unreadable (it is then replaced)."""
        cert_path, key_path = directory / "apiserver.crt", directory / "apiserver.key"
        cert_data, key_data = _read(cert_path), _read(key_path)
        if cert_data is None or key_data is None:
            return None
        try:
            return cls(directory, ca, _load_certificate(cert_path, cert_data), _load_key(key_path, key_data))
        except PKIError:
            return None


def read_serving_certificate(data_dir: Path) -> x509.Certificate | None:
    """The API port's current certificate, if one was made (read only, nothing is created)."""
    path = serving_directory(data_dir) / "apiserver.crt"
    data = _read(path)
    if data is None:
        return None
    try:
        return _load_certificate(path, data)
    except PKIError:
        return None


# -- a cluster's PKI -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ClusterPKI:
    """One cluster's identities: its client CA and its ServiceAccount signing key."""

    directory: Path
    ca: CertificateAuthority
    service_account_key: PrivateKey
    now: Now = field(default=utc_now, compare=False, repr=False)

    @property
    def ca_path(self) -> Path:
        return self.directory / "ca.crt"

    @property
    def service_account_key_path(self) -> Path:
        return self.directory / "sa.key"

    @property
    def service_account_public_key_path(self) -> Path:
        return self.directory / "sa.pub"

    @property
    def service_account_public_key_pem(self) -> bytes:
        return public_key_pem(self.service_account_key)

    @classmethod
    def load_or_create(cls, cluster_dir: Path, *, now: Now = utc_now) -> ClusterPKI:
        """The PKI in ``<cluster dir>/pki/`` (made if missing): ``ca.crt``/``.key``, ``sa.key``/``.pub``."""
        directory = cluster_dir / "pki"
        with locked(directory):
            ca = load_or_create_ca(directory, "ca", f"kubelab-client-ca:{cluster_dir.name}", now=now)
            key_path = directory / "sa.key"
            data = _read(key_path)
            sa_key: PrivateKey
            if data is None:
                sa_key = new_service_account_key()
                write_atomic(key_path, key_pem(sa_key), mode=0o600)
            else:
                sa_key = _load_key(key_path, data)
                if isinstance(sa_key, ec.EllipticCurvePrivateKey) and sa_key.curve.name not in _JWS_CURVES:
                    raise PKIError(
                        f"{key_path} must be an RSA key or an ECDSA key on P-256, P-384 or P-521 "
                        "(what a ServiceAccount token's signature may use)"
                    )
            pub_path = directory / "sa.pub"
            if _read(pub_path) != public_key_pem(sa_key):
                write_atomic(pub_path, public_key_pem(sa_key), mode=0o644)
            return cls(directory, ca, sa_key, now)

    def issue_client_certificate(
        self,
        user: str,
        groups: Iterable[str] = (),
        *,
        days: float = CLIENT_DAYS,
        now: dt.datetime | None = None,
    ) -> tuple[bytes, bytes]:
        """A new key and client certificate for ``user`` in ``groups``, as PEM: ``(cert_pem, key_pem)``.

        Nothing is written: the caller hands both to the user (in a kubeconfig); the cluster needs
        only its CA (and its revocation list) to judge the certificate later
        (``controlplane.apiserver.filters.x509``). ``now`` is when its validity starts (less
        ``BACKDATE``): the wall clock by default; a component's certificate starts at its cluster's time.
        """
        key = new_key()
        certificate = client_certificate(
            self.ca, key.public_key(), user, groups, now=now or self.now(), days=days
        )
        return certificate_pem(certificate), key_pem(key)
