"""HorizontalPodAutoscalers (``autoscaling/v2`` and ``autoscaling/v1``): replicas that follow load.

A **HorizontalPodAutoscaler** (HPA) points at a workload through ``scaleTargetRef`` (kind, name,
apiVersion of anything with a ``/scale`` subresource: a Deployment, a StatefulSet, a ReplicaSet...)
and keeps its replica count between ``minReplicas`` and ``maxReplicas``, sized so that each
``metrics`` entry stays near its target (say, 80 % of the pods' requested CPU). The API server only
stores and checks it; the **horizontal-pod-autoscaler controller** reads the metrics, writes the
target's ``/scale`` and reports in ``status`` (``currentReplicas``, ``desiredReplicas``,
``currentMetrics``, the ``AbleToScale``/``ScalingActive``/``ScalingLimited`` conditions).

Defaults (``pkg/apis/autoscaling/v2/defaults.go``, see ``controlplane.api.conversion.autoscaling``):
``minReplicas: 1``; without metrics, CPU at 80 % utilization; a given ``behavior`` is completed
with upstream's scale-up (no stabilization, the larger of 4 pods or 100 % per 15 s) and scale-down
(100 % per 15 s) rules. Validation (``pkg/apis/autoscaling/validation/validation.go``): ``minReplicas``
at least 1 (0 only with the alpha ``HPAScaleToZero`` gate, off here, or when the stored HPA already
has 0), ``maxReplicas`` at least 1 and at least ``minReplicas``, a ``scaleTargetRef`` kind and name
that are valid URL path segments, each metric of a known type carrying exactly the source its type
names, targets that are positive, and behavior policies within upstream's bounds.

``autoscaling/v1`` objects are validated as upstream does, on their converted (v2) form: the error
paths name the v2 fields (``spec.metrics[0].resource.target.averageUtilization``).

Upstream: ``pkg/registry/autoscaling/horizontalpodautoscaler/strategy.go``.
"""

from __future__ import annotations

from typing import Any, Final

from controlplane.api.conversion.autoscaling import drop_round_trip_annotations, set_defaults_v2, v1_to_v2
from controlplane.api.meta import Object
from controlplane.api.quantity import QuantityError, parse_json_quantity
from controlplane.api.strategies.common import (
    KindStrategy,
    as_dict,
    as_list,
    child,
    go_pointer,
    index,
    invalid_go,
    is_valid_path_segment_name,
    nonnegative,
)
from controlplane.api.strategies.workloads import validate_meta_update
from controlplane.api.validation import FieldError, forbidden, invalid, not_supported, required

#: ``MaxPeriodSeconds`` and ``MaxStabilizationWindowSeconds``.
MAX_PERIOD_SECONDS: Final = 1800
MAX_STABILIZATION_WINDOW_SECONDS: Final = 3600
METRIC_SOURCE_TYPES: Final = ["ContainerResource", "External", "Object", "Pods", "Resource"]
SELECT_POLICIES: Final = ["Disabled", "Max", "Min"]
POLICY_TYPES: Final = ["Percent", "Pods"]
_SOURCE_FIELD: Final = {
    "Object": "object",
    "Pods": "pods",
    "Resource": "resource",
    "External": "external",
    "ContainerResource": "containerResource",
}


def validate_cross_version_object_reference(ref: Any, path: str) -> list[FieldError]:
    """``ValidateCrossVersionObjectReference``."""
    errors: list[FieldError] = []
    ref = as_dict(ref)
    for field in ("kind", "name"):
        value = ref.get(field)
        if not value:
            errors.append(required(child(path, field)))
        else:
            errors += [
                invalid(child(path, field), value, msg) for msg in is_valid_path_segment_name(str(value))
            ]
    return errors


def _positive_quantity(value: Any) -> bool:
    try:
        return parse_json_quantity(value).sign() == 1
    except QuantityError:
        return False


def _validate_metric_target(target: dict[str, Any], path: str) -> list[FieldError]:
    """``validateMetricTarget``."""
    errors: list[FieldError] = []
    kind = target.get("type")
    if not kind:
        errors.append(required(child(path, "type"), "must specify a metric target type"))
    if kind not in ("Utilization", "Value", "AverageValue"):
        errors.append(
            invalid(child(path, "type"), kind or "", "must be either Utilization, Value, or AverageValue")
        )
    for field in ("value", "averageValue"):
        if target.get(field) is not None and not _positive_quantity(target[field]):
            errors.append(invalid(child(path, field), target[field], "must be positive"))
    utilization = target.get("averageUtilization")
    if isinstance(utilization, int) and utilization < 1:
        errors.append(
            invalid_go(child(path, "averageUtilization"), go_pointer(utilization), "must be greater than 0")
        )
    return errors


def _validate_metric_identifier(ident: dict[str, Any], path: str) -> list[FieldError]:
    name = ident.get("name")
    if not name:
        return [required(child(path, "name"), "must specify a metric name")]
    return [invalid(child(path, "name"), name, msg) for msg in is_valid_path_segment_name(str(name))]


