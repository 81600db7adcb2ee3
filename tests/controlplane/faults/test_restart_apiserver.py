"""restart-apiserver: the API server restarts under its clients, and they find their way back.

What upstream's reflectors do after a kube-apiserver restart (client-go ``tools/cache/reflector.go``):
the watch ends with the old server; the reflector watches again from its last resourceVersion; the new
server's watch cache was filled at the current revision, so it answers 410 "too old resource version";
the reflector lists, then watches from the list. Nothing in the scheduler knows a restart happened.
"""

from __future__ import annotations

from typing import Any

from controlplane.faults.book import Outcome
from tests.controlplane.faults.conftest import Running
from tests.support.inprocess import wait_for

Event = dict[str, Any]


def scheduler_pods_watch(event: Event) -> bool:
    return event.get("to") == "scheduler" and event.get("resource") == "pods"


async def test_the_schedulers_reflector_rewatches_is_told_too_old_lists_and_watches(running: Running) -> None:
    cluster, trace = running.cluster, running.trace
    nodes = running.admin.resource("", "v1", "nodes")
    await wait_for(nodes, lambda items: len(items) == 4)  # 3 workers + control-plane
    # A pod the scheduler's watch delivers (a watch that ended without a single event within a second
    # would be a "very short watch", listed again at once, as client-go does), until it runs.
    pods = running.admin.resource("", "v1", "pods", "default")
    await pods.create(pod("before"))
    await wait_for(pods, lambda items: [p["status"].get("phase") for p in items] == ["Running"])
    # A write after the scheduler's last pod event: the store's revision moves past its resourceVersion.
    configmaps = running.admin.resource("", "v1", "configmaps", "default")
    await configmaps.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "later"}})
    old_server = cluster.apiserver
    start = len(trace.events)
    opened = [e for e in trace.events if e["type"] == "watch.opened" and scheduler_pods_watch(e)][-1]

    applied = await running.faults.apply(cluster.name, "restart-apiserver", reason="test")

    assert applied.outcome is Outcome.APPLIED
    assert cluster.apiserver is not None and cluster.apiserver is not old_server
    assert cluster.serving and running.faults.in_force(cluster.name) == []
    fault_on = await trace.until(lambda e: e["type"] == "fault.applied", after=start)
    assert (fault_on["fault"], fault_on["target"]) == ("restart-apiserver", "apiserver")

    closed = await trace.until(
        lambda e: e["type"] == "watch.closed" and e["watch"] == opened["watch"], after=start
    )
    assert closed["reason"] == "the API server is shutting down"
    rewatch = await trace.until(
        lambda e: e["type"] == "watch.opened" and scheduler_pods_watch(e), after=trace.index(closed)
    )
    assert rewatch["revision"] is not None, "it watched again from its last resourceVersion, without a list"
    too_old = await trace.until(
        lambda e: e["type"] == "watch.closed" and e["watch"] == rewatch["watch"], after=trace.index(rewatch)
    )
    assert too_old["reason"].startswith("too old resource version")
    listed = await trace.until(
        lambda e: (
            e["type"] == "request.received"
            and e.get("from") == "scheduler"
            and e.get("resource") == "pods"
            and e.get("verb") == "list"
        ),
        after=trace.index(too_old),
    )
    watching = await trace.until(
        lambda e: e["type"] == "watch.opened" and scheduler_pods_watch(e), after=trace.index(listed)
    )
    cleared = await trace.until(lambda e: e["type"] == "fault.cleared", after=start)
    assert cleared["reason"] == "done"
    assert trace.index(closed) < trace.index(rewatch) < trace.index(too_old) < trace.index(listed)
    assert trace.index(listed) < trace.index(watching)

    # The scheduler is at work again: a pod made after the restart is bound to a node.
    await pods.create(pod("after"))
    items = await wait_for(pods, lambda items: all(p["spec"].get("nodeName") for p in items))
    assert sorted(p["metadata"]["name"] for p in items) == ["after", "before"]


def pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "app", "image": "nginx"}]},
    }
