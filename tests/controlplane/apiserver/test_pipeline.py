"""The pipeline reports every stage of every request on the trace, in upstream's order."""

from __future__ import annotations

from typing import Any

from controlplane.apiserver.pipeline import STAGES
from controlplane.trace.schema import validate
from tests.controlplane.apiserver.conftest import API

CMS = "/api/v1/namespaces/default/configmaps"
IDENTITY = ("user", "verb", "resource", "subresource", "namespace", "name")


def stages_of(api: API, request_id: str) -> list[tuple[str, str]]:
    return [(e["stage"], e["outcome"]) for e in api.trace.of_type("request.stage") if e["id"] == request_id]


def storage_of(api: API, request_id: str) -> dict[str, Any]:
    """The storage stage's event of one request, checked against the schema."""
    (stored,) = [
        e for e in api.trace.of_type("request.stage") if e["id"] == request_id and e["stage"] == "storage"
    ]
    assert validate(stored, envelope=False, strict=True) == []
    return stored


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
    stored = storage_of(api, request_id)
    assert (stored["key"], stored["revision"], stored["op"]) == (
        "/registry/configmaps/default/traced",
        write["revision"],
        "create",
    )
    assert stored["detail"] == f"created /registry/configmaps/default/traced at revision {write['revision']}"


async def test_every_event_of_a_request_says_what_the_request_is_about(api: API) -> None:
    response = await api.client.put(
        CMS + "/named",
        json={"kind": "ConfigMap", "metadata": {"name": "named"}, "data": {"a": "1"}},
    )
    assert response.status_code == 404  # a PUT of a missing ConfigMap does not create it
    request_id = response.headers["audit-id"]
    steps = [e for e in api.trace.events if e.get("id") == request_id and e["type"].startswith("request.")]
    received, *rest = steps
    identity = {name: received[name] for name in IDENTITY if name in received}
    assert identity == {
        "user": "admin",
        "verb": "update",
        "resource": "configmaps",
        "namespace": "default",
        "name": "named",
    }
    assert [e["type"] for e in rest][-1] == "request.completed" and len(rest) > 2
    for event in rest:
        assert {name: event[name] for name in IDENTITY if name in event} == identity, event
        assert validate(event, envelope=False, strict=True) == []


