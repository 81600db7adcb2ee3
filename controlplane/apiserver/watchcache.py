"""The watch cache: one store watch per resource, fanned out to every client watching it.

A cluster has many watchers of the same thing: every kubelet watches pods, every kube-proxy watches
services, kubectl users run ``get -w``. If each of them opened its own etcd watch, etcd would do the
work hundreds of times. kube-apiserver's **cacher** (``k8s.io/apiserver/pkg/storage/cacher``) instead
lists each resource once, watches it once from the list's revision, and keeps:

- the current objects, so reads with ``resourceVersion=0`` (and, since 1.31, consistent reads once
  the cache has caught up with the store) are served from memory;
- a bounded window of recent events, so a client can resume a watch from a recent resourceVersion
  without going to etcd; older than the window is ``410 Gone: too old resource version``. The
  window is sized as upstream's ``watchCache.resizeCacheLocked`` sizes it (``cacher/watch_cache.go``):
  it starts at 100 events, doubles (up to 102,400) while everything in it is younger than 75 s
  (``eventFreshDuration``, a bookmark's period plus a margin), and halves (never below 100) once
  even its newest quarter is older than that. A busy resource keeps about 75 s of history, a quiet
  one its last 100 changes, and an idle cluster's Lease renewals do not pile up for hours;
- the list of client watchers, each with its own filter (namespace, label and field selectors).

This module is that cacher. It knows nothing about HTTP: the watch handler turns its events into
the wire format.

Fan-out is where a busy API server spends its time: one write to a pod makes one store event, and a
thousand watchers of pods make that a thousand deliveries. Three things keep that cheap and fair:

- **encode once.** Each event's object is serialized the first time a watcher needs it and then
  shared, byte for byte, by every watcher that gets the same event (upstream's cacher does the same
  with its ``cachingObject``); a watcher only copies those bytes into its chunk, between the line's
  ``{"type":"MODIFIED","object":`` and ``}``. A watcher without selectors takes the event as it is,
  with no per-watcher work beyond queueing it.
- **fan out in turns.** Offering an event wakes each watcher's handler, and each handler then writes
  to its connection. Waking a thousand at once would keep the event loop busy with deliveries for
  tens of milliseconds while the request that caused the event (and every other request) waits for
  its response. So the cache wakes ``FANOUT_BATCH`` watchers, lets the event loop take a turn (read
  requests, send responses), then wakes the next ones.
- **batch when behind.** Two tasks share the work: one applies store events to the cache and puts
  the changes in an outbox, the other fans them out. Changes that arrive during a fan-out wait in the
  outbox and go out together next (up to ``MAX_FANOUT_EVENTS``), so each watcher wakes once and
  writes them in one chunk: the busier the server, the bigger the batches. A full outbox makes the
  first task wait, and the store watch buffers behind it (closing it, and so re-listing the cache,
  if even that overflows).

- **offer only where it can match.** Every kubelet watches pods with ``fieldSelector=spec.nodeName=
  <its node>``: offering each pod change to all of them, to be filtered out by all but one, costs
  nodes x changes. Like upstream's cacher with pods' ``NodeNameTriggerFunc`` (an *indexed trigger*),
  the cache files such watchers under the node they asked for and offers a change only to the
  watchers of the node the pod is (or was) on, plus every watcher without that selector.

- **keep what a selector reads, not the whole object.** Pods are the most numerous objects a watcher
  filters, and decoded they are several times their JSON's size. Like upstream's ``storeElement``
  (an object with its ``Labels`` and ``Fields``), the cache keeps each pod's labels and selectable
  fields beside its bytes, and drops the decoded form once the change has gone out
  (``ATTRIBUTES_ONLY``): selectors and the trigger read the fields; a request that needs the whole
  object decodes the bytes.

Every watcher still gets every event after the revision it started from, once and in order: each
watcher remembers that revision (``since``), and a batch goes out only after the previous one
reached every watcher.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from controlplane.api import serializer
from controlplane.api.apiextensions.customresources import fields_of
from controlplane.api.meta import Object
from controlplane.api.resources import ResourceType
from controlplane.apiserver.encryption.storage import UnreadableValue
from controlplane.apiserver.encryption.transformer import Transformer
from controlplane.apiserver.registry import decode
from controlplane.clock import SYSTEM_CLOCK, Clock, timeout
from controlplane.store import Event, EventType, Store, StoreClosed, StoreError, Watch
from controlplane.tasks import cancel_and_wait

logger = logging.getLogger(__name__)


#: The event window's bounds and how long an event stays fresh (``cacher/watch_cache.go``:
#: ``defaultLowerBoundCapacity``, ``defaultUpperBoundCapacity``, ``eventFreshDuration``).
LOWER_BOUND_CAPACITY = 100
UPPER_BOUND_CAPACITY = 100 * 1024
EVENT_FRESH_SECONDS = 75.0
#: Events a client watcher may fall behind before it is terminated (upstream's channel buffer is 100).
WATCHER_BUFFER = 1_000
#: Watchers woken per turn of the event loop while events are fanned out (see the module docstring).
FANOUT_BATCH = 25
#: Changes fanned out together at most, and the outbox's size (well below ``WATCHER_BUFFER``).
MAX_FANOUT_EVENTS = 100


#: Resources whose current objects are kept as bytes only, decoded again when a request needs them.
#: kube-apiserver has no watch cache for Events at all (``DefaultWatchCacheSizes`` in
#: ``pkg/kubeapiserver/default_storage_factory_builder.go``): they are the most numerous objects, and
#: rarely read. Kubelab keeps one, for watches, but not their decoded form.
BYTES_ONLY = {("", "events"), ("events.k8s.io", "events")}
#: Resources whose current objects are kept as bytes plus their labels and selectable fields (see the
#: module docstring): a pod decoded is about 29 KB of Python objects for 4 KB of JSON, and a cluster
#: holds thousands. Events are not among them: they are rarely selected on, and so many that their
#: fields would cost more than they save.
ATTRIBUTES_ONLY = {("", "pods")}


class TooOldResourceVersion(Exception):
    """A watch asked to resume from before the cache's window: the client must re-list (410)."""

    def __init__(self, requested: int, oldest: int) -> None:
        super().__init__(f"too old resource version: {requested} ({oldest})")
        self.requested = requested
        self.oldest = oldest


