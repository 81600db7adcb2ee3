"""stop-scheduler, stop-controller-manager, stop-kube-proxy: a component stops, its work waits, and
clearing the fault starts a new one that lists everything again and catches up.

Upstream: with kube-scheduler stopped a new Pod stays Pending with no node; with
kube-controller-manager stopped a new Deployment gets no ReplicaSet; with a node's kube-proxy stopped
that node's rules are no longer synced. A new scheduler takes its Lease at once (the old one gave it
up, ``ReleaseOnCancel``); a new controller manager only once the old one's Lease has expired (it never
gives it up). The diagram greys each stopped part as it greys a stopped kubelet.
"""

from __future__ import annotations

from typing import Any

from controlplane.api.meta import Object
from controlplane.diagram import state_taker
from controlplane.faults.book import Outcome
from tests.controlplane.faults.conftest import NAME, QUICK_LEASES, Event, Running
from tests.controlplane.test_cluster import deployment, live_running
from tests.support.inprocess import wait_for


def pod_on(name: str, node: str) -> Object:
    """A Pod that names its node itself: the kubelet runs it without the scheduler."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"nodeName": node, "containers": [{"name": "app", "image": "nginx"}]},
    }


def service(name: str) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {"selector": {"app": name}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]},
    }


async def default_service_account(running: Running) -> None:
    """Until ``default`` has its ServiceAccount, which a pod needs (ServiceAccount admission) and a
    controller of the controller manager makes."""
    accounts = running.admin.resource("", "v1", "serviceaccounts", "default")
    await wait_for(accounts, lambda items: any(i["metadata"]["name"] == "default" for i in items))


def state_of(component: str) -> Any:
    return lambda e: e["type"] == "component.state" and e.get("from") == component


def drawn(running: Running, component: str) -> dict[str, Any]:
    """The component's row in the state a topology page starts from."""
    take = state_taker(running.lab, NAME)
    assert take is not None
    return next(row for row in take().components if row["id"] == component)


def since(running: Running, start: int, matches: Any) -> list[Event]:
    return [e for e in running.trace.events[start:] if matches(e)]


async def test_a_stopped_scheduler_leaves_pods_pending_and_a_new_one_binds_them(running: Running) -> None:
    cluster, trace, admin = running.cluster, running.trace, running.admin
    pods = admin.resource("", "v1", "pods", "default")
    leases = admin.resource("coordination.k8s.io", "v1", "leases", "kube-system")
    await wait_for(admin.resource("", "v1", "nodes"), lambda items: len(items) == 4)
    await wait_for(leases, lambda items: any(i["metadata"]["name"] == "kube-scheduler" for i in items))
    await default_service_account(running)
    start = len(trace.events)

    applied = await running.faults.apply(NAME, "stop-scheduler", {}, reason="test")

    assert applied.outcome is Outcome.APPLIED
    assert "scheduler" not in cluster.components_running and cluster.components_stopped == {"scheduler"}
    assert cluster.faults_in_force == [{"fault": "stop-scheduler", "target": "scheduler"}]
    on = await trace.until(lambda e: e["type"] == "fault.applied", after=start)
    assert (on["fault"], on["target"]) == ("stop-scheduler", "scheduler")
    stopped = await trace.until(lambda e: state_of("scheduler")(e) and e["state"] == "stopped", after=start)
    assert stopped["reason"] == "fault stop-scheduler", "the diagram greys it, live ..."
    assert drawn(running, "scheduler") == {"id": "scheduler", "state": "stopped"}, "... and on a new page"
    # kube-scheduler gives its Lease up on its way out (ReleaseOnCancel: true).
    assert not (await leases.get("kube-scheduler"))["spec"].get("holderIdentity")

    await admin.resource("apps", "v1", "deployments", "default").create(deployment("web", 2))
    await pods.create(pod_on("placed", "node-1"))
    # The controller manager made the Deployment's pods, and the kubelet ran the pod naming its node:
    # the cluster went on, and nobody bound the others.
    await wait_for(pods, lambda items: len(items) == 3 and len(live_running(items)) == 1, seconds=30)
    waiting = [p for p in (await pods.list())["items"] if p["metadata"]["name"] != "placed"]
    assert len(waiting) == 2
    assert all(not p["spec"].get("nodeName") and p["status"].get("phase") == "Pending" for p in waiting)
    assert since(running, trace.index(stopped), lambda e: e["type"] == "scheduler.decision") == []
    start = len(trace.events)

    cleared = await running.faults.clear(NAME, "stop-scheduler", {}, reason="test")

    assert [f.id for f in cleared] == [applied.fault.id]
    assert "scheduler" in cluster.components_running and cluster.components_stopped == set()
    assert drawn(running, "scheduler")["state"] == "running"
    await trace.until(lambda e: state_of("scheduler")(e) and e["state"] == "running", after=start)
    # A new scheduler: it lists pods and nodes again, leads and binds the pods that waited.
    await trace.until(
        lambda e: (
            e["type"] == "request.completed" and e.get("from") == "scheduler" and e.get("verb") == "list"
        ),
        after=start,
    )
    await trace.until(lambda e: state_of("scheduler")(e) and e["state"] == "started-leading", after=start)
    items = await wait_for(pods, lambda items: len(live_running(items)) == 3, seconds=30)
    assert {p["metadata"]["uid"] for p in waiting} <= {p["metadata"]["uid"] for p in items}, "none lost"


