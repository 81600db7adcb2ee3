"""``printPriorityClass`` (``pkg/printers/internalversion/printers.go``): what ``kubectl get
priorityclasses`` shows."""

from __future__ import annotations

from datetime import UTC, datetime

from controlplane.api.printers import printer_for

NOW = datetime(2026, 1, 1, 0, 10, tzinfo=UTC)


def test_priority_class_columns_and_cells() -> None:
    printer = printer_for("scheduling.k8s.io", "priorityclasses")
    columns = printer.column_definitions()
    assert [c["name"] for c in columns] == ["Name", "Value", "Global-Default", "Age", "PreemptionPolicy"]
    assert [c["type"] for c in columns] == ["string", "integer", "boolean", "string", "string"]
    assert all(c["priority"] == 0 for c in columns), "upstream shows PreemptionPolicy without -o wide"
    high = {
        "metadata": {"name": "high", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "value": 1000,
        "globalDefault": True,
        "preemptionPolicy": "Never",
    }
    assert printer.row(high, NOW) == ["high", 1000, True, "10m", "Never"]
    bare = {"metadata": {"name": "bare", "creationTimestamp": "2026-01-01T00:09:30Z"}, "value": -5}
    assert printer.row(bare, NOW) == ["bare", -5, False, "30s", ""]