class Cached:
    """One object as the cache holds it: decoded, and serialized once on demand.

    A version that is no longer current (superseded by a newer one, or deleted) stays in the event
    window only so that a watch can resume from before it; once its change has gone out to every
    watcher it is ``release``d: the cache keeps its bytes and drops the decoded form, several times
    bigger. A late reader decodes the bytes again, without keeping the result.

    An object of a ``BYTES_ONLY`` resource may also be held as the store gave it (``Cached.stored``):
    nothing is decoded until a reader or a watcher needs it. Most Events are never read at all.
    """

    __slots__ = ("_convert", "_obj", "_raw", "_stored", "fields", "labels", "revision")

    def __init__(
        self,
        obj: Object | None,
        revision: int,
        labels: Mapping[str, str] | None = None,
        fields: Mapping[str, str] | None = None,
    ) -> None:
        self._obj: Object | None = obj
        self._raw: bytes | None = None
        #: The stored value (without its resourceVersion), while neither form has been made, and
        #: what turns the stored form into this version's (None: served as stored).
        self._stored: bytes | None = None
        self._convert: Callable[[Object], Object] | None = None
        self.revision = revision
        #: Its labels and selectable fields (``selectors.field_set``), when the cache keeps them
        #: (``ATTRIBUTES_ONLY``); None: selectors read the object.
        self.labels = labels
        self.fields = fields

    @classmethod
    def stored(cls, value: bytes, revision: int, convert: Callable[[Object], Object] | None = None) -> Cached:
        """The object stored as ``value`` at ``revision`` (plain JSON), not decoded yet; ``convert``
        makes the stored form this cache's version (an events.k8s.io/v1 Event of a core one)."""
        cached = cls(None, revision)
        cached._stored = value
        cached._convert = convert
        return cached

    @property
    def obj(self) -> Object:
        if self._obj is not None:
            return self._obj
        if self._raw is not None:  # released, so its bytes were kept
            decoded: Object = serializer.decode(self._raw)
            return decoded
        assert self._stored is not None
        found: Object = serializer.decode(self._stored)
        found.setdefault("metadata", {})["resourceVersion"] = str(self.revision)  # as registry.decode
        return found if self._convert is None else self._convert(found)

    @property
    def raw(self) -> bytes:
        if self._raw is None:
            self._raw = serializer.encode(self.obj)
            self._stored = None
        return self._raw

    @property
    def released(self) -> bool:
        return self._obj is None

    def release(self) -> None:
        """Keep only the serialized form (see the class docstring)."""
        if self._obj is not None:
            self.raw  # noqa: B018 (serialize before the decoded form goes)
            self._obj = None

    def __repr__(self) -> str:
        return f"Cached(revision={self.revision}, released={self.released})"


