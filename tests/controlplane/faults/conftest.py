"""A lab with one running cluster on fast timers, its fault service, an admin client and its trace.

The cluster runs upstream's timers 25 times faster (a node is judged unreachable after 2 s, not 50 s),
with the leader election's at the classroom profile's, as ``tests/controlplane/test_cluster.py`` does.
Tests never sleep: ``Trace.until`` waits for the event that proves the next step happened.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from controlplane.client.config import Config
from controlplane.client.rest import RESTClient
from controlplane.faults.service import FaultService
from controlplane.identity import SYSTEM_MASTERS
from controlplane.runtime import Cluster, Lab, LabConfig
from controlplane.timing import CLASSROOM, UPSTREAM, TimingProfile
from controlplane.trace.bus import Subscription

FAST = dataclasses.replace(
    UPSTREAM.scaled(1 / 25, name="test"),
    leader_lease_duration=CLASSROOM.leader_lease_duration,
    leader_renew_deadline=CLASSROOM.leader_renew_deadline,
    leader_retry_period=CLASSROOM.leader_retry_period,
)
#: ``FAST`` with a leader Lease of 4 s (renewed within 3 s, tried every 0.5 s): upstream's ratios.
QUICK_LEASES = dataclasses.replace(
    FAST, leader_lease_duration=4.0, leader_renew_deadline=3.0, leader_retry_period=0.5
)
NAME = "faulty"
#: Seconds a test waits for what it expects (never spent when things work).
TIMEOUT = 30.0

Event = dict[str, Any]


@dataclass
class Trace:
    """Every trace event of a cluster from the moment it was made, collected as they come."""

    subscription: Subscription
    events: list[Event] = field(default_factory=list)
    _arrived: asyncio.Event = field(default_factory=asyncio.Event)
    _task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._collect())

    async def _collect(self) -> None:
        async for batch in self.subscription:
            self.events.extend(batch.events)
            self._arrived.set()

    async def until(
        self, matches: Callable[[Event], bool], *, after: int = 0, seconds: float = TIMEOUT
    ) -> Event:
        """The first event after index ``after`` that ``matches``, waiting for it if need be."""
        seen = after
        async with asyncio.timeout(seconds):
            while True:
                events = self.events
                found = next((events[i] for i in range(seen, len(events)) if matches(events[i])), None)
                if found is not None:
                    return found
                seen = len(events)  # looked at already: only newer events are looked at next time
                self._arrived.clear()
                await self._arrived.wait()

    async def nth(self, matches: Callable[[Event], bool], n: int, *, after: int = 0) -> Event:
        """The ``n``-th event after index ``after`` that ``matches`` (1 is the first)."""
        found = await self.until(matches, after=after)
        for _ in range(n - 1):
            found = await self.until(matches, after=self.index(found) + 1)
        return found

    def index(self, event: Event) -> int:
        """Where ``event`` is in ``events`` (found by its seq: the bus numbers them without gaps)."""
        return int(event["seq"]) - int(self.events[0]["seq"])

    async def close(self) -> None:
        self.subscription.close()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


@dataclass
class Running:
    lab: Lab
    cluster: Cluster
    faults: FaultService
    admin: RESTClient
    trace: Trace

    def client(self) -> RESTClient:
        """Another admin client, through the cluster's endpoint."""
        token = self.cluster.tokens.issue("admin2", [SYSTEM_MASTERS])
        return RESTClient(
            Config.for_in_process(
                self.cluster.endpoint, NAME, mount_prefix=f"/clusters/{NAME}", bearer_token=token, qps=-1
            )
        )


@pytest.fixture
async def running(tmp_path: Path) -> AsyncIterator[Running]:
    async with run_lab(tmp_path, FAST) as started:
        yield started


@pytest.fixture
async def quick_leases(tmp_path: Path) -> AsyncIterator[Running]:
    """As ``running``, with leader Leases that expire after 4 s, not 15: for the tests that wait for
    a Lease left held by a component that was killed (or that, like kube-controller-manager, does not
    give it up) to expire."""
    async with run_lab(tmp_path, QUICK_LEASES) as started:
        yield started


@contextlib.asynccontextmanager
async def run_lab(tmp_path: Path, timing: TimingProfile) -> AsyncIterator[Running]:
    lab = Lab(LabConfig(data_dir=tmp_path, demo_cluster=NAME, nodes=3, timing=timing))
    trace = Trace(lab.trace_bus(NAME).subscribe())  # from before the components' first requests
    trace.start()
    await lab.start()
    cluster = lab.cluster(NAME)
    token = cluster.tokens.issue("admin", [SYSTEM_MASTERS])
    admin = RESTClient(
        Config.for_in_process(
            cluster.endpoint, NAME, mount_prefix=f"/clusters/{NAME}", bearer_token=token, qps=-1
        )
    )
    try:
        yield Running(lab, cluster, FaultService.of(lab), admin, trace)
    finally:
        await admin.aclose()
        await trace.close()
        await lab.stop()
