"""The EndpointSlice controller: endpoints and the slicing plan (pure), the tracker of its own writes,
then slices following pods and the Service's selector against an in-process API server.
"""

from __future__ import annotations

from pathlib import Path

from controlplane.api.meta import Object, format_time
from controlplane.client.manager import Manager
from controlplane.client.rest import PatchType
from controlplane.components.controllers import endpointslice
from controlplane.components.controllers.endpointslice import (
    EndpointSliceTracker,
    desired_endpoints,
    plan_slices,
    pod_to_endpoint,
    slice_to_service,
)
from tests.controlplane.components.controllers.test_endpoints import create_pod, pod, service
from tests.support.inprocess import in_process_cluster, wait_for

T0 = 1_790_000_000.0
SVC = {
    **service(selector={"app": "web"}),
    "metadata": {"name": "web", "namespace": "default", "uid": "svc-uid", "labels": {"tier": "front"}},
}


def many_pods(count: int, start: int = 0) -> list[Object]:
    return [pod(f"p{i}", f"10.1.{i // 250}.{i % 250 + 1}") for i in range(start, start + count)]


def apply(plan: endpointslice.SlicePlan, existing: list[Object]) -> list[Object]:
    """What the slices would be after the plan (names for the created ones)."""
    deleted = {s["metadata"]["name"] for s in plan.delete}
    updated = {s["metadata"]["name"]: s for s in plan.update}
    result = [updated.get(s["metadata"]["name"], s) for s in existing if s["metadata"]["name"] not in deleted]
    for i, created in enumerate(plan.create):
        result.append({**created, "metadata": {**created["metadata"], "name": f"web-new{i}"}})
    return result


# -- pure ----------------------------------------------------------------------------------------


def test_an_endpoint_carries_conditions_node_zone_and_target() -> None:
    node = {"metadata": {"name": "n1", "labels": {"topology.kubernetes.io/zone": "eu-1a"}}}
    ready = pod_to_endpoint(pod("a", "10.0.0.1"), SVC, node)
    assert ready == {
        "addresses": ["10.0.0.1"],
        "conditions": {"ready": True, "serving": True, "terminating": False},
        "nodeName": "n1",
        "zone": "eu-1a",
        "targetRef": {"kind": "Pod", "namespace": "default", "name": "a", "uid": "uid-a"},
    }
    leaving = pod_to_endpoint(pod("a", "10.0.0.1", deletionTimestamp=format_time(T0)), SVC, None)
    # Terminating: still serving, never "ready".
    assert leaving["conditions"] == {"ready": False, "serving": True, "terminating": True}
    assert pod_to_endpoint(pod("a", "10.0.0.1", ready=False), SVC, None)["conditions"]["serving"] is False


