"""RBAC, role-based access control: rules in roles, roles granted by bindings.

A **rule** (``PolicyRule``) says which ``verbs`` may be done on which ``resources`` of which
``apiGroups`` (``""`` is the core group), optionally only on the objects named in ``resourceNames``;
or, in a ClusterRole, which ``verbs`` may be done on which ``nonResourceURLs`` (``/healthz``,
``/apis/*``). ``*`` matches anything; ``*/scale`` matches the ``scale`` subresource of any resource;
a URL ending in ``*`` matches every path that starts with the rest.

A **Role** holds rules for one namespace; a **ClusterRole** holds rules that a ClusterRoleBinding
grants everywhere, or that a RoleBinding grants in its own namespace only. A **binding** grants one
role (``roleRef``) to its ``subjects``: a ``User`` (by name), a ``Group`` (any user in it) or a
``ServiceAccount`` (the user ``system:serviceaccount:<namespace>:<name>``).

To decide, the RBAC authorizer walks every ClusterRoleBinding, then every RoleBinding of the request's
namespace; for each binding that names the user (or one of its groups) it reads the role and checks its
rules one by one. The first rule that fits allows the request: there is nothing to deny, permissions
only add up. If none fits, RBAC has *no opinion* and the request is refused by default.

This module is pure: it reads roles and bindings through a :class:`PolicySource` (in the API server,
the watch caches: :mod:`.policy`), and explains every decision.

Upstream: ``pkg/registry/rbac/validation/rule.go`` (``VisitRulesFor``, ``appliesTo``, the binding
describers), ``plugin/pkg/auth/authorizer/rbac/rbac.go`` (``RuleAllows``), ``pkg/apis/rbac/v1/
evaluation_helpers.go`` (``VerbMatches``, ``ResourceMatches``, ``NonResourceURLMatches``).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from controlplane.api.meta import object_meta
from controlplane.apiserver.authz.authorizer import Attributes, Decision, Verdict
from controlplane.identity import SERVICE_ACCOUNT_USER_PREFIX, UserInfo

Object = Mapping[str, Any]
Rule = Mapping[str, Any]

ALL = "*"
#: How many rules of one binding's role an explanation describes before it says "and N more".
EXPLAINED_RULES = 4


class PolicySource(Protocol):
    """Where RBAC reads its objects (upstream: the RoleGetter/RoleBindingLister ... informer listers)."""

    def cluster_role_bindings(self) -> Sequence[Object]: ...

    def role_bindings(self, namespace: str) -> Sequence[Object]: ...

    def cluster_role(self, name: str) -> Object | None: ...

    def role(self, namespace: str, name: str) -> Object | None: ...

    def generation(self) -> Hashable:
        """Changes whenever any Role, ClusterRole or binding does (decisions may be reused until)."""
        ...


@dataclass(frozen=True, slots=True)
class StaticPolicy:
    """A :class:`PolicySource` over plain lists (tests, and the bootstrap policy before it is stored)."""

    roles: Sequence[Object] = ()
    role_bindings_: Sequence[Object] = ()
    cluster_roles: Sequence[Object] = ()
    cluster_role_bindings_: Sequence[Object] = ()

    def cluster_role_bindings(self) -> Sequence[Object]:
        return self.cluster_role_bindings_

    def generation(self) -> Hashable:
        return id(self)  # immutable: another policy is another object

    def role_bindings(self, namespace: str) -> Sequence[Object]:
        return [b for b in self.role_bindings_ if object_meta(b).get("namespace") == namespace]

    def cluster_role(self, name: str) -> Object | None:
        return next((r for r in self.cluster_roles if object_meta(r).get("name") == name), None)

    def role(self, namespace: str, name: str) -> Object | None:
        return next(
            (
                r
                for r in self.roles
                if object_meta(r).get("name") == name and object_meta(r).get("namespace") == namespace
            ),
            None,
        )


_NONE: list[str] = []


def _strings(rule: Rule, key: str) -> list[str]:
    """A rule's list field (validation made it a list of strings; anything else reads as empty).

    This runs for every rule of every request, so it returns the stored list itself.
    """
    value = rule.get(key)
    return value if isinstance(value, list) else _NONE


# -- one rule against one request ------------------------------------------------------------------


def verb_matches(rule: Rule, verb: str) -> bool:
    verbs = _strings(rule, "verbs")
    return ALL in verbs or verb in verbs


def api_group_matches(rule: Rule, group: str) -> bool:
    groups = _strings(rule, "apiGroups")
    return ALL in groups or group in groups


def resource_matches(rule: Rule, combined: str, subresource: str) -> bool:
    """``*``, the exact ``pods/status``, or ``*/status`` for any resource's ``status``."""
    for resource in _strings(rule, "resources"):
        if resource in (ALL, combined):
            return True
        if subresource and resource == f"*/{subresource}":
            return True
    return False


