"""``/openapi/v3``: the index, the group-version documents, and what kubectl looks for in them."""

from __future__ import annotations

import hashlib
from typing import Any

from tests.controlplane.apiserver.conftest import API

DEPLOYMENT_ITEM = "/apis/apps/v1/namespaces/{namespace}/deployments/{name}"


async def _index(api: API) -> dict[str, Any]:
    response = await api.client.get("/openapi/v3")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    body: dict[str, Any] = response.json()
    return body


async def _document(api: API, gv: str) -> dict[str, Any]:
    url = (await _index(api))["paths"][gv]["serverRelativeURL"]
    response = await api.client.get(url)
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


def _supports_query_param(document: dict[str, Any], gvk: dict[str, str], param: str) -> bool:
    """cli-runtime ``supportsQueryParamV3``, as kubectl runs it before ``apply --validate=strict``."""
    for path in document["paths"].values():
        op = path.get("patch")
        if op is None or op.get("x-kubernetes-group-version-kind") != gvk:
            continue
        return any(p.get("name") == param for p in op.get("parameters", []))
    return False


async def test_the_index_lists_every_served_group_version_relative_to_the_server(api: API) -> None:
    paths = (await _index(api))["paths"]
    assert {"api/v1", "apis/apps/v1", "apis/rbac.authorization.k8s.io/v1"} <= paths.keys()
    url = paths["apis/apps/v1"]["serverRelativeURL"]
    # kubectl keeps its own server prefix (/clusters/<name>) for URLs rooted at /openapi/v3.
    assert url.startswith("/openapi/v3/apis/apps/v1?hash=")


async def test_the_hash_is_the_sha512_of_the_document(api: API) -> None:
    url = (await _index(api))["paths"]["apis/apps/v1"]["serverRelativeURL"]
    response = await api.client.get(url)
    assert url.endswith("hash=" + hashlib.sha512(response.content).hexdigest().upper())
    assert response.headers["etag"] == '"' + hashlib.sha512(response.content).hexdigest().upper() + '"'
    assert response.headers["cache-control"] == "public, immutable"
    assert response.headers["expires"].endswith(" GMT")
    assert response.headers["vary"] == "Accept"
    again = await api.client.get(url)
    assert again.content == response.content  # cached: the same bytes


async def test_a_stale_hash_redirects_and_no_hash_is_not_cached_forever(api: API) -> None:
    url = (await _index(api))["paths"]["apis/apps/v1"]["serverRelativeURL"]
    current = url.split("hash=")[1]
    stale = await api.client.get("/openapi/v3/apis/apps/v1?hash=0000")
    assert stale.status_code == 301
    assert stale.headers["location"] == f"v1?hash={current}"  # relative: stays under the mount
    plain = await api.client.get("/openapi/v3/apis/apps/v1")
    assert plain.status_code == 200
    assert "cache-control" not in plain.headers
    unchanged = await api.client.get("/openapi/v3/apis/apps/v1", headers={"If-None-Match": f'"{current}"'})
    assert unchanged.status_code == 304


async def test_unknown_group_versions_and_protobuf_only_clients(api: API) -> None:
    missing = await api.client.get("/openapi/v3/apis/example.com/v1")
    assert missing.status_code == 404
    assert missing.json()["reason"] == "NotFound"
    protobuf = await api.client.get(
        "/openapi/v3/apis/apps/v1",
        headers={"Accept": "application/com.github.proto-openapi.spec.v3.v1.0+protobuf"},
    )
    assert protobuf.status_code == 406


async def test_patch_operations_advertise_field_validation_for_every_kind(api: API) -> None:
    for gv in ("api/v1", "apis/apps/v1", "apis/coordination.k8s.io/v1", "apis/rbac.authorization.k8s.io/v1"):
        document = await _document(api, gv)
        group, _, version = gv.removeprefix("apis/").removeprefix("api/").rpartition("/")
        kinds = {
            op["x-kubernetes-group-version-kind"]["kind"]
            for path in document["paths"].values()
            for op in [path.get("patch")]
            if op is not None and op["x-kubernetes-group-version-kind"]["group"] == group
        }
        assert kinds, gv
        for kind in kinds:
            gvk = {"group": group, "kind": kind, "version": version}
            assert _supports_query_param(document, gvk, "fieldValidation"), (gv, kind)


