"""Reviews: resources that are questions, answered and never stored.

- ``SelfSubjectAccessReview``: "may I do this?" (``kubectl auth can-i create pods``);
- ``SubjectAccessReview``: may *they* (a user, its groups) do this? (``can-i --as`` is a self review
  sent with impersonation instead); ``LocalSubjectAccessReview``: the same, in one namespace;
- ``SelfSubjectRulesReview``: what may I do in this namespace? (``kubectl auth can-i --list``);
- ``TokenReview``: whose token is this? ``SelfSubjectReview``: who am I? (``kubectl auth whoami``).

A POST returns the object with ``status`` filled in (201). Access reviews ask the same authorizers as
every request (Node, then RBAC): ``status.allowed``, and ``status.reason`` as the RBAC authorizer words
it (``RBAC: allowed by ClusterRoleBinding "cluster-admin" of ClusterRole "cluster-admin" to Group
"system:masters"``), empty for a plain refusal. A rules review lists the RBAC rules that apply
(``incomplete`` for a kubelet, whose rights the Node authorizer computes per object).

Upstream: ``pkg/registry/authorization/{subjectaccessreview,selfsubjectaccessreview,
localsubjectaccessreview,selfsubjectrulesreview}/rest.go``, ``pkg/registry/authorization/util``
(``ResourceAttributesFrom``), ``pkg/apis/authorization/validation``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from controlplane.api.resources import ResourceType
from controlplane.api.validation import FieldError, invalid, required
from controlplane.apiserver import errors
from controlplane.apiserver.authz.authorizer import Attributes, Decision
from controlplane.apiserver.authz.node import node_identity
from controlplane.apiserver.filters import authentication
from controlplane.apiserver.handlers.resources import Reply
from controlplane.apiserver.http import Request, decode_body, dumps
from controlplane.identity import UserInfo

if TYPE_CHECKING:
    from controlplane.apiserver.server import APIServer

GROUP = "authorization.k8s.io"
ACCESS_REVIEWS = ("SelfSubjectAccessReview", "SubjectAccessReview", "LocalSubjectAccessReview")


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _validate_access_review(kind: str, body: Mapping[str, Any], namespace: str) -> list[FieldError]:
    """``ValidateSubjectAccessReviewSpec`` and the self/local variants."""
    spec = body.get("spec")
    spec = spec if isinstance(spec, Mapping) else {}
    resource, non_resource = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    for name, value in (("resourceAttributes", resource), ("nonResourceAttributes", non_resource)):
        if value is not None and not isinstance(value, Mapping):  # upstream's decoder refuses it
            raise errors.bad_request(f"spec.{name} must be an object")
    problems: list[FieldError] = []
    if resource is None and non_resource is None:
        problems.append(
            required(
                "spec.resourceAttributes",
                "exactly one of nonResourceAttributes or resourceAttributes must be specified",
            )
        )
    elif resource is not None and non_resource is not None:
        problems.append(
            invalid(
                "spec.nonResourceAttributes",
                non_resource,
                "cannot be specified in combination with resourceAttributes",
            )
        )
    if kind == "LocalSubjectAccessReview":
        if non_resource is not None:
            problems.append(
                invalid("spec.nonResourceAttributes", non_resource, "disallowed on this kind of request")
            )
        if isinstance(resource, Mapping) and _str(resource.get("namespace")) != namespace:
            problems.append(
                invalid(
                    "spec.resourceAttributes.namespace",
                    _str(resource.get("namespace")),
                    "must match metadata.namespace",
                )
            )
    if kind != "SelfSubjectAccessReview" and not spec.get("user") and not spec.get("groups"):
        problems.append(invalid("spec.user", "", "at least one of user or group must be specified"))
    return problems


def _subject(spec: Mapping[str, Any]) -> UserInfo:
    """The user a (Local)SubjectAccessReview asks about (its name may be empty: groups only)."""
    groups, extra = spec.get("groups") or [], spec.get("extra") or {}
    if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
        raise errors.bad_request("spec.groups must be a list of strings")
    if not isinstance(extra, dict) or not all(
        isinstance(v, list) and all(isinstance(i, str) for i in v) for v in extra.values()
    ):
        raise errors.bad_request("spec.extra must map strings to lists of strings")
    return UserInfo.create(_str(spec.get("user")), uid=_str(spec.get("uid")), groups=groups, extra=extra)


def access_review_attributes(user: UserInfo, spec: Mapping[str, Any]) -> Attributes:
    """``ResourceAttributesFrom`` / ``NonResourceAttributesFrom``."""
    resource = spec.get("resourceAttributes")
    if isinstance(resource, Mapping):
        selector = resource.get("fieldSelector")
        raw = _str(selector.get("rawSelector")) if isinstance(selector, Mapping) else ""
        return Attributes(
            user,
            _str(resource.get("verb")),
            api_group=_str(resource.get("group")),
            api_version=_str(resource.get("version")),
            resource=_str(resource.get("resource")),
            subresource=_str(resource.get("subresource")),
            namespace=_str(resource.get("namespace")),
            name=_str(resource.get("name")),
            field_selector=raw,
        )
    non_resource = spec.get("nonResourceAttributes")
    non_resource = non_resource if isinstance(non_resource, Mapping) else {}
    return Attributes(
        user,
        _str(non_resource.get("verb")),
        resource_request=False,
        path=_str(non_resource.get("path")),
    )


def access_review_status(decision: Decision) -> dict[str, Any]:
    """``SubjectAccessReviewStatus``: ``allowed``, and ``denied``/``reason``/``evaluationError`` if set."""
    status: dict[str, Any] = {"allowed": decision.allowed}
    if decision.verdict.value == "Deny":
        status["denied"] = True
    if decision.reason:
        status["reason"] = decision.reason
    return status


def rules_review_status(server: APIServer, user: UserInfo, namespace: str) -> dict[str, Any]:
    """``SubjectRulesReviewStatus`` from the union of the Node and RBAC rule resolvers."""
    rules, problems = server.authorization.rbac.rules_for(user, namespace)
    incomplete = False
    _, is_node = node_identity(Attributes(user, "get"))
    if is_node:  # upstream's Node authorizer: "node authorizer does not support user rule resolution"
        incomplete = True
        problems = ["node authorizer does not support user rule resolution", *problems]
    resource_rules: list[dict[str, Any]] = []
    non_resource_rules: list[dict[str, Any]] = []
    for rule in rules:
        verbs = list(rule.get("verbs") or [])
        if rule.get("resources"):
            entry: dict[str, Any] = {"verbs": verbs}
            for key in ("apiGroups", "resources", "resourceNames"):
                if rule.get(key):
                    entry[key] = list(rule[key])
            resource_rules.append(entry)
        if rule.get("nonResourceURLs"):
            non_resource_rules.append({"verbs": verbs, "nonResourceURLs": list(rule["nonResourceURLs"])})
    status: dict[str, Any] = {
        "resourceRules": resource_rules,
        "nonResourceRules": non_resource_rules,
        "incomplete": incomplete,
    }
    if problems:
        status["evaluationError"] = problems[0] if len(problems) == 1 else "[" + ", ".join(problems) + "]"
    return status


async def handle(server: APIServer, request: Request, user: UserInfo, rtype: ResourceType) -> Reply:
    """Answer a review of kind ``rtype`` that ``user`` (whom the request acts as) asks for."""
    body: Any = decode_body(await request.read_body(), request.content_type)  # JSON, YAML or protobuf
    if not isinstance(body, dict):
        raise errors.bad_request(f"the body of the request must be a {rtype.kind} object")
    body["apiVersion"] = rtype.api_version
    body["kind"] = rtype.kind
    if not isinstance(body.get("metadata"), dict):
        body["metadata"] = {}
    if not isinstance(body.get("spec"), dict):
        body["spec"] = {}
    spec: dict[str, Any] = body["spec"]
    namespace = request.info.namespace
    if rtype.kind in ACCESS_REVIEWS:
        if rtype.kind == "LocalSubjectAccessReview":
            if body["metadata"].get("namespace") not in (None, "", namespace):
                raise errors.bad_request(
                    f"spec.resourceAttributes.namespace must match namespace: {namespace}"
                )
            body["metadata"]["namespace"] = namespace
        problems = _validate_access_review(rtype.kind, body, namespace)
        if problems:
            raise errors.invalid(rtype.kind, GROUP, _str(body["metadata"].get("name")), problems)
        if rtype.kind == "SelfSubjectAccessReview":
            subject = user
            # Upstream fills the spec of a self review with the asker, as it answers.
            spec.pop("user", None)
        else:
            subject = _subject(spec)
        decision = await server.authorization.authorize_consistently(access_review_attributes(subject, spec))
        body["status"] = access_review_status(decision)
    elif rtype.kind == "SelfSubjectRulesReview":
        namespace = _str(spec.get("namespace"))
        if not namespace:
            raise errors.bad_request("no namespace on request")
        body["status"] = rules_review_status(server, user, namespace)
    elif rtype.kind == "SelfSubjectReview":
        body["status"] = {"userInfo": user.to_json()}
    elif rtype.kind == "TokenReview":
        body["status"] = await authentication.review_token(server.authenticator, spec)
    return Reply(201, dumps(body))
