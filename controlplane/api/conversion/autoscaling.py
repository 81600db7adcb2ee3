"""HorizontalPodAutoscalers in two versions: ``autoscaling/v2`` (stored) and ``autoscaling/v1``.

``autoscaling/v1`` is the first HPA API: one target, ``targetCPUUtilizationPercentage``, and a status
with ``currentCPUUtilizationPercentage``. ``autoscaling/v2`` generalised it to a list of ``metrics``
(``Resource``, ``ContainerResource``, ``Pods``, ``Object``, ``External``), each with a ``target`` of
type ``Utilization``, ``AverageValue`` or ``Value``, plus ``behavior`` (how fast to scale up and
down) and status ``conditions``. Both versions serve the same objects; the stored form is v2's.

Upstream converts through its internal type (``pkg/apis/autoscaling/v1/conversion.go``):

- the v1 CPU target is the v2 metric ``{type: Resource, resource: {name: cpu, target: {type:
  Utilization, averageUtilization: N}}}``;
- everything v1 cannot say is kept in **annotations** of the v1 object, so that a v1 client that
  reads, changes and writes back an HPA loses nothing: ``autoscaling.alpha.kubernetes.io/metrics``
  (the other metrics, in the old v2beta1 shape), ``.../current-metrics`` (the metric statuses),
  ``.../conditions`` and ``.../behavior`` (upstream marshals its *internal* behavior type there, which
  has no JSON tags, hence the capitalised keys);
- a v1 HPA with no CPU target and no other metric gets the old implicit default, 80 % CPU.

``controlplane.api.kinds`` pairs ``v1_to_storage`` and ``v2_to_v1`` into the v1 resource type's
``StorageConversion`` (this module imports no strategy machinery: the strategies import it).

The v2 defaults (``pkg/apis/autoscaling/v2/defaults.go``) live here too, since decoding a v1 object
into the stored v2 form applies them: ``minReplicas: 1``, the 80 % CPU metric when there is none,
and, when ``behavior`` is given, every unset field of its ``scaleUp`` and ``scaleDown`` rules.
"""

from __future__ import annotations

import copy
import json
from typing import Any, Final

from controlplane.api.meta import Object

V1_API_VERSION: Final = "autoscaling/v1"
V2_API_VERSION: Final = "autoscaling/v2"
KIND: Final = "HorizontalPodAutoscaler"

# pkg/apis/autoscaling/annotations.go
METRIC_SPECS_ANNOTATION: Final = "autoscaling.alpha.kubernetes.io/metrics"
METRIC_STATUSES_ANNOTATION: Final = "autoscaling.alpha.kubernetes.io/current-metrics"
CONDITIONS_ANNOTATION: Final = "autoscaling.alpha.kubernetes.io/conditions"
BEHAVIOR_ANNOTATION: Final = "autoscaling.alpha.kubernetes.io/behavior"
_V1_ANNOTATIONS: Final = (
    METRIC_SPECS_ANNOTATION,
    METRIC_STATUSES_ANNOTATION,
    CONDITIONS_ANNOTATION,
    BEHAVIOR_ANNOTATION,
)

#: ``autoscaling.DefaultCPUUtilization``.
DEFAULT_CPU_UTILIZATION: Final = 80

# pkg/apis/autoscaling/v2/defaults.go: the rules a given ``behavior`` is completed with.
_DEFAULT_SCALE_UP: Final[dict[str, Any]] = {
    "stabilizationWindowSeconds": 0,
    "selectPolicy": "Max",
    "policies": [
        {"type": "Pods", "value": 4, "periodSeconds": 15},
        {"type": "Percent", "value": 100, "periodSeconds": 15},
    ],
}
# scaleDown's stabilizationWindowSeconds stays unset: the controller's
# --horizontal-pod-autoscaler-downscale-stabilization (5 min) applies.
_DEFAULT_SCALE_DOWN: Final[dict[str, Any]] = {
    "selectPolicy": "Max",
    "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
}
_RULE_ORDER: Final = ("stabilizationWindowSeconds", "selectPolicy", "policies", "tolerance")


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def default_cpu_metric(utilization: int = DEFAULT_CPU_UTILIZATION) -> dict[str, Any]:
    return {
        "type": "Resource",
        "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": utilization}},
    }


def _scaling_rules(given: Any, defaults: dict[str, Any]) -> dict[str, Any]:
    """``GenerateHPAScaleUpRules``/``...ScaleDownRules``: the defaults, overridden by each set field."""
    merged = copy.deepcopy(defaults)
    for name, value in _dict(given).items():
        if value is not None:
            merged[name] = value
    return {name: merged[name] for name in _RULE_ORDER if name in merged} | {
        k: v for k, v in merged.items() if k not in _RULE_ORDER
    }


