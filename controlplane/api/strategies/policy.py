"""PodDisruptionBudgets (``policy/v1``): how many of an application's pods may be down at once.

A **PodDisruptionBudget** (PDB) protects the pods its ``selector`` matches from *voluntary*
disruptions: the evictions of ``kubectl drain``, of a cluster autoscaler, of anyone who asks through
the ``pods/<name>/eviction`` subresource. (Involuntary ones, a node that dies, are not asked for and
cannot be refused.) It says either

- ``minAvailable``: at least this many matching pods must stay healthy (an integer, or a percentage
  of the pods the workloads want), or
- ``maxUnavailable``: at most this many may be unhealthy (an integer or a percentage);

never both (``spec: Invalid value: ...: minAvailable and maxUnavailable cannot be both set``). A
percentage is a numeric string ending in ``%`` and at most ``100%``. ``unhealthyPodEvictionPolicy``
says what happens to pods that are running but not Ready: ``IfHealthyBudget`` (the default when
unset) lets them go only while the application has its desired healthy pods, ``AlwaysAllow`` always.

The API server keeps the spec; the **disruption controller** writes the ``status``
(``currentHealthy``, ``desiredHealthy``, ``expectedPods``, ``disruptionsAllowed``, the
``DisruptionAllowed`` condition); the eviction subresource spends ``disruptionsAllowed`` and records
the pods it let go in ``disruptedPods``. A new PDB's status is empty (every count 0: no disruption is
allowed until the controller has looked), and ``metadata.generation`` counts spec changes, so that an
eviction can tell a status computed for an older spec (``observedGeneration``).

The spec is mutable (since Kubernetes 1.15). Names are only checked as URL path segments, as for any
kind without rules of its own (the generic registry's ``ValidatePathSegmentName``), and after the
spec: a PDB called ``Web_Budget`` is fine.

Upstream: ``pkg/apis/policy/validation/validation.go`` (``ValidatePodDisruptionBudget``,
``ValidatePodDisruptionBudgetStatusUpdate``), ``pkg/registry/policy/poddisruptionbudget/strategy.go``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from controlplane.api.meta import Object
from controlplane.api.strategies.common import (
    KindStrategy,
    as_dict,
    as_list,
    as_str,
    child,
    go_int_or_string,
    go_json,
    go_quote,
    index,
    invalid_go,
    is_int,
    is_valid_path_segment_name,
    label_name,
    nonnegative,
    spec_of,
    validate_label_selector,
)
from controlplane.api.strategies.workloads import validate_meta_update, validate_positive_int_or_percent
from controlplane.api.validation import (
    FieldError,
    duplicate,
    invalid,
    not_supported,
    required,
    too_long,
)

IF_HEALTHY_BUDGET: Final = "IfHealthyBudget"
ALWAYS_ALLOW: Final = "AlwaysAllow"
#: ``supportedUnhealthyPodEvictionPolicies`` (a sorted set when printed).
UNHEALTHY_POD_EVICTION_POLICIES: Final = [ALWAYS_ALLOW, IF_HEALTHY_BUDGET]

#: The condition the disruption controller keeps (k8s.io/api/policy/v1 types.go).
DISRUPTION_ALLOWED_CONDITION: Final = "DisruptionAllowed"
SYNC_FAILED_REASON: Final = "SyncFailed"
SUFFICIENT_PODS_REASON: Final = "SufficientPods"
INSUFFICIENT_PODS_REASON: Final = "InsufficientPods"
#: The cause type of an eviction refused by a budget (``policyv1.DisruptionBudgetCause``).
DISRUPTION_BUDGET_CAUSE: Final = "DisruptionBudget"

# apimachinery pkg/apis/meta/v1/validation ValidateCondition.
_CONDITION_STATUSES: Final = ["False", "True", "Unknown"]
_REASON_FORMAT: Final = "[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?"
_REASON_RE: Final = re.compile(f"^{_REASON_FORMAT}$")
_REASON_ERROR: Final = (
    "a condition reason must start with alphabetic character, optionally followed by a string of "
    "alphanumeric characters or '_,:', and must end with an alphanumeric character or '_' (e.g. "
    "'my_name',  or 'MY_NAME',  or 'MyName',  or 'ReasonA,ReasonB',  or 'ReasonA:ReasonB', regex used "
    f"for validation is '{_REASON_FORMAT}')"
)
_MAX_REASON_LENGTH: Final = 1024
_MAX_MESSAGE_LENGTH: Final = 32768


def _percent(value: Any) -> int | None:
    if isinstance(value, str) and value.endswith("%") and value[:-1].isdigit() and value[:-1].isascii():
        return int(value[:-1])
    return None


def _not_more_than_100_percent(value: Any, path: str) -> list[FieldError]:
    """``IsNotMoreThan100Percent``."""
    percent = _percent(value)
    if percent is not None and percent > 100:
        return [invalid_go(path, go_int_or_string(value), "must not be greater than 100%", value)]
    return []


def _go_int_or_string_struct(value: Any) -> str:
    """An ``intstr.IntOrString`` as ``%#v`` prints the struct."""
    if isinstance(value, str):
        return f"intstr.IntOrString{{Type:1, IntVal:0, StrVal:{go_quote(value)}}}"
    return f'intstr.IntOrString{{Type:0, IntVal:{go_int_or_string(value)}, StrVal:""}}'


