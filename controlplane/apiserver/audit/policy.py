"""The audit policy: which requests are recorded, and how much of each.

A policy (``audit.k8s.io/v1`` ``Policy``, the file kube-apiserver reads with ``--audit-policy-file``)
is a list of **rules**. For each request the rules are tried in order and the **first that matches
wins**; its ``level`` says how much is recorded (``Level``) and its ``omitStages`` which stages are
left out. A request no rule matches is not recorded (level ``None``).

A rule matches when every condition it sets holds (an empty list means "any"):

- ``users`` / ``userGroups``: the user's name is listed / one of its groups is;
- ``verbs``: the request's verb (``get``, ``list``, ``watch``, ``create``, ``update``, ``patch``,
  ``delete``, ``deletecollection``; for a non-resource URL the lower-case method);
- ``namespaces``: the object's namespace ("" for a cluster-scoped object);
- ``resources``: groups of resources, each ``{group, resources, resourceNames}``. ``resources`` may
  name a subresource (``pods/log``), all of a resource's subresources (``pods/*``), one subresource
  of any resource (``*/status``) or everything (``*``); ``resourceNames`` limits to those objects;
- ``nonResourceURLs``: paths that are not objects (``/healthz``, ``/metrics``); a trailing ``*``
  matches any path it prefixes.

A rule with ``resources`` or ``namespaces`` matches only resource requests, one with
``nonResourceURLs`` only the others. ``omitManagedFields`` (on the policy, or on a rule, which wins)
leaves ``metadata.managedFields`` out of the recorded bodies.

Kubelab adds one rule no policy can change: the bodies of Secrets and of token requests and reviews
(``SENSITIVE``) are never recorded; such a request is recorded at ``Metadata`` at most.

This module is pure: ``parse_policy`` reads a decoded document, ``Policy.evaluate`` decides for one
request's ``Attributes``. Upstream: ``k8s.io/apiserver/pkg/audit/policy/checker.go`` (matching),
``reader.go`` and ``pkg/apis/audit/validation`` (reading), ``pkg/apis/audit/v1/types.go`` (the types).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: The policy documents this reads.
API_VERSION = "audit.k8s.io/v1"


class Level(enum.IntEnum):
    """How much of a request is recorded; each level records everything the one before does."""

    NONE = 0
    METADATA = 1
    REQUEST = 2
    REQUEST_RESPONSE = 3

    @property
    def wire(self) -> str:
        """The level's name in policies and events (``RequestResponse``)."""
        return _LEVEL_NAMES[self]

    @classmethod
    def parse(cls, value: object) -> Level:
        for level, name in _LEVEL_NAMES.items():
            if value == name:
                return level
        raise ValueError(
            f"Unsupported value: {value!r}: supported values: {', '.join(_LEVEL_NAMES.values())}"
        )


_LEVEL_NAMES = {
    Level.NONE: "None",
    Level.METADATA: "Metadata",
    Level.REQUEST: "Request",
    Level.REQUEST_RESPONSE: "RequestResponse",
}


class Stage(enum.StrEnum):
    """The moments at which a request's event is recorded."""

    REQUEST_RECEIVED = "RequestReceived"
    RESPONSE_STARTED = "ResponseStarted"
    RESPONSE_COMPLETE = "ResponseComplete"
    PANIC = "Panic"


class InvalidPolicy(ValueError):
    """A policy document that cannot be used; ``problems`` lists why, field by field."""

    def __init__(self, problems: Sequence[str], source: str = "") -> None:
        self.problems = tuple(problems)
        self.source = source
        where = f"{source}: " if source else ""
        super().__init__(f"{where}invalid audit policy: " + "; ".join(self.problems))


@dataclass(frozen=True, slots=True)
class GroupResources:
    """Resources of one API group (``group: ""`` is the core group)."""

    group: str = ""
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PolicyRule:
    """One rule: its conditions, and the level and stages of what it matches."""

    level: Level
    users: tuple[str, ...] = ()
    user_groups: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ()
    resources: tuple[GroupResources, ...] = ()
    namespaces: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()
    omit_stages: frozenset[Stage] = frozenset()
    #: None: the policy's ``omitManagedFields`` applies.
    omit_managed_fields: bool | None = None


@dataclass(frozen=True, slots=True)
class Attributes:
    """What the policy decides on: the request's user and what it asks for."""

    user: str
    groups: tuple[str, ...]
    verb: str
    is_resource_request: bool
    path: str = ""
    namespace: str = ""
    api_group: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""