def set_defaults_v2(hpa: Object) -> None:
    """``SetDefaults_HorizontalPodAutoscaler`` (autoscaling/v2), in place."""
    spec = hpa.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    if spec.get("minReplicas") is None:
        spec["minReplicas"] = 1
    if not spec.get("metrics"):
        spec["metrics"] = [default_cpu_metric()]
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):  # SetDefaults_HorizontalPodAutoscalerBehavior
        behavior["scaleUp"] = _scaling_rules(behavior.get("scaleUp"), _DEFAULT_SCALE_UP)
        behavior["scaleDown"] = _scaling_rules(behavior.get("scaleDown"), _DEFAULT_SCALE_DOWN)


# -- metrics: v2 <-> the v1 annotation shape (k8s.io/api/autoscaling/v1 MetricSpec, MetricStatus) ----


def _put(out: dict[str, Any], name: str, value: Any) -> None:
    if value is not None:
        out[name] = value


def _metric_spec_to_v1(metric: dict[str, Any]) -> dict[str, Any]:
    """``Convert_autoscaling_MetricSpec_To_v1_MetricSpec``."""
    kind = metric.get("type")
    out: dict[str, Any] = {"type": kind}
    if isinstance(metric.get("object"), dict):
        src = metric["object"]
        target, ident = _dict(src.get("target")), _dict(src.get("metric"))
        obj: dict[str, Any] = {
            "target": _dict(src.get("describedObject")),
            "metricName": ident.get("name", ""),
        }
        obj["targetValue"] = target.get("value", "0")
        _put(obj, "selector", ident.get("selector"))
        _put(obj, "averageValue", target.get("averageValue"))
        out["object"] = obj
    if isinstance(metric.get("pods"), dict):
        src = metric["pods"]
        target, ident = _dict(src.get("target")), _dict(src.get("metric"))
        pods: dict[str, Any] = {
            "metricName": ident.get("name", ""),
            "targetAverageValue": target.get("averageValue", "0"),
        }
        _put(pods, "selector", ident.get("selector"))
        out["pods"] = pods
    for field in ("resource", "containerResource"):
        if isinstance(metric.get(field), dict):
            src = metric[field]
            target = _dict(src.get("target"))
            res: dict[str, Any] = {"name": src.get("name", "")}
            _put(res, "targetAverageUtilization", target.get("averageUtilization"))
            _put(res, "targetAverageValue", target.get("averageValue"))
            if field == "containerResource":
                res["container"] = src.get("container", "")
            out[field] = res
    if isinstance(metric.get("external"), dict):
        src = metric["external"]
        target, ident = _dict(src.get("target")), _dict(src.get("metric"))
        ext: dict[str, Any] = {"metricName": ident.get("name", "")}
        _put(ext, "metricSelector", ident.get("selector"))
        _put(ext, "targetValue", target.get("value"))
        _put(ext, "targetAverageValue", target.get("averageValue"))
        out["external"] = ext
    return out


def _metric_spec_from_v1(metric: dict[str, Any]) -> dict[str, Any]:
    """``Convert_v1_MetricSpec_To_autoscaling_MetricSpec``."""
    out: dict[str, Any] = {"type": metric.get("type")}
    if isinstance(metric.get("object"), dict):
        src = metric["object"]
        average = src.get("averageValue")
        target: dict[str, Any] = {"type": "Value" if average is None else "AverageValue"}
        _put(target, "value", src.get("targetValue", "0"))
        _put(target, "averageValue", average)
        ident: dict[str, Any] = {"name": src.get("metricName", "")}
        _put(ident, "selector", src.get("selector"))
        out["object"] = {"describedObject": _dict(src.get("target")), "target": target, "metric": ident}
    if isinstance(metric.get("pods"), dict):
        src = metric["pods"]
        ident = {"name": src.get("metricName", "")}
        _put(ident, "selector", src.get("selector"))
        out["pods"] = {
            "metric": ident,
            "target": {"type": "AverageValue", "averageValue": src.get("targetAverageValue", "0")},
        }
    for field in ("resource", "containerResource"):
        if isinstance(metric.get(field), dict):
            src = metric[field]
            utilization = src.get("targetAverageUtilization")
            target = {"type": "AverageValue" if utilization is None else "Utilization"}
            _put(target, "averageUtilization", utilization)
            _put(target, "averageValue", src.get("targetAverageValue"))
            res: dict[str, Any] = {"name": src.get("name", "")}
            if field == "containerResource":
                res["container"] = src.get("container", "")
            res["target"] = target
            out[field] = res
    if isinstance(metric.get("external"), dict):
        src = metric["external"]
        value = src.get("targetValue")
        target = {"type": "AverageValue" if value is None else "Value"}
        _put(target, "value", value)
        _put(target, "averageValue", src.get("targetAverageValue"))
        ident = {"name": src.get("metricName", "")}
        _put(ident, "selector", src.get("metricSelector"))
        out["external"] = {"metric": ident, "target": target}
    return out


