"""Informers: one watch per resource, a local cache, and callbacks when something changes.

A controller wants two things: to *read* the current state cheaply, and to be *told* when it
changes. A **shared informer** (client-go ``tools/cache/shared_informer.go``) gives both, for one
resource, to every part of a program that asks:

::

    API server --list/watch--> Reflector --deltas--> DeltaFIFO --pop--> process
                                                                          |-> Indexer (the cache)
                                                                          '-> handlers: on_add,
                                                                              on_update, on_delete

- the ``Reflector`` lists and watches (``reflector.py``) and pushes every change into a
  ``DeltaFIFO`` (``delta_fifo.py``);
- the informer pops the changes one key at a time, applies them to its ``Indexer`` (``cache.py``),
  and only then tells the handlers, so a handler that reads the cache sees at least that change;
- each handler has its own task and its own unbounded buffer: a slow handler delays nobody else.

"Shared" means one informer per resource per program, whatever the number of handlers: the
scheduler, the ReplicaSet controller and the garbage collector all watch pods, and the API server
sees one watch. ``SharedInformerFactory`` hands out those single instances.

What handlers receive:

- ``on_add(obj)`` for each object of the first list and each new one;
- ``on_update(old, new)`` for each change; also, every ``resync_period``, for every cached object,
  with ``old`` and ``new`` the same (same resourceVersion): a *resync*, so that a controller
  re-checks everything now and then. Resyncs go only to the handlers that asked for them; a relist
  that finds an object unchanged counts as a resync too (client-go compares resourceVersions), so it
  is not reported as a change;
- ``on_delete(obj)`` with the object's final state, or a ``DeletedFinalStateUnknown`` when it was
  deleted while the watch was down and only a relist noticed.

Cached objects are read-only, as in client-go: whoever wants to change one deep-copies it first
(``controlplane.api.deepcopy``). Here they are also frozen and shared by every informer of the
process that caches the same version of the same object (``sharing.py``): the scheduler, the
controller manager and a kubelet hold one copy of a pod, not three, and a change to it raises.

``has_synced()`` is true once the first list is in the cache; controllers wait for it
(``wait_for_cache_sync``) before they start working, or they would act on a partial picture.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import random
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol, Self

from controlplane.api.meta import Object
from controlplane.client.cache import (
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    Indexer,
    IndexFunc,
    meta_namespace_index_func,
    resource_version,
)
from controlplane.client.delta_fifo import DeltaFIFO, Deltas, DeltaType, FIFOClosed
from controlplane.client.reflector import ListerWatcher, ListWatch, Reflector
from controlplane.client.rest import RESTClient
from controlplane.client.sharing import SHARED_VERSIONS, FrozenDict, SharedVersions
from controlplane.client.watch import EventType, WatchEvent, decode_event, split_event
from controlplane.clock import SYSTEM_CLOCK, Clock
from controlplane.tasks import cancel_and_wait

logger = logging.getLogger(__name__)

HandlerResult = Awaitable[None] | None

#: The shortest resync period a handler may ask for (client-go ``minimumResyncPeriod``).
MINIMUM_RESYNC_PERIOD = 1.0


class ResourceEventHandler(Protocol):
    """What an informer calls (client-go ``ResourceEventHandler``); methods may be async."""

    def on_add(self, obj: Object) -> HandlerResult: ...

    def on_update(self, old: Object, new: Object) -> HandlerResult: ...

    def on_delete(self, obj: Object | DeletedFinalStateUnknown) -> HandlerResult: ...


@dataclass(frozen=True)
class ResourceEventHandlerFuncs:
    """A handler from plain functions, any of them left out (client-go ``ResourceEventHandlerFuncs``)."""

    add_func: Callable[[Object], HandlerResult] | None = None
    update_func: Callable[[Object, Object], HandlerResult] | None = None
    delete_func: Callable[[Object | DeletedFinalStateUnknown], HandlerResult] | None = None

    def on_add(self, obj: Object) -> HandlerResult:
        return self.add_func(obj) if self.add_func is not None else None

    def on_update(self, old: Object, new: Object) -> HandlerResult:
        return self.update_func(old, new) if self.update_func is not None else None

    def on_delete(self, obj: Object | DeletedFinalStateUnknown) -> HandlerResult:
        return self.delete_func(obj) if self.delete_func is not None else None


@dataclass(frozen=True, slots=True)
class _Add:
    obj: Object


@dataclass(frozen=True, slots=True)
class _Update:
    old: Object
    new: Object


@dataclass(frozen=True, slots=True)
class _Delete:
    obj: Object | DeletedFinalStateUnknown


_Notification = _Add | _Update | _Delete


class _Listener:
    """One handler: its buffer of notifications and the task delivering them (``processorListener``)."""

    def __init__(self, handler: ResourceEventHandler, resync_period: float, now: float) -> None:
        self.handler = handler
        self.resync_period = resync_period
        self.next_resync = now + resync_period
        self._buffer: deque[_Notification] = deque()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.enqueued = 0
        self.delivered = 0
        #: ``delivered`` must reach this for the handler to have seen the initial list ...
        self.sync_mark: int | None = None
        #: ... and this is set once it has.
        self.synced = asyncio.Event()

    def mark_sync(self) -> None:
        """The initial list is all enqueued: the handler has synced once it is all delivered."""
        self.sync_mark = self.enqueued
        if self.delivered >= self.sync_mark:
            self.synced.set()

    def add(self, notification: _Notification) -> None:
        self._buffer.append(notification)
        self.enqueued += 1
        self._wake.set()

    def start(self, name: str) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=name)

    async def stop(self) -> None:
        if self._task is not None:
            await cancel_and_wait(self._task)
            self._task = None

    def should_resync(self, now: float) -> bool:
        return self.resync_period > 0 and now >= self.next_resync

    async def _run(self) -> None:
        while True:
            while not self._buffer:
                self._wake.clear()
                await self._wake.wait()
            notification = self._buffer.popleft()
            try:
                if isinstance(notification, _Add):
                    result = self.handler.on_add(notification.obj)
                elif isinstance(notification, _Update):
                    result = self.handler.on_update(notification.old, notification.new)
                else:
                    result = self.handler.on_delete(notification.obj)
                if result is not None and inspect.isawaitable(result):  # most handlers return None
                    await result
            except asyncio.CancelledError:
                raise
            except Exception:  # a handler's bug must not stop the informer
                logger.exception("event handler %r failed", self.handler)
            finally:
                self.delivered += 1
                if self.sync_mark is not None and self.delivered >= self.sync_mark:
                    self.synced.set()


class HandlerRegistration:
    """What ``add_event_handler`` returns: to remove the handler, or ask if it saw the first list."""

    def __init__(self, informer: SharedIndexInformer, listener: _Listener) -> None:
        self._informer = informer
        self._listener = listener

    def has_synced(self) -> bool:
        """The informer has synced and this handler has been called for every object of the first list."""
        return self._informer.has_synced() and self._listener.synced.is_set()

    async def wait_for_sync(self) -> None:
        """Until ``has_synced()``: the handler has seen every object of the informer's first list."""
        await self._informer.wait_for_sync()
        await self._listener.synced.wait()


