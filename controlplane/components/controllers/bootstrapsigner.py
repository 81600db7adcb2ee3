"""The bootstrap signer: ``cluster-info`` signed with every bootstrap token, so a joining node can trust it.

A machine that runs ``kubeadm join --token abcdef.0123456789abcdef --discovery-token-ca-cert-hash ...``
has no way yet to know the API server it talks to is the right one. It reads
``kube-public/cluster-info`` anonymously, over a connection it cannot verify: a kubeconfig with the
cluster's CA and server (``apiserver/kubeadmconfig.py``). It believes that kubeconfig only if the
ConfigMap also holds ``jws-kubeconfig-abcdef``, a signature of it that only someone knowing the token's
secret could have made; it then trusts the CA in it (and checks the CA's hash it was given), and TLS
bootstrapping proceeds over verified connections (``docs/certificates.md``).

This controller of kube-controller-manager makes those signatures. For ``cluster-info`` and for every
change to a bootstrap token Secret in ``kube-system``, it (upstream's ``signConfigMap``):

1. reads ``cluster-info`` from its cache; nothing to do without it or without its ``kubeconfig`` key;
2. takes the tokens allowed to sign (``validateSecretForSigning``): a Secret named
   ``bootstrap-token-<id>`` with ``<id>`` six of ``[a-z0-9]``, whose ``token-id`` is that id, with a
   ``token-secret``, not expired, and ``usage-bootstrap-signing: "true"``;
3. computes for each a **detached JWS** of the kubeconfig (``jws.ComputeDetachedSignature``, RFC 7515
   appendix F): the protected header ``{"alg":"HS256","kid":"<id>"}`` and the kubeconfig, each
   base64url-encoded without padding, joined by a dot, are signed with HMAC-SHA256 keyed with the
   token's secret (16 bytes: shorter than RFC 7518 wants for HS256, as kubeadm has always made them);
   the signature is the header, two dots and the MAC, base64url: ``eyJhbGciOi...In0..<mac>``;
4. replaces every ``jws-kubeconfig-*`` key with those, and updates the ConfigMap only if a signature
   is new, changed or gone. A Conflict or NotFound is ignored: the next change brings it back here.

Anyone holding the token can check a signature; try it with the token the lab's kubelets joined with::

    kubectl -n kube-public get cm cluster-info -o jsonpath='{.data.kubeconfig}' > kubeconfig
    kubectl -n kube-system get secrets --field-selector type=bootstrap.kubernetes.io/token
    b64url() { base64 -w0 | tr '+/' '-_' | tr -d =; }
    header=$(printf '{"alg":"HS256","kid":"%s"}' <token-id> | b64url)
    printf %s.%s "$header" "$(b64url < kubeconfig)" > signed
    mac=$(openssl dgst -sha256 -hmac <token-secret> -binary < signed | b64url)
    echo "$header..$mac"       # the ConfigMap's jws-kubeconfig-<token-id>

Deviation: Kubelab runs no token cleaner (``docs/certificates.md``), which upstream deletes expired
token Secrets with, and so removes their signatures. So that an expired token's signature goes when
the token expires all the same, the signer looks again when the first token it signed with expires.

Upstream: ``pkg/controller/bootstrap/bootstrapsigner.go`` (``Signer``), ``util.go``
(``validateSecretForSigning``); ``k8s.io/cluster-bootstrap/token/jws/jws.go``; the controller's name
``bootstrap-signer-controller`` and its ServiceAccount ``bootstrap-signer``
(``cmd/kube-controller-manager/app/bootstrap.go``).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import logging
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

from controlplane.api import bootstraptoken
from controlplane.api.deepcopy import deep_copy
from controlplane.client.cache import NAMESPACE_INDEX, Indexer
from controlplane.client.errors import Conflict, NotFound
from controlplane.client.manager import Kind, Manager
from controlplane.client.reconciler import Controller, Request, Result
from controlplane.client.rest import RESTClient
from controlplane.clock import Clock
from controlplane.components.controllers.kinds import CONFIGMAPS

logger = logging.getLogger(__name__)

SECRETS: Final = Kind("", "v1", "secrets", "Secret")
#: ``DefaultSignerOptions``: the ConfigMap signed, and where the token Secrets are.
CONFIGMAP_NAMESPACE: Final = "kube-public"
CONFIGMAP_NAME: Final = "cluster-info"
TOKEN_SECRET_NAMESPACE: Final = bootstraptoken.NAMESPACE
#: ``bootstrapapi.KubeConfigKey`` and ``JWSSignatureKeyPrefix``.
KUBECONFIG_KEY: Final = "kubeconfig"
JWS_SIGNATURE_KEY_PREFIX: Final = "jws-kubeconfig-"
#: The workqueue's name (upstream's).
QUEUE_NAME: Final = "bootstrap_signer_queue"
CLUSTER_INFO: Final = Request(CONFIGMAP_NAMESPACE, CONFIGMAP_NAME)
#: ``bootstrapsecretutil.ParseName``: ``bootstrap-token-`` and the six-character id.
_SECRET_NAME = re.compile(r"\A" + re.escape(bootstraptoken.SECRET_PREFIX) + r"([a-z0-9]{6})\Z")


# -- JWS (pure) ----------------------------------------------------------------------------------


def _base64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def compute_detached_signature(content: str, token_id: str, token_secret: str) -> str:
    """``jws.ComputeDetachedSignature``: a compact HS256 JWS of ``content`` keyed with ``token_secret``,
    ``kid`` the token's id, with its payload part left out (``<header>..<signature>``)."""
    # go-jose's protected header: Go's encoding/json of a map, so the keys sorted, no spaces.
    header = _base64url(json.dumps({"alg": "HS256", "kid": token_id}, separators=(",", ":")).encode())
    signing_input = f"{header}.{_base64url(content.encode())}".encode("ascii")
    mac = hmac.new(token_secret.encode(), signing_input, hashlib.sha256).digest()
    return f"{header}..{_base64url(mac)}"


