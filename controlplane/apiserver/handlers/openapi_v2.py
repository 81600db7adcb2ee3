"""OpenAPI v2: the single Swagger 2.0 document kubectl falls back to when OpenAPI v3 cannot answer.

kube-apiserver still serves ``GET /openapi/v2``: every path and every definition in one document
(kube-openapi ``pkg/builder/openapi.go``), as JSON or as gnostic's protobuf
(kube-openapi ``pkg/handler/handler.go``). kubectl 1.37 reads it, always as protobuf
(:mod:`controlplane.apiserver.gnostic`), in two cases of ``apply``/``create`` with
``--validate=strict`` (the default), both in ``Factory.Validator``
(kubectl ``pkg/cmd/util/factory_client_access.go``):

* **A ``kind: List``.** cli-runtime's v3 verifier never claims server-side validation for a List
  (``pkg/resource/query_param_verifier_v3.go``: ``v1, Kind=List`` is "unsupported"), so kubectl
  validates on its side: ``pkg/validation/validation.go`` ``schemaValidation`` downloads this
  document (``OpenAPISchema``), finds each item's definition by its ``x-kubernetes-group-version-kind``
  and checks the item against it (kube-openapi ``pkg/util/proto/validation``).
* **A kind the v3 document of its group-version has no PATCH operation for** (``kind: Widget`` in
  ``v1``): the v3 verifier answers "Path not found for GVK", and the fallback verifier
  (``fallback_query_param_verifier.go``) asks the legacy one (``query_param_verifier.go``), which
  downloads this document and looks for the kind's PATCH operation, then Namespace's (for a CRD).
  Without the document: "failed to download openapi"; with it, the kind is unknown, kubectl asks the
  server to map it, and says what upstream says: ``no matches for kind "Widget" in version "v1"``.

The document is built from what the v3 documents are built from (:mod:`.openapi`): each served
group-version's v3 paths, written the v2 way (a ``body`` parameter for a request body, ``consumes``
and ``produces``, ``schemes``, parameters flattened and sorted by name), and the schemas of
:mod:`controlplane.api.schema` rewritten as kube-openapi's v2 builder writes them: references into
``#/definitions/`` with their ``description`` beside the ``$ref``, IntOrString and Quantity as
strings. Custom resources' definitions come from their v3 documents, filtered as
``ToStructuralOpenAPIV2`` filters them (apiextensions-apiserver
``pkg/controller/openapi/v2/conversion.go``): no ``allOf``/``oneOf``/``anyOf``/``not``, no type on a
nullable or x-kubernetes-preserve-unknown-fields schema, no defaults (``PruneDefaults``).
Parameters shared by many operations are written once under ``parameters`` and referred to, with
kube-openapi's names (``pretty-tJGM1-ng``: the parameter's JSON, FNV-1 hashed, ``pkg/builder/
parameters.go``); ``fieldValidation``, ``dryRun`` and ``name`` stay inline, as kubectl expects.

Memory: the lab runs hundreds of clusters in one process, and this document is megabytes. Nothing is
built before a client asks. Each definition and each built-in group-version's paths are encoded
(JSON and protobuf) once per process and shared by every cluster; a cluster's document is those
pieces joined in order, and the few joined documents last asked for are kept (clusters that serve
the same resources share one). Custom resources' pieces are keyed by their v3 document's hash, so
clusters with the same definitions share them too.

Served as upstream serves it: JSON or protobuf by ``Accept`` (goautoneg's order; 406 for neither),
``Etag`` (SHA-512 of the JSON, the same for both encodings), ``Vary: Accept``, ``Last-Modified``,
and 304 for ``If-None-Match``/``If-Modified-Since``. Deviations: no gzip and no byte ranges (Go's
``gziphandler`` and ``http.ServeContent`` do those; the lab compresses nothing); the document has
only the group-version paths the v3 documents have (not ``/api/``, ``/apis/``, ``/version/``...).
"""

from __future__ import annotations

import base64
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import format_datetime, parsedate_to_datetime
from typing import Any, Final, Protocol

from controlplane.api import schema as schemas
from controlplane.api.resources import ResourceRegistry
from controlplane.apiserver import gnostic
from controlplane.apiserver.handlers import openapi
from controlplane.apiserver.http import Request

