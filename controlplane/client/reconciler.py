"""Reconcilers and controllers: the controller-runtime way of writing a Kubernetes controller.

A controller makes the world match what objects in the API server ask for. controller-runtime
(the library under kubebuilder and most operators) boils writing one down to a single method::

    class ConfigMapLabeler:
        async def reconcile(self, request: Request) -> Result:
            cm = cache.get(request.key)       # read the *current* state (from the informer's cache)
            ...                               # act on the API server until it matches
            return Result()                   # done; or Result(requeue_after=30) to look again later

``reconcile`` is told *which* object to look at (a ``Request``: namespace and name), never *what
changed*. It reads the current state itself, so it works the same after a create, an update, a
missed event or a restart: it is **level-triggered**, not edge-triggered. It must be idempotent
(running it twice does no harm) because it will be run again, often.

A ``Controller`` runs a reconciler. Its pieces are the client-go ones (``workqueue.py``):

- informer event handlers turn every add/update/delete of a watched object into a ``Request`` on a
  rate-limited workqueue: for the objects a controller is *for*, the object's own key; for those it
  *owns*, their controlling owner's key, found in ``ownerReferences`` (``watch(informer, map_func)``;
  the ``Manager`` wires both);
- ``workers`` tasks take requests off the queue and call ``reconcile``; the queue guarantees that one
  request is never reconciled by two workers at once, and that ten events for one object while it
  waits make one reconcile;
- the ``Result`` decides what happens next: an exception re-queues the request with the rate
  limiter's backoff (5 ms, 10 ms, ... up to 1000 s), ``Result(requeue=True)`` does the same without
  an error, ``Result(requeue_after=s)`` looks again after ``s`` seconds (and resets the backoff),
  ``Result()`` is success (``forget``: the next failure starts again at 5 ms). A ``TerminalError``
  is logged and not retried.

Each reconcile emits a ``reconcile`` trace event (controller, key, result, requeue) so the topology
view can show the controller at work. It also names what links it to cause and effect
(``trace/causality.py``): ``revision``, the newest resourceVersion among the informer events that
queued the request since its last reconcile (a retry keeps it unless a newer one came), and
``requests``, the Audit-IDs of the API requests the reconcile made (``trace.recording_requests``).

Upstream: controller-runtime ``pkg/reconcile/reconcile.go``, ``pkg/internal/controller/controller.go``,
``pkg/handler/enqueue_owner.go``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from controlplane.client.cache import DeletedFinalStateUnknown
from controlplane.client.informer import HandlerRegistration, ResourceEventHandlerFuncs, SharedIndexInformer
from controlplane.client.workqueue import QueueShutDown, RateLimitingQueue
from controlplane.client.workqueue_ratelimiters import WorkqueueRateLimiter
from controlplane.clock import SYSTEM_CLOCK, Clock
from controlplane.trace import NULL_SINK, TraceSink, recording_requests

logger = logging.getLogger(__name__)


@dataclass(frozen=True, order=True)
class Request:
    """Which object to reconcile: a namespace ("" for cluster-scoped objects) and a name."""

    namespace: str
    name: str

    @property
    def key(self) -> str:
        """client-go's ``MetaNamespaceKeyFunc`` key: ``namespace/name``, or ``name`` if cluster-scoped."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    def __str__(self) -> str:
        return self.key

    @classmethod
    def from_key(cls, key: str) -> Request:
        namespace, _, name = key.rpartition("/")
        return cls(namespace, name)

    @classmethod
    def for_object(cls, obj: Mapping[str, Any]) -> Request:
        meta = obj.get("metadata") or {}
        return cls(str(meta.get("namespace") or ""), str(meta["name"]))


def resource_version(obj: Mapping[str, Any]) -> int | None:
    """The object's ``metadata.resourceVersion`` as the store revision it is, if it is one."""
    value = (obj.get("metadata") or {}).get("resourceVersion")
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


@dataclass(frozen=True)
class Result:
    """What to do after a successful reconcile: nothing, requeue with backoff, or look again later."""

    requeue: bool = False
    requeue_after: float | None = None


class TerminalError(Exception):
    """A failure that retrying cannot fix (an invalid spec): logged, not requeued."""


class Reconciler(Protocol):
    """controller-runtime's ``reconcile.Reconciler``."""

    async def reconcile(self, request: Request) -> Result: ...


