"""The fault service's rules, with its effects recorded instead of done, on a lab that is a stand-in.

Time is a ``ManualClock``: a fault's end comes when the test moves the clock, never by waiting. The
trace events are checked against the schema (``controlplane/trace/schema.py``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from controlplane.clock import ManualClock
from controlplane.faults.book import Fault, Outcome
from controlplane.faults.catalogue import CATALOGUE, InvalidFault
from controlplane.faults.service import EffectFailed, FaultService, NotRunning
from controlplane.runtime import ClusterState
from controlplane.store.errors import UnknownCluster
from controlplane.trace import TraceBus
from controlplane.trace.schema import validate


@dataclass
class Recorded:
    """An effect that records what it was asked to do (and fails when told to)."""

    calls: list[tuple[str, str, str]]
    fail: bool = False

    async def apply(self, lab: Any, cluster: Any, fault: Fault) -> None:
        self.calls.append(("apply", fault.kind, cluster.name))
        if self.fail:
            raise RuntimeError("it broke")

    async def clear(self, lab: Any, cluster: Any, fault: Fault) -> None:
        self.calls.append(("clear", fault.kind, cluster.name))

    async def stopping(self, cluster: Any, fault: Fault) -> None:
        self.calls.append(("stopping", fault.kind, cluster.name))


@dataclass
class FakeCluster:
    name: str
    trace: TraceBus
    nodes: int = 3
    state: ClusterState = ClusterState.RUNNING
    faults_in_force: list[dict[str, Any]] = field(default_factory=list)
    components_running: dict[str, object] = field(default_factory=dict)
    started: list[str] = field(default_factory=list)
    #: No API server runs here, so there is no audit log to write the faults to.
    apiserver: None = None

    def component_plan(self) -> list[tuple[str, str]]:
        return [("scheduler", ""), ("kubelet", "node-1"), ("kubelet", "node-2")]

    async def start_component(self, trace_id: str) -> bool:
        self.started.append(trace_id)
        self.components_running[trace_id] = object()
        return True


@dataclass
class Config:
    clock: ManualClock


class FakeLab:
    """What the service asks of a lab: its clusters, its clock, its stop hooks, restarts."""

    def __init__(self, *names: str) -> None:
        self.config = Config(ManualClock())
        self.clusters = {name: FakeCluster(name, TraceBus(name, now=self.config.clock.now)) for name in names}
        self.hooks: list[Callable[[str], Awaitable[None]]] = []
        self.serving_now = True
        self.restarted: list[str] = []

    def cluster(self, name: str) -> FakeCluster:
        try:
            return self.clusters[name]
        except KeyError:
            raise UnknownCluster(name) from None

    def add_stop_hook(self, hook: Callable[[str], Awaitable[None]]) -> None:
        self.hooks.append(hook)

    def serving(self, name: str) -> bool:
        return self.serving_now

    async def settled(self, name: str) -> None:
        return None

    async def restart_apiserver(self, name: str) -> None:
        self.restarted.append(name)
        self.serving_now = True

    async def stop(self, name: str) -> None:
        for hook in self.hooks:
            await hook(name)


_made: list[FaultService] = []


def service(lab: FakeLab, calls: list[tuple[str, str, str]], **failing: bool) -> FaultService:
    kinds = {name: Recorded(calls, fail=failing.get(name.replace("-", "_"), False)) for name in CATALOGUE}
    made = FaultService(lab, kinds=kinds)  # type: ignore[arg-type]
    _made.append(made)
    return made


def events(lab: FakeLab, name: str = "a") -> list[dict[str, Any]]:
    found = lab.cluster(name).trace.recorder.since(0)
    for event in found:
        assert validate(event, strict=True) == [], event
    return [{k: v for k, v in e.items() if k not in ("v", "cluster", "seq", "ts")} for e in found]


@pytest.fixture
async def lab() -> AsyncIterator[FakeLab]:
    made = FakeLab("a", "b")
    for cluster in made.clusters.values():
        cluster.trace.subscribe()  # someone watches: the trace records
    yield made
    while _made:
        await _made.pop().close()


async def test_a_lasting_fault_is_announced_done_and_undone_when_its_time_is_up(lab: FakeLab) -> None:
    calls: list[tuple[str, str, str]] = []
    faults = service(lab, calls)
    applied = await faults.apply("a", "stop-kubelet", {"node": "node-2", "for": 60}, reason="chapter c/ch")
    assert applied.outcome is Outcome.APPLIED and calls == [("apply", "stop-kubelet", "a")]
    assert lab.cluster("a").faults_in_force == [{"fault": "stop-kubelet", "target": "kubelet:node-2"}]
    now = lab.config.clock.now()
    await lab.config.clock.advance(59)
    assert faults.in_force("a") != [] and len(calls) == 1
    await lab.config.clock.advance(1)
    assert calls[-1] == ("clear", "stop-kubelet", "a") and faults.in_force() == []
    assert lab.cluster("a").faults_in_force == []
    on, off = events(lab)
    assert on == {
        "type": "fault.applied",
        "from": "kubelet:node-2",
        "fault": "stop-kubelet",
        "target": "kubelet:node-2",
        "params": {"node": "node-2"},
        "reason": "chapter c/ch",
        "expires": now + 60,
    }
    assert off["type"] == "fault.cleared" and off["reason"] == "its time is up"


async def test_a_fault_that_happens_at_once_is_cleared_once_done(lab: FakeLab) -> None:
    calls: list[tuple[str, str, str]] = []
    faults = service(lab, calls)
    applied = await faults.apply("a", "compact-store")
    assert applied.outcome is Outcome.APPLIED and faults.in_force() == []
    assert [(e["type"], e.get("reason")) for e in events(lab)] == [
        ("fault.applied", None),
        ("fault.cleared", "done"),
    ]
    with pytest.raises(InvalidFault, match="nothing to clear"):
        await faults.clear("a", "compact-store", {})


async def test_applying_again_renews_and_other_faults_stack(lab: FakeLab) -> None:
    calls: list[tuple[str, str, str]] = []
    faults = service(lab, calls)
    first = await faults.apply("a", "stop-kubelet", {"node": "node-1", "for": 10})
    await lab.config.clock.advance(8)
    again = await faults.apply("a", "stop-kubelet", {"node": "node-1", "for": 10})
    assert again.outcome is Outcome.RENEWED and again.fault.id == first.fault.id
    assert calls == [("apply", "stop-kubelet", "a")], "the kubelet is not stopped twice"
    await faults.apply("a", "stop-kubelet", {"node": "node-2"})
    await faults.apply("a", "hot-loop-client", {})
    await lab.config.clock.advance(9)
    assert [f.kind for f in faults.in_force("a")] == ["stop-kubelet", "stop-kubelet", "hot-loop-client"]
    await lab.config.clock.advance(1)
    assert [f.spec.parameters().get("node") for f in faults.in_force("a")] == ["node-2", None]


async def test_a_delayed_fault_starts_when_its_time_comes(lab: FakeLab) -> None:
    calls: list[tuple[str, str, str]] = []
    faults = service(lab, calls)
    applied = await faults.apply("a", "restart-apiserver", delay=30)
    assert applied.outcome is Outcome.PENDING and calls == [] and events(lab) == []
    await lab.config.clock.advance(30)
    assert calls == [("apply", "restart-apiserver", "a")]
    assert [e["type"] for e in events(lab)] == ["fault.applied", "fault.cleared"]


async def test_what_cannot_be_applied(lab: FakeLab) -> None:
    faults = service(lab, [])
    with pytest.raises(InvalidFault, match="'node-4': the cluster has 3 node"):
        await faults.apply("a", "stop-kubelet", {"node": "node-4"})
    with pytest.raises(UnknownCluster):
        await faults.apply("nope", "compact-store")
    lab.cluster("b").state = ClusterState.HIBERNATED
    with pytest.raises(NotRunning, match="'b' is hibernated"):
        await faults.apply("b", "compact-store")
    assert faults.in_force() == [] and events(lab) == events(lab, "b") == []


async def test_an_effect_that_fails_leaves_no_fault_in_force(lab: FakeLab) -> None:
    faults = service(lab, [], stop_kubelet=True)
    with pytest.raises(EffectFailed, match="stop-kubelet could not be applied to 'a': it broke"):
        await faults.apply("a", "stop-kubelet", {"node": "node-1"})
    assert faults.in_force() == [] and lab.cluster("a").faults_in_force == []
    assert [(e["type"], e.get("reason")) for e in events(lab)] == [
        ("fault.applied", None),
        ("fault.cleared", "failed: it broke"),
    ]


async def test_clear_all_clears_everything_and_heals(lab: FakeLab) -> None:
    calls: list[tuple[str, str, str]] = []
    faults = service(lab, calls)
    await faults.apply("a", "stop-kubelet", {"node": "node-1"})
    await faults.apply("a", "hot-loop-client", {"for": 60})
    await faults.apply("a", "stop-kubelet", {"node": "node-2"}, delay=5)
    await faults.apply("b", "stop-kubelet", {"node": "node-1"})
    cluster = lab.cluster("a")
    cluster.components_running = {"scheduler": object()}  # both kubelets are down, one of them wedged
    lab.serving_now = False  # and the API server does not answer

    cleared = await faults.clear_all("a", reason="the instructor")

    assert sorted(f.kind for f in cleared) == ["hot-loop-client", "stop-kubelet", "stop-kubelet"]
    assert faults.in_force("a") == [] and faults.pending("a") == []
    assert [f.cluster for f in faults.in_force()] == ["b"], "another cluster's faults stay"
    assert lab.restarted == ["a"] and cluster.started == ["kubelet:node-1", "kubelet:node-2"]
    cleared_events = [e for e in events(lab) if e["type"] == "fault.cleared"]
    assert [e["fault"] for e in cleared_events] == ["stop-kubelet", "hot-loop-client"], (
        "the pending one never began"
    )
    assert {e["reason"] for e in cleared_events} == {"the instructor"}


async def test_a_cluster_that_stops_loses_its_faults_without_their_undoing(lab: FakeLab) -> None:
    calls: list[tuple[str, str, str]] = []
    faults = service(lab, calls)
    await faults.apply("a", "stop-kubelet", {"node": "node-1"})
    await faults.apply("a", "hot-loop-client", {}, delay=60)
    await lab.stop("a")
    assert faults.in_force("a") == [] and faults.pending("a") == []
    assert calls == [("apply", "stop-kubelet", "a"), ("stopping", "stop-kubelet", "a")]
    assert events(lab)[-1]["reason"] == "the cluster stops"
    await lab.config.clock.advance(120)
    assert len(calls) == 2, "nothing started later on a cluster that stopped"


async def test_the_service_of_a_lab_is_one(tmp_path: Path) -> None:
    from controlplane.runtime import Lab, LabConfig

    real = Lab(LabConfig(data_dir=tmp_path))
    assert FaultService.of(real) is FaultService.of(real)
    await asyncio.sleep(0)