def resource_name_matches(rule: Rule, name: str) -> bool:
    names = _strings(rule, "resourceNames")
    return not names or name in names


def non_resource_url_matches(rule: Rule, path: str) -> bool:
    for url in _strings(rule, "nonResourceURLs"):
        if url in (ALL, path):
            return True
        if url.endswith("*") and path.startswith(url[:-1]):
            return True
    return False


def rule_allows(attrs: Attributes, rule: Rule) -> bool:
    """Upstream's ``RuleAllows``: does this one rule grant the request?"""
    if attrs.resource_request:
        return (
            verb_matches(rule, attrs.verb)
            and api_group_matches(rule, attrs.api_group)
            and resource_matches(rule, attrs.combined_resource, attrs.subresource)
            and resource_name_matches(rule, attrs.name)
        )
    return verb_matches(rule, attrs.verb) and non_resource_url_matches(rule, attrs.path)


def rules_allow(attrs: Attributes, rules: Sequence[Rule]) -> bool:
    return any(rule_allows(attrs, rule) for rule in rules)


def _listed(values: list[str]) -> str:
    return "[" + " ".join(values) + "]"


def why_not(attrs: Attributes, rule: Rule) -> str:
    """Why ``rule`` does not grant the request, in words (the first field that does not fit)."""
    if not verb_matches(rule, attrs.verb):
        return f'verbs {_listed(_strings(rule, "verbs"))} do not include "{attrs.verb}"'
    if not attrs.resource_request:
        if not _strings(rule, "nonResourceURLs"):
            return "it is about resources, not paths"
        return f'nonResourceURLs {_listed(_strings(rule, "nonResourceURLs"))} do not match "{attrs.path}"'
    if not _strings(rule, "resources"):
        return "it is about non-resource URLs, not resources"
    if not api_group_matches(rule, attrs.api_group):
        return f'apiGroups {_listed(_strings(rule, "apiGroups"))} do not include "{attrs.api_group}"'
    if not resource_matches(rule, attrs.combined_resource, attrs.subresource):
        return f'resources {_listed(_strings(rule, "resources"))} do not include "{attrs.combined_resource}"'
    names = _listed(_strings(rule, "resourceNames"))
    if not attrs.name:
        return f"it only allows the objects named {names}, and the request names none"
    return f'resourceNames {names} do not include "{attrs.name}"'


# -- subjects and bindings -------------------------------------------------------------------------


def applies_to_user(user: UserInfo, subject: Mapping[str, Any], namespace: str) -> bool:
    """Upstream's ``appliesToUser``: does this binding subject name the user?

    A ServiceAccount subject without a namespace means the binding's own namespace.
    """
    kind = subject.get("kind")
    name = subject.get("name")
    if kind == "User":
        return user.username == name
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        sa_namespace = subject.get("namespace") or namespace
        if not sa_namespace:
            return False
        return user.username == f"{SERVICE_ACCOUNT_USER_PREFIX}{sa_namespace}:{name}"
    return False


def applies_to(user: UserInfo, binding: Object, namespace: str) -> Mapping[str, Any] | None:
    """The first subject of ``binding`` that names the user, or None."""
    subjects = binding.get("subjects")
    for subject in subjects if isinstance(subjects, list) else ():
        if isinstance(subject, Mapping) and applies_to_user(user, subject, namespace):
            return subject
    return None


def describe_subject(subject: Mapping[str, Any], binding_namespace: str) -> str:
    """``User "alice"``, ``Group "system:masters"``, ``ServiceAccount "default/team-a"`` (upstream
    prints a ServiceAccount as name/namespace)."""
    kind, name = subject.get("kind"), subject.get("name")
    if kind == "ServiceAccount":
        return f'{kind} "{name}/{subject.get("namespace") or binding_namespace}"'
    return f'{kind} "{name}"'


