"""Structural schemas: what a CustomResourceDefinition's ``openAPIV3Schema`` says its objects are.

Each version of a CRD carries an OpenAPI v3 schema. Since ``apiextensions.k8s.io/v1`` the schema must
be **structural**: every node says its ``type`` (``object``, ``array``, ``string``, ``integer``,
``number``, ``boolean``), the root is an ``object``, and a few JSON-Schema constructs that make the
shape of an object undecidable (``$ref``, ``patternProperties``, ``dependencies``, ``items`` as a list,
``properties`` beside ``additionalProperties``) are refused. Three extensions relax the rule:

* ``x-kubernetes-preserve-unknown-fields: true``: the node keeps fields its schema does not name (and
  may then omit ``type``);
* ``x-kubernetes-int-or-string: true``: an integer or a string (Kubernetes' ``IntOrString``), without
  ``type``;
* ``x-kubernetes-embedded-resource: true``: an object that is itself a Kubernetes object, whose
  ``apiVersion``, ``kind`` and ``metadata`` are kept.

With a structural schema the API server does to every custom object, in upstream's order:

1. **prune** (``pkg/apiserver/schema/pruning/algorithm.go``): fields the schema does not name are
   dropped, as a Go struct drops them when it decodes; under ``fieldValidation=Strict`` they fail the
   request instead, and under ``Warn`` each is a warning (``unknown field "spec.foo"``);
2. **default** (``pkg/apiserver/schema/defaulting/algorithm.go``): a property missing from an object
   that exists gets its schema's ``default``;
3. **validate** (``pkg/apiserver/validation/validation.go``, kube-openapi's validators): types, enums,
   ``required``, bounds, lengths and patterns, each failure a field error of the 422 Invalid answer:
   ``spec.replicas: Invalid value: 15: spec.replicas in body should be less than or equal to 10``.

The check that a schema is structural is upstream's ``pkg/apiserver/schema/validation.go`` and
``pkg/apis/apiextensions/validation/validation.go`` (a subset of their rules: the ones a student meets).
Pure functions only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from controlplane.api.deepcopy import deep_copy
from controlplane.api.validation import FieldError, forbidden, invalid, not_supported, required, too_long

Schema = Mapping[str, Any]

TYPES: Final = ("array", "boolean", "integer", "number", "object", "string")

PRESERVE: Final = "x-kubernetes-preserve-unknown-fields"
INT_OR_STRING: Final = "x-kubernetes-int-or-string"
EMBEDDED: Final = "x-kubernetes-embedded-resource"

#: Constructs a structural schema may not use, and upstream's reason.
_FORBIDDEN: Final = {
    "$ref": "$ref is not supported",
    "definitions": "definitions are not supported",
    "dependencies": "dependencies are not supported",
    "patternProperties": "patternProperties is not supported",
    "additionalItems": "additionalItems is not supported",
    "id": "id is not supported",
    "$schema": "$schema is not supported",
}

#: What every object keeps whatever its schema says (the root, and embedded resources).
_OBJECT_FIELDS: Final = ("apiVersion", "kind", "metadata")


# -- is the schema structural? ----------------------------------------------------------------------


def validate_schema(schema: Any, path: str) -> list[FieldError]:
    """The problems that keep ``schema`` (a version's ``openAPIV3Schema``) from being structural."""
    if not isinstance(schema, Mapping):
        return [required(path, "schemas are required")]
    problems = _validate_node(schema, path, root=True)
    kind = schema.get("type")
    if not kind and not schema.get(PRESERVE):
        problems.insert(0, required(f"{path}.type", "must not be empty at the root"))
    elif kind and kind != "object":
        problems.insert(0, invalid(f"{path}.type", kind, "must be object at the root"))
    return problems


def _validate_node(node: Schema, path: str, *, root: bool = False, what: str = "") -> list[FieldError]:
    problems: list[FieldError] = []
    for name, reason in _FORBIDDEN.items():
        if name in node:
            problems.append(forbidden(f"{path}.{name}", reason))
    kind = node.get("type")
    if kind is not None and kind not in TYPES:
        problems.append(not_supported(f"{path}.type", kind, list(TYPES)))
    if node.get(INT_OR_STRING) and kind:
        problems.append(invalid(f"{path}.type", kind, "must be empty if x-kubernetes-int-or-string is true"))
    if PRESERVE in node and node[PRESERVE] is not True:
        problems.append(invalid(f"{path}.{PRESERVE}", node[PRESERVE], "must be true or undefined"))
    if node.get(EMBEDDED) and kind != "object":
        problems.append(required(f"{path}.type", "must be object if x-kubernetes-embedded-resource is true"))
    untyped = not kind and not node.get(INT_OR_STRING) and not node.get(PRESERVE) and not node.get(EMBEDDED)
    if what and untyped:
        problems.append(required(f"{path}.type", f"must not be empty for specified {what}"))
    if node.get("uniqueItems") is True:
        problems.append(
            forbidden(
                f"{path}.uniqueItems",
                "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
            )
        )
    properties = node.get("properties")
    additional = node.get("additionalProperties")
    if properties is not None and additional is not None and additional is not True:
        problems.append(
            forbidden(
                f"{path}.additionalProperties", "additionalProperties and properties are mutual exclusive"
            )
        )
    if isinstance(properties, Mapping):
        for key, child in properties.items():
            if isinstance(child, Mapping):
                problems += _validate_node(child, f"{path}.properties[{key}]", what="object fields")
    if isinstance(additional, Mapping):
        problems += _validate_node(additional, f"{path}.additionalProperties", what="object fields")
    items = node.get("items")
    if isinstance(items, list):
        problems.append(forbidden(f"{path}.items", "items must be a schema object and not an array"))
    elif isinstance(items, Mapping):
        problems += _validate_node(items, f"{path}.items", what="array items")
    elif kind == "array":
        problems.append(required(f"{path}.items", "must be specified"))
    for combinator in ("allOf", "anyOf", "oneOf"):
        for i, child in enumerate(node.get(combinator) or ()):
            if isinstance(child, Mapping):
                problems += [
                    p
                    for p in _validate_node(child, f"{path}.{combinator}[{i}]")
                    if p.type != "Required value"
                ]
    return problems


# -- pruning ----------------------------------------------------------------------------------------


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def prune(obj: Any, schema: Schema) -> list[str]:
    """Drop, in place, every field of the object ``schema`` does not name; the dropped paths, sorted.

    ``apiVersion``, ``kind`` and ``metadata`` of the object (and of embedded resources) are kept.
    """
    dropped: list[str] = []
    _prune(obj, schema, "", dropped, object_root=True)
    return sorted(dropped)


def _prune(value: Any, node: Schema, path: str, dropped: list[str], *, object_root: bool = False) -> None:
    if isinstance(value, dict):
        properties = node.get("properties")
        properties = properties if isinstance(properties, Mapping) else {}
        additional = node.get("additionalProperties")
        keep_root = object_root or node.get(EMBEDDED)
        for key in list(value):
            if keep_root and key in _OBJECT_FIELDS:
                continue
            child = properties.get(key)
            if isinstance(child, Mapping):
                _prune(value[key], child, _join(path, key), dropped)
            elif isinstance(additional, Mapping):
                _prune(value[key], additional, _join(path, key), dropped)
            elif additional is True or node.get(PRESERVE):
                continue
            else:
                del value[key]
                dropped.append(_join(path, key))
    elif isinstance(value, list):
        items = node.get("items")
        if isinstance(items, Mapping):
            for i, item in enumerate(value):
                _prune(item, items, f"{path}[{i}]", dropped)


# -- defaulting -------------------------------------------------------------------------------------


def default(obj: Any, schema: Schema) -> None:
    """Fill in, in place, every missing property whose schema has a ``default``, where its parent exists."""
    if isinstance(obj, dict):
        properties = node_properties(schema)
        for key, child in properties.items():
            if "default" in child and (key not in obj or (obj[key] is None and not child.get("nullable"))):
                obj[key] = deep_copy(child["default"])
            if key in obj:
                default(obj[key], child)
        additional = schema.get("additionalProperties")
        if isinstance(additional, Mapping):
            for key, value in obj.items():
                if key not in properties:
                    default(value, additional)
    elif isinstance(obj, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            for item in obj:
                default(item, items)


def node_properties(node: Schema) -> Mapping[str, Schema]:
    properties = node.get("properties")
    return properties if isinstance(properties, Mapping) else {}


# -- validation -------------------------------------------------------------------------------------


def _type_of(value: Any) -> str:
    """The JSON type of a decoded value, as go-openapi names it in its messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _is_type(value: Any, kind: str) -> bool:
    actual = _type_of(value)
    if kind == "integer":
        return actual == "integer" or (actual == "number" and float(value).is_integer())
    if kind == "number":
        return actual in ("integer", "number")
    return actual == kind


def _number(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def validate(obj: Any, schema: Schema) -> list[FieldError]:
    """The field errors of a custom object against its version's schema (``apiVersion``, ``kind`` and
    ``metadata`` excepted: the API server checks those itself)."""
    problems: list[FieldError] = []
    properties = node_properties(schema)
    for key, value in obj.items() if isinstance(obj, dict) else ():
        if key in _OBJECT_FIELDS:
            continue
        child = properties.get(key)
        if child is not None:
            problems += _validate(value, child, key)
    for key in schema.get("required") or ():
        if isinstance(obj, dict) and key not in obj:
            problems.append(required(key))
    return problems


def _validate(value: Any, node: Schema, path: str) -> list[FieldError]:
    if value is None:
        if node.get("nullable") or (not node.get("type") and not node.get(INT_OR_STRING)):
            return []
        return [
            invalid(path, "null", f'{path} in body must be of type {node.get("type") or "string"}: "null"')
        ]
    kind = node.get("type")
    if node.get(INT_OR_STRING):
        if not isinstance(value, int | str) or isinstance(value, bool):
            return [
                invalid(
                    path,
                    _type_of(value),
                    f'{path} in body must be of type integer,string: "{_type_of(value)}"',
                )
            ]
    elif kind and not _is_type(value, kind):
        return [invalid(path, _type_of(value), f'{path} in body must be of type {kind}: "{_type_of(value)}"')]
    problems: list[FieldError] = []
    enum = node.get("enum")
    if isinstance(enum, list) and value not in enum:
        problems.append(not_supported(path, value, [v if isinstance(v, str) else str(v) for v in enum]))
    if isinstance(value, int | float) and not isinstance(value, bool):
        maximum, minimum = node.get("maximum"), node.get("minimum")
        if maximum is not None:
            if node.get("exclusiveMaximum") and value >= maximum:
                problems.append(
                    invalid(path, value, f"{path} in body should be less than {_number(maximum)}")
                )
            elif value > maximum:
                problems.append(
                    invalid(path, value, f"{path} in body should be less than or equal to {_number(maximum)}")
                )
        if minimum is not None:
            if node.get("exclusiveMinimum") and value <= minimum:
                problems.append(
                    invalid(path, value, f"{path} in body should be greater than {_number(minimum)}")
                )
            elif value < minimum:
                problems.append(
                    invalid(
                        path, value, f"{path} in body should be greater than or equal to {_number(minimum)}"
                    )
                )
        multiple = node.get("multipleOf")
        if multiple and (value / multiple) != int(value / multiple):
            problems.append(
                invalid(path, value, f"{path} in body should be a multiple of {_number(multiple)}")
            )
    if isinstance(value, str):
        max_length, min_length = node.get("maxLength"), node.get("minLength")
        if max_length is not None and len(value) > max_length:
            problems.append(too_long(path, max_length))
        if min_length is not None and len(value) < min_length:
            problems.append(
                invalid(path, value, f"{path} in body should be at least {min_length} chars long")
            )
        pattern = node.get("pattern")
        if isinstance(pattern, str) and not _matches(pattern, value):
            problems.append(invalid(path, value, f"{path} in body should match '{pattern}'"))
    if isinstance(value, list):
        max_items, min_items = node.get("maxItems"), node.get("minItems")
        if max_items is not None and len(value) > max_items:
            problems.append(
                FieldError(
                    "Too many",
                    "FieldValueTooMany",
                    path,
                    f"must have at most {max_items} items",
                    len(value),
                    True,
                )
            )
        if min_items is not None and len(value) < min_items:
            problems.append(invalid(path, value, f"{path} in body should have at least {min_items} items"))
        items = node.get("items")
        if isinstance(items, Mapping):
            for i, item in enumerate(value):
                problems += _validate(item, items, f"{path}[{i}]")
    if isinstance(value, dict):
        properties = node_properties(node)
        additional = node.get("additionalProperties")
        for key, child_value in value.items():
            child = properties.get(key)
            if child is None and isinstance(additional, Mapping):
                child = additional
            if child is not None and not (
                node.get(EMBEDDED) and key in _OBJECT_FIELDS and key not in properties
            ):
                problems += _validate(child_value, child, f"{path}.{key}")
        for key in node.get("required") or ():
            if key not in value:
                problems.append(required(f"{path}.{key}"))
        max_props, min_props = node.get("maxProperties"), node.get("minProperties")
        if max_props is not None and len(value) > max_props:
            problems.append(
                FieldError(
                    "Too many",
                    "FieldValueTooMany",
                    path,
                    f"must have at most {max_props} items",
                    len(value),
                    True,
                )
            )
        if min_props is not None and len(value) < min_props:
            problems.append(
                invalid(path, value, f"{path} in body should have at least {min_props} properties")
            )
    for sub in node.get("allOf") or ():
        if isinstance(sub, Mapping):
            problems += _validate(value, sub, path)
    any_of = [s for s in node.get("anyOf") or () if isinstance(s, Mapping)]
    if any_of and all(_validate(value, s, path) for s in any_of):
        problems.append(invalid(path, value, f"{path} in body must be of type anyOf"))  # rare: keep it short
    one_of = [s for s in node.get("oneOf") or () if isinstance(s, Mapping)]
    if one_of and sum(1 for s in one_of if not _validate(value, s, path)) != 1:
        problems.append(invalid(path, value, f"{path} in body must validate one and only one schema (oneOf)"))
    negated = node.get("not")
    if isinstance(negated, Mapping) and not _validate(value, negated, path):
        problems.append(invalid(path, value, f"{path} in body should not be valid against schema"))
    return problems


_patterns: dict[str, re.Pattern[str] | None] = {}


def _matches(pattern: str, value: str) -> bool:
    """Go's ``regexp.MatchString``: unanchored. A pattern Python cannot compile matches everything
    (the CRD was accepted by the same server, which would have refused a broken pattern)."""
    if pattern not in _patterns:
        try:
            _patterns[pattern] = re.compile(pattern)
        except re.error:
            _patterns[pattern] = None
    compiled = _patterns[pattern]
    return compiled is None or compiled.search(value) is not None


__all__ = ["Schema", "default", "prune", "validate", "validate_schema"]
