"""The default roles answer as upstream's do: SubjectAccessReviews against the bootstrap policy.

Each expectation is read off upstream's bootstrap policy as generated in kubernetes
``plugin/pkg/auth/authorizer/rbac/bootstrappolicy/testdata/cluster-roles.yaml``, ``cluster-role-
bindings.yaml`` and ``controller-roles.yaml`` (``view`` has no Secrets, ``edit`` no RBAC, ``admin`` no
quota writes; the scheduler binds pods and reads nodes; kube-proxy reads services and EndpointSlices;
kubelets go through the Node authorizer). Users bound to view/edit/admin get a RoleBinding in ``team``.
"""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.identity import (
    AUTHENTICATED,
    KUBE_CONTROLLER_MANAGER,
    KUBE_PROXY,
    KUBE_SCHEDULER,
    NODES,
    SYSTEM_MASTERS,
    node_user,
)
from tests.controlplane.apiserver.authz.conftest import Lab, user_subject

SAR = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
R = dict[str, str]


def res(verb: str, resource: str, namespace: str = "", name: str = "") -> R:
    resource, _, sub = resource.partition("/")
    group = ""
    if "." in resource:
        resource, group = resource.split(".", 1)
    return {
        "verb": verb,
        "group": group,
        "resource": resource,
        "subresource": sub,
        "namespace": namespace,
        "name": name,
    }


def url(path: str, verb: str = "get") -> R:
    return {"path": path, "verb": verb}


