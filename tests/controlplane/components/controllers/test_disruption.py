"""The disruption controller against an in-process API server (``pkg/controller/disruption/
disruption_test.go``: ``TestNoSelector``, ``TestUnavailable``, ``TestIntegerMaxUnavailable``,
``TestReplicaSet``, ``TestUnmanagedPods``, the disrupted-pods timeout).

The tests make pods (and their owners) through the API and mark them Ready by hand, as a kubelet
would; the time in ``disruptedPods`` runs on a ``ManualClock`` shared by the API server and the
controller, so a test moves time instead of sleeping.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from controlplane.api.meta import Object, format_time
from controlplane.client.manager import Manager
from controlplane.client.rest import PatchType, ResourceClient
from controlplane.clock import Clock, ManualClock
from controlplane.components.controllers import disruption
from tests.support.inprocess import InProcessCluster, condition, in_process_cluster, wait_for

#: 2026-01-01T00:00:30Z
START = 1_767_225_630.0


@asynccontextmanager
async def disruption_controller(cluster: InProcessCluster, clock: Clock) -> AsyncIterator[Manager]:
    manager = Manager(cluster.client, name="kube-controller-manager", clock=clock, rng=random.Random(7))
    disruption.add_to_manager(manager)
    async with manager:
        yield manager


def clients(cluster: InProcessCluster) -> tuple[ResourceClient, ResourceClient]:
    return (
        cluster.resource("policy", "v1", "poddisruptionbudgets", "default"),
        cluster.resource("", "v1", "pods", "default"),
    )


async def make_pod(
    pods: ResourceClient, name: str, *, ready: bool = True, owner: Object | None = None, **labels: str
) -> None:
    meta: Object = {"name": name, "labels": labels or {"app": "web"}}
    if owner is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": owner["apiVersion"],
                "kind": owner["kind"],
                "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"],
                "controller": True,
            }
        ]
    await pods.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": meta,
            "spec": {"nodeName": "node-1", "containers": [{"name": "app", "image": "nginx"}]},
        }
    )
    status = {
        "phase": "Running",
        "conditions": [
            {
                "type": "Ready",
                "status": "True" if ready else "False",
                "lastTransitionTime": format_time(START),
            }
        ],
    }
    await pods.patch(name, {"status": status}, patch_type=PatchType.MERGE, subresource="status")


def pdb(name: str = "web", **spec: Any) -> Object:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, **spec},
    }


def counts(obj: Object) -> tuple[int, int, int, int]:
    """(currentHealthy, desiredHealthy, expectedPods, disruptionsAllowed)."""
    s = obj["status"]
    return s["currentHealthy"], s["desiredHealthy"], s["expectedPods"], s["disruptionsAllowed"]


def settled(want: tuple[int, int, int, int]) -> Callable[[list[Object]], bool]:
    def done(items: list[Object]) -> bool:
        return (
            len(items) == 1
            and items[0]["status"].get("observedGeneration") == items[0]["metadata"]["generation"]
            and counts(items[0]) == want
        )

    return done


async def test_min_available_counts_the_ready_pods_that_exist(tmp_path: Path) -> None:
    clock = ManualClock(START)
    async with in_process_cluster(tmp_path, clock=clock) as cluster, disruption_controller(cluster, clock):
        pdbs, pods = clients(cluster)
        await pdbs.create(pdb(minAvailable=2))
        [empty] = await wait_for(pdbs, settled((0, 2, 0, 0)))
        allowed = condition(empty, "DisruptionAllowed")
        assert allowed is not None
        assert (allowed["status"], allowed["reason"], allowed["message"]) == ("False", "InsufficientPods", "")

        for name in ("a", "b", "c"):
            await make_pod(pods, name)
        await make_pod(pods, "sick", ready=False)
        await make_pod(pods, "other", app="other")
        [budget] = await wait_for(pdbs, settled((3, 2, 4, 1)))
        allowed = condition(budget, "DisruptionAllowed")
        assert allowed is not None
        assert (allowed["status"], allowed["reason"]) == ("True", "SufficientPods")
        assert allowed["observedGeneration"] == 1
        assert allowed["lastTransitionTime"] == format_time(START)

        # A spec change is a new generation: the status follows it.
        budget["spec"]["minAvailable"] = 3
        await pdbs.update(budget)
        [changed] = await wait_for(pdbs, settled((3, 3, 4, 0)))
        assert changed["metadata"]["generation"] == 2


async def test_max_unavailable_counts_what_the_deployment_wants(tmp_path: Path) -> None:
    clock = ManualClock(START)
    async with in_process_cluster(tmp_path, clock=clock) as cluster, disruption_controller(cluster, clock):
        pdbs, pods = clients(cluster)
        deployment = await cluster.resource("apps", "v1", "deployments", "default").create(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "web"},
                "spec": {
                    "replicas": 4,
                    "selector": {"matchLabels": {"app": "web"}},
                    "template": {
                        "metadata": {"labels": {"app": "web"}},
                        "spec": {"containers": [{"name": "app", "image": "nginx"}]},
                    },
                },
            }
        )
        replica_set = await cluster.resource("apps", "v1", "replicasets", "default").create(
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": {
                    "name": "web-1",
                    "ownerReferences": [
                        {
                            "apiVersion": "apps/v1",
                            "kind": "Deployment",
                            "name": "web",
                            "uid": deployment["metadata"]["uid"],
                            "controller": True,
                        }
                    ],
                },
                "spec": {
                    "replicas": 3,
                    "selector": {"matchLabels": {"app": "web"}},
                    "template": {
                        "metadata": {"labels": {"app": "web"}},
                        "spec": {"containers": [{"name": "app", "image": "nginx"}]},
                    },
                },
            }
        )
        for name in ("a", "b", "c"):
            await make_pod(pods, name, owner=replica_set)
        await pdbs.create(pdb(maxUnavailable="50%"))
        # expected: the Deployment's 4 replicas (not the ReplicaSet's 3, not the 3 pods); 50% of 4 may
        # be unavailable, so 2 must be healthy; 3 are: one disruption allowed.
        await wait_for(pdbs, settled((3, 2, 4, 1)))


async def test_unmanaged_pods_are_left_out_of_a_percentage_with_a_warning(tmp_path: Path) -> None:
    clock = ManualClock(START)
    async with in_process_cluster(tmp_path, clock=clock) as cluster, disruption_controller(cluster, clock):
        pdbs, pods = clients(cluster)
        await make_pod(pods, "lonely")
        await pdbs.create(pdb(minAvailable="50%"))
        await wait_for(pdbs, settled((1, 0, 0, 0)))
        events = cluster.resource("", "v1", "events", "default")
        [warning] = await wait_for(events, lambda evs: any(e["reason"] == "UnmanagedPods" for e in evs))
        assert warning["type"] == "Warning"
        assert warning["message"].startswith(
            "Pods selected by this PodDisruptionBudget (selector: &LabelSelector{MatchLabels:"
            "map[string]string{app: web,},MatchExpressions:[]LabelSelectorRequirement{},}) were found to be "
            "unmanaged."
        )
        assert warning["involvedObject"]["kind"] == "PodDisruptionBudget"


async def test_a_controller_that_cannot_be_found_fails_safe(tmp_path: Path) -> None:
    clock = ManualClock(START)
    async with in_process_cluster(tmp_path, clock=clock) as cluster, disruption_controller(cluster, clock):
        pdbs, pods = clients(cluster)
        alien = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "uid": "u-1"}}
        await make_pod(pods, "a", owner=alien)
        await pdbs.create(pdb(maxUnavailable=1))

        def failed(items: list[Object]) -> bool:
            found = condition(items[0], "DisruptionAllowed") if items else None
            return found is not None and found["reason"] == "SyncFailed"

        [budget] = await wait_for(pdbs, failed)
        allowed = condition(budget, "DisruptionAllowed")
        assert allowed is not None
        assert allowed["status"] == "False"
        assert allowed["message"] == 'no matches for kind "Widget" in version "example.com/v1"'
        assert budget["status"]["disruptionsAllowed"] == 0


async def test_an_evicted_pod_is_not_healthy_until_the_deletion_timeout(tmp_path: Path) -> None:
    clock = ManualClock(START)
    async with in_process_cluster(tmp_path, clock=clock) as cluster, disruption_controller(cluster, clock):
        pdbs, pods = clients(cluster)
        for name in ("a", "b"):
            await make_pod(pods, name)
        await pdbs.create(pdb(minAvailable=1))
        [budget] = await wait_for(pdbs, settled((2, 1, 2, 1)))

        # What an eviction writes before it deletes "a": one disruption spent, "a" on its way out.
        budget["status"]["disruptionsAllowed"] = 0
        budget["status"]["disruptedPods"] = {"a": format_time(START)}
        await pdbs.update_status(budget)
        [pending] = await wait_for(pdbs, settled((1, 1, 2, 0)))
        assert pending["status"]["disruptedPods"] == {"a": format_time(START)}

        # "a" was never deleted: after DeletionTimeout it counts again, and the entry goes.
        await clock.advance(disruption.DELETION_TIMEOUT + 1)
        [recovered] = await wait_for(pdbs, settled((2, 1, 2, 1)))
        assert "disruptedPods" not in recovered["status"]


async def test_a_pod_being_deleted_is_not_healthy(tmp_path: Path) -> None:
    clock = ManualClock(START)
    async with in_process_cluster(tmp_path, clock=clock) as cluster, disruption_controller(cluster, clock):
        pdbs, pods = clients(cluster)
        for name in ("a", "b"):
            await make_pod(pods, name)
        await pdbs.create(pdb(maxUnavailable=0, selector={"matchLabels": {"app": "web"}}))
        # Pods without a controller: a maxUnavailable budget expects none of them.
        await wait_for(pdbs, settled((2, 0, 0, 0)))
        await pods.delete("a")  # graceful: marked for deletion, not gone
        await wait_for(pdbs, settled((1, 0, 0, 0)))


async def test_a_stale_disruption_target_condition_is_set_back_to_false(tmp_path: Path) -> None:
    clock = ManualClock(START)
    async with in_process_cluster(tmp_path, clock=clock) as cluster, disruption_controller(cluster, clock):
        _, pods = clients(cluster)
        await make_pod(pods, "a")
        # What an eviction writes before a delete that then failed.
        target = {
            "type": "DisruptionTarget",
            "status": "True",
            "lastTransitionTime": format_time(START),
            "reason": "EvictionByEvictionAPI",
            "message": "Eviction API: evicting",
        }
        await pods.patch(
            "a",
            {"status": {"conditions": [target]}},
            patch_type=PatchType.STRATEGIC_MERGE,  # conditions merge by type: Ready stays
            subresource="status",
        )

        def disruption_target(items: list[Object]) -> Object | None:
            return condition(items[0], "DisruptionTarget") if items else None

        [marked] = await wait_for(pods, lambda items: disruption_target(items) is not None)
        assert condition(marked, "DisruptionTarget") == target  # not stale yet: left alone

        await clock.advance(disruption.STALE_POD_DISRUPTION_TIMEOUT + 1)
        [cleared] = await wait_for(
            pods, lambda items: (disruption_target(items) or {}).get("status") == "False"
        )
        assert condition(cleared, "DisruptionTarget") == {
            "type": "DisruptionTarget",
            "status": "False",
            "lastProbeTime": None,
            "lastTransitionTime": format_time(START + disruption.STALE_POD_DISRUPTION_TIMEOUT + 1),
        }
        assert condition(cleared, "Ready") is not None


def test_helpers_match_upstream() -> None:
    assert disruption.disruptions_allowed(3, 2, 3) == 1
    assert disruption.disruptions_allowed(3, 2, 0) == 0  # no pod expected: none may go
    assert disruption.disruptions_allowed(1, 2, 3) == 0
    assert disruption.verify_group_kind(
        {"apiVersion": "apps/v1", "kind": "ReplicaSet"}, "ReplicaSet", ("apps",)
    )
    assert not disruption.verify_group_kind(
        {"apiVersion": "v1", "kind": "ReplicaSet"}, "ReplicaSet", ("apps",)
    )
    assert disruption.go_label_selector_string(None) == "nil"