SWAGGER_VERSION: Final = "2.0"
JSON_MEDIA_TYPE: Final = "application/json"
_DEFINITIONS: Final = "#/definitions/"
_V3_SCHEMAS: Final = "#/components/schemas/"
_META_GROUP_PREFIX: Final = "#/definitions/io.k8s.apimachinery"

#: IntOrString and Quantity as kube-openapi writes them for v2: strings (kubectl's v2 validation
#: takes any value for a string), with the descriptions the v3 documents give them.
_SCALARS_V2: Final[Mapping[str, Mapping[str, Any]]] = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {
        "description": openapi.scalar_description("io.k8s.apimachinery.pkg.util.intstr.IntOrString"),
        "format": "int-or-string",
        "type": "string",
    },
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {
        "description": openapi.scalar_description("io.k8s.apimachinery.pkg.api.resource.Quantity"),
        "type": "string",
    },
}

_INFO: Final = {"title": "Kubernetes", "version": f"v{schemas.KUBERNETES_VERSION}"}
_SECURITY: Final[list[dict[str, list[str]]]] = [{"BearerToken": []}]
_SECURITY_DEFINITIONS: Final = {
    "BearerToken": {
        "description": "Bearer Token authentication",
        "in": "header",
        "name": "authorization",
        "type": "apiKey",
    }
}

#: The patch media types in the order upstream's ``consumes`` lists them.
_PATCH_ORDER: Final = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
    "application/apply-patch+cbor",
)

#: The value validations a structural schema carries (apiextensions-apiserver
#: ``pkg/apiserver/schema``: ``Generic`` and ``ValueValidation``), all a custom resource's v2
#: definition keeps besides its structure and extensions.
_STRUCTURAL_KEYS: Final = frozenset(
    {
        "description", "type", "title", "format", "maximum", "exclusiveMaximum", "minimum",
        "exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems",
        "multipleOf", "enum", "maxProperties", "minProperties", "required", "properties", "items",
        "additionalProperties", "$ref",
    }
)  # fmt: skip
#: Extensions a structural schema writes only when true (``ToKubeOpenAPI``).
_TRUE_ONLY: Final = (
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string",
)

#: How many joined documents are kept (each is the JSON and the protobuf, a few MB together).
DOCUMENTS_KEPT: Final = 4
#: How many custom group-versions' pieces are kept (small: one or two definitions and their paths).
CUSTOM_PARTS_KEPT: Final = 256


def _sorted(node: Any) -> Any:
    """``node`` with every object's keys sorted, as the JSON is written (and so the protobuf too)."""
    if isinstance(node, Mapping):
        return {k: _sorted(node[k]) for k in sorted(node)}
    if isinstance(node, list):
        return [_sorted(v) for v in node]
    return node


def _dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


# -- definitions ------------------------------------------------------------------------------------


def convert_schema(node: Any, refs: set[str]) -> Any:
    """One schema node of kubernetes-validate's JSON Schema in kube-openapi's OpenAPI v2 form:
    ``#/definitions/`` references (siblings kept), ``"type": ["string", "null"]`` as ``"string"``.

    Collects the names it references into ``refs``."""
    if isinstance(node, list):
        return [convert_schema(item, refs) for item in node]
    if not isinstance(node, Mapping):
        return node
    out: dict[str, Any] = {}
    name = schemas.ref_name(node)
    for key, value in node.items():
        if key == "$ref" and name is not None:
            refs.add(name)
            out[key] = _DEFINITIONS + name
        elif key == "type" and isinstance(value, list):
            kinds = [t for t in value if t != "null"]
            if kinds:
                out["type"] = kinds[0]
        elif key == "properties" and isinstance(value, Mapping):
            out[key] = {k: convert_schema(v, refs) for k, v in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, Mapping):
            out[key] = convert_schema(value, refs)
        elif key == "allOf" and isinstance(value, list):
            out[key] = [convert_schema(v, refs) for v in value]
        else:
            out[key] = value
    return out


