"""The ReplicationController controller (the ReplicaSet controller run for RCs) against an in-process
API server: it creates the RC's pods with owner references to the RC, adopts and releases by the RC's
map selector, scales, and writes an RC status."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from controlplane.api.meta import Object
from controlplane.client.manager import Manager
from controlplane.components.controllers import replicationcontroller
from controlplane.components.controllers.replicationcontroller import rc_selector
from tests.support.inprocess import InProcessCluster, in_process_cluster, wait_for


@asynccontextmanager
async def rc_controller(cluster: InProcessCluster) -> AsyncIterator[Manager]:
    manager = Manager(cluster.client, name="kube-controller-manager", rng=random.Random(3))
    replicationcontroller.add_to_manager(manager)
    async with manager:
        yield manager


def rc_manifest(name: str, replicas: int) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]},
            },
        },
    }


def test_the_selector_is_the_label_map() -> None:
    selector = rc_selector({"spec": {"selector": {"app": "web", "tier": "front"}}})
    assert selector is not None
    assert selector.matches({"app": "web", "tier": "front", "extra": "x"})
    assert not selector.matches({"app": "web"})
    assert rc_selector({"spec": {"selector": ["app"]}}) is None


async def test_an_rc_creates_its_pods_and_scales(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster, rc_controller(cluster):
        rcs = cluster.resource("", "v1", "replicationcontrollers", "default")
        pods = cluster.resource("", "v1", "pods", "default")
        events = cluster.resource("", "v1", "events", "default")
        created = await rcs.create(rc_manifest("web", 3))
        # Defaulted from the template: the selector and the RC's own labels.
        assert created["spec"]["selector"] == {"app": "web"}
        assert created["metadata"]["labels"] == {"app": "web"}
        found = await wait_for(pods, lambda items: len(items) == 3)
        for pod in found:
            assert pod["metadata"]["ownerReferences"] == [
                {
                    "apiVersion": "v1",
                    "kind": "ReplicationController",
                    "name": "web",
                    "uid": created["metadata"]["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ]
        [rc] = await wait_for(rcs, lambda items: items[0]["status"].get("replicas") == 3)
        assert "terminatingReplicas" not in rc["status"]
        assert rc["status"]["observedGeneration"] == 1
        found_events = await wait_for(
            events, lambda evs: sum(e["reason"] == "SuccessfulCreate" for e in evs) == 3
        )
        assert {e["source"]["component"] for e in found_events} == {"replication-controller"}
        assert {e["involvedObject"]["kind"] for e in found_events} == {"ReplicationController"}

        # Scale down through the scale subresource, as ``kubectl scale rc`` does.
        scale = await cluster.client.request_json(
            "GET", "/api/v1/namespaces/default/replicationcontrollers/web/scale"
        )
        assert scale["status"] == {"replicas": 3, "selector": "app=web"}
        scale["spec"]["replicas"] = 1
        await cluster.client.request_json(
            "PUT", "/api/v1/namespaces/default/replicationcontrollers/web/scale", body=scale
        )
        remaining = await wait_for(
            pods, lambda items: len([p for p in items if not p["metadata"].get("deletionTimestamp")]) == 1
        )
        assert remaining
        [rc] = await wait_for(rcs, lambda items: items[0]["status"].get("replicas") == 1)
        assert rc["status"]["observedGeneration"] == 2


async def test_an_rc_adopts_a_matching_orphan(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster, rc_controller(cluster):
        rcs = cluster.resource("", "v1", "replicationcontrollers", "default")
        pods = cluster.resource("", "v1", "pods", "default")
        orphan = await pods.create(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "stray", "labels": {"app": "api"}},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]},
            }
        )
        created = await rcs.create(rc_manifest("api", 1))
        [adopted] = await wait_for(
            pods, lambda items: bool(items and items[0]["metadata"].get("ownerReferences"))
        )
        assert adopted["metadata"]["uid"] == orphan["metadata"]["uid"]
        assert adopted["metadata"]["ownerReferences"][0]["uid"] == created["metadata"]["uid"]
        [rc] = await wait_for(rcs, lambda items: items[0]["status"].get("replicas") == 1)
        assert len((await pods.list())["items"]) == 1, "the orphan counts: no second pod"
        assert rc["status"]["replicas"] == 1
