"""``/openapi/v2``: the Swagger 2.0 document, as JSON and as gnostic protobuf, and what kubectl reads in it.

The protobuf is read back here with the field numbers of gnostic-models ``openapiv2/OpenAPIv2.proto``
written out in the tests, independently of the encoder's tables.
"""

from __future__ import annotations

import copy
import struct
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest
import yaml

from controlplane.apiserver import gnostic
from controlplane.apiserver.handlers import openapi_v2
from tests.controlplane.apiserver.conftest import API
from tests.controlplane.apiserver.test_apiextensions import CRDS, has, until
from tests.support.apiserver import admin_api

PROTOBUF = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"  # what kubectl sends
PROTOBUF_ANSWER = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"  # what upstream answers
CONFIGMAP_ITEM = "/api/v1/namespaces/{namespace}/configmaps/{name}"

#: Shared parameters whose text the lab's v3 documents have exactly as upstream, with the names
#: kubernetes' ``api/openapi-spec/swagger.json`` gives them.
UPSTREAM_PARAMETER_NAMES = {
    "allowWatchBookmarks-HC2hJt-J",
    "body-2Y1dVQaQ",
    "body-78PwaGsr",
    "fieldManager-7c6nTn1T",
    "fieldManager-Qy4HdaTW",
    "fieldSelector-xIcQKXFG",
    "force-tOGGb0Yi",
    "gracePeriodSeconds--K5HaBOS",
    "labelSelector-5Zw57w4C",
    "namespace-vgWSWtn3",
    "orphanDependents-uRB25kX5",
    "pretty-tJGM1-ng",
    "propagationPolicy-6jk3prlO",
    "resourceVersion-5WAnf1kx",
    "resourceVersionMatch-t8XhRHeC",
    "timeoutSeconds-yvYezaOC",
    "watch-XNNPZGbK",
}


# -- reading protobuf by field number ---------------------------------------------------------------


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def _scan(data: bytes) -> Iterator[tuple[int, int | bytes]]:
    """Each field of a message: ``(number, value)``, varints as ints, the rest as bytes."""
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            yield number, value
        elif wire == 1:
            yield number, data[pos : pos + 8]
            pos += 8
        else:
            assert wire == 2, f"wire type {wire}"
            size, pos = _varint(data, pos)
            yield number, data[pos : pos + size]
            pos += size


def _fields(data: bytes) -> dict[int, list[Any]]:
    out: dict[int, list[Any]] = {}
    for number, value in _scan(data):
        out.setdefault(number, []).append(value)
    return out


def _one(data: bytes, number: int) -> Any:
    [value] = _fields(data)[number]
    return value


def _named(data: bytes, number: int) -> dict[str, bytes]:
    """A repeated ``Named...`` field: name (1) to value (2)."""
    return {_one(e, 1).decode(): _one(e, 2) for e in _fields(data).get(number, [])}


def _extensions(data: bytes, number: int) -> dict[str, Any]:
    """Repeated ``NamedAny``: each ``Any``'s YAML (field 2) read back."""
    return {name: yaml.safe_load(_one(value, 2).decode()) for name, value in _named(data, number).items()}


def _supports_query_param(document: bytes, gvk: dict[str, str], param: str) -> bool | None:
    """cli-runtime ``supportsQueryParam`` (``query_param_verifier.go``) over the protobuf: the PATCH
    operation of ``gvk`` and its query parameters, inline or shared; None: no such operation."""
    shared = _named(_one(document, 10), 1)  # Document.parameters -> ParameterDefinitions
    for item in _named(_one(document, 8), 2).values():  # Document.paths -> Paths.path
        patch = _fields(item).get(8)  # PathItem.patch
        if not patch:
            continue
        if (
            _extensions(patch[0], 13).get("x-kubernetes-group-version-kind") != gvk
        ):  # Operation.vendor_extension
            continue
        for parameters_item in _fields(patch[0]).get(8, []):  # Operation.parameters
            choice = _fields(parameters_item)
            if 2 in choice:  # JsonReference
                ref = _one(choice[2][0], 1).decode()
                parameter = shared[ref.removeprefix("#/parameters/")]
            else:
                parameter = choice[1][0]
            non_body = _fields(parameter).get(2)  # Parameter.non_body_parameter
            query = _fields(non_body[0]).get(3) if non_body else None  # .query_parameter_sub_schema
            if query and _one(query[0], 4).decode() == param:  # QueryParameterSubSchema.name
                return True
        return False
    return None