def detached_token_is_valid(detached_token: str, content: str, token_id: str, token_secret: str) -> bool:
    """``jws.DetachedTokenIsValid``: whether ``detached_token`` is the signature of ``content``."""
    expected = compute_detached_signature(content, token_id, token_secret)
    return hmac.compare_digest(detached_token.encode(), expected.encode())


# -- the signer's decisions (pure) ---------------------------------------------------------------


def parse_secret_name(name: str) -> str | None:
    """``ParseName``: the token id a bootstrap token Secret's name carries, or None."""
    match = _SECRET_NAME.match(name)
    return None if match is None else match.group(1)


def token_for_signing(secret: Mapping[str, Any], now: float) -> tuple[str, str] | None:
    """``validateSecretForSigning``: the Secret's ``(token-id, token-secret)`` if it may sign at ``now``."""
    name_id = parse_secret_name(str((secret.get("metadata") or {}).get("name") or ""))
    if name_id is None:
        return None
    token_id = bootstraptoken.get_data(secret, bootstraptoken.TOKEN_ID_KEY)
    if not token_id or token_id != name_id:
        return None
    token_secret = bootstraptoken.get_data(secret, bootstraptoken.TOKEN_SECRET_KEY)
    if not token_secret:
        return None
    if bootstraptoken.expiration_problem(secret, now) is not None:
        return None
    if bootstraptoken.get_data(secret, bootstraptoken.USAGE_SIGNING) != "true":
        return None
    return token_id, token_secret


def signing_tokens(secrets: Iterable[Mapping[str, Any]], now: float) -> dict[str, str]:
    """``getTokens``: token id to secret, of the bootstrap token Secrets that may sign (the first of
    a duplicated id kept)."""
    tokens: dict[str, str] = {}
    for secret in secrets:
        if secret.get("type") != bootstraptoken.SECRET_TYPE:
            continue
        found = token_for_signing(secret, now)
        if found is not None and found[0] not in tokens:
            tokens[found[0]] = found[1]
    return tokens


def signed_data(data: Mapping[str, str], tokens: Mapping[str, str]) -> dict[str, str] | None:
    """The ConfigMap's ``data`` with one signature per token instead of the ones it has, or None if
    nothing would change (no ``kubeconfig``, or the same signatures)."""
    content = data.get(KUBECONFIG_KEY)
    if content is None:
        return None
    new = {key: value for key, value in data.items() if not key.startswith(JWS_SIGNATURE_KEY_PREFIX)}
    old = {key: value for key, value in data.items() if key.startswith(JWS_SIGNATURE_KEY_PREFIX)}
    for token_id, token_secret in tokens.items():
        new[JWS_SIGNATURE_KEY_PREFIX + token_id] = compute_detached_signature(content, token_id, token_secret)
    signatures = {key: value for key, value in new.items() if key.startswith(JWS_SIGNATURE_KEY_PREFIX)}
    return None if signatures == old else new


