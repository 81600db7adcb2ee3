"""Subresource bodies (Scale, Binding, Eviction) are decoded as upstream decodes them: bad ones are 400s."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.controlplane.apiserver.conftest import API

PODS = "/api/v1/namespaces/default/pods"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"


def deployment() -> dict[str, Any]:
    template = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}}, "template": template},
    }


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
    assert (await api.client.get(f"{DEPLOYMENTS}/web")).json()["spec"]["replicas"] == 1


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