# -- helpers ----------------------------------------------------------------------------------------


async def _get(api: API, accept: str | None = None, **headers: str) -> Any:
    if accept is not None:
        headers["Accept"] = accept
    return await api.client.get("/openapi/v2", headers=headers)


async def _json(api: API) -> dict[str, Any]:
    response = await _get(api)
    assert response.status_code == 200
    body: dict[str, Any] = response.json()
    return body


def _refs(node: Any) -> set[str]:
    if isinstance(node, dict):
        found = {node["$ref"]} if isinstance(node.get("$ref"), str) else set()
        for value in node.values():
            found |= _refs(value)
        return found
    if isinstance(node, list):
        return set().union(*(_refs(v) for v in node)) if node else set()
    return set()


def _schemas(node: Any) -> Iterator[dict[str, Any]]:
    """Every schema object under a definition (the definition, properties, items...)."""
    if not isinstance(node, dict):
        return
    yield node
    for value in (node.get("properties") or {}).values():
        yield from _schemas(value)
    for key in ("items", "additionalProperties"):
        yield from _schemas(node.get(key))
    for value in node.get("allOf") or ():
        yield from _schemas(value)


# -- serving ----------------------------------------------------------------------------------------


async def test_kubectl_gets_protobuf_and_others_json(api: API) -> None:
    as_json = await _get(api)
    assert as_json.status_code == 200
    assert as_json.headers["content-type"] == "application/json"
    as_proto = await _get(api, PROTOBUF)
    assert as_proto.status_code == 200
    assert as_proto.headers["content-type"] == PROTOBUF_ANSWER
    assert as_proto.content == gnostic.encode_document(as_json.json())
    # One hash for both (the JSON's), told apart by the Vary header, as kube-openapi does.
    assert (
        as_json.headers["etag"]
        == as_proto.headers["etag"]
        == f'"{openapi_v2.document(api.server.types).etag}"'
    )
    assert as_json.headers["vary"] == as_proto.headers["vary"] == "Accept"
    assert as_json.headers["last-modified"].endswith(" GMT")
    preferred = await _get(api, f"application/json;q=0.5, {PROTOBUF_ANSWER}")
    assert preferred.headers["content-type"] == PROTOBUF_ANSWER
    assert (await _get(api, "application/*")).headers["content-type"] == "application/json"
    refused = await _get(api, "text/html")
    assert (refused.status_code, refused.content) == (406, b"")


async def test_conditional_requests_are_answered_304(api: API) -> None:
    first = await _get(api, PROTOBUF)
    unchanged = await _get(api, PROTOBUF, **{"If-None-Match": first.headers["etag"]})
    assert (unchanged.status_code, unchanged.content) == (304, b"")
    assert unchanged.headers["etag"] == first.headers["etag"]
    assert (await _get(api, PROTOBUF, **{"If-None-Match": '"other"'})).status_code == 200
    later = format_datetime(datetime.now(UTC) + timedelta(minutes=1), usegmt=True)
    assert (await _get(api, **{"If-Modified-Since": later})).status_code == 304
    earlier = format_datetime(datetime.now(UTC) - timedelta(days=1), usegmt=True)
    assert (await _get(api, **{"If-Modified-Since": earlier})).status_code == 200


# -- the document -----------------------------------------------------------------------------------


async def test_the_document_is_closed_and_every_schema_is_one_gnostic_accepts(api: API) -> None:
    document = await _json(api)
    assert document["swagger"] == "2.0"
    assert document["info"] == {"title": "Kubernetes", "version": "v1.37.0"}
    assert document["securityDefinitions"]["BearerToken"]["type"] == "apiKey"
    assert document["security"] == [{"BearerToken": []}]
    for ref in _refs(document):
        section, _, name = ref.removeprefix("#/").partition("/")
        assert name in document[section], ref  # kubectl refuses the whole document for a dangling $ref
    allowed = set(gnostic.MESSAGES["Schema"][0])
    for name, definition in document["definitions"].items():
        for schema in _schemas(definition):
            assert {k for k in schema if not k.startswith("x-")} <= allowed, name
            assert not isinstance(schema.get("type"), list), name
            if schema.get("type") == "array":
                assert "items" in schema, name  # kube-openapi's parser wants exactly one item schema
    assert {"io.k8s.api.core.v1.ConfigMap", "io.k8s.api.apps.v1.Deployment"} <= document["definitions"].keys()
    assert list(document["paths"]) == sorted(document["paths"])


