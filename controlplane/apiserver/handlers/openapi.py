"""OpenAPI v3: the schema documents kubectl reads for ``apply`` validation and ``explain``.

kube-apiserver publishes one OpenAPI 3.0 document per group-version, and an index of them
(kubernetes/kube-openapi ``pkg/handler3/handler.go``)::

    GET /openapi/v3
    {"paths": {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=4E1F..."},
               "apis/apps/v1": {"serverRelativeURL": "/openapi/v3/apis/apps/v1?hash=9C2A..."}}}

    GET /openapi/v3/apis/apps/v1?hash=9C2A...
    {"openapi": "3.0.0", "paths": {"/apis/apps/v1/namespaces/{namespace}/deployments/{name}": ...},
     "components": {"schemas": {"io.k8s.api.apps.v1.Deployment": ...}}}

The hash is the SHA-512 of the document (upper-case hex, ``computeETag``): a client may cache a
document forever under its hash, so a hashed request is answered with ``Cache-Control: public,
immutable`` and an ``Expires`` a year ahead, and a stale hash is redirected to the current one.

Two clients matter here:

* ``kubectl apply``/``create`` (``--validate=strict``, the default) looks in the group-version's
  document for the PATCH operation of the object's kind (``x-kubernetes-group-version-kind``) and its
  ``fieldValidation`` query parameter (cli-runtime ``pkg/resource/query_param_verifier_v3.go``). If
  it is there, kubectl sends ``?fieldValidation=Strict`` and leaves unknown fields to the server;
  if not (or for a ``kind: List``), it falls back to the single ``/openapi/v2`` document
  (:mod:`.openapi_v2`) and validates on its side.
* ``kubectl explain`` (kubectl ``pkg/explain/v2``) finds the GET operation of the resource, takes
  its kind, finds the schema with that ``x-kubernetes-group-version-kind`` in
  ``components.schemas`` and prints the descriptions, following ``$ref`` and ``allOf``.

The schemas are upstream's (:mod:`controlplane.api.schema`, from kubernetes-validate), rewritten
into OpenAPI 3.0 as kube-openapi writes them: references point into ``#/components/schemas/``, a
reference with a description beside it is wrapped in ``allOf``, ``"type": ["string", "null"]``
becomes ``"type": "string"``. Each document holds only the schemas its operations need,
transitively. Documents are built once per process and kept as bytes: ``core/v1`` is large.

Deviation: kubectl joins a ``serverRelativeURL`` under ``/openapi/v3`` with its own server URL, so
the index works unchanged at ``/clusters/<name>/``; a redirect for a stale hash, however, is sent as
a URL relative to the request (``v1?hash=...``), since upstream's absolute ``/openapi/v3/...`` would
leave the cluster's mount.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any, Final

from controlplane.api import schema as schemas
from controlplane.api.resources import ResourceRegistry, ResourceType, Subresource
from controlplane.apiserver import errors
from controlplane.apiserver.http import Request, dumps

OPENAPI_VERSION: Final = "3.0.0"
_REF: Final = "#/components/schemas/"
_META: Final = "io.k8s.apimachinery.pkg.apis.meta.v1."
STATUS: Final = _META + "Status"
DELETE_OPTIONS: Final = _META + "DeleteOptions"
PATCH: Final = _META + "Patch"
WATCH_EVENT: Final = _META + "WatchEvent"
API_RESOURCE_LIST: Final = _META + "APIResourceList"

#: Definitions kubernetes-validate strips of their description: written as kube-openapi writes them
#: for OpenAPI v3 (``OpenAPIV3OneOfTypes``: a ``oneOf`` and no ``type``, so that ``kubectl explain``
#: prints ``<IntOrString>`` and ``<Quantity>`` rather than a primitive type).
_SCALAR_OVERRIDES: Final[Mapping[str, Mapping[str, Any]]] = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {
        "description": (
            "IntOrString is a type that can hold an int32 or a string.  When used in JSON or YAML "
            "marshalling and unmarshalling, it produces or consumes the inner type.  This allows you "
            "to have, for example, a JSON field that can accept a name or number."
        ),
        "format": "int-or-string",
        "oneOf": [{"type": "integer"}, {"type": "string"}],
    },
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {
        "description": (
            "Quantity is a fixed-point representation of a number. It provides convenient "
            "marshaling/unmarshaling in JSON and YAML, in addition to String() and AsInt64() accessors."
        ),
        "oneOf": [{"type": "string"}, {"type": "number"}],
    },
}

# Parameter descriptions, as upstream's OpenAPI writes them (apiserver pkg/endpoints/installer.go
# and apimachinery's metav1 option types).
_DRY_RUN: Final = (
    "When present, indicates that modifications should not be persisted. An invalid or unrecognized "
    "dryRun directive will result in an error response and no further processing of the request. "
    "Valid values are: - All: all dry run stages will be processed"
)
_FIELD_MANAGER: Final = (
    "fieldManager is a name associated with the actor or entity that is making these changes. The "
    "value must be less than or 128 characters long, and only contain printable characters, as "
    "defined by https://golang.org/pkg/unicode/#IsPrint."
)
_FIELD_MANAGER_PATCH: Final = (
    _FIELD_MANAGER + " This field is required for apply requests (application/apply-patch) but "
    "optional for non-apply patch types (JsonPatch, MergePatch, StrategicMergePatch)."
)
_FIELD_VALIDATION: Final = (
    "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) "
    "containing unknown or duplicate fields. Valid values are: - Ignore: This will ignore any "
    "unknown fields that are silently dropped from the object, and will ignore all but the last "
    "duplicate field that the decoder encounters. This is the default behavior prior to v1.23. - "
    "Warn: This will send a warning via the standard warning response header for each unknown "
    "field that is dropped from the object, and for each duplicate field that is encountered. The "
    "request will still succeed if there are no other errors, and will only persist the last of any "
    "duplicate fields. This is the default in v1.23+ - Strict: This will fail the request with a "
    "BadRequest error if any unknown fields would be dropped from the object, or if any duplicate "
    "fields are present. The error returned from the server will contain all unknown and duplicate "
    "fields encountered."
)
_FORCE: Final = (
    'Force is going to "force" Apply requests. It means user will re-acquire conflicting fields '
    "owned by other people. Force flag must be unset for non-apply patch requests."
)
_PRETTY: Final = (
    "If 'true', then the output is pretty printed. Defaults to 'false' unless the user-agent "
    "indicates a browser or command-line HTTP tool (curl and wget)."
)
_NAMESPACE: Final = "object name and auth scope, such as for teams and projects"
_LIST_PARAMETERS: Final[tuple[tuple[str, str, str], ...]] = (
    (
        "allowWatchBookmarks",
        "boolean",
        'allowWatchBookmarks requests watch events with type "BOOKMARK". Servers that do not '
        "implement bookmarks may ignore this flag and bookmarks are sent at the server's discretion. "
        "Clients should not assume bookmarks are returned at any specific interval, nor may they "
        "assume the server will send any BOOKMARK event during a session. If this is not a watch, "
        "this field is ignored.",
    ),
    (
        "continue",
        "string",
        "The continue option should be set when retrieving more results from the server. Since this "
        "value is server defined, clients may only use the continue value from a previous query "
        "result with identical query parameters (except for the value of continue) and the server "
        "may reject a continue value it does not recognize.",
    ),
    (
        "fieldSelector",
        "string",
        "A selector to restrict the list of returned objects by their fields. Defaults to everything.",
    ),
    (
        "labelSelector",
        "string",
        "A selector to restrict the list of returned objects by their labels. Defaults to everything.",
    ),
    (
        "limit",
        "integer",
        "limit is a maximum number of responses to return for a list call. If more items exist, the "
        "server will set the `continue` field on the list metadata to a value that can be used with "
        "the same initial query to retrieve the next set of results.",
    ),
    (
        "resourceVersion",
        "string",
        "resourceVersion sets a constraint on what resource versions a request may be served from. "
        "See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for "
        "details.\n\nDefaults to unset",
    ),
    (
        "resourceVersionMatch",
        "string",
        "resourceVersionMatch determines how resourceVersion is applied to list calls. It is highly "
        "recommended that resourceVersionMatch be set for list calls where resourceVersion is set See "
        "https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for "
        "details.\n\nDefaults to unset",
    ),
    (
        "sendInitialEvents",
        "boolean",
        "`sendInitialEvents=true` may be set together with `watch=true`. In that case, the watch "
        "stream will begin with synthetic events to produce the current state of objects in the "
        'collection. Once all such events have been sent, a synthetic "Bookmark" event  will be sent.',
    ),
    (
        "timeoutSeconds",
        "integer",
        "Timeout for the list/watch call. This limits the duration of the call, regardless of any "
        "activity or inactivity.",
    ),
    (
        "watch",
        "boolean",
        "Watch for changes to the described resources and return them as a stream of add, update, "
        "and remove notifications. Specify resourceVersion.",
    ),
)
_DELETE_PARAMETERS: Final[tuple[tuple[str, str, str], ...]] = (
    ("dryRun", "string", _DRY_RUN),
    (
        "gracePeriodSeconds",
        "integer",
        "The duration in seconds before the object should be deleted. Value must be non-negative "
        "integer. The value zero indicates delete immediately. If this value is nil, the default "
        "grace period for the specified type will be used. Defaults to a per object value if not "
        "specified. zero means delete immediately.",
    ),
    (
        "orphanDependents",
        "boolean",
        "Deprecated: please use the PropagationPolicy, this field will be deprecated in 1.7. Should "
        'the dependent objects be orphaned. If true/false, the "orphan" finalizer will be '
        "added to/removed from the object's finalizers list. Either this field or PropagationPolicy "
        "may be set, but not both.",
    ),
    (
        "propagationPolicy",
        "string",
        "Whether and how garbage collection will be performed. Either this field or OrphanDependents "
        "may be set, but not both. The default policy is decided by the existing finalizer set in the "
        "metadata.finalizers and the resource-specific default policy. Acceptable values are: "
        "'Orphan' - orphan the dependents; 'Background' - allow the garbage collector to delete the "
        "dependents in the background; 'Foreground' - a cascading policy that deletes all dependents "
        "in the foreground.",
    ),
)

_JSON_TYPES: Final = ("application/json", "application/yaml", "application/vnd.kubernetes.protobuf")
_WATCH_TYPES: Final = (
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
    "application/json;stream=watch",
    "application/vnd.kubernetes.protobuf;stream=watch",
)
_PATCH_TYPES: Final = (
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
)


# -- schemas ----------------------------------------------------------------------------------------


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": _REF + name}


def convert_schema(node: Any, refs: set[str]) -> Any:
    """One schema node of kubernetes-validate's JSON Schema in kube-openapi's OpenAPI 3.0 form.

    Collects the names it references into ``refs``.
    """
    if isinstance(node, list):
        return [convert_schema(item, refs) for item in node]
    if not isinstance(node, Mapping):
        return node
    name = schemas.ref_name(node)
    out: dict[str, Any] = {}
    if name is not None:
        refs.add(name)
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        if not siblings:
            return _ref(name)
        out["allOf"] = [_ref(name)]
        node = siblings
    for key_name, value in node.items():
        if key_name == "type" and isinstance(value, list):
            kinds = [t for t in value if t != "null"]
            if kinds:
                out["type"] = kinds[0]
        elif key_name in ("properties", "patternProperties") and isinstance(value, Mapping):
            out[key_name] = {k: convert_schema(v, refs) for k, v in value.items()}
        elif key_name in ("items", "additionalProperties", "not") and isinstance(value, Mapping):
            out[key_name] = convert_schema(value, refs)
        elif key_name in ("allOf", "anyOf", "oneOf") and isinstance(value, list):
            out[key_name] = [convert_schema(v, refs) for v in value]
        else:
            out[key_name] = value
    return out


def _definition(name: str, refs: set[str]) -> dict[str, Any]:
    override = _SCALAR_OVERRIDES.get(name)
    if override is not None:
        return dict(override)
    source = schemas.definition(name)
    converted = convert_schema(source, refs)
    assert isinstance(converted, dict)
    if source.get("x-kubernetes-group-version-kind"):
        # kubernetes-validate pins apiVersion and kind with an enum; upstream's OpenAPI does not.
        properties = converted.get("properties")
        if isinstance(properties, dict):
            for key_name in ("apiVersion", "kind"):
                if isinstance(properties.get(key_name), dict):
                    properties[key_name] = {k: v for k, v in properties[key_name].items() if k != "enum"}
    return converted


def component_schemas(roots: Iterable[str]) -> dict[str, Any]:
    """The definitions ``roots`` need, transitively, converted; sorted by name like upstream's."""
    done: dict[str, Any] = {}
    pending = [r for r in roots if r in schemas.definitions() or r in _SCALAR_OVERRIDES]
    while pending:
        name = pending.pop()
        if name in done:
            continue
        refs: set[str] = set()
        done[name] = _definition(name, refs)
        pending.extend(r for r in refs if r not in done)
    return {name: done[name] for name in sorted(done)}


