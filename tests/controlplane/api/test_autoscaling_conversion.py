"""HorizontalPodAutoscalers between ``autoscaling/v1`` and the stored ``autoscaling/v2``
(``pkg/apis/autoscaling/v1/conversion.go``, ``pkg/apis/autoscaling/v2/defaults.go``)."""

from __future__ import annotations

import json
from typing import Any

from controlplane.api.conversion.autoscaling import (
    BEHAVIOR_ANNOTATION,
    CONDITIONS_ANNOTATION,
    METRIC_SPECS_ANNOTATION,
    METRIC_STATUSES_ANNOTATION,
    drop_round_trip_annotations,
    set_defaults_v2,
    v1_to_storage,
    v1_to_v2,
    v2_to_v1,
)

REF = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
CPU_50 = {
    "type": "Resource",
    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}},
}
MEMORY = {
    "type": "Resource",
    "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "200Mi"}},
}


def v1(spec: dict[str, Any], status: dict[str, Any] | None = None, **annotations: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "web", "namespace": "default"}
    if annotations:
        meta["annotations"] = annotations
    out: dict[str, Any] = {
        "apiVersion": "autoscaling/v1",
        "kind": "HorizontalPodAutoscaler",
        "metadata": meta,
    }
    out["spec"] = {"scaleTargetRef": REF, **spec}
    if status is not None:
        out["status"] = status
    return out


def test_the_cpu_target_is_a_resource_metric() -> None:
    stored = v1_to_storage(v1({"minReplicas": 1, "maxReplicas": 5, "targetCPUUtilizationPercentage": 50}))
    assert stored["apiVersion"] == "autoscaling/v2"
    assert stored["spec"] == {"scaleTargetRef": REF, "minReplicas": 1, "maxReplicas": 5, "metrics": [CPU_50]}
    back = v2_to_v1(stored)
    assert back["spec"] == {
        "scaleTargetRef": REF,
        "minReplicas": 1,
        "maxReplicas": 5,
        "targetCPUUtilizationPercentage": 50,
    }
    assert "annotations" not in back["metadata"]


def test_without_a_target_v1_gets_its_old_implicit_80_percent() -> None:
    stored = v1_to_storage(v1({"maxReplicas": 3}))
    assert stored["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 80
    assert stored["spec"]["minReplicas"] == 1  # the v2 default on decoding
    assert v2_to_v1(stored)["spec"]["targetCPUUtilizationPercentage"] == 80


def test_what_v1_cannot_say_rides_in_annotations_and_comes_back() -> None:
    condition = {
        "type": "AbleToScale",
        "status": "True",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
        "reason": "SucceededGetScale",
        "message": "the HPA controller was able to get the target's current scale",
    }
    stored: dict[str, Any] = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "default", "annotations": {"team": "a"}},
        "spec": {
            "scaleTargetRef": REF,
            "minReplicas": 1,
            "maxReplicas": 5,
            "metrics": [MEMORY, CPU_50],
            "behavior": {
                "scaleDown": {
                    "stabilizationWindowSeconds": 60,
                    "policies": [{"type": "Pods", "value": 1, "periodSeconds": 30}],
                }
            },
        },
        "status": {
            "currentReplicas": 2,
            "desiredReplicas": 2,
            "currentMetrics": [
                {
                    "type": "Resource",
                    "resource": {
                        "name": "cpu",
                        "current": {"averageValue": "100m", "averageUtilization": 10},
                    },
                }
            ],
            "conditions": [condition],
        },
    }
    served = v2_to_v1(stored)
    annotations = served["metadata"]["annotations"]
    assert annotations["team"] == "a"
    assert json.loads(annotations[METRIC_SPECS_ANNOTATION]) == [
        {"type": "Resource", "resource": {"name": "memory", "targetAverageValue": "200Mi"}}
    ]
    assert json.loads(annotations[METRIC_STATUSES_ANNOTATION]) == [
        {
            "type": "Resource",
            "resource": {"name": "cpu", "currentAverageUtilization": 10, "currentAverageValue": "100m"},
        }
    ]
    assert json.loads(annotations[CONDITIONS_ANNOTATION]) == [condition]
    # The internal Go type, without JSON tags.
    assert json.loads(annotations[BEHAVIOR_ANNOTATION]) == {
        "ScaleUp": None,
        "ScaleDown": {
            "StabilizationWindowSeconds": 60,
            "SelectPolicy": None,
            "Policies": [{"Type": "Pods", "Value": 1, "PeriodSeconds": 30}],
            "Tolerance": None,
        },
    }
    assert served["spec"]["targetCPUUtilizationPercentage"] == 50
    assert served["status"] == {
        "currentReplicas": 2,
        "desiredReplicas": 2,
        "currentCPUUtilizationPercentage": 10,
    }
    again = v1_to_v2(served)
    assert again["metadata"]["annotations"] == {"team": "a"}
    assert again["spec"]["metrics"] == [MEMORY, CPU_50]
    assert again["spec"]["behavior"] == stored["spec"]["behavior"]
    assert again["status"]["conditions"] == [condition]
    assert again["status"]["currentMetrics"] == stored["status"]["currentMetrics"]


def test_v2_defaults_complete_a_given_behavior() -> None:
    hpa: dict[str, Any] = {"spec": {"maxReplicas": 3, "behavior": {"scaleDown": {"selectPolicy": "Min"}}}}
    set_defaults_v2(hpa)
    assert hpa["spec"]["minReplicas"] == 1
    assert hpa["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 80
    assert hpa["spec"]["behavior"] == {
        "scaleUp": {
            "stabilizationWindowSeconds": 0,
            "selectPolicy": "Max",
            "policies": [
                {"type": "Pods", "value": 4, "periodSeconds": 15},
                {"type": "Percent", "value": 100, "periodSeconds": 15},
            ],
        },
        "scaleDown": {
            "selectPolicy": "Min",
            "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
        },
    }
    plain: dict[str, Any] = {"spec": {"maxReplicas": 3}}
    set_defaults_v2(plain)
    assert "behavior" not in plain["spec"]


def test_round_trip_annotations_never_survive_in_v2() -> None:
    planted: dict[str, Any] = {
        "metadata": {"name": "web", "annotations": {CONDITIONS_ANNOTATION: "[]", "team": "a"}},
        "spec": {"scaleTargetRef": REF, "maxReplicas": 3},
    }
    drop_round_trip_annotations(planted)
    assert planted["metadata"]["annotations"] == {"team": "a"}
    served = v2_to_v1({**planted, "metadata": {"name": "web", "annotations": {BEHAVIOR_ANNOTATION: "{}"}}})
    assert "annotations" not in served["metadata"]  # no behavior in the spec: nothing to carry
