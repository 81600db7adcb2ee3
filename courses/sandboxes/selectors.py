"""Reading a student's sandbox for its page, without making, waking or changing anything."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from courses import gateway
from courses.sandboxes.models import Sandbox


@dataclass(frozen=True, slots=True)
class SandboxSummary:
    """What the sandbox page shows."""

    cluster: str
    #: The cluster's state in the lab here (``running``, ``hibernated`` ...), or None if this process
    #: does not run it.
    state: str | None
    #: The timing profile in force and the simulated nodes (None, None when not run here).
    timing: str | None
    nodes: int | None
    created: datetime
    resets: int


async def sandbox_summary(*, user_id: int) -> SandboxSummary | None:
    """The sandbox of account ``user_id`` as it is now; None if they have none yet."""
    row = await Sandbox.objects.filter(user_id=user_id).afirst()
    if row is None:
        return None
    try:
        facts = gateway.cluster_facts(cluster=row.cluster)
    except gateway.NotServedHere:
        return SandboxSummary(row.cluster, None, None, None, row.created, row.resets)
    return SandboxSummary(row.cluster, facts.state, facts.timing, facts.nodes, row.created, row.resets)


__all__ = ["SandboxSummary", "sandbox_summary"]
