"""RBAC evaluation without a server: rules, subjects, bindings, and the explanation of each decision."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.apiserver.authz.authorizer import Attributes, Verdict, forbidden_message
from controlplane.apiserver.authz.rbac import RBACAuthorizer, StaticPolicy, rule_allows, rules_for, why_not
from controlplane.identity import UserInfo

ALICE = UserInfo.create("alice", groups=["devs", "system:authenticated"])
G = "rbac.authorization.k8s.io"


def rule(verbs: str, groups: list[str], resources: str, names: str = "") -> dict[str, Any]:
    built: dict[str, Any] = {"verbs": verbs.split(), "apiGroups": groups, "resources": resources.split()}
    if names:
        built["resourceNames"] = names.split()
    return built


def role(name: str, *rules: dict[str, Any], namespace: str = "") -> dict[str, Any]:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"kind": "Role" if namespace else "ClusterRole", "metadata": meta, "rules": list(rules)}


def binding(name: str, role_kind: str, role_name: str, *subjects: dict[str, str], namespace: str = "") -> Any:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {
        "kind": "RoleBinding" if namespace else "ClusterRoleBinding",
        "metadata": meta,
        "roleRef": {"apiGroup": G, "kind": role_kind, "name": role_name},
        "subjects": list(subjects),
    }


def user(name: str) -> dict[str, str]:
    return {"kind": "User", "name": name, "apiGroup": G}


def group(name: str) -> dict[str, str]:
    return {"kind": "Group", "name": name, "apiGroup": G}


def ask(
    verb: str, resource: str, namespace: str = "", name: str = "", *, who: UserInfo = ALICE
) -> Attributes:
    resource, _, sub = resource.partition("/")
    group_name = ""
    if "." in resource:
        resource, group_name = resource.split(".", 1)
    return Attributes(
        who, verb, api_group=group_name, resource=resource, subresource=sub, namespace=namespace, name=name
    )


@pytest.mark.parametrize(
    ("the_rule", "attrs", "allowed"),
    [
        (rule("get list", [""], "pods"), ask("list", "pods", "default"), True),
        (rule("get", [""], "pods"), ask("delete", "pods", "default"), False),
        (rule("*", ["*"], "*"), ask("create", "deployments.apps", "x"), True),
        (rule("get", ["apps"], "pods"), ask("get", "pods", "x"), False),
        # a subresource is its own resource: pods does not grant pods/log, */log does
        (rule("get", [""], "pods"), ask("get", "pods/log", "x", "web"), False),
        (rule("get", [""], "pods/log"), ask("get", "pods/log", "x", "web"), True),
        (rule("get", [""], "*/log"), ask("get", "pods/log", "x", "web"), True),
        (rule("get", [""], "*/log"), ask("get", "pods", "x", "web"), False),
        # resourceNames narrow to named objects: a list names none
        (rule("get list", [""], "configmaps", "app"), ask("get", "configmaps", "x", "app"), True),
        (rule("get list", [""], "configmaps", "app"), ask("get", "configmaps", "x", "other"), False),
        (rule("get list", [""], "configmaps", "app"), ask("list", "configmaps", "x"), False),
    ],
)
def test_one_rule_against_one_request(the_rule: dict[str, Any], attrs: Attributes, allowed: bool) -> None:
    assert rule_allows(attrs, the_rule) is allowed


@pytest.mark.parametrize(
    ("urls", "path", "allowed"),
    [
        (["/healthz"], "/healthz", True),
        (["/healthz"], "/healthz/etcd", False),
        (["/healthz/*"], "/healthz/etcd", True),
        (["/apis/*"], "/apis", False),
        (["/apis", "/apis/*"], "/apis/apps/v1", True),
        (["*"], "/anything", True),
    ],
)
def test_non_resource_urls_match_exactly_or_by_a_star_suffix(
    urls: list[str], path: str, allowed: bool
) -> None:
    attrs = Attributes(ALICE, "get", resource_request=False, path=path)
    assert rule_allows(attrs, {"verbs": ["get"], "nonResourceURLs": urls}) is allowed
    # a resource rule never matches a path, and a URL rule never a resource
    assert not rule_allows(attrs, rule("*", ["*"], "*"))
    assert not rule_allows(ask("get", "pods", "x"), {"verbs": ["*"], "nonResourceURLs": ["*"]})


def test_why_not_names_the_first_field_that_does_not_fit() -> None:
    assert why_not(ask("list", "pods", "d"), rule("get", [""], "pods")) == 'verbs [get] do not include "list"'
    assert (
        why_not(ask("get", "pods", "d"), rule("get", ["apps"], "pods"))
        == 'apiGroups [apps] do not include ""'
    )
    assert why_not(ask("get", "pods/log", "d", "w"), rule("get", [""], "pods")) == (
        'resources [pods] do not include "pods/log"'
    )
    assert "names none" in why_not(ask("list", "configmaps", "d"), rule("list", [""], "configmaps", "app"))


def policy() -> StaticPolicy:
    return StaticPolicy(
        roles=[role("reader", rule("get list", [""], "configmaps"), namespace="team")],
        role_bindings_=[
            binding("alice-reads", "Role", "reader", user("alice"), namespace="team"),
            binding("devs-edit", "ClusterRole", "edit", group("devs"), namespace="team"),
            binding(
                "bot", "ClusterRole", "edit", {"kind": "ServiceAccount", "name": "bot"}, namespace="team"
            ),
            binding("dangling", "Role", "missing", user("alice"), namespace="other"),
        ],
        cluster_roles=[
            role("edit", rule("get list watch create update patch delete", ["", "apps"], "pods deployments")),
            role("discovery", {"verbs": ["get"], "nonResourceURLs": ["/api", "/api/*"]}),
        ],
        cluster_role_bindings_=[
            binding("discovery", "ClusterRole", "discovery", group("system:authenticated"))
        ],
    )


def test_a_role_binding_grants_its_role_in_its_namespace_only() -> None:
    rbac = RBACAuthorizer(policy())
    allowed = rbac.authorize(ask("list", "configmaps", "team"))
    assert allowed.verdict is Verdict.ALLOW
    assert (
        allowed.reason == 'RBAC: allowed by RoleBinding "alice-reads/team" of Role "reader" to User "alice"'
    )
    assert (allowed.binding, allowed.role) == ('RoleBinding "alice-reads/team"', 'Role "reader"')
    assert allowed.rule == {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["configmaps"]}
    assert rbac.authorize(ask("list", "configmaps", "elsewhere")).verdict is Verdict.NO_OPINION
    assert rbac.authorize(ask("list", "configmaps")).verdict is Verdict.NO_OPINION  # cluster-wide


def test_groups_and_service_accounts_are_subjects_too() -> None:
    rbac = RBACAuthorizer(policy())
    by_group = rbac.authorize(ask("create", "deployments.apps", "team"))
    assert (
        by_group.reason
        == 'RBAC: allowed by RoleBinding "devs-edit/team" of ClusterRole "edit" to Group "devs"'
    )
    bot = UserInfo.create("system:serviceaccount:team:bot", groups=["system:serviceaccounts"])
    as_bot = rbac.authorize(ask("delete", "pods", "team", "web", who=bot))
    # upstream describes a ServiceAccount as name/namespace (the binding's, when the subject has none)
    assert as_bot.reason.endswith('to ServiceAccount "bot/team"')
    other_bot = UserInfo.create("system:serviceaccount:elsewhere:bot")
    assert not rbac.authorize(ask("delete", "pods", "team", "web", who=other_bot)).allowed


def test_a_refusal_explains_each_binding_that_names_the_user() -> None:
    rbac = RBACAuthorizer(policy())
    refused = rbac.authorize(ask("delete", "configmaps", "team", "app"))
    assert refused.verdict is Verdict.NO_OPINION and refused.reason == ""
    considered = {c["binding"]: c for c in refused.considered}
    assert set(considered) == {
        'ClusterRoleBinding "discovery"',
        'RoleBinding "alice-reads/team"',
        'RoleBinding "devs-edit/team"',
    }
    assert considered['RoleBinding "alice-reads/team"']["why"] == (
        'rule 1: verbs [get list] do not include "delete"'
    )
    assert "resources [pods deployments] do not include" in considered['RoleBinding "devs-edit/team"']["why"]
    assert (
        considered['ClusterRoleBinding "discovery"']["why"] == 'rule 1: verbs [get] do not include "delete"'
    )
    assert "no RBAC rule lets alice delete configmaps" in refused.explanation


def test_a_binding_to_a_missing_role_is_an_error_in_the_reason() -> None:
    refused = RBACAuthorizer(policy()).authorize(ask("get", "pods", "other"))
    assert refused.reason == 'RBAC: role.rbac.authorization.k8s.io "missing" not found'
    assert refused.errors == ('role.rbac.authorization.k8s.io "missing" not found',)


def test_rules_for_gathers_every_rule_that_applies() -> None:
    rules, errors = rules_for(policy(), ALICE, "team")
    assert len(rules) == 3 and errors == []
    assert rules_for(policy(), UserInfo.create("nobody"), "team") == ([], [])


def test_the_forbidden_message_is_upstreams() -> None:
    assert forbidden_message(ask("list", "pods", "default")) == (
        'User "alice" cannot list resource "pods" in API group "" in the namespace "default"'
    )
    assert forbidden_message(ask("get", "deployments.apps/scale", "", "web")) == (
        'User "alice" cannot get resource "deployments/scale" in API group "apps" at the cluster scope'
    )
    assert forbidden_message(Attributes(ALICE, "get", resource_request=False, path="/metrics")) == (
        'User "alice" cannot get path "/metrics"'
    )


def test_a_decision_is_reused_until_the_policy_changes() -> None:
    rbac = RBACAuthorizer(StaticPolicy(cluster_roles=policy().cluster_roles))
    refused = rbac.authorize(ask("list", "pods", "team"))
    assert refused.verdict is Verdict.NO_OPINION
    assert rbac.authorize(ask("list", "pods", "team")) is refused  # remembered, not walked again

    edit = binding("alice-edit", "ClusterRole", "edit", user("alice"), namespace="team")
    rbac.source = StaticPolicy(cluster_roles=policy().cluster_roles, role_bindings_=[edit])
    assert rbac.authorize(ask("list", "pods", "team")).verdict is Verdict.ALLOW  # a new generation


def test_a_decision_no_resource_names_rule_met_serves_every_name() -> None:
    # "edit-pods" grants every pod; "one-secret" grants one Secret by name, before a rule for all.
    roles = [
        role("edit-pods", rule("get update", [""], "pods"), namespace="team"),
        role(
            "secrets",
            rule("get", [""], "secrets", names="one"),
            rule("get", [""], "secrets"),
            namespace="team",
        ),
    ]
    bindings = [
        binding("b1", "Role", "edit-pods", user("alice"), namespace="team"),
        binding("b2", "Role", "secrets", user("alice"), namespace="team"),
    ]
    rbac = RBACAuthorizer(StaticPolicy(roles=roles, role_bindings_=bindings))
    first = rbac.authorize(ask("update", "pods", "team", "web-1"))
    assert first.allowed
    assert rbac.authorize(ask("update", "pods", "team", "web-2")) is first  # one decision for every pod
    # A resourceNames rule was met on the way: each name is decided (and remembered) on its own,
    # and the rule that allowed each one is the one its name fits.
    one = rbac.authorize(ask("get", "secrets", "team", "one"))
    other = rbac.authorize(ask("get", "secrets", "team", "other"))
    assert one.allowed and other.allowed
    assert one.rule is not None and one.rule.get("resourceNames") == ["one"]
    assert other.rule is not None and "resourceNames" not in other.rule
    # A refusal names the object in its explanation: never shared between names.
    refused = rbac.authorize(ask("delete", "pods", "team", "web-1"))
    assert not refused.allowed and '"web-1"' in refused.explanation
    assert '"web-2"' in rbac.authorize(ask("delete", "pods", "team", "web-2")).explanation