def definition(name: str) -> tuple[dict[str, Any], frozenset[str]] | None:
    """A built-in definition in v2 form and the definitions it refers to; None if there is none."""
    override = _SCALARS_V2.get(name)
    if override is not None:
        return dict(override), frozenset()
    if name not in schemas.definitions():
        return None
    source = schemas.definition(name)
    refs: set[str] = set()
    converted = convert_schema(source, refs)
    assert isinstance(converted, dict)
    if source.get("x-kubernetes-group-version-kind"):
        # kubernetes-validate pins apiVersion and kind with an enum; upstream's OpenAPI does not.
        properties = converted.get("properties")
        if isinstance(properties, dict):
            for key in ("apiVersion", "kind"):
                if isinstance(properties.get(key), dict):
                    properties[key] = {k: v for k, v in properties[key].items() if k != "enum"}
    return converted, frozenset(refs)


def _v3_to_v2_refs(node: Any) -> Any:
    """A v3 schema with its references into ``#/definitions/``, and kube-openapi's v3 wrapping of a
    described reference (``{"allOf": [{"$ref": X}], "description": ...}``) undone."""
    if isinstance(node, list):
        return [_v3_to_v2_refs(item) for item in node]
    if not isinstance(node, Mapping):
        return node
    out = {k: _v3_to_v2_refs(v) for k, v in node.items()}
    ref = out.get("$ref")
    if isinstance(ref, str) and ref.startswith(_V3_SCHEMAS):
        out["$ref"] = _DEFINITIONS + ref[len(_V3_SCHEMAS) :]
    wrapped = out.get("allOf")
    if (
        "$ref" not in out
        and isinstance(wrapped, list)
        and len(wrapped) == 1
        and isinstance(wrapped[0], Mapping)
        and set(wrapped[0]) == {"$ref"}
    ):
        del out["allOf"]
        out = {"$ref": wrapped[0]["$ref"], **out}
    return out


def structural_v2(node: Any) -> Any:
    """A custom resource's schema as upstream publishes it in v2: ``ToStructuralOpenAPIV2``
    (apiextensions-apiserver ``pkg/controller/openapi/v2/conversion.go``), then ``PruneDefaults``.

    kubectl's v2 parser cannot take junctors, a typed nullable value, an array without items, nor
    properties under x-kubernetes-preserve-unknown-fields, so upstream leaves them out."""
    if not isinstance(node, Mapping):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _TRUE_ONLY and value is not True:
            continue
        if key in _STRUCTURAL_KEYS or key.startswith("x-kubernetes-"):
            out[key] = value
    preserve = out.get("x-kubernetes-preserve-unknown-fields") is True
    if node.get("nullable") is True:
        for key in ("type", "items", "properties"):
            out.pop(key, None)
    if preserve:
        out.pop("items", None)
        out.pop("properties", None)
    if "items" not in out and out.get("type") == "array":
        out.pop("type")
    if preserve and out.get("type") == "object":
        out.pop("type")
    properties = out.get("properties")
    if isinstance(properties, Mapping):
        nullable = {k for k, v in properties.items() if isinstance(v, Mapping) and v.get("nullable") is True}
        required = out.get("required")
        if nullable and isinstance(required, list):
            out["required"] = [r for r in required if r not in nullable]
        out["properties"] = {k: structural_v2(v) for k, v in properties.items()}
    extra = out.get("additionalProperties")
    if isinstance(extra, Mapping):
        if extra.get("nullable") is True:
            out.pop("required", None)
        out["additionalProperties"] = structural_v2(extra)
    if isinstance(out.get("items"), Mapping):
        out["items"] = structural_v2(out["items"])
    if out.get("required") == []:
        del out["required"]
    return out


def custom_definition(v3_schema: Mapping[str, Any]) -> dict[str, Any]:
    """A custom resource's definition (or its list's) in v2 form, from its v3 document's schema.

    A kind whose root keeps unknown fields is only ``{"type": "object"}`` with its kind, as
    apiextensions-apiserver's ``buildKubeNative`` writes it for v2."""
    gvk = v3_schema.get("x-kubernetes-group-version-kind")
    if v3_schema.get("x-kubernetes-preserve-unknown-fields") is True:
        return {"type": "object", "x-kubernetes-group-version-kind": gvk}
    converted = structural_v2(_v3_to_v2_refs(v3_schema))
    assert isinstance(converted, dict)
    return converted


# -- paths ------------------------------------------------------------------------------------------


def _ref_v2(schema: Mapping[str, Any]) -> dict[str, Any]:
    converted = _v3_to_v2_refs(schema)
    assert isinstance(converted, dict)
    return converted