# -- paths ------------------------------------------------------------------------------------------


def _camel(text: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in text.replace("-", ".").split(".") if part)


def _group_id(group: str) -> str:
    """``""`` -> ``Core``, ``rbac.authorization.k8s.io`` -> ``RbacAuthorization``."""
    if not group:
        return "Core"
    return _camel(group.removesuffix(".k8s.io"))


def _tag(group: str, version: str) -> str:
    gid = _group_id(group)
    return f"{gid[:1].lower()}{gid[1:]}_{version}"


def _parameter(
    name: str, where: str, kind: str, description: str, *, required: bool = False
) -> dict[str, Any]:
    param: dict[str, Any] = {"description": description, "in": where, "name": name}
    if required:
        param["required"] = True
    param["schema"] = {"type": kind, "uniqueItems": True}
    return param


def _query(specs: Iterable[tuple[str, str, str]]) -> list[dict[str, Any]]:
    return [_parameter(name, "query", kind, description) for name, kind, description in specs]


def _write_parameters(*, patch: bool = False) -> list[dict[str, Any]]:
    params = [
        _parameter("dryRun", "query", "string", _DRY_RUN),
        _parameter("fieldManager", "query", "string", _FIELD_MANAGER_PATCH if patch else _FIELD_MANAGER),
        _parameter("fieldValidation", "query", "string", _FIELD_VALIDATION),
    ]
    if patch:
        params.append(_parameter("force", "query", "boolean", _FORCE))
    return params


