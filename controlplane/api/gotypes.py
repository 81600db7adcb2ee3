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

A strategic merge patch's result is not decoded from JSON but converted from its map by
``runtime.DefaultUnstructuredConverter``, whose errors are worded otherwise
(``unrecognized type: int32``, ``cannot restore struct from: string``): :func:`conversion_error`.
Upstream quotes such a patch with ``fmt``'s ``%+v`` and a patched object as Go's JSON encoder writes
it; :func:`go_sprint`, :func:`go_quote`, :func:`go_json` and :func:`go_format_float` are those text forms.

One leniency: an integral float (``2.0``, what a YAML body's ``2.0`` or a careless client's float
becomes) is taken for an integer field and stored as the integer (upstream refuses a JSON ``2.0``).
"""

from __future__ import annotations

import json
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


# -- runtime.DefaultUnstructuredConverter.FromUnstructured: what a strategic merge patch goes through -----


class _Refused(Exception):
    """FromUnstructured's error: a bare text, no path (apimachinery ``pkg/runtime/converter.go``)."""


def conversion_error(obj: Any, definition_name: str) -> str | None:
    """``FromUnstructured``'s error for the first value of ``obj`` that cannot become its Go field.

    A strategic merge patch is not decoded from JSON: apiserver's ``applyPatchToObject``
    (``pkg/endpoints/handlers/patch.go``) merges maps and hands the result to
    ``runtime.DefaultUnstructuredConverter``, which converts with reflection and words its errors its
    own way (``pkg/runtime/converter.go``, ``fromUnstructured``), with no field path:

    * into a string, bool, integer or float field, a value of another JSON type is
      ``unrecognized type: int32`` (the field's Go kind), except an integer into a string field,
      which Go can convert (to a rune) and so is ``cannot convert int64 to string``, and a fraction
      into an integer field, ``cannot convert float64 to int32``;
    * into a struct, map or slice, anything else is ``cannot restore struct from: string``,
      ``cannot restore map from slice``, ``cannot restore slice from map`` (the value's Go kind:
      ``string``, ``int64``, ``float64``, ``bool``, ``map``, ``slice``);
    * types with an ``UnmarshalJSON`` get the value re-encoded as JSON and answer as theirs do
      (``json: cannot unmarshal bool into Go value of type int32`` for an IntOrString).

    Integers are converted as Go converts them, without a range check: ``2**32 + 2`` in an int32
    field becomes ``2`` (``reflect.Value.Convert``), and so does it here, in place, as integral
    floats become integers. Fields are visited in document order (Go visits its struct's fields in
    declaration order, which the schema does not keep, and a map's keys in random order).
    """
    if not isinstance(obj, Mapping):
        return f"cannot restore struct from: {_go_kind(obj)}"
    try:
        _convert(obj, None, obj, _plan(_reference(definition_name)))
    except _Refused as refused:
        return str(refused)
    except _Mismatch as mismatch:  # from a type's own UnmarshalJSON
        return mismatch.message()
    return None


