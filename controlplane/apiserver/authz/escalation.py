"""Escalation prevention: you cannot grant what you do not hold.

If anyone allowed to create Roles and RoleBindings could write any rule, ``create rolebindings`` would
be as good as cluster-admin: make a role with ``*`` on ``*``, bind it to yourself. So the API server
checks every write of an RBAC object against the **writer's own** permissions:

- creating or updating a Role or ClusterRole needs every permission it grants to be one the writer
  already has (in that namespace), unless the writer may ``escalate`` roles; setting a ClusterRole's
  ``aggregationRule`` needs full authority (it can gather anything);
- creating or updating a RoleBinding or ClusterRoleBinding needs every permission of the role it
  refers to, unless the writer may ``bind`` that role.

A refusal is a 403 naming what is missing, compacted one line per resource::

    clusterrolebindings.rbac.authorization.k8s.io "me-admin" is forbidden: user "student:ada"
    (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
    {APIGroups:["*"], Resources:["*"], Verbs:["*"]}
    {NonResourceURLs:["*"], Verbs:["*"]}

``system:masters`` skips the check (upstream's ``EscalationAllowed``: the API server's own loopback
client is in that group). The check needs the requesting user, which the storage layer does not
otherwise see: the RBAC registries call :class:`EscalationGuard` with the write's ``RequestScope``
(whose ``user`` is who asks) once the object is decoded and admitted, before validation (where
upstream's ``policybased`` storage wrappers run). Internal writes (bootstrap, aggregation) have no
requester and are not checked.

Upstream: ``pkg/registry/rbac/{role,clusterrole,rolebinding,clusterrolebinding}/policybased/
storage.go``, ``pkg/registry/rbac/escalation_check.go``, ``pkg/registry/rbac/validation/rule.go``
(``ConfirmNoEscalation``), ``.../policy_compact.go`` and ``k8s.io/component-helpers/auth/rbac/
validation/policy_comparator.go`` (``Covers``).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from controlplane.apiserver import errors
from controlplane.apiserver.authz.authorizer import Attributes, Authorizer
from controlplane.apiserver.authz.rbac import PolicySource, RoleRefNotFound, role_ref_rules, rules_for
from controlplane.apiserver.requestscope import RequestScope
from controlplane.identity import SYSTEM_MASTERS, UserInfo

Rule = Mapping[str, Any]
GROUP = "rbac.authorization.k8s.io"

#: What ``*`` on everything looks like; needed to set an aggregation rule.
FULL_AUTHORITY: tuple[Rule, ...] = (
    {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
    {"verbs": ["*"], "nonResourceURLs": ["*"]},
)

# -- covers (pure) ---------------------------------------------------------------------------------


def _strings(rule: Rule, key: str) -> list[str]:
    value = rule.get(key)
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def breakdown(rule: Rule) -> list[dict[str, list[str]]]:
    """Upstream's ``BreakdownRule``: one rule per group x resource x verb (x name), and per URL x verb."""
    simple: list[dict[str, list[str]]] = []
    for group in _strings(rule, "apiGroups"):
        for resource in _strings(rule, "resources"):
            for verb in _strings(rule, "verbs"):
                names = _strings(rule, "resourceNames")
                base = {"apiGroups": [group], "resources": [resource], "verbs": [verb]}
                if names:
                    simple.extend({**base, "resourceNames": [name]} for name in names)
                else:
                    simple.append(base)
    for url in _strings(rule, "nonResourceURLs"):
        for verb in _strings(rule, "verbs"):
            simple.append({"nonResourceURLs": [url], "verbs": [verb]})
    return simple


def _has_all(owned: list[str], wanted: list[str]) -> bool:
    return all(w in owned for w in wanted)


def _resources_cover(owned: list[str], wanted: list[str]) -> bool:
    if "*" in owned or _has_all(owned, wanted):
        return True
    for path in wanted:
        if path in owned:
            continue
        if "/" not in path or "*/" + path.split("/", 1)[1] not in owned:
            return False
    return True


def _url_covers(owner: str, path: str) -> bool:
    return owner == path or (owner.endswith("*") and path.startswith(owner.rstrip("*")))


