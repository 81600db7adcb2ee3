"""The scheduler process: watches the cluster, and binds every pending pod to a node.

The pure core (``framework``, ``plugins``, ``queue``, ``messages``) decides; this module connects it
to the API server, the way kube-scheduler's ``pkg/scheduler/scheduler.go``, ``eventhandlers.go`` and
``schedule_one.go`` do. Everything it knows comes from two **shared informers** (``client.informer``):

- **nodes**: the candidates;
- **pods**, all of them. A pod with ``spec.nodeName`` set is *assigned*: it takes up room on its node
  (the scheduler's *cache*, from which each attempt's ``Snapshot`` is built). A pod without one, for
  this scheduler (``spec.schedulerName``, ``default-scheduler`` unless the pod says otherwise) and not
  being deleted, is *pending*: it goes into the scheduling ``queue``.

Cluster events move pods that no node could take back into play (``queue``): a node added or changed
(more room, a taint removed), an assigned pod deleted (room freed).

**The scheduling cycle** (``scheduleOne``), one pod at a time, in a loop:

1. **pop** the next pod from the queue (highest priority, then oldest). When none is ready, wait for
   an event, or on the cluster clock for the first backoff to end;
2. **filter** the nodes of the current snapshot: which can run the pod at all;
3. **score** the nodes that can, and pick the best (``framework.schedule``). The whole ``Decision``,
   every node's verdict per plugin, goes to the trace as ``scheduler.decision``;
4. **reserve / assume**: the pod is written into the scheduler's cache on the chosen node *before*
   the API server is told, so the next pod popped a millisecond later already sees that room taken
   (upstream's assume cache). Without it, pods created together would all land on the same node until
   the informer caught up;
5. **bind**: ``POST pods/<name>/binding`` with a ``Binding`` naming the node, in a task of its own
   (upstream's binding cycle goroutine) while the loop goes on with the next pod. The API server sets
   ``spec.nodeName``; the kubelet of that node, watching for its pods, takes it from there. If the
   binding fails with ``Conflict`` (someone else bound it) or ``NotFound`` (the pod is gone), the
   pod is dropped; the informer tells the rest.

When no node fits, the scheduler records a ``Warning`` Event ``FailedScheduling`` (action
``Scheduling``) with upstream's message ("0/3 nodes are available: 3 Insufficient cpu."), sets the
pod's condition ``PodScheduled`` to ``False`` (reason ``Unschedulable``) through ``pods/status``, and
parks the pod as unschedulable until a cluster event may help. That is what ``kubectl describe pod``
shows for a Pending pod. A bound pod gets a ``Normal`` Event ``Scheduled`` (action ``Binding``):
"Successfully assigned default/web to node-1".

**Events** go through ``events.k8s.io/v1``, as kube-scheduler's do (``client.events``, client-go's
newer event library, not the legacy ``record`` the kubelet and controller manager use): with an
``eventTime``, ``reportingController: default-scheduler`` and ``reportingInstance:
default-scheduler-<hostname>``; a failure repeated on an unchanged pod becomes a ``series`` on one
Event rather than a new Event each time.

**Leader election** (``--leader-elect``, on by default upstream and in the lab's clusters): with
``leader_election`` set, the scheduler stands for election on the Lease ``kube-system/kube-scheduler``
(``leaderelection.run_leader_elected``, the loop the controller manager runs too). Every replica runs
its informers (a standby's cache is warm when it takes over) but only the leader runs the loop; a
stopped leader releases the Lease so a standby takes over at once, a crashed one is replaced once the
Lease expires (15 s upstream). The trace shows it as ``component.state`` (started leading, stopped
leading, new leader).

**On the trace**, each ``scheduler.decision`` names the pod's resourceVersion the attempt saw
(``revision``: its cause, the watch event that delivered the pod) and the Audit-ID of the binding it
leads to (``requests``: the scheduler picks the id and sends it as the binding's ``Audit-ID`` header).

Not modelled: preemption (PostFilter), permit and pre-bind plugins,
the expiry of assumed pods whose binding never shows up, queueing hints, several profiles.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Self

from controlplane.api.meta import Object, format_time, object_key, object_meta
from controlplane.client.cache import DeletedFinalStateUnknown
from controlplane.client.errors import APIError, Conflict, NotFound, TransportError
from controlplane.client.events import EventBroadcaster, EventRecorder, EventSinkImpl
from controlplane.client.informer import (
    ResourceEventHandlerFuncs,
    SharedIndexInformer,
    SharedInformerFactory,
    strip_managed_fields,
)
from controlplane.client.leaderelection import (
    LeaderCallbacks,
    LeaderElectionConfig,
    run_leader_elected,
)
from controlplane.client.record import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING
from controlplane.client.rest import (
    AUDIT_ID_HEADER,
    ClientLease,
    ClientOrFactory,
    PatchType,
    ResourceClient,
    RESTClient,
    new_audit_id,
)
from controlplane.clock import Clock
from controlplane.components.scheduler.framework import (
    Decision,
    NodeInfo,
    Obj,
    Profile,
    Snapshot,
    schedule,
)
from controlplane.components.scheduler.messages import truncate_message
from controlplane.components.scheduler.plugins import default_profile
from controlplane.components.scheduler.queue import (
    ASSIGNED_POD_DELETE,
    NODE_ADD,
    NODE_UPDATE,
    QueuedPodInfo,
    SchedulingQueue,
)
from controlplane.trace import NULL_SINK, TraceSink, nodes

logger = logging.getLogger(__name__)

DEFAULT_SCHEDULER_NAME = "default-scheduler"

#: Reasons, actions and condition values upstream writes (``pkg/scheduler/schedule_one.go``, core/v1).
REASON_FAILED_SCHEDULING = "FailedScheduling"
REASON_SCHEDULED = "Scheduled"
ACTION_SCHEDULING = "Scheduling"
ACTION_BINDING = "Binding"
POD_REASON_UNSCHEDULABLE = "Unschedulable"
POD_SCHEDULED = "PodScheduled"

#: The component's name in its ``component.state`` trace events (its events come from ``nodes.SCHEDULER``).
COMPONENT = "scheduler"
#: kube-scheduler's Lease, in ``kube-system`` (``--leader-elect-resource-name``).
LEASE_NAME = "kube-scheduler"


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


class _ChangeTracking(dict[str, Obj]):
    """A dict of the scheduler's cache that notes, in ``changed``, every key set or removed."""

    def __init__(self, changed: set[str]) -> None:
        super().__init__()
        self._changed = changed

    def __setitem__(self, key: str, value: Obj) -> None:
        self._changed.add(key)
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        self._changed.add(key)
        super().__delitem__(key)

    def pop(self, key: str, *default: Any) -> Any:
        self._changed.add(key)
        return super().pop(key, *default)

    def update(self, *others: Any, **items: Obj) -> None:
        for key, value in dict(*others, **items).items():
            self[key] = value