def _content(name: str, media: Iterable[str] = _JSON_TYPES) -> dict[str, Any]:
    return {m: {"schema": _ref(name)} for m in media}


def _responses(name: str, *codes: str, media: Iterable[str] = _JSON_TYPES) -> dict[str, Any]:
    text = {"200": "OK", "201": "Created", "202": "Accepted"}
    out: dict[str, Any] = {
        code: {"content": _content(name, media), "description": text[code]} for code in codes
    }
    out["401"] = {"description": "Unauthorized"}
    return out


@dataclass(frozen=True)
class _Target:
    """The kind an endpoint reads and writes, and the definition that describes it."""

    group: str
    version: str
    kind: str
    definition: str

    def gvk(self) -> dict[str, str]:
        return {"group": self.group, "kind": self.kind, "version": self.version}


def _target(group: str, version: str, kind: str) -> _Target | None:
    name = schemas.definition_for_kind(group, version, kind)
    return None if name is None else _Target(group, version, kind, name)


def _operation(
    verb: str,
    action: str,
    operation_id: str,
    description: str,
    tag: str,
    target: _Target,
    *,
    parameters: list[dict[str, Any]] | None = None,
    request: dict[str, Any] | None = None,
    responses: dict[str, Any],
) -> dict[str, Any]:
    op: dict[str, Any] = {"description": description, "operationId": operation_id}
    if parameters:
        op["parameters"] = parameters
    if request is not None:
        op["requestBody"] = request
    op["responses"] = responses
    op["tags"] = [tag]
    op["x-kubernetes-action"] = action
    op["x-kubernetes-group-version-kind"] = target.gvk()
    return op


