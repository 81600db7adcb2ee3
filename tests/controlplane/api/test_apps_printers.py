"""``printDaemonSet``, ``printStatefulSet`` and ``printControllerRevision``
(``pkg/printers/internalversion/printers.go``): the columns ``kubectl get daemonsets``, ``kubectl get
statefulsets`` and ``kubectl get controllerrevisions`` show."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from controlplane.api.printers import printer_for

NOW = datetime(2026, 1, 1, 0, 10, tzinfo=UTC)


def test_daemon_set_columns_and_row() -> None:
    printer = printer_for("apps", "daemonsets")
    columns = printer.column_definitions()
    assert [c["name"] for c in columns] == [
        "Name",
        "Desired",
        "Current",
        "Ready",
        "Up-to-date",
        "Available",
        "Node Selector",
        "Age",
        "Containers",
        "Images",
        "Selector",
    ]
    assert [c["priority"] for c in columns] == [0] * 8 + [1, 1, 1]
    assert [c["type"] for c in columns][1:6] == ["integer"] * 5
    ds: dict[str, Any] = {
        "metadata": {"name": "agent", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {
                "spec": {
                    "nodeSelector": {"zone": "a", "disk": "ssd"},
                    "containers": [{"name": "a", "image": "fluentd"}, {"name": "b", "image": "busybox"}],
                }
            },
        },
        "status": {
            "desiredNumberScheduled": 3,
            "currentNumberScheduled": 3,
            "numberReady": 2,
            "updatedNumberScheduled": 1,
            "numberAvailable": 2,
        },
    }
    assert printer.row(ds, NOW) == [
        "agent",
        3,
        3,
        2,
        1,
        2,
        "disk=ssd,zone=a",
        "10m",
        "a,b",
        "fluentd,busybox",
        "app=agent",
    ]
    del ds["spec"]["template"]["spec"]["nodeSelector"]
    ds["status"] = {}
    assert printer.row(ds, NOW)[1:7] == [0, 0, 0, 0, 0, "<none>"]


def test_controller_revision_columns_and_row() -> None:
    printer = printer_for("apps", "controllerrevisions")
    assert [c["name"] for c in printer.column_definitions()] == ["Name", "Controller", "Revision", "Age"]
    revision: dict[str, Any] = {
        "metadata": {
            "name": "agent-5d8f9",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "DaemonSet",
                    "name": "agent",
                    "uid": "u",
                    "controller": True,
                }
            ],
        },
        "revision": 2,
    }
    assert printer.row(revision, NOW) == ["agent-5d8f9", "daemonset.apps/agent", 2, "10m"]
    revision["metadata"]["ownerReferences"] = []
    assert printer.row(revision, NOW)[1] == "<none>"


def test_stateful_set_columns_and_row() -> None:
    printer = printer_for("apps", "statefulsets")
    assert [c["name"] for c in printer.column_definitions()] == [
        "Name",
        "Ready",
        "Age",
        "Containers",
        "Images",
    ]
    sts: dict[str, Any] = {
        "metadata": {"name": "web", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "web", "image": "nginx"}]}}},
        "status": {"readyReplicas": 2},
    }
    assert printer.row(sts, NOW) == ["web", "2/3", "10m", "web", "nginx"]