class Scheduler:
    """A kube-scheduler: informers, the scheduling queue, the cache of assumed pods, and the loop.

    ``client`` is a ``RESTClient`` (the caller closes it) or a function making one (the scheduler
    makes it at ``start`` and closes it at ``stop``). ``clock`` is the cluster clock (the client's by
    default), ``rng`` breaks ties between equal nodes, ``trace`` receives ``scheduler.decision``.
    """

    def __init__(
        self,
        client: ClientOrFactory,
        *,
        scheduler_name: str = DEFAULT_SCHEDULER_NAME,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        trace: TraceSink = NULL_SINK,
        profile: Profile | None = None,
        cluster: str = "",
        leader_election: LeaderElectionConfig | None = None,
        hostname: str | None = None,
    ) -> None:
        self._lease = ClientLease(client)
        #: Events go through a client of their own, as kube-scheduler's ``createClients`` makes an
        #: ``eventClient``: the same identity and QPS settings, its own rate limiter, so a burst of
        #: Events never delays a binding (given one shared client, as tests do, that one is used).
        self._event_lease = ClientLease(client)
        #: With leader election, several replicas keep their caches warm and only the leader schedules.
        self.leader_election = leader_election
        #: Set while this replica schedules (at once without leader election, else while leading).
        self.leading = asyncio.Event()
        self.scheduler_name = scheduler_name
        #: Its Events' ``reportingInstance`` is ``<scheduler name>-<hostname>`` (the host's name if None).
        self.hostname = hostname
        self._clock = clock
        self.rng = rng if rng is not None else random.Random()
        self.trace = trace
        self.profile = profile if profile is not None else default_profile()
        self.cluster = cluster
        self.queue = SchedulingQueue()
        #: The cache: nodes by name, assigned pods by key, and pods assumed on a node but not yet seen
        #: bound by the informer.
        #: Each notes the keys set or removed since the last snapshot, which applies only those.
        self._changed_nodes: set[str] = set()
        self._changed_pods: set[str] = set()
        self.nodes: dict[str, Obj] = _ChangeTracking(self._changed_nodes)
        self.pods: dict[str, Obj] = _ChangeTracking(self._changed_pods)
        self.assumed: dict[str, Obj] = _ChangeTracking(self._changed_pods)
        #: The node infos the snapshot is made of, and where each pod in them is (node, the object).
        self._node_infos: dict[str, NodeInfo] = {}
        self._placed: dict[str, tuple[str, Obj]] = {}
        #: The snapshot over those infos, ordered by node name: kept until a node comes or goes.
        self._snapshot: Snapshot | None = None
        self._next_start_node = 0
        self._client: RESTClient | None = None
        self._factory: SharedInformerFactory | None = None
        self._pod_informer: SharedIndexInformer | None = None
        self._broadcaster: EventBroadcaster | None = None
        self._recorder: EventRecorder | None = None
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        #: Binding cycles in flight (each binds one assumed pod while the loop goes on).
        self._binding_tasks: set[asyncio.Task[None]] = set()

    # -- lifecycle ----------------------------------------------------------------------------------

    @property
    def clock(self) -> Clock:
        if self._clock is not None:
            return self._clock
        if self._client is None:
            raise RuntimeError("the scheduler has no clock before it starts")
        return self._client.clock

    @property
    def client(self) -> RESTClient:
        if self._client is None:
            raise RuntimeError("the scheduler is not started")
        return self._client

    @property
    def started(self) -> bool:
        return self._task is not None

    def is_leader(self) -> bool:
        return self.leading.is_set()

    async def start(self) -> None:
        """Start the informers, wait for their caches, then start scheduling."""
        if self._task is not None:
            return
        self._client = self._lease.open()
        clock = self.clock
        try:
            self._factory = SharedInformerFactory(
                self._client, clock=clock, rng=random.Random(self.rng.getrandbits(64))
            )
            node_informer = self._factory.informer_for("", "v1", "nodes")
            node_informer.add_event_handler(
                ResourceEventHandlerFuncs(self._on_node_add, self._on_node_update, self._on_node_delete)
            )
            self._pod_informer = self._factory.informer_for("", "v1", "pods")
            # As upstream's newPodInformer: no managedFields in the scheduler's pod cache.
            self._pod_informer.transform = strip_managed_fields
            self._pod_informer.add_event_handler(
                ResourceEventHandlerFuncs(self._on_pod_add, self._on_pod_update, self._on_pod_delete)
            )
            self._broadcaster = EventBroadcaster(
                EventSinkImpl(self._event_lease.open()),
                clock=clock,
                rng=random.Random(self.rng.getrandbits(64)),
            )
            self._recorder = self._broadcaster.new_recorder(self.scheduler_name, self.hostname)
            self._factory.start()
            await self._factory.wait_for_cache_sync()
            self._broadcaster.start()
        except BaseException:
            await self._shutdown()
            raise
        if self.leader_election is None:
            self._task = asyncio.create_task(self._lead(), name=f"{self.scheduler_name} loop")
        else:
            self._task = asyncio.create_task(
                run_leader_elected(
                    self._client,
                    self.leader_election,
                    LeaderCallbacks(self._lead),
                    clock=clock,
                    rng=random.Random(self.rng.getrandbits(64)),
                    component=COMPONENT,
                    trace=self.trace,
                    trace_fields={"from": nodes.SCHEDULER, "cluster": self.cluster},
                ),
                name=f"{self.scheduler_name} election",
            )

    async def _lead(self) -> None:
        """Schedule until cancelled (by ``stop`` or, with leader election, by losing the lease)."""
        self.leading.set()
        try:
            await self._run()
        finally:
            self.leading.clear()

    async def stop(self) -> None:
        """Stop the loop, the event writer and the informers; close the client if the scheduler made it."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        bindings, self._binding_tasks = self._binding_tasks, set()
        for binding in bindings:
            binding.cancel()
        await asyncio.gather(*bindings, return_exceptions=True)
        await self._shutdown()

    async def _shutdown(self) -> None:
        if self._broadcaster is not None:
            await self._broadcaster.shutdown()
            self._broadcaster = None
        await self._event_lease.close()
        if self._factory is not None:
            await self._factory.shutdown()
            self._factory = None
        await self._lease.close()
        self._client = None

    async def flush_events(self) -> None:
        """Wait until every Event recorded so far has been written (for tests and clean shutdowns)."""
        if self._broadcaster is not None:
            await self._broadcaster.flush()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    # -- informer events (eventhandlers.go) ----------------------------------------------------------

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
            self.assumed.pop(key, None)  # the binding is confirmed: the informer's copy takes over
            if not terminal(pod):
                self.pods[key] = pod
        elif self._pending(pod) and key not in self.assumed:
            self.queue.add(pod, self.clock.now())
            self._wake()

    def _on_pod_update(self, old: Object, new: Object) -> None:
        key = object_key(new)
        if assigned(new):
            self.assumed.pop(key, None)
            self.queue.delete(new)  # bound by someone else meanwhile
            if terminal(new):
                if self.pods.pop(key, None) is not None:
                    self._move(ASSIGNED_POD_DELETE)  # a finished pod frees its room
            else:
                self.pods[key] = new
        elif self._pending(new):
            if key in self.assumed:
                return  # an older state than the binding we already made (skipPodUpdate)
            # A status-only change (our own PodScheduled=False) leaves an unschedulable pod parked.
            if pod_updated(old, new) or key not in self.queue.unschedulable():
                self.queue.update(new, self.clock.now())
                self._wake()
        else:
            self.queue.delete(new)  # being deleted, or handed to another scheduler

    def _on_pod_delete(self, obj: Object | DeletedFinalStateUnknown) -> None:
        pod = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if pod is None:
            return
        key = object_key(pod)
        self.queue.delete(pod)
        freed = self.pods.pop(key, None) is not None
        freed = self.assumed.pop(key, None) is not None or freed
        if freed:
            self._move(ASSIGNED_POD_DELETE)

    def _on_node_add(self, node: Object) -> None:
        self.nodes[_node_name(node)] = node
        self._move(NODE_ADD)

    def _on_node_update(self, old: Object, new: Object) -> None:
        self.nodes[_node_name(new)] = new
        if node_scheduling_properties_changed(old, new):
            self._move(NODE_UPDATE)

    def _on_node_delete(self, obj: Object | DeletedFinalStateUnknown) -> None:
        node = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if node is not None:
            self.nodes.pop(_node_name(node), None)

    def _move(self, event: str) -> None:
        self.queue.move_all_to_active_or_backoff(event, self.clock.now())
        self._wake()

    # -- the loop -----------------------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        """The cache as one attempt sees it: every node, with its bound and assumed pods.

        Like upstream's cache (``UpdateSnapshot``), the node infos are kept between cycles and only
        what changed since the last one is applied: a node object replaced, a pod placed, moved or
        gone. Going over every pod again for each pod scheduled would cost pods x pods in all. The
        snapshot itself (the infos in name order) lasts until a node comes or goes.
        """
        infos = self._node_infos
        changed_nodes = [(name, self.nodes.get(name), infos.get(name)) for name in self._changed_nodes]
        self._changed_nodes.clear()
        if any(node is None or info is None for _, node, info in changed_nodes):
            self._rebuild()  # a node came or went (rare): place every pod again
            self._snapshot = None
        else:
            for _, node, info in changed_nodes:
                assert node is not None and info is not None
                info.set_node(node)
            for key in self._changed_pods:
                pod = self.pods.get(key)
                self._place(key, pod if pod is not None else self.assumed.get(key))
        self._changed_pods.clear()
        if self._snapshot is None:
            self._snapshot = Snapshot.of(infos.values())
        return self._snapshot

    def _rebuild(self) -> None:
        """Match the node infos to the node set, then place every bound and assumed pod."""
        infos = self._node_infos
        for name in [n for n in infos if n not in self.nodes]:
            for pod in infos.pop(name).pods:
                self._placed.pop(object_key(pod), None)
        for name, node in self.nodes.items():
            info = infos.get(name)
            if info is None:
                infos[name] = NodeInfo(node)
            else:
                info.set_node(node)
        wanted = dict(self.pods)
        for key, pod in self.assumed.items():
            wanted.setdefault(key, pod)
        for key in [k for k in self._placed if k not in wanted]:
            self._place(key, None)
        for key, pod in wanted.items():
            self._place(key, pod)

    def _place(self, key: str, pod: Obj | None) -> None:
        """Put the pod on its node's info (taking it off the one it was on), or off if None."""
        placed = self._placed.get(key)
        if placed is not None and placed[1] is pod:
            return
        if placed is not None:
            del self._placed[key]
            if (info := self._node_infos.get(placed[0])) is not None:
                info.remove_pod(placed[1])
        if pod is None:
            return
        node_name = str(_spec(pod).get("nodeName") or "")
        if (info := self._node_infos.get(node_name)) is not None:
            info.add_pod(pod)
            self._placed[key] = (node_name, pod)
        # else: bound to a node the scheduler does not know (yet); placed when the node comes

    async def _run(self) -> None:
        while True:
            self._wakeup.clear()
            info, ready_at = self.queue.pop(self.clock.now())
            if info is None:
                await self._wait(ready_at)
                continue
            cycle = self.queue.scheduling_cycle
            try:
                await self.schedule_one(info, cycle)
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.exception("scheduling %s failed", info.key)
                self.assumed.pop(info.key, None)
                self.queue.done(info.key)

    async def _wait(self, ready_at: float | None) -> None:
        """Until an informer event, or (on the cluster clock) until ``ready_at``, whichever is first."""
        waiters: list[asyncio.Task[Any]] = [asyncio.create_task(self._wakeup.wait())]
        if ready_at is not None:
            waiters.append(asyncio.create_task(self.clock.sleep(ready_at - self.clock.now())))
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()
            await asyncio.gather(*waiters, return_exceptions=True)

    async def schedule_one(self, info: QueuedPodInfo, cycle: int) -> None:
        """One scheduling cycle for a popped pod: filter, score, assume, bind (or record the failure)."""
        pod = info.pod
        key = info.key
        snapshot = self.snapshot()
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
        self.assumed[key] = assumed_pod  # reserve: the next attempt sees the room taken
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
            self.assumed.pop(key, None)
            self.queue.done(key)
            self._move(ASSIGNED_POD_DELETE)  # the room it held is free again
            return
        except (APIError, TransportError) as error:
            logger.warning("binding %s to %s failed: %s; retrying after backoff", key, node, error)
            self.assumed.pop(key, None)
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
    "DEFAULT_SCHEDULER_NAME",
    "LEASE_NAME",
    "REASON_FAILED_SCHEDULING",
    "REASON_SCHEDULED",
    "Scheduler",
    "assigned",
    "node_scheduling_properties_changed",
    "pod_updated",
    "terminal",
]
