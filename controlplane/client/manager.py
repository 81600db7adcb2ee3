"""The manager: everything a controller process needs, started and stopped in the right order.

kube-controller-manager is one process running many controllers (ReplicaSet, Deployment, Namespace
...). They share one set of informers (one watch per resource, whatever the number of controllers
reading it), one event recorder, and one leader election: when three copies of the process run, one
leads and runs the controllers while the other two keep their caches warm and wait. controller-runtime
calls the object that owns all this the **Manager**; this is it, with the same shape::

    manager = Manager(client, name="configmap-labeler", leader_election=True)
    manager.new_controller("labeler", ConfigMapLabeler(...), for_=CONFIGMAPS)
    await manager.run()             # until cancelled

``start()`` does, in order:

1. start the shared informers (``SharedInformerFactory``) and **wait for their caches to sync**, so no
   controller acts on a half-listed world;
2. start the event broadcaster (``record.py``) that writes the controllers' Events;
3. without leader election, start the controllers. With it, stand for election on the Lease
   ``<lease_namespace>/<lease_name>`` (``kube-system/<name>``; 15 s / 10 s / 2 s) and start the
   controllers **only while leading**: when leadership is lost they are stopped (their workers
   cancelled) and the manager stands by for the next election; caches keep running meanwhile.
   The election loop is ``leaderelection.run_leader_elected``, the one kube-scheduler uses too, and
   it reports on the trace (``component.state``, from the manager's diagram node) when the manager
   starts leading, when it stops leading, and when it sees a new leader.

``stop()`` undoes it in reverse: leadership (released, so a standby takes over at once), controllers,
events, informers. Controllers are built with ``new_controller(name, reconciler, for_=kind,
owns=[kinds])``: changes to a ``for_`` object reconcile that object; changes to an ``owns`` object
reconcile its controlling owner (``ownerReferences``), the way a ReplicaSet controller hears about its
pods. A reconciler reads the current state from the shared caches (``manager.cache(kind)``).

Upstream: controller-runtime ``pkg/manager/internal.go``, ``pkg/builder/controller.go``.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

from controlplane.client.cache import Indexer
from controlplane.client.informer import SharedIndexInformer, SharedInformerFactory
from controlplane.client.leaderelection import (
    LeaderCallbacks,
    LeaderElectionConfig,
    default_identity,
    run_leader_elected,
)
from controlplane.client.reconciler import Controller, Reconciler, enqueue_owner, request_for_object
from controlplane.client.record import EventBroadcaster, EventRecorder, EventSinkImpl
from controlplane.client.rest import RESTClient
from controlplane.client.workqueue_ratelimiters import WorkqueueRateLimiter
from controlplane.clock import Clock
from controlplane.trace import NULL_SINK, TraceSink, nodes

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Kind:
    """A resource as the API serves it (group, version, plural) and its kind, for ownerReferences."""

    group: str
    version: str
    plural: str
    kind: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


class Manager:
    """Shared informers, event recording, leader election and the controllers, as one unit."""

    def __init__(
        self,
        client: RESTClient,
        *,
        name: str = nodes.CONTROLLER_MANAGER,
        informers: SharedInformerFactory | None = None,
        clock: Clock | None = None,
        leader_election: bool = False,
        lease_namespace: str = "kube-system",
        lease_name: str | None = None,
        identity: str | None = None,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        release_on_cancel: bool = True,
        cluster: str | None = None,
        trace: TraceSink = NULL_SINK,
        rng: random.Random | None = None,
    ) -> None:
        self.client = client
        self.name = name
        self.clock = clock if clock is not None else client.clock
        self.rng = rng if rng is not None else random.Random()
        self.informers = informers or SharedInformerFactory(
            client, clock=self.clock, rng=random.Random(self.rng.getrandbits(64))
        )
        self.leader_election = leader_election
        self.lease_namespace = lease_namespace
        self.lease_name = lease_name or name
        #: client-go's default identity: the host name and a fresh UUID (drawn from ``rng``).
        self.identity = identity or default_identity(self.rng)
        self.trace = trace
        self._trace_fields: dict[str, Any] = {"from": name} | ({"cluster": cluster} if cluster else {})
        self.controllers: list[Controller] = []
        self.broadcaster = EventBroadcaster(
            EventSinkImpl(client), clock=self.clock, rng=random.Random(self.rng.getrandbits(64))
        )
        #: The Lease this manager stands for, with leader election (None: it runs its controllers at once).
        self.election: LeaderElectionConfig | None = None
        self._election_rng: random.Random | None = None
        if leader_election:
            self.election = LeaderElectionConfig(
                self.lease_name,
                lease_namespace,
                self.identity,
                lease_duration=lease_duration,
                renew_deadline=renew_deadline,
                retry_period=retry_period,
                release_on_cancel=release_on_cancel,
            )
            self._election_rng = random.Random(self.rng.getrandbits(64))
        #: Set while the controllers run (at once without leader election, else while leading).
        self.leading = asyncio.Event()
        self._elector_task: asyncio.Task[None] | None = None
        #: Whether a stop gives the Lease up (``stop(release_lease=False)``: a killed process does not).
        self._release_lease = True
        self._started = False
        self._stopped = False

    # -- building ------------------------------------------------------------------------------------

    def informer_for(self, kind: Kind) -> SharedIndexInformer:
        """The shared informer of ``kind`` (one per resource, whoever asks)."""
        return self.informers.informer_for(kind.group, kind.version, kind.plural)

    def cache(self, kind: Kind) -> Indexer:
        """The shared cache of ``kind``: ``get_by_key("namespace/name")``, ``list()``, indexes."""
        return self.informer_for(kind).indexer

    def new_controller(
        self,
        name: str,
        reconciler: Reconciler,
        *,
        for_: Kind,
        owns: Sequence[Kind] = (),
        workers: int = 1,
        rate_limiter: WorkqueueRateLimiter | None = None,
    ) -> Controller:
        """A controller reconciling ``for_`` objects, also woken by changes to the objects it ``owns``.

        Add controllers before ``start()``.
        """
        if self._started:
            raise RuntimeError(f"{self.name}: add controllers before the manager starts")
        controller = Controller(
            name,
            reconciler,
            workers=workers,
            rate_limiter=rate_limiter,
            clock=self.clock,
            trace=self.trace,
            trace_fields=self._trace_fields,
        )
        controller.watch(self.informer_for(for_), request_for_object)
        for owned in owns:
            mapper = enqueue_owner(owner_kind=for_.kind, owner_api_version=for_.api_version)
            controller.watch(self.informer_for(owned), mapper)
        self.controllers.append(controller)
        return controller

    def event_recorder(self, component: str | None = None) -> EventRecorder:
        """An event recorder whose Events say they come from ``component`` (default: the manager)."""
        return self.broadcaster.new_recorder(component or self.name)

    # -- running -------------------------------------------------------------------------------------

    async def start(self) -> None:
        """Informers (synced), events, then the controllers, directly or once elected.

        A manager runs once: after ``stop()`` make a new one (its informers cannot restart).
        """
        if self._started:
            return
        if self._stopped:
            raise RuntimeError(f"{self.name}: a manager cannot be restarted")
        self._started = True
        self.informers.start()
        await self.informers.wait_for_cache_sync()
        self.broadcaster.start()
        if self.election is not None:
            self._elector_task = asyncio.create_task(
                run_leader_elected(
                    self.client,
                    self.election,
                    LeaderCallbacks(self._lead),
                    clock=self.clock,
                    rng=self._election_rng,
                    component=self.name,
                    trace=self.trace,
                    trace_fields=self._trace_fields,
                    release=lambda: self._release_lease,
                ),
                name=f"{self.name}: leader election",
            )
        else:
            await self._start_controllers()

    async def stop(self, *, release_lease: bool = True) -> None:
        """Leadership (released), controllers, events, informers; waits until all have stopped.

        ``release_lease=False``: the Lease is left held, as by a process that is killed; the next
        candidate waits for it to expire.
        """
        self._release_lease = release_lease
        if self._elector_task is not None:
            self._elector_task.cancel()
            await asyncio.gather(self._elector_task, return_exceptions=True)
            self._elector_task = None
        await self._stop_controllers()
        await self.broadcaster.shutdown()
        await self.informers.shutdown()
        self._stopped = True

    async def run(self) -> None:
        """Start, and run until cancelled; then stop."""
        await self.start()
        try:
            await asyncio.Event().wait()
        finally:
            await self.stop()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    def is_leader(self) -> bool:
        return self.leading.is_set()

    async def _start_controllers(self) -> None:
        # All at once, as kube-controller-manager starts each controller on its own goroutine: the
        # garbage collector's start waits for an informer per deletable resource to sync, and the
        # ServiceAccount controller must not wait behind it to create a namespace's ``default``.
        await asyncio.gather(*(controller.start() for controller in self.controllers))
        self.leading.set()
        logger.info("%s: controllers started", self.name)

    async def _stop_controllers(self) -> None:
        self.leading.clear()
        for controller in self.controllers:
            await controller.stop()

    async def _lead(self) -> None:
        """While leading: the controllers run; when leadership ends this task is cancelled."""
        try:
            await self._start_controllers()
            await asyncio.Event().wait()
        finally:
            await self._stop_controllers()


__all__ = ["Kind", "Manager"]
