"""Validation of what steers the scheduler: tolerations and affinity.

A node's *taint* (``key=value:NoSchedule``) repels pods; a pod's *toleration* lets it land there
anyway (``Equal`` a value, or ``Exists`` for any value; ``tolerationSeconds`` only for ``NoExecute``,
which also evicts running pods). *Node affinity* attracts a pod to nodes whose labels match selector
terms (required or preferred with a weight 1-100); *pod (anti-)affinity* places it near or away from
other pods, per ``topologyKey`` (a node, a zone...).

Taint effects are also checked on Nodes (``nodes`` imports ``validate_taint_effect``).
Upstream: ``pkg/apis/core/validation/validation.go`` (``ValidateTolerations``, ``validateTaintEffect``,
``validateAffinity``, ``ValidateNodeSelectorRequirement``, ``validatePodAffinityTerm``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from controlplane.api.strategies.common import (
    as_dict,
    as_list,
    as_str,
    child,
    index,
    is_int,
    label_name,
    validate_label_selector,
)
from controlplane.api.validation import (
    FieldError,
    forbidden,
    invalid,
    is_label_value,
    not_supported,
    required,
)

TAINT_EFFECTS: Final = ["NoSchedule", "PreferNoSchedule", "NoExecute"]

TOLERATION_OPERATORS: Final = ["Equal", "Exists"]


def validate_tolerations(tolerations: Any, path: str) -> list[FieldError]:
    """``ValidateTolerations``: key, operator (Equal/Exists) and effect."""
    errors: list[FieldError] = []
    for i, toleration in enumerate(as_list(tolerations)):
        toleration = as_dict(toleration)
        item = index(path, i)
        tol_key = as_str(toleration.get("key"))
        operator = as_str(toleration.get("operator"))
        effect = as_str(toleration.get("effect"))
        value = as_str(toleration.get("value"))
        if tol_key:
            errors += label_name(tol_key, child(item, "key"))
        if not tol_key and operator != "Exists":
            errors.append(
                invalid(
                    child(item, "operator"),
                    operator,
                    "operator must be Exists when `key` is empty, which means "
                    '"match all values and all keys"',
                )
            )
        if toleration.get("tolerationSeconds") is not None and effect != "NoExecute":
            errors.append(
                invalid(
                    child(item, "effect"),
                    effect,
                    "effect must be 'NoExecute' when `tolerationSeconds` is set",
                )
            )
        if operator in ("Equal", ""):
            messages = is_label_value(value)
            if messages:
                errors.append(invalid(child(item, "operator"), value, ";".join(messages)))
        elif operator == "Exists":
            if value:
                errors.append(
                    invalid(child(item, "operator"), value, "value must be empty when `operator` is 'Exists'")
                )
        else:
            errors.append(not_supported(child(item, "operator"), operator, TOLERATION_OPERATORS))
        if effect:
            errors += validate_taint_effect(effect, child(item, "effect"))
    return errors


def validate_taint_effect(effect: str, path: str, *, allow_empty: bool = True) -> list[FieldError]:
    if not effect:
        return [] if allow_empty else [required(path)]
    if effect not in TAINT_EFFECTS:
        return [not_supported(path, effect, TAINT_EFFECTS)]
    return []


def _validate_node_selector_requirement(
    requirement: Mapping[str, Any], path: str, *, strict_values: bool
) -> list[FieldError]:
    errors: list[FieldError] = []
    operator = requirement.get("operator")
    values = as_list(requirement.get("values"))
    if operator in ("In", "NotIn"):
        if not values:
            errors.append(
                required(child(path, "values"), "must be specified when `operator` is 'In' or 'NotIn'")
            )
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            errors.append(
                forbidden(
                    child(path, "values"),
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                )
            )
    elif operator in ("Gt", "Lt"):
        if len(values) != 1:
            errors.append(
                required(
                    child(path, "values"), "must be specified single value when `operator` is 'Lt' or 'Gt'"
                )
            )
    else:
        errors.append(invalid(child(path, "operator"), as_str(operator), "not a valid selector operator"))
    errors += label_name(as_str(requirement.get("key")), child(path, "key"))
    if strict_values:
        for i, value in enumerate(values):
            errors += [
                invalid(index(child(path, "values"), i), value, m) for m in is_label_value(as_str(value))
            ]
    return errors


def _validate_node_selector_term(
    term: Mapping[str, Any], path: str, *, strict_values: bool
) -> list[FieldError]:
    errors: list[FieldError] = []
    for j, requirement in enumerate(as_list(term.get("matchExpressions"))):
        errors += _validate_node_selector_requirement(
            as_dict(requirement), index(child(path, "matchExpressions"), j), strict_values=strict_values
        )
    for j, requirement in enumerate(as_list(term.get("matchFields"))):
        requirement = as_dict(requirement)
        req_path = index(child(path, "matchFields"), j)
        if requirement.get("operator") in ("In", "NotIn"):
            if len(as_list(requirement.get("values"))) != 1:
                errors.append(
                    required(
                        child(req_path, "values"),
                        "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
                    )
                )
        else:
            errors.append(
                invalid(
                    child(req_path, "operator"),
                    as_str(requirement.get("operator")),
                    "not a valid selector operator",
                )
            )
        if requirement.get("key") != "metadata.name":
            errors.append(
                invalid(
                    child(req_path, "key"), as_str(requirement.get("key")), "not a valid field selector key"
                )
            )
    return errors


def _validate_pod_affinity_term(term: Mapping[str, Any], path: str) -> list[FieldError]:
    errors = validate_label_selector(term.get("labelSelector"), child(path, "labelSelector"))
    errors += validate_label_selector(term.get("namespaceSelector"), child(path, "namespaceSelector"))
    for name in as_list(term.get("namespaces")):
        errors += [invalid(child(path, "namespace"), name, m) for m in _dns_label_messages(as_str(name))]
    topology_key = as_str(term.get("topologyKey"))
    if not topology_key:
        errors.append(required(child(path, "topologyKey"), "can not be empty"))
    return errors + label_name(topology_key, child(path, "topologyKey"))


def _dns_label_messages(value: str) -> list[str]:
    from controlplane.api.validation import is_dns1123_label

    return is_dns1123_label(value)


def validate_affinity(affinity: Any, path: str) -> list[FieldError]:
    """``validateAffinity``: node affinity terms and pod (anti-)affinity terms."""
    if affinity is None:
        return []
    affinity = as_dict(affinity)
    errors: list[FieldError] = []
    node = affinity.get("nodeAffinity")
    if isinstance(node, dict):
        node_path = child(path, "nodeAffinity")
        required_terms = node.get("requiredDuringSchedulingIgnoredDuringExecution")
        if required_terms is not None:
            req_path = child(
                child(node_path, "requiredDuringSchedulingIgnoredDuringExecution"), "nodeSelectorTerms"
            )
            terms = as_list(as_dict(required_terms).get("nodeSelectorTerms"))
            if not terms:
                errors.append(required(req_path, "must have at least one node selector term"))
            for i, term in enumerate(terms):
                errors += _validate_node_selector_term(as_dict(term), index(req_path, i), strict_values=True)
        for i, preferred in enumerate(as_list(node.get("preferredDuringSchedulingIgnoredDuringExecution"))):
            preferred = as_dict(preferred)
            item = index(child(node_path, "preferredDuringSchedulingIgnoredDuringExecution"), i)
            weight = preferred.get("weight")
            if not is_int(weight) or not 0 < weight <= 100:
                errors.append(invalid(child(item, "weight"), weight, "must be in the range 1-100"))
            errors += _validate_node_selector_term(
                as_dict(preferred.get("preference")), child(item, "preference"), strict_values=False
            )
    for kind in ("podAffinity", "podAntiAffinity"):
        body = affinity.get(kind)
        if not isinstance(body, dict):
            continue
        kind_path = child(path, kind)
        for i, term in enumerate(as_list(body.get("requiredDuringSchedulingIgnoredDuringExecution"))):
            errors += _validate_pod_affinity_term(
                as_dict(term), index(child(kind_path, "requiredDuringSchedulingIgnoredDuringExecution"), i)
            )
        for i, weighted in enumerate(as_list(body.get("preferredDuringSchedulingIgnoredDuringExecution"))):
            weighted = as_dict(weighted)
            item = index(child(kind_path, "preferredDuringSchedulingIgnoredDuringExecution"), i)
            weight = weighted.get("weight")
            if not is_int(weight) or not 0 < weight <= 100:
                errors.append(invalid(child(item, "weight"), weight, "must be in the range 1-100"))
            errors += _validate_pod_affinity_term(
                as_dict(weighted.get("podAffinityTerm")), child(item, "podAffinityTerm")
            )
    return errors
