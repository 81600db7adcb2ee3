"""The API port: HTTPS that asks every client for a certificate and hands it to the API server.

kube-apiserver's TLS listener asks each client for a certificate during the handshake (a TLS
``CertificateRequest``), checks the one it gets against ``--client-ca-file``, and hands the verified
chain to the x509 authenticator with the request (Go's ``http.Request.TLS.PeerCertificates``).

daphne's own TLS listener (Twisted's ``ssl:`` endpoint) asks for no certificate, and daphne puts no
peer certificate in the ASGI scope. So ``runlab`` opens the API port itself, with two additions:

1. ``ClientCertificateOptions``: Twisted's TLS options, plus *ask* for a client certificate
   (``VERIFY_PEER``) without *requiring* one (kubectl with a bearer token has none), and accept
   whatever certificate comes. The TLS layer cannot judge it: the port serves every cluster
   (``/clusters/<name>``) and each cluster has its own client CA, and the handshake is over before
   the request says which cluster it is for. The handshake still proves that the client holds the
   private key of the certificate it sent, which is all TLS has to do here.
2. ``KubelabServer``: daphne's ``Server``, which puts the connection's client certificate chain into
   each request's ASGI scope, as the ASGI TLS extension specifies
   (https://asgi.readthedocs.io/en/latest/specs/tls.html): ``scope["extensions"]["tls"]
   ["client_cert_chain"]``, PEM strings, the client's own certificate first. The cluster's API server
   judges it there (``controlplane.apiserver.filters.x509``).

Importing this module installs Twisted's asyncio reactor (daphne's server module does, on import), so
only ``runlab`` imports it, as it starts serving.

The web port is plain HTTP: its requests carry no TLS extension, and nothing a client sends (no
header) can put one there, so a certificate cannot be claimed without the handshake.
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from daphne.server import Server
from OpenSSL import SSL, crypto
from twisted.internet import ssl
from twisted.internet.interfaces import ISSLTransport

logger = logging.getLogger(__name__)


def _accept_any(connection: SSL.Connection, certificate: Any, error: int, depth: int, ok: int) -> bool:
    """OpenSSL's verify callback: every certificate passes here; the cluster's API server judges it."""
    return True


class ClientCertificateOptions(ssl.CertificateOptions):
    """Twisted's TLS server options that also ask for an optional client certificate, of any CA."""

    def getContext(self) -> SSL.Context:
        fresh = self._context is None
        context = super().getContext()
        if fresh:
            # VERIFY_PEER on a server: send a CertificateRequest. Without VERIFY_FAIL_IF_NO_PEER_CERT a
            # client without a certificate may go on (with a bearer token, or to /version).
            context.set_verify(SSL.VERIFY_PEER, _accept_any)
        return context

    @classmethod
    def from_files(cls, certificate: Path, key: Path) -> ClientCertificateOptions:
        """Options serving ``certificate`` (PEM, then any intermediates) with ``key`` (PEM)."""
        chain = x509.load_pem_x509_certificates(certificate.read_bytes())
        private_key = serialization.load_pem_private_key(key.read_bytes(), password=None)
        if not isinstance(private_key, (ec.EllipticCurvePrivateKey, rsa.RSAPrivateKey)):
            raise ValueError(f"{key}: use an ECDSA or RSA key")
        return cls(
            privateKey=crypto.PKey.from_cryptography_key(private_key),
            certificate=crypto.X509.from_cryptography(chain[0]),
            extraCertChain=[crypto.X509.from_cryptography(c) for c in chain[1:]],
        )


#: Where a connection keeps its TLS extension once computed (its certificates do not change).
_CACHED = "_kubelab_tls_extension"


def tls_extension(transport: Any) -> dict[str, Any] | None:
    """The ASGI TLS extension of a connection, or None if it is not TLS.

    Computed once per connection: a client keeps its connection open for many requests, and encoding
    its certificates as PEM for every one of them would cost more than serving a small GET.
    """
    if transport is None:
        return None
    cached = getattr(transport, _CACHED, None)
    if cached is not None:
        return dict(cached)
    extension = _tls_extension(transport)
    if extension is not None:
        with contextlib.suppress(AttributeError):  # a transport with __slots__: computed each time
            setattr(transport, _CACHED, extension)
        return dict(extension)
    return None


def _tls_extension(transport: Any) -> dict[str, Any] | None:
    if not ISSLTransport.providedBy(transport):
        return None
    connection = transport.getHandle()
    if not isinstance(connection, SSL.Connection):
        return None
    leaf = connection.get_peer_certificate(as_cryptography=True)
    chain = []
    name = None
    if leaf is not None:
        # On a server, OpenSSL's peer chain leaves out the peer's own certificate (SSL_get_peer_cert_chain).
        rest = connection.get_peer_cert_chain(as_cryptography=True) or []
        chain = [leaf, *(c for c in rest if c != leaf)]
        name = leaf.subject.rfc4514_string()
    return {
        "server_cert": None,
        "client_cert_chain": [c.public_bytes(serialization.Encoding.PEM).decode("ascii") for c in chain],
        "client_cert_name": name,
        "client_cert_error": None,  # nothing is verified at the TLS layer: the API server does it
        "tls_version": connection.get_protocol_version(),
        "cipher_suite": None,
    }


class KubelabServer(Server):  # type: ignore[misc]
    """daphne's server, with each request's TLS client certificate in its ASGI scope."""

    def create_application(self, protocol: Any, scope: dict[str, Any]) -> Any:
        transport = getattr(protocol, "transport", None)
        if transport is None:
            transport = getattr(getattr(protocol, "channel", None), "transport", None)
        extension = tls_extension(transport)
        if extension is not None:
            scope = {**scope, "extensions": {**(scope.get("extensions") or {}), "tls": extension}}
        return super().create_application(protocol, scope)

    def listen_tls(self, *, host: str, port: int, certificate: Path, key: Path) -> None:
        """Listen on ``host:port`` with HTTPS that asks for client certificates (call once ``run`` made
        ``http_factory``, from ``ready_callable``); a failure is daphne's listen error."""
        from twisted.internet import reactor

        try:
            options = ClientCertificateOptions.from_files(certificate, key)
            listening = reactor.listenSSL(port, self.http_factory, options, interface=host)
        except Exception as error:  # what daphne's listen_error does for its own endpoints
            logger.critical("Listen failure: %s", error)
            self.stop()
        else:
            self.listen_success(listening)
