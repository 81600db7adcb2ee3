"""The ReplicaSet controller: creating and deleting pods with their Events, status, adoption and
release, expectations against a stale cache (and their 5-minute expiry on a ManualClock), the
ReplicaFailure condition, and the pure status calculation."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from controlplane.api.meta import Object
from controlplane.client.cache import NAMESPACE_INDEX, Indexer, meta_namespace_index_func
from controlplane.client.errors import Invalid
from controlplane.client.reconciler import Request
from controlplane.client.record import EventBroadcaster, EventSinkImpl
from controlplane.clock import SYSTEM_CLOCK, ManualClock
from controlplane.components.controllers.podcontrol import ControllerExpectations
from controlplane.components.controllers.replicaset import ReplicaSetReconciler, calculate_status
from tests.controlplane.components.controllers.workloads import (
    FakeKubelet,
    controller_manager,
    owned_by,
    pod_template,
    replicaset_manifest,
)
from tests.support.inprocess import condition, in_process_cluster, wait_for


def ready_pod(name: str, labels: dict[str, str], *, since: str = "2026-01-01T00:00:00Z") -> Object:
    return {
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "spec": {},
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": since}],
        },
    }


def test_status_counts_active_pods_labels_readiness_and_availability() -> None:
    rs = replicaset_manifest("web", 3)
    rs["metadata"].update(namespace="default", generation=2)
    rs["spec"]["template"]["metadata"]["labels"]["tier"] = "front"
    rs["spec"]["minReadySeconds"] = 10
    now = 1_767_225_615.0  # 2026-01-01T00:00:15Z
    pods = [
        ready_pod("a", {"app": "web", "tier": "front"}),  # ready for 15 s: available
        ready_pod("b", {"app": "web"}, since="2026-01-01T00:00:10Z"),  # ready for 5 s only
        {
            "metadata": {"name": "c", "labels": {"app": "web", "tier": "front"}},
            "status": {"phase": "Pending"},
        },
    ]
    status = calculate_status(rs, pods, [], None, now)
    assert status == {
        "replicas": 3,
        "fullyLabeledReplicas": 2,
        "readyReplicas": 2,
        "availableReplicas": 1,
        "terminatingReplicas": 0,
    }
    failed = calculate_status(rs, pods[:1], [], RuntimeError("quota exceeded"), now)
    [failure] = failed["conditions"]
    assert (failure["type"], failure["status"], failure["reason"], failure["message"]) == (
        "ReplicaFailure",
        "True",
        "FailedCreate",
        "quota exceeded",
    )
    # Once managing replicas works again, the condition goes.
    assert "conditions" not in calculate_status({**rs, "status": failed}, pods, [], None, now)


def test_a_replicaset_with_no_pods_still_says_replicas_0() -> None:
    """``replicas`` has no omitempty upstream: the official client's typed ReplicaSetStatus requires it,
    and an old ReplicaSet scaled down by a rollout has none."""
    rs = replicaset_manifest("web", 0)
    rs["metadata"].update(namespace="default", generation=1)
    rs["status"] = {"replicas": 2, "readyReplicas": 2, "availableReplicas": 2}
    assert calculate_status(rs, [], [], None, 0.0) == {"replicas": 0, "terminatingReplicas": 0}


async def test_a_replicaset_creates_and_deletes_pods_with_events(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster, controller_manager(cluster, deployments=False):
        replicasets = cluster.resource("apps", "v1", "replicasets", "default")
        pods = cluster.resource("", "v1", "pods", "default")
        events = cluster.resource("", "v1", "events", "default")
        async with FakeKubelet(pods, SYSTEM_CLOCK).running():
            rs = await replicasets.create(replicaset_manifest("web", 3))
            [rs] = await wait_for(
                replicasets, lambda items: (items[0].get("status") or {}).get("availableReplicas") == 3
            )
            assert rs["status"] == {
                "replicas": 3,
                "fullyLabeledReplicas": 3,
                "readyReplicas": 3,
                "availableReplicas": 3,
                "terminatingReplicas": 0,
                "observedGeneration": 1,
            }
            created = (await pods.list())["items"]
            assert len(created) == 3
            for pod in created:
                assert pod["metadata"]["generateName"] == "web-"
                assert pod["metadata"]["ownerReferences"] == [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "ReplicaSet",
                        "name": "web",
                        "uid": rs["metadata"]["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ]
            await replicasets.patch("web", {"spec": {"replicas": 1}})
            [rs] = await wait_for(
                replicasets,
                lambda items: (
                    items[0]["status"].get("observedGeneration") == 2 and items[0]["status"]["replicas"] == 1
                ),
            )
            remaining = await wait_for(pods, lambda items: len(items) == 1)
        deleted = {p["metadata"]["name"] for p in created} - {p["metadata"]["name"] for p in remaining}
        wanted = {f"Created pod: {p['metadata']['name']}" for p in created} | {
            f"Deleted pod: {n}" for n in deleted
        }
        found = await wait_for(events, lambda evs: wanted <= {e["message"] for e in evs})
        reasons = {e["message"]: (e["reason"], e["source"]["component"]) for e in found}
        assert all(
            reasons[f"Deleted pod: {n}"] == ("SuccessfulDelete", "replicaset-controller") for n in deleted
        )
        assert reasons[f"Created pod: {remaining[0]['metadata']['name']}"] == (
            "SuccessfulCreate",
            "replicaset-controller",
        )


async def test_an_orphan_is_adopted_and_a_relabelled_pod_released(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster, controller_manager(cluster, deployments=False):
        replicasets = cluster.resource("apps", "v1", "replicasets", "default")
        pods = cluster.resource("", "v1", "pods", "default")
        orphan = await pods.create(
            {
                "metadata": {"name": "orphan", **pod_template("web")["metadata"]},
                "spec": pod_template("web")["spec"],
            }
        )
        rs = await replicasets.create(replicaset_manifest("web", 2))
        items = await wait_for(pods, lambda items: len(items) == 2 and all(owned_by(p, rs) for p in items))
        assert "orphan" in {p["metadata"]["name"] for p in items}
        assert orphan["metadata"]["uid"] in {p["metadata"]["uid"] for p in items}
        # Take the orphan out of the set by its labels: released, and replaced.
        await pods.patch("orphan", {"metadata": {"labels": {"app": "other"}}})
        items = await wait_for(
            pods,
            lambda items: (
                len([p for p in items if owned_by(p, rs)]) == 2
                and not owned_by(next(p for p in items if p["metadata"]["name"] == "orphan"), rs)
            ),
        )
        released = next(p for p in items if p["metadata"]["name"] == "orphan")
        assert not released["metadata"].get("ownerReferences")
        assert len(items) == 3


async def test_create_errors_set_the_replica_failure_condition(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster, controller_manager(cluster, deployments=False):
        replicasets = cluster.resource("apps", "v1", "replicasets", "default")
        template = pod_template("bad")
        # A template may name a node and a scheduling gate; a pod may not (only at creation).
        template["spec"].update(nodeName="node-1", schedulingGates=[{"name": "example.com/gate"}])
        await replicasets.create(replicaset_manifest("bad", 2, template))
        [rs] = await wait_for(replicasets, lambda items: condition(items[0], "ReplicaFailure") is not None)
        failure = condition(rs, "ReplicaFailure")
        assert failure is not None and (failure["status"], failure["reason"]) == ("True", "FailedCreate")
        assert "cannot be set until all schedulingGates have been cleared" in failure["message"]
        events = cluster.resource("", "v1", "events", "default")
        [event, *_] = await wait_for(events, lambda evs: any(e["reason"] == "FailedCreate" for e in evs))
        assert event["type"] == "Warning" and event["message"].startswith("Error creating: Pod")


def stale_cache_reconciler(client: Any, clock: Any) -> tuple[ReplicaSetReconciler, Indexer, Indexer]:
    """A reconciler whose caches the test fills by hand: they show only what the test says."""
    rs_cache = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func})
    pod_cache = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func})
    broadcaster = EventBroadcaster(EventSinkImpl(client), clock=clock, rng=random.Random(1))
    reconciler = ReplicaSetReconciler(
        client,
        replicasets=rs_cache,
        pods=pod_cache,
        recorder=broadcaster.new_recorder("replicaset-controller"),
        clock=clock,
        expectations=ControllerExpectations(clock),
    )
    return reconciler, rs_cache, pod_cache


async def test_expectations_keep_a_stale_cache_from_creating_twice(tmp_path: Path) -> None:
    clock = ManualClock()
    async with in_process_cluster(tmp_path) as cluster:
        replicasets = cluster.resource("apps", "v1", "replicasets", "default")
        pods = cluster.resource("", "v1", "pods", "default")
        reconciler, rs_cache, pod_cache = stale_cache_reconciler(cluster.client, clock)
        rs_cache.add(await replicasets.create(replicaset_manifest("web", 3)))
        request = Request("default", "web")
        await reconciler.reconcile(request)
        assert len((await pods.list())["items"]) == 3
        assert reconciler.expectations.get("default/web") == (3, frozenset())
        # The pod cache has not seen the new pods yet: a second sync must not create three more.
        rs_cache.update(await replicasets.get("web"))
        await reconciler.reconcile(request)
        assert len((await pods.list())["items"]) == 3
        # The informer delivers the pods: each add is an observed creation.
        handler = reconciler.pod_event_handler(lambda _: None)
        for pod in (await pods.list())["items"]:
            pod_cache.add(pod)
            handler.on_add(pod)
        assert reconciler.expectations.satisfied("default/web")
        await reconciler.reconcile(request)
        assert len((await pods.list())["items"]) == 3
        # Scale to 1: two deletions expected, by pod key, until the cache sees them go.
        rs_cache.update(await replicasets.patch("web", {"spec": {"replicas": 1}}))
        await reconciler.reconcile(request)
        expected = reconciler.expectations.get("default/web")
        assert expected is not None and expected[0] == 0 and len(expected[1]) == 2
        # Deleted pods are either gone or marked for deletion (graceful): either way, observed.
        now = {p["metadata"]["name"]: p for p in (await pods.list())["items"]}
        alive = [p for p in now.values() if not p["metadata"].get("deletionTimestamp")]
        assert len(alive) == 1
        for cached in pod_cache.list():
            current = now.get(cached["metadata"]["name"])
            if current is None:
                handler.on_delete(cached)
            elif current["metadata"].get("deletionTimestamp"):
                handler.on_update(cached, current)
        assert reconciler.expectations.satisfied("default/web")


async def test_expectations_expire_after_five_minutes(tmp_path: Path) -> None:
    clock = ManualClock()
    async with in_process_cluster(tmp_path) as cluster:
        replicasets = cluster.resource("apps", "v1", "replicasets", "default")
        pods = cluster.resource("", "v1", "pods", "default")
        reconciler, rs_cache, _ = stale_cache_reconciler(cluster.client, clock)
        rs_cache.add(await replicasets.create(replicaset_manifest("web", 2)))
        await reconciler.reconcile(Request("default", "web"))
        await clock.advance(299)
        assert not reconciler.expectations.satisfied("default/web")
        await reconciler.reconcile(Request("default", "web"))
        assert len((await pods.list())["items"]) == 2
        # Never observed in 5 minutes: the cache is trusted again (and here it is wrong).
        await clock.advance(2)
        assert reconciler.expectations.satisfied("default/web")
        await reconciler.reconcile(Request("default", "web"))
        assert len((await pods.list())["items"]) == 4


async def test_a_failed_creation_is_not_expected_forever(tmp_path: Path) -> None:
    clock = ManualClock()
    async with in_process_cluster(tmp_path) as cluster:
        replicasets = cluster.resource("apps", "v1", "replicasets", "default")
        reconciler, rs_cache, _ = stale_cache_reconciler(cluster.client, clock)
        template = pod_template("bad")
        template["spec"].update(nodeName="node-1", schedulingGates=[{"name": "example.com/gate"}])
        rs_cache.add(await replicasets.create(replicaset_manifest("bad", 4, template)))
        try:
            await reconciler.reconcile(Request("default", "bad"))
        except Invalid:
            pass
        else:
            raise AssertionError("the pod creation should have failed")
        # Slow start: one attempt failed, the other three were never tried; none is awaited.
        assert reconciler.expectations.get("default/bad") == (0, frozenset())
        assert reconciler.expectations.satisfied("default/bad")