def _metric_status_to_v1(status: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"type": status.get("type")}
    for field in ("resource", "containerResource"):
        if isinstance(status.get(field), dict):
            src = status[field]
            current = _dict(src.get("current"))
            res: dict[str, Any] = {"name": src.get("name", "")}
            _put(res, "currentAverageUtilization", current.get("averageUtilization"))
            res["currentAverageValue"] = current.get("averageValue", "0")
            if field == "containerResource":
                res["container"] = src.get("container", "")
            out[field] = res
    if isinstance(status.get("pods"), dict):
        src = status["pods"]
        ident = _dict(src.get("metric"))
        pods: dict[str, Any] = {
            "metricName": ident.get("name", ""),
            "currentAverageValue": _dict(src.get("current")).get("averageValue", "0"),
        }
        _put(pods, "selector", ident.get("selector"))
        out["pods"] = pods
    if isinstance(status.get("object"), dict):
        src = status["object"]
        ident, current = _dict(src.get("metric")), _dict(src.get("current"))
        obj: dict[str, Any] = {
            "target": _dict(src.get("describedObject")),
            "metricName": ident.get("name", ""),
            "currentValue": current.get("value", "0"),
        }
        _put(obj, "selector", ident.get("selector"))
        _put(obj, "averageValue", current.get("averageValue"))
        out["object"] = obj
    if isinstance(status.get("external"), dict):
        src = status["external"]
        ident, current = _dict(src.get("metric")), _dict(src.get("current"))
        ext: dict[str, Any] = {"metricName": ident.get("name", "")}
        _put(ext, "metricSelector", ident.get("selector"))
        ext["currentValue"] = current.get("value", "0")
        _put(ext, "currentAverageValue", current.get("averageValue"))
        out["external"] = ext
    return out


def _metric_status_from_v1(status: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"type": status.get("type")}
    for field in ("resource", "containerResource"):
        if isinstance(status.get(field), dict):
            src = status[field]
            current: dict[str, Any] = {}
            _put(current, "averageValue", src.get("currentAverageValue"))
            _put(current, "averageUtilization", src.get("currentAverageUtilization"))
            res: dict[str, Any] = {"name": src.get("name", "")}
            if field == "containerResource":
                res["container"] = src.get("container", "")
            res["current"] = current
            out[field] = res
    if isinstance(status.get("pods"), dict):
        src = status["pods"]
        ident = {"name": src.get("metricName", "")}
        _put(ident, "selector", src.get("selector"))
        out["pods"] = {"metric": ident, "current": {"averageValue": src.get("currentAverageValue", "0")}}
    if isinstance(status.get("object"), dict):
        src = status["object"]
        ident = {"name": src.get("metricName", "")}
        _put(ident, "selector", src.get("selector"))
        current = {"value": src.get("currentValue", "0")}
        _put(current, "averageValue", src.get("averageValue"))
        out["object"] = {"metric": ident, "current": current, "describedObject": _dict(src.get("target"))}
    if isinstance(status.get("external"), dict):
        src = status["external"]
        ident = {"name": src.get("metricName", "")}
        _put(ident, "selector", src.get("metricSelector"))
        current = {"value": src.get("currentValue", "0")}
        _put(current, "averageValue", src.get("currentAverageValue"))
        out["external"] = {"metric": ident, "current": current}
    return out


# -- behavior: the internal Go type as encoding/json writes it (no JSON tags: Go field names) -------

_GO_RULE_FIELDS: Final = (
    ("StabilizationWindowSeconds", "stabilizationWindowSeconds"),
    ("SelectPolicy", "selectPolicy"),
    ("Policies", "policies"),
    ("Tolerance", "tolerance"),
)
_GO_POLICY_FIELDS: Final = (("Type", "type"), ("Value", "value"), ("PeriodSeconds", "periodSeconds"))


