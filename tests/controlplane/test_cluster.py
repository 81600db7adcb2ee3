"""A whole cluster at work: every component in-process, reacting to a node that dies.

The cluster runs on a timing profile 25 times faster than upstream's (a node is judged unreachable
after 2 s instead of 50 s), so the chain plays out in seconds: the kubelet stops renewing its Lease,
the node lifecycle controller marks the node Unknown and taints it ``unreachable:NoExecute``, the taint
eviction controller deletes its pods (they have no toleration: DefaultTolerationSeconds admission
arrives with the security issue), the ReplicaSet controller replaces them and the scheduler places the
replacements on the nodes that are left.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from controlplane.api.meta import Object
from controlplane.client.config import Config
from controlplane.client.rest import RESTClient
from controlplane.identity import SYSTEM_MASTERS
from controlplane.runtime import Cluster, ClusterConfig
from controlplane.store.sqlite import SqliteStore
from controlplane.timing import CLASSROOM, UPSTREAM
from tests.support.inprocess import condition, wait_for

#: Upstream's timers, 25 times faster, but the leader election's at the classroom profile's: this
#: module is not about elections, and a 0.4 s renew deadline (upstream's 10 s / 25) is missed on a busy
#: CI machine, so the controller manager would lose its Lease and stand by in the middle of a test.
FAST = dataclasses.replace(
    UPSTREAM.scaled(1 / 25, name="test"),
    leader_lease_duration=CLASSROOM.leader_lease_duration,
    leader_renew_deadline=CLASSROOM.leader_renew_deadline,
    leader_retry_period=CLASSROOM.leader_retry_period,
)


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[tuple[Cluster, RESTClient]]:
    store = SqliteStore("fast", path=tmp_path / "store.sqlite3")
    cluster = Cluster("fast", ClusterConfig(nodes=3, timing=FAST), data_dir=tmp_path, store=store)
    await cluster.start()
    assert cluster.apiserver is not None
    token = cluster.tokens.issue("admin", [SYSTEM_MASTERS])
    client = RESTClient(
        Config.for_in_process(
            cluster.apiserver, "fast", mount_prefix="/clusters/fast", bearer_token=token, qps=-1
        )
    )
    try:
        yield cluster, client
    finally:
        await client.aclose()
        await cluster.stop()


def deployment(name: str, replicas: int) -> Object:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "nginx"}]},
            },
        },
    }


def live_running(items: list[Object]) -> list[Object]:
    return [
        p
        for p in items
        if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
    ]


async def test_a_deployment_survives_the_death_of_a_node(cluster: tuple[Cluster, RESTClient]) -> None:
    lab, client = cluster
    pods = client.resource("", "v1", "pods", "default")
    nodes = client.resource("", "v1", "nodes")
    await wait_for(nodes, lambda items: len(items) == 4, seconds=30)  # 3 workers and the control plane
    await client.resource("apps", "v1", "deployments", "default").create(deployment("web", 6))
    items = await wait_for(pods, lambda items: len(live_running(items)) == 6, seconds=30)
    victim = items[0]["spec"]["nodeName"]
    doomed = {p["metadata"]["uid"] for p in items if p["spec"]["nodeName"] == victim}
    doomed_names = {p["metadata"]["name"] for p in items if p["spec"]["nodeName"] == victim}

    await lab.components_running[f"kubelet:{victim}"].stop()  # the node goes silent

    def unreachable(items: list[Object]) -> bool:
        node = next(n for n in items if n["metadata"]["name"] == victim)
        ready = condition(node, "Ready")
        taints = {(t["key"], t["effect"]) for t in node["spec"].get("taints") or []}
        return (
            ready is not None
            and ready["status"] == "Unknown"
            and ("node.kubernetes.io/unreachable", "NoExecute") in taints
        )

    (node,) = [n for n in await wait_for(nodes, unreachable, seconds=30) if n["metadata"]["name"] == victim]
    ready = condition(node, "Ready")
    assert ready is not None and ready["reason"] == "NodeStatusUnknown"
    assert ready["message"] == "Kubelet stopped posting node status."

    def replaced(items: list[Object]) -> bool:
        alive = live_running(items)
        return len(alive) == 6 and not any(p["metadata"]["uid"] in doomed for p in alive)

    # The evicted pods were marked for deletion on a node no kubelet will ever finish them on; they
    # stay Terminating (as upstream's do, until the node object is removed), the replacements run.
    items = await wait_for(pods, replaced, seconds=30)
    assert all(p["spec"]["nodeName"] != victim for p in live_running(items))

    def evicted(items: list[Object]) -> set[str]:
        return {e["involvedObject"]["name"] for e in items if e["reason"] == "TaintManagerEviction"}

    # Upstream's eviction Event names the pod without its uid (``emitPodDeletionEvent``).
    events = client.resource("", "v1", "events", "default")
    await wait_for(events, lambda items: doomed_names <= evicted(items))
