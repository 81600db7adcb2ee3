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

When no node fits, the **PostFilter** plugins run: DefaultPreemption (``plugins.default_preemption``)
looks for a node where evicting pods of lower priority would make room. If it finds one, the
scheduler *preempts*: it marks each victim with the condition ``DisruptionTarget`` (reason
``PreemptionByScheduler``) through ``pods/status``, deletes it, and records a ``Normal`` Event
``Preempted`` on it ("Preempted by pod <uid> on node <node>"); the preemptor's
``status.nominatedNodeName`` names the node (``prepareCandidate`` in upstream's
``pkg/scheduler/framework/preemption/preemption.go``). Until the preemptor is bound, the room it is
waiting for counts as taken for pods of lower priority (the *nominator*).

Either way the attempt failed: the scheduler records a ``Warning`` Event ``FailedScheduling`` (action
``Scheduling``) with upstream's message ("0/3 nodes are available: 3 Insufficient cpu. preemption:
0/3 nodes are available: 3 No preemption victims found for incoming pod."), sets the pod's condition
``PodScheduled`` to ``False`` (reason ``Unschedulable``) through ``pods/status``, and parks the pod as
unschedulable until a cluster event (a victim deleted) may help. That is what ``kubectl describe pod``
shows for a Pending pod. A bound pod gets a ``Normal`` Event ``Scheduled`` (action ``Binding``):
"Successfully assigned default/web to node-1".

**On the trace**, each ``scheduler.decision`` names the pod's resourceVersion the attempt saw
(``revision``: its cause, the watch event that delivered the pod) and the Audit-IDs of the requests
it leads to (``requests``: the scheduler picks each id and sends it as the request's ``Audit-ID``
header): the binding, or a preemption's writes (each victim's condition and deletion, the
preemptor's nomination), which ``preemption`` describes (candidates, victims, the nominated node).

Upstream writes these as methods of the ``Scheduler`` struct in a file of their own; here they are the
methods of ``ScheduleOne``, a base class of ``Scheduler``.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

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
from controlplane.components.scheduler.framework import (
    Decision,
    Obj,
    PostFilterResult,
    Profile,
    Snapshot,
    pod_priority,
    schedule,
)
from controlplane.components.scheduler.internal_cache import Cache
from controlplane.components.scheduler.messages import truncate_message
from controlplane.components.scheduler.plugins.default_preemption import (
    DISRUPTION_TARGET,
    REASON_PREEMPTION_BY_SCHEDULER,
)
from controlplane.components.scheduler.plugins.volume_binding import pre_bind
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
#: ``util.DeletePod``: a plain delete, the victim's own grace period.
DELETE_OPTIONS: Final = {"kind": "DeleteOptions", "apiVersion": "v1"}
#: The Event on each victim of a preemption (``prepareCandidate``).
REASON_PREEMPTED = "Preempted"
ACTION_PREEMPTING = "Preempting"