def _go_kind(value: Any) -> str:
    """The ``reflect.Kind`` of a value as Go's JSON decoder leaves it in an ``interface{}``
    (``sigs.k8s.io/json`` with PreserveInts: integers that fit are int64, other numbers float64)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64" if _INT_RANGES["int64"][0] <= value <= _INT_RANGES["int64"][1] else "float64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "slice"
    return "map"


def _convert(parent: Any, key: Any, value: Any, plan: _Plan) -> None:
    kind = plan.kind
    if kind == _STRUCT:
        if not isinstance(value, dict):
            raise _Refused(f"cannot restore struct from: {_go_kind(value)}")
        for name, child in value.items():
            if child is not None:
                inner = plan.plans.get(name) or _child(plan, name)
                if inner is not None:
                    _convert(value, name, child, inner)
    elif kind == _ARRAY:
        if not isinstance(value, list):
            raise _Refused(f"cannot restore slice from {_go_kind(value)}")
        inner = plan.plans.get("") or _child(plan, "")
        if inner is not None:
            for position, item in enumerate(value):
                if item is not None:
                    _convert(value, position, item, inner)
    elif kind == _MAP:
        if not isinstance(value, dict):
            raise _Refused(f"cannot restore map from {_go_kind(value)}")
        inner = plan.plans.get("") or _child(plan, "")
        if inner is not None:
            for name, item in value.items():
                if item is not None:
                    _convert(value, name, item, inner)
    elif kind == _STRING:
        if plan.node.get("format") == "byte":  # []byte: a base64 string, or a list of bytes
            if not isinstance(value, str | list):
                raise _Refused(f"cannot restore slice from {_go_kind(value)}")
        elif not isinstance(value, str):
            source = _go_kind(value)
            # Go converts an integer to a string (a rune), so the converter gets further with it.
            raise _Refused(
                "cannot convert int64 to string" if source == "int64" else "unrecognized type: string"
            )
    elif kind == _INTEGER:
        _convert_integer(parent, key, value, plan.go)
    elif kind == _NUMBER:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _Refused("unrecognized type: float64")
    elif kind == _BOOL:
        if not isinstance(value, bool):
            raise _Refused("unrecognized type: bool")
    elif kind == _INTSTR:
        # intstr.IntOrString.UnmarshalJSON: a string, else json.Unmarshal into its int32.
        if not isinstance(value, str):
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise _Mismatch(json_kind(value), "int32")
            low, high = _INT_RANGES["int32"]
            if (isinstance(value, float) and not value.is_integer()) or not low <= value <= high:
                literal = go_json_number(value if _go_kind(value) == "int64" else float(value))
                raise _Mismatch(f"number {literal}", "int32")
            if isinstance(value, float):
                parent[key] = int(value)
    elif kind in (_QTY, _TIME):
        _check(parent, key, value, plan)  # their UnmarshalJSON, as the JSON decoder calls it


def _convert_integer(parent: Any, key: Any, value: Any, go: str) -> None:
    """An integer field: ``reflect.Value.Convert`` from int64 or an integral float64, wrapping."""
    source = _go_kind(value)
    if source not in ("int64", "float64"):
        raise _Refused(f"unrecognized type: {go}")
    if source == "float64":
        number = float(value)
        if not math.isfinite(number) or number != math.trunc(number):
            raise _Refused(f"cannot convert float64 to {go}")
        # amd64's conversion of a float beyond int64 gives the "integer indefinite" value.
        low = _INT_RANGES["int64"][0]
        value = int(number) if low <= number < 2.0**63 else low
    bits = 32 if go == "int32" else 64
    wrapped = value & ((1 << bits) - 1)
    if wrapped >= 1 << (bits - 1):
        wrapped -= 1 << bits
    if wrapped != parent[key] or type(parent[key]) is not int:
        parent[key] = wrapped


# -- Go's text forms of values ------------------------------------------------------------------------


def go_format_float(value: float) -> str:
    """``strconv.FormatFloat(f, 'g', -1, 64)``, which ``fmt``'s ``%v`` prints: the shortest digits
    that read back as ``f``, in ``%e`` form (``1e+06``, ``1.5e-07``) when the exponent is below -4
    or at least 6 (strconv ``ftoa.go``: ``eprec = 6`` for the shortest form), else plainly
    (``123456``, ``0.0001``, ``2``)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    if value == 0:
        return sign + "0"
    digits, point = _shortest(abs(value))
    exp = point - 1
    if exp < -4 or exp >= 6:
        fraction = "." + digits[1:] if len(digits) > 1 else ""
        return f"{sign}{digits[0]}{fraction}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    return sign + _plain(digits, point)


def go_json_number(value: int | float) -> str:
    """A number as Go's ``encoding/json`` writes it (``encode.go``, ``floatEncoder``): integers as
    they are, floats plainly between 1e-6 and 1e21 (``2``, ``0.5``), else ``1e+21``, ``1e-7``."""
    if isinstance(value, int):
        return str(value)
    if not math.isfinite(value):
        return "null"
    magnitude = abs(value)
    if magnitude != 0 and (magnitude < 1e-6 or magnitude >= 1e21):
        return re.sub(r"e-0(\d)$", r"e-\1", go_format_float(value))
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    return sign + ("0" if magnitude == 0 else _plain(*_shortest(magnitude)))


def _shortest(magnitude: float) -> tuple[str, int]:
    """The shortest digits that read back as a positive float (Python's ``repr`` finds the same ones
    as Go's ``strconv``) and the decimal point's place: the value is ``0.<digits> * 10**point``
    (``1.5e-07`` -> ``("15", -6)``, ``100.0`` -> ``("1", 3)``)."""
    mantissa, _, exponent = repr(magnitude).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    significant = digits.lstrip("0")
    point = len(whole) + int(exponent or 0) - (len(digits) - len(significant))
    return significant.rstrip("0") or "0", point


