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
* ``Time``/``MicroTime``: a string, in RFC 3339;
* ``RawExtension``, ``FieldsV1``: any JSON.

One leniency: an integral float (``2.0``, what a YAML body's ``2.0`` or a careless client's float
becomes) is taken for an integer field and stored as the integer (upstream refuses a JSON ``2.0``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
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
_TIMES: Final = {
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time": "2006-01-02T15:04:05Z07:00",
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime": "2006-01-02T15:04:05.000000Z07:00",
}
_INT_RANGES: Final = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}

#: RFC 3339 as Go's ``time.Parse(time.RFC3339, s)`` takes it (fractional seconds optional).
_RFC3339: Final = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})", re.ASCII)


class _Mismatch(Exception):
    """The first value that does not fit: Go's error text."""


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
        return str(_mismatch(obj, top, "", ""))
    try:
        _struct(obj, schemas.definition(definition_name), schemas.short_name(definition_name), "")
    except _Mismatch as mismatch:
        return str(mismatch)
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


def _mismatch(value: Any, go_type: str, struct: str, path: str, literal: bool = False) -> _Mismatch:
    what = json_kind(value)
    if literal:
        what += " " + (repr(value) if isinstance(value, float) else str(value))
    if struct:
        return _Mismatch(
            f"json: cannot unmarshal {what} into Go struct field {struct}.{path} of type {go_type}"
        )
    return _Mismatch(f"json: cannot unmarshal {what} into Go value of type {go_type}")


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


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


def _struct(value: Any, definition: Schema, struct: str, path: str) -> None:
    properties = definition.get("properties")
    if not isinstance(properties, Mapping) or not isinstance(value, dict):
        return
    for name, child in value.items():
        field = properties.get(name)
        if isinstance(field, Mapping):  # unknown fields are strict decoding's business
            _value(value, name, child, field, struct, _join(path, name))


def _value(parent: Any, key: Any, value: Any, node: Schema, struct: str, path: str) -> None:
    """Check ``value`` (``parent[key]``) against ``node``; ``struct``/``path`` name it in errors."""
    if value is None:
        return
    name = schemas.ref_name(node)
    target = schemas.resolve(node) if name is not None else node
    if name is not None:
        if name in _ANY:
            return
        if name == _INT_OR_STRING:
            if not isinstance(value, str):
                _integer(parent, key, value, "int32", struct, path)
            return
        if name == _QUANTITY:
            try:
                parse_json_quantity(value)
            except QuantityError as error:
                raise _Mismatch(str(error)) from None
            return
        if name in _TIMES:
            if not isinstance(value, str):
                raise _mismatch(value, "string", struct, path)
            if value and not _RFC3339.fullmatch(value):
                layout = _TIMES[name]
                raise _Mismatch(f'parsing time "{value}" as "{layout}": cannot parse "{value}" as "2006"')
            return
    types = schemas.json_types(target)
    if isinstance(target.get("properties"), Mapping):
        if not isinstance(value, dict):
            raise _mismatch(value, go_type(node), struct, path)
        _struct(value, target, schemas.short_name(name) if name else struct, path)
        return
    if "array" in types:
        if not isinstance(value, list):
            raise _mismatch(value, go_type(node), struct, path)
        items = target.get("items")
        if isinstance(items, Mapping):
            for position, item in enumerate(value):
                _value(value, position, item, items, struct, path)
        return
    if "object" in types:
        if not isinstance(value, dict):
            raise _mismatch(value, go_type(node), struct, path)
        additional = target.get("additionalProperties")
        if isinstance(additional, Mapping):
            for member, item in value.items():
                _value(value, member, item, additional, struct, path)
        return
    if "string" in types:
        if not isinstance(value, str):
            raise _mismatch(value, go_type(target), struct, path)
    elif "integer" in types:
        _integer(parent, key, value, go_type(target), struct, path)
    elif "number" in types:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _mismatch(value, "float64", struct, path)
        if isinstance(value, float) and not math.isfinite(value):
            raise _mismatch(value, "float64", struct, path, literal=True)
    elif "boolean" in types and not isinstance(value, bool):
        raise _mismatch(value, "bool", struct, path)


def _integer(parent: Any, key: Any, value: Any, go: str, struct: str, path: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _mismatch(value, go, struct, path)
    if isinstance(value, float):
        if not value.is_integer():
            raise _mismatch(value, go, struct, path, literal=True)
        value = parent[key] = int(value)
    low, high = _INT_RANGES.get(go, _INT_RANGES["int64"])
    if not low <= value <= high:
        raise _mismatch(value, go, struct, path, literal=True)


__all__ = ["go_type", "json_kind", "type_error"]