#: (user, groups, attributes, allowed)
MATRIX: list[tuple[str, list[str], R, bool]] = [
    # view (aggregated from system:aggregate-to-view)
    ("viewer", [], res("get", "pods", "team", "web"), True),
    ("viewer", [], res("list", "deployments.apps", "team"), True),
    ("viewer", [], res("get", "pods/log", "team", "web"), True),
    ("viewer", [], res("get", "secrets", "team", "db"), False),
    ("viewer", [], res("create", "pods", "team"), False),
    ("viewer", [], res("get", "pods", "elsewhere", "web"), False),
    ("viewer", [], res("list", "rolebindings.rbac.authorization.k8s.io", "team"), False),
    # edit = view + writes, Secrets, impersonating ServiceAccounts; no RBAC, no quota
    ("editor", [], res("create", "pods", "team"), True),
    ("editor", [], res("get", "secrets", "team", "db"), True),
    ("editor", [], res("update", "deployments.apps/scale", "team", "web"), True),
    ("editor", [], res("impersonate", "serviceaccounts", "team", "bot"), True),
    ("editor", [], res("create", "serviceaccounts/token", "team", "bot"), True),
    ("editor", [], res("create", "rolebindings.rbac.authorization.k8s.io", "team"), False),
    ("editor", [], res("update", "resourcequotas", "team", "q"), False),
    # admin = edit + Roles and RoleBindings, local access reviews
    ("nsadmin", [], res("create", "rolebindings.rbac.authorization.k8s.io", "team"), True),
    ("nsadmin", [], res("create", "localsubjectaccessreviews.authorization.k8s.io", "team"), True),
    ("nsadmin", [], res("update", "resourcequotas", "team", "q"), False),
    ("nsadmin", [], res("delete", "namespaces", "team", "team"), False),
    ("nsadmin", [], res("list", "nodes"), False),
    # cluster-admin, by the binding to system:masters
    ("root", [SYSTEM_MASTERS], res("delete", "nodes", name="node-1"), True),
    ("root", [SYSTEM_MASTERS], url("/metrics"), True),
    # every authenticated user: system:basic-user, system:discovery, system:public-info-viewer
    ("ada", [AUTHENTICATED], res("create", "selfsubjectaccessreviews.authorization.k8s.io"), True),
    ("ada", [AUTHENTICATED], res("create", "selfsubjectrulesreviews.authorization.k8s.io"), True),
    ("ada", [AUTHENTICATED], url("/apis/apps/v1"), True),
    ("ada", [AUTHENTICATED], url("/healthz"), True),
    ("ada", [AUTHENTICATED], url("/metrics"), False),
    ("ada", [AUTHENTICATED], res("list", "pods", "default"), False),
    ("ada", [AUTHENTICATED], res("list", "namespaces"), False),
    # system:monitoring
    ("prometheus", ["system:monitoring"], url("/metrics"), True),
    # system:kube-scheduler (+ system:volume-scheduler)
    (KUBE_SCHEDULER, [], res("create", "pods/binding", "team", "web"), True),
    (KUBE_SCHEDULER, [], res("watch", "nodes"), True),
    (KUBE_SCHEDULER, [], res("patch", "pods/status", "team", "web"), True),
    (KUBE_SCHEDULER, [], res("delete", "pods", "team", "web"), True),
    (KUBE_SCHEDULER, [], res("update", "leases.coordination.k8s.io", "kube-system", "kube-scheduler"), True),
    (KUBE_SCHEDULER, [], res("update", "leases.coordination.k8s.io", "kube-system", "other"), False),
    (KUBE_SCHEDULER, [], res("update", "persistentvolumeclaims", "team", "data"), True),
    (KUBE_SCHEDULER, [], res("create", "deployments.apps", "team"), False),
    (KUBE_SCHEDULER, [], res("get", "secrets", "team", "db"), False),
    # kube-proxy: system:node-proxier
    (KUBE_PROXY, [], res("watch", "services"), True),
    (KUBE_PROXY, [], res("list", "endpointslices.discovery.k8s.io"), True),
    (KUBE_PROXY, [], res("get", "nodes", name="node-1"), True),
    (KUBE_PROXY, [], res("create", "services", "team"), False),
    # the controller manager: its own role plus the system:controller:* roles of its controllers
    (KUBE_CONTROLLER_MANAGER, [], res("list", "secrets"), True),
    (KUBE_CONTROLLER_MANAGER, [], res("create", "pods", "team"), True),
    (KUBE_CONTROLLER_MANAGER, [], res("update", "deployments.apps/status", "team", "web"), True),
    (KUBE_CONTROLLER_MANAGER, [], res("patch", "nodes/status", name="node-1"), True),
    (KUBE_CONTROLLER_MANAGER, [], res("delete", "namespaces", name="team"), True),
    (KUBE_CONTROLLER_MANAGER, [], res("create", "endpointslices.discovery.k8s.io", "team"), True),
    (KUBE_CONTROLLER_MANAGER, [], res("create", "rolebindings.rbac.authorization.k8s.io", "team"), False),
    (KUBE_CONTROLLER_MANAGER, [], res("create", "pods/exec", "team", "web"), False),
    # kubelets: the Node authorizer and the system:node rules
    (node_user("node-1"), [NODES], res("get", "nodes", name="node-1"), True),
    (node_user("node-1"), [NODES], res("list", "nodes"), False),
    (
        node_user("node-1"),
        [NODES],
        res("update", "leases.coordination.k8s.io", "kube-node-lease", "node-1"),
        True,
    ),
    (node_user("node-1"), [NODES], res("get", "secrets", "team", "db"), False),
    (node_user("node-1"), [NODES], res("create", "events", "team"), True),
    (node_user("node-1"), [NODES], res("create", "deployments.apps", "team"), False),
]


@pytest.fixture
async def bound(lab: Lab) -> Lab:
    for who, role in (("viewer", "view"), ("editor", "edit"), ("nsadmin", "admin")):
        await lab.bind(f"{who}-{role}", role, user_subject(who), namespace="team")
    return lab


async def test_the_default_roles_answer_like_upstreams_bootstrap_policy(bound: Lab) -> None:
    admin = bound.as_()
    wrong: list[str] = []
    for user, groups, attributes, allowed in MATRIX:
        key = "nonResourceAttributes" if "path" in attributes else "resourceAttributes"
        body: dict[str, Any] = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {"user": user, "groups": groups, key: attributes},
        }
        response = await admin.post(SAR, json=body)
        assert response.status_code == 201, response.text
        status = response.json()["status"]
        if status["allowed"] is not allowed:
            wrong.append(f"{user} {attributes}: allowed={status['allowed']} ({status.get('reason', '')})")
    assert not wrong, "\n".join(wrong)


async def test_a_review_says_which_binding_allowed_it(bound: Lab) -> None:
    body = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {"user": "editor", "resourceAttributes": res("create", "pods", "team")},
    }
    status = (await bound.as_().post(SAR, json=body)).json()["status"]
    assert status == {
        "allowed": True,
        "reason": 'RBAC: allowed by RoleBinding "editor-edit/team" of ClusterRole "edit" to User "editor"',
    }
