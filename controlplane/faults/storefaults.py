"""What ``slow-store`` and ``store-unavailable`` do to a running cluster: the store's conditions.

The store checks its ``conditions`` (``controlplane/store/conditions.py``) on each read, commit and
new watch, and nothing more while they are None. These effects keep, per cluster, what each store
fault in force asks for, and set the store's conditions to all of them at once (the slowest commit
delay, unreachable if any says so), or back to None when the last one ends.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from controlplane.faults.book import Fault
from controlplane.store.conditions import StoreConditions

if TYPE_CHECKING:
    from controlplane.runtime import Cluster, Lab


def combined(wanted: list[StoreConditions]) -> StoreConditions | None:
    """The conditions of several faults at once (None: none in force). Pure."""
    if not wanted:
        return None
    return StoreConditions(
        commit_delay=max(c.commit_delay for c in wanted), unreachable=any(c.unreachable for c in wanted)
    )


class StoreFaults:
    """What every store fault in force on each cluster asks for, by fault id."""

    def __init__(self) -> None:
        self._wanted: dict[tuple[str, int], dict[str, StoreConditions]] = {}

    def add(self, cluster: Cluster, fault: Fault, conditions: StoreConditions) -> None:
        self._wanted.setdefault((cluster.name, cluster.incarnation), {})[fault.id] = conditions
        self._set(cluster)

    def end(self, cluster: Cluster, fault: Fault) -> None:
        key = (cluster.name, cluster.incarnation)
        wanted = self._wanted.get(key, {})
        wanted.pop(fault.id, None)
        if not wanted:
            self._wanted.pop(key, None)
        self._set(cluster)

    def _set(self, cluster: Cluster) -> None:
        wanted = self._wanted.get((cluster.name, cluster.incarnation), {})
        cluster.store.conditions = combined(list(wanted.values()))


class SlowStore:
    """Every commit of the store takes the fault's ``delay`` (milliseconds) longer."""

    def __init__(self, faults: StoreFaults) -> None:
        self.faults = faults

    async def apply(self, lab: Lab, cluster: Cluster, fault: Fault) -> None:
        delay = int(fault.spec.parameters()["delay"]) / 1000
        self.faults.add(cluster, fault, StoreConditions(commit_delay=delay))

    async def clear(self, lab: Lab, cluster: Cluster, fault: Fault) -> None:
        self.faults.end(cluster, fault)

    async def stopping(self, cluster: Cluster, fault: Fault) -> None:
        self.faults.end(cluster, fault)


class StoreUnavailable:
    """The API server cannot reach the store."""

    def __init__(self, faults: StoreFaults) -> None:
        self.faults = faults

    async def apply(self, lab: Lab, cluster: Cluster, fault: Fault) -> None:
        self.faults.add(cluster, fault, StoreConditions(unreachable=True))

    async def clear(self, lab: Lab, cluster: Cluster, fault: Fault) -> None:
        self.faults.end(cluster, fault)

    async def stopping(self, cluster: Cluster, fault: Fault) -> None:
        self.faults.end(cluster, fault)


__all__ = ["SlowStore", "StoreFaults", "StoreUnavailable", "combined"]