def _validate_source(kind: str, src: dict[str, Any], path: str) -> list[FieldError]:
    """``validateObjectSource``, ``validatePodsSource``, ``validateResourceSource``..."""
    errors: list[FieldError] = []
    target = as_dict(src.get("target"))
    target_path = child(path, "target")
    if kind == "object":
        errors += validate_cross_version_object_reference(
            src.get("describedObject"), child(path, "describedObject")
        )
    if kind in ("object", "pods", "external"):
        errors += _validate_metric_identifier(as_dict(src.get("metric")), child(path, "metric"))
    if kind in ("resource", "containerResource"):
        if not src.get("name"):
            errors.append(required(child(path, "name"), "must specify a resource name"))
        if kind == "containerResource" and not src.get("container"):
            errors.append(required(child(path, "container"), "must specify a container"))
    errors += _validate_metric_target(target, target_path)
    value, average, utilization = (
        target.get("value"),
        target.get("averageValue"),
        target.get("averageUtilization"),
    )
    if kind == "object" and value is None and average is None:
        errors.append(
            required(child(target_path, "averageValue"), "must set either a target value or averageValue")
        )
    if kind == "external":
        if value is None and average is None:
            errors.append(
                required(
                    child(target_path, "averageValue"),
                    "must set either a target value for metric or a per-pod target",
                )
            )
        if value is not None and average is not None:
            errors.append(
                forbidden(
                    child(target_path, "value"),
                    "may not set both a target value for metric and a per-pod target",
                )
            )
    if kind == "pods" and average is None:
        errors.append(
            required(child(target_path, "averageValue"), "must specify a positive target averageValue")
        )
    if kind in ("resource", "containerResource"):
        if utilization is None and average is None:
            errors.append(
                required(
                    child(target_path, "averageUtilization"),
                    "must set either a target raw value or a target utilization",
                )
            )
        if utilization is not None and average is not None:
            errors.append(
                forbidden(
                    child(target_path, "averageValue"),
                    "may not set both a target raw value and a target utilization",
                )
            )
    return errors


def _validate_metric_spec(metric: dict[str, Any], path: str) -> list[FieldError]:
    """``validateMetricSpec``: a known type, and exactly the source it names."""
    errors: list[FieldError] = []
    kind = metric.get("type") or ""
    if not kind:
        errors.append(required(child(path, "type"), "must specify a metric source type"))
    if kind not in METRIC_SOURCE_TYPES:
        errors.append(not_supported(child(path, "type"), kind, METRIC_SOURCE_TYPES))
    present: list[str] = []
    for field in ("object", "external", "pods", "resource", "containerResource"):
        if metric.get(field) is not None:
            present.append(field)
            if len(present) == 1:
                errors += _validate_source(field, as_dict(metric[field]), child(path, field))
    expected = _SOURCE_FIELD.get(kind)
    if expected is None:
        errors.append(not_supported(child(path, "type"), kind, METRIC_SOURCE_TYPES))
    elif metric.get(expected) is None:
        errors.append(
            required(child(path, expected), "must populate information for the given metric source")
        )
    if len(present) != 1:
        # Go ranges over a set here: the order of these errors is not fixed upstream.
        errors += [
            forbidden(child(path, field), "must populate the given metric source only")
            for field in present
            if field != expected
        ]
    return errors


def _validate_metrics(metrics: Any, path: str, min_replicas: Any) -> list[FieldError]:
    errors: list[FieldError] = []
    has_object_or_external = False
    for i, metric in enumerate(as_list(metrics)):
        metric = as_dict(metric)
        errors += _validate_metric_spec(metric, index(path, i))
        has_object_or_external |= metric.get("type") in ("Object", "External")
    if min_replicas == 0 and not has_object_or_external:
        errors.append(
            forbidden(
                path,
                "must specify at least one Object or External metric to support scaling to zero replicas",
            )
        )
    return errors


def _validate_scaling_rules(rules: Any, path: str) -> list[FieldError]:
    """``validateScalingRules`` and ``validateScalingPolicy``."""
    if rules is None:
        return []
    rules = as_dict(rules)
    errors: list[FieldError] = []
    window = rules.get("stabilizationWindowSeconds")
    window_path = child(path, "stabilizationWindowSeconds")
    if isinstance(window, int) and window < 0:
        errors.append(invalid_go(window_path, go_pointer(window), "must be greater than or equal to zero"))
    if isinstance(window, int) and window > MAX_STABILIZATION_WINDOW_SECONDS:
        errors.append(
            invalid_go(
                window_path,
                go_pointer(window),
                f"must be less than or equal to {MAX_STABILIZATION_WINDOW_SECONDS}",
            )
        )
    select = rules.get("selectPolicy")
    if select is not None and select not in SELECT_POLICIES:
        errors.append(not_supported(child(path, "selectPolicy"), select, SELECT_POLICIES))
    policies_path = child(path, "policies")
    policies = as_list(rules.get("policies"))
    if not policies:
        errors.append(required(policies_path, "must specify at least one Policy"))
    for i, policy in enumerate(policies):
        policy = as_dict(policy)
        policy_path = index(policies_path, i)
        if policy.get("type") not in POLICY_TYPES:
            errors.append(not_supported(child(policy_path, "type"), policy.get("type") or "", POLICY_TYPES))
        value, period = policy.get("value") or 0, policy.get("periodSeconds") or 0
        if value <= 0:
            errors.append(invalid(child(policy_path, "value"), value, "must be greater than zero"))
        if period <= 0:
            errors.append(invalid(child(policy_path, "periodSeconds"), period, "must be greater than zero"))
        if period > MAX_PERIOD_SECONDS:
            errors.append(
                invalid(
                    child(policy_path, "periodSeconds"),
                    period,
                    f"must be less than or equal to {MAX_PERIOD_SECONDS}",
                )
            )
    return errors


