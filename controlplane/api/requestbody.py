"""Request bodies read as kube-apiserver's decoders read them: JSON as Go's, YAML as sigs.k8s.io/yaml's.

Python's parsers accept things Go's do not, and build values no JSON can hold. Left alone, those
reach the handlers and fail there as 500s, or get stored. Here they become what upstream makes of
them, or a :class:`BodyError` (the API server answers 400 BadRequest):

JSON (``encoding/json``, forked as ``sigs.k8s.io/json``):

* ``NaN``, ``Infinity`` and ``-Infinity`` are not JSON: ``invalid character 'N' looking for
  beginning of value``;
* a number beyond float64 (``1e400``, which Python reads as ``inf``) does not decode;
* nesting deeper than ``MAX_DEPTH`` levels fails with ``exceeded max depth`` (Go's scanner stops
  at 10000 levels; the lab stops at 200, so that every later step that walks an object, each a
  Python function calling itself per level, stays well inside Python's recursion limit);
* a ``\\ud800`` escape that is not half of a surrogate pair becomes U+FFFD, as Go's decoder makes it
  (a lone surrogate cannot even be written back as UTF-8).

YAML (``sigs.k8s.io/yaml``: yaml.v2 into ``interface{}``, then JSON):

* a timestamp stays the string it was written as (yaml.v2 keeps timestamps in ``interface{}`` as
  strings), ``!!binary`` is its decoded bytes as a string, ``!!set`` a map of nulls;
* keys that are numbers or booleans become their strings (``convertToJSONableObject``); a null key
  is an error;
* ``.inf`` and ``.nan`` cannot become JSON (``json: unsupported value: +Inf``);
* an anchor repeated into more values than the body could spell out is refused, as yaml.v2 refuses
  "excessive aliasing" (the billion laughs); each alias becomes a copy, never a shared object.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Final

import yaml


class BodyError(ValueError):
    """A body the decoder cannot read; ``str(error)`` is the reason."""


#: Objects and arrays nested deeper than this are refused (see the module docstring). No built-in
#: kind comes near it: a pod is about ten levels deep.
MAX_DEPTH: Final = 200


def depth(document: Any) -> int:
    """How deeply objects and arrays nest in ``document`` (a scalar: 0), without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(document, 1)]
    while stack:
        value, level = stack.pop()
        if isinstance(value, dict):
            children: Any = value.values()
        elif isinstance(value, list | tuple):
            children = value
        else:
            continue
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children if isinstance(child, dict | list | tuple))
    return deepest


# -- JSON ------------------------------------------------------------------------------------------


def _constant(name: str) -> Any:
    raise BodyError(f"invalid character '{name[0]}' looking for beginning of value")


def _float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise BodyError(f"json: cannot unmarshal number {text} into Go value of type float64")
    return value


#: A JSON escape of a UTF-16 surrogate (``\\ud800``-``\\udfff``): only those can leave one alone.
_SURROGATE_ESCAPE: Final = re.compile(rb"\\u[dD][89a-fA-F]")


#: Decoders by their hooks: ``json.loads`` with hooks would build a new one for every body.
_DECODERS: dict[tuple[tuple[str, Any], ...], json.JSONDecoder] = {}


def loads_json(raw: bytes, **hooks: Any) -> Any:
    """``json.loads(raw, **hooks)`` with Go's rules (module docstring); raises :class:`BodyError`.

    Other parse failures raise ``ValueError``/``UnicodeDecodeError`` as ``json.loads`` does.
    """
    key = tuple(sorted(hooks.items()))
    decoder = _DECODERS.get(key)
    if decoder is None:
        decoder = _DECODERS[key] = json.JSONDecoder(parse_constant=_constant, parse_float=_float, **hooks)
    try:
        # What json.loads does with bytes: UTF-8, -16 or -32 as the first bytes say.
        document = decoder.decode(raw.decode(json.detect_encoding(raw), "surrogatepass"))
    except RecursionError:
        raise BodyError("exceeded max depth") from None
    # Only a body with more brackets than MAX_DEPTH can nest deeper: counting them is cheap.
    if raw.count(b"{") + raw.count(b"[") > MAX_DEPTH and depth(document) > MAX_DEPTH:
        raise BodyError("exceeded max depth")
    if _SURROGATE_ESCAPE.search(raw):
        document = _replace_lone_surrogates(document)
    return document


def _go_string(text: str) -> str:
    if not any("\ud800" <= c <= "\udfff" for c in text):
        return text
    return "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in text)


def _replace_lone_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _go_string(value)
    if isinstance(value, list):
        kind = type(value)  # a list subclass (strict's member pairs) stays what it is
        items = [_replace_lone_surrogates(item) for item in value]
        if kind is list:
            return items
        copied = kind()
        copied.extend(items)
        return copied
    if isinstance(value, tuple):
        return tuple(_replace_lone_surrogates(item) for item in value)
    if isinstance(value, dict):
        return {_go_string(k): _replace_lone_surrogates(v) for k, v in value.items()}
    return value


# -- YAML ------------------------------------------------------------------------------------------


class _GoYAMLLoader(yaml.SafeLoader):
    """yaml.v2's view of scalars: a timestamp is a plain string."""


_GoYAMLLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def load_yaml(raw: bytes) -> Any:
    """One YAML document as sigs.k8s.io/yaml turns it into JSON (module docstring).

    Raises ``yaml.YAMLError`` for YAML that does not parse, :class:`BodyError` for YAML that parses
    but is no JSON.
    """
    try:
        document = yaml.load(raw, Loader=_GoYAMLLoader)
    except RecursionError:
        raise BodyError("yaml: exceeded max depth") from None
    except ValueError as error:  # an integer of more digits than Python converts (4300)
        raise BodyError(f"yaml: cannot decode number: {str(error).split(':')[0]}") from None
    # No body spells out more values than it has bytes: more comes from aliases repeated at will.
    budget = [len(raw) + 1000]
    try:
        converted = _jsonable(document, budget)
    except RecursionError:
        raise BodyError("yaml: exceeded max depth") from None
    if depth(converted) > MAX_DEPTH:  # (after the aliases are counted: they could nest exponentially)
        raise BodyError("yaml: exceeded max depth")
    return converted


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float):
        if math.isnan(key):
            return ".nan"
        if math.isinf(key):
            return ".inf" if key > 0 else "-.inf"
        return repr(key) if not key.is_integer() else str(int(key))
    raise BodyError(f"error converting YAML to JSON: unsupported map key of type: {type(key).__name__}")


def _jsonable(value: Any, budget: list[int]) -> Any:
    budget[0] -= 1
    if budget[0] < 0:
        raise BodyError("yaml: document contains excessive aliasing")
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            shown = "NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf")
            raise BodyError(f"error converting YAML to JSON: json: unsupported value: {shown}")
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, list | tuple):
        return [_jsonable(item, budget) for item in value]
    if isinstance(value, set | frozenset):
        return {_key(item): None for item in value}
    if isinstance(value, dict):
        return {_key(k): _jsonable(v, budget) for k, v in value.items()}
    return str(value)


__all__ = ["BodyError", "load_yaml", "loads_json"]
