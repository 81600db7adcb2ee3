"""Upstream's API schemas, read as data: what every field of every built-in kind is.

A Kubernetes API server knows each kind's shape from its Go structs: which fields exist, which
are lists or maps, and how a patch should treat each list. That knowledge is published as
OpenAPI, and the ``kubernetes-validate`` package ships it for every release as plain JSON Schema
(``kubernetes_validate/kubernetes-json-schema/v1.37.0-local/_definitions.json``: 862
definitions under ``$defs``, named like ``io.k8s.api.core.v1.PodSpec``). Kubelab reads that file
instead of writing the schemas by hand, so a field, a description or a merge key is exactly
upstream's.

What a definition holds, beyond plain JSON Schema:

* ``x-kubernetes-group-version-kind`` on top-level kinds: ``[{"group": "apps", "version": "v1",
  "kind": "Deployment"}]``. :func:`definition_for_kind` finds a kind's definition through it.
* On list fields, how strategic merge patch treats them (upstream's ``patchStrategy`` and
  ``patchMergeKey`` struct tags): ``x-kubernetes-patch-strategy`` (``merge``, ``replace``,
  ``retainKeys`` or ``merge,retainKeys``) and ``x-kubernetes-patch-merge-key``, the field that
  identifies an element (containers by ``name``, container ports by ``containerPort``). A list
  without a strategy is replaced whole by a patch (``tolerations``, ``args``).
* Server-side apply's view of the same lists: ``x-kubernetes-list-type`` (``atomic``, ``set``,
  ``map``) and ``x-kubernetes-list-map-keys``.
* ``description``: the text ``kubectl explain`` shows.

References between definitions are ``{"$ref": "#/$defs/<name>"}``; on a property the ``$ref``
sits beside the property's own ``description`` and ``x-kubernetes-*`` keys, so a :class:`Field`
keeps the property as written and :func:`resolve` follows the reference to the field's type.

The file is parsed once per process, on first use, and every function here is pure after that.
Treat what they return as read-only: it is the shared, cached document.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType
from typing import Any, Final

KUBERNETES_VERSION: Final = "1.37.0"
"""The Kubernetes release whose schemas are loaded (the pinned ``kubernetes-validate``)."""

Schema = Mapping[str, Any]
"""A JSON Schema object, as parsed from the definitions file."""

_PACKAGE: Final = "kubernetes_validate"
_SCHEMA_DIR: Final = f"v{KUBERNETES_VERSION}-local"
_REF_PREFIX: Final = "#/$defs/"
_MAX_REF_HOPS: Final = 32


@dataclass(frozen=True)
class _Catalog:
    definitions: Mapping[str, Schema]
    by_kind: Mapping[tuple[str, str, str], str]


_catalog: _Catalog | None = None
_catalog_lock = threading.Lock()


def _load() -> _Catalog:
    """Parse ``_definitions.json`` once per process (thread-safe) and index it by kind."""
    global _catalog
    if _catalog is None:
        with _catalog_lock:
            if _catalog is None:
                folder = resources.files(_PACKAGE) / "kubernetes-json-schema" / _SCHEMA_DIR
                document = json.loads((folder / "_definitions.json").read_text(encoding="utf-8"))
                # 1.37.0 files them under JSON Schema 2020-12's "$defs"; older generators used
                # OpenAPI's "definitions".
                defs: dict[str, Schema] = document.get("$defs") or document["definitions"]
                by_kind: dict[tuple[str, str, str], str] = {}
                for name, definition in defs.items():
                    for gvk in definition.get("x-kubernetes-group-version-kind", ()):
                        by_kind.setdefault((gvk["group"], gvk["version"], gvk["kind"]), name)
                _catalog = _Catalog(MappingProxyType(defs), MappingProxyType(by_kind))
    return _catalog


def definitions() -> Mapping[str, Schema]:
    """Every definition by name, e.g. ``definitions()["io.k8s.api.core.v1.PodSpec"]``."""
    return _load().definitions


def definition(name: str, definitions: Mapping[str, Schema] | None = None) -> Schema:
    """One definition by its full name; ``KeyError`` if there is none.

    ``definitions`` replaces upstream's set, for tests that bring a schema of their own.
    """
    table = _load().definitions if definitions is None else definitions
    try:
        return table[name]
    except KeyError:
        raise KeyError(f"no schema definition named {name!r}") from None


def definition_for_kind(group: str, version: str, kind: str) -> str | None:
    """The definition name of a built-in kind (core group is ``""``), or None if unknown.

    >>> definition_for_kind("apps", "v1", "Deployment")
    'io.k8s.api.apps.v1.Deployment'
    """
    return _load().by_kind.get((group, version, kind))


def short_name(definition_name: str) -> str:
    """The Go type name a definition was generated from: ``io.k8s.api.core.v1.PodSpec`` -> ``PodSpec``."""
    return definition_name.rsplit(".", 1)[-1]


def ref_name(schema: Schema) -> str | None:
    """The definition a schema refers to (``{"$ref": "#/$defs/X"}`` -> ``"X"``), or None.

    Only a string ``$ref`` is a reference: ``JSONSchemaProps`` has a *property* named ``$ref``.
    """
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith(_REF_PREFIX):
        return ref[len(_REF_PREFIX) :]
    return None


def resolve(schema: Schema, definitions: Mapping[str, Schema] | None = None) -> Schema:
    """Follow ``$ref`` until the schema that describes the value itself.

    A property written as ``{"$ref": ..., "description": ...}`` resolves to the referenced
    definition; a schema without a reference is returned as it is.
    """
    for _ in range(_MAX_REF_HOPS):
        name = ref_name(schema)
        if name is None:
            return schema
        schema = definition(name, definitions)
    raise ValueError(f"$ref chain longer than {_MAX_REF_HOPS} hops")


def json_types(schema: Schema) -> frozenset[str]:
    """The JSON types a (resolved) schema allows, without ``"null"``: ``{"array"}``, ``{"object"}``...

    Upstream writes ``"type": ["array", "null"]`` for optional fields. A schema without a type
    (``IntOrString`` and ``Quantity`` are a ``oneOf``) has none.
    """
    declared = schema.get("type")
    if isinstance(declared, str):
        return frozenset({declared} - {"null"})
    if isinstance(declared, list):
        return frozenset(t for t in declared if isinstance(t, str) and t != "null")
    return frozenset()


@dataclass(frozen=True)
class Field:
    """One property of an object schema, with the patch metadata that kubectl and servers read.

    ``schema`` is the property as written in its owner (``description`` and the
    ``x-kubernetes-*`` keys live there, beside any ``$ref``); :meth:`type` is what it resolves to.
    """

    name: str
    schema: Schema
    definitions: Mapping[str, Schema] | None = None

    def type(self) -> Schema:
        """The field's type, ``$ref`` followed: ``resources`` of a container -> ``ResourceRequirements``."""
        return resolve(self.schema, self.definitions)

    @property
    def type_name(self) -> str | None:
        """The definition the field refers to (``io.k8s.api.core.v1.PodSpec``), if it names one."""
        return ref_name(self.schema)

    @property
    def description(self) -> str | None:
        value = self.schema.get("description")
        return value if isinstance(value, str) else None

    @property
    def patch_strategy(self) -> str | None:
        """``x-kubernetes-patch-strategy`` as written: ``merge``, ``replace``, ``retainKeys``..."""
        value = self.schema.get("x-kubernetes-patch-strategy")
        return value if isinstance(value, str) else None

    @property
    def patch_strategies(self) -> tuple[str, ...]:
        """The strategy split on commas, as upstream splits the ``patchStrategy`` tag; () if none."""
        strategy = self.patch_strategy
        return tuple(strategy.split(",")) if strategy else ()

    @property
    def patch_merge_key(self) -> str | None:
        """The field that identifies a list element in strategic merge patch: ``name``, ``containerPort``."""
        value = self.schema.get("x-kubernetes-patch-merge-key")
        return value if isinstance(value, str) else None

    @property
    def list_type(self) -> str | None:
        """``x-kubernetes-list-type``: ``atomic``, ``set`` or ``map`` (server-side apply's view)."""
        value = self.schema.get("x-kubernetes-list-type")
        return value if isinstance(value, str) else None

    @property
    def list_map_keys(self) -> tuple[str, ...]:
        """``x-kubernetes-list-map-keys`` of a ``map`` list, e.g. ``("containerPort", "protocol")``."""
        value = self.schema.get("x-kubernetes-list-map-keys")
        return tuple(k for k in value if isinstance(k, str)) if isinstance(value, list) else ()

    @property
    def is_list(self) -> bool:
        return "array" in json_types(self.type())

    def items(self) -> Schema | None:
        """The resolved schema of a list's elements, or None if the field is not a list."""
        items = self.type().get("items")
        return resolve(items, self.definitions) if isinstance(items, Mapping) else None


def field(owner: str | Schema, name: str, definitions: Mapping[str, Schema] | None = None) -> Field | None:
    """The property ``name`` of an object schema (a definition name or a schema), or None.

    >>> field("io.k8s.api.core.v1.PodSpec", "containers").patch_merge_key
    'name'
    """
    schema = definition(owner, definitions) if isinstance(owner, str) else resolve(owner, definitions)
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or not isinstance(properties.get(name), Mapping):
        return None
    return Field(name, properties[name], definitions)


def field_names(owner: str | Schema, definitions: Mapping[str, Schema] | None = None) -> tuple[str, ...]:
    """The property names of an object schema, in the order the schema lists them."""
    schema = definition(owner, definitions) if isinstance(owner, str) else resolve(owner, definitions)
    properties = schema.get("properties")
    return tuple(properties) if isinstance(properties, Mapping) else ()