def _go_spec(spec: Mapping[str, Any]) -> str:
    """The spec as ``field.Invalid`` prints a Go struct (``%#v``).

    Go prints the *addresses* of the pointer fields there, which change on every request; Kubelab
    prints what they point to instead (``&intstr.IntOrString{...}``), so that the message can be read.
    """

    def pointer(go_type: str, value: Any, rendered: str) -> str:
        return f"(*{go_type})(nil)" if value is None else f"&{rendered}"

    selector = spec.get("selector")
    labels = as_dict(as_dict(selector).get("matchLabels"))
    rendered_labels = ", ".join(f"{go_quote(k)}:{go_quote(as_str(v))}" for k, v in sorted(labels.items()))
    expressions = as_list(as_dict(selector).get("matchExpressions"))
    rendered_expressions = (
        "[]v1.LabelSelectorRequirement(nil)"
        if not expressions
        else f"[]v1.LabelSelectorRequirement{go_json(expressions)}"
    )
    rendered_selector = (
        f"v1.LabelSelector{{MatchLabels:map[string]string{{{rendered_labels}}}, "
        f"MatchExpressions:{rendered_expressions}}}"
    )
    policy = spec.get("unhealthyPodEvictionPolicy")
    fields = [
        "MinAvailable:"
        + pointer(
            "intstr.IntOrString", spec.get("minAvailable"), _go_int_or_string_struct(spec.get("minAvailable"))
        ),
        "Selector:" + pointer("v1.LabelSelector", selector, rendered_selector),
        "MaxUnavailable:"
        + pointer(
            "intstr.IntOrString",
            spec.get("maxUnavailable"),
            _go_int_or_string_struct(spec.get("maxUnavailable")),
        ),
        "UnhealthyPodEvictionPolicy:"
        + pointer("policy.UnhealthyPodEvictionPolicyType", policy, go_quote(as_str(policy))),
    ]
    return "policy.PodDisruptionBudgetSpec{" + ", ".join(fields) + "}"


def validate_pdb_spec(spec: Mapping[str, Any], path: str = "spec") -> list[FieldError]:
    """``ValidatePodDisruptionBudgetSpec``."""
    errors: list[FieldError] = []
    min_available = spec.get("minAvailable")
    max_unavailable = spec.get("maxUnavailable")
    if min_available is not None and max_unavailable is not None:
        errors.append(invalid_go(path, _go_spec(spec), "minAvailable and maxUnavailable cannot be both set"))
    for name, value in (("minAvailable", min_available), ("maxUnavailable", max_unavailable)):
        if value is not None:
            errors += validate_positive_int_or_percent(value, child(path, name))
            errors += _not_more_than_100_percent(value, child(path, name))
    errors += validate_label_selector(spec.get("selector"), child(path, "selector"))
    policy = spec.get("unhealthyPodEvictionPolicy")
    if policy is not None and policy not in UNHEALTHY_POD_EVICTION_POLICIES:
        errors.append(
            not_supported(child(path, "unhealthyPodEvictionPolicy"), policy, UNHEALTHY_POD_EVICTION_POLICIES)
        )
    return errors


