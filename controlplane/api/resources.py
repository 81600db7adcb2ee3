"""Resource types: what the API server serves, and where each kind lives in the store.

Kubernetes' REST API is organised as **groups** (``""`` the core group, ``apps``,
``rbac.authorization.k8s.io`` ...), each with **versions** (``v1``), each serving **resources**: a
lower-case plural in the URL (``pods``), a ``Kind`` in the objects (``Pod``), a scope (namespaced or
cluster-wide), the verbs it supports, short names for kubectl (``po``), and subresources
(``pods/status``, ``deployments/scale``).
Discovery (``/api``, ``/apis``) publishes exactly this table, and kubectl learns from it how to turn
``kubectl get po`` into ``GET /api/v1/namespaces/default/pods``.

Each stored resource also names its **key prefix** in the store. These are upstream's own (see each
kind's ``pkg/registry/<group>/<kind>/storage/storage.go``), including the historical ones: Nodes live
under ``/registry/minions`` and Services under ``/registry/services/specs``. So the etcd panel of the
lab shows the same keys a real cluster's etcd holds.

The per-kind behaviour (defaulting, validation, what an update may change) is each type's
``Strategy``, as in upstream's ``rest.RESTCreateStrategy``; see ``strategies/base.py``.

Two types may share one storage prefix: ``events`` in core ``v1`` and in ``events.k8s.io/v1`` are the
same objects. The store then holds one form, and the type whose version differs carries a
``StorageConversion`` to and from it (see ``controlplane.api.conversion``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from controlplane.api.meta import Object
from controlplane.api.strategies.base import Strategy

READ = ("get", "list", "watch")
WRITE = ("create", "update", "patch", "delete", "deletecollection")
CRUD = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
CREATE_ONLY = ("create",)


@dataclass(frozen=True, slots=True)
class Subresource:
    """A subresource such as ``pods/status``: its own verbs, and the kind it accepts and returns."""

    name: str
    verbs: tuple[str, ...]
    kind: str = ""  # empty: the parent's kind
    group: str | None = None  # the kind's group and version when they differ from the parent's
    version: str | None = None


@dataclass(frozen=True, slots=True)
class StorageConversion:
    """How objects of a served version become the stored form (``to_storage``) and back (``from_storage``).

    Both are pure functions that return a new top-level object (they may share nested values).
    """

    to_storage: Callable[[Object], Object]
    from_storage: Callable[[Object], Object]


@dataclass(frozen=True, slots=True)
class ResourceType:
    """One resource of one group-version, as discovery publishes it."""

    group: str
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    verbs: tuple[str, ...] = CRUD
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: tuple[Subresource, ...] = ()
    #: Where the objects live in the store; None for virtual resources (reviews) that are never stored.
    storage_prefix: str | None = None
    strategy: Strategy = field(default_factory=Strategy)
    #: How this version's objects convert to the stored form and back; None: stored as served.
    conversion: StorageConversion | None = None

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def api_version(self) -> str:
        return self.group_version

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    @property
    def group_resource(self) -> str:
        """``pods`` or ``deployments.apps``: how upstream names a resource in messages."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def to_storage(self, obj: Object) -> Object:
        """The stored form of an object of this version (itself, for types without a conversion)."""
        return obj if self.conversion is None else self.conversion.to_storage(obj)

    def from_storage(self, obj: Object) -> Object:
        """An object of the stored form, as this version serves it."""
        return obj if self.conversion is None else self.conversion.from_storage(obj)

    @property
    def cache_key(self) -> str | None:
        """Which watch cache serves this type: one per storage prefix, and one of its own for a type
        that converts (its cache holds its own version of the shared objects)."""
        if self.storage_prefix is None or self.conversion is None:
            return self.storage_prefix
        return f"{self.storage_prefix} as {self.group_version}"

    def subresource(self, name: str) -> Subresource | None:
        for sub in self.subresources:
            if sub.name == name:
                return sub
        return None

    def key(self, namespace: str | None, name: str) -> str:
        """The store key of one object: ``<prefix>/<namespace>/<name>`` or ``<prefix>/<name>``."""
        assert self.storage_prefix is not None, f"{self.plural} is not stored"
        if self.namespaced:
            return f"{self.storage_prefix}/{namespace}/{name}"
        return f"{self.storage_prefix}/{name}"

    def prefix(self, namespace: str | None = None) -> str:
        """The store prefix of every object (or of one namespace's objects), ending in ``/``."""
        assert self.storage_prefix is not None, f"{self.plural} is not stored"
        if self.namespaced and namespace:
            return f"{self.storage_prefix}/{namespace}/"
        return f"{self.storage_prefix}/"


class ResourceRegistry:
    """The resource types a cluster serves, looked up the ways the API server needs."""

    def __init__(self, types: list[ResourceType]) -> None:
        self._types = list(types)
        self._by_path = {(t.group, t.version, t.plural): t for t in types}
        self._by_kind = {(t.group, t.version, t.kind): t for t in types}

    def __iter__(self) -> Iterator[ResourceType]:
        return iter(list(self._types))  # a copy: custom resources come and go while others iterate

    def add(self, rtype: ResourceType) -> None:
        """Serve ``rtype`` from now on (a custom resource), replacing any type at the same path."""
        self.remove(rtype.group, rtype.version, rtype.plural)
        self._types.append(rtype)
        self._by_path[(rtype.group, rtype.version, rtype.plural)] = rtype
        self._by_kind[(rtype.group, rtype.version, rtype.kind)] = rtype

    def remove(self, group: str, version: str, plural: str) -> ResourceType | None:
        """Stop serving a type (a custom resource whose definition changed or went away)."""
        rtype = self._by_path.pop((group, version, plural), None)
        if rtype is not None:
            self._types.remove(rtype)
            if self._by_kind.get((group, version, rtype.kind)) is rtype:
                del self._by_kind[(group, version, rtype.kind)]
        return rtype

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._by_path.get((group, version, plural))

    def by_kind(self, group: str, version: str, kind: str) -> ResourceType | None:
        return self._by_kind.get((group, version, kind))

    def groups(self) -> dict[str, list[str]]:
        """Group name to its versions, preferred first, in registration order."""
        result: dict[str, list[str]] = {}
        for t in self._types:
            versions = result.setdefault(t.group, [])
            if t.version not in versions:
                versions.append(t.version)
        return result

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        return [t for t in self._types if t.group == group and t.version == version]