async def test_definitions_are_written_as_kube_openapis_v2_builder_writes_them(api: API) -> None:
    definitions = (await _json(api))["definitions"]
    assert definitions["io.k8s.apimachinery.pkg.util.intstr.IntOrString"] == {
        "description": definitions["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["description"],
        "format": "int-or-string",
        "type": "string",
    }
    assert definitions["io.k8s.apimachinery.pkg.api.resource.Quantity"]["type"] == "string"
    configmap = definitions["io.k8s.api.core.v1.ConfigMap"]
    assert configmap["x-kubernetes-group-version-kind"] == [
        {"group": "", "kind": "ConfigMap", "version": "v1"}
    ]
    assert configmap["properties"]["apiVersion"]["type"] == "string"
    assert "enum" not in configmap["properties"]["apiVersion"]  # kubernetes-validate's pin, not upstream's
    metadata = configmap["properties"]["metadata"]
    assert metadata["$ref"] == "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    assert metadata["description"].startswith("Standard object's metadata.")  # beside the $ref, in v2
    assert configmap["properties"]["data"] == {
        "additionalProperties": {"type": "string"},
        "description": configmap["properties"]["data"]["description"],
        "type": "object",
    }


async def test_operations_are_written_the_v2_way_with_upstreams_shared_parameters(api: API) -> None:
    document = await _json(api)
    assert document["parameters"].keys() >= UPSTREAM_PARAMETER_NAMES
    for name, parameter in document["parameters"].items():
        assert openapi_v2.shared_parameter_name(parameter) == name
    item = document["paths"][CONFIGMAP_ITEM]
    assert item["parameters"] == [
        {
            "description": "name of the ConfigMap",
            "in": "path",
            "name": "name",
            "required": True,
            "type": "string",
            "uniqueItems": True,
        },
        {"$ref": "#/parameters/namespace-vgWSWtn3"},
        {"$ref": "#/parameters/pretty-tJGM1-ng"},
    ]
    patch = item["patch"]
    assert patch["consumes"] == [
        "application/json-patch+json",
        "application/merge-patch+json",
        "application/strategic-merge-patch+json",
        "application/apply-patch+yaml",
    ]
    assert patch["produces"] == [
        "application/json",
        "application/yaml",
        "application/vnd.kubernetes.protobuf",
    ]
    assert patch["schemes"] == ["https"]
    assert patch["x-kubernetes-group-version-kind"] == {"group": "", "kind": "ConfigMap", "version": "v1"}
    names = [p.get("name") or p["$ref"] for p in patch["parameters"]]
    assert names == [
        "#/parameters/body-78PwaGsr",
        "dryRun",  # dryRun and fieldValidation stay inline: kubectl once looked for them there
        "#/parameters/fieldManager-7c6nTn1T",
        "fieldValidation",
        "#/parameters/force-tOGGb0Yi",
    ]
    assert patch["responses"]["200"] == {
        "description": "OK",
        "schema": {"$ref": "#/definitions/io.k8s.api.core.v1.ConfigMap"},
    }
    assert patch["responses"]["401"] == {"description": "Unauthorized"}
    put = item["put"]
    assert put["consumes"] == ["*/*"]
    assert put["parameters"][0] == {
        "in": "body",
        "name": "body",
        "required": True,
        "schema": {"$ref": "#/definitions/io.k8s.api.core.v1.ConfigMap"},
    }
    discovery = document["paths"]["/api/v1/"]["get"]
    assert discovery["consumes"] == discovery["produces"]
    assert discovery["operationId"] == "getCoreV1APIResources"


async def test_kubectls_legacy_verifier_reads_the_protobuf(api: API) -> None:
    document = (await _get(api, PROTOBUF)).content
    assert _one(document, 1) == b"2.0"  # Document.swagger
    configmap: dict[str, str] = {"group": "", "kind": "ConfigMap", "version": "v1"}
    assert _supports_query_param(document, configmap, "fieldValidation") is True
    namespace = {"group": "", "kind": "Namespace", "version": "v1"}  # what it checks for a CRD
    assert _supports_query_param(document, namespace, "fieldValidation") is True
    assert _supports_query_param(document, {"group": "", "kind": "Widget", "version": "v1"}, "x") is None
    definitions = _named(_one(document, 9), 1)  # Document.definitions
    assert len(definitions) == len((await _json(api))["definitions"])
    schema = definitions["io.k8s.api.core.v1.ConfigMap"]
    assert _extensions(schema, 31)["x-kubernetes-group-version-kind"] == [
        configmap
    ]  # Schema.vendor_extension
    properties = _named(_one(schema, 25), 1)  # Schema.properties
    assert _one(properties["metadata"], 1) == b"#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    assert _fields(_one(properties["data"], 22))[1] == [b"object"]  # Schema.type -> TypeItem.value


async def test_clusters_share_the_pieces_and_the_document(api: API) -> None:
    async with admin_api(api.store) as (other, _):  # a second cluster of the same process
        mine = openapi_v2.document(api.server.types, api.server.custom_resources)
        theirs = openapi_v2.document(other.types, other.custom_resources)
        assert mine is theirs


# -- custom resources -------------------------------------------------------------------------------


def _definition() -> dict[str, Any]:
    spec = {
        "type": "object",
        "required": ["size", "note"],
        "properties": {
            "size": {"type": "integer", "minimum": 1, "default": 1},
            "note": {"type": "string", "nullable": True},
            "port": {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]},
            "extra": {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
                "properties": {"known": {"type": "string"}},
            },
            "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.v2.example.com"},
        "spec": {
            "group": "v2.example.com",
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "kind": "Gadget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}},
                }
            ],
        },
    }