def _resource_paths(
    rtype: ResourceType, paths: dict[str, Any], roots: set[str], definition: str | None = None
) -> None:
    """The endpoints of one resource, with upstream's paths, operation ids and parameters.

    ``definition`` names the schema of a kind that has none upstream (a custom resource; its list's
    is the name with ``List``)."""
    target = _target(rtype.group, rtype.version, rtype.kind)
    if definition is not None:
        target = _Target(rtype.group, rtype.version, rtype.kind, definition)
    if target is None:
        return
    roots.add(target.definition)
    prefix = f"/apis/{rtype.group}/{rtype.version}" if rtype.group else f"/api/{rtype.version}"
    gv_id = _group_id(rtype.group) + _camel(rtype.version)
    tag = _tag(rtype.group, rtype.version)
    scope = "Namespaced" if rtype.namespaced else ""
    kind = rtype.kind
    ns = "/namespaces/{namespace}" if rtype.namespaced else ""
    ns_param = [_parameter("namespace", "path", "string", _NAMESPACE, required=True)] if ns else []
    name_param = _parameter("name", "path", "string", f"name of the {kind}", required=True)
    pretty = _parameter("pretty", "query", "string", _PRETTY)
    verbs = set(rtype.verbs)
    list_target = _target(rtype.group, rtype.version, kind + "List")
    if definition is not None:
        list_target = _Target(rtype.group, rtype.version, kind + "List", definition + "List")

    collection: dict[str, Any] = {}
    if "list" in verbs and list_target is not None:
        roots.add(list_target.definition)
        collection["get"] = _operation(
            "get", "list", f"list{gv_id}{scope}{kind}", f"list or watch objects of kind {kind}", tag, target,
            parameters=_query(_LIST_PARAMETERS),
            responses=_responses(list_target.definition, "200", media=_WATCH_TYPES),
        )  # fmt: skip
    if "create" in verbs:
        collection["post"] = _operation(
            "post", "post", f"create{gv_id}{scope}{kind}", f"create a {kind}", tag, target,
            parameters=_write_parameters(),
            request={"content": {"*/*": {"schema": _ref(target.definition)}}, "required": True},
            responses=_responses(target.definition, "200", "201", "202"),
        )  # fmt: skip
    if "deletecollection" in verbs:
        roots.update((DELETE_OPTIONS, STATUS))
        collection["delete"] = _operation(
            "delete", "deletecollection", f"deleteCollection{gv_id}{scope}{kind}",
            f"delete collection of {kind}", tag, target,
            parameters=_query(_DELETE_PARAMETERS) + _query(_LIST_PARAMETERS[1:-1]),
            request={"content": {"*/*": {"schema": _ref(DELETE_OPTIONS)}}},
            responses=_responses(STATUS, "200"),
        )  # fmt: skip
    if collection:
        collection["parameters"] = [*ns_param, pretty]
        paths[f"{prefix}{ns}/{rtype.plural}"] = collection

    item: dict[str, Any] = {}
    if "get" in verbs:
        item["get"] = _operation(
            "get", "get", f"read{gv_id}{scope}{kind}", f"read the specified {kind}", tag, target,
            responses=_responses(target.definition, "200"),
        )  # fmt: skip
    if "update" in verbs:
        item["put"] = _operation(
            "put", "put", f"replace{gv_id}{scope}{kind}", f"replace the specified {kind}", tag, target,
            parameters=_write_parameters(),
            request={"content": {"*/*": {"schema": _ref(target.definition)}}, "required": True},
            responses=_responses(target.definition, "200", "201"),
        )  # fmt: skip
    if "patch" in verbs:
        roots.add(PATCH)
        item["patch"] = _operation(
            "patch", "patch", f"patch{gv_id}{scope}{kind}", f"partially update the specified {kind}",
            tag, target,
            parameters=_write_parameters(patch=True),
            request={"content": {m: {"schema": _ref(PATCH)} for m in _PATCH_TYPES}, "required": True},
            responses=_responses(target.definition, "200", "201"),
        )  # fmt: skip
    if "delete" in verbs:
        roots.update((DELETE_OPTIONS, STATUS))
        item["delete"] = _operation(
            "delete", "delete", f"delete{gv_id}{scope}{kind}", f"delete a {kind}", tag, target,
            parameters=_query(_DELETE_PARAMETERS),
            request={"content": {"*/*": {"schema": _ref(DELETE_OPTIONS)}}},
            responses={**_responses(STATUS, "200", "202")},
        )  # fmt: skip
    if item:
        item["parameters"] = [name_param, *ns_param, pretty]
        paths[f"{prefix}{ns}/{rtype.plural}/{{name}}"] = item

    if "watch" in verbs and list_target is not None:
        roots.add(WATCH_EVENT)
        watch = {
            "get": _operation(
                "get", "watchlist", f"watch{gv_id}{scope}{kind}List",
                f"watch individual changes to a list of {kind}. deprecated: use the 'watch' parameter "
                "with a list operation instead.", tag, target,
                responses=_responses(WATCH_EVENT, "200", media=_WATCH_TYPES),
            ),
            "parameters": [*_query(_LIST_PARAMETERS), *ns_param, pretty],
        }  # fmt: skip
        paths[f"{prefix}/watch{ns}/{rtype.plural}"] = watch
    if rtype.namespaced and "list" in verbs and list_target is not None:
        paths[f"{prefix}/{rtype.plural}"] = {
            "get": _operation(
                "get", "list", f"list{gv_id}{kind}ForAllNamespaces", f"list or watch objects of kind {kind}",
                tag, target, responses=_responses(list_target.definition, "200", media=_WATCH_TYPES),
            ),
            "parameters": [*_query(_LIST_PARAMETERS), pretty],
        }  # fmt: skip

    for sub in rtype.subresources:
        _subresource_paths(rtype, sub, target, paths, roots, prefix, gv_id, tag, scope, ns, ns_param, pretty)