#: Changes an object before an informer caches it (client-go ``cache.TransformFunc``).
TransformFunc = Callable[[Object], Object]


def strip_managed_fields(obj: Object) -> Object:
    """Drop ``metadata.managedFields`` before caching: a controller never reads them, and on a pod
    they are a good part of its size. kube-controller-manager does this for all its informers
    (``cmd/kube-controller-manager/app/controllermanager.go``) and kube-scheduler for its pods
    (``pkg/scheduler/scheduler.go`` newPodInformer), "to improve memory usage". An update sent
    back without them keeps the stored ones: the API server never lets a client that does not know
    managedFields erase them."""
    meta = obj.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        del meta["managedFields"]
    return obj


#: The watch events whose object ``SharedIndexInformer._decode`` shares as it decodes them.
_SHARED_EVENT_TYPES = {b"ADDED": EventType.ADDED, b"MODIFIED": EventType.MODIFIED}


class SharedIndexInformer:
    """One resource's reflector, cache and event handlers (client-go ``SharedIndexInformer``)."""

    def __init__(
        self,
        list_watch: ListerWatcher,
        *,
        resync_period: float = 0.0,
        indexers: Mapping[str, IndexFunc] | None = None,
        name: str = "informer",
        clock: Clock = SYSTEM_CLOCK,
        rng: random.Random | None = None,
        reflector_options: Mapping[str, Any] | None = None,
        transform: TransformFunc | None = None,
        shared_versions: SharedVersions = SHARED_VERSIONS,
    ) -> None:
        self.name = name
        #: Applied to every object before it enters the cache (``SetTransform``).
        self.transform = transform
        #: Where equal versions cached by other informers of the process are found (``sharing.py``):
        #: the cache and the handlers get frozen objects, shared with every informer caching them.
        self.shared_versions = shared_versions
        self.list_watch = list_watch
        self.clock = clock
        self.rng = rng if rng is not None else random.Random()
        self.default_resync_period = resync_period
        self.resync_check_period = resync_period
        self.indexer = Indexer(indexers=indexers)
        self._fifo = DeltaFIFO(known_objects=self.indexer, on_synced=self._on_synced)
        self._reflector_options = dict(reflector_options or {})
        self.reflector: Reflector | None = None
        self._listeners: list[_Listener] = []
        self._syncing: list[_Listener] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._synced = asyncio.Event()
        self._started = False
        self._stopped = False

    def __repr__(self) -> str:
        return f"<SharedIndexInformer {self.name} synced={self.has_synced()}>"

    # -- handlers ------------------------------------------------------------------------------------

    def add_event_handler(
        self, handler: ResourceEventHandler, resync_period: float | None = None
    ) -> HandlerRegistration:
        """Register a handler; one added after the start is first told about every cached object."""
        if self._stopped:
            raise RuntimeError(f"{self.name}: the informer has stopped")
        period = self.default_resync_period if resync_period is None else resync_period
        if period > 0:
            period = max(period, MINIMUM_RESYNC_PERIOD)
            if self._started:
                period = max(period, self.resync_check_period)  # the reflector's tick is fixed once started
            elif not self.resync_check_period or period < self.resync_check_period:
                self.resync_check_period = period
        listener = _Listener(handler, period, self.clock.now())
        self._listeners.append(listener)
        if self._started:
            for obj in self.indexer.list():
                listener.add(_Add(obj))
            if self.has_synced():
                listener.mark_sync()
            listener.start(f"{self.name} handler")
        return HandlerRegistration(self, listener)

    async def remove_event_handler(self, registration: HandlerRegistration) -> None:
        listener = registration._listener
        if listener in self._listeners:
            self._listeners.remove(listener)
            if listener in self._syncing:
                self._syncing.remove(listener)
            await listener.stop()

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        self.indexer.add_indexers(indexers)

    # -- state ---------------------------------------------------------------------------------------

    def has_synced(self) -> bool:
        """True once the first list has been applied to the cache."""
        return self._fifo.has_synced()

    async def wait_for_sync(self) -> None:
        await self._synced.wait()

    @property
    def last_sync_resource_version(self) -> str:
        return self.reflector.last_sync_resource_version if self.reflector is not None else ""

    # -- lifecycle -----------------------------------------------------------------------------------

    def start(self) -> None:
        """Start listing and watching, and the handlers' tasks (idempotent)."""
        if self._started:
            return
        if self._stopped:
            raise RuntimeError(f"{self.name}: an informer cannot be restarted")
        self._started = True
        self.reflector = Reflector(
            self.list_watch,
            self._fifo,
            name=self.name,
            resync_period=self.resync_check_period,
            should_resync=self._should_resync,
            clock=self.clock,
            rng=self.rng,
            decode=self._decode,
            **self._reflector_options,
        )
        for listener in self._listeners:
            listener.start(f"{self.name} handler")
        self._tasks = [
            asyncio.create_task(self._process_loop(), name=f"{self.name} process"),
            asyncio.create_task(self.reflector.run(), name=f"{self.name} reflector"),
        ]

    async def stop(self) -> None:
        """Stop the reflector, the processing and every handler task; wait until they are gone."""
        self._stopped = True
        self._fifo.close()
        tasks, self._tasks = self._tasks, []
        with contextlib.suppress(FIFOClosed):
            await cancel_and_wait(*tasks)
        for listener in self._listeners:
            await listener.stop()

    async def run(self) -> None:
        """Start, and run until cancelled (then stop)."""
        self.start()
        try:
            await asyncio.Event().wait()
        finally:
            await self.stop()

    async def __aenter__(self) -> Self:
        self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    # -- processing ----------------------------------------------------------------------------------

    async def _process_loop(self) -> None:
        while True:
            try:
                await self._fifo.pop(self._handle_deltas)
            except FIFOClosed:
                return

    def _on_synced(self) -> None:
        """The first list is in the cache: note how far each handler must get to have seen it all."""
        for listener in self._listeners:
            listener.mark_sync()
        self._synced.set()

    def _decode(self, line: bytes) -> WatchEvent:
        """A watch line as an event whose object is already transformed and shared.

        What client-go's DeltaFIFO does as an event comes in (``queueActionInternalLocked`` runs the
        transform), done here one step earlier, so that the bytes are decoded only once per
        process: the scheduler, the controller manager and a kubelet get the same line for the
        same pod version, and the second and third find the shared copy by the bytes' digest.
        """
        split = split_event(line)
        kind = _SHARED_EVENT_TYPES.get(split[0]) if split is not None else None
        if split is None or kind is None:
            return decode_event(line)
        transform, versions = self.transform, self.shared_versions
        digest = versions.digest(split[1])
        known = versions.frame(transform, digest)
        if known is not None:
            return WatchEvent(kind, known)
        event = decode_event(line)
        meta = event.object.get("metadata")
        if not isinstance(meta, dict) or not meta.get("uid") or not meta.get("resourceVersion"):
            return event  # not shareable: ``_handle_deltas`` transforms it, as any other
        obj = event.object if transform is None else transform(event.object)
        shared = versions.share(obj)
        if type(shared) is not FrozenDict:  # the transform made it unshareable: start again, plainly
            return decode_event(line)
        versions.remember_frame(transform, digest, shared)
        return WatchEvent(event.type, shared)

    def _handle_deltas(self, deltas: Deltas) -> None:
        """Apply one key's deltas to the cache, then queue the notifications (``processDeltas``)."""
        for delta in deltas:
            obj = delta.object
            if delta.type is DeltaType.DELETED:
                self.indexer.delete(obj)
                self._distribute(_Delete(obj), sync=False)
                continue
            assert not isinstance(obj, DeletedFinalStateUnknown)
            # A Sync re-delivers what the cache holds, transformed already (client-go's DeltaFIFO
            # ``queueActionInternalLocked`` skips the transform for it too).
            # A frozen object comes from ``_decode``: transformed and shared already, for this very
            # informer's transform (another informer may have shared another copy of the version
            # since, so the registry is not asked). Anything else is a plain decode, from a list.
            if delta.type is not DeltaType.SYNC and type(obj) is not FrozenDict:
                if self.transform is not None:
                    obj = self.transform(obj)
                obj = self.shared_versions.share(obj)
            old = self.indexer.get(obj)
            if old is not None:
                self.indexer.update(obj)
                # Unchanged resourceVersion (a Sync, or a relist finding the object as it was): a
                # resync, only for the handlers whose resync is due.
                same = resource_version(old) == resource_version(obj) and resource_version(obj) != ""
                self._distribute(_Update(old, obj), sync=delta.type is DeltaType.SYNC or same)
            else:
                self.indexer.add(obj)
                self._distribute(_Add(obj), sync=False)

    def _distribute(self, notification: _Notification, *, sync: bool) -> None:
        for listener in self._syncing if sync else self._listeners:
            listener.add(notification)

    def _should_resync(self) -> bool:
        """Which handlers are due for a resync now (``sharedProcessor.shouldResync``)."""
        now = self.clock.now()
        self._syncing = [listener for listener in self._listeners if listener.should_resync(now)]
        for listener in self._syncing:
            listener.next_resync = now + listener.resync_period
        return bool(self._syncing)