@dataclass(frozen=True, slots=True)
class RequestAuditConfig:
    """The decision for one request (upstream's ``RequestAuditConfig``)."""

    level: Level
    omit_stages: frozenset[Stage] = frozenset()
    omit_managed_fields: bool = False
    #: Which rule decided, counted from 0 (None: no rule matched); for the trace and the tests.
    rule: int | None = None
    #: Whether the level was lowered to ``Metadata`` because the request is about a Secret or a token.
    capped: bool = False


#: (group, resource, subresource) whose bodies are never recorded: Secrets hold credentials, a
#: TokenRequest's answer and a TokenReview's question are bearer tokens.
SENSITIVE = frozenset(
    {
        ("", "secrets", ""),
        ("", "serviceaccounts", "token"),
        ("authentication.k8s.io", "tokenreviews", ""),
    }
)


def is_sensitive(attrs: Attributes) -> bool:
    return attrs.is_resource_request and (attrs.api_group, attrs.resource, attrs.subresource) in SENSITIVE


@dataclass(frozen=True, slots=True)
class Policy:
    """An audit policy: its rules in order, and the defaults they inherit."""

    rules: tuple[PolicyRule, ...] = ()
    omit_stages: frozenset[Stage] = frozenset()
    omit_managed_fields: bool = False
    #: Where it was read from, for messages.
    source: str = field(default="", compare=False)

    def evaluate(self, attrs: Attributes) -> RequestAuditConfig:
        """The level and stages for a request: the first matching rule's (``EvaluatePolicyRule``)."""
        for index, rule in enumerate(self.rules):
            if rule_matches(rule, attrs):
                omit_managed = (
                    self.omit_managed_fields if rule.omit_managed_fields is None else rule.omit_managed_fields
                )
                level, capped = rule.level, False
                if level > Level.METADATA and is_sensitive(attrs):
                    level, capped = Level.METADATA, True
                return RequestAuditConfig(
                    level, self.omit_stages | rule.omit_stages, omit_managed, rule=index, capped=capped
                )
        return RequestAuditConfig(Level.NONE, self.omit_stages, self.omit_managed_fields)


# -- matching (checker.go) ------------------------------------------------------------------------------


def rule_matches(rule: PolicyRule, attrs: Attributes) -> bool:
    """Whether every condition of ``rule`` holds for ``attrs`` (upstream's ``ruleMatches``)."""
    if rule.users and attrs.user not in rule.users:
        return False
    if rule.user_groups and not any(group in rule.user_groups for group in attrs.groups):
        return False
    if rule.verbs and attrs.verb not in rule.verbs:
        return False
    if rule.namespaces or rule.resources:
        return _matches_resource(rule, attrs)
    if rule.non_resource_urls:
        return _matches_non_resource(rule, attrs)
    return True


def _matches_non_resource(rule: PolicyRule, attrs: Attributes) -> bool:
    if attrs.is_resource_request:
        return False
    return any(path_matches(attrs.path, spec) for spec in rule.non_resource_urls)


def path_matches(path: str, spec: str) -> bool:
    """``*``, the exact path, or a prefix ending in ``*`` (upstream's ``pathMatches``)."""
    if spec in ("*", path):
        return True
    return spec.endswith("*") and path.startswith(spec.rstrip("*"))


def _matches_resource(rule: PolicyRule, attrs: Attributes) -> bool:
    if not attrs.is_resource_request:
        return False
    if rule.namespaces and attrs.namespace not in rule.namespaces:
        return False
    if not rule.resources:
        return True
    resource, subresource = attrs.resource, attrs.subresource
    combined = f"{resource}/{subresource}" if subresource else resource
    for gr in rule.resources:
        if gr.group != attrs.api_group:
            continue
        if not gr.resources:
            return True
        if gr.resource_names and attrs.name not in gr.resource_names:
            continue
        for res in gr.resources:
            if res in (combined, "*"):
                return True
            if subresource and res.startswith("*/") and res[2:] == subresource:
                return True
            if res.endswith("/*") and res[:-2] == resource:
                return True
    return False


# -- reading (reader.go, validation) --------------------------------------------------------------------


