"""PriorityClasses (``scheduling.k8s.io/v1``): how important a pod is, as a number with a name.

A PriorityClass maps a name (``high``, ``batch``) to an integer ``value``. A pod names its class in
``spec.priorityClassName``; the Priority admission plugin copies the class's value into the pod's
``spec.priority`` (and its ``preemptionPolicy``) when the pod is created. The scheduler then tries
higher-priority pods first, and when such a pod fits nowhere it may *preempt* (evict) pods of lower
priority to make room for it, unless the pod's ``preemptionPolicy`` is ``Never``.

Rules (``pkg/apis/scheduling/validation/validation.go``):

- the object is cluster-scoped; its name is a DNS subdomain;
- a user's class has a ``value`` of at most 1000000000 (``HighestUserDefinablePriority``): the
  values above are kept for the cluster's own pods;
- names starting with ``system-`` are reserved: only the two built-in classes may use them, with
  their own values (``system-cluster-critical`` 2000000000, ``system-node-critical`` 2000001000),
  which the API server creates when it starts (``pkg/registry/scheduling/rest/storage_scheduling.go``);
- ``preemptionPolicy`` is ``PreemptLowerPriority`` (the default) or ``Never``;
- ``value`` and ``preemptionPolicy`` cannot change once created (pods already carry the number);
- the built-in classes cannot be deleted ("this is a system priority class and cannot be deleted").

At most one class may be the ``globalDefault`` (the value of pods that name no class): that rule
needs the other classes, so the Priority admission plugin checks it, not validation.

Upstream: ``pkg/apis/scheduling/types.go``, ``pkg/apis/scheduling/v1/defaults.go``,
``pkg/registry/scheduling/priorityclass/strategy.go``.
"""

from __future__ import annotations

from typing import Final

from controlplane.api.meta import Object
from controlplane.api.strategies.common import CoreKindStrategy, UndecodableObject, is_int
from controlplane.api.strategies.workloads import validate_meta_update
from controlplane.api.validation import FieldError, forbidden, invalid, not_supported, required

GROUP: Final = "scheduling.k8s.io"
VERSION: Final = "v1"

#: ``scheduling.HighestUserDefinablePriority``: the largest value a user's class may have.
HIGHEST_USER_DEFINABLE_PRIORITY: Final = 1_000_000_000
#: ``scheduling.SystemCriticalPriority``: where the system classes start (twice the user maximum).
SYSTEM_CRITICAL_PRIORITY: Final = 2 * HIGHEST_USER_DEFINABLE_PRIORITY
#: ``scheduling.DefaultPriorityWhenNoDefaultClassExists``: a pod's priority when nothing says more.
DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS: Final = 0
SYSTEM_PRIORITY_CLASS_PREFIX: Final = "system-"
SYSTEM_CLUSTER_CRITICAL: Final = "system-cluster-critical"
SYSTEM_NODE_CRITICAL: Final = "system-node-critical"

PREEMPT_LOWER_PRIORITY: Final = "PreemptLowerPriority"
PREEMPT_NEVER: Final = "Never"
PREEMPTION_POLICIES: Final = [PREEMPT_LOWER_PRIORITY, PREEMPT_NEVER]

#: The built-in classes (``scheduling.SystemPriorityClasses()``): name, value, description.
SYSTEM_PRIORITY_CLASSES: Final[tuple[tuple[str, int, str], ...]] = (
    (
        SYSTEM_NODE_CRITICAL,
        SYSTEM_CRITICAL_PRIORITY + 1000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
    (
        SYSTEM_CLUSTER_CRITICAL,
        SYSTEM_CRITICAL_PRIORITY,
        "Used for system critical pods that must run in the cluster, but can be moved to another node "
        "if necessary.",
    ),
)


def system_priority_class(name: str, value: int, description: str) -> Object:
    """One built-in class as the API server creates it at start."""
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        "description": description,
    }


def is_known_system_priority_class(name: str, value: object, global_default: bool) -> str | None:
    """``IsKnownSystemPriorityClass``: None if ``name`` is a built-in class with its own value and
    ``globalDefault`` unset, else why not."""
    for known, known_value, _ in SYSTEM_PRIORITY_CLASSES:
        if known == name:
            if value != known_value:
                return f"value of {name} PriorityClass must be {known_value}"
            if global_default:
                return f"globalDefault of {name} PriorityClass must be false"
            return None
    return f"{name} is not a known system priority class"


