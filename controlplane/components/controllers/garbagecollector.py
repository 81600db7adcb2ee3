"""The garbage collector: what an owner owned goes when the owner goes.

``kubectl delete deployment web`` removes one object; the ReplicaSets and pods it led to disappear
too, because of this controller. It does not know Deployments: it knows ``ownerReferences``. It
watches every resource that can be listed, watched and deleted (found through discovery, so a kind
added tomorrow is covered), keeps the owner/dependent graph of all of them (``gcgraph.py``), and
works through two queues, each a ``Controller`` of its own so that every attempt shows on the trace
as a ``reconcile``:

- ``garbagecollector-attempt-to-delete``: an object whose owners may be gone, or an owner being
  deleted in the foreground. Each attempt confirms the facts with **live GETs** (the graph is a cache
  and may be behind) and then keeps the object, trims its dangling references, or deletes it;
  an owner waiting in the foreground loses its ``foregroundDeletion`` finalizer once no dependent
  blocks it any more.
- ``garbagecollector-attempt-to-orphan``: an owner deleted with ``propagationPolicy: Orphan``: each
  dependent loses its reference to it, then the owner loses its ``orphan`` finalizer.

The keys on both queues are uids (the graph's own keys): ``<namespace>/<uid>``.

Events are not collected: upstream's garbage collector ignores ``events`` (core and
``events.k8s.io``), which nothing owns and which are written far too often to be worth a watch.
Leases *are* collected: a kubelet's Lease in ``kube-node-lease`` is owned by its Node, and when the
Node is deleted it is the garbage collector that removes the Lease.

The graph lives while the controllers run: when a manager loses leadership it is dropped, and built
again from the informers' caches by the next leader.

Upstream: ``pkg/controller/garbagecollector/garbagecollector.go``, ``graph_builder.go``; the
``ignoredResources`` there; ``ConcurrentGCSyncs`` (20 workers).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from controlplane.api.meta import Object, object_meta
from controlplane.client.cache import DeletedFinalStateUnknown
from controlplane.client.errors import NotFound
from controlplane.client.informer import HandlerRegistration, ResourceEventHandlerFuncs, SharedIndexInformer
from controlplane.client.manager import Kind, Manager
from controlplane.client.reconciler import Controller, ReconcilerFunc, Request, Result, TerminalError
from controlplane.client.record import EVENT_TYPE_WARNING, EventRecorder
from controlplane.client.rest import PatchType, ResourceClient
from controlplane.client.workqueue import RateLimitingQueue
from controlplane.components.controllers.discovery import APIResource, Discovery, discover, without
from controlplane.components.controllers.gcgraph import (
    FOREGROUND_FINALIZER,
    ORPHAN_FINALIZER,
    Actions,
    DeleteItem,
    DependencyGraph,
    KeepItem,
    Node,
    ObjectReference,
    ObservedObject,
    OwnerReference,
    OwnerState,
    RemoveOwnerReferences,
    classify,
    decide,
    owner_references,
    owner_state,
    remove_finalizer_patch,
    remove_owner_references_patch,
    unblock_owner_references_patch,
)
from controlplane.tasks import cancel_and_wait

logger = logging.getLogger(__name__)

#: CustomResourceDefinitions: a change to one may add or remove a resource to monitor.
CRDS = Kind("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition")
#: How long a rediscovery waits for a new resource's informer to list it.
RESYNC_SYNC_TIMEOUT = 30.0


#: Resources the garbage collector never watches (upstream ``ignoredResources``): (group, resource).
IGNORED_RESOURCES: frozenset[tuple[str, str]] = frozenset({("", "events"), ("events.k8s.io", "events")})
#: kube-controller-manager's ``--concurrent-gc-syncs`` default.
DEFAULT_WORKERS = 20

COMPONENT = "garbage-collector-controller"


def _same_to_graph(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether ``old`` and ``new`` agree on every metadata field ``ObservedObject.from_object`` reads:
    then they are the same to the dependency graph."""
    old_meta, new_meta = object_meta(old), object_meta(new)
    return (
        old_meta.get("uid") == new_meta.get("uid")
        and old_meta.get("name") == new_meta.get("name")
        and old_meta.get("namespace") == new_meta.get("namespace")
        and old_meta.get("ownerReferences") == new_meta.get("ownerReferences")
        and old_meta.get("deletionTimestamp") == new_meta.get("deletionTimestamp")
        and old_meta.get("finalizers") == new_meta.get("finalizers")
    )


