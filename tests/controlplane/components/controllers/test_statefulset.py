"""The StatefulSet controller against an in-process API server: ordered and parallel pod management,
stable names, scaling down from the top, rolling updates with a partition, revisions.

``FakeKubelet`` makes pods Running and Ready and finishes deletions; ``PodObserver`` checks an
invariant after every watch event, so "in order" is checked at each moment, not only at the end.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from controlplane.api.meta import Object
from controlplane.client.manager import Manager
from controlplane.client.rest import PatchType
from controlplane.clock import SYSTEM_CLOCK
from controlplane.components.controllers import statefulset
from controlplane.components.controllers.podcontrol import is_pod_ready
from controlplane.components.controllers.statefulset import compute_status, parent_and_ordinal
from tests.controlplane.components.controllers.workloads import FakeKubelet, PodObserver, owned_by
from tests.support.inprocess import InProcessCluster, in_process_cluster, wait_for


def sts_manifest(name: str, replicas: int, image: str = "nginx:1", **spec: Any) -> Object:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "web", "image": image}]},
            },
            **spec,
        },
    }


@asynccontextmanager
async def statefulset_controller(cluster: InProcessCluster) -> AsyncIterator[Manager]:
    manager = Manager(cluster.client, name="kube-controller-manager", rng=random.Random(7))
    statefulset.add_to_manager(manager)
    async with manager:
        yield manager


def ordinal(pod: Object) -> int:
    return parent_and_ordinal(pod)[1]


def live(pods: list[Object]) -> list[Object]:
    return sorted((p for p in pods if not p["metadata"].get("deletionTimestamp")), key=ordinal)


def rolled_out(sts: Object, replicas: int) -> bool:
    status = sts.get("status") or {}
    return (
        status.get("observedGeneration") == sts["metadata"]["generation"]
        and status.get("replicas") == replicas
        and status.get("readyReplicas", 0) == replicas
        and status.get("updatedReplicas", 0) == replicas
        and status.get("currentRevision") == status.get("updateRevision")
    )


def ordered(pods: list[Object]) -> bool:
    """Every pod's predecessors exist and are ready (what OrderedReady promises at creation)."""
    ready = {ordinal(p) for p in pods if is_pod_ready(p) and not p["metadata"].get("deletionTimestamp")}
    return all(all(k in ready for k in range(ordinal(p))) for p in pods)


