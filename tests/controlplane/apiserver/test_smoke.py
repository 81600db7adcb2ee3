"""First light: the API server creates, reads, lists and deletes through the whole pipeline."""

from __future__ import annotations

from tests.controlplane.apiserver.conftest import API

POD = {
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
    assert deleted.status_code == 202  # pods are deleted gracefully
    assert deleted.json()["metadata"]["deletionTimestamp"]