class UnknownKind(Exception):
    """An owner reference names a kind discovery does not know (retried: it may appear)."""


class GarbageCollector:
    """The graph, the two queues' controllers, and the API calls each attempt makes."""

    def __init__(
        self,
        manager: Manager,
        *,
        resources: Sequence[APIResource] | None = None,
        ignored: Iterable[tuple[str, str]] = IGNORED_RESOURCES,
        workers: int = DEFAULT_WORKERS,
        recorder: EventRecorder | None = None,
    ) -> None:
        self.manager = manager
        self.client = manager.client
        self.ignored = frozenset(ignored)
        self._given_resources = tuple(resources) if resources is not None else None
        self.discovery = Discovery(tuple(resources or ()))
        #: Every resource discovery ever found, by group and kind: the stale REST mappings (see
        #: ``_resource``).
        self._once_served: dict[tuple[str, str], APIResource] = {}
        self.graph = DependencyGraph()
        self.recorder = recorder if recorder is not None else manager.event_recorder(COMPONENT)
        fields = {"from": manager.name}
        self.attempt_to_orphan = Controller(
            "garbagecollector-attempt-to-orphan",
            ReconcilerFunc(self.attempt_to_orphan_item),
            workers=workers,
            clock=manager.clock,
            trace=manager.trace,
            trace_fields=fields,
        )
        self.attempt_to_delete = GraphBuilder(
            self,
            "garbagecollector-attempt-to-delete",
            ReconcilerFunc(self.attempt_to_delete_item),
            workers=workers,
            clock=manager.clock,
            trace=manager.trace,
            trace_fields=fields,
        )

    # -- discovery and monitors ----------------------------------------------------------------------

    async def monitored_resources(self) -> list[APIResource]:
        """What to watch: every resource supporting delete, list and watch, minus the ignored ones
        (upstream ``GetDeletableResources``)."""
        if self._given_resources is None:
            for resource in self.discovery.resources:
                self._once_served[resource.group, resource.kind] = resource
            self.discovery = await discover(self.client)
            if self.discovery.failed:
                logger.warning("garbage collector: %s", self.discovery.error_message())
        deletable = self.discovery.filtered_by("delete", "list", "watch")
        return without(deletable, self.ignored)

    def handler_for(self, resource: APIResource) -> ResourceEventHandlerFuncs:
        """Informer handlers feeding one resource's changes into the graph."""

        def observed(obj: Mapping[str, Any]) -> ObservedObject:
            return ObservedObject.from_object(obj, api_version=resource.api_version, kind=resource.kind)

        def on_add(obj: Object) -> None:
            self.dispatch(self.graph.observe(observed(obj)))

        def on_update(old: Object, new: Object) -> None:
            now = observed(new)
            # Most updates (a Lease renewed, a status written) leave every field the graph reads as
            # it was: then the old version observes as the new one does, and is not read again.
            before = now if _same_to_graph(old, new) else observed(old)
            self.dispatch(self.graph.observe(now, before))

        def on_delete(obj: Object | DeletedFinalStateUnknown) -> None:
            if isinstance(obj, DeletedFinalStateUnknown):
                if obj.obj is None:
                    return
                obj = obj.obj
            self.dispatch(self.graph.observe_deleted(observed(obj)))

        return ResourceEventHandlerFuncs(on_add, on_update, on_delete)

    def dispatch(self, actions: Actions) -> None:
        """Put the nodes a graph change named on their queues, and report invalid references."""
        for uid in actions.attempt_to_delete:
            self.attempt_to_delete.enqueue(self._request(uid))
        for uid in actions.attempt_to_orphan:
            self.attempt_to_orphan.enqueue(self._request(uid))
        for dependent, ref in actions.invalid_namespace_owner_refs:
            self._report_invalid_namespace_owner_ref(dependent, ref)

    def _request(self, uid: str) -> Request:
        node = self.graph.node(uid)
        return Request(node.identity.namespace if node is not None else "", uid)

    def _report_invalid_namespace_owner_ref(self, dependent: ObjectReference, ref: OwnerReference) -> None:
        """Upstream ``reportInvalidNamespaceOwnerRef``: a namespaced owner can only own its namespace."""
        invalid = ObjectReference(ref.api_version, ref.kind, ref.name, ref.uid, dependent.namespace)
        target = {
            "kind": dependent.kind,
            "apiVersion": dependent.api_version,
            "metadata": {"name": dependent.name, "namespace": dependent.namespace, "uid": dependent.uid},
        }
        self.recorder.event(
            target,
            EVENT_TYPE_WARNING,
            "OwnerRefInvalidNamespace",
            f'ownerRef {invalid} does not exist in namespace "{dependent.namespace}"',
        )

    # -- API calls -----------------------------------------------------------------------------------

    def _resource(self, api_version: str, kind: str) -> APIResource:
        resource = self.discovery.for_kind(api_version, kind)
        if resource is not None:
            return resource
        # A kind no longer served (its CustomResourceDefinition was just deleted, with its objects):
        # upstream's collector maps references through a cached RESTMapper that only its periodic
        # Sync resets, so the dependents of an owner deleted with its definition are still mapped,
        # their owner's GET answers 404, and they are collected. The last mapping known does the same.
        group = api_version.rpartition("/")[0] if "/" in api_version else ""
        stale = self._once_served.get((group, kind))
        if stale is None:
            raise UnknownKind(f"no resource serves kind {kind!r} in {api_version!r}")
        return stale

    def _client(self, identity: ObjectReference) -> ResourceClient:
        resource = self._resource(identity.api_version, identity.kind)
        namespace = identity.namespace if resource.namespaced else None
        return self.client.resource(resource.group, resource.version, resource.plural, namespace)

    async def _get(self, identity: ObjectReference) -> Object | None:
        """The live object under ``identity``'s name (None: 404). Its uid may differ."""
        try:
            return await self._client(identity).get(identity.name)
        except NotFound:
            return None

    def recheck(self, resource: APIResource) -> None:
        """Look again at every node of a resource no longer monitored: its informer's last events
        (the deletions of a definition's objects) may never reach the graph, which would then keep
        their owners present and their dependents for ever. Each attempt GETs the object (through
        the last mapping known): a 404 deletes the node virtually and hands its dependents on."""
        for node in self.graph.of_kind(resource.group, resource.kind):
            self.attempt_to_delete.enqueue(self._request(node.uid))

    def _virtual_delete(self, identity: ObjectReference) -> None:
        self.dispatch(self.graph.virtual_delete(identity))

    async def _owner_state(self, ref: OwnerReference, item: Node) -> OwnerState:
        """Is the owner ``ref`` names there? (upstream ``isDangling``, with the absent-owner cache)."""
        cluster_scoped = ObjectReference(ref.api_version, ref.kind, ref.name, ref.uid, "")
        namespaced = ObjectReference(ref.api_version, ref.kind, ref.name, ref.uid, item.identity.namespace)
        if cluster_scoped in self.graph.absent_owners or namespaced in self.graph.absent_owners:
            return OwnerState.ABSENT
        resource = self._resource(ref.api_version, ref.kind)
        if resource.namespaced and not item.identity.namespace:
            # A cluster-scoped object cannot be owned by a namespaced one; retrying will not help.
            raise TerminalError(f"{item.identity} is cluster-scoped, but refers to a namespaced owner {ref}")
        key = namespaced if resource.namespaced else cluster_scoped
        live = await self._get(key)
        state = owner_state(ref, live)
        if state is OwnerState.ABSENT:
            self.graph.absent_owners.add(key)
        return state

    # -- attemptToDelete -----------------------------------------------------------------------------

    async def attempt_to_delete_item(self, request: Request) -> Result:
        """Upstream ``attemptToDeleteItem``, for the node with uid ``request.name``."""
        item = self.graph.node(request.name)
        if item is None:
            return Result()
        # Being deleted is a one-way trip: wait for the final deletion, then deal with the dependents.
        if item.being_deleted and not item.deleting_dependents:
            return Result()
        latest = await self._get(item.identity)
        if latest is None or str(latest["metadata"].get("uid")) != item.uid:
            self._virtual_delete(item.identity)
            return Result()
        if item.deleting_dependents:
            await self._process_deleting_dependents(item, latest)
        else:
            await self._collect(item, latest)
        # A node only a dependent has named is looked at again until an informer has seen it.
        return Result(requeue=item.virtual)

    async def _collect(self, item: Node, latest: Object) -> None:
        refs = owner_references(latest)
        states = {ref.uid: await self._owner_state(ref, item) for ref in refs}
        dependents = self.graph.dependents(item)
        decision = decide(
            latest["metadata"].get("finalizers") or [],
            classify(refs, states),
            has_dependents=bool(dependents),
            a_dependent_is_deleting_dependents=any(d.deleting_dependents for d in dependents),
        )
        logger.debug("garbage collector: %s: %s", item.identity, decision)
        if isinstance(decision, KeepItem):
            return
        client = self._client(item.identity)
        if isinstance(decision, RemoveOwnerReferences):
            await self._patch(item, client, remove_owner_references_patch(latest, decision.uids))
            return
        assert isinstance(decision, DeleteItem)
        resource_version = latest["metadata"].get("resourceVersion")
        if decision.unblock_first:
            patched = await self._patch(item, client, unblock_owner_references_patch(latest))
            if patched is None:
                return
            resource_version = patched["metadata"].get("resourceVersion")
        try:
            await client.delete(
                item.identity.name,
                propagation_policy=decision.policy,
                preconditions={"uid": item.uid, "resourceVersion": str(resource_version)},
            )
        except NotFound:
            self._virtual_delete(item.identity)

    async def _patch(self, item: Node, client: ResourceClient, patch: dict[str, Any]) -> Object | None:
        """A merge patch of the item (409 Conflict propagates: the attempt is retried)."""
        try:
            return await client.patch(item.identity.name, patch, patch_type=PatchType.MERGE)
        except NotFound:
            self._virtual_delete(item.identity)
            return None

    async def _process_deleting_dependents(self, item: Node, latest: Object) -> None:
        """A foreground deletion: done once nothing blocks it (``processDeletingDependentsItem``)."""
        blocking = self.graph.blocking_dependents(item)
        if not blocking:
            patch = remove_finalizer_patch(latest, FOREGROUND_FINALIZER)
            if patch is not None:
                await self._patch(item, self._client(item.identity), patch)
            return
        for dependent in blocking:
            if not dependent.deleting_dependents:
                self.attempt_to_delete.enqueue(self._request(dependent.uid))

    # -- attemptToOrphan -----------------------------------------------------------------------------

    async def attempt_to_orphan_item(self, request: Request) -> Result:
        """``attemptToOrphanWorker``: dependents lose their reference, then the owner its finalizer."""
        owner = self.graph.node(request.name)
        if owner is None:
            return Result()
        await asyncio.gather(*(self._orphan(dep, owner) for dep in self.graph.dependents(owner)))
        latest = await self._get(owner.identity)
        if latest is None or str(latest["metadata"].get("uid")) != owner.uid:
            return Result()
        patch = remove_finalizer_patch(latest, ORPHAN_FINALIZER)
        if patch is not None:
            await self._patch(owner, self._client(owner.identity), patch)
        return Result()

    async def _orphan(self, dependent: Node, owner: Node) -> None:
        latest = await self._get(dependent.identity)
        if latest is None or str(latest["metadata"].get("uid")) != dependent.uid:
            return
        if not any(ref.uid == owner.uid for ref in owner_references(latest)):
            return
        with contextlib.suppress(NotFound):
            await self._client(dependent.identity).patch(
                dependent.identity.name,
                remove_owner_references_patch(latest, [owner.uid]),
                patch_type=PatchType.MERGE,
            )