@dataclass(frozen=True)
class ReconcilerFunc:
    """A plain ``async def reconcile(request) -> Result`` function as a ``Reconciler``."""

    func: Callable[[Request], Awaitable[Result]]

    async def reconcile(self, request: Request) -> Result:
        return await self.func(request)


#: Maps an object an informer reports to the requests its change should cause.
MapFunc = Callable[[Mapping[str, Any]], list[Request]]


def request_for_object(obj: Mapping[str, Any]) -> list[Request]:
    """The object's own request (controller-runtime ``EnqueueRequestForObject``)."""
    return [Request.for_object(obj)]


def owner_requests(obj: Mapping[str, Any], *, owner_kind: str, owner_api_version: str) -> list[Request]:
    """Requests for the controlling owner of ``obj`` if it is of the given kind (``EnqueueRequestForOwner``
    with ``OnlyControllerOwner``): an owned object's events reconcile its owner."""
    meta = obj.get("metadata") or {}
    group = owner_api_version.rpartition("/")[0]
    requests = []
    for ref in meta.get("ownerReferences") or []:
        if not ref.get("controller"):
            continue
        if ref.get("kind") != owner_kind or str(ref.get("apiVersion", "")).rpartition("/")[0] != group:
            continue
        requests.append(Request(str(meta.get("namespace") or ""), str(ref.get("name"))))
    return requests


def enqueue_owner(*, owner_kind: str, owner_api_version: str) -> MapFunc:
    """A ``MapFunc`` sending an owned object's changes to its controlling owner of that kind."""

    def map_owner(obj: Mapping[str, Any]) -> list[Request]:
        return owner_requests(obj, owner_kind=owner_kind, owner_api_version=owner_api_version)

    return map_owner


@dataclass
class _Source:
    """One informer whose changes this controller watches, and how they map to requests."""

    informer: SharedIndexInformer
    map_func: MapFunc
    registration: HandlerRegistration | None = None


