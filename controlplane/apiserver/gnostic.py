"""An OpenAPI v2 document as gnostic's protobuf message: the form kubectl downloads ``/openapi/v2`` in.

kubectl never reads ``/openapi/v2`` as JSON. client-go's ``DiscoveryClient.OpenAPISchema``
(``staging/src/k8s.io/client-go/discovery/discovery_client.go``) sends only::

    Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf

and ``proto.Unmarshal``\\ s the body into ``openapi_v2.Document``, a message of gnostic's
(github.com/google/gnostic-models ``openapiv2/OpenAPIv2.proto``). kube-apiserver makes that body
from its JSON document (kube-openapi ``pkg/handler/handler.go`` ``ToProtoBinary``): gnostic's
compiler reads the JSON into the messages (``openapiv2/OpenAPIv2.go``: ``NewDocument``,
``NewSchema``...) and ``proto.Marshal`` writes them. :func:`encode_document` does both steps at once,
and :func:`encode` one message, so a document can be put together from pieces encoded once (see
:mod:`controlplane.apiserver.handlers.openapi_v2`).

What gnostic does with the JSON, and so what this module does:

* every JSON object is a message; :data:`MESSAGES` says, per message, which JSON key is which field
  number and what it holds (the ``.proto`` file's numbers);
* a JSON object whose keys are names (``paths``, ``definitions``, ``properties``, ``parameters``,
  ``responses``) is a repeated ``Named...`` message: ``{1: name, 2: value}`` per key, in the
  document's order;
* ``x-`` keys are repeated ``NamedAny`` (``vendor_extension``); an ``Any`` (extensions, ``default``,
  ``example``, ``enum`` values) carries its value as YAML text in field 2 (``yaml``), which kubectl
  parses back with ``yaml.Unmarshal`` (kube-openapi ``pkg/util/proto/document.go``
  ``VendorExtensionToMap``; cli-runtime ``query_param_verifier.go`` ``hasGVKExtension``);
* a ``oneof`` is chosen as gnostic's compiler chooses it: it tries each alternative and keeps the
  last one that parses. A parameter with ``$ref`` is a ``JsonReference``, one ``in: body`` a
  ``BodyParameter``, the others a ``NonBodyParameter`` by their ``in``; ``additionalProperties`` is a
  schema or a boolean; ``type`` and ``items`` are lists of one;
* proto3 leaves out empty strings, ``false`` and zeros, but writes every message that is present, even
  empty (``"properties": {}`` is an empty ``Properties``: kubectl tells a kind from a map by it),
  and a ``oneof`` member even when it is ``false``.

Deviation: gnostic writes an ``Any``'s YAML in block style (``- group: ""\\n  kind: Pod``); this
module writes it in flow style, which is JSON (``[{"group": "", "kind": "Pod"}]``). Every YAML
reader, yaml.v2 in kubectl included, reads both to the same value, and JSON needs no quoting rules.

A key gnostic would refuse (``"has invalid property"``, e.g. ``oneOf`` in a schema) raises
:class:`UnencodableDocument`: the document builder must not write one.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

MEDIA_TYPE: Final = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
"""What kube-apiserver answers with (the dotted form, for either form asked for)."""
MEDIA_TYPES_ACCEPTED: Final = (
    "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",  # what kubectl asks for
    MEDIA_TYPE,
)

_VARINT, _I64, _LEN = 0, 1, 2


class UnencodableDocument(ValueError):
    """The JSON is not a Swagger 2.0 document gnostic's compiler would accept."""


@dataclass(frozen=True)
class Field:
    """One field of a message: its number and what it holds.

    ``kind`` is ``string``, ``bool``, ``int64``, ``double`` (scalars), ``strings`` (repeated string),
    ``message`` or ``messages`` (one or a JSON list of ``type``), ``named`` (a JSON object: repeated
    ``{1: key, 2: value}`` with a ``type`` value), ``any`` or ``anys`` (YAML text).
    """

    number: int
    kind: str
    type: str = ""