class GraphBuilder(Controller):
    """The attemptToDelete controller; starting it discovers the resources and feeds the graph.

    Upstream's ``GraphBuilder`` runs one *monitor* (an informer) per resource; here they are the
    manager's shared informers, so the garbage collector adds no watch that another controller
    already has.
    """

    def __init__(self, collector: GarbageCollector, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.collector = collector
        self._monitors: list[tuple[SharedIndexInformer, HandlerRegistration]] = []
        #: The monitor of each resource, by (group, version, plural).
        self._monitored: dict[
            tuple[str, str, str], tuple[APIResource, SharedIndexInformer, HandlerRegistration]
        ] = {}
        #: Rediscovery when CustomResourceDefinitions change (see ``_follow_definitions``).
        self._definitions: tuple[SharedIndexInformer, HandlerRegistration] | None = None
        self._resync_task: asyncio.Task[None] | None = None
        self._resync_wanted = False

    async def start(self) -> None:
        if self._tasks:
            return
        collector = self.collector
        resources = await collector.monitored_resources()
        collector.graph = DependencyGraph()
        if self.queue.shutting_down:
            # Started again (a new term as leader): the graph's first actions need a live queue now,
            # before the base class would make one.
            self.queue = RateLimitingQueue(self._rate_limiter, self.name, clock=self.clock)
        informers = [(r, self._informer(r)) for r in resources]
        collector.manager.informers.start()  # the informers made just now
        await asyncio.gather(*(informer.wait_for_sync() for _, informer in informers))
        for resource, informer in informers:
            registration = informer.add_event_handler(collector.handler_for(resource))
            self._monitors.append((informer, registration))
            key = (resource.group, resource.version, resource.plural)
            self._monitored[key] = (resource, informer, registration)
        # Like upstream (``dependencyGraphBuilder.IsSynced``), work starts once the graph holds every
        # object of the first lists: an orphaning must not miss a dependent that is merely late.
        await asyncio.gather(*(registration.wait_for_sync() for _, registration in self._monitors))
        logger.info("garbage collector: monitoring %d resources", len(self._monitors))
        self._follow_definitions(resources)
        await super().start()

    def _follow_definitions(self, resources: Sequence[APIResource]) -> None:
        """Custom resources come and go with their definitions: rediscover when one changes.

        Upstream's collector polls discovery every 30 s (``GarbageCollector.Sync``); here a change to
        a CustomResourceDefinition (its informer is one the collector watches anyway) triggers it.
        """
        if self.collector._given_resources is not None:
            return
        if not any((r.group, r.plural) == (CRDS.group, CRDS.plural) for r in resources):
            return
        informer = self.collector.manager.informer_for(CRDS)

        def changed(*_: Any) -> None:
            self._resync_wanted = True
            if self._resync_task is None or self._resync_task.done():
                self._resync_task = asyncio.get_running_loop().create_task(self._resync())

        handlers = ResourceEventHandlerFuncs(changed, changed, changed)
        self._definitions = (informer, informer.add_event_handler(handlers))

    async def _resync(self) -> None:
        """Monitor the resources discovery now finds, and stop monitoring those it no longer finds
        (upstream ``resyncMonitors``). The informer of a resource gone stays with the manager's others."""
        collector = self.collector
        while self._resync_wanted:
            self._resync_wanted = False
            try:
                found = {(r.group, r.version, r.plural): r for r in await collector.monitored_resources()}
            except Exception:
                logger.exception("garbage collector: rediscovery failed")
                return
            for key in [k for k in self._monitored if k not in found]:
                gone, informer, registration = self._monitored.pop(key)
                self._monitors.remove((informer, registration))
                await informer.remove_event_handler(registration)
                # Upstream resyncs its monitors only every 30 s, long after a definition's objects
                # were deleted; this resync follows the definition at once, so a deletion event
                # still in the informer's queue may be lost with the handler: look at them again.
                collector.recheck(gone)
            added = [(r, self._informer(r)) for key, r in found.items() if key not in self._monitored]
            if not added:
                continue
            collector.manager.informers.start()
            for resource, informer in added:
                with contextlib.suppress(TimeoutError):  # a resource gone again meanwhile
                    async with asyncio.timeout(RESYNC_SYNC_TIMEOUT):
                        await informer.wait_for_sync()
                registration = informer.add_event_handler(collector.handler_for(resource))
                self._monitors.append((informer, registration))
                key = (resource.group, resource.version, resource.plural)
                self._monitored[key] = (resource, informer, registration)
            logger.info("garbage collector: monitoring %d resources", len(self._monitors))

    def _informer(self, resource: APIResource) -> SharedIndexInformer:
        return self.collector.manager.informer_for(resource.as_kind())

    async def stop(self) -> None:
        if self._resync_task is not None:
            await cancel_and_wait(self._resync_task)
            self._resync_task = None
        if self._definitions is not None:
            informer, registration = self._definitions
            self._definitions = None
            await informer.remove_event_handler(registration)
        self._monitored.clear()
        monitors, self._monitors = self._monitors, []
        for informer, registration in monitors:
            await informer.remove_event_handler(registration)
        await super().stop()


def add_to_manager(
    manager: Manager,
    *,
    workers: int = DEFAULT_WORKERS,
    resources: Sequence[APIResource] | None = None,
    ignored: Iterable[tuple[str, str]] = IGNORED_RESOURCES,
) -> list[Controller]:
    """Add the garbage collector's two controllers to ``manager``: [attempt-to-orphan, attempt-to-delete].

    ``resources`` fixes what is watched (and how owner kinds map to resources); by default the
    collector asks discovery each time it starts.
    """
    collector = GarbageCollector(manager, resources=resources, ignored=ignored, workers=workers)
    # The orphan controller starts first: the graph builder may queue work for it as soon as it runs.
    manager.controllers.append(collector.attempt_to_orphan)
    manager.controllers.append(collector.attempt_to_delete)
    return [collector.attempt_to_orphan, collector.attempt_to_delete]


__all__ = ["DEFAULT_WORKERS", "IGNORED_RESOURCES", "GarbageCollector", "GraphBuilder", "add_to_manager"]