def _parameter(v3: Mapping[str, Any]) -> dict[str, Any]:
    """A v3 parameter the v2 way: its schema's keys (``type``, ``uniqueItems``) beside its own."""
    out = {k: v for k, v in v3.items() if k != "schema"}
    out.update(v3.get("schema") or {})
    return out


def _media_order(media: str) -> tuple[int, str]:
    return (_PATCH_ORDER.index(media) if media in _PATCH_ORDER else len(_PATCH_ORDER), media)


def operation(v3: Mapping[str, Any]) -> dict[str, Any]:
    """A v3 operation as kube-openapi's v2 builder writes the same route."""
    parameters = [_parameter(p) for p in v3.get("parameters") or ()]
    body = v3.get("requestBody")
    produces: list[str] = []
    responses: dict[str, Any] = {}
    for code, response in (v3.get("responses") or {}).items():
        out: dict[str, Any] = {"description": response.get("description", "")}
        content = response.get("content") or {}
        if content:
            if not produces:
                produces = list(content)
            out["schema"] = _ref_v2(next(iter(content.values()))["schema"])
        responses[code] = out
    if body is not None:
        content = body.get("content") or {}
        consumes = sorted(content, key=_media_order)
        parameter: dict[str, Any] = {"in": "body", "name": "body"}
        if body.get("required"):
            parameter["required"] = True
        parameter["schema"] = _ref_v2(next(iter(content.values()))["schema"])
        parameters.append(parameter)
    elif "x-kubernetes-action" in v3:
        consumes = ["*/*"]
    else:  # discovery (``get available resources``): it consumes what it produces
        consumes = list(produces)
    op: dict[str, Any] = {
        "consumes": consumes,
        "description": v3.get("description", ""),
        "operationId": v3.get("operationId", ""),
        "produces": produces,
        "responses": responses,
        "schemes": ["https"],
    }
    if parameters:
        op["parameters"] = sorted(parameters, key=lambda p: (p.get("name", ""), p.get("in", "")))
    for key, value in v3.items():
        if key == "tags" or key.startswith("x-"):
            op[key] = value
    return op


