"""The DaemonSet controller against an in-process API server with three nodes and no scheduler.

Without a scheduler, a daemon pod stays pinned to its node by its node affinity only (``spec.nodeName``
is never set): the controller reads the node back from that term, which is what it does for every
pod until the scheduler binds it. ``FakeKubelet`` makes pods ready and finishes deletions.
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
from controlplane.components.controllers import daemonset
from controlplane.components.controllers.daemonsetutil import (
    node_should_run_daemon_pod,
    plan_rolling_update,
    replace_node_name_affinity,
    revisions_to_clean_up,
    target_node_name,
)
from controlplane.components.controllers.podcontrol import is_pod_ready
from tests.controlplane.components.controllers.workloads import FakeKubelet, PodObserver, owned_by, until
from tests.support.inprocess import InProcessCluster, in_process_cluster, wait_for

NODES = ("node-1", "node-2", "node-3")
HASH = "controller-revision-hash"


def node_manifest(name: str, *, taints: list[Object] | None = None, **labels: str) -> Object:
    body: Object = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "spec": {},
    }
    if taints:
        body["spec"]["taints"] = taints
    return body


def ds_manifest(name: str, image: str = "fluentd:1", **spec: Any) -> Object:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "agent", "image": image}]},
            },
            **spec,
        },
    }


@asynccontextmanager
async def daemonset_controller(cluster: InProcessCluster) -> AsyncIterator[Manager]:
    manager = Manager(cluster.client, name="kube-controller-manager", rng=random.Random(7))
    daemonset.add_to_manager(manager)
    async with manager:
        yield manager


class Resources:
    def __init__(self, cluster: InProcessCluster) -> None:
        self.daemonsets = cluster.resource("apps", "v1", "daemonsets", "default")
        self.revisions = cluster.resource("apps", "v1", "controllerrevisions", "default")
        self.pods = cluster.resource("", "v1", "pods", "default")
        self.nodes = cluster.resource("", "v1", "nodes")
        self.events = cluster.resource("", "v1", "events", "default")

    async def add_nodes(self, *names: str) -> None:
        for name in names:
            await self.nodes.create(node_manifest(name))


def live(pods: list[Object]) -> list[Object]:
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")]


def settled(ds: Object, desired: int) -> bool:
    """The status of the current generation, with ``desired`` nodes all running an available, updated pod."""
    status = ds.get("status") or {}
    return (
        status.get("observedGeneration") == ds["metadata"]["generation"]
        and status.get("desiredNumberScheduled") == desired
        and status.get("currentNumberScheduled") == desired
        and status.get("updatedNumberScheduled", 0) == desired
        and status.get("numberAvailable", 0) == desired
    )


async def wait_settled(res: Resources, name: str, desired: int) -> Object:
    found = await wait_for(
        res.daemonsets,
        lambda items: any(d["metadata"]["name"] == name and settled(d, desired) for d in items),
    )
    return next(d for d in found if d["metadata"]["name"] == name)


async def test_one_pod_per_node_pinned_by_affinity_with_daemon_tolerations(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster, daemonset_controller(cluster):
        res = Resources(cluster)
        await res.add_nodes(*NODES)
        async with FakeKubelet(res.pods, SYSTEM_CLOCK).running():
            created = await res.daemonsets.create(ds_manifest("agent"))
            ds = await wait_settled(res, "agent", 3)
        assert created["metadata"]["annotations"]["deprecated.daemonset.template.generation"] == "1"
        assert created["spec"]["updateStrategy"] == {
            "type": "RollingUpdate",
            "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0},
        }
        assert ds["status"]["numberReady"] == 3 and ds["status"]["numberMisscheduled"] == 0
        assert "numberUnavailable" not in ds["status"]
        [revision] = (await res.revisions.list())["items"]
        hash_ = revision["metadata"]["labels"][HASH]
        assert revision["metadata"]["name"] == f"agent-{hash_}" and revision["revision"] == 1
        assert owned_by(revision, ds)
        template = revision["data"]["spec"]["template"]
        assert list(template) == ["$patch", "metadata", "spec"], "sorted keys, as Go's map marshalling"
        assert template["$patch"] == "replace" and template["metadata"] == {"labels": {"app": "agent"}}
        pods = live((await res.pods.list())["items"])
        assert sorted(target_node_name(p) or "" for p in pods) == list(NODES)
        for pod in pods:
            assert owned_by(pod, ds) and pod["metadata"]["generateName"] == "agent-"
            assert pod["metadata"]["labels"] == {"app": "agent", HASH: hash_, "pod-template-generation": "1"}
            terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            assert terms["nodeSelectorTerms"][0]["matchFields"][0]["key"] == "metadata.name"
            keys = {(t["key"], t["effect"]) for t in pod["spec"]["tolerations"]}
            assert {
                ("node.kubernetes.io/not-ready", "NoExecute"),
                ("node.kubernetes.io/unreachable", "NoExecute"),
                ("node.kubernetes.io/disk-pressure", "NoSchedule"),
                ("node.kubernetes.io/memory-pressure", "NoSchedule"),
                ("node.kubernetes.io/pid-pressure", "NoSchedule"),
                ("node.kubernetes.io/unschedulable", "NoSchedule"),
            } <= keys
        names = {f"Created pod: {p['metadata']['name']}" for p in pods}
        found = await wait_for(res.events, lambda evs: names <= {e["message"] for e in evs})
        assert {e["source"]["component"] for e in found} == {"daemonset-controller"}


async def test_a_node_added_gets_a_pod_and_a_node_removed_loses_it(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster, daemonset_controller(cluster):
        res = Resources(cluster)
        await res.add_nodes("node-1", "node-2")
        async with FakeKubelet(res.pods, SYSTEM_CLOCK).running():
            await res.daemonsets.create(ds_manifest("agent"))
            await wait_settled(res, "agent", 2)
            await res.add_nodes("node-3")
            await wait_settled(res, "agent", 3)
            assert sorted(target_node_name(p) or "" for p in live((await res.pods.list())["items"])) == list(
                NODES
            )
            await res.nodes.delete("node-2")
            # Never scheduled, its pod has nothing else to delete it: the controller does.
            await wait_for(
                res.pods,
                lambda items: sorted(target_node_name(p) or "" for p in items) == ["node-1", "node-3"],
            )
            await wait_settled(res, "agent", 2)


async def test_taints_without_a_toleration_and_node_selectors_keep_pods_off(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster, daemonset_controller(cluster):
        res = Resources(cluster)
        await res.add_nodes("node-1", "node-2")
        taint = {"key": "dedicated", "value": "db", "effect": "NoSchedule"}
        await res.nodes.create(node_manifest("node-3", taints=[taint]))
        async with FakeKubelet(res.pods, SYSTEM_CLOCK).running():
            await res.daemonsets.create(ds_manifest("agent"))
            await wait_settled(res, "agent", 2)
            pods = live((await res.pods.list())["items"])
            assert sorted(target_node_name(p) or "" for p in pods) == ["node-1", "node-2"]
            # Tolerating the taint brings the third node in (a new template: a rolling update too).
            toleration = {"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoSchedule"}
            await res.daemonsets.patch(
                "agent",
                {"spec": {"template": {"spec": {"tolerations": [toleration]}}}},
                patch_type=PatchType.MERGE,
            )
            await wait_settled(res, "agent", 3)
            # A nodeSelector takes nodes out again: their pods are deleted.
            await res.nodes.patch(
                "node-1", {"metadata": {"labels": {"disk": "ssd"}}}, patch_type=PatchType.MERGE
            )
            await res.daemonsets.patch(
                "agent",
                {"spec": {"template": {"spec": {"nodeSelector": {"disk": "ssd"}}}}},
                patch_type=PatchType.MERGE,
            )
            await wait_settled(res, "agent", 1)
            await wait_for(res.pods, lambda items: [target_node_name(p) for p in items] == ["node-1"])


def unavailable_nodes(pods: list[Object]) -> int:
    """Nodes without a ready pod that is not being deleted."""
    covered = {
        target_node_name(p) for p in pods if is_pod_ready(p) and not p["metadata"].get("deletionTimestamp")
    }
    return len(set(NODES) - covered)


async def test_a_rolling_update_replaces_at_most_max_unavailable_at_a_time(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster, daemonset_controller(cluster):
        res = Resources(cluster)
        await res.add_nodes(*NODES)
        async with FakeKubelet(res.pods, SYSTEM_CLOCK).running():
            await res.daemonsets.create(ds_manifest("agent", revisionHistoryLimit=1))
            await wait_settled(res, "agent", 3)
            observer = PodObserver(res.pods, unavailable_nodes)
            async with observer.watching():
                updated = await res.daemonsets.patch(
                    "agent",
                    {
                        "spec": {
                            "template": {"spec": {"containers": [{"name": "agent", "image": "fluentd:2"}]}}
                        }
                    },
                    patch_type=PatchType.STRATEGIC_MERGE,
                )
                assert updated["metadata"]["annotations"]["deprecated.daemonset.template.generation"] == "2"
                ds = await wait_settled(res, "agent", 3)
            assert max(observer.observations) == 1, "one node at a time (maxUnavailable 1)"
            assert 1 in observer.observations
            pods = live((await res.pods.list())["items"])
            assert len(pods) == 3
            assert {p["spec"]["containers"][0]["image"] for p in pods} == {"fluentd:2"}
            assert {p["metadata"]["labels"]["pod-template-generation"] for p in pods} == {"2"}
            revisions = (await res.revisions.list())["items"]
            assert sorted(r["revision"] for r in revisions) == [1, 2]
            # A third template: the oldest unused revision goes (revisionHistoryLimit 1).
            await res.daemonsets.patch(
                "agent",
                {"spec": {"template": {"spec": {"containers": [{"name": "agent", "image": "fluentd:3"}]}}}},
                patch_type=PatchType.STRATEGIC_MERGE,
            )
            await wait_settled(res, "agent", 3)
            await wait_for(res.revisions, lambda items: sorted(r["revision"] for r in items) == [2, 3])
            assert ds["status"]["observedGeneration"] == 2


async def test_max_unavailable_two_replaces_two_nodes_at_once(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster, daemonset_controller(cluster):
        res = Resources(cluster)
        await res.add_nodes(*NODES)
        async with FakeKubelet(res.pods, SYSTEM_CLOCK).running():
            strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2}}
            await res.daemonsets.create(ds_manifest("agent", updateStrategy=strategy))
            await wait_settled(res, "agent", 3)
            observer = PodObserver(res.pods, unavailable_nodes)
            async with observer.watching():
                await res.daemonsets.patch(
                    "agent",
                    {
                        "spec": {
                            "template": {"spec": {"containers": [{"name": "agent", "image": "fluentd:2"}]}}
                        }
                    },
                    patch_type=PatchType.STRATEGIC_MERGE,
                )
                await wait_settled(res, "agent", 3)
        assert max(observer.observations) == 2


async def test_on_delete_replaces_only_the_pods_someone_deletes(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster, daemonset_controller(cluster):
        res = Resources(cluster)
        await res.add_nodes(*NODES)
        async with FakeKubelet(res.pods, SYSTEM_CLOCK).running():
            await res.daemonsets.create(ds_manifest("agent", updateStrategy={"type": "OnDelete"}))
            await wait_settled(res, "agent", 3)
            before = {p["metadata"]["name"] for p in (await res.pods.list())["items"]}
            await res.daemonsets.patch(
                "agent",
                {"spec": {"template": {"spec": {"containers": [{"name": "agent", "image": "fluentd:2"}]}}}},
                patch_type=PatchType.STRATEGIC_MERGE,
            )
            [ds] = await wait_for(
                res.daemonsets, lambda items: items[0]["status"].get("observedGeneration") == 2
            )
            assert "updatedNumberScheduled" not in ds["status"]
            assert {p["metadata"]["name"] for p in (await res.pods.list())["items"]} == before
            victim = sorted(before)[0]
            await res.pods.delete(victim)
            [ds] = await wait_for(
                res.daemonsets,
                lambda items: (
                    items[0]["status"].get("updatedNumberScheduled") == 1
                    and items[0]["status"].get("numberAvailable") == 3
                ),
            )
            pods = live((await res.pods.list())["items"])
            assert {p["metadata"]["name"] for p in pods} - before != set()
            assert sorted(p["spec"]["containers"][0]["image"] for p in pods) == [
                "fluentd:1",
                "fluentd:1",
                "fluentd:2",
            ]


async def test_a_rollback_renumbers_the_old_revision(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster, daemonset_controller(cluster):
        res = Resources(cluster)
        await res.add_nodes(*NODES)
        async with FakeKubelet(res.pods, SYSTEM_CLOCK).running():
            await res.daemonsets.create(ds_manifest("agent"))
            await wait_settled(res, "agent", 3)
            [first] = (await res.revisions.list())["items"]
            image = {
                "spec": {"template": {"spec": {"containers": [{"name": "agent", "image": "fluentd:2"}]}}}
            }
            await res.daemonsets.patch("agent", image, patch_type=PatchType.STRATEGIC_MERGE)
            await wait_settled(res, "agent", 3)
            # kubectl rollout undo: the old revision's data, as a strategic merge patch.
            await res.daemonsets.patch("agent", first["data"], patch_type=PatchType.STRATEGIC_MERGE)
            await wait_settled(res, "agent", 3)
            items = await until(
                [res.revisions],
                lambda lists: any(r["revision"] == 3 for r in lists[0]),
            )
            renumbered = next(r for r in items[0] if r["revision"] == 3)
            assert renumbered["metadata"]["name"] == first["metadata"]["name"]
            pods = live((await res.pods.list())["items"])
            assert {p["metadata"]["labels"][HASH] for p in pods} == {first["metadata"]["labels"][HASH]}


# -- pure helpers ------------------------------------------------------------------------------------


def test_node_predicates_selectors_affinity_and_taints() -> None:
    ds = ds_manifest("agent")
    ds["metadata"]["namespace"] = "default"
    plain = node_manifest("n1", zone="a")
    assert node_should_run_daemon_pod(plain, ds) == (True, True)
    no_schedule = node_manifest("n1", taints=[{"key": "k", "effect": "NoSchedule"}])
    assert node_should_run_daemon_pod(no_schedule, ds) == (False, True), "a running pod may stay"
    no_execute = node_manifest("n1", taints=[{"key": "k", "effect": "NoExecute"}])
    assert node_should_run_daemon_pod(no_execute, ds) == (False, False)
    # The daemon tolerations: a cordoned or not-ready node keeps its daemons.
    cordoned = node_manifest(
        "n1",
        taints=[
            {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
            {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"},
        ],
    )
    assert node_should_run_daemon_pod(cordoned, ds) == (True, True)
    ds["spec"]["template"]["spec"]["nodeSelector"] = {"zone": "b"}
    assert node_should_run_daemon_pod(plain, ds) == (False, False)
    ds["spec"]["template"]["spec"]["nodeSelector"] = {"zone": "a"}
    ds["spec"]["template"]["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}
                ]
            }
        }
    }
    assert node_should_run_daemon_pod(plain, ds) == (False, False)


def test_the_node_affinity_term_replaces_required_terms_and_is_read_back() -> None:
    affinity = replace_node_name_affinity(
        {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
                    ]
                },
                "preferredDuringSchedulingIgnoredDuringExecution": [],
            }
        },
        "node-2",
    )
    required = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert required == {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-2"]}]}
        ]
    }
    assert "preferredDuringSchedulingIgnoredDuringExecution" in affinity["nodeAffinity"]
    assert target_node_name({"spec": {"affinity": affinity}}) == "node-2"
    assert target_node_name({"spec": {"nodeName": "node-3", "affinity": affinity}}) == "node-3"
    assert target_node_name({"spec": {}}) is None


def _pod(name: str, hash_: str, *, ready: bool) -> Object:
    conditions = [{"type": "Ready", "status": "True" if ready else "False"}]
    return {
        "metadata": {"name": name, "labels": {HASH: hash_}},
        "spec": {},
        "status": {"phase": "Running", "conditions": conditions},
    }


def test_the_rolling_update_plan_deletes_unavailable_old_pods_first_within_the_budget() -> None:
    ds = ds_manifest("agent")
    node_to_pods = {
        "a": [_pod("a-old", "old", ready=True)],
        "b": [_pod("b-old", "old", ready=False)],  # unavailable: replaced whatever the budget
        "c": [_pod("c-old", "old", ready=True)],
        "d": [_pod("d-new", "new", ready=True)],
    }
    plan = plan_rolling_update(ds, node_to_pods, "new", 0, 1, 0.0, lambda _: True)
    assert [p["metadata"]["name"] for p in plan.delete] == ["b-old", "a-old"]
    # A node still waiting for its new pod uses up the budget.
    node_to_pods["d"] = [_pod("d-new", "new", ready=False)]
    plan = plan_rolling_update(ds, node_to_pods, "new", 0, 1, 0.0, lambda _: True)
    assert [p["metadata"]["name"] for p in plan.delete] == ["b-old"]
    # With surge: new pods beside old ones, up to maxSurge nodes; an available new pod retires the old.
    surge = {
        "a": [_pod("a-old", "old", ready=True)],
        "b": [_pod("b-old", "old", ready=True)],
        "c": [_pod("c-old", "old", ready=True), _pod("c-new", "new", ready=True)],
    }
    plan = plan_rolling_update(ds, surge, "new", 1, 0, 0.0, lambda _: True)
    assert plan.create_on == ["a"] and [p["metadata"]["name"] for p in plan.delete] == ["c-old"]


def test_the_history_clean_up_keeps_revisions_in_use() -> None:
    ds = ds_manifest("agent", revisionHistoryLimit=0)
    old = [
        {"metadata": {"name": "r1", "labels": {HASH: "h1"}}, "revision": 1},
        {"metadata": {"name": "r2", "labels": {HASH: "h2"}}, "revision": 2},
    ]
    doomed = revisions_to_clean_up(ds, old, [_pod("p", "h1", ready=True)])
    assert [r["metadata"]["name"] for r in doomed] == ["r2"]
