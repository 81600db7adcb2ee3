"""stop-kubelet: a kubelet stops; the control plane notices and moves its pods; clearing brings it back.

What upstream does when a kubelet stops (docs/kubelet-simulation.md, docs/controllers.md): its Lease
is no longer renewed, the node lifecycle controller marks the Node's Ready condition Unknown after the
grace period and taints it ``node.kubernetes.io/unreachable:NoExecute``, the taint eviction controller
deletes its pods once their ``tolerationSeconds`` pass, and the ReplicaSet controller replaces them on
the other nodes. The fault is cleared: the kubelet starts again and the node is Ready again.
"""

from __future__ import annotations

from controlplane.api.meta import Object, parse_timestamp
from controlplane.faults.book import Outcome
from tests.controlplane.faults.conftest import Running
from tests.controlplane.test_cluster import deployment, live_running
from tests.support.inprocess import condition, wait_for

UNREACHABLE = ("node.kubernetes.io/unreachable", "NoExecute")


def node_named(items: list[Object], name: str) -> Object:
    return next(n for n in items if n["metadata"]["name"] == name)


def taints(node: Object) -> set[tuple[str, str]]:
    return {(t["key"], t["effect"]) for t in node["spec"].get("taints") or []}


async def test_a_stopped_kubelet_loses_its_node_and_pods_and_clearing_brings_it_back(
    running: Running,
) -> None:
    cluster, trace = running.cluster, running.trace
    pods = running.admin.resource("", "v1", "pods", "default")
    nodes = running.admin.resource("", "v1", "nodes")
    leases = running.admin.resource("coordination.k8s.io", "v1", "leases", "kube-node-lease")
    await wait_for(nodes, lambda items: len(items) == 4)  # 3 workers + control-plane
    await running.admin.resource("apps", "v1", "deployments", "default").create(deployment("web", 6))
    items = await wait_for(pods, lambda items: len(live_running(items)) == 6, seconds=30)
    victim = items[0]["spec"]["nodeName"]
    doomed = {p["metadata"]["uid"] for p in items if p["spec"]["nodeName"] == victim}
    start = len(trace.events)

    applied = await running.faults.apply(cluster.name, "stop-kubelet", {"node": victim}, reason="test")

    assert applied.outcome is Outcome.APPLIED
    assert f"kubelet:{victim}" not in cluster.components_running
    assert cluster.components_stopped == {f"kubelet:{victim}"}
    assert cluster.faults_in_force == [{"fault": "stop-kubelet", "target": f"kubelet:{victim}"}]
    on = await trace.until(lambda e: e["type"] == "fault.applied", after=start)
    assert (on["target"], on["params"]) == (f"kubelet:{victim}", {"node": victim})
    stopped = await trace.until(
        lambda e: e["type"] == "component.state" and e.get("from") == f"kubelet:{victim}", after=start
    )
    assert stopped["state"] == "stopped"
    stopped_at = cluster.clock.now()

    def unreachable(items: list[Object]) -> bool:
        node = node_named(items, victim)
        ready = condition(node, "Ready")
        return ready is not None and ready["status"] == "Unknown" and UNREACHABLE in taints(node)

    node = node_named(await wait_for(nodes, unreachable, seconds=30), victim)
    ready = condition(node, "Ready")
    assert ready is not None and ready["reason"] == "NodeStatusUnknown"
    # Its Lease was not renewed since the kubelet stopped (the others were, many times over). A
    # renewal it sent just before may still have been committed after the stop, as etcd commits a
    # write whose client has gone: so the test is on when the renewal was made, not when it landed.
    renewed = parse_timestamp((await leases.get(victim))["spec"]["renewTime"])
    assert renewed is not None and renewed <= stopped_at, (renewed, stopped_at)

    def replaced(items: list[Object]) -> bool:
        alive = live_running(items)
        return len(alive) == 6 and not any(p["metadata"]["uid"] in doomed for p in alive)

    # after the pods' tolerationSeconds (DefaultTolerationSeconds: 300 s upstream, 12 s here)
    items = await wait_for(pods, replaced, seconds=30)
    assert all(p["spec"]["nodeName"] != victim for p in live_running(items))
    start = len(trace.events)

    cleared = await running.faults.clear(cluster.name, "stop-kubelet", {"node": victim}, reason="test")

    assert [f.id for f in cleared] == [applied.fault.id]
    assert f"kubelet:{victim}" in cluster.components_running and cluster.components_stopped == set()
    assert cluster.faults_in_force == []
    off = await trace.until(lambda e: e["type"] == "fault.cleared", after=start)
    assert (off["target"], off["reason"]) == (f"kubelet:{victim}", "test")

    def ready_again(items: list[Object]) -> bool:
        node = node_named(items, victim)
        ready = condition(node, "Ready")
        return ready is not None and ready["status"] == "True" and UNREACHABLE not in taints(node)

    await wait_for(nodes, ready_again, seconds=30)
    # The evicted pods were marked for deletion; the kubelet back on its node finishes them off.
    await wait_for(pods, lambda items: not any(p["metadata"]["uid"] in doomed for p in items), seconds=30)


async def test_a_fault_with_a_duration_ends_by_itself(running: Running) -> None:
    cluster, trace = running.cluster, running.trace
    await wait_for(running.admin.resource("", "v1", "nodes"), lambda items: len(items) == 4)
    start = len(trace.events)

    applied = await running.faults.apply(cluster.name, "stop-kubelet", {"node": "node-3", "for": 1})

    assert applied.fault.ends_at is not None
    assert applied.fault.ends_at - applied.fault.starts_at == 1.0
    off = await trace.until(lambda e: e["type"] == "fault.cleared", after=start)
    assert off["reason"] == "its time is up"
    states = [
        e["state"]
        for e in trace.events[start : trace.index(off)]
        if e["type"] == "component.state" and e.get("from") == "kubelet:node-3"
    ]
    assert states == ["stopped", "running"], "cleared once the kubelet runs again"
    assert running.faults.in_force() == [] and "kubelet:node-3" in cluster.components_running