@dataclass(frozen=True)
class PreemptionWrites:
    """The Audit-IDs a preemption's requests will carry, chosen before the trace names them."""

    #: The preemptor's status patch (``nominatedNodeName``).
    nomination: str
    #: Per victim: its DisruptionTarget condition patch, then its deletion.
    victims: tuple[tuple[Obj, str, str], ...]

    @classmethod
    def plan(cls, result: PostFilterResult) -> PreemptionWrites:
        return cls(new_audit_id(), tuple((v, new_audit_id(), new_audit_id()) for v in result.victims))

    def ids(self) -> list[str]:
        return [i for _, patch, delete in self.victims for i in (patch, delete)] + [self.nomination]


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
    #: The nominator (``PodNominator``): pods that preempted, by key, with the node they wait for.
    nominator: dict[str, tuple[str, Obj]]
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
            nominated=self._nominated_pods(),
        )
        if snapshot.node_infos:
            # ``nextStartNodeIndex``: the next attempt starts where this one stopped (round-robin).
            self._next_start_node = (self._next_start_node + decision.processed) % len(snapshot.node_infos)
        if decision.chosen is None:
            await self._unschedulable(info, cycle, snapshot, decision)
            return
        # The binding's Audit-ID is chosen now, so the decision can name the request it leads to.
        binding_id = new_audit_id()
        self._trace(decision, key, info, [binding_id])
        self.nominator.pop(key, None)  # placed: it no longer waits for room

        node = decision.chosen
        # Upstream deep-copies the pod to assume it (``assumedPod := podInfo.Pod.DeepCopy()``). Only
        # ``spec.nodeName`` differs, and the informer's pods are frozen (``client.sharing``): a new
        # top level and a new ``spec`` are copy enough, and every other part is shared as it is.
        assumed_pod = dict(pod)
        assumed_pod["spec"] = {**(pod.get("spec") or {}), "nodeName": node}
        self.cache.assumed[key] = assumed_pod  # reserve: the next attempt sees the room taken
        # The binding cycle runs beside the next scheduling cycles, as upstream's goroutine does:
        # the assumed pod already holds its room, so the loop need not wait for the API server.
        task = asyncio.create_task(self._binding_cycle(info, node, binding_id), name=f"bind {key}")
        self._binding_tasks.add(task)
        task.add_done_callback(self._binding_tasks.discard)

    async def _unschedulable(
        self, info: QueuedPodInfo, cycle: int, snapshot: Snapshot, decision: Decision
    ) -> None:
        """No node fits: run the PostFilter plugins (preemption), then ``handleSchedulingFailure``."""
        pod, key = info.pod, info.key
        now = self.clock.now()
        preemptor = self._preemptor(pod)
        result: PostFilterResult | None = None
        for plugin in self.profile.post_filters:
            # ``RunPostFilterPlugins``: the first plugin that nominates a node ends the run.
            result = plugin.post_filter(preemptor, snapshot, self.profile.filters, decision.statuses, now=now)
            if result.nominated:
                break
        message = decision.message() or ""
        if result is not None and result.message:
            message = f"{message} {result.message}"  # ``FitError.Error`` appends ``PostFilterMsg``
        writes = PreemptionWrites.plan(result) if result is not None and result.nominated else None
        self._trace(decision, key, info, writes.ids() if writes else [], message=message, preemption=result)
        nominated_node = result.nominated_node if result is not None else None
        if nominated_node:
            self.nominator[key] = (nominated_node, pod)
        elif nominated_node == "":
            self.nominator.pop(key, None)
        self.queue.add_unschedulable(info, now, pod_scheduling_cycle=cycle)
        if writes is not None and nominated_node:
            await self._preempt(pod, nominated_node, writes.victims)
            await self._clear_lower_priority_nominations(pod, nominated_node)
        note = truncate_message(message)
        self._record(pod, EVENT_TYPE_WARNING, REASON_FAILED_SCHEDULING, ACTION_SCHEDULING, note)
        await self._set_unschedulable_condition(
            pod, message, nominated_node=nominated_node, audit_id=writes.nomination if writes else None
        )

    async def _preempt(self, preemptor: Obj, node: str, victims: Sequence[tuple[Obj, str, str]]) -> None:
        """``prepareCandidate``: mark each victim a disruption target, delete it, and say so in an Event.

        A victim already gone is skipped: its room is free, which is all the preemptor needs.
        """
        uid = object_meta(preemptor).get("uid")
        for victim, patch_id, delete_id in victims:
            condition = {
                "type": DISRUPTION_TARGET,
                "status": "True",
                "lastProbeTime": None,
                "lastTransitionTime": format_time(self.clock.now()),
                "reason": REASON_PREEMPTION_BY_SCHEDULER,
                "message": f"{self.scheduler_name}: preempting to accommodate a higher priority pod",
            }
            client = self._pods_client(victim)
            name = str(object_meta(victim).get("name"))
            try:
                await self._patch_conditions(victim, condition, patch_id)
                await client.client.request_json(
                    "DELETE", client.path(name), body=DELETE_OPTIONS, headers={AUDIT_ID_HEADER: delete_id}
                )
            except NotFound:
                continue
            except (APIError, TransportError) as error:
                logger.warning("cannot preempt %s: %s", object_key(victim), error)
                continue
            self._record_about(
                victim,
                preemptor,
                EVENT_TYPE_NORMAL,
                REASON_PREEMPTED,
                ACTION_PREEMPTING,
                f"Preempted by pod {uid} on node {node}",
            )

    async def _clear_lower_priority_nominations(self, preemptor: Obj, node: str) -> None:
        """``getLowerPriorityNominatedPods``: pods of lower priority nominated to the same node lose
        their nomination (the room is the preemptor's now); they will be tried again from scratch."""
        priority = pod_priority(preemptor)
        for key, (nominated_node, waiting) in list(self.nominator.items()):
            if nominated_node != node or pod_priority(waiting) >= priority:
                continue
            del self.nominator[key]
            try:
                await self._pods_client(waiting).patch(
                    str(object_meta(waiting).get("name")),
                    {"status": {"nominatedNodeName": None}},
                    patch_type=PatchType.MERGE,
                    subresource="status",
                )
            except NotFound:
                continue  # gone meanwhile: nothing to clear
            except (APIError, TransportError) as error:
                logger.warning("cannot clear the nomination of %s: %s", key, error)

    async def _patch_conditions(self, pod: Obj, condition: Obj, audit_id: str) -> None:
        """Add or replace one condition of the pod's status (``PatchPodStatus``), as a merge patch
        carrying the whole list (a JSON merge patch replaces lists)."""
        current = self._latest(pod)
        existing: list[Obj] = (current.get("status") or {}).get("conditions") or []
        conditions = [c for c in existing if c.get("type") != condition["type"]]
        await self._pods_client(pod).client.request_json(
            "PATCH",
            self._pods_client(pod).path(str(object_meta(pod).get("name")), "status"),
            body={"status": {"conditions": [*conditions, condition]}},
            content_type=str(PatchType.MERGE),
            headers={AUDIT_ID_HEADER: audit_id},
        )

    def _latest(self, pod: Obj) -> Obj:
        """The informer's newest copy of the pod (its conditions may have changed since it was queued)."""
        if self._pod_informer is not None:
            return self._pod_informer.indexer.get_by_key(object_key(pod)) or pod
        return pod

    def _preemptor(self, pod: Obj) -> Obj:
        """The pod as preemption must see it: with the ``nominatedNodeName`` it already has.

        The queue keeps the pod as it was queued (a status-only change leaves a parked pod alone),
        and the informer may not have delivered the scheduler's own nomination yet; the nominator
        knows it either way.
        """
        latest = self._latest(pod)
        status: Obj = latest.get("status") or {}
        nominated = self.nominator.get(object_key(pod))
        if nominated is None or status.get("nominatedNodeName"):
            return latest
        return {**latest, "status": {**status, "nominatedNodeName": nominated[0]}}

    def _nominated_pods(self) -> dict[str, list[Obj]]:
        """The nominator by node: the pods waiting for the room their preemption freed there."""
        by_node: dict[str, list[Obj]] = {}
        for node, pod in self.nominator.values():
            by_node.setdefault(node, []).append(pod)
        return by_node

    async def _binding_cycle(self, info: QueuedPodInfo, node: str, audit_id: str | None = None) -> None:
        """Bind the assumed pod; on failure forget the assumption (and retry unless it is moot)."""
        pod, key = info.pod, info.key
        try:
            await pre_bind(self.client, self.profile.filters, pod, node)  # VolumeBinding's PreBind
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

    async def _set_unschedulable_condition(
        self, pod: Obj, message: str, *, nominated_node: str | None = None, audit_id: str | None = None
    ) -> None:
        """``updatePod``: PodScheduled=False, reason Unschedulable, through ``pods/status``; and
        ``status.nominatedNodeName`` when a preemption set it (a node's name) or cleared it ("").

        Written only when something changes (``podutil.UpdatePodCondition``); the merge patch carries
        the whole condition list, since a JSON merge patch replaces lists.
        """
        current = self._latest(pod)
        status: Obj = current.get("status") or {}
        conditions: list[Obj] = list(status.get("conditions") or [])
        old = next((c for c in conditions if c.get("type") == POD_SCHEDULED), None)
        nomination_changes = nominated_node is not None and nominated_node != (
            status.get("nominatedNodeName") or ""
        )
        generation = object_meta(current).get("generation")
        observed = generation if isinstance(generation, int) and generation else None
        # UpdatePodCondition compares the observedGeneration too: after a spec change (generation 2)
        # the same verdict is written again, so that `kubectl wait --for=condition=PodScheduled=false`,
        # which waits while a condition's observedGeneration is behind the pod's generation, ends.
        if (
            old is not None
            and old.get("status") == "False"
            and old.get("reason") == POD_REASON_UNSCHEDULABLE
            and old.get("message") == message
            and old.get("observedGeneration") == observed
            and not nomination_changes
        ):
            return
        transition = (
            old.get("lastTransitionTime")
            if old is not None and old.get("status") == "False"
            else format_time(self.clock.now())
        )
        condition: dict[str, Any] = {"type": POD_SCHEDULED}
        if observed is not None:  # CalculatePodConditionObservedGeneration
            condition["observedGeneration"] = observed
        condition |= {
            "status": "False",
            "lastProbeTime": None,
            "lastTransitionTime": transition,
            "reason": POD_REASON_UNSCHEDULABLE,
            "message": message,
        }
        conditions = [c for c in conditions if c.get("type") != POD_SCHEDULED] + [condition]
        patch: dict[str, Any] = {"conditions": conditions}
        if nomination_changes:
            patch["nominatedNodeName"] = nominated_node or None  # null removes it
        client = self._pods_client(pod)
        try:
            await client.client.request_json(
                "PATCH",
                client.path(str(object_meta(pod).get("name")), "status"),
                body={"status": patch},
                content_type=str(PatchType.MERGE),
                headers={AUDIT_ID_HEADER: audit_id} if audit_id else None,
            )
        except NotFound:
            return  # deleted meanwhile; the informer will tell the queue
        except (APIError, TransportError) as error:
            logger.warning("cannot set PodScheduled=False on %s: %s", object_key(pod), error)

    def _record(self, pod: Obj, type: str, reason: str, action: str, note: str) -> None:
        """An ``events.k8s.io/v1`` Event about ``pod`` (``fwk.EventRecorder().Eventf(pod, nil, ...)``)."""
        self._record_about(pod, None, type, reason, action, note)

    def _record_about(
        self, pod: Obj, related: Obj | None, type: str, reason: str, action: str, note: str
    ) -> None:
        """An Event about ``pod``, naming ``related`` (a victim's Event names its preemptor)."""
        if self._recorder is not None:
            self._recorder.eventf(pod, related, type, reason, action, note)

    def _trace(
        self,
        decision: Decision,
        key: str,
        info: QueuedPodInfo,
        requests: list[str],
        *,
        message: str | None = None,
        preemption: PostFilterResult | None = None,
    ) -> None:
        """``scheduler.decision``, naming the pod's resourceVersion this attempt saw (its cause: the
        watch event that delivered it) and the requests it leads to (its effects: the binding, or a
        preemption's writes)."""
        if not self.trace.enabled:
            return
        fields: dict[str, Any] = decision.to_trace()
        if message is not None:
            fields["message"] = message
        if preemption is not None:
            fields["preemption"] = preemption.to_trace()
        fields["pod"] = key
        namespace, _, fields["name"] = key.rpartition("/")
        if namespace:
            fields["namespace"] = namespace
        if decision.chosen is not None:
            fields["node"] = decision.chosen
        fields["attempts"] = info.attempts
        fields["scheduler"] = self.scheduler_name
        fields["revision"] = _resource_version(info.pod)
        fields["requests"] = requests
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
    "REASON_PREEMPTED",
    "REASON_SCHEDULED",
    "PreemptionWrites",
    "ScheduleOne",
]
