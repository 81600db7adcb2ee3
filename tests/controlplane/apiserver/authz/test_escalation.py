"""Escalation prevention: a user cannot grant permissions it does not hold (unless escalate/bind)."""

from __future__ import annotations

import asyncio
from typing import Any

from controlplane.apiserver.authz.escalation import compact, compact_string, covers
from controlplane.identity import AUTHENTICATED, UserInfo
from tests.controlplane.apiserver.authz.conftest import RBAC, Lab, user_subject

STUDENT = UserInfo.create("student:ada", groups=[AUTHENTICATED])


def role(name: str, rules: list[dict[str, Any]], namespace: str = "") -> dict[str, Any]:
    kind = "Role" if namespace else "ClusterRole"
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name},
        "rules": rules,
    }


def binding_to(name: str, role_name: str, subject: str, *, kind: str = "ClusterRole") -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role_name},
        "subjects": [user_subject(subject)],
    }


def test_covers_breaks_rules_down_and_reports_what_is_missing() -> None:
    owner = [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods", "*/status"]}]
    assert covers(owner, [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods", "pods/status"]}])[0]
    held, missing = covers(
        owner, [{"verbs": ["get", "delete", "update"], "apiGroups": [""], "resources": ["pods"]}]
    )
    assert not held
    assert [compact_string(r) for r in compact(missing)] == [
        '{APIGroups:[""], Resources:["pods"], Verbs:["delete" "update"]}'
    ]
    # resourceNames: an owner limited to names does not cover the whole resource
    named = [{"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["a"]}]
    assert not covers(named, [{"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"]}])[0]
    assert covers(
        named, [{"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["a"]}]
    )[0]
    urls = [{"verbs": ["get"], "nonResourceURLs": ["/apis/*"]}]
    assert covers(urls, [{"verbs": ["get"], "nonResourceURLs": ["/apis/apps"]}])[0]
    assert not covers(urls, [{"verbs": ["get"], "nonResourceURLs": ["/api"]}])[0]


async def test_a_student_cannot_grant_themselves_cluster_admin(lab: Lab) -> None:
    # The student may manage ClusterRoleBindings (a tempting right to give), but holds little else.
    await lab.create(
        f"{RBAC}/clusterroles",
        role(
            "binding-manager",
            [
                {
                    "verbs": ["create", "get"],
                    "apiGroups": ["rbac.authorization.k8s.io"],
                    "resources": ["clusterrolebindings"],
                }
            ],
        ),
    )
    await lab.create(
        f"{RBAC}/clusterrolebindings", binding_to("ada-binds", "binding-manager", STUDENT.username)
    )
    student = lab.as_(STUDENT)
    response = await student.post(
        f"{RBAC}/clusterrolebindings", json=binding_to("ada-root", "cluster-admin", STUDENT.username)
    )
    assert response.status_code == 403, response.text
    status = response.json()
    assert status["reason"] == "Forbidden"
    assert status["details"] == {
        "name": "ada-root",
        "group": "rbac.authorization.k8s.io",
        "kind": "clusterrolebindings",
    }
    assert status["message"] == (
        'clusterrolebindings.rbac.authorization.k8s.io "ada-root" is forbidden: user "student:ada" '
        '(groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:\n'
        '{APIGroups:["*"], Resources:["*"], Verbs:["*"]}\n'
        '{NonResourceURLs:["*"], Verbs:["*"]}'
    )
    missing = await lab.as_().get(f"{RBAC}/clusterrolebindings/ada-root")
    assert missing.status_code == 404
    # Binding a role whose permissions the student holds is fine.
    held = await student.post(
        f"{RBAC}/clusterrolebindings", json=binding_to("ada-basic", "system:basic-user", "bob")
    )
    assert held.status_code == 201, held.text


async def test_bind_and_escalate_verbs_lift_the_check(lab: Lab) -> None:
    await lab.create(
        f"{RBAC}/clusterroles",
        role(
            "role-manager",
            [
                {
                    "verbs": ["create", "update", "get"],
                    "apiGroups": ["rbac.authorization.k8s.io"],
                    "resources": ["clusterroles", "clusterrolebindings"],
                },
                {
                    "verbs": ["bind"],
                    "apiGroups": ["rbac.authorization.k8s.io"],
                    "resources": ["clusterroles"],
                    "resourceNames": ["view"],
                },
            ],
        ),
    )
    await lab.create(
        f"{RBAC}/clusterrolebindings", binding_to("ada-manages", "role-manager", STUDENT.username)
    )
    student = lab.as_(STUDENT)
    allowed = await student.post(f"{RBAC}/clusterrolebindings", json=binding_to("bob-views", "view", "bob"))
    assert allowed.status_code == 201, allowed.text
    powerful = role("pod-killer", [{"verbs": ["delete"], "apiGroups": [""], "resources": ["pods"]}])
    refused = await student.post(f"{RBAC}/clusterroles", json=powerful)
    assert refused.status_code == 403
    assert (
        "is attempting to grant RBAC permissions not currently held:\n"
        '{APIGroups:[""], Resources:["pods"], Verbs:["delete"]}' in refused.json()["message"]
    )
    await lab.create(
        f"{RBAC}/clusterroles",
        role(
            "escalator",
            [
                {
                    "verbs": ["escalate"],
                    "apiGroups": ["rbac.authorization.k8s.io"],
                    "resources": ["clusterroles"],
                }
            ],
        ),
    )
    await lab.create(
        f"{RBAC}/clusterrolebindings", binding_to("ada-escalates", "escalator", STUDENT.username)
    )
    escalated = await student.post(f"{RBAC}/clusterroles", json=powerful)
    assert escalated.status_code == 201, escalated.text


async def test_an_aggregation_rule_needs_full_authority(lab: Lab) -> None:
    await lab.create(
        f"{RBAC}/clusterroles",
        role(
            "cr-writer",
            [
                {
                    "verbs": ["create"],
                    "apiGroups": ["rbac.authorization.k8s.io"],
                    "resources": ["clusterroles"],
                }
            ],
        ),
    )
    await lab.create(f"{RBAC}/clusterrolebindings", binding_to("ada-writes", "cr-writer", STUDENT.username))
    aggregating = dict(
        role("gatherer", []),
        aggregationRule={"clusterRoleSelectors": [{"matchLabels": {"anything": "true"}}]},
    )
    response = await lab.as_(STUDENT).post(f"{RBAC}/clusterroles", json=aggregating)
    assert response.status_code == 403
    assert response.json()["message"] == (
        'clusterroles.rbac.authorization.k8s.io "gatherer" is forbidden: '
        "must have cluster-admin privileges to use the aggregationRule"
    )
    # an admin may, and the role then gathers the rules of the roles it selects
    await lab.create(f"{RBAC}/clusterroles", aggregating)
    labelled = role("extra", [{"verbs": ["get"], "apiGroups": ["example.com"], "resources": ["widgets"]}])
    labelled["metadata"]["labels"] = {"anything": "true"}
    await lab.create(f"{RBAC}/clusterroles", labelled)
    admin = lab.as_()
    async with asyncio.timeout(10):
        while True:
            gathered = (await admin.get(f"{RBAC}/clusterroles/gatherer")).json()
            if gathered.get("rules"):
                break
            await lab.server.caches["/registry/clusterroles"].wait_for(
                lab.server.caches["/registry/clusterroles"].revision + 1, 1.0
            )
    assert gathered["rules"] == labelled["rules"]


async def test_a_binding_to_a_missing_role_is_forbidden_for_non_admins(lab: Lab) -> None:
    await lab.create(
        f"{RBAC}/clusterroles",
        role(
            "binder",
            [
                {
                    "verbs": ["create"],
                    "apiGroups": ["rbac.authorization.k8s.io"],
                    "resources": ["clusterrolebindings"],
                }
            ],
        ),
    )
    await lab.create(f"{RBAC}/clusterrolebindings", binding_to("ada-binder", "binder", STUDENT.username))
    response = await lab.as_(STUDENT).post(
        f"{RBAC}/clusterrolebindings", json=binding_to("x", "no-such-role", "bob")
    )
    assert response.status_code == 403
    assert response.json()["message"] == (
        'clusterrolebindings.rbac.authorization.k8s.io "x" is forbidden: '
        'clusterrole.rbac.authorization.k8s.io "no-such-role" not found'
    )


async def test_malformed_rbac_objects_from_non_admins_are_invalid_never_a_crash(lab: Lab) -> None:
    await lab.create(
        f"{RBAC}/clusterroles",
        role(
            "rbac-writer",
            [
                {
                    "verbs": ["create"],
                    "apiGroups": ["rbac.authorization.k8s.io"],
                    "resources": ["clusterroles", "clusterrolebindings"],
                }
            ],
        ),
    )
    await lab.create(f"{RBAC}/clusterrolebindings", binding_to("ada-rbac", "rbac-writer", STUDENT.username))
    student = lab.as_(STUDENT)
    bad_ref = dict(binding_to("bad", "x", "bob"), roleRef="cluster-admin")
    bad_verbs = role("bad", [{"verbs": "get", "apiGroups": [""], "resources": ["pods"]}])
    for path, body in (
        (f"{RBAC}/clusterrolebindings", bad_ref),
        (f"{RBAC}/clusterroles", bad_verbs),
    ):
        response = await student.post(path, json=body)
        assert response.status_code in (400, 422), response.text
