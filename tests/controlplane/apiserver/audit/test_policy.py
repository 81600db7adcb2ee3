"""The audit policy: first matching rule wins, upstream's matching rules, and refusing bad policies."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.apiserver.audit.config import DEFAULT_POLICY_FILE, load_policy
from controlplane.apiserver.audit.policy import (
    Attributes,
    InvalidPolicy,
    Level,
    Stage,
    parse_policy,
)


def policy(*rules: dict[str, Any], **top: Any) -> Any:
    return parse_policy({"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": list(rules), **top})


def request(
    verb: str = "get",
    resource: str = "pods",
    *,
    user: str = "alice",
    groups: tuple[str, ...] = ("system:authenticated",),
    namespace: str = "default",
    group: str = "",
    subresource: str = "",
    name: str = "web",
) -> Attributes:
    return Attributes(
        user,
        groups,
        verb,
        True,
        path=f"/api/v1/namespaces/{namespace}/{resource}",
        namespace=namespace,
        api_group=group,
        resource=resource,
        subresource=subresource,
        name=name,
    )


def non_resource(path: str, user: str = "alice") -> Attributes:
    return Attributes(user, ("system:authenticated",), "get", False, path=path)


def test_the_first_matching_rule_wins_and_no_match_is_none() -> None:
    p = policy(
        {"level": "Metadata", "users": ["alice"]},
        {"level": "RequestResponse"},
    )
    alice = p.evaluate(request(user="alice"))
    assert (alice.level, alice.rule) == (Level.METADATA, 0)
    assert p.evaluate(request(user="bob")).level is Level.REQUEST_RESPONSE
    nothing = policy({"level": "Metadata", "users": ["carol"]}).evaluate(request())
    assert (nothing.level, nothing.rule) == (Level.NONE, None)


def test_users_groups_verbs_and_namespaces_must_all_hold() -> None:
    rule = {
        "level": "Request",
        "userGroups": ["system:nodes"],
        "verbs": ["update"],
        "namespaces": ["kube-system"],
    }
    p = policy(rule)
    node = ("system:nodes", "system:authenticated")
    assert p.evaluate(request("update", groups=node, namespace="kube-system")).level is Level.REQUEST
    assert p.evaluate(request("get", groups=node, namespace="kube-system")).level is Level.NONE
    assert p.evaluate(request("update", groups=node, namespace="default")).level is Level.NONE
    assert p.evaluate(request("update", namespace="kube-system")).level is Level.NONE


@pytest.mark.parametrize(
    ("spec", "resource", "subresource", "matches"),
    [
        ("pods", "pods", "", True),
        ("pods", "pods", "log", False),
        ("pods/log", "pods", "log", True),
        ("pods/*", "pods", "status", True),
        ("pods/*", "nodes", "status", False),
        ("*/status", "nodes", "status", True),
        ("*/status", "nodes", "", False),
        ("*", "pods", "log", True),
    ],
)
def test_resources_match_subresources_as_upstream(
    spec: str, resource: str, subresource: str, matches: bool
) -> None:
    p = policy({"level": "Metadata", "resources": [{"group": "", "resources": [spec]}]})
    level = p.evaluate(request(resource=resource, subresource=subresource)).level
    assert level is (Level.METADATA if matches else Level.NONE)


def test_resource_groups_and_names() -> None:
    p = policy(
        {
            "level": "Request",
            "resources": [{"group": "apps", "resources": ["deployments"], "resourceNames": ["web"]}],
        },
        {"level": "Metadata", "resources": [{"group": "apps"}]},
    )
    assert p.evaluate(request(resource="deployments", group="apps", name="web")).level is Level.REQUEST
    assert p.evaluate(request(resource="deployments", group="apps", name="db")).level is Level.METADATA
    assert p.evaluate(request(resource="deployments", group="", name="web")).level is Level.NONE


def test_non_resource_urls_match_exactly_or_by_a_trailing_star() -> None:
    p = policy({"level": "Metadata", "nonResourceURLs": ["/healthz*", "/version"]})
    assert p.evaluate(non_resource("/healthz/etcd")).level is Level.METADATA
    assert p.evaluate(non_resource("/version")).level is Level.METADATA
    assert p.evaluate(non_resource("/versions")).level is Level.NONE
    assert p.evaluate(request()).level is Level.NONE  # a resource request never matches nonResourceURLs
    resource_rule = policy({"level": "Metadata", "resources": [{"group": ""}]})
    assert resource_rule.evaluate(non_resource("/api")).level is Level.NONE


def test_omit_stages_add_up_and_omit_managed_fields_of_a_rule_wins() -> None:
    p = policy(
        {
            "level": "Request",
            "users": ["alice"],
            "omitStages": ["ResponseStarted"],
            "omitManagedFields": False,
        },
        {"level": "Request"},
        omitStages=["RequestReceived"],
        omitManagedFields=True,
    )
    alice = p.evaluate(request(user="alice"))
    assert alice.omit_stages == {Stage.REQUEST_RECEIVED, Stage.RESPONSE_STARTED}
    assert alice.omit_managed_fields is False
    bob = p.evaluate(request(user="bob"))
    assert bob.omit_stages == {Stage.REQUEST_RECEIVED} and bob.omit_managed_fields is True


def test_secrets_and_tokens_are_never_recorded_beyond_metadata_whatever_the_policy() -> None:
    p = policy({"level": "RequestResponse"})
    secret = p.evaluate(request("create", "secrets"))
    assert (secret.level, secret.capped) == (Level.METADATA, True)
    token = p.evaluate(request("create", "serviceaccounts", subresource="token"))
    assert token.level is Level.METADATA
    review = p.evaluate(request("create", "tokenreviews", group="authentication.k8s.io", namespace=""))
    assert review.level is Level.METADATA
    assert p.evaluate(request("create", "configmaps")).level is Level.REQUEST_RESPONSE


def test_the_default_policy_records_like_upstreams_recommended_one() -> None:
    p = load_policy(DEFAULT_POLICY_FILE)
    assert p.evaluate(request("get", "secrets")).level is Level.METADATA
    assert p.evaluate(request("create", "configmaps")).level is Level.METADATA
    assert p.evaluate(request("list", "pods")).level is Level.REQUEST
    assert p.evaluate(request("create", "deployments", group="apps")).level is Level.REQUEST_RESPONSE
    assert p.evaluate(request("create", "events")).level is Level.NONE
    assert p.evaluate(non_resource("/healthz")).level is Level.NONE
    nodes = ("system:nodes", "system:authenticated")
    status = p.evaluate(request("update", "pods", subresource="status", user="system:node:n1", groups=nodes))
    assert status.level is Level.REQUEST and Stage.REQUEST_RECEIVED in status.omit_stages
    lease = p.evaluate(request("update", "leases", group="coordination.k8s.io"))
    assert lease.level is Level.METADATA


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ({"apiVersion": "v1", "kind": "Policy", "rules": [{"level": "None"}]}, "apiVersion/kind"),
        ({"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": []}, "rules: Required value"),
        (
            {"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": [{"level": "Everything"}]},
            "rules[0].level",
        ),
        ({"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": [{"users": ["a"]}]}, "Required value"),
        (
            {
                "apiVersion": "audit.k8s.io/v1",
                "kind": "Policy",
                "rules": [{"level": "None", "nonResourceURLs": ["/x"], "resources": [{"group": ""}]}],
            },
            "both regular resources and non-resource URLs",
        ),
        (
            {
                "apiVersion": "audit.k8s.io/v1",
                "kind": "Policy",
                "rules": [{"level": "None", "nonResourceURLs": ["x*y"]}],
            },
            "starts with '/'",
        ),
        (
            {
                "apiVersion": "audit.k8s.io/v1",
                "kind": "Policy",
                "rules": [{"level": "None", "omitStages": ["Done"]}],
            },
            "omitStages",
        ),
        (
            {"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": [{"level": "None", "verbs": "get"}]},
            "verbs: must be a list of strings",
        ),
        (
            {"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": [{"level": "None", "levle": "x"}]},
            "unknown field",
        ),
        ("just a string", "must be a Policy object"),
    ],
)
def test_a_bad_policy_is_refused_with_the_reason(document: Any, problem: str) -> None:
    with pytest.raises(InvalidPolicy) as refused:
        parse_policy(document, "policy.yaml")
    assert problem in str(refused.value)
    assert str(refused.value).startswith("policy.yaml: invalid audit policy")


def test_loading_a_file_that_is_not_yaml_or_missing_is_an_invalid_policy(tmp_path: Any) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("rules: [unclosed")
    with pytest.raises(InvalidPolicy, match="not YAML"):
        load_policy(bad)
    with pytest.raises(InvalidPolicy, match="cannot read"):
        load_policy(tmp_path / "missing.yaml")
