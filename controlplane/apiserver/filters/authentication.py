"""Authentication: who is making this request?

The first stage of the pipeline turns the request's credential into a user (``UserInfo``: a name, a
uid, groups). A request whose credential no authenticator accepts is refused with 401 Unauthorized
before anything else happens; one without any credential is *anonymous*, refused as well unless the
cluster allows anonymous requests.

The request's credentials are offered to each authenticator in turn, as kube-apiserver's union
authenticator does (k8s.io/apiserver ``pkg/authentication/request/union`` and ``token/union``, in the
order ``pkg/kubeapiserver/authenticator/config.go`` builds them); the first that accepts wins:

1. the client certificate of the TLS connection (``x509.py``): CN the user, O the groups, if the
   cluster's client CA signed it, it is valid by the cluster clock, good for ``clientAuth`` and not
   revoked;
2. the bearer token (``Authorization: Bearer <token>``), first as one of the cluster's tokens for
   people (``controlplane.tokens``): an opaque string looked up by its hash;
3. then as a ServiceAccount token (``controlplane.serviceaccounttokens``): a signed JWT, accepted if its
   issuer is ours, its signature verifies, its audiences meet the API server's, it has not expired,
   and the ServiceAccount (and the pod, secret or node it is bound to) still exists with the uid it
   names;
4. then as a bootstrap token (``bootstraptoken.py``): ``<id>.<secret>``, checked against the Secret
   ``kube-system/bootstrap-token-<id>``; the user ``system:bootstrap:<id>`` in ``system:bootstrappers``.

A refused certificate does not stop a good token: upstream's union collects each authenticator's error
and goes on, and answers 401 only when none accepted the request.

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

The trace's ``authentication`` stage says how the user was proven (``x509 CN=admin, O=system:masters``,
``token``, ``ServiceAccount token``) or, for a refused request, every authenticator's reason (the
certificate's ``... has expired ...``, ``invalid bearer token``): the student sees what the client
never does.

PLACEHOLDER (issue 3): anonymous access arrives with the security issue.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from controlplane.api.meta import Object
from controlplane.apiserver import errors
from controlplane.apiserver.filters.bootstraptoken import BOOTSTRAP_TOKEN, BootstrapTokenAuthenticator
from controlplane.apiserver.filters.x509 import X509Authenticator, describe
from controlplane.apiserver.http import Request
from controlplane.apiserver.pipeline import Authenticated
from controlplane.apiserver.registry import Registry
from controlplane.apiserver.watchcache import WatchCache
from controlplane.clock import Clock
from controlplane.identity import ANONYMOUS, AUTHENTICATED, UNAUTHENTICATED, UserInfo
from controlplane.serviceaccounttokens import (
    InvalidToken,
    TokenIssuer,
    check_bound_objects,
    check_times,
    intersect,
)
from controlplane.trace import nodes

#: The people's token registry: a token to its user, or None.
TokenAuthenticator = Callable[[str], UserInfo | None]


#: ``bearertoken``'s error when no token authenticator knew the token (``invalidToken``).
INVALID_BEARER_TOKEN = "invalid bearer token"


#: ``Response.method`` of each authenticator, as the trace names it.
PEOPLE_TOKEN = "token"
SERVICE_ACCOUNT_TOKEN = "ServiceAccount token"
CLIENT_CERTIFICATE = "x509"


@dataclass(frozen=True, slots=True)
class Response:
    """The user and the audiences it was accepted for (``authenticator.Response``), and by whom."""

    user: UserInfo
    audiences: tuple[str, ...] = ()
    #: Which authenticator accepted the credential (``token``, ``ServiceAccount token``, ``x509``).
    method: str = ""


class Unauthenticated(errors.StatusError):
    """No authenticator accepted the request: upstream's bare 401, and for the trace, every reason why."""

    def __init__(self, reasons: Sequence[str]) -> None:
        super().__init__(401, "Unauthorized", "Unauthorized")
        self.reasons = tuple(reasons)

    @property
    def why(self) -> str:
        return "; ".join(self.reasons) if self.reasons else "no credentials"


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
        return TokenResult(Response(info.user_info(), verified.audiences, SERVICE_ACCOUNT_TOKEN))


class Authenticator:
    """The API server's authenticators, tried in upstream's order: x509, then the token authenticators."""

    def __init__(
        self,
        tokens: TokenAuthenticator,
        *,
        service_accounts: ServiceAccountTokenAuthenticator | None = None,
        api_audiences: Sequence[str] = (),
        x509: X509Authenticator | None = None,
        anonymous: bool = False,
        bootstrap_tokens: BootstrapTokenAuthenticator | None = None,
    ) -> None:
        self.tokens = tokens
        #: ``--enable-bootstrap-token-auth``: kubeadm's joining nodes (None: not enabled).
        self.bootstrap_tokens = bootstrap_tokens
        #: ``--anonymous-auth``: a request with no credentials at all is ``system:anonymous`` in
        #: ``system:unauthenticated`` (for RBAC to judge) instead of a 401. Off unless a cluster
        #: switches it on for the lesson about it; a wrong credential is a 401 either way.
        self.anonymous = anonymous
        self.service_accounts = service_accounts
        self.x509 = x509
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
                return TokenResult(Response(user, implicit, PEOPLE_TOKEN))
        if self.service_accounts is not None:
            result = await self.service_accounts.authenticate_token(token, requested)
            if result is not None:
                if result.response is not None:
                    return result
                problems.append(result.error)
        if self.bootstrap_tokens is not None and (implicit or not self.api_audiences):
            # Audience-agnostic, as people's tokens (upstream wraps it in WrapAudienceAgnosticToken).
            found = await self.bootstrap_tokens.authenticate_token(token)
            if isinstance(found, UserInfo):
                return TokenResult(Response(found, implicit, BOOTSTRAP_TOKEN))
            if found is not None:
                problems.append(found)
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


async def authenticate(request: Request, authenticator: Authenticator) -> Authenticated:
    """The authentication stage: the user behind ``request``'s client certificate or bearer token, how
    it was proven, and the user's node on the diagram (``trace.nodes.for_user``).

    ``Unauthenticated`` (401) if neither proves anyone; its ``reasons`` say why, for the trace only.
    """
    reasons: list[str] = []
    user: UserInfo | None = None
    how = ""
    if authenticator.x509 is not None:
        certificate = authenticator.x509.authenticate(request.client_cert_chain)
        if certificate is not None and certificate.authenticated is not None:
            user, how = certificate.authenticated, certificate.how
        elif certificate is not None and certificate.user is not None:
            user, how = certificate.user, describe(certificate.user)
        elif certificate is not None:
            reasons.append(str(certificate.error or "x509: the certificate has no common name"))
    token = bearer_token(request) if user is None else ""
    if token:
        result = await authenticator.authenticate_token(token)
        if result.response is not None:
            user, how = result.response.user, f"{result.response.method}: {result.response.user.username}"
        else:
            reasons.append(result.error)
    if user is None:
        if authenticator.anonymous and not reasons and not token:
            # Upstream's union authenticator: nobody claimed the request, so it is anonymous
            # (k8s.io/apiserver pkg/authentication/request/anonymous).
            user, how = UserInfo.create(ANONYMOUS, groups=[UNAUTHENTICATED]), "anonymous: no credentials"
        else:
            raise Unauthenticated(reasons)
    elif AUTHENTICATED not in user.groups:
        user = user.with_groups(AUTHENTICATED)
    source = nodes.for_user(user.username, request.headers.get("user-agent", ""))
    return Authenticated(request, user, how, source)


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
