"""The bootstrap token authenticator: ``Bearer <id>.<secret>`` as ``system:bootstrap:<id>``.

A bootstrap token (``controlplane/api/bootstraptoken.py``) is checked against its Secret,
``kube-system/bootstrap-token-<id>``, which the API server reads from its watch cache of Secrets (upstream
reads a Secret lister), falling back to the store when the cache does not have it yet (a token made a
moment ago). A token not of the ``[a-z0-9]{6}.[a-z0-9]{16}`` form, or without a Secret, is *not mine*:
the next authenticator may know it. A token whose Secret refuses it (deleted, another type, another
secret, expired, not for authentication, bad extra groups) is refused with upstream's log line as the
reason, which the trace shows and the client never sees (it gets the bare 401).

Upstream: plugin/pkg/auth/authenticator/token/bootstrap/bootstrap.go; kube-apiserver enables it with
``--enable-bootstrap-token-auth`` (kubeadm sets it), after the ServiceAccount token authenticators
(pkg/kubeapiserver/authenticator/config.go).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from controlplane.api import bootstraptoken
from controlplane.api.meta import Object
from controlplane.apiserver import errors
from controlplane.apiserver.registry import Registry
from controlplane.apiserver.watchcache import WatchCache
from controlplane.clock import Clock
from controlplane.identity import UserInfo

#: Reads ``kube-system/<name>`` of the Secrets: the object, or None if there is none.
SecretGetter = Callable[[str], Awaitable[Object | None]]

#: ``Response.method`` of this authenticator, as the trace names it.
BOOTSTRAP_TOKEN = "bootstrap token"


def secret_getter(
    registries: Mapping[tuple[str, str, str], Registry], caches: Mapping[str, WatchCache]
) -> SecretGetter:
    """A ``SecretGetter`` over the API server's watch cache of Secrets, falling back to the store."""

    async def get(name: str) -> Object | None:
        registry = registries.get(("", "v1", "secrets"))
        if registry is None:
            return None
        key = registry.key(bootstraptoken.NAMESPACE, name)
        cache = caches.get(registry.rtype.storage_prefix or "")
        if cache is not None:
            cached = cache.get(key)
            if cached is not None:
                return cached.obj
        try:
            obj, _ = await registry.read(bootstraptoken.NAMESPACE, name)
        except errors.StatusError as error:
            if error.code == 404:
                return None
            raise
        return obj

    return get


class BootstrapTokenAuthenticator:
    """``TokenAuthenticator``: bootstrap tokens, checked against their Secrets at the cluster clock."""

    def __init__(self, secrets: SecretGetter, clock: Clock) -> None:
        self.secrets = secrets
        self.clock = clock

    async def authenticate_token(self, token: str) -> UserInfo | str | None:
        """The user of ``token``; the reason it is refused (a string); None if it is not a bootstrap
        token this cluster knows of."""
        parsed = bootstraptoken.parse_token(token)
        if parsed is None:
            return None  # not of the form: another authenticator's token
        secret = await self.secrets(parsed.secret_name)
        if secret is None:
            return None  # "No secret of name ... to match bootstrap bearer token"
        try:
            name, groups = bootstraptoken.authenticate(parsed, secret, self.clock.now())
        except bootstraptoken.InvalidBootstrapToken as error:
            return str(error)
        return UserInfo.create(name, groups=groups)


__all__ = ["BOOTSTRAP_TOKEN", "BootstrapTokenAuthenticator", "SecretGetter", "secret_getter"]
