"""Shared object versions: one frozen copy of each object version, however many informers cache it.

In real Kubernetes the scheduler, kube-controller-manager and each kubelet are separate processes,
and each holds its own copy of every pod it watches. Kubelab runs them all in one process, each with
its own client, its own watches and its own informer caches, as the course teaches; but three
identical copies of ten thousand pods are three times the memory for the same bytes. So the
informers of a process share what is *identical*: when an informer is about to cache version
``resourceVersion`` of the object with ``uid``, and another informer already caches an equal copy of
that same version, it caches that copy instead of its own. Each component still lists, watches
and indexes on its own; only equal values end up as one Python object, as equal strings do when
interned. One step further, the same watch line (the API server sends the same bytes to every
watcher of a change) is decoded once per process: an informer that gets an object's bytes another
informer with the same transform has already decoded finds the shared copy by the bytes' digest
(``frame``), and skips the decoding and the comparison.

Sharing is safe only if nobody changes a cached object, which is client-go's rule anyway: "NEVER
modify objects from the store. It's a read-only, local cache. You can use DeepCopy() to make a deep
copy of original object and modify this copy" (kubernetes/sample-controller ``controller.go``;
``controlplane.api.deepcopy`` makes the copies here). Here the rule is enforced: a shared object is
made of ``FrozenDict`` and ``FrozenList``, which are a ``dict`` and a ``list`` for every reader
(``isinstance``, ``==``, JSON encoding, iteration) but refuse every change with a
``SharedObjectChanged`` error, instead of silently changing every component's cache at once. Their
copies (``deep_copy``, ``copy.copy``, ``dict(obj)``, ``list(obj)``) are ordinary, changeable dicts
and lists.

An object without a ``uid`` and a ``resourceVersion`` is not shared (its strings are still interned,
see ``intern_strings``). A version nobody caches any more is forgotten: the registry holds weak
references only.
"""

from __future__ import annotations

import copy
import hashlib
import sys
import weakref
from collections.abc import Iterable
from typing import Any, NoReturn, SupportsIndex

from controlplane.api.meta import Object

_intern = sys.intern


class SharedObjectChanged(TypeError):
    """Something tried to change an object that informers share: copy it first (``deep_copy``)."""

    def __init__(self) -> None:
        super().__init__(
            "this object is shared by the informer caches of the process and cannot be changed: "
            "deep-copy it first (controlplane.api.deepcopy.deep_copy)"
        )


def _refuse(*_args: Any, **_kwargs: Any) -> NoReturn:
    raise SharedObjectChanged()


class FrozenDict(dict[str, Any]):
    """A ``dict`` that refuses changes (part of a shared object). Its copies are plain dicts."""

    __slots__ = ("__weakref__",)

    def __setitem__(self, key: str, value: Any) -> None:
        _refuse()

    def __delitem__(self, key: str) -> None:
        _refuse()

    def __ior__(self, other: Any) -> NoReturn:  # type: ignore[misc]
        _refuse()

    clear = pop = popitem = setdefault = update = _refuse

    def copy(self) -> Object:
        return dict(self)

    def __copy__(self) -> Object:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> Object:
        return {key: copy.deepcopy(value, memo) for key, value in self.items()}

    def __reduce__(self) -> tuple[type[dict[str, Any]], tuple[Object]]:
        # pickle (``deep_copy``) rebuilds a plain dict: a copy is meant to be changed.
        return dict, (dict(self),)


class FrozenList(list[Any]):
    """A ``list`` that refuses changes (part of a shared object). Its copies are plain lists."""

    __slots__ = ()

    def __setitem__(self, index: SupportsIndex | slice, value: Any) -> None:
        _refuse()

    def __delitem__(self, index: SupportsIndex | slice) -> None:
        _refuse()

    def __iadd__(self, other: Iterable[Any]) -> NoReturn:  # type: ignore[misc]
        _refuse()

    def __imul__(self, count: SupportsIndex) -> NoReturn:
        _refuse()

    append = clear = extend = insert = pop = remove = reverse = sort = _refuse

    def copy(self) -> list[Any]:
        return list(self)

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return [copy.deepcopy(value, memo) for value in self]

    def __reduce__(self) -> tuple[type[list[Any]], tuple[list[Any]]]:
        return list, (list(self),)


