"""The DeltaFIFO: the queue between a reflector and an informer, holding *changes*, not objects.

A reflector learns about changes (from its list and its watch) faster than handlers may process
them. client-go puts a queue between the two (``tools/cache/delta_fifo.go``) with two properties:

- it is **keyed**: per object key it keeps the list of changes (*deltas*) not yet processed, and the
  key appears in the queue once. A handler that falls behind gets all of an object's changes at once,
  in order, instead of a queue of stale copies;
- it **knows what the cache knows** (``known_objects``, the informer's indexer). That is what makes a
  relist work. After a watch was lost (410 Expired), the reflector lists again and calls
  ``replace(items)``: every listed object becomes a ``Replaced`` delta, and every key the cache holds
  that is *not* in the list was deleted while we were not watching. Its final state was never seen,
  so it becomes a ``Deleted`` delta of a ``DeletedFinalStateUnknown`` carrying the last state known.

The delta types: ``Added``, ``Updated``, ``Deleted`` (from watch events), ``Replaced`` (from a
relist) and ``Sync`` (a periodic resync re-delivering what the cache holds, so a controller can
re-check everything now and then).

``has_synced`` becomes true once every item of the first list has been popped: the informer's cache
then holds a complete picture, and controllers may start (``WaitForCacheSync``).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from controlplane.api.meta import Object
from controlplane.client.cache import DeletedFinalStateUnknown, KeyFunc, meta_namespace_key_func


class DeltaType(StrEnum):
    ADDED = "Added"
    UPDATED = "Updated"
    DELETED = "Deleted"
    REPLACED = "Replaced"
    SYNC = "Sync"


@dataclass(frozen=True, slots=True)
class Delta:
    """One change to one object: its type and the object after it (or its final state, if known)."""

    type: DeltaType
    object: Object | DeletedFinalStateUnknown


Deltas = list[Delta]


class KnownObjects(Protocol):
    """What the queue asks of the cache behind it (client-go ``KeyListerGetter``)."""

    def list_keys(self) -> list[str]: ...

    def get_by_key(self, key: str) -> Object | None: ...


class FIFOClosed(Exception):
    """``pop`` on a closed queue: the informer is stopping."""


def _is_deletion_dup(a: Delta, b: Delta) -> Delta | None:
    """Two deletions in a row are one; the one with the real final state wins (``isDeletionDup``)."""
    if a.type is not DeltaType.DELETED or b.type is not DeltaType.DELETED:
        return None
    if isinstance(b.object, DeletedFinalStateUnknown):
        return a
    return b


class DeltaFIFO:
    """A queue of per-key deltas, in the order keys first changed."""

    def __init__(
        self,
        *,
        key_func: KeyFunc = meta_namespace_key_func,
        known_objects: KnownObjects | None = None,
        on_synced: Callable[[], None] | None = None,
    ) -> None:
        self.key_func = key_func
        self.known_objects = known_objects
        #: Called once, the moment ``has_synced`` first becomes true.
        self.on_synced = on_synced
        self._synced_reported = False
        self._items: dict[str, Deltas] = {}
        self._queue: deque[str] = deque()
        self._populated = False
        self._initial_population_count = 0
        self._closed = False
        self._changed = asyncio.Event()

    # -- what the reflector calls --------------------------------------------------------------------

    def add(self, obj: Object) -> None:
        self._populated = True
        self._queue_action(DeltaType.ADDED, obj)
        self._report_synced()

    def update(self, obj: Object) -> None:
        self._populated = True
        self._queue_action(DeltaType.UPDATED, obj)
        self._report_synced()

    def delete(self, obj: Object) -> None:
        """A deletion; ignored if neither the queue nor the cache knows the object (nothing to delete)."""
        key = self.key_func(obj)
        self._populated = True
        known = self.known_objects is not None and self.known_objects.get_by_key(key) is not None
        if not known and key not in self._items:
            self._report_synced()
            return  # deleted already, presumably reported by a relist: do not report it twice
        self._queue_action(DeltaType.DELETED, obj)
        self._report_synced()

    def replace(self, items: Iterable[Object], resource_version: str = "") -> None:
        """A relist: ``Replaced`` for every listed object, ``Deleted`` for what disappeared meanwhile."""
        keys: set[str] = set()
        for obj in items:
            key = self.key_func(obj)
            keys.add(key)
            self._queue_action(DeltaType.REPLACED, obj, key)

        queued_deletions = 0
        # Objects still in the queue but not in the list: deleted while we were not watching.
        for key, deltas in list(self._items.items()):
            if key in keys:
                continue
            last: Any = deltas[-1].object if deltas else None
            if isinstance(last, DeletedFinalStateUnknown):
                last = last.obj
            queued_deletions += 1
            self._queue_action(DeltaType.DELETED, DeletedFinalStateUnknown(key, last), key)

        # Objects the cache holds (and nothing is queued for) but the list does not have.
        if self.known_objects is not None:
            for key in self.known_objects.list_keys():
                if key in keys or self._items.get(key):
                    continue
                queued_deletions += 1
                final = self.known_objects.get_by_key(key)
                self._queue_action(DeltaType.DELETED, DeletedFinalStateUnknown(key, final), key)

        if not self._populated:
            self._populated = True
            self._initial_population_count = len(keys) + queued_deletions
        self._report_synced()

    def resync(self) -> None:
        """A ``Sync`` delta for every object the cache holds that has no change queued."""
        if self.known_objects is None:
            return
        for key in self.known_objects.list_keys():
            if self._items.get(key):
                continue  # a pending change will deliver a newer state anyway
            obj = self.known_objects.get_by_key(key)
            if obj is not None:
                self._queue_action(DeltaType.SYNC, obj, key)

    # -- what the informer calls ---------------------------------------------------------------------

    async def pop(self, process: Callable[[Deltas], None]) -> None:
        """Wait for a key, take all its deltas and ``process`` them before anyone sees the queue again.

        ``process`` runs synchronously, so ``has_synced`` turns true only once the last item of the
        initial list has been processed, not merely taken.
        """
        while not self._queue:
            if self._closed:
                raise FIFOClosed
            self._changed.clear()
            await self._changed.wait()
        key = self._queue.popleft()
        if self._initial_population_count > 0:
            self._initial_population_count -= 1
        deltas = self._items.pop(key, [])
        process(deltas)
        self._report_synced()

    def has_synced(self) -> bool:
        """True once the first ``replace`` (or any change) happened and its items were all popped."""
        return self._populated and self._initial_population_count == 0

    def close(self) -> None:
        self._closed = True
        self._changed.set()

    @property
    def closed(self) -> bool:
        return self._closed

    def list_keys(self) -> list[str]:
        return list(self._queue)

    def deltas(self, key: str) -> Deltas:
        """The deltas queued for ``key`` (a copy; for tests and the curious)."""
        return list(self._items.get(key, []))

    def __len__(self) -> int:
        return len(self._queue)

    # -- internals -----------------------------------------------------------------------------------

    def _report_synced(self) -> None:
        if not self._synced_reported and self.has_synced():
            self._synced_reported = True
            if self.on_synced is not None:
                self.on_synced()

    def _queue_action(
        self, type: DeltaType, obj: Object | DeletedFinalStateUnknown, key: str | None = None
    ) -> None:
        key = key if key is not None else self.key_func(obj)
        deltas = self._items.get(key)
        new = Delta(type, obj)
        if deltas:
            merged = _is_deletion_dup(deltas[-1], new)
            if merged is not None:
                deltas[-1] = merged
            else:
                deltas.append(new)
        else:
            self._queue.append(key)
            self._items[key] = [new]
        self._changed.set()


__all__ = ["Delta", "DeltaFIFO", "DeltaType", "Deltas", "FIFOClosed", "KnownObjects"]