def parse_policy(document: object, source: str = "") -> Policy:
    """The policy in a decoded ``audit.k8s.io/v1`` ``Policy`` document; ``InvalidPolicy`` says why not."""
    problems: list[str] = []
    if not isinstance(document, Mapping):
        raise InvalidPolicy(["the document must be a Policy object"], source)
    if document.get("apiVersion") != API_VERSION or document.get("kind") != "Policy":
        problems.append(
            f"apiVersion/kind: expected {API_VERSION} Policy, "
            f"got {document.get('apiVersion')!r} {document.get('kind')!r}"
        )
    rules_doc = document.get("rules")
    if not isinstance(rules_doc, list) or not rules_doc:
        problems.append("rules: Required value: a policy needs at least one rule")
        rules_doc = []
    omit_stages = _stages(document.get("omitStages"), "omitStages", problems)
    omit_managed = _bool(document.get("omitManagedFields"), "omitManagedFields", problems) or False
    rules = []
    for index, rule_doc in enumerate(rules_doc):
        rule = _rule(rule_doc, f"rules[{index}]", problems)
        if rule is not None:
            rules.append(rule)
    if problems:
        raise InvalidPolicy(problems, source)
    return Policy(tuple(rules), omit_stages, omit_managed, source=source)


_RULE_FIELDS = frozenset(
    {
        "level",
        "users",
        "userGroups",
        "verbs",
        "resources",
        "namespaces",
        "nonResourceURLs",
        "omitStages",
        "omitManagedFields",
    }
)


def _rule(doc: object, path: str, problems: list[str]) -> PolicyRule | None:
    if not isinstance(doc, Mapping):
        problems.append(f"{path}: must be an object")
        return None
    if unknown := sorted(set(doc) - _RULE_FIELDS):
        problems.append(f"{path}: unknown field(s) {', '.join(map(repr, unknown))}")
    try:
        level = Level.parse(doc.get("level"))
    except ValueError as error:
        problems.append(f"{path}.level: {error}" if "level" in doc else f"{path}.level: Required value")
        level = Level.NONE
    resources: list[GroupResources] = []
    resources_doc = doc.get("resources") or []
    if not isinstance(resources_doc, list):
        problems.append(f"{path}.resources: must be a list")
        resources_doc = []
    for i, gr in enumerate(resources_doc):
        where = f"{path}.resources[{i}]"
        if not isinstance(gr, Mapping):
            problems.append(f"{where}: must be an object")
            continue
        group = gr.get("group", "")
        if not isinstance(group, str):
            problems.append(f"{where}.group: must be a string")
            group = ""
        names = _strings(gr.get("resourceNames"), f"{where}.resourceNames", problems)
        plural = _strings(gr.get("resources"), f"{where}.resources", problems)
        if names and not plural:
            problems.append(f"{where}.resourceNames: resourceNames require a resources list")
        resources.append(GroupResources(group, plural, names))
    namespaces = _strings(doc.get("namespaces"), f"{path}.namespaces", problems)
    urls = _strings(doc.get("nonResourceURLs"), f"{path}.nonResourceURLs", problems)
    if urls and (resources or namespaces):
        problems.append(f"{path}: rules cannot apply to both regular resources and non-resource URLs")
    for url in urls:
        if url != "*" and (not url.startswith("/") or "*" in url[:-1]):
            problems.append(
                f"{path}.nonResourceURLs: {url!r}: a non-resource URL starts with '/' and may end in one '*'"
            )
    omit_managed = _bool(doc.get("omitManagedFields"), f"{path}.omitManagedFields", problems)
    return PolicyRule(
        level=level,
        users=_strings(doc.get("users"), f"{path}.users", problems),
        user_groups=_strings(doc.get("userGroups"), f"{path}.userGroups", problems),
        verbs=_strings(doc.get("verbs"), f"{path}.verbs", problems),
        resources=tuple(resources),
        namespaces=namespaces,
        non_resource_urls=urls,
        omit_stages=_stages(doc.get("omitStages"), f"{path}.omitStages", problems),
        omit_managed_fields=omit_managed,
    )


def _strings(value: Any, path: str, problems: list[str]) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        problems.append(f"{path}: must be a list of strings")
        return ()
    return tuple(value)


def _bool(value: Any, path: str, problems: list[str]) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    problems.append(f"{path}: must be true or false")
    return None


def _stages(value: Any, path: str, problems: list[str]) -> frozenset[Stage]:
    stages = set()
    for name in _strings(value, path, problems):
        try:
            stages.add(Stage(name))
        except ValueError:
            problems.append(
                f"{path}: Unsupported value: {name!r}: supported values: {', '.join(s.value for s in Stage)}"
            )
    return frozenset(stages)
