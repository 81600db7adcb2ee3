"""Subresources against upstream: a scale patch races other writers as any patch does, and Scale,
Binding and Eviction bodies are decoded as upstream decodes them (bad ones are 400s, changing nothing)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from controlplane.store import KeyValue
from tests.controlplane.apiserver.conftest import API

PODS = "/api/v1/namespaces/default/pods"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
MERGE = {"Content-Type": "application/merge-patch+json"}


def deployment(name: str = "web") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]},
            },
        },
    }


async def test_a_scale_patch_that_races_a_status_write_is_retried_not_a_conflict(
    api: API, monkeypatch: pytest.MonkeyPatch
) -> None:
    # kubectl patch --subresource=scale / kubectl scale send no resourceVersion: upstream applies
    # the patch inside GuaranteedUpdate, so a controller's status write in between is retried.
    assert (await api.client.post(DEPLOYMENTS, json=deployment())).status_code == 201
    get = api.store.get
    raced: list[int] = []

    async def get_then_race(key: str, **kwargs: Any) -> KeyValue | None:
        kv = await get(key, **kwargs)
        if key.endswith("/web") and not raced:  # the first read the patch makes is stale at once
            raced.append(1)
            status = await api.client.patch(
                f"{DEPLOYMENTS}/web/status",
                content=json.dumps({"status": {"observedGeneration": 1}}),
                headers=MERGE,
            )
            assert status.status_code == 200
        return kv

    monkeypatch.setattr(api.store, "get", get_then_race)
    scaled = await api.client.patch(
        f"{DEPLOYMENTS}/web/scale", content=json.dumps({"spec": {"replicas": 5}}), headers=MERGE
    )
    assert raced, "the patch never read the deployment"
    assert scaled.status_code == 200, scaled.json()
    assert scaled.json()["spec"]["replicas"] == 5
    stored = (await api.client.get(f"{DEPLOYMENTS}/web")).json()
    assert stored["spec"]["replicas"] == 5
    assert stored["status"]["observedGeneration"] == 1


async def test_a_scale_patch_with_a_stale_resource_version_is_a_conflict(api: API) -> None:
    created = (await api.client.post(DEPLOYMENTS, json=deployment())).json()
    stale = created["metadata"]["resourceVersion"]
    bumped = await api.client.patch(
        f"{DEPLOYMENTS}/web", content=json.dumps({"metadata": {"labels": {"x": "y"}}}), headers=MERGE
    )
    assert bumped.status_code == 200
    patch = {"metadata": {"resourceVersion": stale}, "spec": {"replicas": 5}}
    refused = await api.client.patch(f"{DEPLOYMENTS}/web/scale", content=json.dumps(patch), headers=MERGE)
    assert refused.status_code == 409
    assert refused.json()["reason"] == "Conflict"
    assert (await api.client.get(f"{DEPLOYMENTS}/web")).json()["spec"]["replicas"] == 2


async def test_a_scale_patch_to_negative_replicas_is_invalid(api: API) -> None:
    assert (await api.client.post(DEPLOYMENTS, json=deployment())).status_code == 201
    refused = await api.client.patch(
        f"{DEPLOYMENTS}/web/scale", content=json.dumps({"spec": {"replicas": -1}}), headers=MERGE
    )
    assert refused.status_code == 422
    assert refused.json()["reason"] == "Invalid"


@pytest.mark.parametrize(
    ("scale", "message"),
    [
        (
            {"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": {"name": "web"}, "spec": 5},
            'Scale in version "v1" cannot be handled as a Scale: json: cannot unmarshal number '
            "into Go struct field Scale.spec of type v1.ScaleSpec",
        ),
        (
            {"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": "web", "spec": {"replicas": 2}},
            'Scale in version "v1" cannot be handled as a Scale: json: cannot unmarshal string '
            "into Go struct field Scale.metadata of type v1.ObjectMeta",
        ),
        (
            [],
            'Scale in version "v1" cannot be handled as a Scale: json: cannot unmarshal array '
            "into Go value of type v1.Scale",
        ),
    ],
)
async def test_a_scale_that_does_not_decode_is_a_bad_request_and_changes_nothing(
    api: API, scale: Any, message: str
) -> None:
    created = await api.client.post(DEPLOYMENTS, json=deployment())
    assert created.status_code == 201, created.text
    response = await api.client.put(f"{DEPLOYMENTS}/web/scale", json=scale)
    assert response.status_code == 400, response.text
    assert response.json()["message"] == message
    after = await api.client.get(f"{DEPLOYMENTS}/web")
    assert after.json()["metadata"]["resourceVersion"] == created.json()["metadata"]["resourceVersion"]


async def test_a_scale_patch_that_does_not_decode_is_an_invalid_patch(api: API) -> None:
    assert (await api.client.post(DEPLOYMENTS, json=deployment())).status_code == 201
    response = await api.client.patch(
        f"{DEPLOYMENTS}/web/scale",
        content=json.dumps({"spec": {"replicas": "many"}}),
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert response.status_code == 422, response.text
    assert response.json()["details"]["causes"][0]["field"] == "patch"
    assert "ScaleSpec.spec.replicas of type int32" in response.json()["message"]
    assert (await api.client.get(f"{DEPLOYMENTS}/web")).json()["spec"]["replicas"] == 2


@pytest.mark.parametrize(
    ("target", "fragment"),
    [
        ("node-1", "cannot unmarshal string into Go struct field Binding.target of type v1.ObjectReference"),
        ({"name": 5}, "cannot unmarshal number into Go struct field ObjectReference.target.name of type"),
    ],
)
async def test_a_binding_that_does_not_decode_assigns_nothing(api: API, target: Any, fragment: str) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}
    pod["spec"] = {"containers": [{"name": "c", "image": "i"}]}
    assert (await api.client.post(PODS, json=pod)).status_code == 201
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"}, "target": target}
    response = await api.client.post(f"{PODS}/p/binding", json=binding)
    assert response.status_code == 400, response.text
    assert response.json()["message"].startswith('Binding in version "v1" cannot be handled as a Binding: ')
    assert fragment in response.json()["message"]
    assert "nodeName" not in (await api.client.get(f"{PODS}/p")).json()["spec"]


async def test_an_eviction_that_does_not_decode_deletes_nothing(api: API) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}
    pod["spec"] = {"containers": [{"name": "c", "image": "i"}]}
    assert (await api.client.post(PODS, json=pod)).status_code == 201
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "p"}}
    eviction["deleteOptions"] = {"gracePeriodSeconds": "now"}
    response = await api.client.post(f"{PODS}/p/eviction", json=eviction)
    assert response.status_code == 400, response.text
    assert "DeleteOptions.deleteOptions.gracePeriodSeconds of type int64" in response.json()["message"]
    assert (await api.client.get(f"{PODS}/p")).status_code == 200


async def test_a_scales_selector_is_the_whole_label_selector_and_zero_is_written_as_go_writes_it(
    api: API,
) -> None:
    """``scaleFromDeployment``: ``status.selector`` is ``LabelSelectorAsSelector(...).String()``,
    expressions included; ``spec.replicas`` is omitempty, ``status.replicas`` is not."""
    body = deployment()
    body["spec"]["selector"]["matchExpressions"] = [{"key": "tier", "operator": "In", "values": ["b", "a"]}]
    body["spec"]["template"]["metadata"]["labels"]["tier"] = "a"
    body["spec"]["replicas"] = 0
    assert (await api.client.post(DEPLOYMENTS, json=body)).status_code == 201
    scale = (await api.client.get(f"{DEPLOYMENTS}/web/scale")).json()
    assert scale["spec"] == {}
    assert scale["status"] == {"replicas": 0, "selector": "app=web,tier in (a,b)"}


async def test_a_scale_put_without_replicas_asks_for_zero(api: API) -> None:
    """``ScaleSpec.replicas`` is omitempty: client-go's ``UpdateScale`` to 0 sends ``"spec": {}``."""
    assert (await api.client.post(DEPLOYMENTS, json=deployment())).status_code == 201
    scale = (await api.client.get(f"{DEPLOYMENTS}/web/scale")).json()
    assert scale["spec"] == {"replicas": 2}
    answer = await api.client.put(f"{DEPLOYMENTS}/web/scale", json={**scale, "spec": {}})
    assert answer.status_code == 200, answer.text
    assert (await api.client.get(f"{DEPLOYMENTS}/web")).json()["spec"]["replicas"] == 0