def validate_condition(condition: Mapping[str, Any], path: str) -> list[FieldError]:
    """apimachinery's ``ValidateCondition`` (a ``metav1.Condition``)."""
    errors = label_name(as_str(condition.get("type")), child(path, "type"))
    status = condition.get("status")
    if status not in _CONDITION_STATUSES:
        errors.append(not_supported(child(path, "status"), as_str(status), _CONDITION_STATUSES))
    generation = condition.get("observedGeneration")
    if is_int(generation) and generation < 0:
        errors.append(
            invalid(child(path, "observedGeneration"), generation, "must be greater than or equal to zero")
        )
    if not condition.get("lastTransitionTime"):
        errors.append(required(child(path, "lastTransitionTime"), "must be set"))
    reason = as_str(condition.get("reason"))
    if not reason:
        errors.append(required(child(path, "reason"), "must be set"))
    else:
        if not _REASON_RE.match(reason):
            errors.append(invalid(child(path, "reason"), reason, _REASON_ERROR))
        if len(reason) > _MAX_REASON_LENGTH:
            errors.append(too_long(child(path, "reason"), _MAX_REASON_LENGTH))
    if len(as_str(condition.get("message"))) > _MAX_MESSAGE_LENGTH:
        errors.append(too_long(child(path, "message"), _MAX_MESSAGE_LENGTH))
    return errors


def validate_conditions(conditions: Any, path: str) -> list[FieldError]:
    """apimachinery's ``ValidateConditions``: each condition, and no type twice."""
    errors: list[FieldError] = []
    seen: set[str] = set()
    for i, condition in enumerate(as_list(conditions)):
        condition = as_dict(condition)
        kind = as_str(condition.get("type"))
        if kind in seen:
            errors.append(duplicate(child(index(path, i), "type"), kind))
        seen.add(kind)
        errors += validate_condition(condition, index(path, i))
    return errors


def validate_pdb_status(status: Mapping[str, Any], path: str = "status") -> list[FieldError]:
    """``ValidatePodDisruptionBudgetStatusUpdate`` (policy/v1: the counters may not be negative)."""
    errors = validate_conditions(status.get("conditions"), child(path, "conditions"))
    for name in ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods"):
        errors += nonnegative(status.get(name), child(path, name))
    return errors


def empty_status() -> dict[str, Any]:
    """A new PDB's status: Go's zero ``PodDisruptionBudgetStatus``, whose four counters always print."""
    return {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}


class PodDisruptionBudgetStrategy(KindStrategy):
    """``pkg/registry/policy/poddisruptionbudget/strategy.go``."""

    status_subresource = True
    tracks_generation = True
    name_validator = staticmethod(is_valid_path_segment_name)

    def default(self, obj: Object) -> None:
        spec_of(obj)  # a Go struct, never omitted: a PDB without a spec reads back ``spec: {}``

    def reset_status(self, obj: Object) -> None:
        obj["status"] = empty_status()

    def validate(self, obj: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidatePodDisruptionBudget``, then (only if that passed) the generic metadata checks."""
        errors = validate_pdb_spec(as_dict(obj.get("spec")))
        return errors or self.validate_meta(obj, namespaced=namespaced)

    def validate_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        errors = validate_pdb_spec(as_dict(obj.get("spec")))
        return errors or validate_meta_update(obj, old)

    def validate_status_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        return validate_meta_update(obj, old) + validate_pdb_status(as_dict(obj.get("status")))


__all__ = [
    "ALWAYS_ALLOW",
    "DISRUPTION_ALLOWED_CONDITION",
    "DISRUPTION_BUDGET_CAUSE",
    "IF_HEALTHY_BUDGET",
    "INSUFFICIENT_PODS_REASON",
    "SUFFICIENT_PODS_REASON",
    "SYNC_FAILED_REASON",
    "UNHEALTHY_POD_EVICTION_POLICIES",
    "PodDisruptionBudgetStrategy",
    "empty_status",
    "validate_condition",
    "validate_conditions",
    "validate_pdb_spec",
    "validate_pdb_status",
]
