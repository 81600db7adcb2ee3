"""The Deployment controller against a real API server, with the ReplicaSet controller and a fake
kubelet: availability, scaling through the scale subresource, rolling updates within their
fenceposts at every observed moment, Recreate, rollback, pause, history cleanup and the progress
deadline on a ManualClock."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from controlplane.api.meta import Object
from controlplane.client.errors import Conflict
from controlplane.client.rest import PatchType
from controlplane.clock import SYSTEM_CLOCK, ManualClock
from controlplane.components.controllers import deploymentutil as du
from controlplane.components.controllers.podcontrol import is_pod_ready
from tests.controlplane.components.controllers.workloads import (
    FakeKubelet,
    PodObserver,
    controller_manager,
    deployment_manifest,
    owned_by,
    rollout_status,
    until,
)
from tests.support.inprocess import InProcessCluster, condition, in_process_cluster, wait_for


def clients(cluster: InProcessCluster) -> tuple[Any, Any, Any]:
    return (
        cluster.resource("apps", "v1", "deployments", "default"),
        cluster.resource("apps", "v1", "replicasets", "default"),
        cluster.resource("", "v1", "pods", "default"),
    )


def rolled_out(name: str, replicas: int) -> Any:
    def check(items: list[Object]) -> bool:
        d = next((i for i in items if i["metadata"]["name"] == name), None)
        return (
            d is not None
            and rollout_status(d) == (f'deployment "{name}" successfully rolled out', True)
            and (d["status"].get("availableReplicas") == replicas)
        )

    return check


def revision(obj: Object) -> str | None:
    return (obj["metadata"].get("annotations") or {}).get(du.REVISION_ANNOTATION)


async def patch(deployments: Any, name: str, body: Any, **options: Any) -> Object:
    """A patch without a resourceVersion, retried on Conflict: this API server's patch handler
    answers 409 when a controller wrote meanwhile (upstream re-applies such a patch itself)."""
    for _ in range(10):
        try:
            result: Object = await deployments.patch(name, body, **options)
            return result
        except Conflict:
            continue
    raise AssertionError("the patch kept conflicting")


async def set_image(deployments: Any, name: str, image: str) -> None:
    await patch(
        deployments,
        name,
        {"spec": {"template": {"spec": {"containers": [{"name": "web", "image": image}]}}}},
        patch_type=PatchType.STRATEGIC_MERGE,
    )


async def test_a_deployment_of_three_reaches_three_available_replicas(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster, controller_manager(cluster):
        deployments, replicasets, pods = clients(cluster)
        kubelet = FakeKubelet(pods, SYSTEM_CLOCK)
        async with kubelet.running():
            await deployments.create(deployment_manifest("web", 3))
            [d] = await wait_for(deployments, rolled_out("web", 3))
        status = d["status"]
        assert (status["replicas"], status["updatedReplicas"], status["readyReplicas"]) == (3, 3, 3)
        assert status["observedGeneration"] == d["metadata"]["generation"]
        assert "unavailableReplicas" not in status
        available, progressing = condition(d, "Available"), condition(d, "Progressing")
        assert available is not None and progressing is not None
        assert (available["status"], available["reason"], available["message"]) == (
            "True",
            "MinimumReplicasAvailable",
            "Deployment has minimum availability.",
        )
        [rs] = (await replicasets.list())["items"]
        pod_template_hash = du.compute_hash(d["spec"]["template"])
        assert rs["metadata"]["name"] == f"web-{pod_template_hash}"
        assert (progressing["status"], progressing["reason"], progressing["message"]) == (
            "True",
            "NewReplicaSetAvailable",
            f'ReplicaSet "web-{pod_template_hash}" has successfully progressed.',
        )
        assert rs["metadata"]["labels"] == {"app": "web", "pod-template-hash": pod_template_hash}
        assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": pod_template_hash}
        assert rs["metadata"]["annotations"] == {
            du.REVISION_ANNOTATION: "1",
            du.DESIRED_REPLICAS_ANNOTATION: "3",
            du.MAX_REPLICAS_ANNOTATION: "4",
        }
        assert owned_by(rs, d) and rs["metadata"]["ownerReferences"][0]["blockOwnerDeletion"] is True
        assert revision(d) == "1"
        items = (await pods.list())["items"]
        assert len(items) == 3 and all(owned_by(p, rs) for p in items)
        assert all(p["metadata"]["name"].startswith(f"web-{pod_template_hash}-") for p in items)
        events = cluster.resource("", "v1", "events", "default")
        scaled = f"Scaled up replica set web-{pod_template_hash} from 0 to 3"
        found = await wait_for(events, lambda evs: any(e["message"] == scaled for e in evs))
        [event] = [e for e in found if e["message"] == scaled]
        assert (event["reason"], event["source"]["component"], event["involvedObject"]["kind"]) == (
            "ScalingReplicaSet",
            "deployment-controller",
            "Deployment",
        )


async def test_scaling_through_the_scale_subresource(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster, controller_manager(cluster):
        deployments, replicasets, pods = clients(cluster)
        async with FakeKubelet(pods, SYSTEM_CLOCK).running():
            await deployments.create(deployment_manifest("web", 2))
            await wait_for(deployments, rolled_out("web", 2))
            await patch(deployments, "web", {"spec": {"replicas": 5}}, subresource="scale")
            await wait_for(deployments, rolled_out("web", 5))
            [rs] = (await replicasets.list())["items"]
            assert rs["spec"]["replicas"] == 5
            assert rs["metadata"]["annotations"][du.DESIRED_REPLICAS_ANNOTATION] == "5"
            await patch(deployments, "web", {"spec": {"replicas": 1}}, subresource="scale")
            await wait_for(deployments, rolled_out("web", 1))
            await wait_for(pods, lambda items: len(items) == 1)
        [rs] = (await replicasets.list())["items"]
        assert rs["spec"]["replicas"] == 1 and revision(rs) == "1"
        events = cluster.resource("", "v1", "events", "default")
        name = rs["metadata"]["name"]
        wanted = {f"Scaled up replica set {name} from 2 to 5", f"Scaled down replica set {name} from 5 to 1"}
        await wait_for(events, lambda evs: wanted <= {e["message"] for e in evs})


def surge_and_availability(items: list[Object]) -> tuple[int, int]:
    """(pods not being deleted, of which ready): what maxSurge and maxUnavailable bound."""
    alive = [p for p in items if not p["metadata"].get("deletionTimestamp")]
    return len(alive), sum(1 for p in alive if is_pod_ready(p))


@pytest.mark.parametrize(
    ("replicas", "surge", "unavailable", "max_total", "min_ready"),
    [(4, "25%", "25%", 5, 3), (3, 1, 0, 4, 3), (5, 0, "40%", 5, 3)],
)
async def test_a_rolling_update_stays_within_max_surge_and_max_unavailable(
    tmp_path: Path, replicas: int, surge: int | str, unavailable: int | str, max_total: int, min_ready: int
) -> None:
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}}
    async with in_process_cluster(tmp_path) as cluster, controller_manager(cluster):
        deployments, replicasets, pods = clients(cluster)
        kubelet = FakeKubelet(pods, SYSTEM_CLOCK)
        async with kubelet.running():
            await deployments.create(deployment_manifest("web", replicas, strategy=strategy))
            await wait_for(deployments, rolled_out("web", replicas))
        observer = PodObserver(pods, surge_and_availability)
        async with observer.watching():
            await set_image(deployments, "web", "nginx:1.28")

            def settled(lists: list[list[Object]]) -> bool:
                """Every ReplicaSet has caught up with its pods, the Deployment with its ReplicaSets."""
                [ds], rss, items = lists
                if any(p["metadata"].get("deletionTimestamp") for p in items):
                    return False
                for rs in rss:
                    mine = [p for p in items if owned_by(p, rs)]
                    st = rs.get("status") or {}
                    if st.get("observedGeneration") != rs["metadata"]["generation"]:
                        return False
                    if not (rs["spec"]["replicas"] == len(mine) == (st.get("replicas") or 0)):
                        return False
                    if (st.get("readyReplicas") or 0) != sum(1 for p in mine if is_pod_ready(p)):
                        return False
                st = ds.get("status") or {}
                return st.get("observedGeneration") == ds["metadata"]["generation"] and (
                    st.get("availableReplicas") or 0
                ) == sum((rs.get("status") or {}).get("availableReplicas") or 0 for rs in rss)

            # The kubelet: finish deletions, wait for the controllers to settle, ready one new pod.
            for _ in range(50):
                await kubelet.finish_terminating()
                lists = await until(
                    [deployments, replicasets, pods],
                    lambda ls: settled(ls) or any(p["metadata"].get("deletionTimestamp") for p in ls[2]),
                )
                [d], _, items = lists
                if rolled_out("web", replicas)([d]):
                    break
                waiting = [
                    p for p in items if not is_pod_ready(p) and not p["metadata"].get("deletionTimestamp")
                ]
                if waiting and settled(lists):
                    await kubelet.ready(waiting[0])
            else:
                pytest.fail(f"the rollout did not finish: {rollout_status(d)}")
        assert len(observer.observations) > 2 * replicas
        totals = [total for total, _ in observer.observations]
        ready = [ready for _, ready in observer.observations]
        assert max(totals) <= max_total, observer.observations
        assert min(ready) >= min_ready, observer.observations
        if max_total > replicas:
            assert max(totals) == max_total  # the surge was used
        rss = (await replicasets.list())["items"]
        new = next(rs for rs in rss if revision(rs) == "2")
        old = next(rs for rs in rss if revision(rs) == "1")
        assert (new["spec"]["replicas"], old["spec"]["replicas"]) == (replicas, 0)
        assert revision(d) == "2"


async def test_recreate_never_runs_old_and_new_pods_together(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster, controller_manager(cluster):
        deployments, _, pods = clients(cluster)
        async with FakeKubelet(pods, SYSTEM_CLOCK).running():
            await deployments.create(deployment_manifest("web", 3, strategy={"type": "Recreate"}))
            await wait_for(deployments, rolled_out("web", 3))

            def hashes(items: list[Object]) -> frozenset[str]:
                return frozenset(p["metadata"]["labels"]["pod-template-hash"] for p in items)

            observer = PodObserver(pods, hashes)
            async with observer.watching():
                await set_image(deployments, "web", "nginx:1.28")
                [d] = await wait_for(
                    deployments,
                    lambda items: rolled_out("web", 3)(items) and revision(items[0]) == "2",
                )
        kinds = observer.observations
        assert all(len(seen) <= 1 for seen in kinds), kinds
        assert kinds[0] != kinds[-1] and len(kinds[-1]) == 1
        assert frozenset() in kinds  # there was a moment with no pods at all
        progressing = condition(d, "Progressing")
        assert progressing is not None and progressing["reason"] == "NewReplicaSetAvailable"


async def test_rollback_reuses_the_old_replica_set_with_the_next_revision(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster, controller_manager(cluster):
        deployments, replicasets, pods = clients(cluster)
        async with FakeKubelet(pods, SYSTEM_CLOCK).running():
            await deployments.create(deployment_manifest("web", 3))
            await wait_for(deployments, rolled_out("web", 3))
            [first] = (await replicasets.list())["items"]
            await set_image(deployments, "web", "nginx:1.28")
            await wait_for(
                deployments, lambda items: rolled_out("web", 3)(items) and revision(items[0]) == "2"
            )
            # kubectl rollout undo (client-side, kubectl/pkg/polymorphichelpers/rollback.go): the previous
            # revision's template without its hash label, and its annotations, as one JSON patch.
            d = await deployments.get("web")
            template = du.template_without_hash(first["spec"]["template"])
            annotations = {
                k: v
                for k, v in (d["metadata"].get("annotations") or {}).items()
                if k in du.ANNOTATIONS_TO_SKIP
            }
            undo = [
                {"op": "replace", "path": "/spec/template", "value": template},
                {"op": "replace", "path": "/metadata/annotations", "value": annotations},
            ]
            await patch(deployments, "web", undo, patch_type=PatchType.JSON)
            [d] = await wait_for(
                deployments, lambda items: rolled_out("web", 3)(items) and revision(items[0]) == "3"
            )
        rss = {rs["metadata"]["name"]: rs for rs in (await replicasets.list())["items"]}
        assert len(rss) == 2
        reused = rss[first["metadata"]["name"]]
        assert reused["metadata"]["uid"] == first["metadata"]["uid"]
        assert reused["spec"]["replicas"] == 3
        assert revision(reused) == "3"
        assert reused["metadata"]["annotations"][du.REVISION_HISTORY_ANNOTATION] == "1"
        [other] = [rs for name, rs in rss.items() if name != first["metadata"]["name"]]
        assert (other["spec"]["replicas"], revision(other)) == (0, "2")
        assert {p["metadata"]["labels"]["pod-template-hash"] for p in (await pods.list())["items"]} == {
            first["metadata"]["labels"]["pod-template-hash"]
        }


async def test_a_paused_deployment_does_not_roll_out_until_resumed(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster, controller_manager(cluster):
        deployments, replicasets, pods = clients(cluster)
        async with FakeKubelet(pods, SYSTEM_CLOCK).running():
            await deployments.create(deployment_manifest("web", 2))
            await wait_for(deployments, rolled_out("web", 2))
            await patch(deployments, "web", {"spec": {"paused": True}})
            await set_image(deployments, "web", "nginx:1.28")
            [d] = await wait_for(
                deployments,
                lambda items: (
                    (c := condition(items[0], "Progressing")) is not None
                    and c["reason"] == "DeploymentPaused"
                ),
            )
            progressing = condition(d, "Progressing")
            assert progressing is not None
            assert (progressing["status"], progressing["message"]) == ("Unknown", "Deployment is paused")
            # Paused, the template change makes no new ReplicaSet, but scaling still works.
            await patch(deployments, "web", {"spec": {"replicas": 3}}, subresource="scale")
            await wait_for(
                deployments, lambda items: (items[0].get("status") or {}).get("availableReplicas") == 3
            )
            assert len((await replicasets.list())["items"]) == 1
            await patch(deployments, "web", {"spec": {"paused": False}})
            [d] = await wait_for(
                deployments, lambda items: rolled_out("web", 3)(items) and revision(items[0]) == "2"
            )
        assert len((await replicasets.list())["items"]) == 2


async def test_old_replica_sets_beyond_the_revision_history_limit_are_deleted(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster, controller_manager(cluster):
        deployments, replicasets, pods = clients(cluster)
        async with FakeKubelet(pods, SYSTEM_CLOCK).running():
            await deployments.create(deployment_manifest("web", 1, revisionHistoryLimit=1))
            await wait_for(deployments, rolled_out("web", 1))
            for n, image in enumerate(["nginx:1.28", "nginx:1.29", "nginx:1.30"], start=2):
                await set_image(deployments, "web", image)

                def at_revision(items: list[Object], n: int = n) -> bool:
                    return bool(rolled_out("web", 1)(items)) and revision(items[0]) == str(n)

                await wait_for(deployments, at_revision)
            rss = await wait_for(replicasets, lambda items: len(items) == 2)
        assert sorted(revision(rs) or "" for rs in rss) == ["3", "4"]


async def test_no_progress_within_the_deadline_is_reported_on_the_cluster_clock(tmp_path: Path) -> None:
    clock = ManualClock()
    async with in_process_cluster(tmp_path) as cluster, controller_manager(cluster, clock=clock):
        deployments, replicasets, _ = clients(cluster)
        # No kubelet: the pods never become ready.
        await deployments.create(deployment_manifest("web", 2, progressDeadlineSeconds=30))
        [d] = await wait_for(
            deployments,
            lambda items: (
                (items[0].get("status") or {}).get("replicas") == 2
                and (c := condition(items[0], "Progressing")) is not None
                and c["reason"] in ("NewReplicaSetCreated", "ReplicaSetUpdated")
            ),
        )
        assert rollout_status(d) == (
            'Waiting for deployment "web" rollout to finish: 0 of 2 updated replicas are available...',
            False,
        )
        available = condition(d, "Available")
        assert available is not None and (available["status"], available["reason"]) == (
            "False",
            "MinimumReplicasUnavailable",
        )
        assert d["status"]["unavailableReplicas"] == 2
        await clock.advance(20)
        assert condition(await deployments.get("web"), "Progressing")["reason"] != "ProgressDeadlineExceeded"  # type: ignore[index]
        await clock.advance(12)
        [d] = await wait_for(
            deployments,
            lambda items: (c := condition(items[0], "Progressing")) is not None and c["status"] == "False",
        )
        [rs] = (await replicasets.list())["items"]
        progressing = condition(d, "Progressing")
        assert progressing is not None
        assert (progressing["reason"], progressing["message"]) == (
            "ProgressDeadlineExceeded",
            f'ReplicaSet "{rs["metadata"]["name"]}" has timed out progressing.',
        )
        assert rollout_status(d) == ('error: deployment "web" exceeded its progress deadline', True)