def describe_binding(binding: Object) -> str:
    """``ClusterRoleBinding "x"`` or ``RoleBinding "x/ns"`` (upstream's describers)."""
    meta = object_meta(binding)
    if meta.get("namespace"):
        return f'RoleBinding "{meta.get("name")}/{meta.get("namespace")}"'
    return f'ClusterRoleBinding "{meta.get("name")}"'


def describe_role_ref(binding: Object) -> str:
    ref = binding.get("roleRef")
    ref = ref if isinstance(ref, Mapping) else {}
    return f'{ref.get("kind")} "{ref.get("name")}"'


class RoleRefNotFound(Exception):
    """A binding names a role that does not exist (upstream's lister NotFound)."""


def role_ref_rules(source: PolicySource, binding: Object, namespace: str) -> list[Rule]:
    """Upstream's ``GetRoleReferenceRules``; raises :class:`RoleRefNotFound` with upstream's message."""
    ref = binding.get("roleRef")
    ref = ref if isinstance(ref, Mapping) else {}
    kind, name = ref.get("kind"), str(ref.get("name") or "")
    if kind == "Role":
        role = source.role(namespace, name)
        if role is None:
            raise RoleRefNotFound(f'role.rbac.authorization.k8s.io "{name}" not found')
    elif kind == "ClusterRole":
        role = source.cluster_role(name)
        if role is None:
            raise RoleRefNotFound(f'clusterrole.rbac.authorization.k8s.io "{name}" not found')
    else:
        raise RoleRefNotFound(f'unsupported role reference kind: "{kind}"')
    rules = role.get("rules")
    return [r for r in rules if isinstance(r, Mapping)] if isinstance(rules, list) else []


@dataclass(frozen=True, slots=True)
class Grant:
    """The rules one binding grants a user: what ``VisitRulesFor`` visits."""

    binding: Object
    subject: Mapping[str, Any]
    rules: Sequence[Rule]
    #: Why the binding's role could not be read ("" if it could).
    error: str = ""

    @property
    def source(self) -> str:
        """Upstream's describer: ``ClusterRoleBinding "x" of ClusterRole "y" to User "z"``."""
        namespace = str(object_meta(self.binding).get("namespace") or "")
        return (
            f"{describe_binding(self.binding)} of {describe_role_ref(self.binding)} to "
            f"{describe_subject(self.subject, namespace)}"
        )


def grants_for(source: PolicySource, user: UserInfo, namespace: str) -> Iterator[Grant]:
    """Every binding that names ``user``: ClusterRoleBindings first, then the namespace's RoleBindings."""
    for binding in source.cluster_role_bindings():
        yield from _grant(source, user, binding, "")
    if namespace:
        for binding in source.role_bindings(namespace):
            yield from _grant(source, user, binding, namespace)


def _grant(source: PolicySource, user: UserInfo, binding: Object, namespace: str) -> Iterator[Grant]:
    subject = applies_to(user, binding, namespace)
    if subject is None:
        return
    try:
        yield Grant(binding, subject, role_ref_rules(source, binding, namespace))
    except RoleRefNotFound as error:
        yield Grant(binding, subject, (), str(error))


def rules_for(source: PolicySource, user: UserInfo, namespace: str) -> tuple[list[Rule], list[str]]:
    """Every rule that applies to ``user`` in ``namespace`` and the resolution errors (``RulesFor``)."""
    rules: list[Rule] = []
    errors: list[str] = []
    for grant in grants_for(source, user, namespace):
        rules.extend(grant.rules)
        if grant.error:
            errors.append(grant.error)
    return rules, errors


def _rule_json(rule: Rule) -> dict[str, Any]:
    keys = ("verbs", "apiGroups", "resources", "resourceNames", "nonResourceURLs")
    return {k: list(_strings(rule, k)) for k in keys if _strings(rule, k)}


def _why_no_rule_fits(attrs: Attributes, rules: Sequence[Rule]) -> str:
    if not rules:
        return "its role has no rules"
    shown = [f"rule {i + 1}: {why_not(attrs, rule)}" for i, rule in enumerate(rules[:EXPLAINED_RULES])]
    more = f"; and {len(rules) - EXPLAINED_RULES} more rules" if len(rules) > EXPLAINED_RULES else ""
    return "; ".join(shown) + more


#: The name in a remembered decision's key that stands for every name (no string is this object).
ANY_NAME = object()

#: Decisions an RBAC authorizer remembers at most (all are forgotten when the policy changes).
DECISION_CACHE_SIZE = 10_000


