"""Impersonation: acting as another user (``kubectl --as``), if the real user may impersonate.

A request may carry ``Impersonate-User``, ``Impersonate-Group`` (repeatable), ``Impersonate-Uid`` and
``Impersonate-Extra-<key>`` headers. The API server then checks, for the *real* user, the verb
``impersonate`` on each thing asked for:

- ``users`` named the user (or, for ``system:serviceaccount:<ns>:<name>``, ``serviceaccounts`` named
  ``<name>`` in ``<ns>``), ``groups`` named each group, in the core group;
- ``uids`` named the uid and ``userextras/<key>`` named each value, in ``authentication.k8s.io``.

If all are allowed, the rest of the pipeline (flow control, authorization, admission, audit) sees the
impersonated user (the stage's value, ``Impersonated``, names it ``acting``, beside the ``user``
authentication found): ``system:authenticated`` is added to its groups (unless it asked for
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

from controlplane.apiserver import errors
from controlplane.apiserver.authz.authorizer import Attributes
from controlplane.apiserver.authz.policy import Authorization
from controlplane.apiserver.filters.authorization import forbidden
from controlplane.apiserver.http import Request
from controlplane.apiserver.pipeline import Authenticated, Impersonated, Reporter
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
    for name, value in request.raw_headers:
        if name.startswith(EXTRA_PREFIX):
            key = unquote(name[len(EXTRA_PREFIX) :])  # upstream unescapes the percent-encoded key
            extra.setdefault(key, []).append(value.strip())
    return username, groups, uid, extra


async def _check(
    requester: UserInfo, authorizer: Authorization, attrs: Attributes, what: str, report: Reporter
) -> None:
    decision = await authorizer.authorize_consistently(attrs)
    if not decision.allowed:
        error = forbidden(attrs, decision.reason)
        report("impersonation", "deny", f"{requester.username} may not impersonate {what}")
        raise error


async def impersonate(
    authenticated: Authenticated,
    authorizer: Authorization,
    report: Reporter,
    *,
    protected_groups: frozenset[str] = frozenset(),
) -> Impersonated:
    """The impersonation stage: whom the request acts as. Its sender, unless it asks to impersonate
    someone and may; 403 if it may not.

    ``protected_groups`` may only be impersonated by someone already in them: a lab sandbox protects
    ``system:masters``, whose members pass its guardrails (``admission/sandboxguardrails.py``), so
    that a student who is a cluster admin, and thus may impersonate anyone by RBAC, cannot step
    around the guardrails with ``--as-group=system:masters``. Upstream has no such rule: there,
    impersonating ``system:masters`` is exactly as powerful as being cluster-admin already."""
    request, requester = authenticated.request, authenticated.user
    for name, _ in request.raw_headers:  # (a plain loop: ``any`` of a generator costs more, per request)
        if name.startswith(_ANY):
            break
    else:
        report("impersonation", "pass", "no impersonation requested")  # most requests
        return authenticated.acting_as(requester)
    username, groups, uid, extra = _headers(request)
    if not (username or groups or uid or extra):
        report("impersonation", "pass", "no impersonation requested")
        return authenticated.acting_as(requester)
    if not username:
        asked = ", ".join(["groups"] * bool(groups) + ["uid"] * bool(uid) + ["extra"] * bool(extra))
        report("impersonation", "deny", f"{asked} without a user")
        raise errors.bad_request(f"requested {asked} without impersonating a user")

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
        await _check(
            requester, authorizer, attrs("serviceaccounts", name, namespace=namespace), username, report
        )
    else:
        await _check(requester, authorizer, attrs("users", username), username, report)
    for group in groups:
        if group in protected_groups and group not in requester.groups:
            report("impersonation", "deny", f"{requester.username} may not impersonate group {group}")
            raise forbidden(
                attrs("groups", group),
                f"impersonating the group {group} is not allowed in this sandbox (SandboxGuardrails)",
            )
        await _check(requester, authorizer, attrs("groups", group), f"group {group}", report)
    if service_account is not None and not groups:  # a ServiceAccount's groups: a fixed mapping
        groups = [SERVICE_ACCOUNTS, f"{SERVICE_ACCOUNTS}:{service_account[0]}"]
    if uid:
        await _check(
            requester, authorizer, attrs("uids", uid, group=AUTHENTICATION_GROUP), f"uid {uid}", report
        )
    for key, values in extra.items():
        for value in values:
            await _check(
                requester,
                authorizer,
                attrs("userextras", value, group=AUTHENTICATION_GROUP, sub=key),
                f"extra {key}={value}",
                report,
            )
    if username != ANONYMOUS:
        if AUTHENTICATED not in groups and UNAUTHENTICATED not in groups:
            groups.append(AUTHENTICATED)
    elif UNAUTHENTICATED not in groups:
        groups.append(UNAUTHENTICATED)
    report("impersonation", "pass", f"{requester.username} acts as {username}")
    return authenticated.acting_as(UserInfo.create(username, uid=uid, groups=groups, extra=extra))
