"""Bootstrap tokens: a short-lived, shared bearer token with which a new node introduces itself.

A machine joining a cluster has no identity yet: nobody has issued it a certificate. kubeadm gives it
a **bootstrap token** instead (``kubeadm join --token abcdef.0123456789abcdef``): two parts, a public
``token-id`` of six characters and a ``token-secret`` of sixteen, both ``[a-z0-9]``. The token lives in
the cluster as a Secret the API server reads when it authenticates:

- named ``bootstrap-token-<token-id>`` in ``kube-system``, of type ``bootstrap.kubernetes.io/token``;
- ``data``: ``token-id``, ``token-secret``, an ``expiration`` (RFC 3339; kubeadm's default is a day
  after it was made), the usages (``usage-bootstrap-authentication: "true"`` lets it authenticate,
  ``usage-bootstrap-signing`` lets it sign the ``cluster-info`` ConfigMap) and ``auth-extra-groups``
  (kubeadm's ``system:bootstrappers:kubeadm:default-node-token``).

The API server's bootstrap token authenticator accepts ``Authorization: Bearer <id>.<secret>`` as the
user ``system:bootstrap:<id>`` in the group ``system:bootstrappers`` (and the extra groups), if the
Secret exists, is not being deleted, has that type, the same secret and id, has not expired and is
marked for authentication. Anything else and the token is simply not accepted: the request gets
the bare 401. What a bootstrapper may do is RBAC's business: kubeadm lets it create a
CertificateSigningRequest for the node's own client certificate, and nothing much else.

This module is the pure part (the token's form, the Secret's fields, the checks), shared by the API
server's authenticator (``apiserver/filters/bootstraptoken.py``) and by whoever makes tokens.

Upstream: k8s.io/cluster-bootstrap ``token/api/types.go`` (names), ``token/util/helpers.go``
(``ParseToken``), ``secret/util.go`` (``HasExpired``, ``GetGroups``) and
plugin/pkg/auth/authenticator/token/bootstrap/bootstrap.go (``AuthenticateToken``).
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import hmac
import random
import re
import secrets
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from controlplane.api.meta import format_time

#: ``BootstrapTokenSecretPrefix`` and the namespace every bootstrap token Secret lives in.
SECRET_PREFIX: Final = "bootstrap-token-"
NAMESPACE: Final = "kube-system"
#: ``SecretTypeBootstrapToken``.
SECRET_TYPE: Final = "bootstrap.kubernetes.io/token"
#: The keys of the Secret's ``data``.
DESCRIPTION_KEY: Final = "description"
TOKEN_ID_KEY: Final = "token-id"
TOKEN_SECRET_KEY: Final = "token-secret"
EXPIRATION_KEY: Final = "expiration"
USAGE_AUTHENTICATION: Final = "usage-bootstrap-authentication"
USAGE_SIGNING: Final = "usage-bootstrap-signing"
EXTRA_GROUPS_KEY: Final = "auth-extra-groups"
#: ``BootstrapUserPrefix``, ``BootstrapDefaultGroup``.
USER_PREFIX: Final = "system:bootstrap:"
DEFAULT_GROUP: Final = "system:bootstrappers"
#: kubeadm's group for the tokens it makes for joining nodes (``NodeBootstrapTokenAuthGroup``).
KUBEADM_NODE_GROUP: Final = "system:bootstrappers:kubeadm:default-node-token"
#: kubeadm's default token TTL (``DefaultTokenDuration``).
KUBEADM_TTL: Final = dt.timedelta(hours=24)

#: ``BootstrapTokenPattern``, ``BootstrapGroupPattern``.
TOKEN_PATTERN: Final = r"^([a-z0-9]{6})\.([a-z0-9]{16})$"
GROUP_PATTERN: Final = r"\Asystem:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]\Z"
_TOKEN = re.compile(TOKEN_PATTERN)
_GROUP = re.compile(GROUP_PATTERN)
_ALPHABET: Final = string.ascii_lowercase + string.digits


@dataclass(frozen=True, slots=True)
class BootstrapToken:
    """A token's two halves: ``<id>.<secret>``."""

    id: str
    secret: str

    def __str__(self) -> str:
        return f"{self.id}.{self.secret}"

    @property
    def secret_name(self) -> str:
        return SECRET_PREFIX + self.id


class InvalidBootstrapToken(Exception):
    """A token's Secret does not let it authenticate; the message says why (upstream's log line)."""


def parse_token(token: str) -> BootstrapToken | None:
    """``ParseToken``: the two halves of ``token``, or None if it is not of that form (not ours)."""
    match = _TOKEN.match(token)
    return None if match is None else BootstrapToken(match.group(1), match.group(2))


def generate_token(rng: random.Random | None = None) -> BootstrapToken:
    """``GenerateBootstrapToken``: a new random token (``rng`` only for reproducible tests)."""
    pick = rng.choice if rng is not None else secrets.choice
    return BootstrapToken(
        "".join(pick(_ALPHABET) for _ in range(6)), "".join(pick(_ALPHABET) for _ in range(16))
    )


def _encode(value: str) -> str:
    return base64.b64encode(value.encode()).decode("ascii")


