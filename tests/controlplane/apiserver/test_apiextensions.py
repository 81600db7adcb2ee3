"""The API server's CustomResourceDefinition controllers, in-process: names, Established, serving,
conflicts, and the cleanup that waits for custom objects with finalizers of their own."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from typing import Any

from tests.controlplane.apiserver.conftest import API
from tests.support.apiserver import admin_api

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
PREFIX = "/registry/apiextensions.k8s.io/customresourcedefinitions/"
Check = Callable[[dict[str, Any] | None], bool]


def definition(plural: str = "widgets", kind: str = "Widget", group: str = "example.com") -> dict[str, Any]:
    size = {"type": "object", "properties": {"size": {"type": "integer"}}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": plural, "kind": kind},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": size}}},
                }
            ],
        },
    }


async def until(api: API, name: str, check: Check, *, key: str = "", url: str = "") -> dict[str, Any] | None:
    """The definition ``name`` (or the object at ``key``, read from ``url``) once ``check`` holds for it
    (None: gone), woken by the store's watch of its key (httpx's ASGI transport buffers whole
    responses, so no API watch here)."""
    watch = await api.store.watch(key or PREFIX + name, from_revision=1)
    try:
        async with asyncio.timeout(10):
            async for _ in watch:
                response = await api.client.get(url or f"{CRDS}/{name}")
                obj = response.json() if response.status_code == 200 else None
                if check(obj):
                    return obj
    finally:
        await watch.close()
    raise AssertionError(f"{name}: the watch ended")


def has(condition: str) -> Check:
    def check(obj: dict[str, Any] | None) -> bool:
        found = (obj or {}).get("status", {}).get("conditions") or ()
        return any(c["type"] == condition for c in found)

    return check


async def test_a_definition_is_established_and_served(api: API) -> None:
    assert (await api.client.post(CRDS, json=definition())).status_code == 201
    crd = await until(api, "widgets.example.com", has("Established"))
    assert crd is not None
    assert crd["status"]["acceptedNames"]["plural"] == "widgets"
    assert crd["metadata"]["finalizers"] == ["customresourcecleanup.apiextensions.k8s.io"]
    widgets = "/apis/example.com/v1/namespaces/default/widgets"
    made = await api.client.post(
        widgets, json={"kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 2}}
    )
    assert made.status_code == 201, made.text
    assert made.json()["apiVersion"] == "example.com/v1"
    listed = (await api.client.get(widgets)).json()
    assert listed["kind"] == "WidgetList"
    assert [i["metadata"]["name"] for i in listed["items"]] == ["w"]
    group = (await api.client.get("/apis/example.com")).json()
    assert group["preferredVersion"]["groupVersion"] == "example.com/v1"
    bad = await api.client.post(
        widgets, json={"kind": "Widget", "metadata": {"name": "x"}, "spec": {"size": "big"}}
    )
    assert bad.status_code == 422
    assert bad.json()["message"] == (
        'Widget.example.com "x" is invalid: spec.size: Invalid value: "string": '
        'spec.size in body must be of type integer: "string"'
    )


async def test_a_kind_already_used_in_the_group_is_not_accepted(api: API) -> None:
    await api.client.post(CRDS, json=definition())
    await until(api, "widgets.example.com", has("Established"))
    await api.client.post(CRDS, json=definition(plural="gadgets", kind="Widget"))
    crd = await until(api, "gadgets.example.com", has("NamesAccepted"))
    assert crd is not None
    found = {c["type"]: c for c in crd["status"]["conditions"]}
    assert (found["NamesAccepted"]["status"], found["NamesAccepted"]["reason"]) == ("False", "NameConflict")
    assert found["Established"]["status"] == "False"
    assert (await api.client.get("/apis/example.com/v1/gadgets")).status_code == 404


async def test_deletion_waits_for_objects_with_finalizers(api: API) -> None:
    await api.client.post(CRDS, json=definition())
    await until(api, "widgets.example.com", has("Established"))
    widgets = "/apis/example.com/v1/namespaces/default/widgets"
    held = {"kind": "Widget", "metadata": {"name": "held", "finalizers": ["example.com/hold"]}}
    assert (await api.client.post(widgets, json=held)).status_code == 201
    assert (await api.client.delete(f"{CRDS}/widgets.example.com")).status_code == 200
    crd = await until(api, "widgets.example.com", has("Terminating"))
    assert crd is not None and crd["metadata"]["deletionTimestamp"]
    marked = await until(
        api,
        "held",
        lambda obj: bool(obj and obj["metadata"].get("deletionTimestamp")),  # deleted, held by its finalizer
        key="/registry/example.com/widgets/default/held",
        url=f"{widgets}/held",
    )
    assert marked is not None
    assert (await api.client.get(f"{CRDS}/widgets.example.com")).status_code == 200
    released = copy.deepcopy(marked)
    released["metadata"]["finalizers"] = []
    assert (await api.client.put(f"{widgets}/held", json=released)).status_code == 200
    assert await until(api, "widgets.example.com", lambda obj: obj is None) is None
    assert (await api.client.get("/apis/example.com/v1/widgets")).status_code == 404


async def test_the_openapi_document_follows_the_definition(api: API) -> None:
    await api.client.post(CRDS, json=definition())
    crd = await until(api, "widgets.example.com", has("Established"))
    assert crd is not None
    index = (await api.client.get("/openapi/v3")).json()["paths"]
    url = index["apis/example.com/v1"]["serverRelativeURL"]
    assert "apis/apps/v1" in index
    document = (await api.client.get(url)).json()
    widget = document["components"]["schemas"]["com.example.v1.Widget"]
    assert widget["x-kubernetes-group-version-kind"] == [
        {"group": "example.com", "kind": "Widget", "version": "v1"}
    ]
    assert widget["properties"]["spec"]["properties"] == {"size": {"type": "integer"}}
    assert "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" in document["components"]["schemas"]
    patch = document["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]["patch"]
    assert "fieldValidation" in [p["name"] for p in patch["parameters"]]

    changed = copy.deepcopy(crd)
    changed["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"][
        "color"
    ] = {"type": "string"}
    changed["spec"]["names"]["shortNames"] = ["wd"]
    assert (await api.client.put(f"{CRDS}/widgets.example.com", json=changed)).status_code == 200
    # The controller writes the new accepted names after serving the new schema.
    await until(
        api, "widgets.example.com", lambda obj: bool(obj and obj["status"]["acceptedNames"].get("shortNames"))
    )
    again = (await api.client.get("/openapi/v3")).json()["paths"]["apis/example.com/v1"]["serverRelativeURL"]
    assert again != url


async def test_a_restarted_server_serves_the_stored_definitions(api: API) -> None:
    await api.client.post(CRDS, json=definition())
    await until(api, "widgets.example.com", has("Established"))
    widgets = "/apis/example.com/v1/namespaces/default/widgets"
    assert (
        await api.client.post(widgets, json={"kind": "Widget", "metadata": {"name": "kept"}})
    ).status_code == 201
    async with admin_api(api.store) as (_, client):  # a second server over the same store, as after a restart
        listed = (await client.get(widgets)).json()
        assert [i["metadata"]["name"] for i in listed["items"]] == ["kept"]


async def test_a_versions_selectable_fields_filter_lists_and_other_fields_are_not_supported(api: API) -> None:
    """``selectableFields`` (GA in 1.32): a field selector on them filters the list, from the store
    and from the watch cache; any other field is ``field label not supported`` (crConverter)."""
    crd = definition()
    crd["spec"]["versions"][0]["selectableFields"] = [{"jsonPath": ".spec.size"}]
    assert (await api.client.post(CRDS, json=crd)).status_code == 201
    assert await until(api, "widgets.example.com", has("Established")) is not None
    widgets = "/apis/example.com/v1/namespaces/default/widgets"
    for name, size in (("small", 1), ("large", 3), ("other-large", 3)):
        body = {"kind": "Widget", "metadata": {"name": name}, "spec": {"size": size}}
        assert (await api.client.post(widgets, json=body)).status_code == 201
    for params in (
        {"fieldSelector": "spec.size=3"},
        {"fieldSelector": "spec.size=3", "resourceVersion": "0"},
    ):
        listed = (await api.client.get(widgets, params=params)).json()
        assert sorted(i["metadata"]["name"] for i in listed["items"]) == ["large", "other-large"], params
    refused = await api.client.get(widgets, params={"fieldSelector": "spec.color=red"})
    assert refused.status_code == 400
    assert refused.json()["message"] == "field label not supported: spec.color"