async def test_a_stopped_controller_manager_reacts_to_nothing_and_a_new_one_waits_for_its_lease(
    quick_leases: Running,
) -> None:
    running = quick_leases
    cluster, trace, admin = running.cluster, running.trace, running.admin
    pods = admin.resource("", "v1", "pods", "default")
    replicasets = admin.resource("apps", "v1", "replicasets", "default")
    leases = admin.resource("coordination.k8s.io", "v1", "leases", "kube-system")
    await wait_for(admin.resource("", "v1", "nodes"), lambda items: len(items) == 4)
    await wait_for(
        leases,
        lambda items: any(
            i["metadata"]["name"] == "kube-controller-manager" and i["spec"].get("holderIdentity")
            for i in items
        ),
    )
    await default_service_account(running)
    start = len(trace.events)

    await running.faults.apply(NAME, "stop-controller-manager", {}, reason="test")

    assert cluster.components_stopped == {"controller-manager"}
    stopped = await trace.until(
        lambda e: state_of("controller-manager")(e) and e["state"] == "stopped", after=start
    )
    assert drawn(running, "controller-manager") == {"id": "controller-manager", "state": "stopped"}
    # Upstream's kube-controller-manager does not give its Lease up: it is still held by the old one.
    held = (await leases.get("kube-controller-manager"))["spec"]
    assert held.get("holderIdentity")

    await admin.resource("apps", "v1", "deployments", "default").create(deployment("web", 2))
    await pods.create(pod_on("placed", "node-2"))
    # The kubelet ran the pod naming its node; meanwhile no controller made anything of the Deployment.
    await wait_for(pods, lambda items: len(live_running(items)) == 1, seconds=30)
    assert (await replicasets.list())["items"] == []
    reconciled = since(
        running,
        trace.index(stopped),
        lambda e: e["type"] == "reconcile" and e.get("from") == "controller-manager",
    )
    assert reconciled == []
    start = len(trace.events)

    await running.faults.clear(NAME, "stop-controller-manager", {}, reason="test")

    assert "controller-manager" in cluster.components_running and cluster.components_stopped == set()
    cleared = await trace.until(lambda e: e["type"] == "fault.cleared", after=start)
    leading = await trace.until(
        lambda e: state_of("controller-manager")(e) and e["state"] == "started-leading", after=start
    )
    # It took the Lease only once the old holder's had expired, by its own clock.
    assert leading["ts"] - cleared["ts"] >= QUICK_LEASES.leader_lease_duration
    now_held = (await leases.get("kube-controller-manager"))["spec"]
    assert now_held["holderIdentity"] != held["holderIdentity"]
    assert now_held["leaseTransitions"] == held.get("leaseTransitions", 0) + 1
    # And it catches up: the Deployment gets its ReplicaSet, the ReplicaSet its pods.
    await wait_for(replicasets, lambda items: len(items) == 1, seconds=30)
    items = await wait_for(pods, lambda items: len(live_running(items)) == 3, seconds=30)
    assert "placed" in {p["metadata"]["name"] for p in items}


async def test_a_stopped_kube_proxy_syncs_nothing_and_syncs_again_once_started(running: Running) -> None:
    cluster, trace, admin = running.cluster, running.trace, running.admin
    await wait_for(admin.resource("", "v1", "nodes"), lambda items: len(items) == 4)
    proxy = "kube-proxy:node-2"
    start = len(trace.events)

    applied = await running.faults.apply(NAME, "stop-kube-proxy", {"node": "node-2"}, reason="test")

    assert applied.fault.target == proxy
    assert proxy not in cluster.components_running and cluster.components_stopped == {proxy}
    stopped = await trace.until(state_of(proxy), after=start)
    assert (stopped["state"], stopped["component"], stopped["node"]) == ("stopped", "kube-proxy", "node-2")
    assert drawn(running, proxy) == {"id": proxy, "state": "stopped"}

    await admin.resource("", "v1", "services", "default").create(service("web"))
    # node-1's kube-proxy syncs the new Service's rule; node-2's syncs nothing.
    synced = await trace.until(
        lambda e: e["type"] == "proxy.sync" and e.get("from") == "kube-proxy:node-1" and e["rules"] > 0,
        after=start,
    )
    assert (
        since(running, trace.index(stopped), lambda e: e["type"] == "proxy.sync" and e.get("from") == proxy)
        == []
    )
    start = len(trace.events)

    await running.faults.clear(NAME, "stop-kube-proxy", {"node": "node-2"}, reason="test")

    assert proxy in cluster.components_running and cluster.components_stopped == set()
    again = await trace.until(lambda e: e["type"] == "proxy.sync" and e.get("from") == proxy, after=start)
    assert (again["reason"], again["rules"]) == ("initial", synced["rules"]), "it listed and synced"
    started = await trace.until(state_of(proxy), after=start)
    assert (started["state"], started["reason"]) == ("running", "fault stop-kube-proxy cleared")