def _plain(digits: str, point: int) -> str:
    """``%f`` of ``0.<digits> * 10**point`` with as many decimals as the digits need."""
    if point <= 0:
        return f"0.{'0' * -point}{digits}"
    if point >= len(digits):
        return digits + "0" * (point - len(digits))
    return f"{digits[:point]}.{digits[point:]}"


def go_sprint(value: Any) -> str:
    """``fmt.Sprintf("%+v", v)`` of a value as Go's JSON decoder builds it (``map[string]interface{}``,
    ``[]interface{}``, string, int64, float64, bool, nil): ``map[spec:map[replicas:x]]``.

    Maps print their keys sorted (``fmt`` sorts them since Go 1.12), slices as ``[a b]``, strings
    bare, nil as ``<nil>``, floats as ``%v`` does (:func:`go_format_float`).
    """
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value) if _go_kind(value) == "int64" else go_format_float(float(value))
    if isinstance(value, float):
        return go_format_float(value)
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "[" + " ".join(go_sprint(item) for item in value) + "]"
    if isinstance(value, Mapping):
        return "map[" + " ".join(f"{k}:{go_sprint(value[k])}" for k in sorted(value)) + "]"
    return str(value)


#: The spellings Go's ``strconv.ParseBool`` accepts.
_PARSE_BOOL: Final = {
    **dict.fromkeys(("1", "t", "T", "TRUE", "true", "True"), True),
    **dict.fromkeys(("0", "f", "F", "FALSE", "false", "False"), False),
}


def go_parse_bool(text: str) -> bool | None:
    """``strconv.ParseBool``: the boolean ``text`` spells, or None where Go returns its error."""
    return _PARSE_BOOL.get(text)


def go_quote(text: str) -> str:
    r"""``strconv.Quote``: what ``%q`` makes of a string (a field error's value, ``Invalid value: "..."``).

    Printable characters stay as they are, non-ASCII ones too (``json.dumps`` would escape them);
    ``\a \b \f \n \r \t \v`` get their short escapes, other control characters ``\x1b``, other
    unprintable ones ``\u200b`` or ``\U000e0001``.
    """
    out = ['"']
    for char in text:
        if char in ('"', "\\"):
            out.append("\\" + char)
        elif char.isprintable():
            out.append(char)
        elif char in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[char])
        else:
            code = ord(char)
            if code < 0x20 or code == 0x7F:
                out.append(f"\\x{code:02x}")
            elif code < 0x10000:
                out.append(f"\\u{code:04x}")
            else:
                out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


_SHORT_ESCAPES: Final = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
}


def go_json_string(text: str) -> str:
    """A string as Go's ``encoding/json`` writes it, HTML-safe: ``<``, ``>``, ``&``, U+2028 and U+2029
    as ``\\u003c``..., control characters as ``\\n`` or ``\\u001b``, everything else as it is.

    (``json.dumps`` already escapes what Go escapes below U+0020, ``\\b`` and ``\\f`` included.)
    """
    return _JSON_STRING.sub(_json_escape, json.dumps(text, ensure_ascii=False))


_JSON_STRING: Final = re.compile("[<>&\u2028\u2029]")


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def go_json(value: Any, *, sort_keys: bool = False) -> str:
    """Compact JSON as Go's ``json.Marshal`` writes it (HTML-safe strings, integers as they are),
    objects' keys in their order, or sorted (a ``map[string]...``) with ``sort_keys``."""
    if isinstance(value, str):
        return go_json_string(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else "null"
    if isinstance(value, list):
        return "[" + ",".join(go_json(item, sort_keys=sort_keys) for item in value) + "]"
    if isinstance(value, Mapping):
        keys = sorted(value) if sort_keys else list(value)
        return (
            "{"
            + ",".join(f"{go_json_string(k)}:{go_json(value[k], sort_keys=sort_keys)}" for k in keys)
            + "}"
        )
    return go_json_string(str(value))


__all__ = [
    "conversion_error",
    "go_format_float",
    "go_json",
    "go_json_number",
    "go_json_string",
    "go_parse_bool",
    "go_quote",
    "go_sprint",
    "go_type",
    "json_kind",
    "type_error",
]
