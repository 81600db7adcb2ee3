"""What upstream's decoder refuses: a JSON value of the wrong type for its Go field.

kube-apiserver decodes a request body into the kind's Go struct before anything else looks at it.
A value that cannot become its field's Go type stops the request there, with 400 BadRequest and
the text of Go's ``encoding/json`` (``sigs.k8s.io/json``) ``UnmarshalTypeError``::

    Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal string
    into Go struct field DeploymentSpec.spec.replicas of type int32

The message names the innermost Go *struct* holding the field (``DeploymentSpec``), the field's
whole JSON path from the object's root without list indices or map keys (``spec.replicas``), and
the Go type it wanted (``int32``, ``[]v1.Container``, ``map[string]string``, ``v1.PodSpec``). The
value is named by its JSON type (``string``, ``number``, ``bool``, ``array``, ``object``), and a
number that does not fit (``1.5`` or ``2**70`` for an ``int32``) by ``number <literal>``. ``null``
fits every field (Go leaves the zero value). Go keeps decoding after such a mismatch and reports
the first, so :func:`type_error` walks the object in document order and returns the first too.

Kubelab decodes bodies into plain dicts, so without this walk a Deployment whose ``replicas`` is
``"x"`` would be stored, and every controller reading it would fail later. The walk reads the
kind's schema (:mod:`controlplane.api.schema`), which knows each field's JSON type and format but
not Go's *named* string types: a ``v1.RestartPolicy`` field is reported ``of type string``.

Types with their own ``UnmarshalJSON`` are checked as theirs do:

* ``IntOrString``: a string, or a number decoded as an ``int32``;
* ``Quantity``: a string or number that parses (``quantities must match the regular expression``);
* ``Time``/``MicroTime``: a string, in RFC 3339; stored as their ``MarshalJSON`` writes it back, in
  UTC, ``Time`` in whole seconds (``2006-01-02T15:04:05Z``), ``MicroTime`` with six digits
  (``2006-01-02T15:04:05.000000Z``): an event's ``2026-12-02T13:25:45.634164+00:00`` (Python's
  ``isoformat()``, what Kopf sends) is stored as ``2026-12-02T13:25:45Z`` in ``firstTimestamp``;
* ``RawExtension``, ``FieldsV1``: any JSON.

One leniency: an integral float (``2.0``, what a YAML body's ``2.0`` or a careless client's float
becomes) is taken for an integer field and stored as the integer (upstream refuses a JSON ``2.0``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Final

from controlplane.api import schema as schemas
from controlplane.api.quantity import QuantityError, parse_json_quantity

Schema = schemas.Schema

_ANY: Final = frozenset(
    {
        "io.k8s.apimachinery.pkg.runtime.RawExtension",
        "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON",
    }
)
_INT_OR_STRING: Final = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
_QUANTITY: Final = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_MICRO_LAYOUT: Final = "2006-01-02T15:04:05.000000Z07:00"
_TIMES: Final = {
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time": "2006-01-02T15:04:05Z07:00",
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime": _MICRO_LAYOUT,
}
_INT_RANGES: Final = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}

#: RFC 3339 as Go's ``time.Parse(time.RFC3339, s)`` takes it (fractional seconds optional).
_RFC3339: Final = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})", re.ASCII)


class _Mismatch(Exception):
    """The first value that does not fit.

    Raised where the value is, knowing only the value and its Go type; each struct on the way back
    up adds its field's name to the path, and the innermost named one gives its name to the message.
    So nothing of the message is built while values fit, which is every time but once.
    """

    def __init__(self, what: str, go: str, *, text: str | None = None) -> None:
        super().__init__(text or what)
        self.what = what
        self.go = go
        #: A message of its own (a Quantity's or a time's parser), left as it is.
        self.text = text
        #: Field names from the value up to the root, and the innermost named struct holding it.
        self.path: list[str] = []
        self.struct: str | None = None

    def message(self) -> str:
        if self.text is not None:
            return self.text
        if self.struct is None:
            return f"json: cannot unmarshal {self.what} into Go value of type {self.go}"
        path = ".".join(reversed(self.path))
        return (
            f"json: cannot unmarshal {self.what} into Go struct field {self.struct}.{path} of type {self.go}"
        )


def type_error(obj: Any, definition_name: str) -> str | None:
    """The decoder's error for the first value of ``obj`` that cannot become its Go field, or None.

    ``obj`` is a whole object of the kind ``definition_name`` (``io.k8s.api.apps.v1.Deployment``);
    anything but a JSON object is refused whole (``cannot unmarshal array into Go value of type
    v1.Scale``). Integral floats in integer fields are replaced by their integers, in place.
    """
    if obj is None:  # Go decodes null into the zero value
        return None
    if not isinstance(obj, Mapping):
        top = f"{_package(definition_name)}.{schemas.short_name(definition_name)}"
        return _Mismatch(json_kind(obj), top).message()
    try:
        _check(obj, None, obj, _plan(_reference(definition_name)))
    except _Mismatch as mismatch:
        return mismatch.message()
    return None


def json_kind(value: Any) -> str:
    """The JSON type word Go's decoder names in ``cannot unmarshal X into ...``."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _mismatch(value: Any, go_type: str, literal: bool = False) -> _Mismatch:
    what = json_kind(value)
    if literal:
        what += " " + (repr(value) if isinstance(value, float) else str(value))
    return _Mismatch(what, go_type)


