"""``printJob`` and ``printCronJob`` (``pkg/printers/internalversion/printers.go``): the columns
``kubectl get jobs`` and ``kubectl get cronjobs`` show."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from controlplane.api.printers import printer_for

NOW = datetime(2026, 1, 1, 0, 10, tzinfo=UTC)


def job(spec: dict[str, Any], status: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "pi", "creationTimestamp": "2026-01-01T00:00:00Z", **meta},
        "spec": {
            "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}},
            "template": {"spec": {"containers": [{"name": "pi", "image": "perl"}]}},
            **spec,
        },
        "status": status,
    }


def test_job_columns() -> None:
    printer = printer_for("batch", "jobs")
    names = [c["name"] for c in printer.column_definitions()]
    assert names == ["Name", "Status", "Completions", "Duration", "Age", "Containers", "Images", "Selector"]
    assert [c["priority"] for c in printer.column_definitions()][5:] == [1, 1, 1]


@pytest.mark.parametrize(
    ("spec", "status", "meta", "cells"),
    [
        (
            {"completions": 1, "parallelism": 1},
            {},
            {},
            ["pi", "Running", "0/1", ""],
        ),
        (
            {"completions": 3},
            {
                "succeeded": 3,
                "startTime": "2026-01-01T00:00:00Z",
                "completionTime": "2026-01-01T00:01:05Z",
                "conditions": [{"type": "Complete", "status": "True"}],
            },
            {},
            ["pi", "Complete", "3/3", "65s"],
        ),
        ({"parallelism": 4}, {"succeeded": 1}, {}, ["pi", "Running", "1/1 of 4", ""]),
        ({"parallelism": 1}, {}, {}, ["pi", "Running", "0/1", ""]),
        (
            {"completions": 1},
            {"startTime": "2026-01-01T00:05:00Z", "conditions": [{"type": "Failed", "status": "True"}]},
            {},
            ["pi", "Failed", "0/1", "5m"],
        ),
        (
            {"completions": 1},
            {"conditions": [{"type": "FailureTarget", "status": "True"}]},
            {"deletionTimestamp": "2026-01-01T00:09:00Z"},
            ["pi", "Terminating", "0/1", ""],
        ),
        (
            {"completions": 1, "suspend": True},
            {"conditions": [{"type": "Suspended", "status": "True"}]},
            {},
            ["pi", "Suspended", "0/1", ""],
        ),
        (
            {"completions": 1},
            {"conditions": [{"type": "SuccessCriteriaMet", "status": "True"}]},
            {},
            ["pi", "SuccessCriteriaMet", "0/1", ""],
        ),
    ],
)
def test_job_rows(
    spec: dict[str, Any], status: dict[str, Any], meta: dict[str, Any], cells: list[str]
) -> None:
    row = printer_for("batch", "jobs").row(job(spec, status, **meta), NOW)
    assert row[:4] == cells
    assert row[4:] == ["10m", "pi", "perl", "batch.kubernetes.io/controller-uid=u1"]


def test_cronjob_rows() -> None:
    printer = printer_for("batch", "cronjobs")
    names = [c["name"] for c in printer.column_definitions()]
    assert names[:7] == ["Name", "Schedule", "Timezone", "Suspend", "Active", "Last Schedule", "Age"]
    cronjob: dict[str, Any] = {
        "metadata": {"name": "hello", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {
            "schedule": "*/1 * * * *",
            "suspend": False,
            "jobTemplate": {
                "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}
            },
        },
        "status": {"active": [{"name": "hello-1"}], "lastScheduleTime": "2026-01-01T00:09:00Z"},
    }
    assert printer.row(cronjob, NOW) == [
        "hello",
        "*/1 * * * *",
        "<none>",
        "False",
        1,
        "60s",
        "10m",
        "c",
        "busybox",
        "<none>",
    ]
    cronjob["spec"]["timeZone"] = "Europe/Paris"
    del cronjob["status"]
    assert printer.row(cronjob, NOW)[2:6] == ["Europe/Paris", "False", 0, "<none>"]