@dataclass(slots=True)
class CacheEvent:
    """A change as clients see it: ADDED, MODIFIED or DELETED, with the object before and after.

    The object is serialized once for every watcher (``Cached.raw``); the line around it is not
    kept: a window holding each object's bytes twice, once alone for reads and once inside its
    line, would double what the window costs, and a watcher copies the bytes into its chunk anyway.
    """

    type: str
    key: str
    revision: int
    object: Cached
    previous: Cached | None
    #: When the cache recorded it, in the cluster's time (what the window's sizing reads).
    recorded: float = 0.0

    def line_parts(self) -> tuple[bytes, bytes, bytes]:
        """The pieces of :attr:`json_line`, for a writer that joins them into its chunk."""
        return _LINE_PREFIXES[self.type], self.object.raw, b"}\n"

    @property
    def json_line(self) -> bytes:
        """``{"type":...,"object":...}`` and a newline: one line of a JSON watch stream."""
        return b"".join(self.line_parts())


#: What comes before the object in a line of each event type (a cache event is one of these three).
_LINE_PREFIXES: Final = {
    t: b'{"type":"' + t.encode() + b'","object":' for t in ("ADDED", "MODIFIED", "DELETED")
}


#: A watcher's selectors as one predicate; None when it has none (every object matches).
Filter = Callable[[Object], bool]


def _pod_node_name(obj: Object) -> str:
    return str((obj.get("spec") or {}).get("nodeName") or "")


#: Indexed triggers by (group, plural): the field a watcher's selector may pin, and how to read it
#: from an object (upstream: ``pkg/registry/core/pod/storage``'s ``NodeNameTriggerFunc``).
TRIGGERS: dict[tuple[str, str], tuple[str, Callable[[Object], str]]] = {
    ("", "pods"): ("spec.nodeName", _pod_node_name),
}


def matches_cached(matches: Filter, cached: Cached) -> bool:
    """Whether ``cached`` passes ``matches``: on its kept labels and fields when both sides allow it
    (a ``SelectorFilter`` and an ``ATTRIBUTES_ONLY`` object), else on the object itself."""
    on_attributes = getattr(matches, "attributes", None)
    if on_attributes is not None and cached.fields is not None and cached.labels is not None:
        return bool(on_attributes(cached.labels, cached.fields))
    return matches(cached.obj)


