"""The shared workload-controller helpers: owner references and claims, pods from templates,
expectations on a ManualClock, slow-start batches and upstream's order for deleting pods."""

from __future__ import annotations

import random

from controlplane.api.meta import Object
from controlplane.api.selectors import label_selector_from_object
from controlplane.clock import ManualClock
from controlplane.components.controllers import podcontrol as pc

NOW = 1_767_225_600.0 + 3600  # 2026-01-01T01:00:00Z

OWNER: Object = {"metadata": {"name": "web", "namespace": "default", "uid": "rs-uid"}}


def pod(
    name: str,
    *,
    node: str = "n1",
    phase: str = "Running",
    ready_since: str | None = "2026-01-01T00:00:00Z",
    created: str = "2026-01-01T00:00:00Z",
    restarts: int = 0,
    cost: int | None = None,
    owner: str | None = "rs-uid",
    labels: dict[str, str] | None = None,
) -> Object:
    conditions = (
        [{"type": "Ready", "status": "True", "lastTransitionTime": ready_since}] if ready_since else []
    )
    annotations = {pc.POD_DELETION_COST_ANNOTATION: str(cost)} if cost is not None else {}
    refs = (
        [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": owner, "controller": True}]
        if owner
        else []
    )
    return {
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"uid-{name}",
            "creationTimestamp": created,
            "labels": labels if labels is not None else {"app": "web"},
            "annotations": annotations,
            "ownerReferences": refs,
        },
        "spec": {"nodeName": node},
        "status": {
            "phase": phase,
            "conditions": conditions,
            "containerStatuses": [{"restartCount": restarts}],
        },
    }


def names(pods: list[Object]) -> list[str]:
    return [p["metadata"]["name"] for p in pods]


def test_pods_are_deleted_in_upstreams_order() -> None:
    candidates = [
        pod("ready-old"),
        pod("ready-recent", ready_since="2026-01-01T00:59:00Z"),
        pod("restarted", restarts=3),
        pod("not-ready", ready_since=None),
        pod("pending", phase="Pending", ready_since=None),
        pod("unscheduled", node="", phase="Pending", ready_since=None),
        pod("cheap", cost=-10),
    ]
    order = names(pc.rank_pods_for_deletion(candidates, candidates, NOW))
    assert order == ["unscheduled", "pending", "not-ready", "cheap", "ready-recent", "restarted", "ready-old"]
    # A pod on a node crowded with pods of the same Deployment goes before one alone on its node.
    crowded, alone = pod("crowded", node="n1"), pod("alone", node="n2")
    related = [crowded, alone, pod("sibling", node="n1", owner="other-rs")]
    assert names(pc.pods_to_delete([alone, crowded], related, 1, NOW)) == ["crowded"]
    assert names(pc.pods_to_delete([alone, crowded], related, 2, NOW)) == ["alone", "crowded"]  # all: no sort