def _package(definition_name: str) -> str:
    """Go's package of a definition's type: its version (``io.k8s.api.core.v1.Pod`` -> ``v1``)."""
    parts = definition_name.split(".")
    return parts[-2] if len(parts) >= 2 else ""


def go_type(node: Schema) -> str:
    """How Go's error names a field's type: ``int32``, ``[]v1.Container``, ``map[string]string``."""
    name = schemas.ref_name(node)
    if name is not None:
        target = schemas.resolve(node)
        if name in _TIMES or name == _QUANTITY:
            return f"{_package(name)}.{schemas.short_name(name)}"
        if name == _INT_OR_STRING:
            return "intstr.IntOrString"
        if isinstance(target.get("properties"), Mapping):
            return f"{_package(name)}.{schemas.short_name(name)}"
        node = target
    types = schemas.json_types(node)
    if "array" in types:
        items = node.get("items")
        return "[]" + (go_type(items) if isinstance(items, Mapping) else "interface {}")
    if "object" in types:
        additional = node.get("additionalProperties")
        if isinstance(additional, Mapping):
            return "map[string]" + go_type(additional)
        return "map[string]interface {}"
    if "string" in types:
        return "[]uint8" if node.get("format") == "byte" else "string"
    if "integer" in types:
        fmt = node.get("format")
        return fmt if isinstance(fmt, str) and fmt in _INT_RANGES else "int64"
    if "number" in types:
        return "float64"
    if "boolean" in types:
        return "bool"
    return "interface {}"


# -- plans: what each schema node asks of a value, worked out once per node ----------------------------

_SKIP, _INTSTR, _QTY, _TIME, _STRUCT, _ARRAY, _MAP, _STRING, _INTEGER, _NUMBER, _BOOL = range(11)


class _Plan:
    """How to check a value against one schema node (its ``kind``, one of the codes above)."""

    __slots__ = ("children", "go", "high", "kind", "layout", "low", "node", "plans", "struct")

    def __init__(self, kind: int, node: Schema) -> None:
        self.kind = kind
        #: The schema node (kept so that ``go`` can be worked out when an error needs it).
        self.node = node
        self.go = ""
        #: A struct's fields by JSON name; an array's items or a map's values (a one-entry dict).
        self.children: Mapping[str, Schema] | None = None
        #: The plans of ``children``, by the same names, filled in as values are met (:func:`_child`):
        #: one lookup per field instead of finding the child's node's plan each time. (The schema is
        #: read-only and plans are never rebuilt, so an entry never goes stale.)
        self.plans: dict[str, _Plan] = {}
        #: The Go name of a named struct (``PodSpec``): the struct an error inside it names.
        self.struct: str | None = None
        self.layout = ""
        self.low = self.high = 0


#: Plans by the id of their node (the node is kept with it, so an id is never reused meanwhile).
_PLANS: dict[int, tuple[Schema, _Plan]] = {}
#: ``{"$ref": ...}`` nodes for the definitions checked whole (``type_error``'s argument).
_REFERENCES: dict[str, Schema] = {}


def _reference(definition_name: str) -> Schema:
    node = _REFERENCES.get(definition_name)
    if node is None:
        schemas.definition(definition_name)  # KeyError now, for a name with no definition
        node = _REFERENCES[definition_name] = {"$ref": f"#/$defs/{definition_name}"}
    return node


def _plan(node: Schema) -> _Plan:
    hit = _PLANS.get(id(node))
    if hit is not None and hit[0] is node:
        return hit[1]
    plan = _build(node)
    _PLANS[id(node)] = (node, plan)
    return plan


def _build(node: Schema) -> _Plan:
    name = schemas.ref_name(node)
    target = schemas.resolve(node) if name is not None else node
    if name is not None:
        if name in _ANY:
            return _Plan(_SKIP, node)
        if name == _INT_OR_STRING:
            plan = _Plan(_INTSTR, node)
            plan.go, (plan.low, plan.high) = "int32", _INT_RANGES["int32"]
            return plan
        if name == _QUANTITY:
            return _Plan(_QTY, node)
        if name in _TIMES:
            plan = _Plan(_TIME, node)
            plan.layout = _TIMES[name]
            return plan
    types = schemas.json_types(target)
    properties = target.get("properties")
    if isinstance(properties, Mapping):
        plan = _Plan(_STRUCT, node)
        plan.children = {k: v for k, v in properties.items() if isinstance(v, Mapping)}
        plan.struct = schemas.short_name(name) if name else None
        return plan
    if "array" in types or "object" in types:
        plan = _Plan(_ARRAY if "array" in types else _MAP, node)
        inner = target.get("items" if "array" in types else "additionalProperties")
        plan.children = {"": inner} if isinstance(inner, Mapping) else None
        return plan
    if "string" in types:
        return _Plan(_STRING, target)
    if "integer" in types:
        plan = _Plan(_INTEGER, target)
        plan.go = go_type(target)
        plan.low, plan.high = _INT_RANGES.get(plan.go, _INT_RANGES["int64"])
        return plan
    if "number" in types:
        return _Plan(_NUMBER, target)
    if "boolean" in types:
        return _Plan(_BOOL, target)
    return _Plan(_SKIP, node)