class CacheWatcher:
    """One client's watch on the cache: a buffer of events the watch handler takes in batches.

    The cache ``offer``s every change; the watcher keeps what matches its filter (translating selector
    transitions into ADDED/DELETED) without ever blocking the cache. A watcher that falls
    ``WATCHER_BUFFER`` events behind is closed, like upstream's cacher terminating a slow watcher, and
    its client re-watches or re-lists. Changes up to ``since`` (the revision the watcher started from:
    it had them from the event window or the current objects) are not offered again.
    """

    def __init__(
        self,
        namespace_prefix: str,
        matches: Filter | None,
        *,
        capacity: int = WATCHER_BUFFER,
        since: int = 0,
        trigger_value: str | None = None,
    ) -> None:
        self.namespace_prefix = namespace_prefix
        self.matches = matches
        #: The value this watcher's selector pins the cache's trigger field to (None: not pinned).
        self.trigger_value = trigger_value
        #: The watch as the topology diagram draws it (its id, edge and resource), set by the watch
        #: handler for a client's watch: the open watches are part of the state a page starts from.
        self.diagram: Mapping[str, Any] | None = None
        self.since = since
        self.capacity = capacity
        self.buffer: list[CacheEvent] = []
        self.closed_reason: str | None = None
        #: How many of the first buffered events are the initial state (sendInitialEvents), and the
        #: cache's revision that state was taken at: where the initial-events-end bookmark points.
        self.initial = 0
        self.initial_revision = 0
        self._waiter: asyncio.Future[None] | None = None

    def offer(self, event: CacheEvent) -> None:
        """Translate a change for this watcher (selector transitions) and buffer it without blocking."""
        if (
            self.closed_reason is not None
            or event.revision <= self.since
            or not event.key.startswith(self.namespace_prefix)
        ):
            return
        matches = self.matches
        if matches is None:  # no selectors: every change is this watcher's, exactly as it is
            self.push(event)
            return
        before = event.previous is not None and matches_cached(matches, event.previous)
        if event.type == "DELETED":
            out = event if before else None
        else:
            now = matches_cached(matches, event.object)
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
        events, self.buffer = self.buffer, []
        return events

    def close(self, reason: str) -> None:
        if self.closed_reason is None:
            self.closed_reason = reason
            self.buffer.clear()
            self.poke()