def validate_hpa_spec(
    spec: dict[str, Any], min_replicas_lower_bound: int, path: str = "spec"
) -> list[FieldError]:
    """``validateHorizontalPodAutoscalerSpec``."""
    errors: list[FieldError] = []
    min_replicas = spec.get("minReplicas")
    max_replicas = spec.get("maxReplicas") or 0
    if isinstance(min_replicas, int) and min_replicas < min_replicas_lower_bound:
        errors.append(
            invalid(
                child(path, "minReplicas"),
                min_replicas,
                f"must be greater than or equal to {min_replicas_lower_bound}",
            )
        )
    if max_replicas < 1:
        errors.append(invalid(child(path, "maxReplicas"), max_replicas, "must be greater than 0"))
    if isinstance(min_replicas, int) and max_replicas < min_replicas:
        errors.append(
            invalid(
                child(path, "maxReplicas"), max_replicas, "must be greater than or equal to `minReplicas`"
            )
        )
    errors += validate_cross_version_object_reference(
        spec.get("scaleTargetRef"), child(path, "scaleTargetRef")
    )
    errors += _validate_metrics(spec.get("metrics"), child(path, "metrics"), min_replicas)
    behavior = spec.get("behavior")
    if behavior is not None:
        behavior = as_dict(behavior)
        errors += _validate_scaling_rules(behavior.get("scaleUp"), child(path, "behavior.scaleUp"))
        errors += _validate_scaling_rules(behavior.get("scaleDown"), child(path, "behavior.scaleDown"))
    return errors


def validate_hpa_status(status: dict[str, Any]) -> list[FieldError]:
    """``ValidateHorizontalPodAutoscalerStatusUpdate`` (its status part)."""
    return nonnegative(status.get("currentReplicas"), "status.currentReplicas") + nonnegative(
        status.get("desiredReplicas"), "status.desiredReplicas"
    )


class HorizontalPodAutoscalerStrategy(KindStrategy):
    """``autoscaling/v2``, the stored version."""

    status_subresource = True

    def v2(self, obj: Object) -> Object:
        """The object as v2 (it is already, in this version)."""
        return obj

    def default(self, obj: Object) -> None:
        set_defaults_v2(obj)
        drop_round_trip_annotations(obj)  # Convert_v2_HorizontalPodAutoscaler_To_autoscaling_...

    def validate(self, obj: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidateHorizontalPodAutoscaler`` (HPAScaleToZero off: minReplicas at least 1)."""
        errors = self.validate_meta(obj, namespaced=namespaced)
        return errors + validate_hpa_spec(as_dict(self.v2(obj).get("spec")), 1)

    def validate_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidateHorizontalPodAutoscalerUpdate``: 0 stays allowed for an HPA that already has it."""
        bound = 0 if as_dict(self.v2(old).get("spec")).get("minReplicas") == 0 else 1
        return validate_meta_update(obj, old) + validate_hpa_spec(as_dict(self.v2(obj).get("spec")), bound)

    def validate_status_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        return validate_meta_update(obj, old) + validate_hpa_status(as_dict(obj.get("status")))


class HorizontalPodAutoscalerV1Strategy(HorizontalPodAutoscalerStrategy):
    """``autoscaling/v1``: its own defaults, then the v2 rules on the converted object."""

    def v2(self, obj: Object) -> Object:
        return v1_to_v2(obj)

    def default(self, obj: Object) -> None:
        """``SetDefaults_HorizontalPodAutoscaler`` (autoscaling/v1): only ``minReplicas``."""
        spec = obj.setdefault("spec", {})
        if isinstance(spec, dict) and spec.get("minReplicas") is None:
            spec["minReplicas"] = 1


__all__ = [
    "MAX_PERIOD_SECONDS",
    "MAX_STABILIZATION_WINDOW_SECONDS",
    "HorizontalPodAutoscalerStrategy",
    "HorizontalPodAutoscalerV1Strategy",
    "validate_cross_version_object_reference",
    "validate_hpa_spec",
    "validate_hpa_status",
]