def _simple_schema(first: int) -> dict[str, Field]:
    """The fields the non-body parameters, headers and items share, ``type`` numbered ``first``."""
    names = (
        ("type", "string", ""),
        ("format", "string", ""),
        ("items", "message", "PrimitivesItems"),
        ("collectionFormat", "string", ""),
        ("default", "any", ""),
        ("maximum", "double", ""),
        ("exclusiveMaximum", "bool", ""),
        ("minimum", "double", ""),
        ("exclusiveMinimum", "bool", ""),
        ("maxLength", "int64", ""),
        ("minLength", "int64", ""),
        ("pattern", "string", ""),
        ("maxItems", "int64", ""),
        ("minItems", "int64", ""),
        ("uniqueItems", "bool", ""),
        ("enum", "anys", ""),
        ("multipleOf", "double", ""),
    )
    return {name: Field(first + i, kind, type_) for i, (name, kind, type_) in enumerate(names)}


def _parameter_sub_schema(*, allow_empty: bool) -> tuple[dict[str, Field], int]:
    """Query and formData parameters have ``allowEmptyValue`` (5) before ``type``; path and header
    parameters do not, so their later numbers are one lower."""
    fields = {
        "required": Field(1, "bool"),
        "in": Field(2, "string"),
        "description": Field(3, "string"),
        "name": Field(4, "string"),
        **_simple_schema(6 if allow_empty else 5),
    }
    if allow_empty:
        fields["allowEmptyValue"] = Field(5, "bool")
    return fields, 23 if allow_empty else 22


