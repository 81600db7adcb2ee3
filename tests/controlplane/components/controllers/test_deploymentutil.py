"""The Deployment controller's pure arithmetic, against upstream's own examples where it has them
(``deployment_util_test.go``, ``rolling_test.go``, ``sync_test.go``, ``progress_test.go``)."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.api.meta import Object
from controlplane.components.controllers import deploymentutil as du
from tests.controlplane.components.controllers.workloads import deployment_manifest, rollout_status

NOW = 1_767_225_600.0  # 2026-01-01T00:00:00Z


def deployment(replicas: int = 3, surge: int | str = 1, unavailable: int | str = 0, **spec: Any) -> Object:
    d = deployment_manifest(
        "web",
        replicas,
        strategy={
            "type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable},
        },
        **spec,
    )
    d["metadata"].update(namespace="default", uid="d-uid", generation=1)
    return d


def rs(
    name: str,
    replicas: int,
    available: int | None = None,
    *,
    created: str = "00",
    revision: int | None = None,
) -> Object:
    annotations = {du.REVISION_ANNOTATION: str(revision)} if revision is not None else {}
    return {
        "metadata": {
            "name": name,
            "uid": f"{name}-uid",
            "creationTimestamp": f"2026-01-01T00:00:{created}Z",
            "annotations": annotations,
        },
        "spec": {"replicas": replicas, "template": {}},
        "status": {"replicas": replicas, "availableReplicas": replicas if available is None else available},
    }


@pytest.mark.parametrize(
    ("surge", "unavailable", "desired", "expected"),
    [
        ("25%", "25%", 10, (3, 2)),  # surge rounds up, unavailable down
        ("25%", "25%", 1, (1, 0)),
        (0, "1%", 2, (0, 1)),  # both would be 0: unavailable becomes 1
        ("1%", "25%", 2, (1, 0)),
        ("29%", 0, 100, (29, 0)),  # integer arithmetic, no float rounding surprises
        (2, "50%", 5, (2, 2)),
    ],
)
def test_fenceposts_round_surge_up_and_unavailability_down(
    surge: int | str, unavailable: int | str, desired: int, expected: tuple[int, int]
) -> None:
    assert du.resolve_fenceposts(surge, unavailable, desired) == expected


def test_max_unavailable_is_capped_and_zero_for_recreate() -> None:
    assert du.max_unavailable(deployment(2, 0, 5)) == 2
    assert du.max_unavailable(deployment(0, 1, 1)) == 0
    recreate = deployment_manifest("web", 3, strategy={"type": "Recreate"})
    assert (du.max_surge(recreate), du.max_unavailable(recreate), du.min_available(recreate)) == (0, 0, 0)
    with pytest.raises(ValueError, match="not a percentage"):
        du.scaled_value("10", 4, round_up=True)


def test_the_hash_uses_fnv32a_and_the_safe_alphabet() -> None:
    assert du.fnv32a(b"") == 0x811C9DC5 and du.fnv32a(b"a") == 0xE40C292C  # FNV test vectors
    assert du.safe_encode_string("0123456789") == "456789bcdf"
    template = deployment()["spec"]["template"]
    value = du.compute_hash(template)
    assert value == du.compute_hash({**template})  # stable
    assert set(value) <= set("456789bcdf") and 1 <= len(value) <= 10
    assert du.compute_hash(template, 1) != value != du.compute_hash(template, 0)
    changed = deployment()["spec"]["template"]
    changed["spec"]["containers"][0]["image"] = "nginx:1.28"
    assert du.compute_hash(changed) != value


def test_the_new_replica_set_is_the_oldest_with_the_template_ignoring_the_hash() -> None:
    d = deployment()
    template = d["spec"]["template"]
    labelled = {
        **template,
        "metadata": {"labels": {**template["metadata"]["labels"], "pod-template-hash": "x"}},
    }
    other = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "v2"}]}}
    first, second, old = rs("first", 1, created="05"), rs("second", 1, created="01"), rs("old", 2)
    first["spec"]["template"] = labelled
    second["spec"]["template"] = labelled
    old["spec"]["template"] = other
    assert du.find_new_replica_set(d, [first, second, old]) is second
    required, every = du.find_old_replica_sets(d, [first, second, old, rs("empty", 0)])
    assert [r["metadata"]["name"] for r in required] == ["first", "old"]
    assert [r["metadata"]["name"] for r in every] == ["first", "old", "empty"]


def test_a_new_replica_set_is_named_by_its_hash_sized_and_annotated() -> None:
    d = deployment(4, "25%", "25%")
    d["metadata"]["annotations"] = {"kubernetes.io/change-cause": "v2", du.REVISION_ANNOTATION: "1"}
    old = rs("web-old", 4, revision=1)
    ref = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "d-uid", "controller": True}
    new = du.new_replica_set(d, [old], 2, controller_ref=ref)
    pod_template_hash = du.compute_hash(d["spec"]["template"])
    assert new["metadata"]["name"] == f"web-{pod_template_hash}"
    assert new["spec"]["template"]["metadata"]["labels"]["pod-template-hash"] == pod_template_hash
    assert new["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": pod_template_hash}
    assert new["spec"]["replicas"] == 1  # 4 old + 1 surge = 5
    assert new["metadata"]["annotations"] == {
        "kubernetes.io/change-cause": "v2",
        du.REVISION_ANNOTATION: "2",
        du.DESIRED_REPLICAS_ANNOTATION: "4",
        du.MAX_REPLICAS_ANNOTATION: "5",
    }
    assert "pod-template-hash" not in d["spec"]["template"]["metadata"]["labels"]  # not mutated


def test_a_rolled_back_replica_set_gets_the_next_revision_and_keeps_its_history() -> None:
    d = deployment()
    reused = rs("web-a", 0, revision=1)
    update = du.existing_new_replica_set_update(d, reused, 3)
    assert update is not None
    annotations = update["metadata"]["annotations"]
    assert (annotations[du.REVISION_ANNOTATION], annotations[du.REVISION_HISTORY_ANNOTATION]) == ("3", "1")
    again = du.existing_new_replica_set_update(d, {**update, "metadata": {**update["metadata"]}}, 5)
    assert again is not None and again["metadata"]["annotations"][du.REVISION_HISTORY_ANNOTATION] == "1,3"
    assert du.existing_new_replica_set_update(d, update, 3) is None  # nothing to do
    assert du.existing_new_replica_set_update(d, update, 2) is None  # never lowered
    assert (
        du.max_revision([reused, rs("b", 0, revision=7), rs("c", 0)]),
        du.last_revision([rs("a", 0, revision=2), rs("b", 0, revision=7), rs("c", 0, revision=5)]),
    ) == (7, 5)


def test_the_new_replica_set_grows_within_the_surge() -> None:
    d = deployment(10, "25%", "25%")  # surge 3
    new = rs("new", 0)
    assert du.new_rs_new_replicas(d, [rs("old", 10), new], new) == 3
    new["spec"]["replicas"] = 3
    assert du.new_rs_new_replicas(d, [rs("old", 10), new], new) == 3  # at 13 already
    assert du.new_rs_new_replicas(d, [rs("old", 2), new], new) == 10  # never past replicas
    assert (
        du.new_rs_new_replicas(deployment_manifest("web", 10, strategy={"type": "Recreate"}), [new], new)
        == 10
    )


def sizes(steps: list[du.ScaleStep]) -> list[tuple[str, int]]:
    return [(step.rs["metadata"]["name"], step.replicas) for step in steps]


def test_old_replica_sets_scale_down_within_max_unavailable() -> None:
    d = deployment(10, 3, 2)  # minAvailable 8
    new = rs("new", 3, 0)
    # Unavailable new pods count against the budget: 13 - 8 - 3 = 2 may go.
    assert sizes(du.old_replica_sets_scale_down(d, [rs("old", 10), new], [rs("old", 10)], new)) == [
        ("old", 8)
    ]
    # Unhealthy old pods go first (oldest ReplicaSet first), then healthy ones down to minAvailable.
    old1, old2 = rs("old1", 5, 3, created="01"), rs("old2", 5, 5, created="02")
    new = rs("new", 3, 3)
    steps = du.old_replica_sets_scale_down(d, [old1, old2, new], [old1, old2], new)
    assert sizes(steps) == [("old1", 3), ("old1", 0)]  # 2 unhealthy, then 3 of 11 available
    # Nothing may go while the new pods are not available and the budget is spent.
    assert (
        du.old_replica_sets_scale_down(d, [rs("old", 8), rs("n", 2, 0)], [rs("old", 8)], rs("n", 2, 0)) == []
    )


def test_scale_down_does_not_trust_status_that_counts_pods_already_scaled_away() -> None:
    d = deployment(3, 1, 0)  # minAvailable 3
    old = rs("old", 1, 2)  # scaled 2 -> 1, its status still says 2 available
    new = rs("new", 3, 2)
    # Upstream would count 4 available and take the last old pod: 2 available left, below 3.
    assert du.old_replica_sets_scale_down(d, [old, new], [old], new) == []


def test_a_scaling_event_mid_rollout_is_proportional() -> None:
    # sync_test.go TestScale "proportional scaling: 5 -> 10": new 3 and old 2, sized for 5.
    d = deployment(10, 0, 1)
    old = rs("old", 2, created="01")
    new = rs("new", 3, created="02")
    for r in (old, new):
        r["metadata"]["annotations"] = {du.MAX_REPLICAS_ANNOTATION: "5", du.DESIRED_REPLICAS_ANNOTATION: "5"}
    assert du.is_scaling_event(d, new, [old])
    steps = du.scale_steps(d, new, [old])
    assert sizes(steps) == [("new", 6), ("old", 4)]  # the larger first, each in proportion
    assert all(step.always for step in steps)
    # "proportional scaling: 10 -> 5" the other way round.
    d = deployment(5, 0, 1)
    for r in (old, new):
        r["metadata"]["annotations"] = {
            du.MAX_REPLICAS_ANNOTATION: "10",
            du.DESIRED_REPLICAS_ANNOTATION: "10",
        }
    old["spec"]["replicas"], new["spec"]["replicas"] = 4, 6
    assert dict(sizes(du.scale_steps(d, new, [old]))) == {"new": 3, "old": 2}
    # One active ReplicaSet takes everything.
    assert sizes(du.scale_steps(d, new, [rs("gone", 0)])) == [("new", 5)]


def test_status_sums_the_replica_sets_and_judges_availability() -> None:
    d = deployment(3, 1, 1)
    new, old = rs("new", 2, 1), rs("old", 2, 2)
    new["status"]["readyReplicas"] = 2
    status = du.calculate_status([old, new], new, d, NOW)
    assert {k: v for k, v in status.items() if k != "conditions"} == {
        "observedGeneration": 1,
        "replicas": 4,
        "updatedReplicas": 2,
        "readyReplicas": 2,
        "availableReplicas": 3,
        "unavailableReplicas": 1,
    }
    [available] = status["conditions"]
    assert available == {
        "type": "Available",
        "status": "True",
        "lastUpdateTime": "2026-01-01T00:00:00Z",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
        "reason": "MinimumReplicasAvailable",
        "message": "Deployment has minimum availability.",
    }
    d["status"] = status
    worse = du.calculate_status([rs("new", 3, 1)], rs("new", 3, 1), d, NOW + 60)
    [unavailable] = worse["conditions"]
    assert (unavailable["status"], unavailable["reason"], unavailable["message"]) == (
        "False",
        "MinimumReplicasUnavailable",
        "Deployment does not have minimum availability.",
    )


def test_progressing_complete_progress_and_timeout_with_upstream_messages() -> None:
    d = deployment(2, 1, 0, progressDeadlineSeconds=60)
    new = rs("web-abc", 2, 0)
    new["status"]["replicas"] = 1
    d["status"] = {"conditions": [du.new_condition("Progressing", "True", "NewReplicaSetCreated", "x", NOW)]}
    progressing = du.rollout_status(d, [new], new, NOW + 10)
    cond = du.get_condition(progressing, "Progressing")
    assert cond is not None
    assert (cond["reason"], cond["message"], cond["lastUpdateTime"]) == (
        "ReplicaSetUpdated",
        'ReplicaSet "web-abc" is progressing.',
        "2026-01-01T00:00:10Z",
    )
    assert cond["lastTransitionTime"] == "2026-01-01T00:00:00Z"  # still True: kept
    d["status"] = progressing
    assert du.requeue_stuck_deployment(d, progressing, NOW + 10) == 61.0
    stuck = du.rollout_status(d, [new], new, NOW + 71)
    cond = du.get_condition(stuck, "Progressing")
    assert cond is not None
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "False",
        "ProgressDeadlineExceeded",
        'ReplicaSet "web-abc" has timed out progressing.',
    )
    d["status"] = stuck
    assert rollout_status(d) == ('error: deployment "web" exceeded its progress deadline', True)
    done = rs("web-abc", 2, 2)
    complete = du.rollout_status(d, [done], done, NOW + 80)
    cond = du.get_condition(complete, "Progressing")
    assert cond is not None and (cond["status"], cond["reason"], cond["message"]) == (
        "True",
        "NewReplicaSetAvailable",
        'ReplicaSet "web-abc" has successfully progressed.',
    )
    d["status"] = complete
    assert rollout_status(d) == ('deployment "web" successfully rolled out', True)
    assert du.requeue_stuck_deployment(d, complete, NOW + 80) is None


def test_kubectl_rollout_status_lines_follow_the_status_fields() -> None:
    d = deployment(3)
    d["metadata"]["generation"] = 2
    d["status"] = {"observedGeneration": 1}
    assert rollout_status(d) == ("Waiting for deployment spec update to be observed...", False)
    d["status"] = {"observedGeneration": 2, "replicas": 4, "updatedReplicas": 1}
    assert rollout_status(d)[0].endswith("1 out of 3 new replicas have been updated...")
    d["status"] = {"observedGeneration": 2, "replicas": 4, "updatedReplicas": 3}
    assert rollout_status(d)[0].endswith("1 old replicas are pending termination...")
    d["status"] = {"observedGeneration": 2, "replicas": 3, "updatedReplicas": 3, "availableReplicas": 2}
    assert rollout_status(d)[0].endswith("2 of 3 updated replicas are available...")


def test_pausing_and_resuming_set_unknown_progress() -> None:
    d = deployment(progressDeadlineSeconds=600)
    assert du.paused_condition_status(d, NOW) is None
    d["spec"]["paused"] = True
    paused = du.paused_condition_status(d, NOW)
    assert paused is not None
    assert du.get_condition(paused, "Progressing") == du.new_condition(
        "Progressing", "Unknown", "DeploymentPaused", "Deployment is paused", NOW
    )
    d["status"] = paused
    assert du.paused_condition_status(d, NOW + 1) is None
    d["spec"]["paused"] = False
    resumed = du.paused_condition_status(d, NOW + 2)
    assert resumed is not None
    cond = du.get_condition(resumed, "Progressing")
    assert cond is not None and (cond["reason"], cond["message"]) == (
        "DeploymentResumed",
        "Deployment is resumed",
    )


def test_cleanup_deletes_the_oldest_scaled_down_revisions_only() -> None:
    d = deployment(revisionHistoryLimit=1)
    olds = [
        rs("r1", 0, revision=1),
        rs("r2", 0, revision=2),
        rs("r3", 1, revision=3),
        rs("r4", 0, revision=4),
    ]
    for r in olds:
        r["metadata"]["generation"] = 1
        r["status"]["observedGeneration"] = 1
    # Four old, limit one: three may go, but r3 still has a pod.
    assert [r["metadata"]["name"] for r in du.replica_sets_to_clean_up(d, olds)] == ["r1", "r2"]
    d["spec"]["revisionHistoryLimit"] = du.MAX_INT32
    assert du.replica_sets_to_clean_up(d, olds) == []


def test_recreate_waits_for_every_old_pod_even_terminating_ones() -> None:
    old, new = rs("old", 0), rs("new", 3)
    old["status"]["replicas"] = 0
    terminating = {"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}, "status": {"phase": "Running"}}
    assert du.old_pods_running(new, [old], {"old-uid": [terminating], "new-uid": []})
    assert not du.old_pods_running(new, [old], {"old-uid": [{"status": {"phase": "Succeeded"}}]})
    assert not du.old_pods_running(new, [old], {"new-uid": [terminating]})
