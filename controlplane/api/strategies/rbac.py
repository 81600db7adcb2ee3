"""RBAC: Roles say what may be done, RoleBindings say who may do it.

A **Role** (namespaced) or **ClusterRole** lists rules: ``verbs`` on ``resources`` in ``apiGroups``
(``""`` is the core group), optionally narrowed to ``resourceNames``; a ClusterRole may also grant
``nonResourceURLs`` such as ``/healthz`` (a namespaced Role cannot: URLs have no namespace). Every rule
needs at least one verb, and a resource rule at least one API group and one resource: an empty list
would match nothing, which is almost certainly a mistake, so the API server refuses it
(``rules[0].apiGroups: Required value: resource rules must supply at least one api group``).

A **RoleBinding**/**ClusterRoleBinding** grants a role to ``subjects``: ``User`` and ``Group``
(``apiGroup: rbac.authorization.k8s.io``, defaulted) or ``ServiceAccount`` (core group, and a
namespace when bound cluster-wide). Its ``roleRef`` is **immutable** (``roleRef: Invalid value:
{"APIGroup":...}: cannot change roleRef``): a binding means "these subjects have that role", and
silently repointing it would change what everyone bound has without anyone noticing. To change the
role, delete the binding and create a new one.

RBAC object names are only required to be usable in a URL (``path.IsValidPathSegmentName``), which is
why ``system:controller:deployment-controller`` is a valid ClusterRole name. Checking that the
creator holds the permissions it grants (escalation) is authorization's job, not validation's: the API
server's RBAC registries run it before this validation (``controlplane/apiserver/authz/escalation.py``).

Upstream: ``pkg/apis/rbac/validation/validation.go``, ``pkg/apis/rbac/v1/defaults.go``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from controlplane.api.meta import Object
from controlplane.api.strategies.common import (
    KindStrategy,
    as_dict,
    as_list,
    as_str,
    child,
    go_json,
    go_string_slice,
    index,
    invalid_go,
    is_valid_path_segment_name,
    validate_label_selector,
)
from controlplane.api.validation import (
    FieldError,
    invalid,
    is_dns1123_subdomain,
    not_supported,
    required,
    validate_object_meta_update,
)

GROUP: Final = "rbac.authorization.k8s.io"
SUBJECT_KINDS: Final = ["ServiceAccount", "User", "Group"]


def validate_policy_rule(rule: Mapping[str, Any], *, namespaced: bool, path: str) -> list[FieldError]:
    """``ValidatePolicyRule``."""
    errors: list[FieldError] = []
    if not as_list(rule.get("verbs")):
        errors.append(required(child(path, "verbs"), "verbs must contain at least one value"))
    urls = as_list(rule.get("nonResourceURLs"))
    if urls:
        if namespaced:
            errors.append(
                invalid_go(
                    child(path, "nonResourceURLs"),
                    go_string_slice(urls),
                    "namespaced rules cannot apply to non-resource URLs",
                    urls,
                )
            )
        if (
            as_list(rule.get("apiGroups"))
            or as_list(rule.get("resources"))
            or as_list(rule.get("resourceNames"))
        ):
            errors.append(
                invalid_go(
                    child(path, "nonResourceURLs"),
                    go_string_slice(urls),
                    "rules cannot apply to both regular resources and non-resource URLs",
                    urls,
                )
            )
        return errors
    if not as_list(rule.get("apiGroups")):
        errors.append(required(child(path, "apiGroups"), "resource rules must supply at least one api group"))
    resources = as_list(rule.get("resources"))
    if not resources:
        errors.append(required(child(path, "resources"), "resource rules must supply at least one resource"))
    if as_list(rule.get("resourceNames")) and len(resources) > 1:
        errors.append(
            required(child(path, "resourceNames"), "resource names cannot apply to multiple resources")
        )
    return errors


def _validate_rules(obj: Object, *, namespaced: bool) -> list[FieldError]:
    errors: list[FieldError] = []
    for i, rule in enumerate(as_list(obj.get("rules"))):
        errors += validate_policy_rule(as_dict(rule), namespaced=namespaced, path=index("rules", i))
    return errors


def _default_binding(obj: Object) -> None:
    """``SetDefaults_RoleBinding``/``ClusterRoleBinding`` and ``SetDefaults_Subject``."""
    role_ref = obj.get("roleRef")
    if isinstance(role_ref, dict) and not role_ref.get("apiGroup"):
        role_ref["apiGroup"] = GROUP
    for subject in as_list(obj.get("subjects")):
        if (
            isinstance(subject, dict)
            and not subject.get("apiGroup")
            and subject.get("kind") in ("User", "Group")
        ):
            subject["apiGroup"] = GROUP


def _validate_subject(subject: Mapping[str, Any], *, namespaced: bool, path: str) -> list[FieldError]:
    """``validateRoleBindingSubject``."""
    errors: list[FieldError] = []
    name = as_str(subject.get("name"))
    api_group = as_str(subject.get("apiGroup"))
    if not name:
        errors.append(required(child(path, "name")))
    kind = subject.get("kind")
    if kind == "ServiceAccount":
        if name:
            errors += [invalid(child(path, "name"), name, m) for m in is_dns1123_subdomain(name)]
        if api_group:
            errors.append(not_supported(child(path, "apiGroup"), api_group, [""]))
        if not namespaced and not subject.get("namespace"):
            errors.append(required(child(path, "namespace")))
    elif kind in ("User", "Group"):
        if not name:
            errors.append(invalid(child(path, "name"), name, f"{str(kind).lower()} name cannot be empty"))
        if api_group != GROUP:
            errors.append(not_supported(child(path, "apiGroup"), api_group, [GROUP]))
    else:
        errors.append(not_supported(child(path, "kind"), as_str(kind), SUBJECT_KINDS))
    return errors


def _go_role_ref(role_ref: Any) -> str:
    """The internal ``rbac.RoleRef`` as a field error prints it (JSON with Go field names)."""
    ref = as_dict(role_ref)
    return go_json(
        {
            "APIGroup": as_str(ref.get("apiGroup")),
            "Kind": as_str(ref.get("kind")),
            "Name": as_str(ref.get("name")),
        }
    )


class RoleStrategy(KindStrategy):
    """Roles: namespaced rules, no non-resource URLs."""

    name_validator = staticmethod(is_valid_path_segment_name)
    namespaced_rules = True

    def validate(self, obj: Object, *, namespaced: bool) -> list[FieldError]:
        return self.validate_meta(obj, namespaced=namespaced) + _validate_rules(
            obj, namespaced=self.namespaced_rules
        )

    def validate_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidateRoleUpdate``: the role, then the metadata rules."""
        return self.validate(obj, namespaced=namespaced) + validate_object_meta_update(
            obj["metadata"], old["metadata"]
        )


