"""The kubelet's client certificate: TLS bootstrapping, then rotation, through CertificateSigningRequests.

A new node has no identity the API server knows. Its kubelet starts with a **bootstrap token**
(kubelet ``--bootstrap-kubeconfig``; ``controlplane/api/bootstraptoken.py``), which authenticates as
``system:bootstrap:<id>`` and may do little more than ask for a certificate:

1. it makes a private key (ECDSA P-256) and a certificate request for ``O=system:nodes,
   CN=system:node:<node>``, and sends it as a CertificateSigningRequest to the signer
   ``kubernetes.io/kube-apiserver-client-kubelet`` with the usages ``digital signature`` and
   ``client auth``. The CSR's name is a digest of the key, the subject and the usages
   (``node-csr-<hash>``), so a kubelet that restarts halfway asks again under the same name;
2. it **watches** that one CSR (a field selector on ``metadata.name``) until it is decided;
3. the controller manager's approver asks RBAC whether the requester may create
   ``certificatesigningrequests/nodeclient`` (kubeadm binds that for the token's group) and approves
   it; the signing controller issues the certificate into ``status.certificate``;
4. the kubelet keeps the key and the certificate (``kubelet-client-current.pem``, the node's disk) and
   sends every later request with them: it is ``system:node:<node>`` now, which the Node authorizer
   and NodeRestriction judge.

**Rotation.** A certificate does not last. At a random point between 70 % and 90 % of its life
(``next_rotation_deadline``; the jitter keeps the nodes of a cluster made at once from renewing at
once) the kubelet sends a new CSR (``generateName: csr-``) *with its current certificate*: the
requester is the node itself, so the approver checks ``selfnodeclient``. All times are the node's
clock. A kubelet whose certificate expired before it was renewed (a node stopped for long, a clock
moved forward) or is refused (revoked) asks again with its bootstrap token, as upstream's kubelet
falls back to its bootstrap credential when it has no valid certificate.

The rest is the same pure-core-and-thin-adapter split as elsewhere: the deadline, the CSR's name and
body and reading the CSR's outcome are functions; ``CertificateManager`` makes the requests.

Kubelab requests certificates for a day (``expirationSeconds``, as its other components' certificates
live a day of cluster time) where upstream's kubelet leaves the lifetime to the signer
(``--cluster-signing-duration``, a year), so that rotation happens in a lesson, not in a year.

Upstream: k8s.io/client-go ``util/certificate/certificate_manager.go`` (``nextRotationDeadline``,
``jitteryDuration``, ``rotateCerts``), ``util/certificate/csr/csr.go`` (``RequestCertificate``,
``WaitForCertificate``), pkg/kubelet/certificate/bootstrap/bootstrap.go (``digestedName``,
``requestNodeCertificate``) and pkg/kubelet/certificate/kubelet.go (the template and the usages).
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import hashlib
import logging
import os
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from controlplane.api.certificates import (
    APPROVED,
    DENIED,
    FAILED,
    KUBE_APISERVER_CLIENT_KUBELET_SIGNER,
    certificate_of,
    conditions,
    has_true_condition,
)
from controlplane.client.errors import APIError, TransportError, Unauthorized
from controlplane.client.rest import RESTClient
from controlplane.client.watch import EventType
from controlplane.clock import Clock, timeout
from controlplane.tasks import cancel_and_wait

logger = logging.getLogger(__name__)

NODES_GROUP: Final = "system:nodes"
NODE_USER_PREFIX: Final = "system:node:"
#: The kubelet's client usages (pkg/kubelet/certificate/kubelet.go, for an ECDSA key).
USAGES: Final = ("digital signature", "client auth")
#: ``jitteryDuration``: rotate at 70 % of the life, plus up to 20 % more.
ROTATION_START: Final = 0.7
ROTATION_JITTER: Final = 0.2
#: What Kubelab's kubelets ask for (``spec.expirationSeconds``): a day.
LIFETIME_SECONDS: Final = 24 * 3600
#: How long the bootstrap waits for its certificate (bootstrap.go's one hour), node clock.
BOOTSTRAP_TIMEOUT: Final = 3600.0
#: A failed rotation is tried again after 2 s, doubling up to ``RETRY_MAX`` (certificate_manager.go's
#: backoff: 2 s, factor 2, with jitter).
RETRY_START: Final = 2.0
RETRY_MAX: Final = 128.0
#: The name of the file the kubelet keeps its key and certificate in (under /var/lib/kubelet/pki).
CURRENT_FILE: Final = "kubelet-client-current.pem"

ClientFactory = Callable[[], RESTClient]


# -- the pure core -------------------------------------------------------------------------------------


def next_rotation_deadline(not_before: float, not_after: float, jitter: float) -> float:
    """``nextRotationDeadline``: when to renew a certificate valid from ``not_before`` to ``not_after``.

    ``jitter`` in [0, 1) picks the point between 70 % (0) and 90 % (towards 1) of its life
    (``wait.Jitter(total, 0.2) - 0.3 * total``)."""
    total = not_after - not_before
    return not_before + total * (ROTATION_START + ROTATION_JITTER * jitter)


def node_user(node: str) -> str:
    return NODE_USER_PREFIX + node


def subject(node: str) -> x509.Name:
    """The kubelet's subject: ``O=system:nodes, CN=system:node:<node>`` (Go's pkix order)."""
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, NODES_GROUP),
            x509.NameAttribute(NameOID.COMMON_NAME, node_user(node)),
        ]
    )


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def digested_name(public_key: ec.EllipticCurvePublicKey, node: str, usages: Sequence[str] = USAGES) -> str:
    """``digestedName``: ``node-csr-`` and the SHA-512/256 of the key, the subject and the usages, each
    base64url-encoded and ended by ``|`` (a character base64 never writes, so no two inputs collide)."""
    digest = hashlib.new("sha512_256")
    der = public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    for part in (der, node_user(node).encode(), NODES_GROUP.encode(), *(u.encode() for u in usages)):
        digest.update(_b64url(part).encode() + b"|")
    return "node-csr-" + _b64url(digest.digest())


def new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def certificate_request(key: ec.EllipticCurvePrivateKey, node: str) -> bytes:
    """The PEM certificate request for ``node``'s client certificate, signed with ``key``."""
    request = x509.CertificateSigningRequestBuilder().subject_name(subject(node)).sign(key, hashes.SHA256())
    return request.public_bytes(serialization.Encoding.PEM)


