"""The kubelet's sync loop hands work to one pod at a time: a pod that changed is synced, the quiet
ones on the same node are left alone until their timers come or the periodic full sync."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

from controlplane.clock import ManualClock
from controlplane.components.kubelet.kubelet import Kubelet
from controlplane.identity import NODES, UserInfo, node_user
from tests.support.inprocess import CLUSTER, in_process_cluster, wait_for

NODE = "node-1"


def pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"nodeName": NODE, "containers": [{"name": "app", "image": "nginx:1.27"}]},
    }


async def test_a_changed_pod_is_synced_and_its_quiet_neighbours_are_not(tmp_path: Path) -> None:
    clock = ManualClock()
    async with in_process_cluster(tmp_path, clock=clock) as cluster:
        kubelet = Kubelet(
            cluster.client_for(UserInfo.create(node_user(NODE), groups=[NODES])),
            NODE,
            clock=clock,
            rng=random.Random(1),
            cluster=CLUSTER,
            internal_ip="10.0.0.11",
            pod_cidr="10.244.1.0/24",
        )
        await kubelet.start()
        try:
            pods = cluster.resource("", "v1", "pods", "default")
            web = await pods.create(pod("web"))
            db = await pods.create(pod("db"))
            await wait_for(
                pods,
                lambda items: sum((p.get("status") or {}).get("phase") == "Running" for p in items) == 2,
            )
            synced: list[str] = []
            arrived = asyncio.Event()
            sync_pod = kubelet._sync_pod

            async def recording(uid: str, obj: Any, now: float, *, full: bool) -> None:
                synced.append(obj["metadata"]["name"])
                await sync_pod(uid, obj, now, full=full)
                arrived.set()

            kubelet._sync_pod = recording  # type: ignore[method-assign,assignment]
            await pods.patch("db", {"metadata": {"labels": {"tier": "data"}}})
            async with asyncio.timeout(10):
                while "db" not in synced:
                    arrived.clear()
                    await arrived.wait()
            assert synced == ["db"], f"only the changed pod is synced, not {synced}"
            assert {web["metadata"]["uid"], db["metadata"]["uid"]} <= kubelet.workers.keys()

            synced.clear()
            await kubelet.sync_pods(clock.now(), full=True)
            assert sorted(synced) == ["db", "web"], "a full sync takes every pod"
        finally:
            await kubelet.stop()
