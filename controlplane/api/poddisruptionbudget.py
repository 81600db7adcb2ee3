"""What the disruption controller and the eviction subresource share about a PodDisruptionBudget.

Both write a PDB's status: the controller computes it from the pods, the eviction handler spends one
of its ``disruptionsAllowed``. They keep the ``DisruptionAllowed`` condition the same way: ``True``
with reason ``SufficientPods`` while a disruption is allowed, ``False`` with ``InsufficientPods``
otherwise (``SyncFailed`` when the controller could not compute the status at all). A condition's
``lastTransitionTime`` changes only when its status does, as for every ``metav1.Condition``.

Upstream: ``k8s.io/component-helpers/apps/poddisruptionbudget/helpers.go``, and apimachinery's
``pkg/api/meta/conditions.go`` (``SetStatusCondition``, ``FindStatusCondition``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from controlplane.api.meta import Object
from controlplane.api.strategies.policy import (
    DISRUPTION_ALLOWED_CONDITION,
    INSUFFICIENT_PODS_REASON,
    SUFFICIENT_PODS_REASON,
)


class IntOrPercentError(ValueError):
    """An ``intstr.IntOrString`` that is neither an integer nor a percentage."""


def find_condition(conditions: list[Any], condition_type: str) -> dict[str, Any] | None:
    """``FindStatusCondition``."""
    for condition in conditions:
        if isinstance(condition, dict) and condition.get("type") == condition_type:
            return condition
    return None


def set_condition(conditions: list[Any], new: Mapping[str, Any], now: str) -> bool:
    """``SetStatusCondition``: add or update the condition of ``new``'s type; whether it changed.

    ``lastTransitionTime`` is ``now`` for a new condition and for one whose status changes; otherwise
    it stays as it was, whatever the reason or message became.
    """
    existing = find_condition(conditions, str(new.get("type")))
    if existing is None:
        added = dict(new)
        added["lastTransitionTime"] = added.get("lastTransitionTime") or now
        conditions.append(added)
        return True
    changed = False
    if existing.get("status") != new.get("status"):
        existing["status"] = new.get("status")
        existing["lastTransitionTime"] = new.get("lastTransitionTime") or now
        changed = True
    for field in ("reason", "message"):
        if existing.get(field, "") != new.get(field, ""):
            existing[field] = new.get(field, "")
            changed = True
    generation = new.get("observedGeneration") or 0
    if (existing.get("observedGeneration") or 0) != generation:
        if generation:
            existing["observedGeneration"] = generation
        else:
            existing.pop("observedGeneration", None)  # omitempty
        changed = True
    return changed


def _condition(status: str, reason: str, observed_generation: Any) -> dict[str, Any]:
    condition: dict[str, Any] = {"type": DISRUPTION_ALLOWED_CONDITION, "status": status}
    if observed_generation:
        condition["observedGeneration"] = observed_generation
    condition.update({"reason": reason, "message": ""})
    return condition


def update_disruption_allowed_condition(pdb: Object, now: str) -> None:
    """``UpdateDisruptionAllowedCondition``: the condition as ``status.disruptionsAllowed`` says."""
    status = pdb.setdefault("status", {})
    if not isinstance(status.get("conditions"), list):
        status["conditions"] = []
    generation = status.get("observedGeneration")
    if int(status.get("disruptionsAllowed") or 0) > 0:
        wanted = _condition("True", SUFFICIENT_PODS_REASON, generation)
    else:
        wanted = _condition("False", INSUFFICIENT_PODS_REASON, generation)
    set_condition(status["conditions"], wanted, now)


def conditions_are_up_to_date(pdb: Mapping[str, Any]) -> bool:
    """``ConditionsAreUpToDate``: the condition exists, for this generation, and agrees with the count."""
    status = pdb.get("status") or {}
    condition = find_condition(list(status.get("conditions") or []), DISRUPTION_ALLOWED_CONDITION)
    if condition is None:
        return False
    if status.get("observedGeneration", 0) != (pdb.get("metadata") or {}).get("generation", 0):
        return False
    if int(status.get("disruptionsAllowed") or 0) > 0:
        return bool(condition.get("status") == "True" and condition.get("reason") == SUFFICIENT_PODS_REASON)
    return bool(condition.get("status") == "False" and condition.get("reason") == INSUFFICIENT_PODS_REASON)


def scaled_value(value: Any, total: int, *, round_up: bool) -> int:
    """``intstr.GetScaledValueFromIntOrPercent``: an integer as is, a percentage of ``total``."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if not isinstance(value, str):
        raise IntOrPercentError("invalid value for IntOrString: invalid type: neither int nor percentage")
    if not value.endswith("%"):
        raise IntOrPercentError("invalid value for IntOrString: invalid type: string is not a percentage")
    try:
        percent = int(value[:-1])
    except ValueError:
        raise IntOrPercentError(
            f'invalid value for IntOrString: invalid value "{value}": strconv.Atoi: parsing '
            f'"{value[:-1]}": invalid syntax'
        ) from None
    exact = percent * total / 100
    return math.ceil(exact) if round_up else math.floor(exact)


def is_pod_ready(pod: Mapping[str, Any]) -> bool:
    """``podutil.IsPodReady``: the pod's ``Ready`` condition is True (the PDBs' meaning of healthy)."""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if isinstance(condition, Mapping) and condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return False


__all__ = [
    "IntOrPercentError",
    "conditions_are_up_to_date",
    "find_condition",
    "is_pod_ready",
    "scaled_value",
    "set_condition",
    "update_disruption_allowed_condition",
]