def csr_object(
    request_pem: bytes, *, name: str = "", expiration_seconds: int | None = LIFETIME_SECONDS
) -> Any:
    """The CertificateSigningRequest (``csr.RequestCertificate``): named ``name``, else ``generateName:
    csr-``. The API server fills in who asks (``spec.username``, ``groups``, ``uid``)."""
    spec: dict[str, Any] = {
        "request": base64.b64encode(request_pem).decode("ascii"),
        "signerName": KUBE_APISERVER_CLIENT_KUBELET_SIGNER,
        "usages": list(USAGES),
    }
    if expiration_seconds is not None:
        spec["expirationSeconds"] = expiration_seconds
    metadata = {"name": name} if name else {"generateName": "csr-"}
    return {
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": metadata,
        "spec": spec,
    }


class CertificateRequestError(Exception):
    """The CSR will not give a certificate: denied, failed, or deleted (``WaitForCertificate``'s errors)."""


def issued_certificate(csr: Any) -> bytes | None:
    """The certificate a decided CSR carries, None while it is still pending; ``CertificateRequestError``
    if it was denied or failed (``WaitForCertificate``'s check of each event)."""
    for condition_type in (DENIED, FAILED):
        if has_true_condition(csr, condition_type):
            found = next((c for c in conditions(csr) if c.get("type") == condition_type), {})
            word = "denied" if condition_type == DENIED else "failed"
            raise CertificateRequestError(
                f"certificate signing request is {word}, reason: {found.get('reason', '')}, "
                f"message: {found.get('message', '')}"
            )
    if has_true_condition(csr, APPROVED):
        certificate = certificate_of(csr)
        if certificate:
            return certificate
    return None


@dataclass(frozen=True)
class KeyPair:
    """A key and the certificate issued for it (``tls.Certificate``)."""

    cert_pem: bytes
    key_pem: bytes

    @property
    def certificate(self) -> x509.Certificate:
        return x509.load_pem_x509_certificate(self.cert_pem)

    @property
    def not_before(self) -> float:
        return self.certificate.not_valid_before_utc.timestamp()

    @property
    def not_after(self) -> float:
        return self.certificate.not_valid_after_utc.timestamp()

    def to_pem(self) -> bytes:
        """Both in one file, as the kubelet's ``kubelet-client-current.pem``."""
        return self.cert_pem + self.key_pem

    @classmethod
    def from_pem(cls, data: bytes) -> KeyPair:
        """``ValueError`` if ``data`` is not a certificate followed by a private key."""
        start = data.find(b"-----BEGIN", data.find(b"-----END CERTIFICATE-----"))
        if start < 0:
            raise ValueError("no private key after the certificate")
        pair = cls(data[:start], data[start:])
        x509.load_pem_x509_certificate(pair.cert_pem)
        serialization.load_pem_private_key(pair.key_pem, password=None)
        return pair