#: client-go's ``SharedInformer`` is the same thing without the index methods; here one class is both.
SharedInformer = SharedIndexInformer


async def wait_for_cache_sync(*informers: SharedIndexInformer) -> None:
    """Wait until every informer has synced (client-go ``cache.WaitForCacheSync``)."""
    await asyncio.gather(*(informer.wait_for_sync() for informer in informers))


GroupVersionResource = tuple[str, str, str]


class SharedInformerFactory:
    """One shared informer per resource for a program (client-go's dynamic ``SharedInformerFactory``).

    Every informer it makes has the namespace index, the factory's default resync period, and, if the
    factory was given them, a namespace and selectors (``WithNamespace``, ``WithTweakListOptions``).
    Each informer's randomness is drawn from the factory's ``rng``, so a seeded factory replays.
    """

    def __init__(
        self,
        client: RESTClient,
        *,
        default_resync: float = 0.0,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        transform: TransformFunc | None = None,
    ) -> None:
        self.client = client
        self.default_resync = default_resync
        #: Every informer's transform (``WithTransform``), e.g. ``strip_managed_fields``.
        self.transform = transform
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.clock = clock if clock is not None else client.clock
        self.rng = rng if rng is not None else random.Random()
        self._informers: dict[GroupVersionResource, SharedIndexInformer] = {}
        self._started: set[GroupVersionResource] = set()

    def informer_for(
        self,
        group: str,
        version: str,
        plural: str,
        *,
        indexers: Mapping[str, IndexFunc] | None = None,
        resync_period: float | None = None,
    ) -> SharedIndexInformer:
        """The informer of ``group/version/plural`` (made on first request; later ones share it)."""
        gvr = (group, version, plural)
        informer = self._informers.get(gvr)
        if informer is None:
            resource = self.client.resource(group, version, plural, self.namespace)
            list_watch = ListWatch(
                resource, label_selector=self.label_selector, field_selector=self.field_selector
            )
            all_indexers: dict[str, IndexFunc] = {NAMESPACE_INDEX: meta_namespace_index_func}
            all_indexers.update(indexers or {})
            informer = SharedIndexInformer(
                list_watch,
                resync_period=self.default_resync if resync_period is None else resync_period,
                indexers=all_indexers,
                name=f"{plural}.{group or 'core'}/{version} informer",
                clock=self.clock,
                rng=random.Random(self.rng.getrandbits(64)),
                transform=self.transform,
            )
            self._informers[gvr] = informer
        elif indexers:
            missing = {k: v for k, v in indexers.items() if k not in informer.indexer.get_indexers()}
            if missing:
                informer.add_indexers(missing)
        return informer

    def start(self) -> None:
        """Start every informer made so far that has not started (call again after making more)."""
        for gvr, informer in self._informers.items():
            if gvr not in self._started:
                informer.start()
                self._started.add(gvr)

    async def wait_for_cache_sync(self) -> dict[GroupVersionResource, bool]:
        """Wait for the started informers to sync; which did (bound the wait with ``asyncio.timeout``)."""
        started = {gvr: self._informers[gvr] for gvr in self._started}
        await wait_for_cache_sync(*started.values())
        return {gvr: informer.has_synced() for gvr, informer in started.items()}

    async def shutdown(self) -> None:
        """Stop every informer and wait for their tasks to end."""
        await asyncio.gather(*(informer.stop() for informer in self._informers.values()))
        self._started.clear()


__all__ = [
    "MINIMUM_RESYNC_PERIOD",
    "GroupVersionResource",
    "HandlerRegistration",
    "ResourceEventHandler",
    "ResourceEventHandlerFuncs",
    "SharedIndexInformer",
    "SharedInformer",
    "SharedInformerFactory",
    "wait_for_cache_sync",
]