def path_item(v3: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in v3.items():
        if key == "parameters":
            out[key] = sorted(
                (_parameter(p) for p in value), key=lambda p: (p.get("name", ""), p.get("in", ""))
            )
        elif isinstance(value, Mapping):
            out[key] = operation(value)
    return out


# -- shared parameters (kube-openapi pkg/builder/parameters.go) -------------------------------------

#: Go's JSON field order for ``spec.Parameter`` (kube-openapi ``pkg/validation/spec/parameter.go``,
#: ``MarshalJSONTo``): CommonValidations, SimpleSchema, ParamProps, then ``$ref``.
_GO_PARAMETER_ORDER: Final = (
    "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum", "maxLength", "minLength", "pattern",
    "maxItems", "minItems", "uniqueItems", "multipleOf", "enum",
    "type", "nullable", "format", "items", "collectionFormat", "default", "example",
    "description", "name", "in", "required", "schema", "allowEmptyValue",
    "$ref",
)  # fmt: skip


def _fnv1_64(data: bytes) -> int:
    value = 0xCBF29CE484222325
    for byte in data:
        value = (value * 0x100000001B3) & 0xFFFF_FFFF_FFFF_FFFF
        value ^= byte
    return value


def shared_parameter_name(parameter: Mapping[str, Any]) -> str:
    """kube-openapi's name for a shared parameter: its name, ``-``, then the first 6 bytes of the
    FNV-1 hash of its JSON (Go's field order), URL-safe base64: ``pretty-tJGM1-ng``."""
    ordered = {k: parameter[k] for k in _GO_PARAMETER_ORDER if k in parameter}
    ordered.update({k: parameter[k] for k in sorted(parameter) if k not in ordered})
    digest = _fnv1_64(_dumps(ordered)).to_bytes(8, "big")[:6]
    return f"{parameter.get('name') or 'param'}-{base64.urlsafe_b64encode(digest).decode()}"


def _is_shared(parameter: Mapping[str, Any]) -> bool:
    """``collectSharedParameters``: all but ``name``, ``fieldValidation``, ``dryRun`` (kubectl reads
    those two inline) and a body that is the kind's own schema."""
    where, name = parameter.get("in"), parameter.get("name")
    if where in ("query", "path") and name == "name":
        return False
    if where == "query" and name in ("fieldValidation", "dryRun"):
        return False
    if where == "body" and name == "body":
        ref = (parameter.get("schema") or {}).get("$ref", "")
        return isinstance(ref, str) and ref.startswith(_META_GROUP_PREFIX)
    return True


def _share(parameters: list[dict[str, Any]], shared: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for parameter in parameters:
        if "$ref" in parameter or not _is_shared(parameter):
            out.append(parameter)
            continue
        name = shared_parameter_name(parameter)
        shared.setdefault(name, parameter)
        out.append({"$ref": f"#/parameters/{name}"})
    return out


def _refs(node: Any, found: set[str]) -> set[str]:
    """The definitions ``node`` refers to."""
    if isinstance(node, Mapping):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(_DEFINITIONS):
            found.add(ref[len(_DEFINITIONS) :])
        for value in node.values():
            _refs(value, found)
    elif isinstance(node, list):
        for value in node:
            _refs(value, found)
    return found


# -- pieces -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fragment:
    """One entry of a map of the document, encoded both ways: ``"name":{...}`` as JSON, and the
    ``Named...`` message (name and value) as protobuf."""

    name: str
    json: bytes
    proto: bytes


def _fragment(name: str, value: Any, message: str) -> Fragment:
    value = _sorted(value)
    return Fragment(
        name, _dumps(name) + b":" + _dumps(value), gnostic.named(name, gnostic.encode(message, value, name))
    )


@dataclass(frozen=True)
class Part:
    """What one group-version adds to the document: its paths, the shared parameters they use, the
    built-in definitions they (and its own definitions) refer to, and its own (custom) definitions."""

    paths: tuple[Fragment, ...]
    parameters: tuple[Fragment, ...]
    roots: frozenset[str]
    definitions: tuple[Fragment, ...] = ()


def _part(v3_paths: Mapping[str, Any], own: Mapping[str, dict[str, Any]]) -> Part:
    shared: dict[str, dict[str, Any]] = {}
    paths: list[Fragment] = []
    roots: set[str] = set()
    for path in sorted(v3_paths):
        item = path_item(v3_paths[path])
        if "parameters" in item:
            item["parameters"] = _share(item["parameters"], shared)
        for op in item.values():
            if isinstance(op, dict) and "parameters" in op:
                op["parameters"] = _share(op["parameters"], shared)
        _refs(item, roots)
        paths.append(_fragment(path, item, "PathItem"))
    for value in [*shared.values(), *own.values()]:
        _refs(value, roots)
    return Part(
        paths=tuple(paths),
        parameters=tuple(_fragment(n, shared[n], "Parameter") for n in sorted(shared)),
        roots=frozenset(roots - own.keys()),
        definitions=tuple(_fragment(n, own[n], "Schema") for n in sorted(own)),
    )


def builtin_part(v3_document: Mapping[str, Any]) -> Part:
    """A built-in group-version's piece, from its v3 document."""
    return _part(v3_document.get("paths") or {}, {})


def custom_part(v3_document: Mapping[str, Any]) -> Part:
    """A custom resource group-version's piece: its paths, and the definitions of its kinds (those
    its v3 document holds that are not built-in)."""
    components = (v3_document.get("components") or {}).get("schemas") or {}
    own = {
        name: custom_definition(schema)
        for name, schema in components.items()
        if name not in schemas.definitions() and name not in _SCALARS_V2
    }
    return _part(v3_document.get("paths") or {}, own)


@dataclass(frozen=True)
class Document:
    """A joined document: its JSON, its protobuf, the hash of the JSON and when it was made."""

    json: bytes
    proto: bytes
    etag: str
    last_modified: datetime


def _object(fragments: Iterable[Fragment]) -> bytes:
    return b"{" + b",".join(f.json for f in fragments) + b"}"


def _repeated(number: int, fragments: Iterable[Fragment]) -> bytes:
    return b"".join(gnostic.length_delimited(number, f.proto) for f in fragments)


class _Cache:
    """What is shared by every cluster of the process: definitions, parts, joined documents."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.definitions: dict[str, tuple[Fragment, frozenset[str]] | None] = {}
        self.builtin: dict[tuple[str, Any], Part] = {}
        self.custom: OrderedDict[tuple[str, str], Part] = OrderedDict()
        self.documents: OrderedDict[tuple[Any, ...], Document] = OrderedDict()

    def definition(self, name: str) -> tuple[Fragment, frozenset[str]] | None:
        if name not in self.definitions:
            found = definition(name)
            entry = None if found is None else (_fragment(name, found[0], "Schema"), found[1])
            with self.lock:
                self.definitions.setdefault(name, entry)
        return self.definitions[name]

    def closure(self, roots: Iterable[str]) -> list[Fragment]:
        """The built-in definitions ``roots`` need, transitively."""
        done: dict[str, Fragment] = {}
        pending = list(roots)
        while pending:
            name = pending.pop()
            if name in done:
                continue
            entry = self.definition(name)
            if entry is not None:
                done[name] = entry[0]
                pending.extend(r for r in entry[1] if r not in done)
        return list(done.values())

    def builtin_part(self, types: ResourceRegistry, gv_path: str) -> tuple[tuple[str, Any], Part] | None:
        key = (gv_path, openapi.fingerprint(types, gv_path))
        part = self.builtin.get(key)
        if part is None:
            v3 = openapi.document(types, gv_path.split("/"))
            if v3 is None:
                return None
            part = builtin_part(v3)
            with self.lock:
                part = self.builtin.setdefault(key, part)
        return key, part

    def custom_part(self, gv_path: str, etag: str, v3_body: bytes) -> Part:
        key = (gv_path, etag)
        with self.lock:
            part = self.custom.get(key)
            if part is not None:
                self.custom.move_to_end(key)
                return part
        part = custom_part(json.loads(v3_body))
        with self.lock:
            self.custom[key] = part
            while len(self.custom) > CUSTOM_PARTS_KEPT:
                self.custom.popitem(last=False)
        return part

    def document(self, key: tuple[Any, ...], parts: list[Part]) -> Document:
        with self.lock:
            found = self.documents.get(key)
            if found is not None:
                self.documents.move_to_end(key)
                return found
        built = join(parts, self.closure)
        with self.lock:
            self.documents[key] = built
            while len(self.documents) > DOCUMENTS_KEPT:
                self.documents.popitem(last=False)
        return built


_cache = _Cache()


def join(parts: list[Part], closure: Callable[[Iterable[str]], list[Fragment]] | None = None) -> Document:
    """The whole document from its group-versions' pieces, in upstream's order (keys sorted)."""
    own = {f.name: f for part in parts for f in part.definitions}
    roots: set[str] = set().union(*(part.roots for part in parts)) if parts else set()
    builtin = (closure or _cache.closure)(roots - own.keys())
    definitions = sorted([*builtin, *own.values()], key=lambda f: f.name)
    parameters = sorted({f.name: f for part in parts for f in part.parameters}.values(), key=lambda f: f.name)
    paths = sorted((f for part in parts for f in part.paths), key=lambda f: f.name)
    document_json = b"".join(
        (
            b'{"definitions":', _object(definitions),
            b',"info":', _dumps(_INFO),
            b',"parameters":', _object(parameters),
            b',"paths":', _object(paths),
            b',"security":', _dumps(_SECURITY),
            b',"securityDefinitions":', _dumps(_SECURITY_DEFINITIONS),
            b',"swagger":', _dumps(SWAGGER_VERSION),
            b"}",
        )
    )  # fmt: skip
    proto = b"".join(
        (
            gnostic.encode("Document", {"swagger": SWAGGER_VERSION, "info": _INFO}),
            gnostic.length_delimited(8, _repeated(2, paths)),  # Paths.path
            gnostic.length_delimited(9, _repeated(1, definitions)),  # Definitions.additional_properties
            gnostic.length_delimited(10, _repeated(1, parameters)),  # ParameterDefinitions
            gnostic.encode("Document", {"security": _SECURITY, "securityDefinitions": _SECURITY_DEFINITIONS}),
        )
    )
    now = datetime.now(UTC).replace(microsecond=0)
    return Document(document_json, proto, openapi.compute_etag(document_json), now)


# -- serving ----------------------------------------------------------------------------------------


class CustomDocuments(Protocol):
    """The custom resources' v3 documents: ``CustomResourceDefinitions`` (:mod:`..apiextensions`)."""

    def openapi_index(self, index: dict[str, Any]) -> dict[str, Any]: ...

    def openapi_reply(self, parts: list[str], accept_hash: str | None) -> openapi.Reply | None: ...


def document(types: ResourceRegistry, custom: CustomDocuments | None = None) -> Document:
    """The cluster's v2 document: its built-in group-versions' pieces and its custom resources'."""
    custom_hashes: dict[str, str] = {}
    if custom is not None:
        for gv_path, entry in custom.openapi_index({"paths": {}}).get("paths", {}).items():
            custom_hashes[gv_path] = str(entry.get("serverRelativeURL", "")).rpartition("hash=")[2]
    keys: list[tuple[Any, ...]] = []
    parts: list[Part] = []
    for gv_path in sorted(openapi.served_group_versions(types)):
        if gv_path in custom_hashes and custom is not None:
            reply = custom.openapi_reply(gv_path.split("/"), None)
            if reply is None or reply.status != 200:
                continue
            etag = custom_hashes[gv_path] or openapi.compute_etag(reply.body)
            keys.append(("custom", gv_path, etag))
            parts.append(_cache.custom_part(gv_path, etag, reply.body))
        else:
            found = _cache.builtin_part(types, gv_path)
            if found is not None:
                keys.append(("builtin", *found[0]))
                parts.append(found[1])
    return _cache.document(tuple(keys), parts)


def _negotiate(accept: str) -> str | None:
    """The media type to answer with, as kube-openapi's handler picks it: goautoneg sorts the
    clauses (q, then specificity), and the first that matches JSON or protobuf wins."""
    clauses: list[tuple[float, bool, bool, str, str]] = []
    for raw in (accept or "*/*").split(","):
        media, *params = (p.strip() for p in raw.split(";"))
        kind, _, subtype = media.partition("/")
        if not subtype:
            if kind != "*":
                continue
            subtype = "*"
        q = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        clauses.append((-q, kind == "*", subtype == "*", kind, subtype))
    offered = (
        ("application", "json", JSON_MEDIA_TYPE),
        *(("application", m.partition("/")[2], gnostic.MEDIA_TYPE) for m in gnostic.MEDIA_TYPES_ACCEPTED),
    )
    for *_, kind, subtype in sorted(clauses, key=lambda c: c[:3]):
        for offer_kind, offer_subtype, answer in offered:
            if kind in (offer_kind, "*") and subtype in (offer_subtype, "*"):
                return answer
    return None


def _not_modified(request: Request, built: Document) -> bool:
    """``http.ServeContent``'s preconditions: If-None-Match, else If-Modified-Since."""
    if_none_match = request.headers.get("if-none-match")
    if if_none_match is not None:
        tags = [t.strip().removeprefix("W/") for t in if_none_match.split(",")]
        return "*" in tags or f'"{built.etag}"' in tags
    since = request.headers.get("if-modified-since")
    if since:
        try:
            return built.last_modified <= parsedate_to_datetime(since)
        except (TypeError, ValueError):
            return False
    return False


def serve(types: ResourceRegistry, custom: CustomDocuments | None, request: Request) -> openapi.Reply:
    """Answer ``GET /openapi/v2`` as kube-openapi's ``OpenAPIService`` does."""
    answer = _negotiate(request.headers.get("accept", ""))
    if answer is None:
        return openapi.Reply(406, b"", {"Vary": "Accept"}, content_type="text/plain; charset=utf-8")
    built = document(types, custom)
    headers = {
        "Vary": "Accept",
        "Etag": f'"{built.etag}"',  # the JSON's hash, for the protobuf too (the Vary tells them apart)
        "Last-Modified": format_datetime(built.last_modified, usegmt=True),
    }
    if _not_modified(request, built):
        del headers["Last-Modified"]
        return openapi.Reply(304, b"", headers, content_type=answer)
    body = built.json if answer == JSON_MEDIA_TYPE else built.proto
    return openapi.Reply(200, body, headers, content_type=answer)


__all__ = [
    "CustomDocuments",
    "Document",
    "Fragment",
    "Part",
    "builtin_part",
    "convert_schema",
    "custom_definition",
    "custom_part",
    "definition",
    "document",
    "join",
    "operation",
    "path_item",
    "serve",
    "shared_parameter_name",
    "structural_v2",
]
