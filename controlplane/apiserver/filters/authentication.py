"""Authentication: who is making this request?

The first stage of the pipeline turns the request's credential into a user (``UserInfo``: a name, a
uid, groups). A request whose credential no authenticator accepts is refused with 401 Unauthorized
before anything else happens; one without any credential is *anonymous*, refused as well unless the
cluster allows anonymous requests.

PLACEHOLDER (issue 3): only the cluster's bearer tokens for people are checked here. Client
certificates, ServiceAccount tokens, anonymous access and the ``system:authenticated`` group arrive
with the security issue, which replaces this module.
"""

from __future__ import annotations

from collections.abc import Callable

from controlplane.apiserver import errors
from controlplane.apiserver.http import Request
from controlplane.identity import AUTHENTICATED, UserInfo

TokenAuthenticator = Callable[[str], UserInfo | None]


def authenticate(request: Request, tokens: TokenAuthenticator) -> UserInfo:
    """The user behind ``request``'s bearer token; 401 Unauthorized if there is none or it is unknown."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise errors.unauthorized()
    user = tokens(token.strip())
    if user is None:
        raise errors.unauthorized()
    if AUTHENTICATED not in user.groups:
        user = user.with_groups(AUTHENTICATED)
    return user