def rule_covers(owner: Rule, sub: Rule) -> bool:
    """upstream ``ruleCovers``."""
    verbs, groups = _strings(owner, "verbs"), _strings(owner, "apiGroups")
    owner_names, sub_names = _strings(owner, "resourceNames"), _strings(sub, "resourceNames")
    return (
        ("*" in verbs or _has_all(verbs, _strings(sub, "verbs")))
        and ("*" in groups or _has_all(groups, _strings(sub, "apiGroups")))
        and _resources_cover(_strings(owner, "resources"), _strings(sub, "resources"))
        and all(
            any(_url_covers(o, path) for o in _strings(owner, "nonResourceURLs"))
            for path in _strings(sub, "nonResourceURLs")
        )
        and (not owner_names or (bool(sub_names) and _has_all(owner_names, sub_names)))
    )


def covers(owner_rules: Sequence[Rule], rules: Sequence[Rule]) -> tuple[bool, list[dict[str, list[str]]]]:
    """Upstream's ``Covers``: whether ``owner_rules`` hold every permission of ``rules``, and the
    missing ones (broken down into simple rules)."""
    missing = [
        sub
        for rule in rules
        for sub in breakdown(rule)
        if not any(rule_covers(owner, sub) for owner in owner_rules)
    ]
    return not missing, missing


def compact(rules: Sequence[dict[str, list[str]]]) -> list[dict[str, list[str]]]:
    """Upstream's ``CompactRules``: simple rules that differ only by verb become one."""
    compacted: list[dict[str, list[str]]] = []
    simple: dict[tuple[str, str, str], dict[str, list[str]]] = {}
    for rule in rules:
        names = rule.get("resourceNames", [])
        if (
            not rule.get("nonResourceURLs")
            and len(rule.get("apiGroups", [])) == 1
            and len(rule.get("resources", [])) == 1
            and len(names) <= 1
        ):
            key = (rule["apiGroups"][0], rule["resources"][0], names[0] if names else "")
            if key in simple:
                simple[key]["verbs"] = simple[key]["verbs"] + list(rule.get("verbs", []))
            else:
                simple[key] = copy.deepcopy(rule)
        else:
            compacted.append(rule)
    return compacted + list(simple.values())


def _go_strings(values: list[str]) -> str:
    """Go's ``%q`` of a ``[]string``: ``["a" "b"]``."""
    return "[" + " ".join('"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' for v in values) + "]"


def compact_string(rule: Mapping[str, list[str]]) -> str:
    """Upstream's ``CompactString``: ``{APIGroups:[""], Resources:["pods"], Verbs:["get"]}``."""
    parts = [
        f"{label}:{_go_strings(rule[key])}"
        for label, key in (
            ("APIGroups", "apiGroups"),
            ("Resources", "resources"),
            ("NonResourceURLs", "nonResourceURLs"),
            ("ResourceNames", "resourceNames"),
            ("Verbs", "verbs"),
        )
        if rule.get(key)
    ]
    return "{" + ", ".join(parts) + "}"


def escalation_error(
    user: UserInfo, owner_rules: Sequence[Rule], resolution_errors: Sequence[str], rules: Sequence[Rule]
) -> str | None:
    """Upstream's ``ConfirmNoEscalation``: None if ``user`` holds every permission of ``rules``,
    else the message saying what it does not hold."""
    held, missing = covers(owner_rules, rules)
    if held:
        return None
    lines = sorted({compact_string(rule) for rule in compact(missing)})
    message = (
        f'user "{user.username}" (groups={_go_strings(list(user.groups))}) is attempting to grant RBAC '
        "permissions not currently held:\n" + "\n".join(lines)
    )
    if resolution_errors:
        message += f"; resolution errors: [{' '.join(resolution_errors)}]"
    return message


# -- the guard on the RBAC registries (adapter) ----------------------------------------------------


def _only_gc_fields_changed(obj: Mapping[str, Any], old: Mapping[str, Any]) -> bool:
    """upstream ``IsOnlyMutatingGCFields``: the write changes only ownerReferences and finalizers."""
    ignored = ("ownerReferences", "finalizers", "managedFields", "resourceVersion", "generation")

    def stripped(o: Mapping[str, Any]) -> dict[str, Any]:
        copied = {k: v for k, v in o.items() if k != "metadata"}
        meta = o.get("metadata") or {}
        copied["metadata"] = {k: v for k, v in meta.items() if k not in ignored}
        return copied

    return stripped(obj) == stripped(old)