#: Per message, its JSON keys' fields, and the number of its ``vendor_extension`` field (0: none).
#: Field numbers are those of gnostic-models ``openapiv2/OpenAPIv2.proto``.
MESSAGES: Final[Mapping[str, tuple[Mapping[str, Field], int]]] = {
    "Document": (
        {
            "swagger": Field(1, "string"),
            "info": Field(2, "message", "Info"),
            "host": Field(3, "string"),
            "basePath": Field(4, "string"),
            "schemes": Field(5, "strings"),
            "consumes": Field(6, "strings"),
            "produces": Field(7, "strings"),
            "paths": Field(8, "message", "Paths"),
            "definitions": Field(9, "message", "Definitions"),
            "parameters": Field(10, "message", "ParameterDefinitions"),
            "responses": Field(11, "message", "ResponseDefinitions"),
            "security": Field(12, "messages", "SecurityRequirement"),
            "securityDefinitions": Field(13, "message", "SecurityDefinitions"),
            "tags": Field(14, "messages", "Tag"),
            "externalDocs": Field(15, "message", "ExternalDocs"),
        },
        16,
    ),
    "Info": (
        {
            "title": Field(1, "string"),
            "version": Field(2, "string"),
            "description": Field(3, "string"),
            "termsOfService": Field(4, "string"),
            "contact": Field(5, "message", "Contact"),
            "license": Field(6, "message", "License"),
        },
        7,
    ),
    "Contact": ({"name": Field(1, "string"), "url": Field(2, "string"), "email": Field(3, "string")}, 4),
    "License": ({"name": Field(1, "string"), "url": Field(2, "string")}, 3),
    "ExternalDocs": ({"description": Field(1, "string"), "url": Field(2, "string")}, 3),
    "Tag": (
        {
            "name": Field(1, "string"),
            "description": Field(2, "string"),
            "externalDocs": Field(3, "message", "ExternalDocs"),
        },
        4,
    ),
    # Paths: its own extensions come first (1), the paths second (2); every key not "x-" is a path.
    "Paths": ({"": Field(2, "named", "PathItem")}, 1),
    "PathItem": (
        {
            "$ref": Field(1, "string"),
            "get": Field(2, "message", "Operation"),
            "put": Field(3, "message", "Operation"),
            "post": Field(4, "message", "Operation"),
            "delete": Field(5, "message", "Operation"),
            "options": Field(6, "message", "Operation"),
            "head": Field(7, "message", "Operation"),
            "patch": Field(8, "message", "Operation"),
            "parameters": Field(9, "messages", "ParametersItem"),
        },
        10,
    ),
    "Operation": (
        {
            "tags": Field(1, "strings"),
            "summary": Field(2, "string"),
            "description": Field(3, "string"),
            "externalDocs": Field(4, "message", "ExternalDocs"),
            "operationId": Field(5, "string"),
            "produces": Field(6, "strings"),
            "consumes": Field(7, "strings"),
            "parameters": Field(8, "messages", "ParametersItem"),
            "responses": Field(9, "message", "Responses"),
            "schemes": Field(10, "strings"),
            "deprecated": Field(11, "bool"),
            "security": Field(12, "messages", "SecurityRequirement"),
        },
        13,
    ),
    "JsonReference": ({"$ref": Field(1, "string"), "description": Field(2, "string")}, 0),
    "BodyParameter": (
        {
            "description": Field(1, "string"),
            "name": Field(2, "string"),
            "in": Field(3, "string"),
            "required": Field(4, "bool"),
            "schema": Field(5, "message", "Schema"),
        },
        6,
    ),
    "QueryParameterSubSchema": _parameter_sub_schema(allow_empty=True),
    "FormDataParameterSubSchema": _parameter_sub_schema(allow_empty=True),
    "PathParameterSubSchema": _parameter_sub_schema(allow_empty=False),
    "HeaderParameterSubSchema": _parameter_sub_schema(allow_empty=False),
    "PrimitivesItems": (_simple_schema(1), 18),
    "Header": (
        {**_simple_schema(1), "description": Field(18, "string")},
        19,
    ),
    "Headers": ({"": Field(1, "named", "Header")}, 0),
    "Responses": ({"": Field(1, "named", "ResponseValue")}, 2),
    "Response": (
        {
            "description": Field(1, "string"),
            "schema": Field(2, "message", "SchemaItem"),
            "headers": Field(3, "message", "Headers"),
            "examples": Field(4, "message", "Examples"),
        },
        5,
    ),
    "Examples": ({"": Field(1, "named", "Any")}, 0),
    "FileSchema": (
        {
            "format": Field(1, "string"),
            "title": Field(2, "string"),
            "description": Field(3, "string"),
            "default": Field(4, "any"),
            "required": Field(5, "strings"),
            "type": Field(6, "string"),
            "readOnly": Field(7, "bool"),
            "externalDocs": Field(8, "message", "ExternalDocs"),
            "example": Field(9, "any"),
        },
        10,
    ),
    "Schema": (
        {
            "$ref": Field(1, "string"),
            "format": Field(2, "string"),
            "title": Field(3, "string"),
            "description": Field(4, "string"),
            "default": Field(5, "any"),
            "multipleOf": Field(6, "double"),
            "maximum": Field(7, "double"),
            "exclusiveMaximum": Field(8, "bool"),
            "minimum": Field(9, "double"),
            "exclusiveMinimum": Field(10, "bool"),
            "maxLength": Field(11, "int64"),
            "minLength": Field(12, "int64"),
            "pattern": Field(13, "string"),
            "maxItems": Field(14, "int64"),
            "minItems": Field(15, "int64"),
            "uniqueItems": Field(16, "bool"),
            "maxProperties": Field(17, "int64"),
            "minProperties": Field(18, "int64"),
            "required": Field(19, "strings"),
            "enum": Field(20, "anys"),
            "additionalProperties": Field(21, "message", "AdditionalPropertiesItem"),
            "type": Field(22, "message", "TypeItem"),
            "items": Field(23, "message", "ItemsItem"),
            "allOf": Field(24, "messages", "Schema"),
            "properties": Field(25, "message", "Properties"),
            "discriminator": Field(26, "string"),
            "readOnly": Field(27, "bool"),
            "xml": Field(28, "message", "Xml"),
            "externalDocs": Field(29, "message", "ExternalDocs"),
            "example": Field(30, "any"),
        },
        31,
    ),
    "Xml": (
        {
            "name": Field(1, "string"),
            "namespace": Field(2, "string"),
            "prefix": Field(3, "string"),
            "attribute": Field(4, "bool"),
            "wrapped": Field(5, "bool"),
        },
        6,
    ),
    "Properties": ({"": Field(1, "named", "Schema")}, 0),
    "Definitions": ({"": Field(1, "named", "Schema")}, 0),
    "ParameterDefinitions": ({"": Field(1, "named", "Parameter")}, 0),
    "ResponseDefinitions": ({"": Field(1, "named", "Response")}, 0),
    "SecurityDefinitions": ({"": Field(1, "named", "SecurityDefinitionsItem")}, 0),
    "SecurityRequirement": ({"": Field(1, "named", "StringArray")}, 0),
    "ApiKeySecurity": (
        {
            "type": Field(1, "string"),
            "name": Field(2, "string"),
            "in": Field(3, "string"),
            "description": Field(4, "string"),
        },
        5,
    ),
    "BasicAuthenticationSecurity": ({"type": Field(1, "string"), "description": Field(2, "string")}, 3),
}