def _behavior_to_go(behavior: dict[str, Any]) -> dict[str, Any]:
    def rules(value: Any) -> dict[str, Any] | None:
        if not isinstance(value, dict):
            return None
        out: dict[str, Any] = {}
        for go, name in _GO_RULE_FIELDS:
            if go == "Policies":
                policies = value.get(name)
                out[go] = (
                    None
                    if policies is None
                    else [
                        {g: _dict(p).get(n, "" if g == "Type" else 0) for g, n in _GO_POLICY_FIELDS}
                        for p in policies
                    ]
                )
            else:
                out[go] = value.get(name)
        return out

    return {"ScaleUp": rules(behavior.get("scaleUp")), "ScaleDown": rules(behavior.get("scaleDown"))}


def _behavior_from_go(encoded: Any) -> dict[str, Any]:
    def rules(value: Any) -> dict[str, Any] | None:
        if not isinstance(value, dict):
            return None
        out: dict[str, Any] = {}
        for go, name in _GO_RULE_FIELDS:
            if value.get(go) is None:
                continue
            if go == "Policies":
                out[name] = [{n: _dict(p).get(g) for g, n in _GO_POLICY_FIELDS} for p in _list(value[go])]
            else:
                out[name] = value[go]
        return out

    behavior: dict[str, Any] = {}
    for go, name in (("ScaleUp", "scaleUp"), ("ScaleDown", "scaleDown")):
        converted = rules(_dict(encoded).get(go))
        if converted is not None:
            behavior[name] = converted
    return behavior


def drop_round_trip_annotations(hpa: Object) -> None:
    """``DropRoundTripHorizontalPodAutoscalerAnnotations`` (pkg/apis/autoscaling/annotations.go), in
    place: v2 round-trips without them, so a v2 object never keeps one (a v2 client cannot plant
    conditions in a v1 reader's view)."""
    metadata = hpa.get("metadata")
    if not isinstance(metadata, dict):
        return
    annotations = metadata.get("annotations")
    if not isinstance(annotations, dict) or not any(name in annotations for name in _V1_ANNOTATIONS):
        return
    kept = {k: v for k, v in annotations.items() if k not in _V1_ANNOTATIONS}
    if kept:
        metadata["annotations"] = kept
    else:
        del metadata["annotations"]


def _go_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _is_cpu_utilization(metric: Any) -> bool:
    resource = _dict(_dict(metric).get("resource"))
    return (
        _dict(metric).get("type") == "Resource"
        and resource.get("name") == "cpu"
        and _dict(resource.get("target")).get("averageUtilization") is not None
    )


# -- the two directions ------------------------------------------------------------------------------


def v2_to_v1(hpa: Object) -> Object:
    """``Convert_autoscaling_HorizontalPodAutoscaler_To_v1_HorizontalPodAutoscaler`` on v2 JSON."""
    spec, status = _dict(hpa.get("spec")), _dict(hpa.get("status"))
    metadata = dict(_dict(hpa.get("metadata")))
    # Old round-trip annotations are discarded first; only this object's own are written.
    annotations = {k: v for k, v in _dict(metadata.get("annotations")).items() if k not in _V1_ANNOTATIONS}
    metrics = _list(spec.get("metrics"))
    others = [_metric_spec_to_v1(m) for m in metrics if not _is_cpu_utilization(m)]
    if others:
        annotations[METRIC_SPECS_ANNOTATION] = _go_json(others)
    if status.get("currentMetrics"):
        annotations[METRIC_STATUSES_ANNOTATION] = _go_json(
            [_metric_status_to_v1(_dict(m)) for m in _list(status["currentMetrics"])]
        )
    if status.get("conditions"):
        annotations[CONDITIONS_ANNOTATION] = _go_json(status["conditions"])
    if isinstance(spec.get("behavior"), dict):
        annotations[BEHAVIOR_ANNOTATION] = _go_json(_behavior_to_go(spec["behavior"]))
    if annotations:
        metadata["annotations"] = annotations
    else:
        metadata.pop("annotations", None)
    v1_spec: dict[str, Any] = {}
    if "scaleTargetRef" in spec:
        v1_spec["scaleTargetRef"] = spec["scaleTargetRef"]
    _put(v1_spec, "minReplicas", spec.get("minReplicas"))
    v1_spec["maxReplicas"] = spec.get("maxReplicas", 0)
    for metric in metrics:  # the first cpu Resource metric decides, as upstream's loop breaks there
        resource = _dict(_dict(metric).get("resource"))
        if _dict(metric).get("type") == "Resource" and resource.get("name") == "cpu":
            _put(
                v1_spec,
                "targetCPUUtilizationPercentage",
                _dict(resource.get("target")).get("averageUtilization"),
            )
            break
    out: Object = {"apiVersion": V1_API_VERSION, "kind": KIND, "metadata": metadata, "spec": v1_spec}
    if "status" in hpa:
        v1_status: dict[str, Any] = {}
        _put(v1_status, "observedGeneration", status.get("observedGeneration"))
        _put(v1_status, "lastScaleTime", status.get("lastScaleTime"))
        v1_status["currentReplicas"] = status.get("currentReplicas", 0)
        v1_status["desiredReplicas"] = status.get("desiredReplicas", 0)
        for metric in _list(status.get("currentMetrics")):
            resource = _dict(_dict(metric).get("resource"))
            if _dict(metric).get("type") == "Resource" and resource.get("name") == "cpu":
                current = _dict(resource.get("current")).get("averageUtilization")
                _put(v1_status, "currentCPUUtilizationPercentage", current)
        out["status"] = v1_status
    return out


