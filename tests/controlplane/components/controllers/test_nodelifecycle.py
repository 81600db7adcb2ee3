"""The node lifecycle controller: the health rules (pure, ``nodehealth``), then the controller against
an in-process API server on a ``ManualClock``, with the test playing the kubelet (Node + Lease).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from controlplane.api.meta import Object, format_time
from controlplane.client.manager import Manager
from controlplane.client.rest import PatchType, ResourceClient
from controlplane.clock import ManualClock
from controlplane.components.controllers import nodelifecycle
from controlplane.components.controllers.nodehealth import (
    MESSAGE_STATUS_UNKNOWN,
    REASON_STATUS_UNKNOWN,
    NodeHealth,
    conditions_when_silent,
    health_expired,
    no_execute_changes,
    no_schedule_changes,
    observe_node_health,
    pod_marked_not_ready,
    swap_taints,
)
from controlplane.trace import ListSink
from tests.support.inprocess import condition, in_process_cluster, wait_for

T0 = 1_790_000_000.0


def node(name: str, *, ready: str | None = "True", heartbeat: float = T0, created: float = T0) -> Object:
    conditions = []
    if ready is not None:
        stamp = format_time(heartbeat)
        conditions.append(
            {
                "type": "Ready",
                "status": ready,
                "reason": "KubeletReady",
                "message": "kubelet is posting ready status",
                "lastHeartbeatTime": stamp,
                "lastTransitionTime": format_time(created),
            }
        )
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "creationTimestamp": format_time(created)},
        "status": {"conditions": conditions},
    }


def lease(name: str, renew: float) -> Object:
    return {"metadata": {"name": name, "namespace": "kube-node-lease"}, "spec": {"renewTime": micro(renew)}}


def micro(t: float) -> str:
    return format_time(t).replace("Z", ".000000Z")


# -- pure: health bookkeeping --------------------------------------------------------------------


def test_a_node_is_unknown_only_after_the_grace_period_without_heartbeats() -> None:
    health, grace = observe_node_health(None, node("n1"), lease("n1", T0), T0)
    assert grace == 50.0
    assert health.probe_timestamp == T0
    # Nothing new seen: the probe timestamp stays, and 50 s is the limit (strictly after).
    later, _ = observe_node_health(health, node("n1"), lease("n1", T0), T0 + 50)
    assert later.probe_timestamp == T0
    assert not health_expired(later, grace, T0 + 50)
    assert health_expired(later, grace, T0 + 50.5)


def test_a_renewed_lease_or_a_new_heartbeat_is_a_probe_at_the_controllers_own_time() -> None:
    health, _ = observe_node_health(None, node("n1"), lease("n1", T0), T0)
    # The kubelet's clock says T0+1000 is the renew time: only that it moved matters; the probe is now.
    renewed, _ = observe_node_health(health, node("n1"), lease("n1", T0 + 1000), T0 + 40)
    assert renewed.probe_timestamp == T0 + 40
    assert renewed.lease_renew_time == T0 + 1000
    beat, _ = observe_node_health(renewed, node("n1", heartbeat=T0 + 45), lease("n1", T0 + 1000), T0 + 45)
    assert beat.probe_timestamp == T0 + 45
    # A lease renewed "backwards" is not a heartbeat.
    back, _ = observe_node_health(beat, node("n1", heartbeat=T0 + 45), lease("n1", T0 + 10), T0 + 60)
    assert back.probe_timestamp == T0 + 45


def test_a_node_that_never_posted_ready_gets_the_startup_grace_from_its_creation() -> None:
    health, grace = observe_node_health(None, node("n1", ready=None, created=T0 - 30), None, T0)
    assert grace == 60.0
    assert health == NodeHealth(T0 - 30, T0 - 30, None)
    assert not health_expired(health, grace, T0 + 30)
    assert health_expired(health, grace, T0 + 31)


def test_silent_conditions_become_unknown_with_upstreams_reason_and_message() -> None:
    n = node("n1")
    n["status"]["conditions"].append(
        {"type": "NetworkUnavailable", "status": "False", "lastTransitionTime": format_time(T0)}
    )
    conditions = {c["type"]: c for c in conditions_when_silent(n, T0 + 60)}
    ready = conditions["Ready"]
    assert ready["status"] == "Unknown"
    assert (ready["reason"], ready["message"]) == (REASON_STATUS_UNKNOWN, MESSAGE_STATUS_UNKNOWN)
    assert ready["message"] == "Kubelet stopped posting node status."
    assert ready["lastHeartbeatTime"] == format_time(T0)  # kept: the last time we heard from it
    assert ready["lastTransitionTime"] == format_time(T0 + 60)
    assert conditions["MemoryPressure"]["reason"] == "NodeStatusNeverUpdated"
    assert conditions["NetworkUnavailable"]["status"] == "False"  # the network plugin's, untouched


def test_taints_follow_the_ready_condition() -> None:
    assert no_execute_changes("Unknown") == (
        [{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}],
        [{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}],
    )
    assert no_execute_changes("False")[0] == [{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]
    assert no_execute_changes("True") == (
        [],
        [
            {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"},
            {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"},
        ],
    )
    silent = node("n1", ready="Unknown")
    silent["spec"] = {
        "taints": [
            {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"},
            {"key": "x", "effect": "NoSchedule"},
        ]
    }
    add, remove = no_schedule_changes(silent)
    assert add == [{"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"}]
    assert remove == [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]  # not the user's "x"


def test_swap_taints_stamps_new_taints_and_keeps_old_ones() -> None:
    old = {
        "key": "node.kubernetes.io/unreachable",
        "effect": "NoSchedule",
        "timeAdded": "2020-01-01T00:00:00Z",
    }
    user = {"key": "dedicated", "value": "db", "effect": "NoSchedule"}
    swapped = swap_taints(
        [user, old], [{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}, old], [], T0
    )
    assert swapped == [
        user,
        old,
        {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": format_time(T0)},
    ]
    assert swap_taints([user], [], [old], T0) is None  # nothing to do
    assert swap_taints([user, old], [], [{"key": old["key"], "effect": "NoSchedule"}], T0) == [user]


def test_marking_a_pod_not_ready_flips_only_an_existing_ready_condition() -> None:
    pod = {"status": {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "x"}]}}
    status = pod_marked_not_ready(pod, T0)
    assert status is not None
    assert status["conditions"] == [
        {"type": "Ready", "status": "False", "lastTransitionTime": format_time(T0)}
    ]
    assert pod["status"]["conditions"][0]["status"] == "True"  # the cached object is not touched
    assert pod_marked_not_ready({"status": status}, T0) is None
    assert pod_marked_not_ready({"status": {}}, T0) is None


# -- the controller ----------------------------------------------------------------------------


class Reconciles(ListSink):
    """A trace sink that can wait for the next ``reconcile`` of a key."""

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


async def step(clock: ManualClock, sink: Reconciles, key: str, seconds: float) -> None:
    """Move the clock and wait until the controller has looked at ``key`` again."""
    seen = sink.count(key)
    await clock.advance(seconds)
    await sink.wait_count(key, seen + 1)


async def advance_until(
    clock: ManualClock, sink: Reconciles, key: str, done: Callable[[], Awaitable[bool]], *, limit: float
) -> float:
    """Advance 5 s at a time until ``done()``; the seconds it took."""
    elapsed = 0.0
    while not await done():
        assert elapsed < limit, f"not done after {limit} s"
        await step(clock, sink, key, 5)
        elapsed += 5
    return elapsed


def taints_of(obj: Object) -> list[Object]:
    return list((obj.get("spec") or {}).get("taints") or [])


def ready_of(obj: Object) -> str | None:
    found = condition(obj, "Ready")
    return None if found is None else str(found["status"])


async def test_a_silent_node_goes_unknown_is_tainted_its_pods_not_ready_then_recovers(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    async with in_process_cluster(tmp_path, clock=clock) as cluster:
        nodes = cluster.resource("", "v1", "nodes")
        leases = cluster.resource("coordination.k8s.io", "v1", "leases", "kube-node-lease")
        pods = cluster.resource("", "v1", "pods", "default")
        events = cluster.resource("", "v1", "events", "default")
        await nodes.create(node("n1"))
        await nodes.create(node("n2"))
        for name in ("n1", "n2"):
            await leases.create(lease(name, T0))
        await pods.create(
            {
                "metadata": {"name": "web"},
                "spec": {"nodeName": "n1", "containers": [{"name": "app", "image": "nginx"}]},
            }
        )
        web = await pods.get("web")
        web["status"] = {
            "phase": "Running",
            "podIP": "10.244.1.5",
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": format_time(T0)}],
        }
        await pods.update_status(web)

        sink = Reconciles()
        manager = Manager(cluster.client, clock=clock, trace=sink)
        controller = nodelifecycle.add_to_manager(manager)
        assert controller.name == "node-lifecycle-controller"
        async with manager:
            await sink.wait_count("n1", 1)

            async def renew(name: str) -> None:
                await leases.patch(
                    name, {"spec": {"renewTime": micro(clock.now())}}, patch_type=PatchType.MERGE
                )

            # Both kubelets renew every 10 s for a minute: nobody is judged.
            for _ in range(6):
                await step(clock, sink, "n1", 10)
                await renew("n1")
                await renew("n2")
            assert all(ready_of(n) == "True" and not taints_of(n) for n in (await nodes.list())["items"])

            # n1's kubelet goes silent; n2's keeps renewing its Lease.
            async def n1_unknown() -> bool:
                await renew("n2")
                return ready_of(await nodes.get("n1")) == "Unknown"

            elapsed = await advance_until(clock, sink, "n1", n1_unknown, limit=90)
            assert 45 <= elapsed <= 65, elapsed
            n1 = await nodes.get("n1")
            ready = condition(n1, "Ready")
            assert ready is not None
            assert ready["reason"] == "NodeStatusUnknown"
            assert ready["message"] == "Kubelet stopped posting node status."
            assert condition(n1, "MemoryPressure") is not None  # never posted: added as Unknown
            assert ready_of(await nodes.get("n2")) == "True"

            def tainted(items: list[Object]) -> bool:
                n = next(i for i in items if i["metadata"]["name"] == "n1")
                keys = {(t["key"], t["effect"]) for t in taints_of(n) or []}
                return keys == {
                    ("node.kubernetes.io/unreachable", "NoExecute"),
                    ("node.kubernetes.io/unreachable", "NoSchedule"),
                }

            items = await wait_for(nodes, tainted)
            n1 = next(i for i in items if i["metadata"]["name"] == "n1")
            assert all(t.get("timeAdded") for t in taints_of(n1))
            n2 = next(i for i in items if i["metadata"]["name"] == "n2")
            assert not taints_of(n2)

            await wait_for(pods, lambda ps: ready_of(ps[0]) == "False")
            await wait_for(
                events,
                lambda es: (
                    any(
                        e["reason"] == "NodeNotReady"
                        and e["message"] == "Node n1 status is now: NodeNotReady"
                        and e["involvedObject"]["kind"] == "Node"
                        for e in es
                    )
                    and any(
                        e["reason"] == "NodeNotReady" and e["involvedObject"]["kind"] == "Pod" for e in es
                    )
                ),
            )

            # The kubelet is back: it renews, and posts Ready=True with a fresh heartbeat.
            await renew("n1")
            back = await nodes.get("n1")
            back["status"]["conditions"] = node("n1", heartbeat=clock.now())["status"]["conditions"]
            await nodes.update_status(back)
            items = await wait_for(
                nodes, lambda ns: not taints_of(next(n for n in ns if n["metadata"]["name"] == "n1"))
            )
            assert ready_of(next(n for n in items if n["metadata"]["name"] == "n1")) == "True"


async def test_a_node_that_never_reports_is_unknown_after_the_startup_grace_period(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    async with in_process_cluster(tmp_path, clock=clock) as cluster:
        nodes: ResourceClient = cluster.resource("", "v1", "nodes")
        await nodes.create(node("quiet", ready=None))
        sink = Reconciles()
        manager = Manager(cluster.client, clock=clock, trace=sink)
        nodelifecycle.add_to_manager(manager, node_startup_grace_period=60)
        async with manager:
            await sink.wait_count("quiet", 1)

            async def unknown() -> bool:
                return ready_of(await nodes.get("quiet")) == "Unknown"

            elapsed = await advance_until(clock, sink, "quiet", unknown, limit=100)
            assert 60 <= elapsed <= 75, elapsed
            ready = condition(await nodes.get("quiet"), "Ready")
            assert ready is not None
            assert (ready["reason"], ready["message"]) == (
                "NodeStatusNeverUpdated",
                "Kubelet never posted node status.",
            )
            await wait_for(
                nodes,
                lambda ns: (
                    {t["key"] for t in taints_of(ns[0])} == {"node.kubernetes.io/unreachable"}
                    and len(taints_of(ns[0])) == 2
                ),
            )