def test_claims_adopt_matching_orphans_and_release_strays() -> None:
    selector = label_selector_from_object({"matchLabels": {"app": "web"}})
    mine, stray = pod("mine"), pod("stray", labels={"app": "other"})
    orphan, theirs = pod("orphan", owner=None), pod("theirs", owner="someone-else")
    dying = pod("dying", owner=None)
    dying["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    elsewhere = pod("elsewhere", owner=None)
    elsewhere["metadata"]["namespace"] = "other"
    plan = pc.plan_claims(OWNER, selector, [mine, stray, orphan, theirs, dying, elsewhere])
    assert (names(plan.claimed), names(plan.adopt), names(plan.release)) == (["mine"], ["orphan"], ["stray"])
    deleting = {"metadata": {**OWNER["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"}}
    plan = pc.plan_claims(deleting, selector, [mine, stray, orphan])
    assert (names(plan.claimed), plan.adopt, plan.release) == (["mine"], [], [])
    assert pc.adopt_patch(OWNER, orphan, api_version="apps/v1", kind="ReplicaSet") == {
        "metadata": {
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": "web",
                    "uid": "rs-uid",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "uid": "uid-orphan",
        }
    }
    assert pc.release_patch(OWNER, stray) == {
        "metadata": {"ownerReferences": [{"$patch": "delete", "uid": "rs-uid"}], "uid": "uid-stray"}
    }


def test_a_pod_from_a_template_carries_the_template_and_the_controller() -> None:
    template: Object = {
        "metadata": {"labels": {"app": "web"}, "annotations": {"a": "b"}, "finalizers": ["x/y"]},
        "spec": {"containers": [{"name": "web", "image": "nginx"}]},
    }
    ref = pc.new_controller_ref(OWNER, api_version="apps/v1", kind="ReplicaSet")
    made = pc.pod_from_template(template, OWNER, ref)
    assert made["metadata"] == {
        "generateName": "web-",
        "labels": {"app": "web"},
        "annotations": {"a": "b"},
        "finalizers": ["x/y"],
        "ownerReferences": [ref],
        "namespace": "default",
    }
    made["spec"]["containers"][0]["image"] = "changed"
    assert template["spec"]["containers"][0]["image"] == "nginx"  # a copy
    assert pc.pods_prefix("x" * 253) == "x" * 253


def test_availability_needs_min_ready_seconds_of_readiness() -> None:
    ready = pod("p", ready_since="2026-01-01T00:59:50Z")
    assert pc.is_pod_available(ready, 0, NOW)
    assert pc.is_pod_available(ready, 5, NOW)
    assert not pc.is_pod_available(ready, 10, NOW)
    assert not pc.is_pod_available(pod("q", ready_since=None), 0, NOW)
    terminating = pod("t")
    terminating["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert not pc.is_pod_active(terminating) and pc.is_pod_terminating(terminating)
    assert not pc.is_pod_active(pod("done", phase="Succeeded"))


async def test_expectations_wait_for_observations_or_five_minutes() -> None:
    clock = ManualClock()
    exp = pc.ControllerExpectations(clock)
    assert exp.satisfied("default/web")  # nothing expected
    exp.expect_creations("default/web", 2)
    exp.creation_observed("default/web")
    assert not exp.satisfied("default/web")
    exp.creation_observed("default/web")
    assert exp.satisfied("default/web")
    exp.expect_deletions("default/web", ["default/a", "default/b"])
    exp.deletion_observed("default/web", "default/a")
    exp.deletion_observed("default/web", "default/a")  # twice is once
    assert exp.get("default/web") == (0, frozenset({"default/b"}))
    await clock.advance(300)
    assert not exp.satisfied("default/web")
    await clock.advance(1)
    assert exp.satisfied("default/web")
    exp.delete("default/web")
    assert exp.get("default/web") is None


async def test_slow_start_doubles_batches_and_stops_at_the_first_failing_one() -> None:
    calls = 0

    async def create() -> None:
        nonlocal calls
        calls += 1
        if calls > 4:
            raise RuntimeError(f"refused #{calls}")

    successes, error = await pc.slow_start_batch(10, 1, create)
    # Batches 1, 2, 4: the third batch (calls 4-7) has three failures; nothing after it runs.
    assert (calls, successes) == (7, 4)
    assert isinstance(error, RuntimeError)

    calls = 0
    successes, error = await pc.slow_start_batch(3, 1, lambda: _noop())
    assert (successes, error) == (3, None)


async def _noop() -> None:
    return None


def test_deletion_order_does_not_depend_on_input_order() -> None:
    rng = random.Random(4)
    candidates = [
        pod(f"p{i}", created=f"2026-01-01T00:{i:02d}:00Z", ready_since=f"2026-01-01T00:{i:02d}:30Z")
        for i in range(8)
    ]
    expected = names(pc.rank_pods_for_deletion(candidates, candidates, NOW))
    for _ in range(5):
        shuffled = candidates[:]
        rng.shuffle(shuffled)
        assert names(pc.rank_pods_for_deletion(shuffled, shuffled, NOW)) == expected