async def test_custom_resources_join_the_document_filtered_as_upstream_does(api: API) -> None:
    before = (await _get(api)).headers["etag"]
    assert (await api.client.post(CRDS, json=_definition())).status_code == 201
    crd = await until(api, "gadgets.v2.example.com", has("Established"))
    assert crd is not None
    document = await _json(api)
    gadget = document["definitions"]["com.example.v2.v1.Gadget"]
    assert gadget["x-kubernetes-group-version-kind"] == [
        {"group": "v2.example.com", "kind": "Gadget", "version": "v1"}
    ]
    assert (
        gadget["properties"]["metadata"]["$ref"]
        == "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    )
    spec = gadget["properties"]["spec"]
    assert spec["required"] == ["size"]  # a nullable field is not required in v2
    assert spec["properties"] == {
        "size": {"minimum": 1, "type": "integer"},  # no default (PruneDefaults)
        "note": {},  # nullable: untyped
        "port": {"x-kubernetes-int-or-string": True},  # no anyOf
        "extra": {"x-kubernetes-preserve-unknown-fields": True},  # neither type nor properties
        "tags": {"items": {"type": "string"}, "type": "array", "x-kubernetes-list-type": "set"},
    }
    listing = document["definitions"]["com.example.v2.v1.GadgetList"]
    assert listing["properties"]["items"]["items"] == {"$ref": "#/definitions/com.example.v2.v1.Gadget"}
    item = document["paths"]["/apis/v2.example.com/v1/namespaces/{namespace}/gadgets/{name}"]
    assert "application/strategic-merge-patch+json" not in item["patch"]["consumes"]
    assert any(p.get("name") == "fieldValidation" for p in item["patch"]["parameters"])
    for ref in _refs(document):
        section, _, name = ref.removeprefix("#/").partition("/")
        assert name in document[section], ref
    proto = (await _get(api, PROTOBUF)).content
    gvk = {"group": "v2.example.com", "kind": "Gadget", "version": "v1"}
    assert _supports_query_param(proto, gvk, "fieldValidation") is True
    after = (await _get(api)).headers["etag"]
    assert after != before

    changed = copy.deepcopy(crd)
    changed["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"][
        "color"
    ] = {"type": "string"}
    changed["spec"]["names"]["shortNames"] = ["gd"]
    assert (await api.client.put(f"{CRDS}/gadgets.v2.example.com", json=changed)).status_code == 200
    # The controller writes the new accepted names after serving the new schema.
    await until(
        api,
        "gadgets.v2.example.com",
        lambda obj: bool(obj and obj["status"]["acceptedNames"].get("shortNames")),
    )
    spec = (await _json(api))["definitions"]["com.example.v2.v1.Gadget"]["properties"]["spec"]
    assert spec["properties"]["color"] == {"type": "string"}
    assert (await _get(api)).headers["etag"] not in (before, after)


def test_structural_v2_follows_upstreams_conversion() -> None:
    """Cases of apiextensions-apiserver ``pkg/controller/openapi/v2/conversion_test.go``."""
    assert openapi_v2.structural_v2({"type": "array"}) == {}  # no items: no type
    assert openapi_v2.structural_v2(
        {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "properties": {"a": {}}}
    ) == {"x-kubernetes-preserve-unknown-fields": True}
    assert (
        openapi_v2.structural_v2(
            {"type": "object", "nullable": True, "properties": {"a": {"type": "string"}}}
        )
        == {}
    )
    assert openapi_v2.structural_v2(
        {
            "type": "object",
            "required": ["a", "b"],
            "properties": {"a": {"type": "string", "nullable": True}, "b": {"type": "string"}},
        }
    ) == {"type": "object", "required": ["b"], "properties": {"a": {}, "b": {"type": "string"}}}
    assert openapi_v2.structural_v2(
        {"type": "object", "required": ["a"], "additionalProperties": {"type": "string", "nullable": True}}
    ) == {"type": "object", "additionalProperties": {}}
    assert openapi_v2.structural_v2(
        {
            "type": "string",
            "oneOf": [{"pattern": "a"}],
            "allOf": [],
            "not": {},
            "example": "x",
            "default": "y",
        }
    ) == {"type": "string"}
    assert openapi_v2.structural_v2({"x-kubernetes-embedded-resource": False, "type": "object"}) == {
        "type": "object"
    }


# -- the encoder ------------------------------------------------------------------------------------


def test_the_encoder_writes_gnostic_messages_field_by_field() -> None:
    # Document.swagger (1) and Document.info (2: Info.title 1, Info.version 2).
    assert gnostic.encode_document(
        {"swagger": "2.0", "info": {"title": "T", "version": "v"}}
    ) == bytes.fromhex("0a03322e3012060a0154120176")
    schema = gnostic.encode(
        "Schema",
        {
            "x-kubernetes-map-type": "atomic",
            "type": "object",
            "properties": {},
            "additionalProperties": False,
            "maxLength": -1,
            "maximum": 1.5,
            "required": [],
            "description": "",
        },
    )
    expected = (
        b"\x39" + struct.pack("<d", 1.5)  # maximum (7): fixed64
        + b"\x58" + b"\xff" * 9 + b"\x01"  # maxLength (11): -1 as ten bytes of varint
        + b"\xaa\x01\x02\x10\x00"  # additionalProperties (21): the oneof's boolean (2), written though false
        + b"\xb2\x01\x08\x0a\x06object"  # type (22): TypeItem.value
        + b"\xca\x01\x00"  # properties (25): present, empty (kubectl tells a kind from a map by it)
        + b"\xfa\x01\x24\x0a\x15x-kubernetes-map-type"  # vendor_extension (31): NamedAny.name,
        + b"\x12\x0b\x12\x09" + b'"atomic"\n'  # .value: Any.yaml (2), in flow style: JSON is YAML
    )  # fmt: skip
    assert schema == expected
    assert gnostic.yaml_text("atomic") == '"atomic"\n'
    assert yaml.safe_load(gnostic.yaml_text([{"group": "", "kind": "Pod"}])) == [{"group": "", "kind": "Pod"}]


def test_the_encoder_chooses_oneofs_as_gnostic_does() -> None:
    shared = gnostic.encode("ParametersItem", {"$ref": "#/parameters/pretty-tJGM1-ng"})
    assert _fields(shared).keys() == {2}  # JsonReference
    query = gnostic.encode("ParametersItem", {"in": "query", "name": "watch", "type": "boolean"})
    parameter = _one(query, 1)  # Parameter
    non_body = _one(parameter, 2)  # NonBodyParameter
    assert _one(_one(non_body, 3), 4) == b"watch"  # QueryParameterSubSchema.name
    path = gnostic.encode("Parameter", {"in": "path", "name": "name", "required": True, "type": "string"})
    assert _one(_one(_one(path, 2), 4), 5) == b"string"  # PathParameterSubSchema.type is field 5
    body = gnostic.encode("Parameter", {"in": "body", "name": "body", "schema": {"$ref": "#/definitions/X"}})
    assert _one(_one(_one(body, 1), 5), 1) == b"#/definitions/X"  # BodyParameter.schema -> Schema.$ref
    response = gnostic.encode("ResponseValue", {"description": "OK", "schema": {"$ref": "#/definitions/X"}})
    assert _one(_one(_one(response, 1), 2), 1)  # Response.schema -> SchemaItem.schema
    with pytest.raises(gnostic.UnencodableDocument, match="invalid property: oneOf"):
        gnostic.encode("Schema", {"oneOf": [{"type": "string"}]})
    with pytest.raises(gnostic.UnencodableDocument, match="invalid Parameter"):
        gnostic.encode("Parameter", {"in": "cookie", "name": "c"})
