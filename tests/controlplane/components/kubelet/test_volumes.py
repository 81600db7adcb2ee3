"""Secret volumes: the kubelet reads a pod's Secrets as its node before the containers start; a
missing one holds the pod in ContainerCreating with FailedMount Warnings until it appears."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from controlplane.clock import ManualClock
from controlplane.components.kubelet.kubelet import Kubelet
from controlplane.components.kubelet.volumes import SecretVolume, secret_volumes
from controlplane.identity import NODES, UserInfo, node_user
from controlplane.timing import UPSTREAM
from tests.support.inprocess import CLUSTER, InProcessCluster, in_process_cluster, wait_for

NODE = "node-1"


def pod_mounting(name: str, secret: str, *, optional: bool = False) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "nodeName": NODE,
            "containers": [{"name": "app", "image": "nginx:1.27"}],
            "volumes": [{"name": "creds", "secret": {"secretName": secret, "optional": optional}}],
        },
    }


def test_secret_volumes_finds_secret_and_projected_sources_only() -> None:
    pod = {
        "spec": {
            "volumes": [
                {"name": "a", "secret": {"secretName": "one"}},
                {"name": "b", "configMap": {"name": "not-a-secret"}},
                {
                    "name": "c",
                    "projected": {
                        "sources": [
                            {"serviceAccountToken": {"path": "token"}},
                            {"secret": {"name": "two", "optional": True}},
                        ]
                    },
                },
                "not a volume",
            ]
        }
    }
    assert secret_volumes(pod) == [SecretVolume("a", "one", False), SecretVolume("c", "two", True)]
    assert secret_volumes({"spec": None}) == []


def _kubelet(cluster: InProcessCluster, clock: ManualClock) -> Kubelet:
    node = UserInfo.create(node_user(NODE), groups=[NODES])
    return Kubelet(
        cluster.client_for(node), NODE, clock=clock, rng=random.Random(1), cluster=CLUSTER, timing=UPSTREAM
    )


def _phase_is(name: str, phase: str) -> Any:
    return lambda items: any(
        p["metadata"]["name"] == name and p.get("status", {}).get("phase") == phase for p in items
    )


async def test_a_missing_secret_holds_the_pod_until_it_is_created(tmp_path: Path) -> None:
    clock = ManualClock()
    async with in_process_cluster(tmp_path, clock=clock) as cluster:
        kubelet = _kubelet(cluster, clock)
        await kubelet.start()
        try:
            pods = cluster.resource("", "v1", "pods", "default")
            events = cluster.resource("", "v1", "events", "default")
            created = await pods.create(pod_mounting("web", "db"))
            warned = await wait_for(events, lambda items: any(e["reason"] == "FailedMount" for e in items))
            (event,) = [e for e in warned if e["reason"] == "FailedMount"]
            assert event["type"] == "Warning"
            assert event["message"] == 'MountVolume.SetUp failed for volume "creds" : secret "db" not found'
            worker = kubelet.workers[created["metadata"]["uid"]]
            assert worker.lifecycle.held, "no container starts while a Secret it mounts is missing"
            assert worker.mount_due == clock.now() + UPSTREAM.kubelet_pod_backoff

            secrets = cluster.resource("", "v1", "secrets", "default")
            await secrets.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db"}})
            await kubelet.sync_pods(clock.now(), only_due=True)
            assert worker.lifecycle.held, "the next attempt waits for the back-off, as upstream's pod worker"

            await clock.advance(UPSTREAM.kubelet_pod_backoff)
            await kubelet.sync_pods(clock.now(), only_due=True)
            assert not worker.lifecycle.held and worker.mount_due is None
            await clock.advance(60)  # the image pull and start
            await kubelet.sync_pods(clock.now(), full=True)
            await wait_for(pods, _phase_is("web", "Running"))
        finally:
            await kubelet.stop()


async def test_an_optional_secret_may_be_missing(tmp_path: Path) -> None:
    clock = ManualClock()
    async with in_process_cluster(tmp_path, clock=clock) as cluster:
        kubelet = _kubelet(cluster, clock)
        await kubelet.start()
        try:
            pods = cluster.resource("", "v1", "pods", "default")
            created = await pods.create(pod_mounting("web", "absent", optional=True))
            await wait_for(
                pods, lambda items: bool(items) and "containerStatuses" in items[0].get("status", {})
            )
            assert not kubelet.workers[created["metadata"]["uid"]].lifecycle.held
        finally:
            await kubelet.stop()
