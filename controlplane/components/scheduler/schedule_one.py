"""One scheduling cycle and its binding cycle: how a pending pod gets a node.

kube-scheduler's loop (upstream ``pkg/scheduler/schedule_one.go``, ``ScheduleOne``) takes one pod at
a time:

1. **pop** the next pod from the queue (highest priority, then oldest). When none is ready, the loop
   waits for an event, or on the cluster clock for the first backoff to end;
2. **filter** the nodes of the cache's current snapshot: which can run the pod at all;
3. **score** the nodes that can, and pick the best (``framework.schedule``). The whole ``Decision``,
   every node's verdict per plugin, goes to the trace as ``scheduler.decision``;
4. **reserve / assume**: the pod is written into the scheduler's cache on the chosen node *before*
   the API server is told, so the next pod popped a millisecond later already sees that room taken.
   Without it, pods created together would all land on the same node until the informer caught up;
5. **bind**: ``POST pods/<name>/binding`` with a ``Binding`` naming the node, in a task of its own
   (upstream's binding cycle goroutine) while the loop goes on with the next pod. The API server sets
   ``spec.nodeName``; the kubelet of that node, watching for its pods, takes it from there. If the
   binding fails with ``Conflict`` (someone else bound it) or ``NotFound`` (the pod is gone), the
   pod is dropped; the informer tells the rest. Any other failure forgets the assumption and sends
   the pod back to the queue, to be retried after a backoff.

When no node fits, the scheduler records a ``Warning`` Event ``FailedScheduling`` (action
``Scheduling``) with upstream's message ("0/3 nodes are available: 3 Insufficient cpu."), sets the
pod's condition ``PodScheduled`` to ``False`` (reason ``Unschedulable``) through ``pods/status``, and
parks the pod as unschedulable until a cluster event may help. That is what ``kubectl describe pod``
shows for a Pending pod. A bound pod gets a ``Normal`` Event ``Scheduled`` (action ``Binding``):
"Successfully assigned default/web to node-1".

**On the trace**, each ``scheduler.decision`` names the pod's resourceVersion the attempt saw
(``revision``: its cause, the watch event that delivered the pod) and the Audit-ID of the binding it
leads to (``requests``: the scheduler picks the id and sends it as the binding's ``Audit-ID`` header).

Upstream writes these as methods of the ``Scheduler`` struct in a file of their own; here they are the
methods of ``ScheduleOne``, a base class of ``Scheduler``.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from controlplane.api.meta import format_time, object_key, object_meta
from controlplane.client.errors import APIError, Conflict, NotFound, TransportError
from controlplane.client.events import EventRecorder
from controlplane.client.informer import SharedIndexInformer
from controlplane.client.record import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING
from controlplane.client.rest import (
    AUDIT_ID_HEADER,
    PatchType,
    ResourceClient,
    RESTClient,
    new_audit_id,
)
from controlplane.components.scheduler.framework import Decision, Obj, Profile, schedule
from controlplane.components.scheduler.internal_cache import Cache
from controlplane.components.scheduler.messages import truncate_message
from controlplane.components.scheduler.queue import (
    ASSIGNED_POD_DELETE,
    QueuedPodInfo,
    SchedulingQueue,
)
from controlplane.trace import TraceSink, nodes

if TYPE_CHECKING:
    from controlplane.clock import Clock

logger = logging.getLogger(__name__)

#: Reasons, actions and condition values upstream writes (``pkg/scheduler/schedule_one.go``, core/v1).
REASON_FAILED_SCHEDULING = "FailedScheduling"
REASON_SCHEDULED = "Scheduled"
ACTION_SCHEDULING = "Scheduling"
ACTION_BINDING = "Binding"
POD_REASON_UNSCHEDULABLE = "Unschedulable"
POD_SCHEDULED = "PodScheduled"


class ScheduleOne:
    """The scheduling cycle (``schedule_one``) and the binding cycle of one popped pod."""

    # What the cycles use of the scheduler (``Scheduler.__init__`` and ``start`` set them).
    scheduler_name: str
    cluster: str
    rng: random.Random
    trace: TraceSink
    profile: Profile
    queue: SchedulingQueue
    cache: Cache
    #: ``nextStartNodeIndex``: where the next attempt starts looking (round-robin over the nodes).
    _next_start_node: int
    #: Binding cycles in flight (each binds one assumed pod while the loop goes on).
    _binding_tasks: set[asyncio.Task[None]]
    _pod_informer: SharedIndexInformer | None
    _recorder: EventRecorder | None

    if TYPE_CHECKING:

        @property
        def clock(self) -> Clock: ...

        @property
        def client(self) -> RESTClient: ...

        def _wake(self) -> None: ...

        def _move(self, event: str) -> None: ...

    async def schedule_one(self, info: QueuedPodInfo, cycle: int) -> None:
        """One scheduling cycle for a popped pod: filter, score, assume, bind (or record the failure)."""
        pod = info.pod
        key = info.key
        snapshot = self.cache.update_snapshot()
        decision = schedule(
            pod,
            snapshot,
            self.profile,
            rng=self.rng,
            start=self._next_start_node,
            explain=self.trace.enabled,  # every node's verdicts and scores only if the trace is read
        )
        if snapshot.node_infos:
            # ``nextStartNodeIndex``: the next attempt starts where this one stopped (round-robin).
            self._next_start_node = (self._next_start_node + decision.processed) % len(snapshot.node_infos)
        # The binding's Audit-ID is chosen now, so the decision can name the request it leads to.
        binding_id = new_audit_id() if decision.chosen is not None else None
        self._trace(decision, key, info, binding_id)
        if decision.chosen is None:
            message = decision.message() or ""
            self.queue.add_unschedulable(info, self.clock.now(), pod_scheduling_cycle=cycle)
            note = truncate_message(message)
            self._record(pod, EVENT_TYPE_WARNING, REASON_FAILED_SCHEDULING, ACTION_SCHEDULING, note)
            await self._set_unschedulable_condition(pod, message)
            return

        node = decision.chosen
        # Upstream deep-copies the pod to assume it (``assumedPod := podInfo.Pod.DeepCopy()``). Only
        # ``spec.nodeName`` differs, and the informer's pods are frozen (``client.sharing``): a new
        # top level and a new ``spec`` are copy enough, and every other part is shared as it is.
        assumed_pod = dict(pod)
        assumed_pod["spec"] = {**(pod.get("spec") or {}), "nodeName": node}
        self.cache.assumed[key] = assumed_pod  # reserve: the next attempt sees the room taken
        # The binding cycle runs beside the next scheduling cycles, as upstream's goroutine does:
        # the assumed pod already holds its room, so the loop need not wait for the API server.
        assert binding_id is not None
        task = asyncio.create_task(self._binding_cycle(info, node, binding_id), name=f"bind {key}")
        self._binding_tasks.add(task)
        task.add_done_callback(self._binding_tasks.discard)

    async def _binding_cycle(self, info: QueuedPodInfo, node: str, audit_id: str | None = None) -> None:
        """Bind the assumed pod; on failure forget the assumption (and retry unless it is moot)."""
        pod, key = info.pod, info.key
        try:
            await self._bind(pod, node, audit_id)
        except (Conflict, NotFound) as error:
            # Bound by someone else, or deleted: nothing left to do; the informer has the truth.
            logger.info("binding %s to %s: %s; dropping the pod", key, node, error)
            self.cache.assumed.pop(key, None)
            self.queue.done(key)
            self._move(ASSIGNED_POD_DELETE)  # the room it held is free again
            return
        except (APIError, TransportError) as error:
            logger.warning("binding %s to %s failed: %s; retrying after backoff", key, node, error)
            self.cache.assumed.pop(key, None)
            # A cycle before any move request sends the pod to backoffQ (upstream retries errors so).
            self.queue.add_unschedulable(info, self.clock.now(), pod_scheduling_cycle=-1)
            self._wake()
            return
        self.queue.done(key)
        namespace = object_meta(pod).get("namespace") or "default"
        self._record(
            pod,
            EVENT_TYPE_NORMAL,
            REASON_SCHEDULED,
            ACTION_BINDING,
            f"Successfully assigned {namespace}/{object_meta(pod).get('name')} to {node}",
        )

    def _pods_client(self, pod: Obj) -> ResourceClient:
        return self.client.resource("", "v1", "pods", object_meta(pod).get("namespace") or "default")

    async def _bind(self, pod: Obj, node: str, audit_id: str | None = None) -> None:
        """``DefaultBinder``: POST a Binding to the pod's ``binding`` subresource.

        ``audit_id``, when given, is sent as the request's ``Audit-ID`` (the one the trace's
        ``scheduler.decision`` names in ``requests``).
        """
        meta = object_meta(pod)
        binding: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": meta.get("name"), "namespace": meta.get("namespace") or "default"},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        if meta.get("uid"):
            binding["metadata"]["uid"] = meta["uid"]
        headers = {AUDIT_ID_HEADER: audit_id} if audit_id else None
        await self._pods_client(pod).request(
            "POST", str(meta.get("name")), "binding", body=binding, headers=headers
        )

    async def _set_unschedulable_condition(self, pod: Obj, message: str) -> None:
        """``updatePod``: PodScheduled=False, reason Unschedulable, through ``pods/status``.

        Written only when it changes (``podutil.UpdatePodCondition``); the merge patch carries the whole
        condition list, since a JSON merge patch replaces lists.
        """
        current: Obj = pod
        if self._pod_informer is not None:
            current = self._pod_informer.indexer.get_by_key(object_key(pod)) or pod
        conditions: list[Obj] = list((current.get("status") or {}).get("conditions") or [])
        old = next((c for c in conditions if c.get("type") == POD_SCHEDULED), None)
        if (
            old is not None
            and old.get("status") == "False"
            and old.get("reason") == POD_REASON_UNSCHEDULABLE
            and old.get("message") == message
        ):
            return
        transition = (
            old.get("lastTransitionTime")
            if old is not None and old.get("status") == "False"
            else format_time(self.clock.now())
        )
        condition = {
            "type": POD_SCHEDULED,
            "status": "False",
            "lastProbeTime": None,
            "lastTransitionTime": transition,
            "reason": POD_REASON_UNSCHEDULABLE,
            "message": message,
        }
        conditions = [c for c in conditions if c.get("type") != POD_SCHEDULED] + [condition]
        try:
            await self._pods_client(pod).patch(
                str(object_meta(pod).get("name")),
                {"status": {"conditions": conditions}},
                patch_type=PatchType.MERGE,
                subresource="status",
            )
        except NotFound:
            return  # deleted meanwhile; the informer will tell the queue
        except (APIError, TransportError) as error:
            logger.warning("cannot set PodScheduled=False on %s: %s", object_key(pod), error)

    def _record(self, pod: Obj, type: str, reason: str, action: str, note: str) -> None:
        """An ``events.k8s.io/v1`` Event about ``pod`` (``fwk.EventRecorder().Eventf(pod, nil, ...)``)."""
        if self._recorder is not None:
            self._recorder.eventf(pod, None, type, reason, action, note)

    def _trace(
        self, decision: Decision, key: str, info: QueuedPodInfo, binding_id: str | None = None
    ) -> None:
        """``scheduler.decision``, naming the pod's resourceVersion this attempt saw (its cause: the
        watch event that delivered it) and the binding request it leads to (its effect)."""
        if not self.trace.enabled:
            return
        fields: dict[str, Any] = decision.to_trace()
        fields["pod"] = key
        namespace, _, fields["name"] = key.rpartition("/")
        if namespace:
            fields["namespace"] = namespace
        if decision.chosen is not None:
            fields["node"] = decision.chosen
        fields["attempts"] = info.attempts
        fields["scheduler"] = self.scheduler_name
        fields["revision"] = _resource_version(info.pod)
        fields["requests"] = [binding_id] if binding_id else []
        extra: Mapping[str, Any] = {"from": nodes.SCHEDULER, "cluster": self.cluster}
        self.trace.emit("scheduler.decision", **fields, **extra)


def _resource_version(obj: Obj) -> int | None:
    value = object_meta(obj).get("resourceVersion")
    return int(value) if isinstance(value, str) and value.isdigit() else None


__all__ = [
    "ACTION_BINDING",
    "ACTION_SCHEDULING",
    "POD_REASON_UNSCHEDULABLE",
    "POD_SCHEDULED",
    "REASON_FAILED_SCHEDULING",
    "REASON_SCHEDULED",
    "ScheduleOne",
]