# -- the wire format --------------------------------------------------------------------------------


def _varint(value: int) -> bytes:
    value &= 0xFFFF_FFFF_FFFF_FFFF  # negative int64s are ten bytes of two's complement
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _key(number: int, wire: int) -> bytes:
    return _varint(number << 3 | wire)


def length_delimited(number: int, payload: bytes) -> bytes:
    """Field ``number`` holding ``payload`` (a string, bytes or an encoded message)."""
    return _key(number, _LEN) + _varint(len(payload)) + payload


def _string(number: int, value: str) -> bytes:
    return length_delimited(number, value.encode("utf-8"))


def named(name: str, value: bytes) -> bytes:
    """A ``Named...`` message's body: ``{1: name, 2: value}`` (the value already encoded)."""
    return _string(1, name) + length_delimited(2, value)


# -- JSON to messages -------------------------------------------------------------------------------


def yaml_text(value: Any) -> str:
    """An ``Any``'s YAML: flow style, which is JSON (see the module's docstring)."""
    return json.dumps(value, ensure_ascii=False) + "\n"


def _any(value: Any) -> bytes:
    return _string(2, yaml_text(value))


def _fail(where: str, message: str) -> UnencodableDocument:
    return UnencodableDocument(f"{where or '$root'}: {message}")


def _scalar(field: Field, value: Any, where: str) -> bytes:
    if field.kind == "string":
        if not isinstance(value, str):
            raise _fail(where, f"has unexpected value {value!r}")
        return _string(field.number, value) if value else b""
    if field.kind == "bool":
        if not isinstance(value, bool):
            raise _fail(where, f"has unexpected value {value!r}")
        return _key(field.number, _VARINT) + b"\x01" if value else b""
    if field.kind == "int64":
        if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
            raise _fail(where, f"has unexpected value {value!r}")
        return _key(field.number, _VARINT) + _varint(int(value)) if value else b""
    if isinstance(value, bool) or not isinstance(value, int | float):  # double
        raise _fail(where, f"has unexpected value {value!r}")
    return _key(field.number, _I64) + struct.pack("<d", float(value)) if value else b""


def _field(field: Field, value: Any, where: str) -> bytes:
    kind = field.kind
    if kind in ("string", "bool", "int64", "double"):
        return _scalar(field, value, where)
    if kind == "strings":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise _fail(where, f"has unexpected value {value!r}")
        return b"".join(_string(field.number, v) for v in value)
    if kind == "any":
        return length_delimited(field.number, _any(value))
    if kind == "anys":
        if not isinstance(value, list):
            raise _fail(where, f"has unexpected value {value!r}")
        return b"".join(length_delimited(field.number, _any(v)) for v in value)
    if kind == "message":
        return length_delimited(field.number, encode(field.type, value, where))
    if kind == "messages":
        if not isinstance(value, list):
            raise _fail(where, f"has unexpected value {value!r}")
        return b"".join(
            length_delimited(field.number, encode(field.type, v, f"{where}[{i}]"))
            for i, v in enumerate(value)
        )
    raise AssertionError(kind)


def _oneof(number: int, message: str, value: Any, where: str) -> bytes:
    return length_delimited(number, encode(message, value, where))


def _parameters_item(value: Any, where: str) -> bytes:
    # gnostic tries Parameter, then JsonReference: a "$ref" makes the second one parse.
    if isinstance(value, Mapping) and "$ref" in value:
        return _oneof(2, "JsonReference", value, where)
    return _oneof(1, "Parameter", value, where)


_NON_BODY: Final = {
    "header": (1, "HeaderParameterSubSchema"),
    "formData": (2, "FormDataParameterSubSchema"),
    "query": (3, "QueryParameterSubSchema"),
    "path": (4, "PathParameterSubSchema"),
}