class WatchCache:
    """The cache of one resource type: current objects, recent events, client watchers."""

    #: Decrypts the stored values (encryption at rest; set by the API server with the registry's).
    transformer: Transformer | None = None

    def __init__(
        self, store: Store, rtype: ResourceType, *, window: int = 0, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        """``window``: a fixed number of events to keep for resuming watches; 0 sizes the window as
        upstream does (see the module's docstring)."""
        self.store = store
        #: The cluster clock: how long a re-list backs off, how long a consistent read waits.
        self.clock = clock
        self.rtype = rtype
        self.prefix = rtype.prefix()
        self.objects: dict[str, Cached] = {}
        #: Stored values no provider could read, by key: reads of them answer 500, as upstream.
        self.unreadable: dict[str, UnreadableValue] = {}
        self.revision = 0
        self.events: collections.deque[CacheEvent] = collections.deque()
        #: The event window's bounds (equal for a fixed window) and its capacity now.
        self.lower_bound = window or LOWER_BOUND_CAPACITY
        self.upper_bound = window or UPPER_BOUND_CAPACITY
        self.capacity = self.lower_bound
        #: The cache can serve a watch from any revision >= this one.
        self.oldest = 0
        #: The client watchers, in the order they started (the order a fan-out serves them in).
        self.watchers: dict[CacheWatcher, None] = {}
        #: The indexed trigger of this resource, if any: the field name and how to read it.
        self.trigger = TRIGGERS.get((rtype.group, rtype.plural))
        #: Whether objects keep their labels and selectable fields beside their bytes (ATTRIBUTES_ONLY).
        self.keep_attributes = (rtype.group, rtype.plural) in ATTRIBUTES_ONLY
        #: Whether current objects stay decoded, or are kept as bytes once fanned out (see BYTES_ONLY).
        self.keep_decoded = (rtype.group, rtype.plural) not in BYTES_ONLY and not self.keep_attributes
        self._resource_key = f"{rtype.group}/{rtype.plural}"
        self._fields_of = fields_of(rtype)
        #: Watchers pinned to one trigger value, by value; the others are in ``_unpinned``.
        self._pinned: dict[str, dict[CacheWatcher, None]] = {}
        self._unpinned: dict[CacheWatcher, None] = {}
        self._task: asyncio.Task[None] | None = None
        #: Changes applied to the cache and not yet offered to the watchers (see the module docstring).
        self._outbox: asyncio.Queue[CacheEvent] = asyncio.Queue(maxsize=MAX_FANOUT_EVENTS)
        self._fanout_task: asyncio.Task[None] | None = None
        self._watch: Watch | None = None
        self._ready = asyncio.Event()
        self._advanced = asyncio.Event()
        #: How many ``wait_for`` calls wait on ``_advanced`` now (``_notify`` sets it only for them).
        self._waiting = 0

    @property
    def lazy(self) -> bool:
        """Whether objects are kept as the store gave them, decoded only when read (``Cached.stored``).

        Only for ``BYTES_ONLY`` resources stored as plain JSON: a value to decrypt is decrypted as it
        comes, so that one no key opens is found at once (``unreadable``). A version other than the
        stored one (events.k8s.io/v1 of core Events) is converted when read, as it is decoded; its
        cache then shares the store's bytes with the stored version's cache.
        """
        return not self.keep_decoded and not self.keep_attributes and self.transformer is None

    @property
    def _conversion(self) -> Callable[[Object], Object] | None:
        return None if self.rtype.conversion is None else self.rtype.from_storage

    # -- lifecycle -------------------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        """Whether the cache has been filled (its first list is in); ``start`` waits for it."""
        return self._ready.is_set()

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"watchcache-{self.rtype.plural}")
            self._fanout_task = asyncio.create_task(
                self._deliver(), name=f"watchcache-{self.rtype.plural}-fanout"
            )
        await self._ready.wait()

    async def stop(self) -> None:
        for task in (self._task, self._fanout_task):
            if task is not None:
                await cancel_and_wait(task)
        self._task = self._fanout_task = None
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
                await self.clock.sleep(delay)
                delay = min(delay * 2, 5.0)

    async def _list_and_watch(self) -> None:
        listed: dict[str, Cached] = {}
        unreadable: dict[str, UnreadableValue] = {}
        start: str | None = None
        revision: int | None = None
        while True:
            page = await self.store.range(self.prefix, start=start, revision=revision, limit=1000)
            revision = page.revision
            for kv in page.kvs:
                if self.lazy:
                    listed[kv.key] = Cached.stored(kv.value, kv.mod_revision, self._conversion)
                    continue
                try:
                    cached = listed[kv.key] = self._cached(
                        self.rtype.from_storage(decode(kv, self.transformer)), kv.mod_revision
                    )
                except UnreadableValue as error:
                    unreadable[kv.key] = error
                    continue
                if not self.keep_decoded:
                    cached.release()
            if not page.more:
                break
            start = page.kvs[-1].key + "\0"
        assert revision is not None
        relisted = bool(self._ready.is_set())
        self.objects = listed
        self.unreadable = unreadable
        self.revision = revision
        self.events.clear()
        self.oldest = revision
        if relisted:
            # Our history has a hole: every client watcher must re-list too.
            for watcher in list(self.watchers):
                watcher.close("the watch cache was re-initialized")
            self.watchers.clear()
            while not self._outbox.empty():  # changes of the old history: nobody is left for them
                self._outbox.get_nowait()
        self._ready.set()
        self._notify()
        watch = await self.store.watch(self.prefix, from_revision=revision)
        self._watch = watch
        try:
            async for event in watch:
                change = self._apply(event)
                if change is not None:
                    await self._outbox.put(change)  # waits only when the outbox is full
                if watch.backlog == 0:
                    self._advance(watch.progress_revision)
        finally:
            await watch.close()

    # -- applying store events -------------------------------------------------------------------

    def _cached(self, obj: Object, revision: int) -> Cached:
        """``obj`` as the cache holds it, with its labels and fields if it keeps them."""
        if not self.keep_attributes:
            return Cached(obj, revision)
        labels = (obj.get("metadata") or {}).get("labels") or {}
        fields = self._fields_of(obj)
        return Cached(obj, revision, labels, fields)

    def _current(self, event: Event) -> Cached:
        """The object ``event`` put, as the cache holds it."""
        if self.lazy:
            return Cached.stored(event.kv.value, event.revision, self._conversion)
        # Objects are kept in this type's version (converted once here, for every reader).
        obj = self.rtype.from_storage(decode(event.kv, self.transformer))
        return self._cached(obj, event.revision)

    def _apply(self, event: Event) -> CacheEvent | None:
        """Bring the objects and the event window up to ``event``; the change for watchers, if any."""
        previous = self.objects.get(event.key)
        if self.unreadable:
            self.unreadable.pop(event.key, None)
        if event.type is EventType.PUT:
            try:
                current = self._current(event)
            except UnreadableValue as error:
                self._unreadable(event, error)
                return None
            self.objects[event.key] = current
            change = CacheEvent(
                "MODIFIED" if previous else "ADDED", event.key, event.revision, current, previous
            )
        else:
            if previous is None:
                self._advance(event.revision)
                return None
            del self.objects[event.key]
            # A deleted object is reported in its last state, with the deleting revision.
            gone = dict(previous.obj)
            gone["metadata"] = dict(gone["metadata"], resourceVersion=str(event.revision))
            last = Cached(gone, event.revision, previous.labels, previous.fields)
            change = CacheEvent("DELETED", event.key, event.revision, last, previous)
        change.recorded = self.clock.now()
        self._record(change)
        self._advance(event.revision)
        return change

    def _record(self, change: CacheEvent) -> None:
        """Append ``change`` to the event window, resizing it first as upstream's
        ``updateCache``/``resizeCacheLocked`` do, and dropping the oldest event if it is full."""
        events = self.events
        if len(events) >= self.capacity:
            if change.recorded - events[0].recorded < EVENT_FRESH_SECONDS:
                # Everything kept is fresh: keep more rather than cut a watcher's history short.
                self.capacity = min(self.capacity * 2, self.upper_bound)
            elif change.recorded - events[len(events) - self.capacity // 4].recorded > EVENT_FRESH_SECONDS:
                # Even the newest quarter is stale: the window is bigger than this resource needs.
                self.capacity = max(self.capacity // 2, self.lower_bound)
            while len(events) >= self.capacity:
                # A watch from this event's revision on still has every later event.
                self.oldest = events.popleft().revision
        events.append(change)

    async def _deliver(self) -> None:
        """The fan-out task: take every change waiting in the outbox, offer them, and again."""
        while True:
            changes = [await self._outbox.get()]
            while not self._outbox.empty() and len(changes) < MAX_FANOUT_EVENTS:
                changes.append(self._outbox.get_nowait())
            await self._fan_out(changes)

    async def _fan_out(self, changes: list[CacheEvent]) -> None:
        """Offer ``changes`` to every watcher, ``FANOUT_BATCH`` watchers per turn of the event loop.

        A watch that starts while the fan-out is under way is not in the list: it found the changes
        in the event window or the objects already (and ``since`` keeps any watcher from getting a
        change twice).
        """
        deliveries = self._deliveries(changes)
        for start in range(0, len(deliveries), FANOUT_BATCH):
            if start:
                await asyncio.sleep(0)  # let requests and responses through between turns
            for watcher, theirs in deliveries[start : start + FANOUT_BATCH]:
                for change in theirs:
                    watcher.offer(change)
        # Every watcher has these changes now: the versions they replaced (and deleted objects'
        # last states) are history, kept only for resuming watches.
        for change in changes:
            if change.previous is not None:
                change.previous.release()
            if change.type == "DELETED" or not self.keep_decoded:
                change.object.release()

    def _deliveries(self, changes: list[CacheEvent]) -> list[tuple[CacheWatcher, list[CacheEvent]]]:
        """Which watchers ``changes`` may concern, each with the changes that may concern it.

        The unpinned watchers get them all. A pinned watcher gets only the changes whose object has
        its value now or had it before (a pod moving off a node is news to that node): a batch of a
        hundred pod changes on a hundred nodes is then one change for each kubelet, not a hundred
        to filter out.
        """
        if self.trigger is None or not self._pinned:
            return [(watcher, changes) for watcher in self.watchers]
        field, read = self.trigger

        def value_of(cached: Cached) -> str:
            return cached.fields.get(field, "") if cached.fields is not None else read(cached.obj)

        by_value: dict[str, list[CacheEvent]] = {}
        for change in changes:
            now = value_of(change.object)
            by_value.setdefault(now, []).append(change)
            if change.previous is not None and (before := value_of(change.previous)) != now:
                by_value.setdefault(before, []).append(change)
        deliveries = [(watcher, changes) for watcher in self._unpinned]
        for value, theirs in by_value.items():
            deliveries.extend((watcher, theirs) for watcher in self._pinned.get(value, ()))
        return deliveries

    def _advance(self, revision: int) -> None:
        if revision > self.revision:
            self.revision = revision
            self._notify()

    def _notify(self) -> None:
        # Nearly always nobody waits (a write's event comes in, no read is behind it): then there is
        # nobody to wake, and the unset Event stays for the next waiter.
        if self._waiting:
            self._advanced.set()
            self._advanced = asyncio.Event()

    # -- reads -----------------------------------------------------------------------------------

    async def wait_for(self, revision: int, seconds: float) -> bool:
        """Wait until the cache has caught up with ``revision``; False if it did not in time."""
        await self._ready.wait()
        if self._watch is not None and self._watch.backlog == 0:
            self._advance(self._watch.progress_revision)
        if self.revision >= revision:
            return True  # the usual case: no timer to set up
        try:
            async with timeout(self.clock, seconds):
                while self.revision < revision:
                    self._waiting += 1
                    try:
                        await self._advanced.wait()
                    finally:
                        self._waiting -= 1
        except TimeoutError:
            return False
        return True

    def get(self, key: str) -> Cached | None:
        cached = self.objects.get(key)
        if cached is None and key in self.unreadable:
            raise self.unreadable[key]
        return cached

    def list(self, namespace: str | None, matches: Filter | None) -> list[Cached]:
        prefix = self.rtype.prefix(namespace)
        if self.unreadable:  # upstream's list fails on the first value it cannot read
            for key in sorted(self.unreadable):
                if key.startswith(prefix):
                    raise self.unreadable[key]
        # In key order, as etcd ranges return them (namespace, then name).
        items = [c for _, c in sorted((k, c) for k, c in self.objects.items() if k.startswith(prefix))]
        if matches is not None:
            items = [c for c in items if matches_cached(matches, c)]
        return items

    def _unreadable(self, event: Event, error: UnreadableValue) -> None:
        """A value written that no provider can read: forget the old object, answer reads with 500.

        Upstream's watch would fail and its cache re-list into the same error; here the cache keeps
        serving every other object. Watchers get no event for it (there is no object to show).
        """
        logger.warning("watch cache %s: %s", self.rtype.plural, error.message)
        self.objects.pop(event.key, None)
        self.unreadable[event.key] = error
        self._advance(event.revision)

    # -- watches ---------------------------------------------------------------------------------

    def watch(
        self,
        namespace: str | None,
        matches: Filter | None,
        from_revision: int | None,
        *,
        trigger_value: str | None = None,
    ) -> CacheWatcher:
        """A watcher receiving changes after ``from_revision`` (None: the current state as ADDED first).

        ``trigger_value`` is the value the watcher's field selector requires of this resource's
        indexed trigger field (``spec.nodeName`` for pods), if it pins it; ``matches`` must then
        imply it. Raises ``TooOldResourceVersion`` when ``from_revision`` is older than the window.
        """
        if self.trigger is None:
            trigger_value = None
        watcher = CacheWatcher(self.rtype.prefix(namespace), matches, trigger_value=trigger_value)
        if from_revision is None:
            initial = self.list(namespace, matches)
            watcher.capacity = max(watcher.capacity, len(initial) + WATCHER_BUFFER)
            for cached in initial:
                watcher.push(CacheEvent("ADDED", "", cached.revision, cached, None))
            watcher.initial = len(initial)
            watcher.initial_revision = self.revision
        else:
            if from_revision < self.oldest:
                raise TooOldResourceVersion(from_revision, self.oldest)
            watcher.since = from_revision
            for event in self.events:
                if event.revision > from_revision:
                    watcher.offer(event)
        # The watcher has everything up to the cache's revision now: from here on, only later changes.
        watcher.since = self.revision
        self.watchers[watcher] = None
        if watcher.trigger_value is None:
            self._unpinned[watcher] = None
        else:
            self._pinned.setdefault(watcher.trigger_value, {})[watcher] = None
        return watcher

    def forget(self, watcher: CacheWatcher) -> None:
        self.watchers.pop(watcher, None)
        self._unpinned.pop(watcher, None)
        if watcher.trigger_value is not None:
            pinned = self._pinned.get(watcher.trigger_value)
            if pinned is not None:
                pinned.pop(watcher, None)
                if not pinned:
                    del self._pinned[watcher.trigger_value]


__all__ = [
    "CacheEvent",
    "CacheWatcher",
    "Cached",
    "TooOldResourceVersion",
    "WatchCache",
]