def _subresource_paths(
    rtype: ResourceType,
    sub: Subresource,
    parent: _Target,
    paths: dict[str, Any],
    roots: set[str],
    prefix: str,
    gv_id: str,
    tag: str,
    scope: str,
    ns: str,
    ns_param: list[dict[str, Any]],
    pretty: dict[str, Any],
) -> None:
    target = parent
    if sub.kind:
        found = _target(
            sub.group if sub.group is not None else rtype.group, sub.version or rtype.version, sub.kind
        )
        if found is None:
            return
        target = found
    roots.add(target.definition)
    kind = rtype.kind
    suffix = _camel(sub.name)
    item: dict[str, Any] = {}
    verbs = set(sub.verbs)
    if "get" in verbs:
        action = "connect" if sub.name == "log" else "get"
        item["get"] = _operation(
            "get", action, f"read{gv_id}{scope}{kind}{suffix}", f"read {sub.name} of the specified {kind}",
            tag, target, responses=_responses(target.definition, "200"),
        )  # fmt: skip
    if "update" in verbs:
        item["put"] = _operation(
            "put", "put", f"replace{gv_id}{scope}{kind}{suffix}",
            f"replace {sub.name} of the specified {kind}", tag, target, parameters=_write_parameters(),
            request={"content": {"*/*": {"schema": _ref(target.definition)}}, "required": True},
            responses=_responses(target.definition, "200", "201"),
        )  # fmt: skip
    if "patch" in verbs:
        roots.add(PATCH)
        item["patch"] = _operation(
            "patch", "patch", f"patch{gv_id}{scope}{kind}{suffix}",
            f"partially update {sub.name} of the specified {kind}", tag, target,
            parameters=_write_parameters(patch=True),
            request={"content": {m: {"schema": _ref(PATCH)} for m in _PATCH_TYPES}, "required": True},
            responses=_responses(target.definition, "200", "201"),
        )  # fmt: skip
    if "create" in verbs:
        item["post"] = _operation(
            "post", "post", f"create{gv_id}{scope}{kind}{suffix}", f"create {sub.name} of a {kind}",
            tag, target, parameters=_write_parameters(),
            request={"content": {"*/*": {"schema": _ref(target.definition)}}, "required": True},
            responses=_responses(target.definition, "200", "201", "202"),
        )  # fmt: skip
    if item:
        name_param = _parameter("name", "path", "string", f"name of the {target.kind}", required=True)
        item["parameters"] = [name_param, *ns_param, pretty]
        paths[f"{prefix}{ns}/{rtype.plural}/{{name}}/{sub.name}"] = item


