"""Authorization: may this user do this verb on this resource? The pipeline stage that asks, and says no.

The stage turns the request into attributes (user, verb, group, resource, subresource, namespace, name,
or a non-resource path), asks the authorizers (:mod:`controlplane.apiserver.authz`: Node, then RBAC),
reports the decision on the trace as ``rbac.decision`` with its explanation, and refuses what nobody
allowed with upstream's 403 (apiserver ``endpoints/filters/authorization.go`` and
``handlers/responsewriters/errors.go``)::

    pods is forbidden: User "ada" cannot list resource "pods" in API group "" in the namespace "default"

For a list or watch, a ``fieldSelector`` of ``metadata.name=<name>`` makes the request about that one
object, as upstream's request info does, so ``kubectl get pod web -w`` (and a kubelet watching its own
Node) needs only the right to that object.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from controlplane.api import selectors
from controlplane.apiserver import errors
from controlplane.apiserver.authz.authorizer import Attributes, Decision, forbidden_message
from controlplane.apiserver.authz.policy import Authorization
from controlplane.apiserver.filters.audit import RequestAudit, record_authorization
from controlplane.apiserver.http import Request
from controlplane.apiserver.pipeline import Authorized, Dispatched, Reporter
from controlplane.identity import UserInfo

#: Emits the ``rbac.decision`` trace event of the current request (the server adds the envelope).
Emit = Callable[..., None]


def _name_from_field_selector(text: str) -> str:
    """``metadata.name=<name>`` of a list/watch's field selector, if it pins one (``RequiresExactMatch``)."""
    if not text:
        return ""
    try:
        name = selectors.parse_field_selector(text).exact_match("metadata.name")
    except selectors.SelectorError:
        return ""
    if not name or name in (".", "..") or "/" in name or "%" in name:  # path.IsValidPathSegmentName
        return ""
    return name


def attributes(request: Request, user: UserInfo) -> Attributes:
    """The request, as ``user``, as authorizers see it (upstream ``GetAuthorizerAttributes``)."""
    info = request.info
    if not info.is_resource_request:
        return Attributes(user, info.verb, resource_request=False, path=request.path)
    name = info.name
    field_selector = request.query.get("fieldSelector", "")
    if not name and info.verb in ("list", "watch"):
        name = _name_from_field_selector(field_selector)
    return Attributes(
        user,
        info.verb,
        api_group=info.api_group,
        api_version=info.api_version,
        resource=info.resource,
        subresource=info.subresource,
        namespace=info.namespace,
        name=name,
        path=request.path,
        field_selector=field_selector,
    )


def forbidden(attrs: Attributes, reason: str) -> errors.StatusError:
    """Upstream's ``responsewriters.Forbidden``: the message, then the authorizers' reason if any."""
    message = forbidden_message(attrs) + (f": {reason}" if reason else "")
    if not attrs.resource_request:
        return errors.StatusError(403, "Forbidden", f"forbidden: {message}", {})
    return errors.forbidden(attrs.resource, attrs.api_group, attrs.name, message)


def trace_fields(attrs: Attributes, decision: Decision) -> dict[str, Any]:
    """The ``rbac.decision`` event's fields (see ``controlplane/trace/schema.py``)."""
    fields: dict[str, Any] = {
        "allowed": decision.allowed,
        "user": attrs.user.username,
        "groups": list(attrs.user.groups),
        "verb": attrs.verb,
        "authorizer": decision.authorizer,
        "reason": decision.explanation or decision.reason,
    }
    if attrs.resource_request:
        fields["resource"] = attrs.combined_resource
        if attrs.api_group:
            fields["group"] = attrs.api_group
        if attrs.namespace:
            fields["namespace"] = attrs.namespace
        if attrs.name:
            fields["name"] = attrs.name
    else:
        fields["path"] = attrs.path
    if decision.allowed:
        fields["binding"] = decision.binding
        fields["role"] = decision.role
        fields["rule"] = dict(decision.rule) if decision.rule is not None else None
    else:
        fields["considered"] = [dict(c) for c in decision.considered]
        fields["message"] = forbidden(attrs, decision.reason).message
    return fields


async def authorize(
    dispatched: Dispatched,
    authorization: Authorization,
    report: Reporter,
    emit: Emit | None,
    audit: RequestAudit,
) -> Authorized:
    """The authorization stage: ask about the request as the user it acts as, report (``emit`` is None
    while nobody records the trace), note the decision in the audit event, and refuse with 403 unless
    an authorizer allowed it."""
    attrs = attributes(dispatched.request, dispatched.acting)
    decision = await authorization.authorize_consistently(attrs)
    if emit is not None:
        emit(**trace_fields(attrs, decision))
    if decision.allowed:
        record_authorization(audit, True, decision.reason)
        report("authorization", "pass", decision.explanation or decision.reason)
        return dispatched.authorized(decision.reason)
    error = forbidden(attrs, decision.reason)
    record_authorization(audit, False, error.message)
    report("authorization", "deny", decision.explanation or error.message)
    raise error