def _well_formed(obj: Mapping[str, Any]) -> bool:
    """Whether the fields the check reads have their types (a rule list, a roleRef object)."""
    rules, ref = obj.get("rules"), obj.get("roleRef")
    if rules is not None and not (isinstance(rules, list) and all(isinstance(r, Mapping) for r in rules)):
        return False
    return ref is None or isinstance(ref, Mapping)


class EscalationGuard:
    """Checks one RBAC kind's writes; the registry calls it with (new object, old object or None, the
    write's scope)."""

    def __init__(self, resource: str, authorizer: Authorizer, policy: PolicySource) -> None:
        self.resource = resource  # roles, clusterroles, rolebindings or clusterrolebindings
        self.authorizer = authorizer
        self.policy = policy

    def __call__(self, obj: Mapping[str, Any], old: Mapping[str, Any] | None, scope: RequestScope) -> None:
        user = scope.user
        if user is None or SYSTEM_MASTERS in user.groups:
            return
        if not _well_formed(obj):  # upstream's typed decoder refuses these first: validation will
            return
        if old is not None and _only_gc_fields_changed(obj, old):
            return
        meta = obj.get("metadata") or {}
        name, namespace = str(meta.get("name") or ""), str(meta.get("namespace") or "")
        if self.resource in ("roles", "clusterroles"):
            problem = self._role_problem(user, obj, old, name, namespace)
        else:
            problem = self._binding_problem(user, obj, namespace)
        if problem is not None:
            error = errors.forbidden(self.resource, GROUP, name, problem)
            # Upstream runs the check in the storage layer, before validation: the strip shows it there.
            scope.stage("validation", "deny", f"RBAC escalation check: {error.message}")
            raise error

    def _allowed(self, user: UserInfo, verb: str, resource: str, namespace: str, name: str) -> bool:
        attrs = Attributes(user, verb, api_group=GROUP, resource=resource, namespace=namespace, name=name)
        return self.authorizer.authorize(attrs).allowed

    def _role_problem(
        self,
        user: UserInfo,
        obj: Mapping[str, Any],
        old: Mapping[str, Any] | None,
        name: str,
        namespace: str,
    ) -> str | None:
        # RoleEscalationAuthorized: the request's own name (none on create).
        if self._allowed(user, "escalate", self.resource, namespace, name if old is not None else ""):
            return None
        owner_rules, resolution_errors = rules_for(self.policy, user, namespace)
        rules = list(obj.get("rules") or [])
        problem = escalation_error(user, owner_rules, resolution_errors, rules)
        if problem is not None:
            return problem
        aggregation = obj.get("aggregationRule")
        changed = old is None or aggregation != old.get("aggregationRule")
        if (
            self.resource == "clusterroles"
            and aggregation is not None
            and changed
            and escalation_error(user, owner_rules, resolution_errors, FULL_AUTHORITY) is not None
        ):
            return "must have cluster-admin privileges to use the aggregationRule"
        return None

    def _binding_problem(self, user: UserInfo, obj: Mapping[str, Any], namespace: str) -> str | None:
        ref = obj.get("roleRef") or {}
        kind, role_name = ref.get("kind"), str(ref.get("name") or "")
        if kind in ("Role", "ClusterRole"):
            resource = "roles" if kind == "Role" else "clusterroles"
            if self._allowed(user, "bind", resource, namespace, role_name):  # BindingAuthorized
                return None
        try:
            rules = role_ref_rules(self.policy, obj, namespace)
        except RoleRefNotFound as error:
            return str(error)
        owner_rules, resolution_errors = rules_for(self.policy, user, namespace)
        return escalation_error(user, owner_rules, resolution_errors, rules)


__all__ = [
    "EscalationGuard",
    "breakdown",
    "compact",
    "compact_string",
    "covers",
    "escalation_error",
    "rule_covers",
]