def group_version_document(types: Iterable[ResourceType], group: str, version: str) -> dict[str, Any]:
    """The OpenAPI 3.0 document of one group-version: its endpoints and the schemas they need."""
    paths: dict[str, Any] = {}
    roots: set[str] = {API_RESOURCE_LIST}
    prefix = f"/apis/{group}/{version}" if group else f"/api/{version}"
    gv_id = _group_id(group) + _camel(version)
    paths[prefix + "/"] = {
        "get": {
            "description": "get available resources",
            "operationId": f"get{gv_id}APIResources",
            "responses": _responses(API_RESOURCE_LIST, "200", media=_JSON_TYPES),
            "tags": [_tag(group, version)],
        }
    }
    for rtype in types:
        if rtype.group == group and rtype.version == version:
            _resource_paths(rtype, paths, roots)
    return {
        "openapi": OPENAPI_VERSION,
        "info": {"title": "Kubernetes", "version": f"v{schemas.KUBERNETES_VERSION}"},
        "paths": {p: paths[p] for p in sorted(paths)},
        "components": {
            "schemas": component_schemas(roots),
            "securitySchemes": {
                "BearerToken": {
                    "description": "Bearer Token authentication",
                    "in": "header",
                    "name": "authorization",
                    "type": "apiKey",
                }
            },
        },
    }


