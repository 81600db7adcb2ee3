"""The scheduler's informer handlers: what each node and pod event does to the queue and the cache.

kube-scheduler learns everything from two shared informers (upstream ``pkg/scheduler/eventhandlers.go``,
``addAllEventHandlers``):

- **nodes**: the candidates. Each goes into the cache; a node added, or changed in a way that may let
  a pod fit (more room, a taint removed), moves the pods no node could take back into play;
- **pods**, all of them. A pod with ``spec.nodeName`` set is *assigned*: it takes up room on its node,
  in the cache. A pod without one, for this scheduler (``spec.schedulerName``, ``default-scheduler``
  unless the pod says otherwise) and not being deleted, is *pending*: it goes into the scheduling
  queue. An assigned pod deleted, or finished, frees its room, which may help a waiting pod too.

Upstream writes these handlers as methods of the ``Scheduler`` struct in a file of their own; here
they are the methods of ``EventHandlers``, a base class of ``Scheduler``.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from controlplane.api.meta import Object, object_key, object_meta
from controlplane.client.cache import DeletedFinalStateUnknown
from controlplane.client.informer import (
    ResourceEventHandlerFuncs,
    SharedIndexInformer,
    SharedInformerFactory,
    strip_managed_fields,
)
from controlplane.components.scheduler.framework import Obj, Profile
from controlplane.components.scheduler.internal_cache import Cache
from controlplane.components.scheduler.plugins.default_preemption import DefaultPreemption
from controlplane.components.scheduler.plugins.volume_binding import (
    PV_ADD,
    PV_UPDATE,
    PVC_ADD,
    PVC_UPDATE,
    STORAGE_CLASS_ADD,
    STORAGE_CLASS_UPDATE,
    VolumeBinding,
)
from controlplane.components.scheduler.queue import (
    ASSIGNED_POD_DELETE,
    NODE_ADD,
    NODE_UPDATE,
    SchedulingQueue,
)

if TYPE_CHECKING:
    from controlplane.clock import Clock

DEFAULT_SCHEDULER_NAME = "default-scheduler"


# -- what the handlers look at ----------------------------------------------------------------------


def _spec(obj: Obj) -> Obj:
    spec: Obj = obj.get("spec") or {}
    return spec


def assigned(pod: Obj) -> bool:
    """``assignedPod``: the pod has a node."""
    return bool(_spec(pod).get("nodeName"))


def terminal(pod: Obj) -> bool:
    """A pod that has finished no longer takes room (upstream's informer filters these out)."""
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _node_name(node: Obj) -> str:
    return str(object_meta(node).get("name") or "")


def _without_status(pod: Obj) -> Obj:
    meta = {
        k: v
        for k, v in object_meta(pod).items()
        if k not in ("resourceVersion", "generation", "managedFields")
    }
    return {**{k: v for k, v in pod.items() if k != "status"}, "metadata": meta}


def pod_updated(old: Obj, new: Obj) -> bool:
    """``isPodUpdated``: a change other than status, resourceVersion and managedFields.

    A status-only change (such as the scheduler's own ``PodScheduled=False``) cannot make a pod fit,
    so it does not move an unschedulable pod back into play.
    """
    return _without_status(old) != _without_status(new)


def node_scheduling_properties_changed(old: Obj, new: Obj) -> bool:
    """Whether a node update may let a pod fit (``nodeSchedulingPropertiesChange``): allocatable,
    labels, taints, ``spec.unschedulable`` or the conditions' statuses changed."""

    def properties(node: Obj) -> tuple[Any, ...]:
        status: Obj = node.get("status") or {}
        conditions = sorted(
            (str(c.get("type")), str(c.get("status"))) for c in status.get("conditions") or []
        )
        return (
            status.get("allocatable"),
            object_meta(node).get("labels"),
            _spec(node).get("taints"),
            bool(_spec(node).get("unschedulable")),
            conditions,
        )

    return properties(old) != properties(new)


# -- the handlers -----------------------------------------------------------------------------------


class EventHandlers:
    """The node and pod informers' handlers, feeding the scheduling queue and the cache."""

    # What the handlers use of the scheduler (``Scheduler.__init__`` sets them).
    scheduler_name: str
    queue: SchedulingQueue
    cache: Cache
    profile: Profile
    #: Pods that preempted and wait for the room, by key, with their node (``schedule_one``).
    nominator: dict[str, tuple[str, Obj]]
    #: Set whenever the queue may have a pod ready: the loop waits on it.
    _wakeup: asyncio.Event

    if TYPE_CHECKING:

        @property
        def clock(self) -> Clock: ...

    def add_all_event_handlers(self, factory: SharedInformerFactory) -> SharedIndexInformer:
        """``addAllEventHandlers``: register the handlers on the node and pod informers.

        Returns the pod informer (the scheduler reads a pod's latest conditions from its store).
        """
        node_informer = factory.informer_for("", "v1", "nodes")
        node_informer.add_event_handler(
            ResourceEventHandlerFuncs(self._on_node_add, self._on_node_update, self._on_node_delete)
        )
        pod_informer = factory.informer_for("", "v1", "pods")
        # As upstream's newPodInformer: no managedFields in the scheduler's pod cache.
        pod_informer.transform = strip_managed_fields
        pod_informer.add_event_handler(
            ResourceEventHandlerFuncs(self._on_pod_add, self._on_pod_update, self._on_pod_delete)
        )
        self._add_volume_binding_handlers(factory)
        preemption = [p for p in self.profile.post_filters if isinstance(p, DefaultPreemption)]
        if preemption:
            # Preemption prefers victims whose eviction breaks no budget (upstream's ``pdbLister``).
            budgets = factory.informer_for("policy", "v1", "poddisruptionbudgets")
            for plugin in preemption:
                plugin.pdbs = budgets.indexer
        return pod_informer

    def _add_volume_binding_handlers(self, factory: SharedInformerFactory) -> None:
        """Claims, volumes and classes for VolumeBinding; any of them added or changed (a claim bound,
        a volume created, a class made) may let a pod in (its ``EventsToRegister``)."""
        binding = [f for f in self.profile.filters if isinstance(f, VolumeBinding)]
        if not binding:
            return
        claims = factory.informer_for("", "v1", "persistentvolumeclaims")
        volumes = factory.informer_for("", "v1", "persistentvolumes")
        classes = factory.informer_for("storage.k8s.io", "v1", "storageclasses")
        for plugin in binding:
            plugin.claims, plugin.volumes, plugin.classes = claims.indexer, volumes.indexer, classes.indexer
        for informer, added, updated in (
            (claims, PVC_ADD, PVC_UPDATE),
            (volumes, PV_ADD, PV_UPDATE),
            (classes, STORAGE_CLASS_ADD, STORAGE_CLASS_UPDATE),
        ):
            informer.add_event_handler(self._mover(added, updated))

    def _mover(self, added: str, updated: str) -> ResourceEventHandlerFuncs:
        """Handlers that move the waiting pods on an object added or updated (not on a delete)."""

        def on_add(obj: Object) -> None:
            self._move(added)

        def on_update(old: Object, new: Object) -> None:
            self._move(updated)

        return ResourceEventHandlerFuncs(on_add, on_update, None)

    def _responsible_for(self, pod: Obj) -> bool:
        return (_spec(pod).get("schedulerName") or DEFAULT_SCHEDULER_NAME) == self.scheduler_name

    def _pending(self, pod: Obj) -> bool:
        """Unassigned, ours, and not being deleted: a pod for the queue."""
        return (
            not assigned(pod) and self._responsible_for(pod) and not object_meta(pod).get("deletionTimestamp")
        )

    def _wake(self) -> None:
        self._wakeup.set()

    def _on_pod_add(self, pod: Object) -> None:
        key = object_key(pod)
        if assigned(pod):
            self.cache.assumed.pop(key, None)  # the binding is confirmed: the informer's copy takes over
            if not terminal(pod):
                self.cache.pods[key] = pod
        elif self._pending(pod) and key not in self.cache.assumed:
            self.queue.add(pod, self.clock.now())
            self._wake()

    def _on_pod_update(self, old: Object, new: Object) -> None:
        key = object_key(new)
        if assigned(new):
            self.cache.assumed.pop(key, None)
            self.nominator.pop(key, None)  # bound: it waits for no room any more
            self.queue.delete(new)  # bound by someone else meanwhile
            if terminal(new):
                if self.cache.pods.pop(key, None) is not None:
                    self._move(ASSIGNED_POD_DELETE)  # a finished pod frees its room
            else:
                self.cache.pods[key] = new
        elif self._pending(new):
            if key in self.cache.assumed:
                return  # an older state than the binding we already made (skipPodUpdate)
            # A status-only change (our own PodScheduled=False) leaves an unschedulable pod parked.
            if pod_updated(old, new) or key not in self.queue.unschedulable():
                self.queue.update(new, self.clock.now())
                self._wake()
        else:
            self.queue.delete(new)  # being deleted, or handed to another scheduler
            self.nominator.pop(key, None)

    def _on_pod_delete(self, obj: Object | DeletedFinalStateUnknown) -> None:
        pod = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if pod is None:
            return
        key = object_key(pod)
        self.queue.delete(pod)
        self.nominator.pop(key, None)
        freed = self.cache.pods.pop(key, None) is not None
        freed = self.cache.assumed.pop(key, None) is not None or freed
        if freed:
            self._move(ASSIGNED_POD_DELETE)

    def _on_node_add(self, node: Object) -> None:
        self.cache.nodes[_node_name(node)] = node
        self._move(NODE_ADD)

    def _on_node_update(self, old: Object, new: Object) -> None:
        self.cache.nodes[_node_name(new)] = new
        if node_scheduling_properties_changed(old, new):
            self._move(NODE_UPDATE)

    def _on_node_delete(self, obj: Object | DeletedFinalStateUnknown) -> None:
        node = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if node is not None:
            self.cache.nodes.pop(_node_name(node), None)

    def _move(self, event: str) -> None:
        """``MoveAllToActiveOrBackoffQueue``: a cluster event may help the pods no node could take."""
        self.queue.move_all_to_active_or_backoff(event, self.clock.now())
        self._wake()


__all__ = [
    "DEFAULT_SCHEDULER_NAME",
    "EventHandlers",
    "assigned",
    "node_scheduling_properties_changed",
    "pod_updated",
    "terminal",
]
