"""clock-skew: a node's clock stepped back makes its renewals count for nothing, so its node goes
Unknown while its kubelet runs; set right, the node is Ready again.

Upstream: the node lifecycle controller notes its own time when a Lease's renewTime moves past the
last one it saw (``tryUpdateNodeHealth``, pkg/controller/nodelifecycle/node_lifecycle_controller.go),
so renewals stamped earlier than the last one seen are no renewals; after the grace period (2 s on the
tests' timing) the node is Unknown. (The kubelet, seeing Unknown on its Node, reports Ready at its next
status update, which counts as a heartbeat for another grace period: the node flaps, as upstream's.)
A clock ahead goes unnoticed until it is set right, when it steps back just the same.
"""

from __future__ import annotations

import pytest

from controlplane.api.meta import Object, parse_timestamp
from controlplane.clock import ManualClock, SkewedClock
from controlplane.faults.catalogue import InvalidFault, check
from tests.controlplane.faults.conftest import Running
from tests.controlplane.faults.test_stop_kubelet import node_named
from tests.support.inprocess import condition, wait_for


async def test_a_skewed_clock_is_stepped_and_ticks_as_the_cluster_s() -> None:
    cluster_clock = ManualClock(1000.0)
    clock = SkewedClock(cluster_clock)
    assert clock.now() == 1000.0
    clock.skew = -60.0
    assert clock.now() == 940.0
    await cluster_clock.advance(5)
    assert clock.now() == 945.0


def test_seconds_is_a_whole_nonzero_number_of_seconds_within_an_hour() -> None:
    spec = check("clock-skew", {"node": "node-1", "seconds": "+120"}, nodes=3)
    assert spec.parameters() == {"node": "node-1", "seconds": 120}
    assert spec.label() == "Skew the clock of node-1 by 120 s"
    assert spec.label("zh-hans") == "把 node-1 的时钟调偏 120 秒"
    assert check("clock-skew", {"node": "node-1", "seconds": -60}).parameters()["seconds"] == -60
    for bad in (0, "soon", 1.5, 3601, True):
        with pytest.raises(InvalidFault) as refused:
            check("clock-skew", {"node": "node-1", "seconds": bad})
        assert refused.value.parameter == "seconds"


def ready_status(items: list[Object], node: str) -> str | None:
    ready = condition(node_named(items, node), "Ready")
    return None if ready is None else str(ready["status"])


async def renew_time(running: Running, node: str) -> float:
    lease = await running.admin.resource("coordination.k8s.io", "v1", "leases", "kube-node-lease").get(node)
    renewed = parse_timestamp(lease["spec"]["renewTime"])
    assert renewed is not None
    return renewed


async def test_a_clock_set_back_makes_the_node_unknown_while_its_kubelet_runs(running: Running) -> None:
    cluster, trace = running.cluster, running.trace
    nodes = running.admin.resource("", "v1", "nodes")
    await wait_for(nodes, lambda items: len(items) == 4 and ready_status(items, "node-2") == "True")
    before = await renew_time(running, "node-2")
    start = len(trace.events)

    await running.faults.apply(cluster.name, "clock-skew", {"node": "node-2", "seconds": -30}, reason="test")

    on = await trace.until(lambda e: e["type"] == "fault.applied", after=start)
    assert (on["target"], on["params"]) == ("kubelet:node-2", {"node": "node-2", "seconds": -30})
    assert cluster.node_clock("node-2").skew == -30.0 and cluster.node_clock("node-1").skew == 0.0
    await wait_for(nodes, lambda items: ready_status(items, "node-2") == "Unknown", seconds=30)
    # It still runs and renews, with renewTimes from the past: they count as no renewal.
    assert "kubelet:node-2" in cluster.components_running
    assert await renew_time(running, "node-2") < before
    assert ready_status((await nodes.list())["items"], "node-1") == "True"
    start = len(trace.events)

    await running.faults.clear(cluster.name, "clock-skew", {"node": "node-2", "seconds": -30}, reason="test")

    off = await trace.until(lambda e: e["type"] == "fault.cleared", after=start)
    assert off["target"] == "kubelet:node-2"
    assert cluster.node_clock("node-2").skew == 0.0
    # Its next renewal is past every one seen: the node is Ready again, and stays so. (While skewed it
    # was Ready now and then too: the kubelet sets an Unknown it sees right at its next status update.)
    leases = running.admin.resource("coordination.k8s.io", "v1", "leases", "kube-node-lease")
    await wait_for(leases, lambda items: lease_renewed_after(items, "node-2", before), seconds=30)
    await wait_for(nodes, lambda items: ready_status(items, "node-2") == "True", seconds=30)


def lease_renewed_after(items: list[Object], node: str, moment: float) -> bool:
    lease = next(i for i in items if i["metadata"]["name"] == node)
    renewed = parse_timestamp(lease["spec"]["renewTime"])
    return renewed is not None and renewed > moment


async def test_a_clock_ahead_is_noticed_when_it_is_set_right(running: Running) -> None:
    cluster = running.cluster
    nodes = running.admin.resource("", "v1", "nodes")
    await wait_for(nodes, lambda items: len(items) == 4 and ready_status(items, "node-3") == "True")

    await running.faults.apply(cluster.name, "clock-skew", {"node": "node-3", "seconds": 6})

    def renewed_ahead(items: list[Object]) -> bool:
        lease = next(i for i in items if i["metadata"]["name"] == "node-3")
        renewed = parse_timestamp(lease["spec"]["renewTime"])
        return renewed is not None and renewed > cluster.clock.now() + 4

    # Renewals stamped 6 s ahead still move forward: nothing to notice.
    leases = running.admin.resource("coordination.k8s.io", "v1", "leases", "kube-node-lease")
    await wait_for(leases, renewed_ahead)
    assert ready_status((await nodes.list())["items"], "node-3") == "True"

    await running.faults.clear(cluster.name, "clock-skew")  # every skew of the cluster

    # Set right, the clock steps 6 s back: for 6 s its renewals are older than the last one seen.
    await wait_for(nodes, lambda items: ready_status(items, "node-3") == "Unknown", seconds=30)
    assert "kubelet:node-3" in cluster.components_running
    await wait_for(nodes, lambda items: ready_status(items, "node-3") == "True", seconds=30)
