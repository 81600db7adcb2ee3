"""``pods/<name>/eviction`` (``kubectl drain``): a delete that a disruption budget could refuse.

Without a PodDisruptionBudget (``test_eviction_budgets.py`` has them), an eviction of an existing pod
deletes it, honouring the Eviction's ``deleteOptions``, and answers upstream's ``Status Success`` with
201. The requests go over HTTP to the API server's ASGI application (the ``api`` fixture), as
kubectl's would.
"""

from __future__ import annotations

from typing import Any

from controlplane.api.meta import Object
from tests.controlplane.apiserver.conftest import API

PODS = "/api/v1/namespaces/default/pods"


def eviction(name: str, **delete_options: Any) -> Object:
    body: Object = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}}
    if delete_options:
        body["deleteOptions"] = delete_options
    return body


async def make_pod(api: API, name: str = "web") -> Object:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"nodeName": "node-1", "containers": [{"name": "app", "image": "nginx"}]},
    }
    response = await api.client.post(PODS, json=pod)
    assert response.status_code == 201, response.text
    created: Object = response.json()
    return created


async def test_an_eviction_deletes_the_pod_gracefully_and_answers_success(api: API) -> None:
    await make_pod(api)

    response = await api.client.post(f"{PODS}/web/eviction", json=eviction("web"))

    assert response.status_code == 201
    assert response.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "code": 201,
    }
    pod = (await api.client.get(f"{PODS}/web")).json()
    assert pod["metadata"]["deletionTimestamp"]  # marked: the kubelet stops it, then removes it
    assert pod["metadata"]["deletionGracePeriodSeconds"] == 30


async def test_the_delete_options_are_honoured(api: API) -> None:
    await make_pod(api)
    response = await api.client.post(f"{PODS}/web/eviction", json=eviction("web", gracePeriodSeconds=0))
    assert response.status_code == 201
    assert (await api.client.get(f"{PODS}/web")).status_code == 404  # grace 0: gone at once

    pod = await make_pod(api, "other")
    wrong_uid = eviction("other", preconditions={"uid": "not-" + pod["metadata"]["uid"]})
    conflict = await api.client.post(f"{PODS}/other/eviction", json=wrong_uid)
    assert conflict.status_code == 409
    assert conflict.json()["reason"] == "Conflict"
    # The pod's DisruptionTarget condition is written first, checked against the preconditions.
    uid = pod["metadata"]["uid"]
    assert conflict.json()["message"] == (
        f'Operation cannot be fulfilled on Pod "other": the UID in the precondition (not-{uid}) does not '
        f"match the UID in record ({uid}). The object might have been deleted and then recreated"
    )

    dry = await api.client.post(f"{PODS}/other/eviction?dryRun=All", json=eviction("other"))
    assert dry.status_code == 201
    assert "deletionTimestamp" not in (await api.client.get(f"{PODS}/other")).json()["metadata"]


async def test_evicting_a_missing_pod_is_not_found(api: API) -> None:
    response = await api.client.post(f"{PODS}/nope/eviction", json=eviction("nope"))
    assert response.status_code == 404
    status = response.json()
    assert status["reason"] == "NotFound"
    assert status["message"] == 'pods "nope" not found'


async def test_bad_evictions_are_bad_requests_never_server_errors(api: API) -> None:
    await make_pod(api)
    mismatch = await api.client.post(f"{PODS}/web/eviction", json=eviction("other"))
    assert mismatch.status_code == 400
    assert mismatch.json()["message"] == "name in URL does not match name in Eviction object"

    for body in (
        [1, 2],
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"}},
        eviction("web", gracePeriodSeconds="soon"),
        {**eviction("web"), "metadata": {"name": "web", "namespace": "elsewhere"}},
    ):
        response = await api.client.post(f"{PODS}/web/eviction", json=body)
        assert response.status_code == 400, (body, response.text)
        assert response.json()["reason"] == "BadRequest"
    broken = await api.client.post(
        f"{PODS}/web/eviction", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert broken.status_code == 400
    assert "deletionTimestamp" not in (await api.client.get(f"{PODS}/web")).json()["metadata"]