def token_secret(
    token: BootstrapToken,
    *,
    expiration: float | None,
    groups: Sequence[str] = (KUBEADM_NODE_GROUP,),
    usages: Sequence[str] = ("authentication", "signing"),
    description: str = "",
) -> dict[str, Any]:
    """The Secret of ``token`` as kubeadm writes it (``BootstrapToken.ToSecret`` in kubeadm's
    ``apis/bootstraptoken/v1/utils.go``): ``expiration`` a cluster-clock timestamp (None: never)."""
    data = {TOKEN_ID_KEY: token.id, TOKEN_SECRET_KEY: token.secret}
    if description:
        data[DESCRIPTION_KEY] = description
    if expiration is not None:
        data[EXPIRATION_KEY] = format_time(expiration)
    for usage in usages:
        data[f"usage-bootstrap-{usage}"] = "true"
    if groups:
        data[EXTRA_GROUPS_KEY] = ",".join(groups)
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": token.secret_name, "namespace": NAMESPACE},
        "type": SECRET_TYPE,
        "data": {key: _encode(value) for key, value in data.items()},
    }


def get_data(secret: Mapping[str, Any], key: str) -> str:
    """``GetData``: the value of ``key`` in the Secret's ``data`` (base64 in JSON), or ""."""
    data = secret.get("data")
    if not isinstance(data, Mapping):
        return ""
    value = data.get(key)
    if not isinstance(value, str):
        return ""
    try:
        return base64.b64decode(value, validate=True).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        return ""


def _where(secret: Mapping[str, Any]) -> str:
    meta = secret.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def expiration_problem(secret: Mapping[str, Any], now: float) -> str | None:
    """``HasExpired``: why the token has expired, or None if it has not (or never expires).

    An expiration that cannot be parsed counts as expired, as upstream's does."""
    value = get_data(secret, EXPIRATION_KEY)
    if not value:
        return None
    try:
        expires = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        if expires.tzinfo is None:
            raise ValueError("no time zone")
    except ValueError as error:
        where = _where(secret)
        return f"Unparseable expiration time ({value}) in {where} Secret: {error}. Treating as expired."
    if now > expires.timestamp():
        return f"Expired bootstrap token in {_where(secret)} Secret: {value}"
    return None


def expires_at(secret: Mapping[str, Any]) -> float | None:
    """When the token expires (a cluster-clock timestamp), or None if never (or unparseable)."""
    value = get_data(secret, EXPIRATION_KEY)
    try:
        return dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() if value else None
    except ValueError:
        return None


def groups_of(secret: Mapping[str, Any]) -> list[str]:
    """``GetGroups``: ``system:bootstrappers`` and the extra groups, sorted; ``ValueError`` if one of
    them is not a valid bootstrap group."""
    groups = {DEFAULT_GROUP}
    extra = get_data(secret, EXTRA_GROUPS_KEY)
    if extra:
        for group in extra.split(","):
            group = group.strip()
            if not _GROUP.match(group):
                raise ValueError(f"bootstrap group {group!r} is invalid (must match {GROUP_PATTERN[2:-2]})")
            groups.add(group)
    return sorted(groups)


def authenticate(token: BootstrapToken, secret: Mapping[str, Any], now: float) -> tuple[str, list[str]]:
    """The user name and groups ``token`` stands for according to its ``secret``, at ``now``
    (``TokenAuthenticator.AuthenticateToken``, after the Secret was found); ``InvalidBootstrapToken``
    (upstream's log line) if the Secret does not let it authenticate."""

    def refused(why: str) -> InvalidBootstrapToken:
        return InvalidBootstrapToken(f"Bootstrap secret {_where(secret)} matching bearer token {why}")

    if (secret.get("metadata") or {}).get("deletionTimestamp"):
        raise refused("is deleted and awaiting removal")
    if secret.get("type") != SECRET_TYPE or not secret.get("data"):
        raise refused(f"has invalid type, expected {SECRET_TYPE}.")
    if not hmac.compare_digest(get_data(secret, TOKEN_SECRET_KEY).encode(), token.secret.encode()):
        raise refused(f"has invalid value for key {TOKEN_SECRET_KEY}.")
    if get_data(secret, TOKEN_ID_KEY) != token.id:
        raise refused(f"has invalid value for key {TOKEN_ID_KEY}.")
    expired = expiration_problem(secret, now)
    if expired is not None:
        raise InvalidBootstrapToken(expired)
    if get_data(secret, USAGE_AUTHENTICATION) != "true":
        raise refused(f"not marked {USAGE_AUTHENTICATION}=true.")
    try:
        groups = groups_of(secret)
    except ValueError as error:
        raise refused(f"has invalid value for key {EXTRA_GROUPS_KEY}: {error}.") from error
    return USER_PREFIX + token.id, groups


def usable_for_authentication(secret: Mapping[str, Any], now: float, *, margin: float = 0.0) -> bool:
    """Whether ``secret`` holds a token that authenticates now and for ``margin`` seconds more."""
    token = token_of(secret)
    if token is None:
        return False
    try:
        authenticate(token, secret, now + margin)
    except InvalidBootstrapToken:
        return False
    return True


def token_of(secret: Mapping[str, Any]) -> BootstrapToken | None:
    """The token a bootstrap token Secret holds, or None if it holds none of the right form."""
    return parse_token(f"{get_data(secret, TOKEN_ID_KEY)}.{get_data(secret, TOKEN_SECRET_KEY)}")


__all__ = [
    "DEFAULT_GROUP",
    "KUBEADM_NODE_GROUP",
    "KUBEADM_TTL",
    "NAMESPACE",
    "SECRET_PREFIX",
    "SECRET_TYPE",
    "USAGE_AUTHENTICATION",
    "USER_PREFIX",
    "BootstrapToken",
    "InvalidBootstrapToken",
    "authenticate",
    "expiration_problem",
    "expires_at",
    "generate_token",
    "get_data",
    "groups_of",
    "parse_token",
    "token_of",
    "token_secret",
    "usable_for_authentication",
]
