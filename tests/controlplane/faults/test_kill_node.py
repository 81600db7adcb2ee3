"""kill-node: a node loses its power: its kubelet and kube-proxy stop at once, without a word; the
control plane notices by the silence and moves its pods; booted again, it comes back.

Upstream: a powered-off node renews no Lease and posts no status; after the grace period the node
lifecycle controller marks it Unknown and taints it unreachable:NoExecute, the taint eviction
controller deletes its pods after their tolerationSeconds and the ReplicaSet controller replaces them
(pkg/controller/nodelifecycle/node_lifecycle_controller.go, pkg/controller/tainteviction).
"""

from __future__ import annotations

from controlplane.api.meta import Object, parse_timestamp
from controlplane.faults.book import Outcome
from tests.controlplane.faults.conftest import Running
from tests.controlplane.faults.test_stop_kubelet import UNREACHABLE, node_named, taints
from tests.controlplane.test_cluster import deployment, live_running
from tests.support.inprocess import condition, wait_for


async def test_a_dead_node_loses_its_pods_and_boots_again(running: Running) -> None:
    cluster, trace = running.cluster, running.trace
    pods = running.admin.resource("", "v1", "pods", "default")
    nodes = running.admin.resource("", "v1", "nodes")
    leases = running.admin.resource("coordination.k8s.io", "v1", "leases", "kube-node-lease")
    await wait_for(nodes, lambda items: len(items) == 4)  # 3 workers + control-plane
    await running.admin.resource("apps", "v1", "deployments", "default").create(deployment("web", 6))
    items = await wait_for(pods, lambda items: len(live_running(items)) == 6, seconds=30)
    victim = items[0]["spec"]["nodeName"]
    doomed = {p["metadata"]["uid"] for p in items if p["spec"]["nodeName"] == victim}
    status_before = condition(node_named((await nodes.list())["items"], victim), "Ready")
    assert status_before is not None
    start = len(trace.events)

    applied = await running.faults.apply(cluster.name, "kill-node", {"node": victim}, reason="test")

    assert applied.outcome is Outcome.APPLIED
    dead = {f"kubelet:{victim}", f"kube-proxy:{victim}"}
    assert cluster.components_stopped == dead and not dead & set(cluster.components_running)
    assert cluster.faults_in_force == [{"fault": "kill-node", "target": f"kubelet:{victim}"}]
    on = await trace.until(lambda e: e["type"] == "fault.applied", after=start)
    assert (on["target"], on["params"]) == (f"kubelet:{victim}", {"node": victim})
    died_at = cluster.clock.now()

    def unreachable(items: list[Object]) -> bool:
        node = node_named(items, victim)
        ready = condition(node, "Ready")
        return ready is not None and ready["status"] == "Unknown" and UNREACHABLE in taints(node)

    node = node_named(await wait_for(nodes, unreachable, seconds=30), victim)
    ready = condition(node, "Ready")
    assert ready is not None and ready["reason"] == "NodeStatusUnknown"
    # No goodbye: the last heartbeat is the one from before the death, and the Lease was not renewed.
    assert ready["lastHeartbeatTime"] == status_before["lastHeartbeatTime"]
    # (A renewal sent just before the death may have been committed after it, as etcd commits a
    # write whose client has gone: the test is on when the renewal was made.)
    renewed = parse_timestamp((await leases.get(victim))["spec"]["renewTime"])
    assert renewed is not None and renewed <= died_at, (renewed, died_at)

    def replaced(items: list[Object]) -> bool:
        alive = live_running(items)
        return len(alive) == 6 and not any(p["metadata"]["uid"] in doomed for p in alive)

    await wait_for(pods, replaced, seconds=30)
    start = len(trace.events)

    cleared = await running.faults.clear(cluster.name, "kill-node", {"node": victim}, reason="test")

    assert [f.id for f in cleared] == [applied.fault.id]
    assert dead <= set(cluster.components_running) and cluster.components_stopped == set()
    off = await trace.until(lambda e: e["type"] == "fault.cleared", after=start)
    assert (off["target"], off["reason"]) == (f"kubelet:{victim}", "test")
    # Booted: its kube-proxy lists Services and EndpointSlices and syncs the node's rules again.
    await trace.until(
        lambda e: e["type"] == "proxy.sync" and e.get("from") == f"kube-proxy:{victim}", after=start
    )

    def ready_again(items: list[Object]) -> bool:
        node = node_named(items, victim)
        ready = condition(node, "Ready")
        return ready is not None and ready["status"] == "True" and UNREACHABLE not in taints(node)

    await wait_for(nodes, ready_again, seconds=30)
    # The evicted pods, marked for deletion, are finished by the kubelet back on its node; none of
    # the Deployment's six is lost.
    items = await wait_for(
        pods, lambda items: not any(p["metadata"]["uid"] in doomed for p in items), seconds=30
    )
    assert len(live_running(items)) == 6


async def test_a_kubelet_also_stopped_by_stop_kubelet_stays_stopped_when_the_node_boots(
    running: Running,
) -> None:
    cluster = running.cluster
    await wait_for(running.admin.resource("", "v1", "nodes"), lambda items: len(items) == 4)
    await running.faults.apply(cluster.name, "kill-node", {"node": "node-3"})
    await running.faults.apply(cluster.name, "stop-kubelet", {"node": "node-3"})

    await running.faults.clear(cluster.name, "kill-node", {"node": "node-3"})

    assert "kube-proxy:node-3" in cluster.components_running
    assert cluster.components_stopped == {"kubelet:node-3"}
    await running.faults.clear(cluster.name, "stop-kubelet", {"node": "node-3"})
    assert "kubelet:node-3" in cluster.components_running and cluster.components_stopped == set()
