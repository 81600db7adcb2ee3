"""Authentication: who is making this request?

The first stage of the pipeline turns the request's credential into a user (``UserInfo``: a name, a
uid, groups). A request whose credential no authenticator accepts is refused with 401 Unauthorized
before anything else happens; one without any credential is *anonymous*, refused as well unless the
cluster allows anonymous requests.

A bearer token (``Authorization: Bearer <token>``) is offered to each **token authenticator** in turn,
as kube-apiserver's union authenticator does (k8s.io/apiserver ``pkg/authentication/request/union``
and ``token/union``); the first that accepts it wins:

1. the cluster's tokens for people (``controlplane.tokens``): an opaque string looked up by its hash;
2. ServiceAccount tokens (``controlplane.serviceaccount``): a signed JWT, accepted if its issuer is
   ours, its signature verifies, its audiences meet the API server's, it has not expired, and the
   ServiceAccount (and the pod, secret or node it is bound to) still exists with the uid it names.

Each authenticator says one of three things: *yes, this user*; *no, and here is why* (a token of
ours that is expired, tampered with or revoked); or *not mine* (another issuer's token). The reasons
never reach the client of an ordinary request, which only ever sees upstream's bare ``Unauthorized``
(telling an attacker *why* a forged token failed would help them); a ``TokenReview`` reports them
in ``status.error``, which is what it is for.

**Audiences.** Every token is meant for someone. A request to this API server asks for the API
server's audiences (``--api-audiences``, by default the issuer URL); a ``TokenReview`` may ask for
others (``spec.audiences``), as a webhook that accepts tokens minted for it does. People's tokens
know nothing of audiences: they count for the API server's audiences only
(``WrapAudienceAgnosticToken`` in k8s.io/apiserver ``pkg/authentication/authenticator/audiences.go``).

The objects a ServiceAccount token names are read from the API server's watch caches, in memory
(upstream reads its informers' listers), and from the store only when the cache has no object with
the uid asked for (just created, or the cache is behind), as upstream's ``clientGetter`` falls back to
a live GET (kubernetes ``pkg/controller/serviceaccount/tokengetter.go``). A request thus costs one
signature check and a dictionary lookup or two.

PLACEHOLDER (issue 3): client certificates, anonymous access and the authenticator's trace events
arrive with the security issue.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from controlplane.apiserver import errors
from controlplane.apiserver.http import Request
from controlplane.apiserver.registry import Registry
from controlplane.apiserver.watchcache import WatchCache
from controlplane.clock import Clock
from controlplane.identity import AUTHENTICATED, UserInfo
from controlplane.serviceaccount import InvalidToken, TokenIssuer, check_bound_objects, check_times, intersect

#: The people's token registry: a token to its user, or None.
TokenAuthenticator = Callable[[str], UserInfo | None]

Object = dict[str, Any]

#: ``bearertoken``'s error when no token authenticator knew the token (``invalidToken``).
INVALID_BEARER_TOKEN = "invalid bearer token"


@dataclass(frozen=True, slots=True)
class Response:
    """The user and the audiences it was accepted for (``authenticator.Response``)."""

    user: UserInfo
    audiences: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class TokenResult:
    """What the authenticators made of a token: a response, or why not (``error``, for TokenReview)."""

    response: Response | None
    error: str = ""


class ObjectGetter(Protocol):
    """Reads the objects a ServiceAccount token names (upstream's ``ServiceAccountTokenGetter``)."""

    async def get(self, resource: str, namespace: str, name: str, uid: str) -> Object | None:
        """The object, preferably one with ``uid``; None if there is none."""
        ...


class ClusterObjects:
    """``ObjectGetter`` over the API server's watch caches, falling back to the store (read-only)."""

    def __init__(
        self, registries: Mapping[tuple[str, str, str], Registry], caches: Mapping[str, WatchCache]
    ) -> None:
        self._registries = registries
        self._caches = caches

    async def get(self, resource: str, namespace: str, name: str, uid: str) -> Object | None:
        registry = self._registries.get(("", "v1", resource))
        if registry is None or not name:
            return None
        namespace = namespace if registry.rtype.namespaced else ""
        cache = self._caches.get(registry.rtype.storage_prefix or "")
        if cache is not None:
            cached = cache.get(registry.key(namespace, name))
            if cached is not None and (cached.obj.get("metadata") or {}).get("uid") == uid:
                return cached.obj
        try:
            obj, _ = await registry.read(namespace, name)
        except errors.StatusError as error:
            if error.code == 404:
                return None
            raise
        return obj


class ServiceAccountTokenAuthenticator:
    """ServiceAccount JWTs: upstream ``jwtTokenAuthenticator`` and ``validator`` (``pkg/serviceaccount``)."""

    def __init__(self, issuer: TokenIssuer, objects: ObjectGetter, clock: Clock) -> None:
        self.issuer = issuer
        self.objects = objects
        self.clock = clock

    async def authenticate_token(self, token: str, audiences: Sequence[str]) -> TokenResult | None:
        """The user behind ``token`` for ``audiences``; None if the token is not ours at all."""
        if not self.issuer.has_correct_issuer(token):
            return None
        try:
            verified = self.issuer.verify(token, audiences=audiences)
            claims = verified.claims
            check_times(claims, self.clock.now())  # before any lookup: an expired token costs nothing
            namespace = claims.namespace
            lookups = {
                "service_account": ("serviceaccounts", namespace, claims.service_account),
                "pod": ("pods", namespace, claims.pod),
                "secret": ("secrets", namespace, claims.secret),
                # Only a node-bound token needs its node; a pod-bound one just reports it.
                "node": ("nodes", "", claims.node if claims.pod is None else None),
            }
            found: dict[str, Object | None] = {}
            for key, (resource, ns, ref) in lookups.items():
                found[key] = None if ref is None else await self.objects.get(resource, ns, ref.name, ref.uid)
            info = check_bound_objects(
                claims,
                now=self.clock.now(),
                service_account=found["service_account"],
                pod=found["pod"],
                secret=found["secret"],
                node=found["node"],
            )
        except InvalidToken as error:
            return TokenResult(None, str(error))
        return TokenResult(Response(info.user_info(), verified.audiences))


class Authenticator:
    """The API server's token authenticators, tried in upstream's order."""

    def __init__(
        self,
        tokens: TokenAuthenticator,
        *,
        service_accounts: ServiceAccountTokenAuthenticator | None = None,
        api_audiences: Sequence[str] = (),
    ) -> None:
        self.tokens = tokens
        self.service_accounts = service_accounts
        if not api_audiences and service_accounts is not None:
            api_audiences = service_accounts.issuer.api_audiences
        self.api_audiences = tuple(api_audiences)

    async def authenticate_token(self, token: str, audiences: Sequence[str] | None = None) -> TokenResult:
        """Who ``token`` stands for when used for ``audiences`` (None: this API server's)."""
        requested = tuple(audiences) if audiences else self.api_audiences
        problems: list[str] = []
        # People's tokens are audience-agnostic: good for the API server's audiences only.
        implicit = intersect(self.api_audiences, requested) if self.api_audiences else requested
        if implicit or not self.api_audiences:
            user = self.tokens(token)
            if user is not None:
                return TokenResult(Response(user, implicit))
        if self.service_accounts is not None:
            result = await self.service_accounts.authenticate_token(token, requested)
            if result is not None:
                if result.response is not None:
                    return result
                problems.append(result.error)
        if not problems:
            return TokenResult(None, INVALID_BEARER_TOKEN)
        return TokenResult(None, problems[0] if len(problems) == 1 else "[" + ", ".join(problems) + "]")


def bearer_token(request: Request) -> str:
    """The request's bearer token, or "" (``bearertoken.AuthenticateRequest``)."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return ""
    return token.strip()


async def authenticate(request: Request, authenticator: Authenticator) -> UserInfo:
    """The user behind ``request``'s bearer token; 401 Unauthorized if there is none or it is refused."""
    token = bearer_token(request)
    if not token:
        raise errors.unauthorized()
    result = await authenticator.authenticate_token(token)
    if result.response is None:
        raise errors.unauthorized()
    user = result.response.user
    if AUTHENTICATED not in user.groups:
        user = user.with_groups(AUTHENTICATED)
    return user


async def review_token(authenticator: Authenticator, spec: Any) -> Object:
    """A TokenReview's ``status`` for its ``spec`` (kubernetes ``pkg/registry/authentication/tokenreview``).

    ``spec.audiences`` default to the API server's. ``status.error`` says why a token was refused.
    """
    if not isinstance(spec, dict):
        spec = {}
    token = spec.get("token")
    if not isinstance(token, str) or not token:
        raise errors.bad_request("token is required for TokenReview in authentication")
    audiences = spec.get("audiences") or []
    if not isinstance(audiences, list) or not all(isinstance(a, str) for a in audiences):
        raise errors.bad_request("spec.audiences must be a list of strings")
    result = await authenticator.authenticate_token(token, audiences or None)
    if result.response is None:
        return {"authenticated": False, "user": {}, "error": result.error}
    user = result.response.user
    if AUTHENTICATED not in user.groups:
        user = user.with_groups(AUTHENTICATED)
    return {"authenticated": True, "user": user.to_json(), "audiences": list(result.response.audiences)}
