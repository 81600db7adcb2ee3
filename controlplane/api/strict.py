"""Strict decoding: unknown and duplicate fields in a request body, found with upstream's schemas.

kube-apiserver decodes every body into Go structs. A JSON field the struct does not have is dropped
by the decoder, and so is the first of two fields with the same name. Since Kubernetes 1.25 the
client chooses what happens then, with the ``fieldValidation`` query parameter
(apiserver ``pkg/endpoints/handlers``, KEP-2885 "server-side unknown field validation"):

* ``Strict`` (what ``kubectl apply``/``create`` send by default, ``--validate=strict``): the request
  fails with 400 BadRequest, ``strict decoding error: unknown field "spec.replicaz"``;
* ``Warn`` (the server's default): the request succeeds without those fields and the response
  carries one ``Warning: 299 - "unknown field \\"spec.replicaz\\""`` header per field, which kubectl
  prints as ``Warning: unknown field "spec.replicaz"``;
* ``Ignore``: the fields are dropped silently, as before 1.25.

Without Go structs, the lab asks upstream's schemas (:mod:`controlplane.api.schema`) which fields
exist: an object schema with ``properties`` and no ``additionalProperties`` is a struct; a schema
with ``additionalProperties`` is a map (``labels``: any key); a schema with neither is free-form
(``RawExtension``). Paths are written as the Go decoder writes them:
``spec.template.spec.containers[0].foo``.

Pure functions only: the API server's handlers decide what to do with the errors.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Final

import orjson
import yaml

from controlplane.api import requestbody
from controlplane.api import schema as schemas

Schema = schemas.Schema

STRICT: Final = "Strict"
WARN: Final = "Warn"
IGNORE: Final = "Ignore"
DIRECTIVES: Final = ("", IGNORE, STRICT, WARN)
"""Accepted ``fieldValidation`` values, sorted as upstream lists them in its 422 message."""

_FREE_FORM: Final = frozenset(
    {
        "io.k8s.apimachinery.pkg.runtime.RawExtension",
        "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
        "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
        "io.k8s.apimachinery.pkg.api.resource.Quantity",
    }
)


class _Pairs(list[tuple[str, Any]]):
    """A JSON object as the list of its members, duplicates kept (``object_pairs_hook``)."""


def _shape(node: Schema, definitions: Mapping[str, Schema] | None) -> tuple[str, Any]:
    """("struct", properties) | ("map", value schema) | ("list", item schema) | ("any", None).

    Cached per schema node: every request walks the same few hundred nodes of the shared, read-only
    schema, and following ``$ref`` and reading ``type`` again for each field of each body was most
    of the cost. Dicts are not hashable, so the key is ``id(node)``; the entry keeps ``node`` (and
    ``definitions``) alive, so that id cannot be reused by another dict while the entry exists.
    """
    hit = _shapes.get((id(node), id(definitions)))
    if hit is not None and hit[0] is node and hit[1] is definitions:
        return hit[2]
    shape = _read_shape(node, definitions)
    _shapes[(id(node), id(definitions))] = (node, definitions, shape)
    return shape


_shapes: dict[tuple[int, int], tuple[Schema, Mapping[str, Schema] | None, tuple[str, Any]]] = {}


def _read_shape(node: Schema, definitions: Mapping[str, Schema] | None) -> tuple[str, Any]:
    name = schemas.ref_name(node)
    if name in _FREE_FORM:
        return "any", None
    target = schemas.resolve(node, definitions) if name else node
    types = schemas.json_types(target)
    if "array" in types:
        items = target.get("items")
        return ("list", items) if isinstance(items, Mapping) else ("any", None)
    properties = target.get("properties")
    additional = target.get("additionalProperties")
    if target.get("x-kubernetes-preserve-unknown-fields"):
        return "any", None
    if isinstance(properties, Mapping):
        if isinstance(additional, Mapping) or additional is True:
            return "any", None  # a struct that also takes free keys: nothing is unknown
        return "struct", properties
    if isinstance(additional, Mapping):
        return "map", additional
    return "any", None


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _walk(
    value: Any, node: Schema, path: str, errors: list[str], definitions: Mapping[str, Schema] | None
) -> None:
    """Collect strict errors in document order; ``value`` may hold :class:`_Pairs` for raw JSON.

    Scalars are not walked (nor their paths written): they have no fields, so nothing in them is
    unknown or duplicated, and they are most of a body.
    """
    kind, sub = _shape(node, definitions)
    if kind == "any":
        return
    if kind == "list":
        if isinstance(value, list) and not isinstance(value, _Pairs):
            for position, item in enumerate(value):
                if not isinstance(item, _SCALARS):
                    _walk(item, sub, f"{path}[{position}]", errors, definitions)
        return
    if value.__class__ is dict:
        # A decoded object (the common case: a body known to name no member twice): no member
        # can repeat, so none is looked for. The same checks in the same order as below.
        if kind == "map":
            for name, child in value.items():
                if not isinstance(child, _SCALARS):
                    _walk(child, sub, _join(path, name), errors, definitions)
            return
        for name, child in value.items():
            if name not in sub:
                errors.append(f'unknown field "{_join(path, name)}"')
            elif not isinstance(child, _SCALARS):
                _walk(child, sub[name], _join(path, name), errors, definitions)
        return
    pairs = _members(value)
    if pairs is None:
        return
    seen: set[str] = set()
    for name, child in pairs:
        if name in seen:
            errors.append(f'duplicate field "{_join(path, name)}"')
            continue
        seen.add(name)
        if kind == "map":
            if not isinstance(child, _SCALARS):
                _walk(child, sub, _join(path, name), errors, definitions)
        elif name in sub:
            if not isinstance(child, _SCALARS):
                _walk(child, sub[name], _join(path, name), errors, definitions)
        else:
            errors.append(f'unknown field "{_join(path, name)}"')


_SCALARS: Final = (str, int, float, bool, type(None))
"""JSON leaves: nothing below them to check or prune."""


def _members(value: Any) -> Iterable[tuple[str, Any]] | None:
    if isinstance(value, _Pairs | dict):
        return value if isinstance(value, _Pairs) else value.items()
    if isinstance(value, Mapping):
        return value.items()
    return None


def _parse_pairs(raw: bytes) -> Any:
    """The body as JSON with duplicates kept, or None if it is not JSON."""
    try:
        return requestbody.loads_json(raw, object_pairs_hook=_Pairs)
    except (ValueError, UnicodeDecodeError):
        return None


class _RepeatedMember(Exception):
    """An object in the document names a member twice."""


def _unique_members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    members = dict(pairs)
    if len(members) != len(pairs):
        raise _RepeatedMember
    return members


def decode_unique(raw: bytes) -> tuple[bool, Any]:
    """``(True, document)`` if ``raw`` is JSON where no object names a member twice; else ``(False, None)``.

    The document is what ``json.loads(raw)`` returns. Decoding it this way costs a little more than
    ``json.loads`` alone, and proves there is no duplicate field to look for: the strict checks of
    the (nearly all) bodies without one then need not read the body a second time (``raw=None``).
    """
    compact = _compact_document(raw)
    if compact is not None:
        return True, compact
    try:
        return True, requestbody.loads_json(raw, object_pairs_hook=_unique_members)
    except (_RepeatedMember, ValueError, UnicodeDecodeError):
        return False, None


def _compact_document(raw: bytes) -> Any:
    """The document in ``raw`` if ``raw`` is exactly its compact encoding; else None.

    The components' clients (and most others) send compact JSON, and compact JSON that orjson writes
    back byte for byte names no member twice: a repeated member would be gone from the decoded
    document, so its encoding would be shorter. Checking that costs a few microseconds, against a
    tenth of a millisecond for the standard library's decoder with a hook on every object. orjson
    refuses what Go's rules refuse (``NaN``, lone surrogates, numbers out of range), and anything it
    writes differently (an escaped ``<``, a float spelt otherwise, whitespace) takes the slow path.
    """
    if raw.count(b"{") + raw.count(b"[") > requestbody.MAX_DEPTH:
        return None
    try:
        document = orjson.loads(raw)
        return document if isinstance(document, dict) and orjson.dumps(document) == raw else None
    except (orjson.JSONDecodeError, TypeError):
        return None


def unknown_and_duplicate_fields(
    document: Any,
    node: Schema,
    *,
    raw: bytes | None = None,
    definitions: Mapping[str, Schema] | None = None,
) -> list[str]:
    """Upstream's strict decoding errors for a body, in document order.

    ``document`` is the decoded body; ``raw``, when given and JSON, is read again to find the
    duplicate fields that decoding collapsed. Returns ``unknown field "spec.foo"`` and
    ``duplicate field "spec.replicas"`` texts (``sigs.k8s.io/json``'s wording).
    """
    errors: list[str] = []
    parsed = _parse_pairs(raw) if raw is not None else None
    _walk(parsed if parsed is not None else document, node, "", errors, definitions)
    return errors


def unknown_fields(
    document: Any, node: Schema, *, definitions: Mapping[str, Schema] | None = None
) -> list[str]:
    """``unknown field "..."`` errors of a decoded object (``FromUnstructuredWithValidation``'s)."""
    return without_unknown_fields(document, node, definitions=definitions)[1]


def duplicate_fields(raw: bytes) -> list[str]:
    """``duplicate field "..."`` errors of a JSON document read without a schema (a patch body)."""
    parsed = _parse_pairs(raw)
    errors: list[str] = []
    _duplicates(parsed, "", errors)
    return errors


def _duplicates(value: Any, path: str, errors: list[str]) -> None:
    if isinstance(value, list) and not isinstance(value, _Pairs):
        for position, item in enumerate(value):
            _duplicates(item, f"{path}[{position}]", errors)
        return
    if not isinstance(value, _Pairs):
        return
    seen: set[str] = set()
    for name, child in value:
        here = _join(path, name)
        if name in seen:
            errors.append(f'duplicate field "{here}"')
            continue
        seen.add(name)
        _duplicates(child, here, errors)


def prune_unknown(document: Any, node: Schema, *, definitions: Mapping[str, Schema] | None = None) -> Any:
    """``document`` without its unknown fields: what the Go decoder would have kept.

    Copy on write: a document with nothing unknown in it is returned as it is (most are), and
    otherwise only the dicts and lists on the way to an unknown field are copied.
    """
    return _pruned(document, node, "", None, definitions)


def without_unknown_fields(
    document: Any, node: Schema, *, definitions: Mapping[str, Schema] | None = None
) -> tuple[Any, list[str]]:
    """:func:`prune_unknown` and :func:`unknown_fields` in one walk: the kept document, and the
    ``unknown field "..."`` errors in document order."""
    errors: list[str] = []
    return _pruned(document, node, "", errors, definitions), errors


def _pruned(
    value: Any, node: Schema, path: str, errors: list[str] | None, definitions: Mapping[str, Schema] | None
) -> Any:
    """``value`` without unknown fields (itself if it has none); paths are written only for errors."""
    kind, sub = _shape(node, definitions)
    children: Iterable[tuple[Any, Any]]
    if kind == "list" and isinstance(value, list):
        children = enumerate(value)
    elif kind in ("struct", "map") and isinstance(value, dict):
        children = value.items()
    else:
        return value
    changes: dict[Any, Any] = {}  # position or name: the kept child, or _DROPPED
    key: Any
    for key, child in children:
        child_node = sub.get(key) if kind == "struct" else sub
        if child_node is None:  # a struct without this field
            if errors is not None:
                errors.append(f'unknown field "{_join(path, key)}"')
            changes[key] = _DROPPED
            continue
        if isinstance(child, _SCALARS):
            continue
        where = "" if errors is None else f"{path}[{key}]" if kind == "list" else _join(path, key)
        kept = _pruned(child, child_node, where, errors, definitions)
        if kept is not child:
            changes[key] = kept
    if not changes:
        return value
    copied = list(value) if kind == "list" else dict(value)
    for key, kept in changes.items():
        if kept is _DROPPED:
            del copied[key]
        else:
            copied[key] = kept
    return copied


_DROPPED: Final = object()


class _DuplicateKeyLoader(yaml.SafeLoader):
    """A YAML loader that records ``key "x" already set in map`` as yaml.v2's strict mode reports it."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self.duplicates: list[str] = []

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                if key in seen:
                    self.duplicates.append(
                        f"line {key_node.start_mark.line + 1}: key {json.dumps(key)} already set in map"
                    )
                seen.add(key)
            except TypeError:
                continue
        return super().construct_mapping(node, deep=deep)


def yaml_duplicate_keys(raw: bytes) -> str | None:
    """The ``yaml.UnmarshalStrict`` error of an apply body with duplicate keys, or None.

    (apiserver ``handlers/patch.go`` ``applyPatcher``: ``error strict decoding YAML: ...``.)
    """
    loader = _DuplicateKeyLoader(raw)
    try:
        loader.get_single_data()
    except yaml.YAMLError:
        return None
    finally:
        loader.dispose()
    if not loader.duplicates:
        return None
    return "error converting YAML to JSON: yaml: unmarshal errors:\n  " + "\n  ".join(loader.duplicates)


def strict_decoding_message(errors: list[str]) -> str:
    """``runtime.NewStrictDecodingError(...).Error()``."""
    return "strict decoding error: " + ", ".join(errors)


__all__ = [
    "DIRECTIVES",
    "IGNORE",
    "STRICT",
    "WARN",
    "decode_unique",
    "duplicate_fields",
    "prune_unknown",
    "strict_decoding_message",
    "unknown_and_duplicate_fields",
    "unknown_fields",
    "yaml_duplicate_keys",
]
