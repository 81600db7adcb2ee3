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
import math
from decimal import Decimal
from typing import Any


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
        return _go_float(value)
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


def _go_float(value: float) -> str:
    """``strconv.FormatFloat(f, 'g', -1, 64)``, which ``%v`` prints: ``0.5``, ``123456``, ``1e+06``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1, value) < 0 else "0"
    sign, digit_tuple, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple))
    point = len(digits) + exponent  # the decimal point sits after this many digits
    prefix = "-" if sign else ""
    # %v of a float64 is strconv's 'g' with the shortest digits, which switches to the exponent
    # form when the exponent is < -4 or >= 6 (strconv/ftoa.go formatDigits: "if precision was
    # the shortest possible, use precision 6 for this decision"): 1e+06, 123456, 1e-05.
    if point - 1 < -4 or point - 1 >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        exp = point - 1
        return f"{prefix}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if point <= 0:
        return f"{prefix}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return f"{prefix}{digits}{'0' * (point - len(digits))}"
    return f"{prefix}{digits[:point]}.{digits[point:]}"