def _child(plan: _Plan, name: str) -> _Plan | None:
    """The plan of ``plan``'s child ``name`` (a struct's field; ``""``: the items or values), or None
    if it has none; kept in ``plan.plans`` for the next value."""
    fields = plan.children
    node = fields.get(name) if fields is not None else None
    if node is None:
        return None
    inner = plan.plans[name] = _plan(node)
    return inner


def _check(parent: Any, key: Any, value: Any, plan: _Plan) -> None:
    """Check ``value`` (``parent[key]``) against ``plan``; raises ``_Mismatch``."""
    kind = plan.kind
    if kind == _STRUCT:
        if not isinstance(value, dict):
            raise _mismatch(value, go_type(plan.node))
        plans = plan.plans
        for name, child in value.items():
            if child is None:
                continue
            inner = plans.get(name)
            if inner is None:
                inner = _child(plan, name)
                if inner is None:  # unknown fields are strict decoding's business
                    continue
            # The common leaves inline: a string, a boolean or an integer that fits needs no call.
            inner_kind = inner.kind
            if (
                (inner_kind == _STRING and type(child) is str)
                or (inner_kind == _BOOL and type(child) is bool)
                or (inner_kind == _INTEGER and type(child) is int and inner.low <= child <= inner.high)
            ):
                continue
            try:
                _check(value, name, child, inner)
            except _Mismatch as mismatch:
                if mismatch.text is None:
                    mismatch.path.append(name)
                    if mismatch.struct is None:
                        mismatch.struct = plan.struct
                raise
    elif kind == _ARRAY:
        if not isinstance(value, list):
            raise _mismatch(value, go_type(plan.node))
        inner = plan.plans.get("") or _child(plan, "")
        if inner is not None:
            _items(value, enumerate(value), inner)
    elif kind == _MAP:
        if not isinstance(value, dict):
            raise _mismatch(value, go_type(plan.node))
        inner = plan.plans.get("") or _child(plan, "")
        if inner is not None:
            _items(value, value.items(), inner)
    elif kind == _STRING:
        if not isinstance(value, str):
            raise _mismatch(value, go_type(plan.node))
    elif kind == _INTEGER or (kind == _INTSTR and not isinstance(value, str)):
        _integer(parent, key, value, plan)
    elif kind == _BOOL:
        if not isinstance(value, bool):
            raise _mismatch(value, "bool")
    elif kind == _NUMBER:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _mismatch(value, "float64")
        if isinstance(value, float) and not math.isfinite(value):
            raise _mismatch(value, "float64", literal=True)
    elif kind == _QTY:
        try:
            parse_json_quantity(value)
        except QuantityError as error:
            raise _Mismatch("", "", text=str(error)) from None
    elif kind == _TIME:
        if not isinstance(value, str):
            raise _mismatch(value, "string")
        if value and not _RFC3339.fullmatch(value):
            text = f'parsing time "{value}" as "{plan.layout}": cannot parse "{value}" as "2006"'
            raise _Mismatch("", "", text=text)
        micro = plan.layout == _MICRO_LAYOUT
        if value and (value[-1] != "Z" or len(value) != (27 if micro else 20)):
            parent[key] = _marshalled_time(value, micro)


def _marshalled_time(value: str, micro: bool) -> str:
    """An RFC 3339 time as upstream stores it: decoded, then encoded by ``MarshalJSON``
    (apimachinery ``pkg/apis/meta/v1/time.go``: ``t.UTC().Format(time.RFC3339)``, which drops the
    fraction; ``micro_time.go``: ``RFC3339Micro``, six digits)."""
    try:
        parsed = datetime.fromisoformat(value).astimezone(UTC)
    except (ValueError, OverflowError):  # year 0, or out of Python's range: kept as it came
        return value
    return parsed.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ")


def _items(container: Any, items: Iterable[tuple[Any, Any]], inner: _Plan) -> None:
    """Check an array's items or a map's values (no path: Go names neither indices nor keys)."""
    for position, item in items:
        if item is not None and not (inner.kind == _STRING and type(item) is str):
            _check(container, position, item, inner)


def _integer(parent: Any, key: Any, value: Any, plan: _Plan) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _mismatch(value, plan.go)
    if isinstance(value, float):
        if not value.is_integer():
            raise _mismatch(value, plan.go, literal=True)
        value = parent[key] = int(value)
    if not plan.low <= value <= plan.high:
        raise _mismatch(value, plan.go, literal=True)


__all__ = ["go_type", "json_kind", "type_error"]
