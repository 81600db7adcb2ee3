"""The scale subresource against upstream: a patch races other writers as any patch does."""

from __future__ import annotations

import json
from typing import Any

import pytest

from controlplane.store import KeyValue
from tests.controlplane.apiserver.conftest import API

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