def intern_strings(obj: Any) -> Any:
    """``obj`` with every string value in it replaced, in place, by the interned string of equal value.

    A decoded object holds fresh strings: a thousand pods of one Deployment hold a thousand
    ``"registry.k8s.io/pause:3.10"``, ``"IfNotPresent"``, ``"True"`` ..., each a separate string of
    50 bytes and more. Interned (``sys.intern``), equal values are one string for the whole process.
    A string is immutable, so sharing it changes nothing a reader can see; an interned string that
    nothing uses any more is freed as any other. Keys need nothing: the JSON decoder already shares
    them (see ``controlplane.api.serializer``).
    """
    if type(obj) is dict:
        for key, value in obj.items():
            kind = type(value)
            if kind is str:
                obj[key] = _intern(value)
            elif kind is dict or kind is list:
                intern_strings(value)
    elif type(obj) is list:
        for i, value in enumerate(obj):
            kind = type(value)
            if kind is str:
                obj[i] = _intern(value)
            elif kind is dict or kind is list:
                intern_strings(value)
    return obj


#: The types ``freeze`` copies (the others are kept as they are: numbers, booleans, None).
_CONTAINERS = (dict, list, FrozenDict, FrozenList)


def freeze(value: Any) -> Any:
    """A frozen copy of ``value`` (``FrozenDict``/``FrozenList`` all the way down, strings interned).

    The leaves (most of an object's values) are handled in the loop rather than by a call each.
    """
    kind = type(value)
    if kind is dict or kind is FrozenDict:
        items: list[tuple[str, Any]] = []
        for key, item in value.items():
            item_kind = type(item)
            if item_kind is str:
                item = _intern(item)
            elif item_kind in _CONTAINERS:
                item = freeze(item)
            items.append((key, item))
        return FrozenDict(items)
    if kind is list or kind is FrozenList:
        frozen: list[Any] = []
        for item in value:
            item_kind = type(item)
            if item_kind is str:
                item = _intern(item)
            elif item_kind in _CONTAINERS:
                item = freeze(item)
            frozen.append(item)
        return FrozenList(frozen)
    if kind is str:
        return _intern(value)
    return value


class SharedVersions:
    """The object versions the informers of a process cache, by ``(uid, resourceVersion)``."""

    def __init__(self) -> None:
        self._versions: weakref.WeakValueDictionary[tuple[str, str], FrozenDict] = (
            weakref.WeakValueDictionary()
        )
        #: Shared versions by what they were made from: a transform and a digest of the watched
        #: object's bytes (see ``frame``).
        self._frames: weakref.WeakValueDictionary[tuple[object, bytes], FrozenDict] = (
            weakref.WeakValueDictionary()
        )

    def __len__(self) -> int:
        return len(self._versions)

    def share(self, obj: Object) -> Object:
        """The shared, frozen copy of ``obj``'s version (made now if nobody caches an equal one);
        ``obj`` itself, strings interned, if it has no uid or resourceVersion."""
        meta = obj.get("metadata")
        uid = meta.get("uid") if isinstance(meta, dict) else None
        version = meta.get("resourceVersion") if isinstance(meta, dict) else None
        if not uid or not version or not isinstance(uid, str) or not isinstance(version, str):
            return intern_strings(obj)  # type: ignore[no-any-return]
        key = (uid, version)
        known = self._versions.get(key)
        # The same version of the same object, unless a transform (``strip_managed_fields``) made it
        # differ: then this informer's copy is the one shared from now on.
        if known is not None and known == obj:
            return known
        frozen: FrozenDict = freeze(obj)
        self._versions[key] = frozen
        return frozen

    @staticmethod
    def digest(data: bytes) -> bytes:
        """What ``frame`` knows an object's bytes by: 128 bits of SHA-256, so no two differ by chance.

        SHA-256 rather than BLAKE2b because OpenSSL computes it with the CPU's SHA instructions where
        there are any: a pod's 4 kB hash in about 5 µs instead of 9.
        """
        return hashlib.sha256(data).digest()[:16]

    def frame(self, transform: object, digest: bytes) -> FrozenDict | None:
        """The shared version made from the object bytes of ``digest`` with ``transform`` (None for
        none), if an informer of the process caches it: the bytes of one watch event, delivered to
        the scheduler, the controller manager and a kubelet alike, are decoded once, not thrice."""
        return self._frames.get((transform, digest))

    def remember_frame(self, transform: object, digest: bytes, shared: FrozenDict) -> None:
        """Note that ``shared`` is what the object bytes of ``digest`` become with ``transform``."""
        self._frames[(transform, digest)] = shared


#: The process's registry, which every informer uses unless given another.
SHARED_VERSIONS = SharedVersions()


__all__ = [
    "SHARED_VERSIONS",
    "FrozenDict",
    "FrozenList",
    "SharedObjectChanged",
    "SharedVersions",
    "freeze",
    "intern_strings",
]
