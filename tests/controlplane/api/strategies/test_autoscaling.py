"""HorizontalPodAutoscalers: ``pkg/apis/autoscaling/v2/defaults_test.go`` and the rules of
``pkg/apis/autoscaling/validation/validation_test.go`` (``TestValidateHorizontalPodAutoscaler``),
through the v2 strategy and the v1 one (which validates the converted object)."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.api.strategies import HorizontalPodAutoscalerStrategy, HorizontalPodAutoscalerV1Strategy
from tests.controlplane.api.strategies import create, status_update, stored, update

V2 = HorizontalPodAutoscalerStrategy()
V1 = HorizontalPodAutoscalerV1Strategy()
REF = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}


def hpa(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"scaleTargetRef": REF, "minReplicas": 1, "maxReplicas": 5}
    body.update(spec)
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": body,
    }


def resource(name: str = "cpu", **target: Any) -> dict[str, Any]:
    return {"type": "Resource", "resource": {"name": name, "target": target}}


def test_defaults_min_replicas_and_the_cpu_metric_and_drops_a_given_status() -> None:
    body = hpa()
    del body["spec"]["minReplicas"]
    body["status"] = {"currentReplicas": 3}
    created = stored(V2, body)
    assert created["spec"]["minReplicas"] == 1
    assert created["spec"]["metrics"] == [resource(type="Utilization", averageUtilization=80)]
    assert "behavior" not in created["spec"]
    assert created.get("status") in (None, {})


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"minReplicas": 0}, "spec.minReplicas: Invalid value: 0: must be greater than or equal to 1"),
        ({"maxReplicas": 0}, "spec.maxReplicas: Invalid value: 0: must be greater than 0"),
        (
            {"minReplicas": 3, "maxReplicas": 2},
            "spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`",
        ),
        ({"scaleTargetRef": {"name": "web"}}, "spec.scaleTargetRef.kind: Required value"),
        ({"scaleTargetRef": {"kind": "Deployment"}}, "spec.scaleTargetRef.name: Required value"),
        (
            {"scaleTargetRef": {"kind": "Deployment", "name": "a/b"}},
            "spec.scaleTargetRef.name: Invalid value: \"a/b\": may not contain '/'",
        ),
        (
            {"metrics": [resource(type="Utilization", averageUtilization=0)]},
            "spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: must be greater than 0",
        ),
        (
            {"metrics": [resource(type="Utilization")]},
            "spec.metrics[0].resource.target.averageUtilization: Required value: "
            "must set either a target raw value or a target utilization",
        ),
        (
            {"metrics": [resource(type="Utilization", averageUtilization=50, averageValue="1")]},
            "spec.metrics[0].resource.target.averageValue: Forbidden: "
            "may not set both a target raw value and a target utilization",
        ),
        (
            {"metrics": [resource(type="Bogus", averageUtilization=50)]},
            'spec.metrics[0].resource.target.type: Invalid value: "Bogus": '
            "must be either Utilization, Value, or AverageValue",
        ),
        (
            {"metrics": [{"type": "Resource"}]},
            "spec.metrics[0].resource: Required value: must populate information for the given metric source",
        ),
        (
            {
                "metrics": [
                    {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue"}}}
                ]
            },
            "spec.metrics[0].pods.target.averageValue: Required value: "
            "must specify a positive target averageValue",
        ),
        (
            {"behavior": {"scaleUp": {"policies": []}}},
            "spec.behavior.scaleUp.policies: Required value: must specify at least one Policy",
        ),
        (
            {
                "behavior": {
                    "scaleDown": {
                        "stabilizationWindowSeconds": 3601,
                        "policies": [{"type": "Pods", "value": 1, "periodSeconds": 15}],
                    }
                }
            },
            "spec.behavior.scaleDown.stabilizationWindowSeconds: Invalid value: 3601: "
            "must be less than or equal to 3600",
        ),
        (
            {"behavior": {"scaleDown": {"policies": [{"type": "Pods", "value": 0, "periodSeconds": 1801}]}}},
            "spec.behavior.scaleDown.policies[0].value: Invalid value: 0: must be greater than zero",
        ),
        (
            {"behavior": {"scaleDown": {"policies": [{"type": "Pods", "value": 1, "periodSeconds": 1801}]}}},
            "spec.behavior.scaleDown.policies[0].periodSeconds: Invalid value: 1801: "
            "must be less than or equal to 1800",
        ),
        (
            {
                "behavior": {
                    "scaleDown": {
                        "selectPolicy": "Some",
                        "policies": [{"type": "Pods", "value": 1, "periodSeconds": 15}],
                    }
                }
            },
            'spec.behavior.scaleDown.selectPolicy: Unsupported value: "Some": '
            'supported values: "Disabled", "Max", "Min"',
        ),
    ],
)
def test_validation_messages(spec: dict[str, Any], message: str) -> None:
    _, errors = create(V2, hpa(**spec))
    assert message in errors


def test_a_given_behavior_is_completed_with_upstreams_rules() -> None:
    created = stored(V2, hpa(behavior={"scaleUp": {"stabilizationWindowSeconds": 30}}))
    assert created["spec"]["behavior"]["scaleUp"]["stabilizationWindowSeconds"] == 30
    assert created["spec"]["behavior"]["scaleUp"]["selectPolicy"] == "Max"
    assert created["spec"]["behavior"]["scaleDown"] == {
        "selectPolicy": "Max",
        "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
    }


def test_min_replicas_zero_stays_allowed_on_an_hpa_that_has_it() -> None:
    old = stored(V2, hpa())
    old["spec"]["minReplicas"] = 0  # as if created with the HPAScaleToZero gate on
    _, errors = update(V2, hpa(minReplicas=0), old)
    assert errors == [
        "spec.metrics: Forbidden: must specify at least one Object or External metric to support scaling "
        "to zero replicas"
    ]


def test_status_writes_keep_the_spec_and_refuse_negative_counts() -> None:
    old = stored(V2, hpa())
    new = hpa(maxReplicas=9)
    new["metadata"] = dict(old["metadata"])
    new["status"] = {"currentReplicas": -1, "desiredReplicas": 2}
    written, errors = status_update(V2, new, old)
    assert written["spec"]["maxReplicas"] == 5
    assert errors == ["status.currentReplicas: Invalid value: -1: must be greater than or equal to 0"]


def test_v1_defaults_min_replicas_and_validates_the_converted_object() -> None:
    body: dict[str, Any] = {
        "apiVersion": "autoscaling/v1",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": REF, "maxReplicas": 5, "targetCPUUtilizationPercentage": 50},
    }
    created = stored(V1, body)
    assert created["spec"]["minReplicas"] == 1
    assert "metrics" not in created["spec"]  # still the v1 form: the registry converts when storing
    body["spec"]["targetCPUUtilizationPercentage"] = 0
    _, errors = create(V1, body)
    assert errors == [
        "spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: must be greater than 0"
    ]
