"""Classification: which FlowSchema a request matches, and which flow within it.

A FlowSchema has ``rules``; each rule names **subjects** (users, groups, ServiceAccounts, ``*`` for
any) and what they do: **resource rules** (verbs, API groups, resources with ``/subresource``,
namespaces, or ``clusterScope`` for cluster-scoped requests) or **non-resource rules** (verbs and URL
paths, ``/apis/*`` for a prefix). A request matches a rule if one subject matches its user and one
resource rule (for a resource request) or non-resource rule (otherwise) matches what it asks.
FlowSchemas are tried in order of ``matchingPrecedence`` (then name); the first match wins.

The FlowSchema's ``distinguisherMethod`` then splits its requests into **flows**: ``ByUser`` (one
flow per user name), ``ByNamespace`` (one per namespace), or none (one flow for the whole schema).
Fairness is between flows: a user in a hot loop competes with other users, not with itself.

Upstream: ``k8s.io/apiserver/pkg/util/flowcontrol/rule.go`` (``matchesFlowSchema`` and below) and
``apf_controller.go`` (``computeFlowDistinguisher``). Objects are read as JSON, defensively: a rule
with a missing or ill-typed field matches nothing (never an exception: a bad FlowSchema must not turn
every request into a 500).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from controlplane.api.meta import Object
from controlplane.identity import SERVICE_ACCOUNT_USER_PREFIX, UserInfo


@dataclass(frozen=True, slots=True)
class RequestDigest:
    """What classification looks at (upstream's ``RequestDigest``): the request info and the user."""

    user: UserInfo
    verb: str
    is_resource_request: bool
    path: str = ""
    api_group: str = ""
    namespace: str = ""
    resource: str = ""
    subresource: str = ""


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _dict(value: Any) -> Object:
    return value if isinstance(value, dict) else {}


def _contains(value: str, values: Iterable[str], wildcard: str) -> bool:
    return any(v in (value, wildcard) for v in values)


def matches_subject(user: UserInfo, subject: Object) -> bool:
    kind = subject.get("kind")
    if kind == "User":
        name = _dict(subject.get("user")).get("name")
        return name == "*" or name == user.username
    if kind == "Group":
        name = _dict(subject.get("group")).get("name")
        return name == "*" or name in user.groups
    if kind == "ServiceAccount":
        account = _dict(subject.get("serviceAccount"))
        namespace, name = account.get("namespace"), account.get("name")
        if not isinstance(namespace, str) or not isinstance(name, str):
            return False
        if name == "*":
            return user.username.startswith(f"{SERVICE_ACCOUNT_USER_PREFIX}{namespace}:")
        return user.username == f"{SERVICE_ACCOUNT_USER_PREFIX}{namespace}:{name}"
    return False


def matches_resource_rule(digest: RequestDigest, rule: Object) -> bool:
    if not _contains(digest.verb, _strings(rule.get("verbs")), "*"):
        return False
    resource = f"{digest.resource}/{digest.subresource}" if digest.subresource else digest.resource
    if not _contains(resource, _strings(rule.get("resources")), "*"):
        return False
    if not _contains(digest.api_group, _strings(rule.get("apiGroups")), "*"):
        return False
    if not digest.namespace:
        return rule.get("clusterScope") is True
    return _contains(digest.namespace, _strings(rule.get("namespaces")), "*")


def matches_non_resource_url(urls: Sequence[str], path: str) -> bool:
    """``*`` matches every path; ``/apis/*`` every path below /apis/; ``/healthz`` itself and below."""
    for url in urls:
        if url == "*" or url == path:
            return True
        prefix = url.removesuffix("*")
        if not url.endswith("/*"):
            prefix += "/"
        if path.startswith(prefix):
            return True
    return False


def matches_non_resource_rule(digest: RequestDigest, rule: Object) -> bool:
    if not _contains(digest.verb, _strings(rule.get("verbs")), "*"):
        return False
    return matches_non_resource_url(_strings(rule.get("nonResourceURLs")), digest.path)


def matches_policy_rule(digest: RequestDigest, rule: Object) -> bool:
    subjects = rule.get("subjects")
    if not isinstance(subjects, list) or not any(
        matches_subject(digest.user, s) for s in subjects if isinstance(s, dict)
    ):
        return False
    if digest.is_resource_request:
        rules = rule.get("resourceRules")
        return isinstance(rules, list) and any(
            matches_resource_rule(digest, r) for r in rules if isinstance(r, dict)
        )
    rules = rule.get("nonResourceRules")
    return isinstance(rules, list) and any(
        matches_non_resource_rule(digest, r) for r in rules if isinstance(r, dict)
    )


def matches_flow_schema(digest: RequestDigest, flow_schema: Object) -> bool:
    rules = _dict(flow_schema.get("spec")).get("rules")
    return isinstance(rules, list) and any(
        matches_policy_rule(digest, r) for r in rules if isinstance(r, dict)
    )


def distinguisher(digest: RequestDigest, flow_schema: Object) -> str:
    """The flow within the FlowSchema: the user's name, the namespace, or "" (one flow)."""
    method = _dict(_dict(flow_schema.get("spec")).get("distinguisherMethod")).get("type")
    if method == "ByUser":
        return digest.user.username
    if method == "ByNamespace":
        return digest.namespace
    return ""


def precedence(flow_schema: Object) -> tuple[int, str]:
    """The order FlowSchemas are tried in: matchingPrecedence (default 1000), then name."""
    value = _dict(flow_schema.get("spec")).get("matchingPrecedence")
    number = value if isinstance(value, int) and not isinstance(value, bool) else 1000
    return number, str(_dict(flow_schema.get("metadata")).get("name", ""))


def first_match(digest: RequestDigest, flow_schemas: Iterable[Object]) -> Object | None:
    """The first of ``flow_schemas`` (already in precedence order) that ``digest`` matches."""
    for flow_schema in flow_schemas:
        if matches_flow_schema(digest, flow_schema):
            return flow_schema
    return None
