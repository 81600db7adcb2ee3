"""First light: the API server creates, reads, lists and deletes through the whole pipeline."""

from __future__ import annotations

from typing import Any

from tests.controlplane.apiserver.conftest import API

POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web", "labels": {"app": "web"}},
    "spec": {"containers": [{"name": "web", "image": "nginx"}]},
}


async def test_create_get_list_delete_a_pod(api: API) -> None:
    created = await api.client.post("/api/v1/namespaces/default/pods", json=POD)
    assert created.status_code == 201, created.text
    body = created.json()
    assert body["metadata"]["namespace"] == "default"
    assert body["metadata"]["uid"]
    rv = body["metadata"]["resourceVersion"]
    got = await api.client.get("/api/v1/namespaces/default/pods/web")
    assert got.status_code == 200, got.text
    assert got.json()["metadata"]["resourceVersion"] == rv
    listed = await api.client.get("/api/v1/namespaces/default/pods")
    assert [p["metadata"]["name"] for p in listed.json()["items"]] == ["web"]
    again = await api.client.post("/api/v1/namespaces/default/pods", json=POD)
    assert again.status_code == 409
    assert again.json()["reason"] == "AlreadyExists"
    deleted = await api.client.delete("/api/v1/namespaces/default/pods/web")
    # No kubelet runs an unscheduled pod: it goes at once (upstream's CheckGracefulDelete).
    assert deleted.status_code == 200, deleted.text
    assert (await api.client.get("/api/v1/namespaces/default/pods/web")).status_code == 404


async def test_a_scheduled_pod_is_deleted_gracefully_and_a_finished_one_at_once(api: API) -> None:
    scheduled = {**POD, "spec": {**POD["spec"], "nodeName": "node-1"}}
    assert (await api.client.post("/api/v1/namespaces/default/pods", json=scheduled)).status_code == 201
    deleted = await api.client.delete("/api/v1/namespaces/default/pods/web")
    assert deleted.status_code == 200  # marked, with a grace period for the kubelet: upstream's 200
    assert deleted.json()["metadata"]["deletionTimestamp"]
    assert deleted.json()["metadata"]["deletionGracePeriodSeconds"] == 30
    forced = await api.client.delete("/api/v1/namespaces/default/pods/web?gracePeriodSeconds=0")
    assert forced.status_code == 200
    assert (await api.client.get("/api/v1/namespaces/default/pods/web")).status_code == 404

    assert (await api.client.post("/api/v1/namespaces/default/pods", json=scheduled)).status_code == 201
    finished = await api.client.patch(
        "/api/v1/namespaces/default/pods/web/status",
        json={"status": {"phase": "Succeeded"}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert finished.status_code == 200, finished.text
    deleted = await api.client.delete("/api/v1/namespaces/default/pods/web")
    assert deleted.status_code == 200, "a finished pod has nothing left to stop"
