"""Impersonation: acting as another user (``kubectl --as``), if the real user may impersonate.

A request may carry ``Impersonate-User``, ``Impersonate-Group`` (repeatable), ``Impersonate-Uid`` and
``Impersonate-Extra-<key>`` headers. The API server then checks, for the *real* user, the verb
``impersonate`` on each thing asked for:

- ``users`` named the user (or, for ``system:serviceaccount:<ns>:<name>``, ``serviceaccounts`` named
  ``<name>`` in ``<ns>``), ``groups`` named each group, in the core group;
- ``uids`` named the uid and ``userextras/<key>`` named each value, in ``authentication.k8s.io``.

If all are allowed, the rest of the pipeline (flow control, authorization, admission, audit) sees the
impersonated user: ``system:authenticated`` is added to its groups (unless it asked for
``system:authenticated`` or ``system:unauthenticated`` itself), and a ServiceAccount impersonated
without groups gets its own groups. A refusal is upstream's 403, e.g.::

    users "ada" is forbidden: User "bob" cannot impersonate resource "users" in API group ""
    at the cluster scope

The ``cluster-admin`` role (``*`` on ``*``) includes ``impersonate``; ``edit`` includes it for
ServiceAccounts of its namespace.

Upstream: apiserver ``pkg/endpoints/filters/impersonation.go``. Deviation: groups, uid or extras
without a user are answered 400 BadRequest (upstream: 500 InternalError, "requested ... without
impersonating a user").
"""

from __future__ import annotations

from urllib.parse import unquote

from controlplane.apiserver import errors, pipeline
from controlplane.apiserver.authz.authorizer import Attributes
from controlplane.apiserver.authz.policy import Authorization
from controlplane.apiserver.filters.authorization import forbidden
from controlplane.apiserver.http import Request
from controlplane.identity import (
    ANONYMOUS,
    AUTHENTICATED,
    SERVICE_ACCOUNT_USER_PREFIX,
    SERVICE_ACCOUNTS,
    UNAUTHENTICATED,
    UserInfo,
)

USER = "impersonate-user"
GROUP = "impersonate-group"
UID = "impersonate-uid"
EXTRA_PREFIX = "impersonate-extra-"
AUTHENTICATION_GROUP = "authentication.k8s.io"


def _service_account(username: str) -> tuple[str, str] | None:
    """(namespace, name) of a ServiceAccount user name, if it is one (``SplitUsername``)."""
    if not username.startswith(SERVICE_ACCOUNT_USER_PREFIX):
        return None
    parts = username[len(SERVICE_ACCOUNT_USER_PREFIX) :].split(":")
    if len(parts) != 2 or not all(parts):
        return None
    return parts[0], parts[1]


#: What every impersonation header's name starts with.
_ANY = "impersonate-"


def _headers(request: Request) -> tuple[str, list[str], str, dict[str, list[str]]]:
    username = request.headers.get(USER, "").strip()
    groups = [g.strip() for g in request.header_values(GROUP)]
    uid = request.headers.get(UID, "").strip()
    extra: dict[str, list[str]] = {}
    for name, value in request.raw_headers or list(request.headers.items()):
        if name.startswith(EXTRA_PREFIX):
            key = unquote(name[len(EXTRA_PREFIX) :])  # upstream unescapes the percent-encoded key
            extra.setdefault(key, []).append(value.strip())
    return username, groups, uid, extra


async def _check(requester: UserInfo, authorizer: Authorization, attrs: Attributes, what: str) -> None:
    decision = await authorizer.authorize_consistently(attrs)
    if not decision.allowed:
        error = forbidden(attrs, decision.reason)
        pipeline.stage("impersonation", "deny", f"{requester.username} may not impersonate {what}")
        raise error


async def impersonate(request: Request, authorizer: Authorization) -> None:
    """Replace ``request.user`` by the impersonated user, if asked and allowed; 403 if not allowed."""
    if not any(name.startswith(_ANY) for name, _ in request.raw_headers or request.headers.items()):
        pipeline.stage("impersonation", "pass", "no impersonation requested")  # most requests
        return
    username, groups, uid, extra = _headers(request)
    if not (username or groups or uid or extra):
        pipeline.stage("impersonation", "pass", "no impersonation requested")
        return
    if not username:
        asked = ", ".join(["groups"] * bool(groups) + ["uid"] * bool(uid) + ["extra"] * bool(extra))
        pipeline.stage("impersonation", "deny", f"{asked} without a user")
        raise errors.bad_request(f"requested {asked} without impersonating a user")
    requester = request.user
    assert requester is not None

    def attrs(resource: str, name: str, *, group: str = "", namespace: str = "", sub: str = "") -> Attributes:
        return Attributes(
            requester,
            "impersonate",
            api_group=group,
            resource=resource,
            subresource=sub,
            namespace=namespace,
            name=name,
        )

    service_account = _service_account(username)
    if service_account is not None:
        namespace, name = service_account
        await _check(requester, authorizer, attrs("serviceaccounts", name, namespace=namespace), username)
    else:
        await _check(requester, authorizer, attrs("users", username), username)
    for group in groups:
        await _check(requester, authorizer, attrs("groups", group), f"group {group}")
    if service_account is not None and not groups:  # a ServiceAccount's groups: a fixed mapping
        groups = [SERVICE_ACCOUNTS, f"{SERVICE_ACCOUNTS}:{service_account[0]}"]
    if uid:
        await _check(requester, authorizer, attrs("uids", uid, group=AUTHENTICATION_GROUP), f"uid {uid}")
    for key, values in extra.items():
        for value in values:
            await _check(
                requester,
                authorizer,
                attrs("userextras", value, group=AUTHENTICATION_GROUP, sub=key),
                f"extra {key}={value}",
            )
    if username != ANONYMOUS:
        if AUTHENTICATED not in groups and UNAUTHENTICATED not in groups:
            groups.append(AUTHENTICATED)
    elif UNAUTHENTICATED not in groups:
        groups.append(UNAUTHENTICATED)
    request.user = UserInfo.create(username, uid=uid, groups=groups, extra=extra)
    pipeline.stage("impersonation", "pass", f"{requester.username} acts as {username}")
