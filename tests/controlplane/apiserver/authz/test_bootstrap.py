"""The bootstrap policy: created on start, reconciled on restart, admin/edit/view aggregated."""

from __future__ import annotations

import asyncio
from typing import Any

from controlplane.apiserver.authz import bootstrap
from controlplane.apiserver.authz.aggregation import stale_roles
from tests.controlplane.apiserver.authz.conftest import RBAC, Lab


def names(objects: list[dict[str, Any]]) -> set[str]:
    return {o["metadata"]["name"] for o in objects}


def test_the_policy_has_upstreams_roles_and_bindings() -> None:
    roles, bindings = bootstrap.policy()
    assert {
        "cluster-admin",
        "admin",
        "edit",
        "view",
        "system:basic-user",
        "system:discovery",
        "system:public-info-viewer",
        "system:kube-scheduler",
        "system:volume-scheduler",
        "system:kube-controller-manager",
        "system:node",
        "system:node-proxier",
        "system:monitoring",
        "system:controller:replicaset-controller",
        "system:controller:generic-garbage-collector",
    } <= names(roles)
    by_name = {b["metadata"]["name"]: b for b in bindings}
    assert by_name["cluster-admin"]["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:masters"}
    ]
    assert by_name["system:node"]["subjects"] == []  # the Node authorizer decides for kubelets
    # the deviation: the controller manager's one credential holds its controllers' roles
    assert {"kind": "ServiceAccount", "name": "replicaset-controller", "namespace": "kube-system"} in by_name[
        "system:controller:replicaset-controller"
    ]["subjects"]
    assert {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "User",
        "name": "system:kube-controller-manager",
    } in (by_name["system:controller:replicaset-controller"]["subjects"])
    assert len(by_name["system:controller:clusterrole-aggregation-controller"]["subjects"]) == 1
    for obj in roles + bindings:
        assert obj["metadata"]["labels"]["kubernetes.io/bootstrapping"] == "rbac-defaults"
        assert obj["metadata"]["annotations"][bootstrap.AUTOUPDATE] == "true"


def test_aggregation_follows_chains_to_a_fixpoint() -> None:
    roles, _ = bootstrap.policy()
    rules = stale_roles(roles)
    assert set(rules) == {"admin", "edit", "view"}
    view, edit, admin = rules["view"], rules["edit"], rules["admin"]
    assert all(rule in edit for rule in view) and all(rule in admin for rule in edit)
    assert any("secrets" in r.get("resources", []) for r in edit)
    assert not any("secrets" in r.get("resources", []) for r in view)
    assert any("rolebindings" in r.get("resources", []) for r in admin)
    assert not any("rolebindings" in r.get("resources", []) for r in edit)


def test_reconcile_adds_back_missing_rules_and_subjects_unless_autoupdate_is_false() -> None:
    roles, bindings = bootstrap.policy()
    expected = next(r for r in roles if r["metadata"]["name"] == "system:basic-user")
    trimmed = dict(expected, rules=expected["rules"][:1])
    restored = bootstrap.reconcile(trimmed, expected)
    assert restored is not None and restored["rules"] == expected["rules"]
    assert bootstrap.reconcile(expected, expected) is None
    kept = dict(trimmed, metadata=dict(trimmed["metadata"], annotations={bootstrap.AUTOUPDATE: "false"}))
    assert bootstrap.reconcile(kept, expected) is None
    binding = next(b for b in bindings if b["metadata"]["name"] == "cluster-admin")
    extra = {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "ada"}
    widened = dict(binding, subjects=[extra])
    reconciled = bootstrap.reconcile(widened, binding)
    assert reconciled is not None and reconciled["subjects"] == [extra, *binding["subjects"]]


async def test_the_api_server_creates_the_policy_and_restores_it_on_restart(lab: Lab) -> None:
    admin = lab.as_()
    listed = (await admin.get(f"{RBAC}/clusterroles")).json()["items"]
    roles, _ = bootstrap.policy()
    assert names(roles) <= names(listed)
    view = next(r for r in listed if r["metadata"]["name"] == "view")
    assert view["aggregationRule"]["clusterRoleSelectors"] == [
        {"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}}
    ]
    assert any("pods" in r["resources"] for r in view["rules"])
    # remove a subject; a restart (the post-start hook again) puts it back
    binding = (await admin.get(f"{RBAC}/clusterrolebindings/system:basic-user")).json()
    binding["subjects"] = []
    assert (await admin.put(f"{RBAC}/clusterrolebindings/system:basic-user", json=binding)).status_code == 200
    await lab.server.authorization.ensure_bootstrap_policy()
    restored = (await admin.get(f"{RBAC}/clusterrolebindings/system:basic-user")).json()
    assert [s["name"] for s in restored["subjects"]] == ["system:authenticated"]


async def test_a_role_labelled_aggregate_to_view_extends_view_edit_and_admin(lab: Lab) -> None:
    await lab.create(
        f"{RBAC}/clusterroles",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {
                "name": "widgets-view",
                "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"},
            },
            "rules": [{"verbs": ["get", "list"], "apiGroups": ["example.com"], "resources": ["widgets"]}],
        },
    )
    admin = lab.as_()
    cache = lab.server.caches["/registry/clusterroles"]

    async def rules_of(name: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = (await admin.get(f"{RBAC}/clusterroles/{name}")).json()["rules"]
        return found

    widget_rule = {"verbs": ["get", "list"], "apiGroups": ["example.com"], "resources": ["widgets"]}

    async def everywhere() -> bool:
        return all([widget_rule in await rules_of(name) for name in ("view", "edit", "admin")])

    async with asyncio.timeout(10):
        while not await everywhere():
            await cache.wait_for(cache.revision + 1, 1.0)