# -- serving ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Built:
    body: bytes
    etag: str


@dataclass(frozen=True)
class Reply:
    """What the server sends back: status, body, headers and the body's media type."""

    status: int
    body: bytes
    headers: dict[str, str]
    content_type: str = "application/json"


class _Documents:
    """Built documents by (served resources, group-version): built once per process, kept as bytes."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.built: dict[tuple[Any, str], _Built] = {}

    def get(self, types: ResourceRegistry, gv_path: str) -> _Built | None:
        served = _served_group_versions(types)
        if gv_path not in served:
            return None
        group, version = served[gv_path]
        cache_key = (_fingerprint(types, group, version), gv_path)
        built = self.built.get(cache_key)
        if built is None:
            body = dumps(group_version_document(types, group, version))
            built = _Built(body, compute_etag(body))
            with self.lock:
                built = self.built.setdefault(cache_key, built)
        return built


_documents = _Documents()


def compute_etag(data: bytes) -> str:
    """kube-openapi ``computeETag``: the SHA-512 of the document, upper-case hex."""
    return hashlib.sha512(data).hexdigest().upper()


def _served_group_versions(types: ResourceRegistry) -> dict[str, tuple[str, str]]:
    out: dict[str, tuple[str, str]] = {}
    for group, versions in types.groups().items():
        for version in versions:
            out[f"apis/{group}/{version}" if group else f"api/{version}"] = (group, version)
    return out


def _fingerprint(types: ResourceRegistry, group: str, version: str) -> tuple[Any, ...]:
    return tuple(
        (t.plural, t.kind, t.namespaced, t.verbs, tuple((s.name, s.verbs, s.kind) for s in t.subresources))
        for t in types.in_group_version(group, version)
    )


def served_group_versions(types: ResourceRegistry) -> dict[str, tuple[str, str]]:
    """Each served group-version's document path (``api/v1``, ``apis/apps/v1``): its group and version."""
    return _served_group_versions(types)