def _parameter(value: Any, where: str) -> bytes:
    where_in = value.get("in") if isinstance(value, Mapping) else None
    if where_in == "body":
        return _oneof(1, "BodyParameter", value, where)
    if where_in not in _NON_BODY:
        raise _fail(where, "contains an invalid Parameter")
    number, message = _NON_BODY[where_in]
    return length_delimited(2, _oneof(number, message, value, where))  # NonBodyParameter


def _response_value(value: Any, where: str) -> bytes:
    if isinstance(value, Mapping) and "$ref" in value:
        return _oneof(2, "JsonReference", value, where)
    return _oneof(1, "Response", value, where)


def _schema_item(value: Any, where: str) -> bytes:
    if isinstance(value, Mapping) and value.get("type") == "file":
        return _oneof(2, "FileSchema", value, where)
    return _oneof(1, "Schema", value, where)


def _additional_properties(value: Any, where: str) -> bytes:
    if isinstance(value, bool):
        return _key(2, _VARINT) + (b"\x01" if value else b"\x00")  # a oneof member: written even if false
    return _oneof(1, "Schema", value, where)


def _type_item(value: Any, where: str) -> bytes:
    kinds = [value] if isinstance(value, str) else value
    if not isinstance(kinds, list) or not all(isinstance(k, str) for k in kinds):
        raise _fail(where, f"has unexpected value for string array: {value!r}")
    return b"".join(_string(1, k) for k in kinds)


def _items_item(value: Any, where: str) -> bytes:
    if not isinstance(value, Mapping):
        raise _fail(where, f"has unexpected value for item array: {value!r}")
    return _oneof(1, "Schema", value, where)


def _security_definitions_item(value: Any, where: str) -> bytes:
    kind = value.get("type") if isinstance(value, Mapping) else None
    if kind == "basic":
        return _oneof(1, "BasicAuthenticationSecurity", value, where)
    if kind == "apiKey":
        return _oneof(2, "ApiKeySecurity", value, where)
    raise _fail(where, "contains an invalid SecurityDefinitionsItem")


def _string_array(value: Any, where: str) -> bytes:
    return _field(Field(1, "strings"), value, where)


#: Messages that are a choice (``oneof``) or a wrapper rather than a JSON object's fields.
_SPECIAL: Final[Mapping[str, Callable[[Any, str], bytes]]] = {
    "ParametersItem": _parameters_item,
    "Parameter": _parameter,
    "ResponseValue": _response_value,
    "SchemaItem": _schema_item,
    "AdditionalPropertiesItem": _additional_properties,
    "TypeItem": _type_item,
    "ItemsItem": _items_item,
    "SecurityDefinitionsItem": _security_definitions_item,
    "StringArray": _string_array,
    "Any": lambda value, _where: _any(value),
}


def encode(message: str, value: Any, where: str = "") -> bytes:
    """The body of ``message`` (a name in :data:`MESSAGES`) read from the JSON ``value``.

    Fields are written in field-number order, as Go's ``proto.Marshal`` writes them."""
    special = _SPECIAL.get(message)
    if special is not None:
        return special(value, where)
    if not isinstance(value, Mapping):
        raise _fail(where, f"has unexpected value: {value!r}")
    fields, extensions = MESSAGES[message]
    entries = fields.get("")  # a message of named entries: every key but the extensions is one
    parts: list[tuple[int, bytes]] = []
    for key, item in value.items():
        path = f"{where}.{key}" if where else key
        if key.startswith("x-") and extensions:
            parts.append((extensions, length_delimited(extensions, named(key, _any(item)))))
        elif entries is not None:
            parts.append(
                (
                    entries.number,
                    length_delimited(entries.number, named(key, encode(entries.type, item, path))),
                )
            )
        elif key in fields:
            parts.append((fields[key].number, _field(fields[key], item, path)))
        else:
            raise _fail(where, f"has invalid property: {key}")
    parts.sort(key=lambda part: part[0])  # stable: repeated fields keep the document's order
    return b"".join(part for _, part in parts)


def encode_document(document: Mapping[str, Any]) -> bytes:
    """A whole Swagger 2.0 document as ``openapi_v2.Document`` bytes."""
    return encode("Document", document)


__all__ = [
    "MEDIA_TYPE",
    "MEDIA_TYPES_ACCEPTED",
    "MESSAGES",
    "Field",
    "UnencodableDocument",
    "encode",
    "encode_document",
    "length_delimited",
    "named",
    "yaml_text",
]