def _decoded(text: Any) -> Any:
    try:
        return json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None


def v1_to_v2(hpa: Object) -> Object:
    """``Convert_v1_HorizontalPodAutoscaler_To_autoscaling_HorizontalPodAutoscaler`` on v1 JSON
    (without the v2 defaults: ``to_storage`` adds them)."""
    spec, status = _dict(hpa.get("spec")), _dict(hpa.get("status"))
    metadata = dict(_dict(hpa.get("metadata")))
    annotations = dict(_dict(metadata.get("annotations")))
    metrics: list[Any] = []
    if spec.get("targetCPUUtilizationPercentage") is not None:
        metrics = [default_cpu_metric(spec["targetCPUUtilizationPercentage"])]
    others = _decoded(annotations.pop(METRIC_SPECS_ANNOTATION, None))
    if isinstance(others, list):
        # The other metrics first, then the CPU one (upstream's order).
        metrics = [_metric_spec_from_v1(_dict(m)) for m in others] + metrics
    if not metrics:
        metrics = [default_cpu_metric()]  # v1's old implicit default, made explicit
    current_metrics: list[Any] | None = None
    if status.get("currentCPUUtilizationPercentage") is not None:
        current_metrics = [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "current": {"averageUtilization": status["currentCPUUtilizationPercentage"]},
                },
            }
        ]
    statuses = _decoded(annotations.pop(METRIC_STATUSES_ANNOTATION, None))
    if isinstance(statuses, list):  # these carry more than the v1 field: they win
        current_metrics = [_metric_status_from_v1(_dict(m)) for m in statuses]
    conditions = _decoded(annotations.pop(CONDITIONS_ANNOTATION, None))
    behavior = _decoded(annotations.pop(BEHAVIOR_ANNOTATION, None))
    if annotations:
        metadata["annotations"] = annotations
    else:
        metadata.pop("annotations", None)
    v2_spec: dict[str, Any] = {}
    if "scaleTargetRef" in spec:
        v2_spec["scaleTargetRef"] = spec["scaleTargetRef"]
    _put(v2_spec, "minReplicas", spec.get("minReplicas"))
    v2_spec["maxReplicas"] = spec.get("maxReplicas", 0)
    v2_spec["metrics"] = metrics
    if isinstance(behavior, dict):
        v2_spec["behavior"] = _behavior_from_go(behavior)
    out: Object = {"apiVersion": V2_API_VERSION, "kind": KIND, "metadata": metadata, "spec": v2_spec}
    if "status" in hpa or current_metrics is not None or isinstance(conditions, list):
        v2_status: dict[str, Any] = {}
        _put(v2_status, "observedGeneration", status.get("observedGeneration"))
        _put(v2_status, "lastScaleTime", status.get("lastScaleTime"))
        v2_status["currentReplicas"] = status.get("currentReplicas", 0)
        v2_status["desiredReplicas"] = status.get("desiredReplicas", 0)
        _put(v2_status, "currentMetrics", current_metrics)
        if isinstance(conditions, list):
            v2_status["conditions"] = conditions
        out["status"] = v2_status
    return out


def v1_to_storage(hpa: Object) -> Object:
    """A v1 object in the stored (v2) form, defaulted as decoding v2 would."""
    out = v1_to_v2(hpa)
    set_defaults_v2(out)
    return out


__all__ = [
    "BEHAVIOR_ANNOTATION",
    "CONDITIONS_ANNOTATION",
    "DEFAULT_CPU_UTILIZATION",
    "METRIC_SPECS_ANNOTATION",
    "METRIC_STATUSES_ANNOTATION",
    "default_cpu_metric",
    "drop_round_trip_annotations",
    "set_defaults_v2",
    "v1_to_storage",
    "v1_to_v2",
    "v2_to_v1",
]
