"""The watch cache: one store watch per resource, fanned out to every client watching it.

A cluster has many watchers of the same thing: every kubelet watches pods, every kube-proxy watches
services, kubectl users run ``get -w``. If each of them opened its own etcd watch, etcd would do the
work hundreds of times. kube-apiserver's **cacher** (``k8s.io/apiserver/pkg/storage/cacher``) instead
lists each resource once, watches it once from the list's revision, and keeps:

- the current objects, so reads with ``resourceVersion=0`` (and, since 1.31, consistent reads once
  the cache has caught up with the store) are served from memory;
- a bounded window of recent events, so a client can resume a watch from a recent resourceVersion
  without going to etcd; older than the window is ``410 Gone: too old resource version``;
- the list of client watchers, each with its own filter (namespace, label and field selectors).

This module is that cacher. It knows nothing about HTTP: the watch handler turns its events into
the wire format.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from controlplane.api.resources import ResourceType
from controlplane.apiserver.registry import decode
from controlplane.store import Event, EventType, Store, StoreClosed, StoreError, Watch

logger = logging.getLogger(__name__)

Object = dict[str, Any]

#: Recent events kept for resuming watches (upstream sizes the window dynamically, 100 to 100k).
DEFAULT_WINDOW = 10_000
#: Events a client watcher may fall behind before it is terminated (upstream's channel buffer is 100).
WATCHER_BUFFER = 1_000


class TooOldResourceVersion(Exception):
    """A watch asked to resume from before the cache's window: the client must re-list (410)."""

    def __init__(self, requested: int, oldest: int) -> None:
        super().__init__(f"too old resource version: {requested} ({oldest})")
        self.requested = requested
        self.oldest = oldest


@dataclass(slots=True)
class Cached:
    """One object as the cache holds it, with its serialized form computed once on demand."""

    obj: Object
    revision: int
    _raw: bytes | None = None

    @property
    def raw(self) -> bytes:
        if self._raw is None:
            self._raw = json.dumps(self.obj, separators=(",", ":")).encode()
        return self._raw


@dataclass(frozen=True, slots=True)
class CacheEvent:
    """A change as clients see it: ADDED, MODIFIED or DELETED, with the object before and after."""

    type: str
    key: str
    revision: int
    object: Cached
    previous: Cached | None


Filter = Callable[[Object], bool]


class CacheWatcher:
    """One client's watch on the cache: a buffer of events the watch handler takes in batches.

    The cache ``offer``s every change; the watcher keeps what matches its filter (translating selector
    transitions into ADDED/DELETED) without ever blocking the cache. A watcher that falls
    ``WATCHER_BUFFER`` events behind is closed, like upstream's cacher terminating a slow watcher, and
    its client re-watches or re-lists.
    """

    def __init__(self, namespace_prefix: str, matches: Filter, *, capacity: int = WATCHER_BUFFER) -> None:
        self.namespace_prefix = namespace_prefix
        self.matches = matches
        self.capacity = capacity
        self.buffer: collections.deque[CacheEvent] = collections.deque()
        self.closed_reason: str | None = None
        #: How many of the first buffered events are the initial state (sendInitialEvents).
        self.initial = 0
        self._waiter: asyncio.Future[None] | None = None

    def offer(self, event: CacheEvent) -> None:
        """Translate a change for this watcher (selector transitions) and buffer it without blocking."""
        if self.closed_reason is not None or not event.key.startswith(self.namespace_prefix):
            return
        before = event.previous is not None and self.matches(event.previous.obj)
        if event.type == "DELETED":
            out = event if before else None
        else:
            now = self.matches(event.object.obj)
            if now and before:
                out = event
            elif now:
                out = (
                    event
                    if event.type == "ADDED"
                    else CacheEvent("ADDED", event.key, event.revision, event.object, None)
                )
            elif before:
                # The object stopped matching: for this watcher it is gone (upstream sends DELETED
                # with the object's new state).
                out = CacheEvent("DELETED", event.key, event.revision, event.object, None)
            else:
                out = None
        if out is not None:
            self.push(out)

    def push(self, event: CacheEvent) -> None:
        if len(self.buffer) >= self.capacity:
            self.close("watcher fell too far behind")
            return
        self.buffer.append(event)
        self.poke()

    def poke(self) -> None:
        """Wake the handler waiting in ``take`` (new events, a timer, or the end)."""
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def take(self) -> list[CacheEvent]:
        """Every buffered event (waiting for at least one, or a ``poke``); [] after ``close``."""
        if not self.buffer and self.closed_reason is None:
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter
        events = list(self.buffer)
        self.buffer.clear()
        return events

    def close(self, reason: str) -> None:
        if self.closed_reason is None:
            self.closed_reason = reason
            self.buffer.clear()
            self.poke()


