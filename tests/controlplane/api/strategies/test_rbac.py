"""RBAC: ``pkg/apis/rbac/validation/validation_test.go`` and ``pkg/apis/rbac/v1/defaults.go``."""

from __future__ import annotations

import copy
from typing import Any

from controlplane.api.strategies import (
    ClusterRoleBindingStrategy,
    ClusterRoleStrategy,
    RoleBindingStrategy,
    RoleStrategy,
)
from tests.controlplane.api.strategies import create, stored, update

GROUP = "rbac.authorization.k8s.io"


def role(*rules: dict[str, Any], name: str = "reader") -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/v1", "kind": "Role", "metadata": {"name": name}, "rules": list(rules)}


def binding(role_ref: dict[str, Any], *subjects: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "read"},
        "roleRef": role_ref,
        "subjects": list(subjects),
    }


def test_rules_need_verbs_groups_and_resources() -> None:
    body = role(
        {"resources": ["pods"]},
        {"verbs": ["get"], "apiGroups": [""]},
        {"verbs": ["get"], "resources": ["pods"]},
    )
    assert create(RoleStrategy(), body)[1] == [
        "rules[0].verbs: Required value: verbs must contain at least one value",
        "rules[0].apiGroups: Required value: resource rules must supply at least one api group",
        "rules[1].resources: Required value: resource rules must supply at least one resource",
        "rules[2].apiGroups: Required value: resource rules must supply at least one api group",
    ]
    named = role(
        {"verbs": ["get"], "apiGroups": [""], "resources": ["pods", "secrets"], "resourceNames": ["x"]}
    )
    assert create(RoleStrategy(), named)[1] == [
        "rules[0].resourceNames: Required value: resource names cannot apply to multiple resources"
    ]


def test_non_resource_urls_only_in_cluster_roles() -> None:
    rule = {"verbs": ["get"], "nonResourceURLs": ["/healthz"]}
    assert create(RoleStrategy(), role(rule))[1] == [
        'rules[0].nonResourceURLs: Invalid value: ["/healthz"]: namespaced rules cannot apply to '
        "non-resource URLs"
    ]
    cluster_role = dict(role(rule), kind="ClusterRole")
    assert create(ClusterRoleStrategy(), cluster_role, namespaced=False)[1] == []
    mixed = dict(role(dict(rule, resources=["pods"])), kind="ClusterRole")
    assert create(ClusterRoleStrategy(), mixed, namespaced=False)[1] == [
        'rules[0].nonResourceURLs: Invalid value: ["/healthz"]: rules cannot apply to both regular '
        "resources and non-resource URLs"
    ]


def test_rbac_names_only_need_to_be_path_segments() -> None:
    body = dict(role(name="system:controller:deployment-controller"), kind="ClusterRole")
    assert create(ClusterRoleStrategy(), body, namespaced=False)[1] == []
    assert create(RoleStrategy(), role(name="a/b"))[1] == [
        "metadata.name: Invalid value: \"a/b\": may not contain '/'"
    ]


def test_aggregation_rules_need_selectors() -> None:
    body = dict(role(), kind="ClusterRole", aggregationRule={"clusterRoleSelectors": []})
    assert create(ClusterRoleStrategy(), body, namespaced=False)[1] == [
        "aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if "
        "aggregationRule is non-nil"
    ]


def test_binding_defaults_and_subjects() -> None:
    body = binding(
        {"kind": "Role", "name": "reader"},
        {"kind": "User", "name": "alice"},
        {"kind": "ServiceAccount", "name": "builder", "namespace": "ci"},
    )
    obj = stored(RoleBindingStrategy(), body)
    assert obj["roleRef"]["apiGroup"] == GROUP
    assert obj["subjects"][0]["apiGroup"] == GROUP and "apiGroup" not in obj["subjects"][1]
    bad = binding(
        {"apiGroup": "example.com", "kind": "Secret", "name": ""},
        {"kind": "Robot", "name": "r2"},
        {"kind": "ServiceAccount", "name": "builder", "apiGroup": GROUP},
        {"kind": "User", "name": "bob", "apiGroup": "example.com"},
    )
    assert create(RoleBindingStrategy(), bad)[1] == [
        f'roleRef.apiGroup: Unsupported value: "example.com": supported values: "{GROUP}"',
        'roleRef.kind: Unsupported value: "Secret": supported values: "Role", "ClusterRole"',
        "roleRef.name: Required value",
        'subjects[0].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"',
        f'subjects[1].apiGroup: Unsupported value: "{GROUP}": supported values: ""',
        f'subjects[2].apiGroup: Unsupported value: "example.com": supported values: "{GROUP}"',
    ]


def test_cluster_role_bindings_bind_cluster_roles_and_need_sa_namespaces() -> None:
    body = dict(
        binding({"kind": "Role", "name": "x"}, {"kind": "ServiceAccount", "name": "sa"}),
        kind="ClusterRoleBinding",
    )
    assert create(ClusterRoleBindingStrategy(), body, namespaced=False)[1] == [
        'roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"',
        "subjects[0].namespace: Required value",
    ]


def test_role_ref_cannot_change() -> None:
    old = stored(
        RoleBindingStrategy(), binding({"kind": "Role", "name": "reader"}, {"kind": "User", "name": "alice"})
    )
    new = copy.deepcopy(old)
    new["roleRef"]["name"] = "admin"
    assert update(RoleBindingStrategy(), new, old)[1] == [
        f'roleRef: Invalid value: {{"APIGroup":"{GROUP}","Kind":"Role","Name":"admin"}}: '
        "cannot change roleRef"
    ]
    more_subjects = copy.deepcopy(old)
    more_subjects["subjects"].append({"kind": "Group", "name": "devs"})
    assert update(RoleBindingStrategy(), more_subjects, old)[1] == []
