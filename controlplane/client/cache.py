"""The client-side cache: objects by key, and indexes to find them by anything else.

A controller reads the cluster from memory, not from the API server: an informer keeps a local copy
of every object of a resource, up to date through a watch, and the controller asks the copy. This
module is that copy (client-go ``tools/cache`` ``Store`` and ``Indexer``).

**Keys.** Every object is stored under its key, ``<namespace>/<name>``, or just ``<name>`` for a
cluster-scoped object (``MetaNamespaceKeyFunc``). Controllers pass these keys around (a workqueue
holds keys, not objects) and look the object up again when they work on it, so they always see the
latest copy.

**Indexes.** "Which pods are on node-1?" should not scan every pod. An *index function* maps an
object to the values it is filed under (``pods_by_node(pod) -> [pod.spec.nodeName]``), and the
indexer keeps, per index, a map from each value to the keys filed under it, updated on every change.
``by_index("nodeName", "node-1")`` is then a lookup. Every informer has the namespace index
(``NAMESPACE_INDEX``); ``field_index_func("spec.nodeName")`` makes an index on any field.

Objects here are shared, not copied: whoever reads one from the cache must not change it (client-go
asks the same), or the cache would no longer be what the API server said.

``DeletedFinalStateUnknown`` is what an informer hands to ``on_delete`` for an object that was deleted
while its watch was disconnected: the relist shows it gone, but its final state was never seen, so
what comes is the last state the cache knew, wrapped with its key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from controlplane.api.meta import Object, object_key, object_meta

#: An index function: the values an object is filed under in one index.
IndexFunc = Callable[[Object], list[str]]
KeyFunc = Callable[[Any], str]

#: Lists of objects and of keys (named so, because ``Indexer.list`` shadows ``list`` in its class).
Objects = list[Object]
Keys = list[str]

#: The name of the namespace index, which every informer has (``cache.NamespaceIndex``).
NAMESPACE_INDEX = "namespace"


@dataclass(frozen=True, slots=True)
class DeletedFinalStateUnknown:
    """An object deleted while the watch was down: its key and the last state the cache had."""

    key: str
    obj: Object | None


class KeyFuncError(ValueError):
    """An object without ``metadata.name``: it has no key (client-go ``cache.KeyError``)."""


def meta_namespace_key_func(obj: Any) -> str:
    """``<namespace>/<name>``, or ``<name>`` when the object has no namespace.

    Accepts a ``DeletedFinalStateUnknown`` too, and returns its key
    (``DeletionHandlingMetaNamespaceKeyFunc``), so deletions can be keyed like anything else.
    """
    if isinstance(obj, DeletedFinalStateUnknown):
        return obj.key
    if isinstance(obj, str):  # already a key
        return obj
    if not object_meta(obj).get("name"):
        raise KeyFuncError(f"object has no metadata.name: {obj!r:.200}")
    return object_key(obj)


def split_meta_namespace_key(key: str) -> tuple[str, str]:
    """``"ns/name"`` -> ``("ns", "name")``; ``"name"`` -> ``("", "name")``."""
    namespace, sep, name = key.partition("/")
    if not sep:
        return "", key
    if "/" in name:
        raise ValueError(f"unexpected key format: {key!r}")
    return namespace, name


def meta_namespace_index_func(obj: Object) -> list[str]:
    """The namespace index: an object is filed under its namespace ("" for cluster-scoped ones)."""
    return [str((obj.get("metadata") or {}).get("namespace") or "")]


def field_index_func(path: str) -> IndexFunc:
    """An index on a field given by its dotted path, e.g. ``spec.nodeName`` (empty values: not filed)."""
    parts = path.split(".")

    def index(obj: Object) -> list[str]:
        value: Any = obj
        for part in parts:
            if not isinstance(value, Mapping):
                return []
            value = value.get(part)
        if value is None or value == "":
            return []
        if isinstance(value, list):
            return [str(v) for v in value]
        return [str(value)]

    return index


def resource_version(obj: Object) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


class Indexer:
    """A store of objects by key with indexes (client-go ``cache.Indexer`` over a thread-safe store).

    It is also a reflector's store (``add``/``update``/``delete``/``replace``/``resync``), so a
    reflector can keep one up to date directly when nobody needs event handlers.
    """

    def __init__(
        self, key_func: KeyFunc = meta_namespace_key_func, indexers: Mapping[str, IndexFunc] | None = None
    ) -> None:
        self.key_func = key_func
        self._items: dict[str, Object] = {}
        self._indexers: dict[str, IndexFunc] = {}
        #: index name -> indexed value -> keys
        self._indices: dict[str, dict[str, set[str]]] = {}
        if indexers:
            self.add_indexers(indexers)

    # -- Store --------------------------------------------------------------------------------------

    def add(self, obj: Object) -> None:
        self._put(self.key_func(obj), obj)

    def update(self, obj: Object) -> None:
        self._put(self.key_func(obj), obj)

    def delete(self, obj: Object | DeletedFinalStateUnknown) -> None:
        key = self.key_func(obj)
        old = self._items.pop(key, None)
        if old is not None:
            self._unindex(key, old)

    def get(self, obj: Object | DeletedFinalStateUnknown) -> Object | None:
        return self._items.get(self.key_func(obj))

    def get_by_key(self, key: str) -> Object | None:
        return self._items.get(key)

    def list(self) -> Objects:
        return list(self._items.values())

    def list_keys(self) -> Keys:
        return list(self._items)

    def replace(self, items: Iterable[Object], resource_version: str = "") -> None:
        """Make the store hold exactly ``items`` (a relist)."""
        self._items = {}
        self._indices = {name: {} for name in self._indexers}
        for obj in items:
            self._put(self.key_func(obj), obj)

    def resync(self) -> None:
        """Nothing to do for a plain store (a ``DeltaFIFO`` re-delivers its known objects)."""

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    # -- Indexer ------------------------------------------------------------------------------------

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """Add indexes, also over the objects already stored."""
        clash = set(indexers) & set(self._indexers)
        if clash:
            raise ValueError(f"indexer conflict: {sorted(clash)}")
        for name, func in indexers.items():
            self._indexers[name] = func
            index: dict[str, set[str]] = {}
            for key, obj in self._items.items():
                for value in func(obj):
                    index.setdefault(value, set()).add(key)
            self._indices[name] = index

    def get_indexers(self) -> dict[str, IndexFunc]:
        return dict(self._indexers)

    def index_keys(self, index_name: str, value: str) -> Keys:
        """The keys filed under ``value`` in the index (sorted)."""
        return sorted(self._index(index_name).get(value, ()))

    def by_index(self, index_name: str, value: str) -> Objects:
        """The objects filed under ``value``, e.g. ``by_index(NAMESPACE_INDEX, "default")``."""
        return [self._items[key] for key in self.index_keys(index_name, value)]

    def index(self, index_name: str, obj: Object) -> Objects:
        """The objects sharing any of ``obj``'s values in the index."""
        func = self._indexers.get(index_name)
        if func is None:
            raise KeyError(f"index {index_name!r} does not exist")
        keys: set[str] = set()
        for value in func(obj):
            keys |= self._index(index_name).get(value, set())
        return [self._items[key] for key in sorted(keys)]

    def list_index_func_values(self, index_name: str) -> Keys:
        """Every value something is filed under in the index (sorted)."""
        return sorted(self._index(index_name))

    def _index(self, index_name: str) -> dict[str, set[str]]:
        index = self._indices.get(index_name)
        if index is None:
            raise KeyError(f"index {index_name!r} does not exist")
        return index

    # -- maintenance ----------------------------------------------------------------------------------

    def _put(self, key: str, obj: Object) -> None:
        old = self._items.get(key)
        if old is not None:
            self._unindex(key, old)
        self._items[key] = obj
        for name, func in self._indexers.items():
            index = self._indices[name]
            for value in func(obj):
                index.setdefault(value, set()).add(key)

    def _unindex(self, key: str, obj: Object) -> None:
        for name, func in self._indexers.items():
            index = self._indices[name]
            for value in func(obj):
                keys = index.get(value)
                if keys is None:
                    continue
                keys.discard(key)
                if not keys:
                    del index[value]


__all__ = [
    "NAMESPACE_INDEX",
    "DeletedFinalStateUnknown",
    "IndexFunc",
    "Indexer",
    "KeyFunc",
    "KeyFuncError",
    "Keys",
    "Objects",
    "field_index_func",
    "meta_namespace_index_func",
    "meta_namespace_key_func",
    "resource_version",
    "split_meta_namespace_key",
]