class WatchCache:
    """The cache of one resource type: current objects, recent events, client watchers."""

    def __init__(self, store: Store, rtype: ResourceType, *, window: int = DEFAULT_WINDOW) -> None:
        self.store = store
        self.rtype = rtype
        self.prefix = rtype.prefix()
        self.objects: dict[str, Cached] = {}
        self.revision = 0
        self.events: collections.deque[CacheEvent] = collections.deque(maxlen=window)
        #: The cache can serve a watch from any revision >= this one.
        self.oldest = 0
        self.watchers: set[CacheWatcher] = set()
        self._task: asyncio.Task[None] | None = None
        self._watch: Watch | None = None
        self._ready = asyncio.Event()
        self._advanced = asyncio.Event()

    # -- lifecycle -------------------------------------------------------------------------------

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"watchcache-{self.rtype.plural}")
        await self._ready.wait()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self._watch is not None:
            await self._watch.close()
        for watcher in list(self.watchers):
            watcher.close("the API server is shutting down")
        self.watchers.clear()

    async def _run(self) -> None:
        """List, then watch from the list's revision; re-list if the watch is lost (reflector)."""
        delay = 0.1
        while True:
            try:
                await self._list_and_watch()
            except asyncio.CancelledError:
                raise
            except StoreClosed:
                return
            except StoreError as error:
                logger.warning("watch cache %s: %s; re-listing", self.rtype.plural, error)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)

    async def _list_and_watch(self) -> None:
        listed: dict[str, Cached] = {}
        start: str | None = None
        revision: int | None = None
        while True:
            page = await self.store.range(self.prefix, start=start, revision=revision, limit=1000)
            revision = page.revision
            for kv in page.kvs:
                listed[kv.key] = Cached(decode(kv), kv.mod_revision)
            if not page.more:
                break
            start = page.kvs[-1].key + "\0"
        assert revision is not None
        relisted = bool(self._ready.is_set())
        self.objects = listed
        self.revision = revision
        self.events.clear()
        self.oldest = revision
        if relisted:
            # Our history has a hole: every client watcher must re-list too.
            for watcher in list(self.watchers):
                watcher.close("the watch cache was re-initialized")
            self.watchers.clear()
        self._ready.set()
        self._notify()
        watch = await self.store.watch(self.prefix, from_revision=revision)
        self._watch = watch
        try:
            async for event in watch:
                self._apply(event)
                if watch.backlog == 0:
                    self._advance(watch.progress_revision)
        finally:
            await watch.close()

    # -- applying store events -------------------------------------------------------------------

    def _apply(self, event: Event) -> None:
        previous = self.objects.get(event.key)
        if event.type is EventType.PUT:
            current = Cached(decode(event.kv), event.revision)
            self.objects[event.key] = current
            change = CacheEvent(
                "MODIFIED" if previous else "ADDED", event.key, event.revision, current, previous
            )
        else:
            if previous is None:
                self._advance(event.revision)
                return
            del self.objects[event.key]
            # A deleted object is reported in its last state, with the deleting revision.
            gone = dict(previous.obj)
            gone["metadata"] = dict(gone["metadata"], resourceVersion=str(event.revision))
            change = CacheEvent("DELETED", event.key, event.revision, Cached(gone, event.revision), previous)
        if len(self.events) == self.events.maxlen:
            self.oldest = self.events[0].revision
        self.events.append(change)
        for watcher in list(self.watchers):
            watcher.offer(change)
        self._advance(event.revision)

    def _advance(self, revision: int) -> None:
        if revision > self.revision:
            self.revision = revision
            self._notify()

    def _notify(self) -> None:
        self._advanced.set()
        self._advanced = asyncio.Event()

    # -- reads -----------------------------------------------------------------------------------

    async def wait_for(self, revision: int, seconds: float) -> bool:
        """Wait until the cache has caught up with ``revision``; False if it did not in time."""
        await self._ready.wait()
        if self._watch is not None and self._watch.backlog == 0:
            self._advance(self._watch.progress_revision)
        try:
            async with asyncio.timeout(seconds):
                while self.revision < revision:
                    await self._advanced.wait()
        except TimeoutError:
            return False
        return True

    def get(self, key: str) -> Cached | None:
        return self.objects.get(key)

    def list(self, namespace: str | None, matches: Filter | None) -> list[Cached]:
        prefix = self.rtype.prefix(namespace)
        items = [c for k, c in self.objects.items() if k.startswith(prefix)]
        items.sort(key=lambda c: _sort_key(c.obj))
        if matches is not None:
            items = [c for c in items if matches(c.obj)]
        return items

    # -- watches ---------------------------------------------------------------------------------

    def watch(self, namespace: str | None, matches: Filter, from_revision: int | None) -> CacheWatcher:
        """A watcher receiving changes after ``from_revision`` (None: the current state as ADDED first).

        Raises ``TooOldResourceVersion`` when ``from_revision`` is older than the event window.
        """
        watcher = CacheWatcher(self.rtype.prefix(namespace), matches)
        if from_revision is None:
            initial = self.list(namespace, matches)
            watcher.capacity = max(watcher.capacity, len(initial) + WATCHER_BUFFER)
            for cached in initial:
                watcher.push(CacheEvent("ADDED", "", cached.revision, cached, None))
            watcher.initial = len(initial)
        else:
            if from_revision < self.oldest:
                raise TooOldResourceVersion(from_revision, self.oldest)
            for event in self.events:
                if event.revision > from_revision:
                    watcher.offer(event)
        self.watchers.add(watcher)
        return watcher

    def forget(self, watcher: CacheWatcher) -> None:
        self.watchers.discard(watcher)


def _sort_key(obj: Object) -> tuple[str, str]:
    meta = obj.get("metadata", {})
    return (meta.get("namespace", ""), meta.get("name", ""))


__all__ = [
    "CacheEvent",
    "CacheWatcher",
    "Cached",
    "TooOldResourceVersion",
    "WatchCache",
]