def test_endpoints_are_cut_into_slices_of_at_most_the_maximum() -> None:
    desired = desired_endpoints(SVC, many_pods(250), {})
    plan = plan_slices(SVC, desired, [], max_endpoints_per_slice=100)
    assert [len(s["endpoints"]) for s in plan.create] == [100, 100, 50]
    assert not plan.update and not plan.delete
    first = plan.create[0]
    assert first["metadata"]["generateName"] == "web-"
    assert first["metadata"]["labels"] == {
        "tier": "front",
        "kubernetes.io/service-name": "web",
        "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
    }
    assert first["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "name": "web",
            "uid": "svc-uid",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert first["addressType"] == "IPv4"
    assert first["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]


def test_a_change_rewrites_only_the_slice_holding_it_and_new_endpoints_fill_room_first() -> None:
    existing = apply(plan_slices(SVC, desired_endpoints(SVC, many_pods(150), {}), []), [])
    pods = many_pods(150)
    pods[0]["status"]["conditions"][0]["status"] = "False"
    plan = plan_slices(SVC, desired_endpoints(SVC, pods, {}), existing)
    assert not plan.create and not plan.delete
    assert len(plan.update) == 1
    assert plan.update[0]["endpoints"][0]["conditions"]["ready"] is False
    # 10 more pods: they go into the slice with room (50 of 100), no new slice.
    plan = plan_slices(SVC, desired_endpoints(SVC, many_pods(160), {}), existing)
    assert not plan.create and [len(s["endpoints"]) for s in plan.update] == [60]
    # Nothing changed: nothing to do.
    assert not plan_slices(SVC, desired_endpoints(SVC, many_pods(150), {}), existing)


def test_a_service_without_endpoints_keeps_one_placeholder_slice() -> None:
    existing = apply(plan_slices(SVC, desired_endpoints(SVC, many_pods(3), {}), []), [])
    plan = plan_slices(SVC, {}, existing)
    assert [s["metadata"]["name"] for s in plan.delete] == ["web-new0"]
    assert len(plan.create) == 1 and plan.create[0]["endpoints"] == [] and plan.create[0]["ports"] == []
    placeholder_only = apply(plan, existing)
    assert not plan_slices(SVC, {}, placeholder_only)  # and keeps it


def test_a_new_port_set_replaces_the_old_slices() -> None:
    existing = apply(plan_slices(SVC, desired_endpoints(SVC, many_pods(3), {}), []), [])
    moved = many_pods(3)
    for p in moved:
        p["spec"]["containers"][0]["ports"][0]["containerPort"] = 9090
    plan = plan_slices(SVC, desired_endpoints(SVC, moved, {}), existing)
    assert len(plan.delete) == 1 and len(plan.create) == 1
    assert plan.create[0]["ports"][0]["port"] == 9090


def test_the_tracker_knows_when_the_cache_is_behind_our_writes() -> None:
    tracker = EndpointSliceTracker()
    tracker.wrote("default/web", {"metadata": {"name": "web-abc", "resourceVersion": "10"}})
    assert tracker.stale("default/web", [])
    assert tracker.stale("default/web", [{"metadata": {"name": "web-abc", "resourceVersion": "9"}}])
    assert not tracker.stale("default/web", [{"metadata": {"name": "web-abc", "resourceVersion": "10"}}])
    tracker.deleted("default/web", "web-abc")
    assert tracker.stale("default/web", [{"metadata": {"name": "web-abc", "resourceVersion": "10"}}])
    assert not tracker.stale("default/web", [])


def test_only_managed_slices_reconcile_their_service() -> None:
    labels = {
        "kubernetes.io/service-name": "web",
        "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
    }
    managed = {"metadata": {"name": "web-x", "namespace": "default", "labels": labels}}
    assert [r.key for r in slice_to_service(managed)] == ["default/web"]
    mine = {
        "metadata": {"name": "x", "namespace": "default", "labels": {"kubernetes.io/service-name": "web"}}
    }
    assert slice_to_service(mine) == []


# -- the controller ----------------------------------------------------------------------------


def endpoints_of(slices: list[Object], service_name: str = "web") -> dict[str, dict[str, bool]]:
    return {
        e["addresses"][0]: e["conditions"]
        for s in slices
        if s["metadata"]["labels"].get("kubernetes.io/service-name") == service_name
        for e in s.get("endpoints") or []
    }


def controllers(slices: list[Object]) -> list[Object]:
    """The slices the endpointslice controller manages (not the API server's ``kubernetes`` one)."""
    return [s for s in slices if s["metadata"]["labels"].get("endpointslice.kubernetes.io/managed-by")]


async def test_slices_follow_pods_readiness_termination_and_the_selector(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster:
        services = cluster.resource("", "v1", "services", "default")
        pods = cluster.resource("", "v1", "pods", "default")
        slices = cluster.resource("discovery.k8s.io", "v1", "endpointslices", "default")
        await create_pod(pods, pod("web-a", "10.244.1.5"))
        await create_pod(pods, pod("web-b", "10.244.2.7", ready=False, node="n2"))
        await create_pod(pods, pod("api-a", "10.244.1.9", labels={"app": "api"}))
        await services.create(service("manual"))
        svc = await services.create(service(selector={"app": "web"}))

        manager = Manager(cluster.client)
        endpointslice.add_to_manager(manager)
        async with manager:
            ready_b = {"ready": False, "serving": False, "terminating": False}
            items = await wait_for(
                slices,
                lambda s: (
                    endpoints_of(s)
                    == {
                        "10.244.1.5": {"ready": True, "serving": True, "terminating": False},
                        "10.244.2.7": ready_b,
                    }
                ),
            )
            # The API server's own slice for the selectorless ``kubernetes`` Service is left alone.
            apiserver = [s for s in items if s["metadata"]["name"] == "kubernetes"]
            assert [s["metadata"]["labels"] for s in apiserver] == [
                {"kubernetes.io/service-name": "kubernetes"}
            ]
            items = [s for s in items if s not in apiserver]
            assert len(items) == 1  # one slice; none for the selectorless Services
            web = items[0]
            assert web["metadata"]["name"].startswith("web-")
            assert web["metadata"]["ownerReferences"][0]["uid"] == svc["metadata"]["uid"]
            assert (
                web["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"]
                == "endpointslice-controller.k8s.io"
            )
            assert web["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
            b = next(e for e in web["endpoints"] if e["addresses"] == ["10.244.2.7"])
            assert b["nodeName"] == "n2" and b["targetRef"]["name"] == "web-b"

            # web-b becomes ready: the same slice is updated.
            pb = await pods.get("web-b")
            pb["status"]["conditions"][0]["status"] = "True"
            await pods.update_status(pb)
            items = await wait_for(
                slices, lambda s: endpoints_of(s).get("10.244.2.7", {}).get("ready") is True
            )
            assert [s["metadata"]["name"] for s in controllers(items)] == [web["metadata"]["name"]]

            # web-a is deleted (gracefully): it stays, terminating, until it is gone.
            await pods.delete("web-a")
            await wait_for(
                slices,
                lambda s: (
                    endpoints_of(s).get("10.244.1.5")
                    == {"ready": False, "serving": True, "terminating": True}
                ),
            )

            # The selector changes: the api pod replaces the web pods.
            await services.patch("web", {"spec": {"selector": {"app": "api"}}}, patch_type=PatchType.MERGE)
            items = await wait_for(slices, lambda s: set(endpoints_of(s)) == {"10.244.1.9"})
            assert len(controllers(items)) == 1
