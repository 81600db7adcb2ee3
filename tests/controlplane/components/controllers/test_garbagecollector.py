"""The garbage collector against a real (in-process) API server: background, foreground and orphan
deletion, dangling references, and the Event for an owner in another namespace.

Pods are deleted gracefully: the API server only marks them, and the kubelet removes them once their
containers have stopped. No kubelet runs here; ``PodTerminator`` plays its part where a test needs
pods to go, by deleting every marked pod with grace period 0, as a kubelet does at the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from controlplane.api.meta import Object
from controlplane.client.errors import NotFound
from controlplane.client.manager import Manager
from controlplane.clock import Clock
from controlplane.components.controllers import garbagecollector, gcgraph
from controlplane.components.controllers.discovery import APIResource, Discovery
from controlplane.components.controllers.garbagecollector import GraphBuilder
from controlplane.identity import UserInfo
from controlplane.trace import ListSink
from tests.support.inprocess import InProcessCluster, in_process_cluster, wait_for

CONTROLLER_MANAGER = UserInfo.create("system:kube-controller-manager")


@contextlib.asynccontextmanager
async def controller_manager(
    cluster: InProcessCluster,
    add: Callable[[Manager], object],
    *,
    clock: Clock | None = None,
    trace: ListSink | None = None,
    seed: int = 7,
) -> AsyncIterator[Manager]:
    """A started manager with the controllers ``add`` puts on it, as kube-controller-manager."""
    options: dict[str, Any] = {"clock": clock} if clock is not None else {}
    client = cluster.client_for(CONTROLLER_MANAGER, **options)
    manager = Manager(
        client, name="kube-controller-manager", rng=random.Random(seed), trace=trace or ListSink()
    )
    add(manager)
    async with manager:
        yield manager


class PodTerminator:
    """Stands in for the kubelets: removes every pod marked for deletion (a delete with grace 0)."""

    def __init__(self, cluster: InProcessCluster) -> None:
        self.pods = cluster.resource("", "v1", "pods")
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> PodTerminator:
        self._task = asyncio.create_task(self._run(), name="pod terminator")
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    async def _finish(self, pod: Object) -> None:
        meta = pod["metadata"]
        if meta.get("deletionTimestamp"):
            with contextlib.suppress(NotFound):
                await self.pods.in_namespace(meta["namespace"]).delete(meta["name"], grace_period_seconds=0)

    async def _run(self) -> None:
        while True:
            listed = await self.pods.list()
            for pod in listed["items"]:
                await self._finish(pod)
            async with self.pods.watch(resource_version=listed["metadata"]["resourceVersion"]) as events:
                async for event in events:
                    if event.type.value in ("ADDED", "MODIFIED"):
                        await self._finish(event.object)


def owner_ref(owner: Object, *, block: bool = False, controller: bool = False) -> dict[str, Any]:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": controller,
        "blockOwnerDeletion": block,
    }


def configmap(name: str, *owners: dict[str, Any]) -> Object:
    meta: dict[str, Any] = {"name": name}
    if owners:
        meta["ownerReferences"] = list(owners)
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": "v"}}


def pod(
    name: str, *owners: dict[str, Any], labels: dict[str, str] | None = None, node: str | None = None
) -> Object:
    """A pod; bound to ``node`` (with no kubelet there), a delete only marks it, as for a running pod:
    an unscheduled pod is deleted at once (upstream's ``CheckGracefulDelete``)."""
    meta: dict[str, Any] = {"name": name, "labels": labels or {}}
    if owners:
        meta["ownerReferences"] = list(owners)
    spec: dict[str, Any] = {"containers": [{"name": "app", "image": "nginx"}]}
    if node is not None:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def names(items: list[Object]) -> set[str]:
    return {item["metadata"]["name"] for item in items}


def gone(name: str) -> Callable[[list[Object]], bool]:
    return lambda items: name not in names(items)


async def test_background_deletion_collects_dependents_and_trims_shared_ones(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster, PodTerminator(cluster):
        cms = cluster.resource("", "v1", "configmaps", "default")
        pods = cluster.resource("", "v1", "pods", "default")
        trace = ListSink()
        async with controller_manager(cluster, garbagecollector.add_to_manager, trace=trace):
            owner = await cms.create(configmap("owner"))
            survivor = await cms.create(configmap("survivor"))
            await cms.create(configmap("dependent", owner_ref(owner)))
            await cms.create(configmap("shared", owner_ref(owner), owner_ref(survivor)))
            await pods.create(pod("worker", owner_ref(owner)))

            await cms.delete("owner")  # background: the server removes it at once

            def collected(items: list[Object]) -> bool:
                by_name = {item["metadata"]["name"]: item for item in items}
                shared = by_name.get("shared", {"metadata": {}})
                refs = [r["name"] for r in shared["metadata"].get("ownerReferences") or []]
                return "dependent" not in by_name and refs == ["survivor"]

            left = await wait_for(cms, collected)
            # The shared dependent lives on: another owner still exists; only its dangling reference went.
            assert {"survivor", "shared"} <= names(left)
            await wait_for(pods, gone("worker"))
            assert await cms.get("survivor")
        attempts = [
            e for e in trace.of_type("reconcile") if e["controller"] == "garbagecollector-attempt-to-delete"
        ]
        assert attempts, "every attempt shows on the trace as a reconcile"
        assert all(e["from"] == "kube-controller-manager" for e in attempts)


async def test_a_reference_to_an_owner_that_never_existed_or_was_replaced_is_dangling(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster:
        cms = cluster.resource("", "v1", "configmaps", "default")
        ghost = {"apiVersion": "v1", "kind": "ConfigMap", "name": "ghost", "uid": "no-such-uid"}
        await cms.create(configmap("haunted", ghost))
        # Same name, another uid: not the owner the reference means.
        await cms.create(configmap("web"))
        impostor = {"apiVersion": "v1", "kind": "ConfigMap", "name": "web", "uid": "old-uid"}
        await cms.create(configmap("orphaned-by-recreate", impostor))
        await cms.create(configmap("bystander"))
        async with controller_manager(cluster, garbagecollector.add_to_manager):
            left = await wait_for(cms, lambda items: not names(items) & {"haunted", "orphaned-by-recreate"})
        assert {"web", "bystander"} <= names(left)


async def test_foreground_deletion_waits_for_the_whole_chain(tmp_path: Path) -> None:
    """Deployment -> ReplicaSet -> Pods, built by hand; deleted in the foreground."""
    async with in_process_cluster(tmp_path) as cluster:
        deployments = cluster.resource("apps", "v1", "deployments", "default")
        replicasets = cluster.resource("apps", "v1", "replicasets", "default")
        pods = cluster.resource("", "v1", "pods", "default")
        labels = {"app": "web"}
        template = {
            "metadata": {"labels": labels},
            "spec": {"containers": [{"name": "app", "image": "nginx"}]},
        }
        spec = {"replicas": 2, "selector": {"matchLabels": labels}, "template": template}
        deploy = await deployments.create(
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": spec}
        )
        rs = await replicasets.create(
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": {
                    "name": "web-7d",
                    "ownerReferences": [owner_ref(deploy, block=True, controller=True)],
                },
                "spec": spec,
            }
        )
        for name in ("web-7d-a", "web-7d-b"):
            await pods.create(
                pod(
                    name,
                    owner_ref(rs, block=True, controller=True),
                    labels=labels,
                    node="node-without-kubelet",
                )
            )

        async with controller_manager(cluster, garbagecollector.add_to_manager):
            await deployments.delete("web", propagation_policy="Foreground")
            # The collector deletes the chain from the leaves; the pods are only marked (no kubelet) ...
            await wait_for(
                pods,
                lambda items: len(items) == 2 and all(p["metadata"].get("deletionTimestamp") for p in items),
            )
            waiting_rs = await replicasets.get("web-7d")
            assert waiting_rs["metadata"]["finalizers"] == ["foregroundDeletion"]
            assert waiting_rs["metadata"].get("deletionTimestamp")
            # ... so everything above them waits.
            waiting = await deployments.get("web")
            assert waiting["metadata"]["finalizers"] == ["foregroundDeletion"]

            async with PodTerminator(cluster):
                await wait_for(pods, lambda items: not items)
                await wait_for(replicasets, lambda items: not items)
                await wait_for(deployments, lambda items: not items)


async def test_orphan_deletion_leaves_dependents_without_the_reference(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster:
        cms = cluster.resource("", "v1", "configmaps", "default")
        pods = cluster.resource("", "v1", "pods", "default")
        owner = await cms.create(configmap("owner"))
        other = await cms.create(configmap("other"))
        await cms.create(configmap("kept", owner_ref(owner, block=True)))
        await pods.create(pod("kept-pod", owner_ref(owner), owner_ref(other)))
        async with controller_manager(cluster, garbagecollector.add_to_manager) as manager:
            # Started: the graph holds what the first lists found.
            node = _collector(manager).graph.node(owner["metadata"]["uid"])
            assert node is not None and len(node.dependents) == 2

            await cms.delete("owner", propagation_policy="Orphan")

            await wait_for(cms, gone("owner"))
            kept = await cms.get("kept")
            assert "ownerReferences" not in kept["metadata"]
            kept_pod = await pods.get("kept-pod")
            assert [r["name"] for r in kept_pod["metadata"]["ownerReferences"]] == ["other"]
            assert not kept_pod["metadata"].get("deletionTimestamp")


async def test_an_owner_in_another_namespace_is_reported_with_upstreams_event(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster:
        await cluster.resource("", "v1", "namespaces").create({"metadata": {"name": "shop"}})
        owner = await cluster.resource("", "v1", "configmaps", "default").create(configmap("settings"))
        shop_cms = cluster.resource("", "v1", "configmaps", "shop")
        stray = await shop_cms.create(configmap("stray", owner_ref(owner)))
        events = cluster.resource("", "v1", "events", "shop")
        async with controller_manager(cluster, garbagecollector.add_to_manager):
            found = await wait_for(
                events, lambda items: any(e["reason"] == "OwnerRefInvalidNamespace" for e in items)
            )
            # The owner does not exist where a namespaced owner must be: the stray is collected.
            await wait_for(shop_cms, gone("stray"))
        event = next(e for e in found if e["reason"] == "OwnerRefInvalidNamespace")
        assert event["type"] == "Warning"
        assert event["involvedObject"]["uid"] == stray["metadata"]["uid"]
        assert event["source"]["component"] == "garbage-collector-controller"
        uid = owner["metadata"]["uid"]
        assert event["message"] == (
            f"ownerRef [v1/ConfigMap, namespace: shop, name: settings, uid: {uid}] "
            'does not exist in namespace "shop"'
        )


async def test_a_restarted_collector_rebuilds_its_graph_and_finds_what_it_missed(tmp_path: Path) -> None:
    """As after a change of leader: the controllers stop, the world changes, they start again."""
    async with in_process_cluster(tmp_path) as cluster:
        cms = cluster.resource("", "v1", "configmaps", "default")
        async with controller_manager(cluster, garbagecollector.add_to_manager) as manager:
            collector = _collector(manager)
            first_graph = collector.graph
            for controller in reversed(manager.controllers):
                await controller.stop()
            owner = await cms.create(configmap("owner"))
            await cms.create(configmap("dependent", owner_ref(owner)))
            await cms.delete("owner")
            for controller in manager.controllers:
                await controller.start()
            assert collector.graph is not first_graph
            await wait_for(cms, gone("dependent"))


# -- helpers -------------------------------------------------------------------------------------------


def _collector(manager: Manager) -> garbagecollector.GarbageCollector:
    builder = next(c for c in manager.controllers if isinstance(c, GraphBuilder))
    return builder.collector


def test_a_kind_no_longer_served_keeps_its_last_mapping_so_its_dependents_are_collected() -> None:
    # An owner deleted with its CustomResourceDefinition: discovery no longer lists its kind, but its
    # dependents must still be mapped to a GET (which answers 404: the owner is gone, they go too).
    widgets = APIResource("example.com", "v1", "widgets", "Widget", True, frozenset({"get", "delete"}))
    collector: Any = SimpleNamespace(discovery=Discovery((widgets,)), _once_served={})
    resolve = garbagecollector.GarbageCollector._resource
    assert resolve(collector, "example.com/v1", "Widget") is widgets
    collector._once_served[("example.com", "Widget")] = widgets  # what monitored_resources keeps
    collector.discovery = Discovery(())  # rediscovered after the definition went
    assert resolve(collector, "example.com/v1", "Widget") is widgets
    with pytest.raises(garbagecollector.UnknownKind):
        resolve(collector, "example.com/v1", "Gadget")  # never served: retried, as upstream


def test_the_nodes_of_a_resource_no_longer_monitored_are_looked_at_again() -> None:
    # The definition went with its objects; their deletion events may be lost with the monitor's
    # handler, leaving the owners present in the graph and their dependents for ever. Each node of
    # that resource is attempted again: its GET answers 404, and the virtual delete collects the rest.
    widgets = APIResource("example.com", "v1", "widgets", "Widget", True, frozenset({"get", "delete"}))
    graph = gcgraph.DependencyGraph()
    widget = gcgraph.ObjectReference("example.com/v1", "Widget", "again", "uid-widget", "default")
    gadget = gcgraph.ObjectReference("other.example.com/v1", "Widget", "other", "uid-other", "default")
    dependent = gcgraph.ObjectReference("v1", "ConfigMap", "again-greeting", "uid-cm", "default")
    graph.observe(gcgraph.ObservedObject(widget))
    graph.observe(gcgraph.ObservedObject(gadget))
    graph.observe(gcgraph.ObservedObject(dependent, (gcgraph.OwnerReference.from_dict(_ref(widget)),)))
    enqueued: list[str] = []
    collector: Any = SimpleNamespace(
        graph=graph, attempt_to_delete=SimpleNamespace(enqueue=lambda request: enqueued.append(request.name))
    )
    collector._request = lambda uid: garbagecollector.GarbageCollector._request(collector, uid)
    garbagecollector.GarbageCollector.recheck(collector, widgets)
    assert enqueued == ["uid-widget"], "only the widgets of example.com are looked at again"


def _ref(identity: gcgraph.ObjectReference) -> dict[str, Any]:
    return {
        "apiVersion": identity.api_version,
        "kind": identity.kind,
        "name": identity.name,
        "uid": identity.uid,
    }