class ClusterRoleStrategy(RoleStrategy):
    """ClusterRoles: rules may name non-resource URLs; an aggregation rule needs selectors."""

    namespaced_rules = False

    def validate(self, obj: Object, *, namespaced: bool) -> list[FieldError]:
        errors = super().validate(obj, namespaced=namespaced)
        aggregation = obj.get("aggregationRule")
        if aggregation is not None:
            path = "aggregationRule.clusterRoleSelectors"
            selectors = as_list(as_dict(aggregation).get("clusterRoleSelectors"))
            if not selectors:
                errors.append(
                    required(path, "at least one clusterRoleSelector required if aggregationRule is non-nil")
                )
            for i, selector in enumerate(selectors):
                errors += validate_label_selector(selector, index(path, i))
        return errors


class RoleBindingStrategy(KindStrategy):
    """RoleBindings: a roleRef to a Role or ClusterRole, fixed for the binding's lifetime."""

    name_validator = staticmethod(is_valid_path_segment_name)
    role_kinds: tuple[str, ...] = ("Role", "ClusterRole")
    namespaced_subjects = True

    def default(self, obj: Object) -> None:
        _default_binding(obj)

    def validate(self, obj: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidateRoleBinding`` / ``ValidateClusterRoleBinding``."""
        errors = self.validate_meta(obj, namespaced=namespaced)
        role_ref = as_dict(obj.get("roleRef"))
        api_group = as_str(role_ref.get("apiGroup"))
        if api_group != GROUP:
            errors.append(not_supported("roleRef.apiGroup", api_group, [GROUP]))
        kind = as_str(role_ref.get("kind"))
        if kind not in self.role_kinds:
            errors.append(not_supported("roleRef.kind", kind, list(self.role_kinds)))
        name = as_str(role_ref.get("name"))
        if not name:
            errors.append(required("roleRef.name"))
        else:
            errors += [invalid("roleRef.name", name, m) for m in is_valid_path_segment_name(name)]
        for i, subject in enumerate(as_list(obj.get("subjects"))):
            errors += _validate_subject(
                as_dict(subject), namespaced=self.namespaced_subjects, path=index("subjects", i)
            )
        return errors

    def validate_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidateRoleBindingUpdate``: and the roleRef may not change."""
        errors = self.validate(obj, namespaced=namespaced)
        errors += validate_object_meta_update(obj["metadata"], old["metadata"])
        new_ref, old_ref = as_dict(obj.get("roleRef")), as_dict(old.get("roleRef"))
        fields = ("apiGroup", "kind", "name")
        if any(as_str(new_ref.get(f)) != as_str(old_ref.get(f)) for f in fields):
            errors.append(invalid_go("roleRef", _go_role_ref(new_ref), "cannot change roleRef", new_ref))
        return errors


class ClusterRoleBindingStrategy(RoleBindingStrategy):
    """ClusterRoleBindings: only ClusterRoles; service-account subjects must name their namespace."""

    role_kinds = ("ClusterRole",)
    namespaced_subjects = False


__all__ = [
    "ClusterRoleBindingStrategy",
    "ClusterRoleStrategy",
    "RoleBindingStrategy",
    "RoleStrategy",
    "validate_policy_rule",
]
