"""Access and rules reviews answer from RBAC; a refusal is explained on the trace as ``rbac.decision``."""

from __future__ import annotations

from typing import Any

from controlplane.identity import AUTHENTICATED, UserInfo
from controlplane.trace.schema import SCHEMA_VERSION, validate
from tests.controlplane.apiserver.authz.conftest import Lab, user_subject

AUTHZ = "/apis/authorization.k8s.io/v1"
STUDENT = UserInfo.create("student:ada", groups=[AUTHENTICATED])


def review(kind: str, spec: dict[str, Any], **metadata: Any) -> dict[str, Any]:
    return {"apiVersion": "authorization.k8s.io/v1", "kind": kind, "metadata": metadata, "spec": spec}


async def test_a_self_review_answers_for_the_asker(lab: Lab) -> None:
    await lab.bind("ada-edit", "edit", user_subject(STUDENT.username), namespace="team")
    student = lab.as_(STUDENT)
    ask = {"resourceAttributes": {"verb": "create", "resource": "pods", "namespace": "team"}}
    yes = await student.post(f"{AUTHZ}/selfsubjectaccessreviews", json=review("SelfSubjectAccessReview", ask))
    assert yes.status_code == 201
    assert yes.json()["status"] == {
        "allowed": True,
        "reason": 'RBAC: allowed by RoleBinding "ada-edit/team" of ClusterRole "edit" to User "student:ada"',
    }
    ask["resourceAttributes"]["namespace"] = "default"
    no = await student.post(f"{AUTHZ}/selfsubjectaccessreviews", json=review("SelfSubjectAccessReview", ask))
    assert no.json()["status"] == {"allowed": False}
    # asking about others needs the right to create SubjectAccessReviews
    other = review("SubjectAccessReview", {"user": "bob", **ask})
    refused = await student.post(f"{AUTHZ}/subjectaccessreviews", json=other)
    assert refused.status_code == 403


async def test_bad_access_reviews_are_invalid_never_a_crash(lab: Lab) -> None:
    admin = lab.as_()
    neither = await admin.post(
        f"{AUTHZ}/subjectaccessreviews", json=review("SubjectAccessReview", {"user": "x"})
    )
    assert neither.status_code == 422
    assert (
        "exactly one of nonResourceAttributes or resourceAttributes must be specified"
        in neither.json()["message"]
    )
    nobody = await admin.post(
        f"{AUTHZ}/subjectaccessreviews",
        json=review("SubjectAccessReview", {"resourceAttributes": {"verb": "get", "resource": "pods"}}),
    )
    assert nobody.status_code == 422
    assert "at least one of user or group must be specified" in nobody.json()["message"]
    local = await admin.post(
        f"{AUTHZ}/namespaces/team/localsubjectaccessreviews",
        json=review(
            "LocalSubjectAccessReview",
            {"user": "x", "resourceAttributes": {"verb": "get", "resource": "pods", "namespace": "other"}},
        ),
    )
    assert local.status_code == 422
    assert "must match metadata.namespace" in local.json()["message"]
    garbage = await admin.post(
        f"{AUTHZ}/subjectaccessreviews",
        json=review(
            "SubjectAccessReview", {"groups": "devs", "nonResourceAttributes": {"path": "/", "verb": "get"}}
        ),
    )
    assert garbage.status_code == 400
    not_an_object = await admin.post(
        f"{AUTHZ}/subjectaccessreviews",
        json=review("SubjectAccessReview", {"user": "x", "resourceAttributes": ["get", "pods"]}),
    )
    assert not_an_object.status_code == 400


async def test_a_local_review_asks_within_its_namespace(lab: Lab) -> None:
    await lab.bind("bob-view", "view", user_subject("bob"), namespace="team")
    spec = {"user": "bob", "resourceAttributes": {"verb": "list", "resource": "pods", "namespace": "team"}}
    response = await lab.as_().post(
        f"{AUTHZ}/namespaces/team/localsubjectaccessreviews", json=review("LocalSubjectAccessReview", spec)
    )
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["metadata"]["namespace"] == "team" and body["status"]["allowed"] is True


async def test_a_rules_review_lists_what_the_user_may_do_here(lab: Lab) -> None:
    await lab.bind("ada-view", "view", user_subject(STUDENT.username), namespace="team")
    response = await lab.as_(STUDENT).post(
        f"{AUTHZ}/selfsubjectrulesreviews", json=review("SelfSubjectRulesReview", {"namespace": "team"})
    )
    assert response.status_code == 201, response.text
    status = response.json()["status"]
    assert status["incomplete"] is False and "evaluationError" not in status
    assert {
        "verbs": ["create"],
        "apiGroups": ["authorization.k8s.io"],
        "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
    } in status["resourceRules"]
    assert any("pods" in r["resources"] and "list" in r["verbs"] for r in status["resourceRules"])
    assert {
        "verbs": ["get"],
        "nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"],
    } in (status["nonResourceRules"])
    missing = await lab.as_(STUDENT).post(
        f"{AUTHZ}/selfsubjectrulesreviews", json=review("SelfSubjectRulesReview", {})
    )
    assert missing.status_code == 400


async def test_a_refusal_is_explained_on_the_trace(lab: Lab) -> None:
    await lab.bind("ada-view", "view", user_subject(STUDENT.username), namespace="team")
    response = await lab.as_(STUDENT).delete("/api/v1/namespaces/team/pods/web")
    assert response.status_code == 403
    message = (
        'pods "web" is forbidden: User "student:ada" cannot delete resource "pods" in API group "" in the '
        'namespace "team"'
    )
    assert response.json()["message"] == message
    (decision,) = [e for e in lab.trace.of_type("rbac.decision") if e["id"] == response.headers["audit-id"]]
    assert validate(dict(decision, v=SCHEMA_VERSION, cluster="test", seq=1, ts=0.0), strict=True) == []
    assert decision["allowed"] is False and decision["message"] == message
    assert (decision["user"], decision["verb"], decision["resource"], decision["name"]) == (
        "student:ada",
        "delete",
        "pods",
        "web",
    )
    considered = {c["binding"]: c for c in decision["considered"]}
    assert considered['RoleBinding "ada-view/team"']["role"] == 'ClusterRole "view"'
    assert 'do not include "delete"' in considered['RoleBinding "ada-view/team"']["why"]
    assert 'ClusterRoleBinding "system:basic-user"' in considered
    stage = [e for e in lab.trace.of_type("request.stage") if e["id"] == response.headers["audit-id"]][-1]
    assert (stage["stage"], stage["outcome"]) == ("authorization", "deny")
    assert "no RBAC rule lets student:ada delete pods" in stage["detail"]


async def test_an_allowed_request_names_its_binding_role_and_rule_on_the_trace(lab: Lab) -> None:
    response = await lab.as_().get("/api/v1/namespaces/default/configmaps")
    assert response.status_code == 200
    (decision,) = [e for e in lab.trace.of_type("rbac.decision") if e["id"] == response.headers["audit-id"]]
    assert validate(dict(decision, v=SCHEMA_VERSION, cluster="test", seq=1, ts=0.0), strict=True) == []
    assert decision["allowed"] is True and decision["authorizer"] == "RBAC"
    assert (decision["binding"], decision["role"]) == (
        'ClusterRoleBinding "cluster-admin"',
        'ClusterRole "cluster-admin"',
    )
    assert decision["rule"] == {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}
