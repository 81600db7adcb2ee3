"""The namespace controller: its pure parts (conditions, estimates, the finalize body), then namespaces
deleted end to end against an in-process API server whose namespaces terminate as upstream's do.

The controller looks again after ``estimate/2 + 1`` seconds while content remains (30 s grace periods
make 16 s); its manager runs on a clock 200 times faster than the wall, so that is 0.08 s here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from controlplane.api.meta import Object
from controlplane.client.errors import NotFound
from controlplane.clock import ScaledClock
from controlplane.components.controllers import namespace
from controlplane.components.controllers.discovery import APIResource
from controlplane.components.controllers.namespace import (
    CONDITION_TYPES,
    ConditionUpdater,
    ContentTotals,
    estimate_graceful_termination,
    finalize_body,
    finalized,
    requeue_after,
)
from tests.controlplane.components.controllers.test_garbagecollector import (
    PodTerminator,
    configmap,
    controller_manager,
    pod,
)
from tests.support.inprocess import condition, in_process_cluster, wait_for

NOW = "2026-11-30T10:00:00Z"
PODS = APIResource("", "v1", "pods", "Pod", True, frozenset({"list", "delete"}))


def cond(obj: Object, type: str) -> Object:
    """The condition of ``type``, which must be there."""
    found = condition(obj, type)
    assert found is not None, f"no {type} condition"
    return found


DEPLOYMENTS = APIResource("apps", "v1", "deployments", "Deployment", True, frozenset({"list", "delete"}))


# -- pure parts --------------------------------------------------------------------------------------


def test_a_clean_pass_sets_every_condition_to_its_ok_variant_once() -> None:
    ns: Object = {"status": {"phase": "Terminating"}}
    assert ConditionUpdater(NOW).update(ns)
    conditions = ns["status"]["conditions"]
    assert [c["type"] for c in conditions] == list(CONDITION_TYPES)
    assert {c["status"] for c in conditions} == {"False"}
    assert condition(ns, "NamespaceDeletionContentFailure") == {
        "type": "NamespaceDeletionContentFailure",
        "status": "False",
        "lastTransitionTime": NOW,
        "reason": "ContentDeleted",
        "message": "All content successfully deleted, may be waiting on finalization",
    }
    assert not ConditionUpdater("2026-11-30T11:00:00Z").update(ns)  # nothing new: no write
    assert cond(ns, "NamespaceContentRemaining")["lastTransitionTime"] == NOW


def test_remaining_content_and_failures_become_upstreams_messages() -> None:
    totals = ContentTotals()
    totals.add(PODS, [{"metadata": {}}, {"metadata": {"finalizers": ["example.com/hold"]}}])
    totals.add(DEPLOYMENTS, [{"metadata": {"finalizers": ["example.com/hold", "foregroundDeletion"]}}])
    updater = ConditionUpdater(NOW)
    updater.process_content_totals(totals)
    updater.process_delete_content_error("b failed")
    updater.process_delete_content_error("a failed")
    updater.process_discovery_error("metrics.k8s.io/v1beta1: the server is unable", 1)
    ns: Object = {}
    assert updater.update(ns)
    remaining = condition(ns, "NamespaceContentRemaining")
    assert remaining is not None and remaining["status"] == "True"
    assert remaining["reason"] == "SomeResourcesRemain"
    assert remaining["message"] == (
        "Some resources are remaining: deployments.apps has 1 resource instances, "
        "pods. has 2 resource instances"
    )
    finalizers = condition(ns, "NamespaceFinalizersRemaining")
    assert finalizers is not None and finalizers["reason"] == "SomeFinalizersRemain"
    assert finalizers["message"] == (
        "Some finalizers are remaining: example.com/hold in 2 resource instances, "
        "foregroundDeletion in 1 resource instances"
    )
    failure = condition(ns, "NamespaceDeletionContentFailure")
    assert failure is not None and failure["reason"] == "ContentDeletionFailed"
    assert failure["message"] == "Failed to delete all resource types, 2 remaining: a failed, b failed"
    discovery = condition(ns, "NamespaceDeletionDiscoveryFailure")
    assert discovery is not None and discovery["message"] == (
        "Discovery failed for some groups, 1 failing: metrics.k8s.io/v1beta1: the server is unable"
    )


def test_a_condition_keeps_its_transition_time_unless_its_status_changes() -> None:
    ns: Object = {}
    first = ConditionUpdater(NOW)
    first.process_content_totals(_totals(PODS, 2))
    first.update(ns)
    later = ConditionUpdater("2026-11-30T10:05:00Z")
    later.process_content_totals(_totals(PODS, 1))
    assert later.update(ns)
    assert cond(ns, "NamespaceContentRemaining")["lastTransitionTime"] == NOW
    done = ConditionUpdater("2026-11-30T10:09:00Z")
    assert done.update(ns)
    remaining = condition(ns, "NamespaceContentRemaining")
    assert remaining == {
        "type": "NamespaceContentRemaining",
        "status": "False",
        "lastTransitionTime": "2026-11-30T10:09:00Z",
        "reason": "ContentRemoved",
        "message": "All content successfully removed",
    }


def _totals(resource: APIResource, count: int) -> ContentTotals:
    totals = ContentTotals()
    totals.add(resource, [{"metadata": {}}] * count)
    return totals


def test_estimates_and_the_finalize_body() -> None:
    pods: list[Object] = [
        {"spec": {"terminationGracePeriodSeconds": 30}, "status": {"phase": "Running"}},
        {"spec": {"terminationGracePeriodSeconds": 90}, "status": {"phase": "Succeeded"}},  # done: no wait
        {"spec": {}},
    ]
    assert estimate_graceful_termination(pods) == 30
    assert requeue_after(30) == 16.0
    assert requeue_after(15) == 8.0
    ns = {
        "metadata": {"name": "shop", "uid": "u"},
        "spec": {"finalizers": ["z.io/b", "kubernetes", "a.io/a"]},
    }
    body = finalize_body(ns)
    assert body["spec"]["finalizers"] == ["a.io/a", "z.io/b"]
    assert body["metadata"] == {"name": "shop", "uid": "u"}
    assert not finalized(ns) and finalized(finalize_body({"spec": {"finalizers": ["kubernetes"]}}))


# -- end to end --------------------------------------------------------------------------------------


def _service(name: str) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]},
    }


def _secret(name: str) -> Object:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "stringData": {"k": "v"}}


async def test_deleting_a_namespace_deletes_everything_in_it_then_the_namespace(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster:
        namespaces = cluster.resource("", "v1", "namespaces")
        await namespaces.create({"metadata": {"name": "shop"}})
        await namespaces.create({"metadata": {"name": "bystander"}})
        content = {
            ("", "configmaps"): [configmap("settings"), configmap("flags")],
            ("", "secrets"): [_secret("password")],
            ("", "pods"): [pod("web-1"), pod("web-2")],
            ("", "services"): [_service("web")],
        }
        for (group, plural), objects in content.items():
            for obj in objects:
                await cluster.resource(group, "v1", plural, "shop").create(obj)
        kept = await cluster.resource("", "v1", "configmaps", "bystander").create(configmap("kept"))

        async with (
            controller_manager(cluster, namespace.add_to_manager, clock=ScaledClock(200)),
            PodTerminator(cluster),
        ):
            await namespaces.delete("shop")
            await wait_for(namespaces, lambda items: "shop" not in {n["metadata"]["name"] for n in items})

        for group, plural in content:
            assert (await cluster.resource(group, "v1", plural, "shop").list())["items"] == [], plural
        assert (await cluster.resource("", "v1", "configmaps", "bystander").get("kept")) == kept
        with pytest.raises(NotFound):
            await namespaces.get("shop")


async def test_content_with_finalizers_holds_the_namespace_and_shows_in_its_conditions(
    tmp_path: Path,
) -> None:
    async with in_process_cluster(tmp_path) as cluster:
        namespaces = cluster.resource("", "v1", "namespaces")
        await namespaces.create({"metadata": {"name": "shop"}})
        held = configmap("held")
        held["metadata"]["finalizers"] = ["example.com/hold"]
        cms = cluster.resource("", "v1", "configmaps", "shop")
        await cms.create(held)
        await cms.create(configmap("free"))

        async with controller_manager(cluster, namespace.add_to_manager, clock=ScaledClock(200)):
            await namespaces.delete("shop")

            def reports_the_finalizer(items: list[Object]) -> bool:
                shop = next((n for n in items if n["metadata"]["name"] == "shop"), {})
                remaining = condition(shop, "NamespaceFinalizersRemaining")
                return remaining is not None and remaining["status"] == "True"

            [shop] = [
                n
                for n in await wait_for(namespaces, reports_the_finalizer)
                if n["metadata"]["name"] == "shop"
            ]
            assert shop["status"]["phase"] == "Terminating"
            assert cond(shop, "NamespaceFinalizersRemaining")["message"] == (
                "Some finalizers are remaining: example.com/hold in 1 resource instances"
            )
            assert cond(shop, "NamespaceContentRemaining")["message"] == (
                "Some resources are remaining: configmaps. has 1 resource instances"
            )
            assert cond(shop, "NamespaceDeletionContentFailure")["status"] == "False"
            assert [c["metadata"]["name"] for c in (await cms.list())["items"]] == ["held"]

            # The finalizer's owner finishes its work: the namespace can go.
            await cms.patch("held", {"metadata": {"finalizers": None}})
            await wait_for(namespaces, lambda items: "shop" not in {n["metadata"]["name"] for n in items})