def for_node(pair: KeyPair, node: str) -> bool:
    """Whether ``pair`` is a client certificate of ``node`` (a file left by another node is not)."""
    names = pair.certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return bool(names) and names[0].value == node_user(node)


# -- the node's disk ----------------------------------------------------------------------------------


class NodeCertificateStore:
    """The kubelet's certificate directory (``/var/lib/kubelet/pki``): its current key and certificate,
    kept across the kubelet's restarts, in a file (mode 0600) or, with no ``directory``, in memory."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory
        self._memory: bytes | None = None

    @property
    def path(self) -> Path | None:
        return None if self.directory is None else self.directory / CURRENT_FILE

    def load(self) -> KeyPair | None:
        """The kept pair, or None (no file, or one that cannot be read)."""
        data = self._memory
        if self.path is not None:
            try:
                data = self.path.read_bytes()
            except FileNotFoundError:
                return None
        if not data:
            return None
        try:
            return KeyPair.from_pem(data)
        except ValueError:
            logger.warning("the kubelet certificate file %s cannot be read: bootstrapping again", self.path)
            return None

    def save(self, pair: KeyPair) -> None:
        if self.path is None:
            self._memory = pair.to_pem()
            return
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        temporary = self.path.with_suffix(".tmp")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "wb") as file:
            file.write(pair.to_pem())
        temporary.replace(self.path)

    def forget(self) -> None:
        """Delete the kept pair (``rm /var/lib/kubelet/pki/kubelet-client-*``): the next start bootstraps."""
        self._memory = None
        if self.path is not None:
            self.path.unlink(missing_ok=True)


# -- the manager --------------------------------------------------------------------------------------


class CertificateManager:
    """The client certificate of the kubelet of ``node`` (client-go's certificate ``manager``).

    ``bootstrap`` makes a client with the bootstrap token, ``client`` one that presents the current
    certificate (``current_pem``, the ``cert_source`` of its config). ``clock`` is the node's clock.
    """

    def __init__(
        self,
        node: str,
        *,
        clock: Clock,
        bootstrap: ClientFactory,
        client: ClientFactory,
        store: NodeCertificateStore | None = None,
        rng: random.Random | None = None,
        expiration_seconds: int | None = LIFETIME_SECONDS,
    ) -> None:
        self.node = node
        self.clock = clock
        self._bootstrap = bootstrap
        self._client = client
        self.store = store if store is not None else NodeCertificateStore()
        self.rng = rng if rng is not None else random.Random()
        self.expiration_seconds = expiration_seconds
        self._pair: KeyPair | None = None
        self._loaded = False
        self._deadline = float("inf")
        self._task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        #: The names of the CSRs this manager sent, oldest first (tests and the docs read them).
        self.requests: list[str] = []
        #: A new certificate arrived (tests wait on it).
        self.rotated = asyncio.Event()

    # What the fault ``revoke-component-certificate`` and the tests read, as of a ComponentCertificate.

    @property
    def user(self) -> str:
        return node_user(self.node)

    @property
    def groups(self) -> tuple[str, ...]:
        return (NODES_GROUP,)

    @property
    def certificate(self) -> x509.Certificate:
        if self._pair is None:
            raise RuntimeError(f"the kubelet of {self.node} has no client certificate yet")
        return self._pair.certificate

    @property
    def serial(self) -> int:
        return self.certificate.serial_number

    @property
    def deadline(self) -> float:
        """When the current certificate is to be renewed (node clock); infinity without one."""
        return self._deadline

    def current_pem(self) -> bytes:
        """The certificate to present now (``TLS.GetCert``); b"" before the first one."""
        return self._pair.cert_pem if self._pair is not None else b""

    def _valid(self, pair: KeyPair | None) -> bool:
        """Whether ``pair`` is this node's and not expired by the node's clock (upstream's
        ``isClientConfigStillValid`` looks at ``NotAfter`` only: a clock set back does not void it)."""
        return pair is not None and self.clock.now() < pair.not_after and for_node(pair, self.node)

    def _use(self, pair: KeyPair) -> None:
        self._pair = pair
        self._deadline = next_rotation_deadline(pair.not_before, pair.not_after, self.rng.random())
        self.rotated.set()
        self.rotated = asyncio.Event()

    # -- lifecycle --------------------------------------------------------------------------------------

    async def ensure_certificate(self) -> None:
        """Load the kept certificate; without a valid one, bootstrap: wait for the first certificate
        (``bootstrap.LoadClientCert``). Callers at the same time share one bootstrap."""
        async with self._lock:
            if not self._loaded:
                kept = await asyncio.to_thread(self.store.load)
                self._loaded = True
                if kept is not None and for_node(kept, self.node):
                    self._use(kept)
            if not self._valid(self._pair):
                await self.request(bootstrap=True)

    async def start(self) -> None:
        """``ensure_certificate``, then rotate in the background until ``stop``."""
        await self.ensure_certificate()
        if self._task is None:
            self._task = asyncio.create_task(self._rotation_loop(), name=f"kubelet {self.node} certificates")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            await cancel_and_wait(task)

    async def _rotation_loop(self) -> None:
        retry = RETRY_START
        while True:
            wait = self._deadline - self.clock.now()
            if wait > 0:
                await self.clock.sleep(wait)
                continue  # the deadline may have moved meanwhile (a new certificate)
            try:
                await self.request(bootstrap=not self._valid(self._pair))
            except (APIError, TransportError, CertificateRequestError, TimeoutError) as error:
                logger.warning("kubelet %s: rotating its client certificate failed: %s", self.node, error)
                await self.clock.sleep(retry * (1 + 0.1 * self.rng.random()))
                retry = min(retry * 2, RETRY_MAX)
            else:
                retry = RETRY_START

    # -- requesting ------------------------------------------------------------------------------------

    async def request(self, *, bootstrap: bool) -> KeyPair:
        """Ask for a new certificate and wait for it, with the bootstrap token (a ``node-csr-<hash>``,
        as ``requestNodeCertificate``) or with the current certificate (``generateName: csr-``, as
        ``rotateCerts``), falling back to the token if the API server refuses the certificate."""
        key = new_key()
        request = certificate_request(key, self.node)
        if not bootstrap:
            try:
                return await self._request_with(self._client, key, request, name="")
            except Unauthorized:
                logger.info(
                    "kubelet %s: its certificate is refused, asking with the bootstrap token", self.node
                )
        name = digested_name(key.public_key(), self.node)
        return await self._request_with(self._bootstrap, key, request, name=name)

    async def _request_with(
        self, factory: ClientFactory, key: ec.EllipticCurvePrivateKey, request: bytes, *, name: str
    ) -> KeyPair:
        client = factory()
        try:
            csrs = client.resource("certificates.k8s.io", "v1", "certificatesigningrequests")
            created = await csrs.create(
                csr_object(request, name=name, expiration_seconds=self.expiration_seconds)
            )
            meta = created.get("metadata") or {}
            self.requests.append(str(meta.get("name", "")))
            async with timeout(self.clock, BOOTSTRAP_TIMEOUT):
                cert_pem = await self._wait_for_certificate(client, created)
        finally:
            await client.aclose()
        key_pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        pair = KeyPair(cert_pem, key_pem)
        await asyncio.to_thread(self.store.save, pair)
        self._use(pair)
        logger.info(
            "kubelet %s: new client certificate from %s, valid until %s",
            self.node,
            meta.get("name"),
            dt.datetime.fromtimestamp(pair.not_after, dt.UTC).isoformat(),
        )
        return pair

    async def _wait_for_certificate(self, client: RESTClient, created: Any) -> bytes:
        """``WaitForCertificate``: watch the one CSR (``metadata.name``) until it is issued."""
        meta = created.get("metadata") or {}
        name, uid = str(meta.get("name", "")), meta.get("uid")
        version = str(meta.get("resourceVersion") or "")
        csrs = client.resource("certificates.k8s.io", "v1", "certificatesigningrequests")
        while True:
            async with csrs.watch(resource_version=version, field_selector=f"metadata.name={name}") as events:
                async for event in events:
                    version = event.resource_version or version
                    if event.type is EventType.BOOKMARK:
                        continue
                    if (event.object.get("metadata") or {}).get("uid") != uid:
                        continue  # another CSR of that name (deleted and made again)
                    if event.type is EventType.DELETED:
                        raise CertificateRequestError(f"csr {name!r} was deleted")
                    issued = issued_certificate(event.object)
                    if issued is not None:
                        return issued
            # The server ended the watch (its timeout): watch again from where it stopped.


__all__ = [
    "BOOTSTRAP_TIMEOUT",
    "LIFETIME_SECONDS",
    "USAGES",
    "CertificateManager",
    "CertificateRequestError",
    "KeyPair",
    "NodeCertificateStore",
    "certificate_request",
    "csr_object",
    "digested_name",
    "issued_certificate",
    "new_key",
    "next_rotation_deadline",
    "subject",
]