async def test_updates_and_deletes_report_their_writes(api: API) -> None:
    created = await api.client.post(CMS, json={"kind": "ConfigMap", "metadata": {"name": "gone"}})
    assert created.status_code == 201
    updated = await api.client.patch(
        CMS + "/gone",
        json={"data": {"a": "1"}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert updated.status_code == 200
    stored = storage_of(api, updated.headers["audit-id"])
    revision = int(updated.json()["metadata"]["resourceVersion"])
    assert (stored["op"], stored["key"], stored["revision"]) == (
        "update",
        "/registry/configmaps/default/gone",
        revision,
    )
    deleted = await api.client.delete(CMS + "/gone")
    assert deleted.status_code == 200
    stored = storage_of(api, deleted.headers["audit-id"])
    (done,) = [e for e in api.trace.of_type("request.completed") if e["id"] == deleted.headers["audit-id"]]
    assert (stored["op"], stored["key"], stored["revision"]) == (
        "delete",
        "/registry/configmaps/default/gone",
        done["revision"],
    )
    assert stored["detail"] == f"deleted /registry/configmaps/default/gone at revision {done['revision']}"


async def test_a_delete_held_by_a_finalizer_marks_first_and_deletes_with_the_last_finalizer(api: API) -> None:
    held = {"kind": "ConfigMap", "metadata": {"name": "held", "finalizers": ["example.com/hold"]}}
    assert (await api.client.post(CMS, json=held)).status_code == 201
    marked = await api.client.delete(CMS + "/held")
    # 200 with the marked object, as upstream answers (202 only with orphanDependents=false)
    assert marked.status_code == 200 and marked.json()["metadata"]["deletionTimestamp"]
    stored = storage_of(api, marked.headers["audit-id"])
    revision = int(marked.json()["metadata"]["resourceVersion"])
    assert (stored["op"], stored["revision"]) == ("terminate", revision)
    assert stored["detail"] == f"marked /registry/configmaps/default/held Terminating at revision {revision}"
    released = await api.client.patch(
        CMS + "/held",
        json={"metadata": {"finalizers": None}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert released.status_code == 200
    stored = storage_of(api, released.headers["audit-id"])
    assert stored["op"] == "delete" and stored["detail"].startswith(
        "deleted /registry/configmaps/default/held"
    )
    assert (await api.client.get(CMS + "/held")).status_code == 404


async def test_deleting_a_namespace_marks_it_terminating(api: API) -> None:
    namespaces = "/api/v1/namespaces"
    assert (
        await api.client.post(namespaces, json={"kind": "Namespace", "metadata": {"name": "doomed"}})
    ).status_code == 201
    marked = await api.client.delete(namespaces + "/doomed")
    assert marked.status_code == 200  # upstream: 200 while it terminates
    stored = storage_of(api, marked.headers["audit-id"])
    assert (stored["op"], stored["key"]) == ("terminate", "/registry/namespaces/doomed")
    assert stored["revision"] == int(marked.json()["metadata"]["resourceVersion"])
    # upstream's RequestInfo names a namespace's own requests as in that namespace
    assert (stored["resource"], stored["namespace"], stored["name"]) == ("namespaces", "doomed", "doomed")


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


async def test_a_request_is_received_with_its_query_and_a_request_without_one_without(api: API) -> None:
    params = {"watch": "1", "resourceVersion": "0", "labelSelector": "app in (a,b)", "timeoutSeconds": "0"}
    watched = await api.client.get(CMS, params=params)
    assert watched.status_code == 200
    (received,) = [e for e in api.trace.of_type("request.received") if e["id"] == watched.headers["audit-id"]]
    assert received["path"] == CMS and received["verb"] == "watch"
    assert received["query"] == {
        "watch": "1",
        "resourceVersion": "0",
        "labelSelector": "app in (a,b)",
        "timeoutSeconds": "0",
    }
    assert validate(received, envelope=False, strict=True) == []

    dry = await api.client.post(
        CMS + "?dryRun=All&dryRun=All&fieldManager=me",
        json={"kind": "ConfigMap", "metadata": {"name": "dry"}},
    )
    assert dry.status_code == 201
    (received,) = [e for e in api.trace.of_type("request.received") if e["id"] == dry.headers["audit-id"]]
    assert received["query"] == {"dryRun": ["All", "All"], "fieldManager": "me"}  # repeated: a list

    plain = await api.client.get(CMS)
    (received,) = [e for e in api.trace.of_type("request.received") if e["id"] == plain.headers["audit-id"]]
    assert "query" not in received


async def test_an_error_answer_completes_with_its_status_reason(api: API) -> None:
    def completed(response: Any) -> dict[str, Any]:
        (done,) = [
            e for e in api.trace.of_type("request.completed") if e["id"] == response.headers["audit-id"]
        ]
        assert validate(done, envelope=False, strict=True) == []
        return done

    created = await api.client.post(CMS, json={"kind": "ConfigMap", "metadata": {"name": "twice"}})
    assert created.status_code == 201 and "reason" not in completed(created)  # success: no reason
    again = await api.client.post(CMS, json={"kind": "ConfigMap", "metadata": {"name": "twice"}})
    assert again.status_code == 409 and again.json()["reason"] == "AlreadyExists"
    stale = dict(created.json(), data={"a": "1"})
    stale["metadata"]["resourceVersion"] = "1"
    conflict = await api.client.put(CMS + "/twice", json=stale)
    assert conflict.status_code == 409 and conflict.json()["reason"] == "Conflict"
    # Two 409s, told apart by their Status reason, as a client tells them apart.
    assert (completed(again)["code"], completed(again)["reason"]) == (409, "AlreadyExists")
    assert (completed(conflict)["code"], completed(conflict)["reason"]) == (409, "Conflict")
    invalid = await api.client.post(CMS, json={"kind": "ConfigMap", "metadata": {"name": "Not_Valid"}})
    assert (invalid.status_code, completed(invalid)["reason"]) == (422, "Invalid")
    refused = await api.client.get(CMS, headers={"Authorization": "Bearer wrong"})
    assert (refused.status_code, completed(refused)["reason"]) == (401, "Unauthorized")


def test_a_plain_text_answer_carries_no_status_reason() -> None:
    from controlplane.apiserver import errors
    from controlplane.apiserver.server import _status_reason

    # flow control's 429 is Go's http.Error (server/filters/maxinflight.go): text, no Status
    too_many = errors.PlainTextError(429, "TooManyRequests", "Too many requests, please try again later.")
    assert _status_reason(too_many) is None
    assert _status_reason(errors.StatusError(403, "", "denied by the webhook")) is None  # omitempty
    assert _status_reason(errors.StatusError(409, "Conflict", "the object has been modified")) == "Conflict"


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


async def test_only_a_cascading_delete_asking_orphan_dependents_false_is_accepted_with_202(api: API) -> None:
    """Upstream's handlers/delete.go: 202 for a deletion not yet done with orphanDependents=false."""
    held = {"kind": "ConfigMap", "metadata": {"name": "held-202", "finalizers": ["example.com/hold"]}}
    assert (await api.client.post(CMS, json=held)).status_code == 201
    marked = await api.client.request(
        "DELETE",
        CMS + "/held-202",
        json={"kind": "DeleteOptions", "apiVersion": "v1", "orphanDependents": False},
    )
    assert marked.status_code == 202, marked.text
    assert marked.json()["metadata"]["deletionTimestamp"]
