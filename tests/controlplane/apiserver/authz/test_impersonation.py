"""Impersonation: ``Impersonate-*`` headers, each checked with the ``impersonate`` verb."""

from __future__ import annotations

from controlplane.identity import AUTHENTICATED, UserInfo
from tests.controlplane.apiserver.authz.conftest import Lab, user_subject

WHOAMI = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
REVIEW = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
STUDENT = UserInfo.create("student:ada", groups=[AUTHENTICATED])


async def test_an_admin_acts_as_a_user_with_groups_and_extras(lab: Lab) -> None:
    response = await lab.as_().post(
        WHOAMI,
        json=REVIEW,
        headers=[
            ("Impersonate-User", "bob"),
            ("Impersonate-Group", "devs"),
            ("Impersonate-Group", "ops"),
            ("Impersonate-Uid", "u-1"),
            ("Impersonate-Extra-Reason%2Fwhy", "debugging"),
        ],
    )
    assert response.status_code == 201, response.text
    assert response.json()["status"]["userInfo"] == {
        "username": "bob",
        "uid": "u-1",
        "groups": ["devs", "ops", "system:authenticated"],
        "extra": {"reason/why": ["debugging"]},
    }


async def test_a_service_account_is_impersonated_with_its_groups(lab: Lab) -> None:
    response = await lab.as_().post(
        WHOAMI, json=REVIEW, headers={"Impersonate-User": "system:serviceaccount:team:bot"}
    )
    assert response.json()["status"]["userInfo"]["groups"] == [
        "system:serviceaccounts",
        "system:serviceaccounts:team",
        "system:authenticated",
    ]


async def test_impersonation_without_the_verb_is_refused_with_upstreams_message(lab: Lab) -> None:
    student = lab.as_(STUDENT)
    response = await student.get("/api/v1/namespaces/default/pods", headers={"Impersonate-User": "admin"})
    assert response.status_code == 403
    assert response.json()["message"] == (
        'users "admin" is forbidden: User "student:ada" cannot impersonate resource "users" in API group "" '
        "at the cluster scope"
    )
    assert response.json()["details"] == {"name": "admin", "kind": "users"}
    stages = [
        (e["stage"], e["outcome"])
        for e in lab.trace.of_type("request.stage")
        if e["id"] == response.headers["audit-id"]
    ]
    assert stages[-1] == ("impersonation", "deny")
    group = await student.get(
        "/api/v1/namespaces/default/pods", headers={"Impersonate-Group": "system:masters"}
    )
    assert group.status_code == 400  # groups without a user


async def test_each_impersonated_attribute_needs_its_own_permission(lab: Lab) -> None:
    await lab.create(
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "impersonate-bob"},
            "rules": [
                {
                    "verbs": ["impersonate"],
                    "apiGroups": [""],
                    "resources": ["users"],
                    "resourceNames": ["bob"],
                }
            ],
        },
    )
    await lab.bind("ada-as-bob", "impersonate-bob", user_subject(STUDENT.username))
    student = lab.as_(STUDENT)
    as_bob = await student.post(WHOAMI, json=REVIEW, headers={"Impersonate-User": "bob"})
    assert as_bob.status_code == 201 and as_bob.json()["status"]["userInfo"]["username"] == "bob"
    as_carol = await student.post(WHOAMI, json=REVIEW, headers={"Impersonate-User": "carol"})
    assert as_carol.status_code == 403
    as_bob_admin = await student.post(
        WHOAMI, json=REVIEW, headers={"Impersonate-User": "bob", "Impersonate-Group": "system:masters"}
    )
    assert as_bob_admin.status_code == 403
    assert as_bob_admin.json()["message"] == (
        'groups "system:masters" is forbidden: User "student:ada" cannot impersonate resource "groups" '
        'in API group "" at the cluster scope'
    )