class RBACAuthorizer:
    """Upstream's ``RBACAuthorizer``: allow if any rule granted to the user fits, else no opinion."""

    name = "RBAC"

    def __init__(self, source: PolicySource) -> None:
        self.source = source
        #: Decisions already made, valid while the policy's generation stays the same: components
        #: ask the same few questions thousands of times a minute, and the answer only changes
        #: with a Role or a binding. (Go's RBAC walks the rules for every request; Python is slower.)
        self._decisions: dict[tuple[object, ...], Decision] = {}
        self._generation: Hashable = None

    def authorize(self, attrs: Attributes) -> Decision:
        generation = self.source.generation()
        if generation != self._generation or len(self._decisions) >= DECISION_CACHE_SIZE:
            self._decisions.clear()
            self._generation = generation
        user = attrs.user
        key: tuple[object, ...]
        unnamed: tuple[object, ...] | None = None
        if attrs.resource_request:
            # A resource request is judged on its group, resource, verb and namespace, and on its
            # object's name only by rules with ``resourceNames``. A decision that met none of those is
            # the same for every name: kept under ``ANY_NAME``, it serves each pod's request alike.
            unnamed = (
                user.username,
                user.groups,
                attrs.verb,
                True,
                attrs.api_group,
                attrs.resource,
                attrs.subresource,
                attrs.namespace,
                ANY_NAME,
            )
            decision = self._decisions.get(unnamed)
            if decision is not None:
                return decision
            key = (*unnamed[:-1], attrs.name)
        else:
            key = (user.username, user.groups, attrs.verb, False, attrs.path)
        decision = self._decisions.get(key)
        if decision is None:
            decision, any_name = self._authorize(attrs)
            self._decisions[unnamed if any_name and unnamed is not None else key] = decision
        return decision

    def _authorize(self, attrs: Attributes) -> tuple[Decision, bool]:
        """The decision, and whether it holds for any object name (an allowance no rule before it,
        nor itself, narrowed by ``resourceNames``; a refusal's explanation names the object)."""
        considered: list[Mapping[str, str]] = []
        errors: list[str] = []
        any_name = True
        for grant in grants_for(self.source, attrs.user, attrs.namespace):
            if grant.error:
                errors.append(grant.error)
                considered.append(self._considered(grant, f"its role cannot be read: {grant.error}"))
                continue
            for rule in grant.rules:
                if any_name and _strings(rule, "resourceNames"):
                    any_name = False
                if rule_allows(attrs, rule):
                    return Decision(
                        Verdict.ALLOW,
                        f"RBAC: allowed by {grant.source}",
                        self.name,
                        f"allowed by {grant.source}",
                        binding=describe_binding(grant.binding),
                        role=describe_role_ref(grant.binding),
                        rule=_rule_json(rule),
                    ), any_name
            considered.append(self._considered(grant, _why_no_rule_fits(attrs, grant.rules)))
        # Upstream's reason for a refusal is empty unless a role could not be read.
        reason = ""
        if errors:
            reason = "RBAC: " + (errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]")
        count = len(considered)
        bound = (
            f"{count} binding{'s' if count != 1 else ''} name the user or its groups; "
            "none of their rules fits"
            if count
            else "no binding names the user or its groups"
        )
        explanation = f"no RBAC rule lets {attrs.user.username} {attrs.describe()} ({bound})"
        return Decision(
            Verdict.NO_OPINION,
            reason,
            self.name,
            explanation,
            considered=tuple(considered),
            errors=tuple(errors),
        ), False

    @staticmethod
    def _considered(grant: Grant, why: str) -> Mapping[str, str]:
        namespace = str(object_meta(grant.binding).get("namespace") or "")
        return {
            "binding": describe_binding(grant.binding),
            "role": describe_role_ref(grant.binding),
            "subject": describe_subject(grant.subject, namespace),
            "why": why,
        }

    def rules_for(self, user: UserInfo, namespace: str) -> tuple[list[Rule], list[str]]:
        return rules_for(self.source, user, namespace)


__all__ = [
    "Grant",
    "PolicySource",
    "RBACAuthorizer",
    "RoleRefNotFound",
    "StaticPolicy",
    "applies_to",
    "applies_to_user",
    "grants_for",
    "role_ref_rules",
    "rule_allows",
    "rules_allow",
    "rules_for",
    "why_not",
]
