"""JSON values as the Go code we port sees them: equality, type names and ``%v`` text.

Upstream's patch code decodes JSON into Go's ``interface{}``: ``map[string]interface{}``,
``[]interface{}``, ``string``, ``bool``, ``nil``, and for numbers ``int64`` when the text is an
integer and ``float64`` otherwise (kube-apiserver decodes patches with
``UnmarshalCaseSensitivePreserveInts``). Python's ``json`` makes the same split (``int`` and
``float``), so each Python type stands for one Go type. Two consequences the helpers keep:

* Go compares ``interface{}`` values by dynamic type first: ``int64(1) != float64(1)`` and
  ``true != 1``, where Python says both are equal. :func:`same_json` is the Go comparison.
* Upstream's error messages print values with ``%v``: ``map[name:web value:1]``, ``[a b]``,
  ``<nil>``. :func:`go_format` reproduces that text so our messages read as upstream's.
"""

from __future__ import annotations

import json
from typing import Any

from controlplane.api.gotypes import go_format_float


def same_json(a: Any, b: Any) -> bool:
    """Deep equality with Go's typing: a bool is not a number, an integer is not a float."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def scalar_key(value: Any) -> tuple[str, Any]:
    """A hashable key under which Go's ``map[interface{}]...`` would file ``value``."""
    if isinstance(value, dict | list):
        return (go_type_name(value), json.dumps(value, sort_keys=True))
    return (type(value).__name__, value)


def go_type_name(value: Any) -> str:
    """``reflect.TypeOf(value)`` as ``%s`` prints it, for upstream's "expected a ..." messages."""
    if value is None:
        return "%!s(<nil>)"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "[]interface {}"
    return "map[string]interface {}"


def go_format(value: Any) -> str:
    """``fmt.Sprintf("%v", value)`` for a decoded JSON value (maps print with sorted keys)."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_format_float(value)
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "[" + " ".join(go_format(v) for v in value) + "]"
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_format(value[k])}" for k in sorted(value)) + "]"
    return str(value)


def go_quote(text: str) -> str:
    """``%q`` of a string: double-quoted with Go escapes (JSON's escapes agree for common text)."""
    return json.dumps(text, ensure_ascii=False)
