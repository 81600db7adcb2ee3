"""The pipeline reports every stage of every request on the trace, in upstream's order."""

from __future__ import annotations

from controlplane.apiserver.pipeline import STAGES
from tests.controlplane.apiserver.conftest import API

CMS = "/api/v1/namespaces/default/configmaps"


def stages_of(api: API, request_id: str) -> list[tuple[str, str]]:
    return [(e["stage"], e["outcome"]) for e in api.trace.of_type("request.stage") if e["id"] == request_id]


async def test_a_create_passes_every_stage_in_order_and_names_its_revision(api: API) -> None:
    response = await api.client.post(CMS, json={"kind": "ConfigMap", "metadata": {"name": "traced"}})
    assert response.status_code == 201
    request_id = response.headers["audit-id"]
    assert stages_of(api, request_id) == [(stage, "pass") for stage in STAGES]
    (write,) = [e for e in api.trace.of_type("store.txn") if e.get("op") == "txn" and e["id"] == request_id]
    assert write["revision"] == int(response.json()["metadata"]["resourceVersion"])
    assert (write["from"], write["to"]) == ("apiserver", "etcd")
    (done,) = [e for e in api.trace.of_type("request.completed") if e["id"] == request_id]
    assert done["code"] == 201 and done["from"] == "user:admin" and done["to"] == "apiserver"
    assert done["revision"] == write["revision"]


async def test_a_request_is_received_from_its_user_before_its_first_stage(api: API) -> None:
    response = await api.client.get(CMS + "/missing")
    assert response.status_code == 404
    request_id = response.headers["audit-id"]
    steps = [e for e in api.trace.events if e.get("id") == request_id and e["type"].startswith("request.")]
    assert [e["type"] for e in steps[:2]] == ["request.received", "request.stage"]
    received = steps[0]
    assert received["from"] == "user:admin" and received["to"] == "apiserver"
    assert (received["user"], received["verb"], received["resource"]) == ("admin", "get", "configmaps")
    assert (received["namespace"], received["name"], received["method"]) == ("default", "missing", "GET")
    assert "subresource" not in received
    assert steps[1]["stage"] == "authentication"
    (done,) = [e for e in steps if e["type"] == "request.completed"]
    assert done["code"] == 404 and "revision" not in done  # a read writes nothing


async def test_a_request_refused_by_authentication_is_received_from_anonymous(api: API) -> None:
    response = await api.client.get(CMS, headers={"Authorization": "Bearer wrong"})
    assert response.status_code == 401
    request_id = response.headers["audit-id"]
    steps = [e for e in api.trace.events if e.get("id") == request_id]
    assert [e["type"] for e in steps] == ["request.received", "request.stage", "request.completed"]
    assert steps[0]["from"] == "user:anonymous" and "user" not in steps[0]
    assert steps[0]["verb"] == "list" and steps[0]["resource"] == "configmaps"
    assert (steps[1]["stage"], steps[1]["outcome"]) == ("authentication", "deny")


async def test_a_clients_audit_id_names_its_request(api: API) -> None:
    response = await api.client.post(
        CMS, json={"kind": "ConfigMap", "metadata": {"name": "chosen"}}, headers={"Audit-ID": "my-id-1"}
    )
    assert response.status_code == 201
    assert response.headers["audit-id"] == "my-id-1"
    assert next(e["type"] for e in api.trace.events if e.get("id") == "my-id-1") == "request.received"
    assert [e for e in api.trace.of_type("store.txn") if e["id"] == "my-id-1" and e.get("writes")]


async def test_an_invalid_object_stops_at_validation(api: API) -> None:
    response = await api.client.post(CMS, json={"kind": "ConfigMap", "metadata": {"name": "Not_Valid"}})
    assert response.status_code == 422
    stages = stages_of(api, response.headers["audit-id"])
    assert stages[-1] == ("validation", "deny")
    assert ("storage", "pass") not in stages


async def test_a_request_without_credentials_stops_at_authentication(api: API) -> None:
    response = await api.client.get(CMS, headers={"Authorization": ""})
    assert response.status_code == 401
    assert stages_of(api, response.headers["audit-id"]) == [("authentication", "deny")]


async def test_an_admin_impersonating_a_user_is_authorized_as_that_user(api: API) -> None:
    response = await api.client.get(CMS, headers={"Impersonate-User": "bob"})
    assert response.status_code == 403
    assert 'User "bob" cannot list resource "configmaps"' in response.json()["message"]
    stages = stages_of(api, response.headers["audit-id"])
    assert ("impersonation", "pass") in stages and stages[-1] == ("authorization", "deny")


def test_components_appear_as_their_diagram_nodes() -> None:
    from controlplane.apiserver.server import diagram_node
    from controlplane.components.identities import component_identity

    assert diagram_node("system:kube-scheduler") == "scheduler"
    assert diagram_node("system:kube-controller-manager") == "controller-manager"
    assert diagram_node("system:node:worker-1") == "kubelet:worker-1"
    assert diagram_node("alice") == "user:alice"
    # kube-proxies share a user; Kubelab's put their node in the User-Agent.
    agent = component_identity("kube-proxy", "worker-2").user_agent
    assert agent == "kube-proxy/v1.37.0-kubelab (node/worker-2)"
    assert diagram_node("system:kube-proxy", agent) == "kube-proxy:worker-2"
    assert diagram_node("system:kube-proxy", "curl/8.0") == "kube-proxy"
