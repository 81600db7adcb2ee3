"""``printHorizontalPodAutoscaler`` and ``formatHPAMetrics`` (``pkg/printers/internalversion/printers.go``):
the columns ``kubectl get hpa`` shows, for v2 objects and v1 objects (converted first)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from controlplane.api.printers import format_hpa_metrics, printer_for

NOW = datetime(2026, 1, 1, 0, 10, tzinfo=UTC)
CPU_80 = {
    "type": "Resource",
    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
}


def hpa(spec: dict[str, Any], status: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "metadata": {"name": "web", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, **spec},
        "status": status or {},
    }


def test_columns_and_a_row_without_metrics() -> None:
    printer = printer_for("autoscaling", "horizontalpodautoscalers")
    names = [c["name"] for c in printer.column_definitions()]
    assert names == ["Name", "Reference", "Targets", "MinPods", "MaxPods", "Replicas", "Age"]
    row = printer.row(
        hpa({"minReplicas": 2, "maxReplicas": 5, "metrics": [CPU_80]}, {"currentReplicas": 2}), NOW
    )
    assert row == ["web", "Deployment/web", "cpu: <unknown>/80%", "2", 5, 2, "10m"]


def test_a_v1_object_prints_as_its_v2_form() -> None:
    v1 = {
        "apiVersion": "autoscaling/v1",
        "metadata": {"name": "web", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {
            "scaleTargetRef": {"kind": "Deployment", "name": "web"},
            "maxReplicas": 3,
            "targetCPUUtilizationPercentage": 50,
        },
        "status": {"currentReplicas": 1, "desiredReplicas": 1, "currentCPUUtilizationPercentage": 12},
    }
    row = printer_for("autoscaling", "horizontalpodautoscalers").row(v1, NOW)
    assert row == ["web", "Deployment/web", "cpu: 12%/50%", "<unset>", 3, 1, "10m"]


@pytest.mark.parametrize(
    ("specs", "statuses", "expected"),
    [
        ([], [], "<none>"),
        ([CPU_80], [{"type": ""}], "cpu: <unknown>/80%"),
        (
            [CPU_80],
            [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 50}}}],
            "cpu: 50%/80%",
        ),
        (
            [
                {
                    "type": "Resource",
                    "resource": {
                        "name": "memory",
                        "target": {"type": "AverageValue", "averageValue": "200Mi"},
                    },
                }
            ],
            [],
            "memory: <unknown>/200Mi",
        ),
        (
            [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization"}}}],
            [],
            "cpu: <unknown>/<auto>",
        ),
        (
            [
                {
                    "type": "Pods",
                    "pods": {
                        "metric": {"name": "qps"},
                        "target": {"type": "AverageValue", "averageValue": "1k"},
                    },
                }
            ],
            [{"type": "Pods", "pods": {"metric": {"name": "qps"}, "current": {"averageValue": "500"}}}],
            "500/1k",
        ),
        (
            [
                {
                    "type": "External",
                    "external": {
                        "metric": {"name": "q"},
                        "target": {"type": "AverageValue", "averageValue": "30"},
                    },
                }
            ],
            [],
            "<unknown>/30 (avg)",
        ),
        (
            [
                {
                    "type": "Object",
                    "object": {"metric": {"name": "q"}, "target": {"type": "Value", "value": "10"}},
                }
            ],
            [],
            "<unknown>/10",
        ),
        ([CPU_80, CPU_80, CPU_80, CPU_80], [], "cpu: <unknown>/80%, cpu: <unknown>/80% + 2 more..."),
    ],
)
def test_format_hpa_metrics(specs: list[Any], statuses: list[Any], expected: str) -> None:
    assert format_hpa_metrics(specs, statuses) == expected
