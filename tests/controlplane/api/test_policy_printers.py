"""``printPodDisruptionBudget`` (``pkg/printers/internalversion/printers.go``): the columns
``kubectl get pdb`` shows."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from controlplane.api.printers import printer_for

NOW = datetime(2026, 1, 1, 0, 10, tzinfo=UTC)


def pdb(spec: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {"name": "web", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, **spec},
        "status": status,
    }


def test_pdb_columns() -> None:
    columns = printer_for("policy", "poddisruptionbudgets").column_definitions()
    assert [(c["name"], c["type"]) for c in columns] == [
        ("Name", "string"),
        ("Min Available", "string"),
        ("Max Unavailable", "string"),
        ("Allowed Disruptions", "integer"),
        ("Age", "string"),
    ]
    assert columns[1]["description"] == "The minimum number of pods that must be available."
    assert columns[3]["description"] == "Calculated number of pods that may be disrupted at this time."


@pytest.mark.parametrize(
    ("spec", "status", "cells"),
    [
        ({"minAvailable": 2}, {"disruptionsAllowed": 1}, ["web", "2", "N/A", 1, "10m"]),
        ({"maxUnavailable": "25%"}, {"disruptionsAllowed": 0}, ["web", "N/A", "25%", 0, "10m"]),
        ({}, {}, ["web", "N/A", "N/A", 0, "10m"]),
    ],
)
def test_pdb_rows(spec: dict[str, Any], status: dict[str, Any], cells: list[Any]) -> None:
    assert printer_for("policy", "poddisruptionbudgets").row(pdb(spec, status), NOW) == cells