def fingerprint(types: ResourceRegistry, gv_path: str) -> tuple[Any, ...]:
    """What a group-version's document is built from: another document's cache can key on it
    (:mod:`.openapi_v2`)."""
    group, version = _served_group_versions(types).get(gv_path, ("", ""))
    return _fingerprint(types, group, version)


def scalar_description(name: str) -> str:
    """The description of IntOrString or Quantity, which kubernetes-validate strips."""
    return str(_SCALAR_OVERRIDES[name]["description"])


def index(types: ResourceRegistry) -> dict[str, Any]:
    """``GET /openapi/v3``: each group-version's document URL, with its hash."""
    paths: dict[str, Any] = {}
    for gv_path in sorted(_served_group_versions(types)):
        built = _documents.get(types, gv_path)
        if built is not None:
            paths[gv_path] = {"serverRelativeURL": f"/openapi/v3/{gv_path}?hash={built.etag}"}
    return {"paths": paths}


def document(types: ResourceRegistry, parts: list[str]) -> dict[str, Any] | None:
    """The index (no ``parts``) or one group-version's document, as a dict; None if there is none."""
    if not parts:
        return index(types)
    built = _documents.get(types, "/".join(parts))
    return None if built is None else dict(json.loads(built.body))


def _accepts_json(accept: str) -> bool:
    if not accept:
        return True
    for clause in accept.split(","):
        media = clause.split(";", 1)[0].strip().lower()
        if media in ("application/json", "application/*", "*/*"):
            return True
    return False


def serve(types: ResourceRegistry, parts: list[str], request: Request) -> Reply:
    """Answer ``GET /openapi/v3[/<group-version>]`` as kube-openapi's handler does."""
    if not parts:
        body = dumps(index(types))
        return Reply(200, body, {"Etag": f'"{compute_etag(body)}"'})
    gv_path = "/".join(parts)
    built = _documents.get(types, gv_path)
    if built is None:
        raise errors.StatusError(404, "NotFound", "the server could not find the requested resource")
    if not _accepts_json(request.headers.get("accept", "")):
        raise errors.not_acceptable("only the following media types are accepted: application/json")
    headers = {"Etag": f'"{built.etag}"', "Vary": "Accept"}
    wanted = request.query.get("hash")
    if wanted:
        if wanted != built.etag:
            # Relative, so that it stays under the cluster's mount (/clusters/<name>/openapi/v3/...).
            return Reply(301, b"", {**headers, "Location": f"{parts[-1]}?hash={built.etag}"})
        expires = datetime.now(UTC) + timedelta(days=365)
        headers["Cache-Control"] = "public, immutable"
        headers["Expires"] = format_datetime(expires, usegmt=True)
    if request.headers.get("if-none-match", "").strip('"') == built.etag:
        return Reply(304, b"", headers)
    return Reply(200, built.body, headers)


__all__ = [
    "Reply",
    "component_schemas",
    "compute_etag",
    "convert_schema",
    "document",
    "fingerprint",
    "group_version_document",
    "index",
    "scalar_description",
    "serve",
    "served_group_versions",
]