class Controller:
    """Informer handlers, a rate-limited workqueue of ``Request``s, and ``workers`` tasks calling the
    reconciler.

    ``watch(informer, map_func)`` says which changes cause which requests; the handlers are added when
    the controller starts, so the informer first replays every cached object to them (an add each):
    a controller that starts late, say when it wins a leader election, still sees everything.
    """

    def __init__(
        self,
        name: str,
        reconciler: Reconciler,
        *,
        workers: int = 1,
        rate_limiter: WorkqueueRateLimiter | None = None,
        clock: Clock = SYSTEM_CLOCK,
        trace: TraceSink = NULL_SINK,
        trace_fields: Mapping[str, Any] | None = None,
    ) -> None:
        if workers < 1:
            raise ValueError("a controller needs at least one worker")
        self.name = name
        self.reconciler = reconciler
        self.workers = workers
        self.clock = clock
        self.trace = trace
        self.trace_fields = dict(trace_fields or {})
        self.queue: RateLimitingQueue[Request] = RateLimitingQueue(rate_limiter, name, clock=clock)
        self._rate_limiter = rate_limiter
        self._sources: list[_Source] = []
        self._tasks: list[asyncio.Task[None]] = []
        #: Per queued request, the newest resourceVersion of the informer events that queued it (for
        #: the trace's ``revision``); taken when the request is reconciled.
        self._revisions: dict[Request, int] = {}

    def watch(self, informer: SharedIndexInformer, map_func: MapFunc = request_for_object) -> None:
        """Reconcile ``map_func(obj)`` for every object ``informer`` reports added, updated or deleted."""
        self._sources.append(_Source(informer, map_func))

    def enqueue(self, request: Request) -> None:
        """Ask for ``request`` to be reconciled (deduplicated while it waits)."""
        self.queue.add(request)

    def _queued_by(self, request: Request, revision: int | None) -> None:
        if revision is not None and revision > self._revisions.get(request, 0):
            self._revisions[request] = revision

    def _handler(self, map_func: MapFunc) -> ResourceEventHandlerFuncs:
        def enqueue_all(obj: Mapping[str, Any], revision: int | None = None) -> None:
            if revision is None:
                revision = resource_version(obj)
            for request in map_func(obj):
                self._queued_by(request, revision)
                self.queue.add(request)

        def on_update(old: dict[str, Any], new: dict[str, Any]) -> None:
            # Both: an owner reference or a name may differ between the two (``EnqueueRequestForOwner``).
            revision = resource_version(new)  # the change is the new object's
            enqueue_all(old, revision)
            enqueue_all(new, revision)

        def on_delete(obj: dict[str, Any] | DeletedFinalStateUnknown) -> None:
            if isinstance(obj, DeletedFinalStateUnknown):
                if obj.obj is None:
                    self.queue.add(Request.from_key(obj.key))
                    return
                obj = obj.obj
            enqueue_all(obj)

        return ResourceEventHandlerFuncs(enqueue_all, on_update, on_delete)

    def has_synced(self) -> bool:
        """Every watched informer has synced and replayed its objects to this controller's handlers."""
        return all(s.registration is not None and s.registration.has_synced() for s in self._sources)

    async def start(self) -> None:
        """Add the handlers, wait until the watched caches have synced, then start the workers.

        A controller that ran before starts on a fresh queue (its handlers replay every object).
        """
        if self._tasks:
            return
        if self.queue.shutting_down:
            self.queue = RateLimitingQueue(self._rate_limiter, self.name, clock=self.clock)
            self._revisions.clear()
        for source in self._sources:
            source.registration = source.informer.add_event_handler(self._handler(source.map_func))
        await asyncio.gather(*(source.informer.wait_for_sync() for source in self._sources))
        self._tasks = [
            asyncio.get_running_loop().create_task(self._worker(), name=f"controller:{self.name}:worker-{i}")
            for i in range(self.workers)
        ]

    async def stop(self) -> None:
        """Remove the handlers, stop taking requests and end the workers (a reconcile in progress is
        cancelled: reconcilers must cope with stopping anywhere, as with a crash)."""
        for source in self._sources:
            if source.registration is not None:
                await source.informer.remove_event_handler(source.registration)
                source.registration = None
        self.queue.shut_down()
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _worker(self) -> None:
        while True:
            try:
                request = await self.queue.get()
            except QueueShutDown:
                return
            try:
                await self.reconcile_handler(request)
            finally:
                self.queue.done(request)

    async def reconcile_handler(self, request: Request) -> None:
        """Reconcile ``request`` once and act on the outcome (controller-runtime ``reconcileHandler``)."""
        started = time.perf_counter()
        error: BaseException | None = None
        requeue_after: float | None = None
        # Events from now on queue the next reconcile: they are not this one's cause.
        revision = self._revisions.pop(request, None)
        with recording_requests() as issued:
            try:
                result = await self.reconciler.reconcile(request)
            except asyncio.CancelledError:
                raise
            except TerminalError as terminal:
                error, outcome, requeue = terminal, "error", False
                self.queue.forget(request)
                logger.error("%s: reconcile %s failed for good: %s", self.name, request, terminal)
            except Exception as failure:
                error, outcome, requeue = failure, "error", True
                if revision is not None:
                    self._revisions.setdefault(request, revision)  # the retry has the same cause
                self.queue.add_rate_limited(request)
                logger.warning("%s: reconcile %s failed, will retry: %r", self.name, request, failure)
            else:
                if result.requeue_after is not None and result.requeue_after > 0:
                    outcome, requeue, requeue_after = "requeue_after", True, result.requeue_after
                    self.queue.forget(request)
                    self.queue.add_after(request, requeue_after)
                elif result.requeue:
                    outcome, requeue = "requeue", True
                    if revision is not None:
                        self._revisions.setdefault(request, revision)  # the retry has the same cause
                    self.queue.add_rate_limited(request)
                else:
                    outcome, requeue = "success", False
                    self.queue.forget(request)
        if self.trace.enabled:
            self.trace.emit(
                "reconcile",
                **self.trace_fields,
                controller=self.name,
                key=request.key,
                **({"namespace": request.namespace} if request.namespace else {}),
                name=request.name,
                result=outcome,
                requeue=requeue,
                requeue_after=requeue_after,
                retries=self.queue.num_requeues(request),
                error=repr(error) if error else None,
                duration=round(time.perf_counter() - started, 6),
                revision=revision,
                requests=list(issued),
            )


__all__ = [
    "Controller",
    "MapFunc",
    "Reconciler",
    "ReconcilerFunc",
    "Request",
    "Result",
    "TerminalError",
    "enqueue_owner",
    "owner_requests",
    "request_for_object",
    "resource_version",
]