async def test_the_deployment_endpoints_look_like_upstreams(api: API) -> None:
    document = await _document(api, "apis/apps/v1")
    assert document["openapi"] == "3.0.0"
    item = document["paths"][DEPLOYMENT_ITEM]
    assert set(item) == {"get", "put", "patch", "delete", "parameters"}
    patch = item["patch"]
    assert patch["operationId"] == "patchAppsV1NamespacedDeployment"
    assert patch["x-kubernetes-action"] == "patch"
    assert patch["x-kubernetes-group-version-kind"] == {
        "group": "apps",
        "kind": "Deployment",
        "version": "v1",
    }
    assert [p["name"] for p in patch["parameters"]] == ["dryRun", "fieldManager", "fieldValidation", "force"]
    assert set(patch["requestBody"]["content"]) == {
        "application/apply-patch+yaml",
        "application/json-patch+json",
        "application/merge-patch+json",
        "application/strategic-merge-patch+json",
    }
    # kubectl explain finds the kind through the GET operation of the item path.
    assert item["get"]["x-kubernetes-group-version-kind"]["kind"] == "Deployment"
    scale = document["paths"][DEPLOYMENT_ITEM + "/scale"]["patch"]
    assert scale["x-kubernetes-group-version-kind"] == {
        "group": "autoscaling",
        "kind": "Scale",
        "version": "v1",
    }
    assert "/apis/apps/v1/deployments" in document["paths"]  # list for all namespaces
    assert "/apis/apps/v1/watch/namespaces/{namespace}/deployments" in document["paths"]


async def test_component_schemas_are_upstreams_rewritten_and_closed(api: API) -> None:
    document = await _document(api, "apis/apps/v1")
    schemas = document["components"]["schemas"]
    deployment = schemas["io.k8s.api.apps.v1.Deployment"]
    assert deployment["x-kubernetes-group-version-kind"] == [
        {"group": "apps", "kind": "Deployment", "version": "v1"}
    ]
    assert deployment["description"] == "Deployment enables declarative updates for Pods and ReplicaSets."
    assert deployment["properties"]["spec"] == {
        "allOf": [{"$ref": "#/components/schemas/io.k8s.api.apps.v1.DeploymentSpec"}],
        "description": "Specification of the desired behavior of the Deployment.",
    }
    assert deployment["properties"]["apiVersion"]["type"] == "string"
    assert "enum" not in deployment["properties"]["apiVersion"]
    containers = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-list-map-keys"] == ["name"]
    assert containers["items"] == {"$ref": "#/components/schemas/io.k8s.api.core.v1.Container"}
    int_or_string = schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]
    assert int_or_string["oneOf"] == [{"type": "integer"}, {"type": "string"}] and "type" not in int_or_string
    # Every reference resolves inside the document, and only what apps/v1 needs is there.
    refs = _refs(document)
    assert refs and all(r.startswith("#/components/schemas/") for r in refs)
    assert {r.removeprefix("#/components/schemas/") for r in refs} <= schemas.keys()
    assert "io.k8s.api.core.v1.Service" not in schemas
    assert "io.k8s.api.rbac.v1.Role" not in schemas


async def test_core_v1_holds_pods_and_their_subresources(api: API) -> None:
    document = await _document(api, "api/v1")
    paths = document["paths"]
    assert "/api/v1/namespaces/{namespace}/pods/{name}/status" in paths
    assert (
        paths["/api/v1/namespaces/{namespace}/pods/{name}/binding"]["post"][
            "x-kubernetes-group-version-kind"
        ]["kind"]
        == "Binding"
    )
    assert paths["/api/v1/namespaces/{name}"]["get"]["operationId"] == "readCoreV1Namespace"
    assert (
        document["components"]["schemas"]["io.k8s.api.core.v1.Pod"]["properties"]["kind"]["type"] == "string"
    )