# -- the controller ------------------------------------------------------------------------------


def cluster_info_request(obj: Mapping[str, Any]) -> list[Request]:
    """A change to ``kube-public/cluster-info`` (only that ConfigMap: upstream's FilterFunc)."""
    meta = obj.get("metadata") or {}
    if meta.get("name") == CONFIGMAP_NAME and meta.get("namespace") == CONFIGMAP_NAMESPACE:
        return [CLUSTER_INFO]
    return []


def token_request(obj: Mapping[str, Any]) -> list[Request]:
    """A change to a bootstrap token Secret in ``kube-system``: look at ``cluster-info`` again."""
    meta = obj.get("metadata") or {}
    if obj.get("type") == bootstraptoken.SECRET_TYPE and meta.get("namespace") == TOKEN_SECRET_NAMESPACE:
        return [CLUSTER_INFO]
    return []


class BootstrapSigner:
    """The reconciler: ``cluster-info``'s signatures, one per token that may sign."""

    def __init__(self, client: RESTClient, *, configmaps: Indexer, secrets: Indexer, clock: Clock) -> None:
        self.client = client
        self.configmaps = configmaps
        self.secrets = secrets
        self.clock = clock

    async def reconcile(self, request: Request) -> Result:
        configmap = self.configmaps.get_by_key(CLUSTER_INFO.key)
        if configmap is None:
            return Result()
        now = self.clock.now()
        secrets = self.secrets.by_index(NAMESPACE_INDEX, TOKEN_SECRET_NAMESPACE)
        tokens = signing_tokens(secrets, now)
        data = signed_data(configmap.get("data") or {}, tokens)
        if data is not None:
            updated: dict[str, Any] = deep_copy(dict(configmap))
            updated["data"] = data
            # A Conflict or NotFound: a newer cluster-info (or none) is on its way to the cache, and its
            # event brings the signer back.
            with contextlib.suppress(Conflict, NotFound):
                await self.client.resource("", "v1", "configmaps", CONFIGMAP_NAMESPACE).update(updated)
        return self._expiry_look(secrets, tokens, now)

    @staticmethod
    def _expiry_look(secrets: Iterable[Mapping[str, Any]], tokens: Mapping[str, str], now: float) -> Result:
        """Look again when the first token signing now expires (see the deviation in the docstring)."""
        expiries = [
            expires
            for secret in secrets
            if bootstraptoken.get_data(secret, bootstraptoken.TOKEN_ID_KEY) in tokens
            and (expires := bootstraptoken.expires_at(secret)) is not None
        ]
        if not expiries:
            return Result()
        return Result(requeue_after=max(1.0, min(expiries) - now + 1.0))


def add_to_manager(manager: Manager) -> Controller:
    """Add the bootstrap signer to ``manager``: for ``cluster-info``, woken by the token Secrets too."""
    signer = BootstrapSigner(
        manager.client,
        configmaps=manager.cache(CONFIGMAPS),
        secrets=manager.cache(SECRETS),
        clock=manager.clock,
    )
    controller = Controller(
        QUEUE_NAME,
        signer,
        clock=manager.clock,
        trace=manager.trace,
        trace_fields={"from": manager.name},
    )
    controller.watch(manager.informer_for(CONFIGMAPS), cluster_info_request)
    controller.watch(manager.informer_for(SECRETS), token_request)
    manager.controllers.append(controller)
    return controller


__all__ = [
    "CONFIGMAP_NAME",
    "CONFIGMAP_NAMESPACE",
    "JWS_SIGNATURE_KEY_PREFIX",
    "BootstrapSigner",
    "add_to_manager",
    "cluster_info_request",
    "compute_detached_signature",
    "detached_token_is_valid",
    "parse_secret_name",
    "signed_data",
    "signing_tokens",
    "token_for_signing",
    "token_request",
]