async def test_ordered_ready_creates_one_pod_at_a_time_with_stable_identities(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster, statefulset_controller(cluster):
        sets = cluster.resource("apps", "v1", "statefulsets", "default")
        pods = cluster.resource("", "v1", "pods", "default")
        revisions = cluster.resource("apps", "v1", "controllerrevisions", "default")
        created = await sets.create(sts_manifest("web", 3))
        assert created["spec"]["podManagementPolicy"] == "OrderedReady"
        assert created["spec"]["updateStrategy"] == {
            "type": "RollingUpdate",
            "rollingUpdate": {"partition": 0, "maxUnavailable": 1},
        }
        # Without a kubelet, web-0 is never ready, so web-1 never comes.
        [first] = await wait_for(pods, lambda items: len(items) == 1)
        assert first["metadata"]["name"] == "web-0"
        observer = PodObserver(pods, ordered)
        async with observer.watching(), FakeKubelet(pods, SYSTEM_CLOCK).running():
            [done] = await wait_for(sets, lambda items: rolled_out(items[0], 3))
        assert all(observer.observations), "a pod was created before its predecessors were ready"
        found = live((await pods.list())["items"])
        assert [p["metadata"]["name"] for p in found] == ["web-0", "web-1", "web-2"]
        [revision] = (await revisions.list())["items"]
        assert (
            done["status"]["currentRevision"]
            == revision["metadata"]["name"]
            == done["status"]["updateRevision"]
        )
        for i, pod in enumerate(found):
            assert owned_by(pod, done)
            assert (pod["spec"]["hostname"], pod["spec"]["subdomain"]) == (f"web-{i}", "web")
            labels = pod["metadata"]["labels"]
            assert labels["statefulset.kubernetes.io/pod-name"] == f"web-{i}"
            assert labels["apps.kubernetes.io/pod-index"] == str(i)
            assert labels["controller-revision-hash"] == revision["metadata"]["name"]
        # A deleted pod comes back under the same name.
        async with FakeKubelet(pods, SYSTEM_CLOCK).running():
            old_uid = found[1]["metadata"]["uid"]
            await pods.delete("web-1")
            await wait_for(
                pods,
                lambda items: any(
                    p["metadata"]["name"] == "web-1" and p["metadata"]["uid"] != old_uid and is_pod_ready(p)
                    for p in items
                ),
            )


async def test_parallel_creates_every_pod_at_once(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster, statefulset_controller(cluster):
        sets = cluster.resource("apps", "v1", "statefulsets", "default")
        pods = cluster.resource("", "v1", "pods", "default")
        await sets.create(sts_manifest("db", 3, podManagementPolicy="Parallel"))
        found = await wait_for(pods, lambda items: len(items) == 3)
        assert not any(is_pod_ready(p) for p in found), "no pod waited for another"


def prefix(pods: list[Object]) -> bool:
    """The live pods are web-0 .. web-k with no gap (scale-down takes the highest ordinal first)."""
    ordinals = [ordinal(p) for p in live(pods)]
    return ordinals == list(range(len(ordinals)))


async def test_scaling_down_removes_the_highest_ordinal_first(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster, statefulset_controller(cluster):
        sets = cluster.resource("apps", "v1", "statefulsets", "default")
        pods = cluster.resource("", "v1", "pods", "default")
        async with FakeKubelet(pods, SYSTEM_CLOCK).running():
            await sets.create(sts_manifest("web", 4))
            await wait_for(sets, lambda items: rolled_out(items[0], 4))
            observer = PodObserver(pods, prefix)
            async with observer.watching():
                await sets.patch("web", {"spec": {"replicas": 1}}, patch_type=PatchType.MERGE)
                await wait_for(sets, lambda items: rolled_out(items[0], 1))
                await wait_for(pods, lambda items: [p["metadata"]["name"] for p in items] == ["web-0"])
        assert all(observer.observations)
        assert len(observer.observations) > 3


def unhealthy(pods: list[Object]) -> int:
    return 3 - sum(1 for p in pods if is_pod_ready(p) and not p["metadata"].get("deletionTimestamp"))


async def test_a_rolling_update_respects_the_partition_and_goes_from_the_top(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster, statefulset_controller(cluster):
        sets = cluster.resource("apps", "v1", "statefulsets", "default")
        pods = cluster.resource("", "v1", "pods", "default")
        revisions = cluster.resource("apps", "v1", "controllerrevisions", "default")
        async with FakeKubelet(pods, SYSTEM_CLOCK).running():
            strategy = {"type": "RollingUpdate", "rollingUpdate": {"partition": 2}}
            await sets.create(sts_manifest("web", 3, updateStrategy=strategy))
            await wait_for(sets, lambda items: rolled_out(items[0], 3))
            image = {"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx:2"}]}}}}
            await sets.patch("web", image, patch_type=PatchType.STRATEGIC_MERGE)
            # The canary: only ordinals at or above the partition are updated.
            [canary] = await wait_for(
                sets,
                lambda items: (
                    items[0]["status"].get("updatedReplicas") == 1
                    and items[0]["status"].get("readyReplicas") == 3
                ),
            )
            assert canary["status"]["currentRevision"] != canary["status"]["updateRevision"]
            images = {
                p["metadata"]["name"]: p["spec"]["containers"][0]["image"]
                for p in live((await pods.list())["items"])
            }
            assert images == {"web-0": "nginx:1", "web-1": "nginx:1", "web-2": "nginx:2"}
            observer = PodObserver(pods, unhealthy)
            async with observer.watching():
                await sets.patch(
                    "web",
                    {"spec": {"updateStrategy": {"rollingUpdate": {"partition": 0}}}},
                    patch_type=PatchType.MERGE,
                )
                [done] = await wait_for(sets, lambda items: rolled_out(items[0], 3))
            assert max(observer.observations) == 1, "maxUnavailable 1: one pod at a time"
            images = {
                p["metadata"]["name"]: p["spec"]["containers"][0]["image"]
                for p in live((await pods.list())["items"])
            }
            assert set(images.values()) == {"nginx:2"}
            assert done["status"]["currentRevision"] == done["status"]["updateRevision"]
            # A rollback renumbers the first revision as the newest.
            first = next(r for r in (await revisions.list())["items"] if r["revision"] == 1)
            await sets.patch("web", first["data"], patch_type=PatchType.STRATEGIC_MERGE)
            [back] = await wait_for(
                sets, lambda items: rolled_out(items[0], 3) and items[0]["metadata"]["generation"] == 4
            )
            assert back["status"]["updateRevision"] == first["metadata"]["name"]
            renumbered = await revisions.get(first["metadata"]["name"])
            assert renumbered["revision"] == 3


