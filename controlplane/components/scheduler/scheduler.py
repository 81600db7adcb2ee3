"""The scheduler process: watches the cluster, and binds every pending pod to a node.

The pure core (``framework``, ``plugins``, ``queue``, ``messages``) decides; this module and its three
neighbours connect it to the API server, split as kube-scheduler's ``pkg/scheduler`` is:

- ``internal_cache``: the scheduler's **cache**, the nodes and the pods bound or assumed on each, from
  which each attempt's ``Snapshot`` is built (upstream ``pkg/scheduler/backend/cache``);
- ``eventhandlers``: the **informer handlers** that feed the scheduling queue and the cache
  (``eventhandlers.go``);
- ``schedule_one``: **one scheduling cycle** (filter, score, assume) and its **binding cycle**
  (``schedule_one.go``);
- this module, the ``Scheduler`` itself (``scheduler.go``): it starts the informers, waits for their
  caches, and runs the loop that pops the next pod from the queue and schedules it.

Everything the scheduler knows comes from two **shared informers** (``client.informer``): nodes, the
candidates, and all pods. Cluster events move pods that no node could take back into play
(``queue``): a node added or changed (more room, a taint removed), an assigned pod deleted (room
freed). When no pod is ready, the loop waits for an event, or on the cluster clock for the first
backoff to end.

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

Preemption (the PostFilter DefaultPreemption) is ``schedule_one``'s, with the pure search in
``plugins.default_preemption``. Not modelled: permit and pre-bind plugins,
the expiry of assumed pods whose binding never shows up, queueing hints, several profiles.
"""

from __future__ import annotations

import asyncio
import logging
import random
from types import TracebackType
from typing import Any, Self

from controlplane.client.events import EventBroadcaster, EventRecorder, EventSinkImpl
from controlplane.client.informer import SharedIndexInformer, SharedInformerFactory
from controlplane.client.leaderelection import (
    LeaderCallbacks,
    LeaderElectionConfig,
    run_leader_elected,
)
from controlplane.client.rest import ClientLease, ClientOrFactory, RESTClient
from controlplane.clock import Clock
from controlplane.components.scheduler.eventhandlers import (
    DEFAULT_SCHEDULER_NAME,
    EventHandlers,
    assigned,
    node_scheduling_properties_changed,
    pod_updated,
    terminal,
)
from controlplane.components.scheduler.framework import Obj, Profile, Snapshot
from controlplane.components.scheduler.internal_cache import Cache
from controlplane.components.scheduler.plugins import default_profile
from controlplane.components.scheduler.queue import SchedulingQueue
from controlplane.components.scheduler.schedule_one import (
    ACTION_BINDING,
    ACTION_SCHEDULING,
    POD_REASON_UNSCHEDULABLE,
    POD_SCHEDULED,
    REASON_FAILED_SCHEDULING,
    REASON_SCHEDULED,
    ScheduleOne,
)
from controlplane.tasks import cancel_and_wait
from controlplane.trace import NULL_SINK, TraceSink, nodes

logger = logging.getLogger(__name__)

#: The component's name in its ``component.state`` trace events (its events come from ``nodes.SCHEDULER``).
COMPONENT = "scheduler"
#: kube-scheduler's Lease, in ``kube-system`` (``--leader-elect-resource-name``).
LEASE_NAME = "kube-scheduler"


class Scheduler(EventHandlers, ScheduleOne):
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
        #: Nodes, and the pods bound or assumed on them: what each attempt's snapshot is built from.
        self.cache = Cache()
        self._next_start_node = 0
        #: Pods that preempted and wait for the room, by key, with their node (``PodNominator``).
        self.nominator: dict[str, tuple[str, Obj]] = {}
        self._client: RESTClient | None = None
        self._factory: SharedInformerFactory | None = None
        self._pod_informer: SharedIndexInformer | None = None
        self._broadcaster: EventBroadcaster | None = None
        self._recorder: EventRecorder | None = None
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        #: Whether a stop gives the Lease up (``stop(release_lease=False)``: a killed process does not).
        self._release_lease = True
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
    def nodes(self) -> dict[str, Obj]:
        """The cache's nodes, by name."""
        return self.cache.nodes

    @property
    def pods(self) -> dict[str, Obj]:
        """The cache's pods bound to a node, by key."""
        return self.cache.pods

    @property
    def assumed(self) -> dict[str, Obj]:
        """The cache's pods assumed on a node, their binding not yet seen, by key."""
        return self.cache.assumed

    def snapshot(self) -> Snapshot:
        """The cache as the next attempt sees it (``Cache.update_snapshot``)."""
        return self.cache.update_snapshot()

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
            self._pod_informer = self.add_all_event_handlers(self._factory)
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
                    release=lambda: self._release_lease,
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

    async def stop(self, *, release_lease: bool = True) -> None:
        """Stop the loop, the event writer and the informers; close the client if the scheduler made it.

        A leader gives its Lease up on the way out, as kube-scheduler does on SIGTERM
        (``ReleaseOnCancel: true``, cmd/kube-scheduler/app/options/options.go), so the next scheduler
        leads at once. ``release_lease=False`` stops it as a process that is killed or crashes: the
        Lease stays held, and the next scheduler waits for it to expire (``leaseDurationSeconds``).
        """
        self._release_lease = release_lease
        task, self._task = self._task, None
        if task is not None:
            await cancel_and_wait(task)
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

    # -- the loop -----------------------------------------------------------------------------------

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
                self.cache.assumed.pop(info.key, None)
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


__all__ = [
    "ACTION_BINDING",
    "ACTION_SCHEDULING",
    "DEFAULT_SCHEDULER_NAME",
    "LEASE_NAME",
    "POD_REASON_UNSCHEDULABLE",
    "POD_SCHEDULED",
    "REASON_FAILED_SCHEDULING",
    "REASON_SCHEDULED",
    "Scheduler",
    "assigned",
    "node_scheduling_properties_changed",
    "pod_updated",
    "terminal",
]
