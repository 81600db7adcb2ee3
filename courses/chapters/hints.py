"""Which hint a student sees next: the one that answers what their check saw.

A step's hints are written in order of escalation, and each may be tied to a leaf of the check
(``when: <leaf id>``, docs/course-format.md). When the student asks for a hint, the first one shown is
the one tied to a leaf that is failing right now; after that the rest follow in the order written; the
solution comes last, on its own button. So a student whose ConfigMap exists but has the wrong data is
not first told how to open the form.

Pure: the order is a function of the hints, the failing leaves and how many were shown already, so the
page can show the same hints again after a reload.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Protocol


class HintSpec(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def when(self) -> str | None: ...


def hint_order(hints: Sequence[HintSpec], *, failing: Collection[str]) -> list[str]:
    """The ids of ``hints`` in the order a student with these ``failing`` leaves should see them."""
    tied = [h.id for h in hints if h.when is not None and h.when in failing]
    return tied + [h.id for h in hints if h.id not in tied]


def hints_to_show(
    hints: Sequence[HintSpec], *, shown: int, failing: Collection[str], first: Sequence[str] = ()
) -> list[str]:
    """The ids of the first ``shown`` hints. ``first`` are the ids already on the student's page, in
    order: they stay where they are (a hint never moves once read) and the rest follow by
    ``hint_order``."""
    known = {h.id for h in hints}
    order = [h for h in first if h in known]
    order += [h for h in hint_order(hints, failing=failing) if h not in order]
    return order[: max(0, shown)]