async def test_on_delete_waits_for_a_deletion(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster, statefulset_controller(cluster):
        sets = cluster.resource("apps", "v1", "statefulsets", "default")
        pods = cluster.resource("", "v1", "pods", "default")
        async with FakeKubelet(pods, SYSTEM_CLOCK).running():
            await sets.create(sts_manifest("web", 2, updateStrategy={"type": "OnDelete"}))
            await wait_for(sets, lambda items: rolled_out(items[0], 2))
            image = {"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx:2"}]}}}}
            await sets.patch("web", image, patch_type=PatchType.STRATEGIC_MERGE)
            [waiting] = await wait_for(sets, lambda items: items[0]["status"].get("observedGeneration") == 2)
            assert "updatedReplicas" not in waiting["status"]
            await pods.delete("web-0")
            await wait_for(
                pods,
                lambda items: (
                    {(p["metadata"]["name"], p["spec"]["containers"][0]["image"]) for p in live(items)}
                    == {("web-0", "nginx:2"), ("web-1", "nginx:1")}
                ),
            )


async def test_each_pod_gets_its_own_claim_from_the_templates_and_keeps_it(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster, statefulset_controller(cluster):
        sets = cluster.resource("apps", "v1", "statefulsets", "default")
        pods = cluster.resource("", "v1", "pods", "default")
        claims = cluster.resource("", "v1", "persistentvolumeclaims", "default")
        template = {
            "metadata": {"name": "www"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
        }
        async with FakeKubelet(pods, SYSTEM_CLOCK).running():
            await sets.create(sts_manifest("web", 2, volumeClaimTemplates=[template]))
            await wait_for(sets, lambda items: rolled_out(items[0], 2))
            found = {c["metadata"]["name"]: c for c in (await claims.list())["items"]}
            assert sorted(found) == ["www-web-0", "www-web-1"]
            assert found["www-web-0"]["metadata"]["labels"] == {"app": "web"}
            pod = await pods.get("web-1")
            assert {"name": "www", "persistentVolumeClaim": {"claimName": "www-web-1"}} in pod["spec"][
                "volumes"
            ]
            await pods.delete("web-1")
            await wait_for(
                pods,
                lambda items: any(
                    p["metadata"]["name"] == "web-1" and p["metadata"]["uid"] != pod["metadata"]["uid"]
                    for p in items
                ),
            )
            again = (await claims.list())["items"]
            assert [c["metadata"]["uid"] for c in again if c["metadata"]["name"] == "www-web-1"] == [
                found["www-web-1"]["metadata"]["uid"]
            ], "the recreated pod gets its old claim back"


def test_status_completes_a_rollout_only_when_every_pod_is_updated_and_ready() -> None:
    sts = sts_manifest("web", 2, updateStrategy={"type": "RollingUpdate"})
    sts["metadata"]["generation"] = 3

    def pod(name: str, revision: str, ready: bool) -> Object:
        return {
            "metadata": {"name": name, "labels": {"controller-revision-hash": revision}},
            "status": {
                "phase": "Running",
                "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            },
        }

    halfway = compute_status(sts, [pod("web-0", "r1", True), pod("web-1", "r2", True)], "r1", "r2", 0, 0.0)
    assert halfway == {
        "observedGeneration": 3,
        "replicas": 2,
        "readyReplicas": 2,
        "currentReplicas": 1,
        "updatedReplicas": 1,
        "currentRevision": "r1",
        "updateRevision": "r2",
        "collisionCount": 0,
        "availableReplicas": 2,
    }
    done = compute_status(sts, [pod("web-0", "r2", True), pod("web-1", "r2", True)], "r1", "r2", 0, 0.0)
    assert (done["currentRevision"], done["currentReplicas"]) == ("r2", 2)
    not_ready = compute_status(sts, [pod("web-0", "r2", True), pod("web-1", "r2", False)], "r1", "r2", 0, 0.0)
    assert not_ready["currentRevision"] == "r1"
