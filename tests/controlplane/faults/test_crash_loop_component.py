"""crash-loop: a component crashes after each start and its kubelet restarts it with CrashLoopBackOff.

What a student sees on the trace: the component comes up, lists and watches, dies, and comes back
later, each time later than the time before (10 s, 20 s, 40 s ... upstream; scaled down twenty times
here, so four crashes take seconds). A crashed leader leaves its Lease held, so no start gets to lead.
Clearing the fault lets it run: it takes the Lease once the dead one's has expired and works again.
"""

from __future__ import annotations

import itertools
from typing import Any

from controlplane.api.meta import Object
from controlplane.faults.crashloop import CrashLoopTiming, crashed, restarted
from controlplane.faults.effects import CrashLoopComponent
from controlplane.runtime import ClusterState
from tests.controlplane.faults.conftest import NAME, Event, Running
from tests.controlplane.test_cluster import live_running
from tests.support.inprocess import wait_for

#: Upstream's loop twenty times faster: back-off 0.5 s doubling, a crash 0.25 s after each start.
TIMING = CrashLoopTiming().scaled(1 / 20)


def scaled(running: Running) -> CrashLoopComponent:
    effect = running.faults.effects["crash-loop"]
    assert isinstance(effect, CrashLoopComponent)
    effect.timing = TIMING
    return effect


def state_of(component: str, *states: str) -> Any:
    return lambda e: (
        e["type"] == "component.state" and e.get("from") == component and (not states or e["state"] in states)
    )


def pod(name: str) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "app", "image": "nginx"}]},
    }


def between(running: Running, first: Event, last: Event) -> list[Event]:
    return running.trace.events[running.trace.index(first) : running.trace.index(last) + 1]


async def test_a_crash_looping_scheduler_comes_up_lists_dies_and_comes_back_later_and_later(
    quick_leases: Running,
) -> None:
    running = quick_leases
    cluster, trace, admin = running.cluster, running.trace, running.admin
    effect = scaled(running)
    leases = admin.resource("coordination.k8s.io", "v1", "leases", "kube-system")
    await wait_for(admin.resource("", "v1", "nodes"), lambda items: len(items) == 4)
    await wait_for(
        leases,
        lambda items: any(
            i["metadata"]["name"] == "kube-scheduler" and i["spec"].get("holderIdentity") for i in items
        ),
    )
    start = len(trace.events)

    applied = await running.faults.apply(NAME, "crash-loop", {"component": "scheduler"}, reason="test")

    assert applied.fault.target == "scheduler"
    assert cluster.faults_in_force == [{"fault": "crash-loop", "target": "scheduler"}]
    fourth = await trace.nth(state_of("scheduler", "stopped"), 4, after=start)
    seen = [
        e
        for e in between(running, trace.events[start], fourth)
        if state_of("scheduler", "running", "stopped")(e)
    ]
    assert [e["state"] for e in seen] == ["stopped", "running"] * 3 + ["stopped"]
    crashes, starts = seen[0::2], seen[1::2]
    # It is restarted at once the first time, then after a back-off that doubles each time ...
    assert [e["reason"] for e in crashes] == [crashed("scheduler", d) for d in (0, 0.5, 1, 2)]
    assert [e["reason"] for e in starts] == [restarted(n) for n in (1, 2, 3)]
    # ... waited out on the cluster's clock before each start.
    for crash, restart, delay in zip(crashes[:3], starts, (0, 0.5, 1), strict=True):
        assert restart["ts"] - crash["ts"] >= delay
    # Each start lists and watches again, then dies ...
    for crash, next_crash in itertools.pairwise(crashes):
        run = between(running, crash, next_crash)
        listed = {
            e.get("resource")
            for e in run
            if e["type"] == "request.completed" and e.get("from") == "scheduler" and e.get("verb") == "list"
        }
        watched = {
            e.get("resource") for e in run if e["type"] == "watch.opened" and e.get("to") == "scheduler"
        }
        assert {"pods", "nodes"} <= listed and {"pods", "nodes"} <= watched, (listed, watched)
    # ... and never leads: the crashed leader's Lease is still held, and every start waits for it.
    assert not any(state_of("scheduler", "started-leading")(e) for e in between(running, crashes[0], fourth))
    start = len(trace.events)

    cleared = await running.faults.clear(NAME, "crash-loop", {"component": "scheduler"}, reason="test")

    assert [f.id for f in cleared] == [applied.fault.id]
    assert effect.supervisor.loop(applied.fault.id) is None
    assert "scheduler" in cluster.components_running and cluster.faults_in_force == []
    await trace.until(lambda e: e["type"] == "fault.cleared", after=start)
    # It runs normally: once the dead leader's Lease has expired it leads, and binds a new pod.
    await trace.until(state_of("scheduler", "started-leading"), after=start)
    await admin.resource("", "v1", "pods", "default").create(pod("after"))
    await wait_for(admin.resource("", "v1", "pods", "default"), lambda items: len(live_running(items)) == 1)
    assert not any(state_of("scheduler", "stopped")(e) for e in trace.events[start:]), "no crash since"


async def test_a_crash_loop_held_stopped_starts_afresh_and_ends_when_the_cluster_hibernates(
    running: Running,
) -> None:
    lab, cluster, trace = running.lab, running.cluster, running.trace
    effect = scaled(running)
    proxy = "kube-proxy:node-1"
    await wait_for(running.admin.resource("", "v1", "nodes"), lambda items: len(items) == 4)
    start = len(trace.events)

    applied = await running.faults.apply(NAME, "crash-loop", {"component": proxy})
    await trace.nth(state_of(proxy, "stopped"), 2, after=start)  # crashed twice: back-off 0.5 s now

    # stop-kube-proxy holds it stopped; the crash loop does not start it while held ...
    await running.faults.apply(NAME, "stop-kube-proxy", {"node": "node-1"})
    assert proxy not in cluster.components_running
    start = len(trace.events)
    await running.faults.clear(NAME, "stop-kube-proxy", {"node": "node-1"})
    # ... and once let go, it is a new pod to its kubelet: it starts, and crashes with a fresh back-off.
    again = await trace.until(state_of(proxy, "running"), after=start)
    assert again["reason"] == "fault stop-kube-proxy cleared"
    crash = await trace.until(state_of(proxy, "stopped"), after=trace.index(again))
    assert crash["reason"] == crashed(proxy, 0)
    loop = effect.supervisor.loop(applied.fault.id)
    assert loop is not None and loop.schedule.restarts == 1
    start = len(trace.events)

    assert await lab.hibernate(NAME)

    assert cluster.state is ClusterState.HIBERNATED and running.faults.in_force() == []
    ended = [e for e in trace.events[start:] if e["type"] == "fault.cleared"]
    assert [(e["fault"], e["reason"]) for e in ended] == [("crash-loop", "the cluster stops")]
    assert effect.supervisor.loop(applied.fault.id) is None
    await lab.wake(NAME)
    await lab.settled(NAME)
    assert proxy in cluster.components_running and cluster.components_stopped == set()