def validate_preemption_policy(value: object, path: str) -> list[FieldError]:
    """``ValidatePreemptionPolicy`` (pkg/apis/core/validation)."""
    if value == "":
        return [required(path)]
    if value not in PREEMPTION_POLICIES:
        return [not_supported(path, value, PREEMPTION_POLICIES)]
    return []


def validate_priority_class_fields(obj: Object) -> list[FieldError]:
    """``ValidatePriorityClass`` after the metadata: the reserved prefix, the user maximum, the policy."""
    errors: list[FieldError] = []
    name = str(obj["metadata"].get("name") or "")
    value = obj.get("value")
    if name.startswith(SYSTEM_PRIORITY_CLASS_PREFIX):
        why = is_known_system_priority_class(name, value, obj.get("globalDefault") is True)
        if why is not None:
            errors.append(
                forbidden(
                    "metadata.name",
                    f"priority class names with '{SYSTEM_PRIORITY_CLASS_PREFIX}' prefix are reserved "
                    f"for system use only. error: {why}",
                )
            )
    elif is_int(value) and value > HIGHEST_USER_DEFINABLE_PRIORITY:
        errors.append(
            forbidden(
                "value",
                f"maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}",
            )
        )
    if obj.get("preemptionPolicy") is not None:
        errors += validate_preemption_policy(obj.get("preemptionPolicy"), "preemptionPolicy")
    return errors


#: int32's range: ``value`` is an int32 upstream, and the JSON decoder refuses what does not fit.
_INT32_MIN: Final = -(2**31)
_INT32_MAX: Final = 2**31 - 1


def _json_kind(value: object) -> str:
    """How encoding/json names a JSON value it cannot decode (``number 3000000000``, ``string``)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return f"number {value}"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "string"


class PriorityClassStrategy(CoreKindStrategy):
    """PriorityClasses (``pkg/registry/scheduling/priorityclass/strategy.go``): cluster-scoped."""

    def default(self, obj: Object) -> None:
        """``SetDefaults_PriorityClass``: ``preemptionPolicy: PreemptLowerPriority``; and ``value`` is
        a plain int32 upstream (no ``omitempty``), so a class without one has value 0."""
        value = obj.get("value")
        if value is None:
            obj["value"] = 0
        elif not is_int(value) or not _INT32_MIN <= value <= _INT32_MAX:
            raise UndecodableObject(
                f"json: cannot unmarshal {_json_kind(value)} into Go struct field PriorityClass.value "
                "of type int32"
            )
        if obj.get("preemptionPolicy") is None:
            obj["preemptionPolicy"] = PREEMPT_LOWER_PRIORITY

    def delete_refusal(self, name: str) -> str | None:
        """The built-in classes cannot be deleted (``pkg/registry/scheduling/priorityclass/storage``)."""
        if any(name == known for known, _, _ in SYSTEM_PRIORITY_CLASSES):
            return "this is a system priority class and cannot be deleted"
        return None

    def validate(self, obj: Object, *, namespaced: bool) -> list[FieldError]:
        return self.validate_meta(obj, namespaced=namespaced) + validate_priority_class_fields(obj)

    def validate_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidatePriorityClassUpdate``: the metadata, then ``value`` and ``preemptionPolicy`` frozen."""
        errors = validate_meta_update(obj, old)
        if obj.get("value") != old.get("value"):
            errors.append(forbidden("value", "may not be changed in an update."))
        if obj.get("preemptionPolicy") != old.get("preemptionPolicy"):
            errors.append(invalid("preemptionPolicy", obj.get("preemptionPolicy"), "field is immutable"))
        return errors


__all__ = [
    "DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS",
    "GROUP",
    "HIGHEST_USER_DEFINABLE_PRIORITY",
    "PREEMPTION_POLICIES",
    "PREEMPT_LOWER_PRIORITY",
    "PREEMPT_NEVER",
    "SYSTEM_CLUSTER_CRITICAL",
    "SYSTEM_CRITICAL_PRIORITY",
    "SYSTEM_NODE_CRITICAL",
    "SYSTEM_PRIORITY_CLASSES",
    "SYSTEM_PRIORITY_CLASS_PREFIX",
    "PriorityClassStrategy",
    "is_known_system_priority_class",
    "system_priority_class",
    "validate_preemption_policy",
    "validate_priority_class_fields",
]
