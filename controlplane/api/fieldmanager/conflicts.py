"""Conflicts: an apply that would change a field another manager owns.

When a manager applies a configuration, every field it sets to a *different* value than the live
object has, or adds, is checked against the other managers' field sets. A field owned by someone
else is a **conflict**, and the apply fails as a whole (409 Conflict) unless it is forced. Applying
the same value as the live object is not a conflict: the field simply becomes co-owned.

The texts are upstream's: kubernetes-sigs/structured-merge-diff ``merge/conflict.go`` (one
:class:`Conflict` per field) and kubernetes/apimachinery
``pkg/util/managedfields/internal/conflict.go`` (``NewConflictError``, ``printManager``):

    Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using apps/v1: .spec.replicas

A manager is printed from its identifier: its name, ``with subresource "scale"`` for managers that
wrote through a subresource, and ``using <apiVersion>`` for ``Update`` managers (appliers own fields
whatever version they applied in, so no version is printed for them).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from controlplane.api.fieldmanager.fieldpath import Path, path_string

CAUSE_TYPE = "FieldManagerConflict"
"""``metav1.CauseTypeFieldManagerConflict``, the type of each conflict's cause. A ``StatusCause``'s
``Type`` is written as ``reason`` (``json:"reason,omitempty"``, staging/src/k8s.io/apimachinery/pkg/apis/
meta/v1/types.go), as every other cause's is."""


@dataclass(frozen=True, slots=True)
class Conflict:
    """One field another manager owns: ``manager`` is that manager's identifier (JSON)."""

    manager: str
    path: Path

    def __str__(self) -> str:
        return f"conflict with {print_manager(self.manager)}: {path_string(self.path)}"


def print_manager(identifier: str) -> str:
    """A manager as ``printManager`` writes it: ``"kubectl" with subresource "scale" using apps/v1``."""
    try:
        entry: Any = json.loads(identifier)
    except ValueError:
        entry = None
    if not isinstance(entry, dict):
        return json.dumps(identifier)
    text = json.dumps(entry.get("manager", ""))
    if entry.get("subresource"):
        text += f" with subresource {json.dumps(entry['subresource'])}"
    if entry.get("operation") == "Update":
        if entry.get("time"):
            return f"{text} using {entry.get('apiVersion', '')} at {entry['time']}"
        return f"{text} using {entry.get('apiVersion', '')}"
    return text


class ConflictError(Exception):
    """An apply refused because of conflicts (``merge.Conflicts``); :meth:`status` is the 409 body."""

    def __init__(self, conflicts: list[Conflict]) -> None:
        self.conflicts = list(conflicts)
        super().__init__(self.message())

    def message(self) -> str:
        """``getConflictMessage``: one line for one conflict, else a list grouped by sorted manager."""
        if len(self.conflicts) == 1:
            return f"Apply failed with 1 conflict: {self.conflicts[0]}"
        by_manager: dict[str, list[Path]] = {}
        for conflict in self.conflicts:
            by_manager.setdefault(conflict.manager, []).append(conflict.path)
        lines: list[str] = []
        for manager in sorted(by_manager):
            lines.append(f"conflicts with {print_manager(manager)}:")
            lines.extend(f"- {path_string(path)}" for path in by_manager[manager])
        return f"Apply failed with {len(self.conflicts)} conflicts: " + "\n".join(lines)

    def causes(self) -> list[dict[str, str]]:
        """``details.causes``: one ``FieldManagerConflict`` per field, with the manager and the path."""
        return [
            {
                "reason": CAUSE_TYPE,
                "message": f"conflict with {print_manager(c.manager)}",
                "field": path_string(c.path),
            }
            for c in self.conflicts
        ]

    def status(self) -> dict[str, Any]:
        """The Status of ``errors.NewApplyConflict``: 409, reason Conflict, details with causes only."""
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message(),
            "reason": "Conflict",
            "details": {"causes": self.causes()},
            "code": 409,
        }


__all__ = ["CAUSE_TYPE", "Conflict", "ConflictError", "print_manager"]
