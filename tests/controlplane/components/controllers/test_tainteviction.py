"""The taint eviction controller: toleration rules (pure), then evictions on a ``ManualClock`` against an
in-process API server: at once, after ``tolerationSeconds``, never, and cancelled when the taint goes.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from controlplane.api.meta import Object, format_time
from controlplane.client.manager import Manager
from controlplane.client.rest import PatchType, ResourceClient
from controlplane.clock import ManualClock
from controlplane.components.controllers import tainteviction
from controlplane.components.controllers.tainteviction import (
    ScheduledEviction,
    eviction_delay,
    matching_tolerations,
    min_toleration_seconds,
    schedule_eviction,
    tolerates,
    with_disruption_target,
)
from controlplane.trace import ListSink
from tests.support.admission import WITHOUT_CONTROLLERS
from tests.support.inprocess import condition, in_process_cluster, wait_for

#: The pods here have exactly the tolerations they are written with: a pod without one is evicted at
#: once (in a cluster, DefaultTolerationSeconds admission would give it 300 s).
NO_DEFAULT_TOLERATIONS = WITHOUT_CONTROLLERS.without("DefaultTolerationSeconds")

T0 = 1_790_000_000.0
UNREACHABLE = {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": format_time(T0)}


def toleration(seconds: int | None = None, **fields: Any) -> Object:
    t: Object = {
        "key": "node.kubernetes.io/unreachable",
        "operator": "Exists",
        "effect": "NoExecute",
        **fields,
    }
    if seconds is not None:
        t["tolerationSeconds"] = seconds
    return t


# -- pure ----------------------------------------------------------------------------------------


def test_toleration_matching_follows_upstreams_rules() -> None:
    taint = {"key": "dedicated", "value": "db", "effect": "NoExecute"}
    assert tolerates({"key": "dedicated", "value": "db", "effect": "NoExecute"}, taint)  # Equal by default
    assert not tolerates({"key": "dedicated", "value": "web", "effect": "NoExecute"}, taint)
    assert tolerates({"key": "dedicated", "operator": "Exists"}, taint)  # any effect
    assert not tolerates({"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}, taint)
    assert tolerates({"operator": "Exists"}, taint)  # empty key + Exists: everything
    assert not tolerates({"key": "other", "operator": "Exists"}, taint)


def test_every_taint_needs_a_toleration_and_the_shortest_seconds_win() -> None:
    a = {"key": "a", "effect": "NoExecute"}
    b = {"key": "b", "effect": "NoExecute"}
    ta = {"key": "a", "operator": "Exists", "tolerationSeconds": 60}
    tb = {"key": "b", "operator": "Exists", "tolerationSeconds": 30}
    assert matching_tolerations([a, b], [ta]) == (False, [])
    assert matching_tolerations([a, b], [ta, tb]) == (True, [ta, tb])
    assert min_toleration_seconds([ta, tb]) == 30
    assert min_toleration_seconds([{"key": "a", "operator": "Exists"}]) is None  # forever
    assert min_toleration_seconds([{**ta, "tolerationSeconds": -5}]) == 0
    assert min_toleration_seconds([]) == 0


def test_eviction_delay_counts_only_no_execute_taints() -> None:
    no_schedule = {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"}
    assert eviction_delay([], []) is None
    assert eviction_delay([no_schedule], []) is None  # NoSchedule never evicts
    assert eviction_delay([UNREACHABLE], []) == 0
    assert eviction_delay([UNREACHABLE, no_schedule], [toleration(300)]) == 300
    assert eviction_delay([UNREACHABLE], [toleration()]) is None


def test_a_scheduled_eviction_keeps_its_start() -> None:
    first = schedule_eviction(None, 300, T0)
    assert first == ScheduledEviction(T0, T0 + 300)
    assert schedule_eviction(first, 300, T0 + 100) is first


def test_the_disruption_target_condition_says_the_taint_manager_did_it() -> None:
    status = with_disruption_target({"status": {"conditions": [{"type": "Ready", "status": "True"}]}}, T0)
    assert status is not None
    target = condition({"status": status}, "DisruptionTarget")
    assert target == {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "DeletionByTaintManager",
        "message": "Taint manager: deleting due to NoExecute taint",
        "lastTransitionTime": format_time(T0),
    }
    assert with_disruption_target({"status": status}, T0 + 5) is None


# -- the controller ----------------------------------------------------------------------------


class Reconciles(ListSink):
    def __init__(self) -> None:
        super().__init__()
        self._emitted = asyncio.Event()

    def emit(self, type: str, /, **fields: Any) -> None:
        super().emit(type, **fields)
        self._emitted.set()

    def count(self, key: str) -> int:
        return sum(1 for e in self.of_type("reconcile") if e["key"] == key)

    async def wait_count(self, key: str, at_least: int) -> None:
        async with asyncio.timeout(10):
            while self.count(key) < at_least:
                self._emitted.clear()
                await self._emitted.wait()


def pod(name: str, *tolerations: Object, node: str = "n1") -> Object:
    spec: Object = {"nodeName": node, "containers": [{"name": "app", "image": "nginx"}]}
    if tolerations:
        spec["tolerations"] = list(tolerations)
    return {"metadata": {"name": name, "namespace": "default"}, "spec": spec}


def terminating(items: list[Object], name: str) -> bool:
    """Deleted, or marked for (graceful) deletion."""
    found = next((p for p in items if p["metadata"]["name"] == name), None)
    return found is None or bool(found["metadata"].get("deletionTimestamp"))


async def test_pods_are_evicted_at_once_after_their_toleration_seconds_or_never(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    async with in_process_cluster(tmp_path, clock=clock, admission_options=NO_DEFAULT_TOLERATIONS) as cluster:
        nodes = cluster.resource("", "v1", "nodes")
        pods = cluster.resource("", "v1", "pods", "default")
        events = cluster.resource("", "v1", "events", "default")
        await nodes.create({"metadata": {"name": "n1"}, "spec": {"taints": [UNREACHABLE]}})
        await nodes.create({"metadata": {"name": "n2"}})
        await pods.create(pod("intolerant"))
        await pods.create(pod("patient", toleration(30)))
        await pods.create(pod("forever", toleration()))
        await pods.create(pod("elsewhere", node="n2"))

        sink = Reconciles()
        manager = Manager(cluster.client, clock=clock, trace=sink)
        tainteviction.add_to_manager(manager)
        async with manager:
            items = await wait_for(pods, lambda ps: terminating(ps, "intolerant"))
            intolerant = next(p for p in items if p["metadata"]["name"] == "intolerant")
            target = condition(intolerant, "DisruptionTarget")
            assert target is not None and target["reason"] == "DeletionByTaintManager"
            assert not any(terminating(items, n) for n in ("patient", "forever", "elsewhere"))
            await sink.wait_count("default/patient", 1)

            await clock.advance(20)
            assert not terminating((await pods.list())["items"], "patient")
            await clock.advance(10)
            await wait_for(pods, lambda ps: terminating(ps, "patient"))
            await clock.advance(600)
            listed = (await pods.list())["items"]
            assert not terminating(listed, "forever")
            assert not terminating(listed, "elsewhere")
            await wait_for(
                events,
                lambda es: (
                    {
                        e["message"]
                        for e in es
                        if e["reason"] == "TaintManagerEviction" and e["type"] == "Normal"
                    }
                    == {
                        "Marking for deletion Pod default/intolerant",
                        "Marking for deletion Pod default/patient",
                    }
                ),
            )


async def test_an_eviction_is_cancelled_when_the_taint_goes_away(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    async with in_process_cluster(tmp_path, clock=clock, admission_options=NO_DEFAULT_TOLERATIONS) as cluster:
        nodes: ResourceClient = cluster.resource("", "v1", "nodes")
        pods = cluster.resource("", "v1", "pods", "default")
        events = cluster.resource("", "v1", "events", "default")
        await nodes.create({"metadata": {"name": "n1"}})
        await pods.create(pod("web", toleration(300)))
        sink = Reconciles()
        manager = Manager(cluster.client, clock=clock, trace=sink)
        tainteviction.add_to_manager(manager)
        async with manager:
            await sink.wait_count("default/web", 1)
            seen = sink.count("default/web")
            await nodes.patch("n1", {"spec": {"taints": [UNREACHABLE]}}, patch_type=PatchType.MERGE)
            await sink.wait_count("default/web", seen + 1)  # the node's change reconciles its pods
            await clock.advance(200)
            seen = sink.count("default/web")
            await nodes.patch("n1", {"spec": {"taints": None}}, patch_type=PatchType.MERGE)
            await sink.wait_count("default/web", seen + 1)
            await wait_for(
                events, lambda es: any(e["message"] == "Cancelling deletion of Pod default/web" for e in es)
            )
            await clock.advance(200)  # past the original deadline
            assert not terminating((await pods.list())["items"], "web")
