"""Classification against upstream's bootstrap FlowSchemas: who lands in which level and flow."""

from __future__ import annotations

import pytest

from controlplane.apiserver.flowcontrol import bootstrap
from controlplane.apiserver.flowcontrol.classification import RequestDigest, matches_non_resource_url
from controlplane.apiserver.flowcontrol.controller import APFController, LevelSpec, nominal_limits
from controlplane.identity import AUTHENTICATED, NODES, SERVICE_ACCOUNTS, SYSTEM_MASTERS, UserInfo


def controller() -> APFController:
    apf = APFController(60)
    apf.apply(bootstrap.flow_schemas(), bootstrap.priority_levels(), now=0.0)
    return apf


def user(name: str, *groups: str) -> UserInfo:
    return UserInfo.create(name, groups=[*groups, AUTHENTICATED])


def resource(
    who: UserInfo, verb: str, resource: str, namespace: str = "", group: str = "", sub: str = ""
) -> RequestDigest:
    return RequestDigest(
        who, verb, True, api_group=group, namespace=namespace, resource=resource, subresource=sub
    )


NODE = user("system:node:node-1", NODES)
SA = "system:serviceaccount:"


@pytest.mark.parametrize(
    ("digest", "flow_schema", "level", "flow"),
    [
        (resource(user("admin", SYSTEM_MASTERS), "delete", "pods", "default"), "exempt", "exempt", ""),
        (
            resource(NODE, "update", "nodes", sub="status"),
            "system-node-high",
            "node-high",
            "system:node:node-1",
        ),
        (
            resource(NODE, "update", "leases", "kube-node-lease", "coordination.k8s.io"),
            "system-node-high",
            "node-high",
            "system:node:node-1",
        ),
        (resource(NODE, "list", "pods"), "system-nodes", "system", "system:node:node-1"),
        (
            resource(user("system:kube-scheduler"), "create", "pods", "default", sub="binding"),
            "kube-scheduler",
            "workload-high",
            "default",
        ),
        (
            resource(user("system:kube-scheduler"), "update", "leases", "kube-system", "coordination.k8s.io"),
            "system-leader-election",
            "leader-election",
            "system:kube-scheduler",
        ),
        (
            resource(user("system:kube-controller-manager"), "create", "pods", "web"),
            "kube-controller-manager",
            "workload-high",
            "web",
        ),
        (
            resource(user("system:kube-controller-manager"), "update", "endpoints", "web"),
            "endpoint-controller",
            "workload-high",
            "system:kube-controller-manager",
        ),
        (
            resource(user(SA + "kube-system:coredns", SERVICE_ACCOUNTS), "list", "services"),
            "kube-system-service-accounts",
            "workload-high",
            "",
        ),
        (
            resource(
                user(SA + "kube-system:x", SERVICE_ACCOUNTS), "get", "leases", "apps", "coordination.k8s.io"
            ),
            "workload-leader-election",
            "leader-election",
            SA + "kube-system:x",
        ),
        (
            resource(user(SA + "default:app", SERVICE_ACCOUNTS), "list", "pods", "default"),
            "service-accounts",
            "workload-low",
            SA + "default:app",
        ),
        (resource(user("alice"), "list", "pods", "default"), "global-default", "global-default", "alice"),
        (RequestDigest(user("alice"), "get", False, path="/healthz"), "probes", "exempt", ""),
        (
            RequestDigest(user("alice"), "get", False, path="/apis"),
            "global-default",
            "global-default",
            "alice",
        ),
        (
            RequestDigest(
                UserInfo.create("system:anonymous", groups=["system:unauthenticated"]),
                "get",
                False,
                path="/readyz",
            ),
            "probes",
            "exempt",
            "",
        ),
    ],
)
def test_bootstrap_classification(digest: RequestDigest, flow_schema: str, level: str, flow: str) -> None:
    classified, priority_level = controller().classify(digest)
    assert (classified.flow_schema, classified.priority_level, classified.distinguisher) == (
        flow_schema,
        level,
        flow,
    )
    assert priority_level.name == level


def test_a_request_nothing_suggested_matches_lands_in_catch_all() -> None:
    apf = APFController(60)
    apf.apply(
        [fs for fs in bootstrap.flow_schemas() if fs["metadata"]["name"] != "global-default"],
        bootstrap.priority_levels(),
        0.0,
    )
    classified, _ = apf.classify(resource(user("alice"), "get", "pods", "default"))
    assert (classified.flow_schema, classified.priority_level) == ("catch-all", "catch-all")


def alice_first() -> dict[str, object]:
    """A FlowSchema that sends alice's namespaced pod requests to workload-low, before global-default."""
    return {
        "metadata": {"name": "alice-first", "uid": "u1"},
        "spec": {
            "priorityLevelConfiguration": {"name": "workload-low"},
            "matchingPrecedence": 50,
            "rules": [
                {
                    "subjects": [{"kind": "User", "user": {"name": "alice"}}],
                    "resourceRules": [
                        {"verbs": ["*"], "apiGroups": ["*"], "resources": ["pods"], "namespaces": ["*"]}
                    ],
                }
            ],
        },
    }


def test_the_matching_precedence_decides_not_the_order_given() -> None:
    apf = APFController(60)
    mine = alice_first()
    apf.apply([*bootstrap.flow_schemas(), mine], bootstrap.priority_levels(), 0.0)
    assert apf.classify(resource(user("alice"), "get", "pods", "default"))[0].flow_schema == "alice-first"
    # The rule says namespaces only: a cluster-scoped request does not match it.
    assert apf.classify(resource(user("alice"), "list", "pods"))[0].flow_schema == "global-default"
    assert (
        apf.classify(resource(user("alice"), "get", "secrets", "default"))[0].flow_schema == "global-default"
    )


def test_a_flow_schema_naming_a_missing_level_is_dangling_and_skipped() -> None:
    apf = APFController(60)
    broken = {
        "metadata": {"name": "broken"},
        "spec": {
            "priorityLevelConfiguration": {"name": "nope"},
            "matchingPrecedence": 10,
            "rules": [
                {
                    "subjects": [{"kind": "Group", "group": {"name": "*"}}],
                    "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                }
            ],
        },
    }
    apf.apply([*bootstrap.flow_schemas(), broken], bootstrap.priority_levels(), 0.0)
    assert apf.dangling["broken"] is True
    assert apf.dangling["global-default"] is False
    assert (
        apf.classify(RequestDigest(user("bob"), "get", False, path="/api"))[0].flow_schema == "global-default"
    )


def test_bad_objects_never_raise_and_the_mandatory_levels_are_supplied() -> None:
    apf = APFController(60)
    apf.apply(
        [
            {"metadata": {"name": "junk"}, "spec": {"rules": "nope", "matchingPrecedence": "x"}},
            {"spec": None},
        ],
        [
            {
                "metadata": {"name": "bad"},
                "spec": {
                    "type": "Limited",
                    "limited": {"limitResponse": {"type": "Queue", "queuing": {"queues": 2, "handSize": 5}}},
                },
            }
        ],
        0.0,
    )
    assert "bad" in apf.problems and "bad" not in apf.levels
    assert {"exempt", "catch-all"} <= set(apf.levels)
    classified, level = apf.classify(resource(user("alice"), "get", "pods", "default"))
    assert (classified.flow_schema, level.name) == ("catch-all", "catch-all")


def test_nominal_limits_share_the_server_limit_out_by_shares_rounding_up() -> None:
    specs = [LevelSpec.parse(obj) for obj in bootstrap.priority_levels()]
    assert nominal_limits(specs, 600) == {
        "exempt": 0,
        "catch-all": 13,
        "global-default": 49,
        "leader-election": 25,
        "node-high": 98,
        "system": 74,
        "workload-high": 98,
        "workload-low": 245,
    }
    assert nominal_limits(specs, 60)["global-default"] == 5


def test_a_list_takes_a_seat_per_hundred_objects_up_to_the_levels_maximum() -> None:
    apf = controller()
    level = apf.levels["workload-low"]  # 25 seats, hand of 6: at most ceil(25 / 6) = 5 per request
    assert apf.seats(level, "get", None) == 1
    assert apf.seats(level, "list", 50) == 1
    assert apf.seats(level, "list", 250) == 3
    assert apf.seats(level, "list", 250, limit=100) == 1
    assert apf.seats(level, "list", 100_000) == 5


@pytest.mark.parametrize(
    ("urls", "path", "matches"),
    [
        (["*"], "/anything", True),
        (["/healthz"], "/healthz", True),
        (["/healthz"], "/healthz/etcd", True),
        (["/healthz"], "/healthzx", False),
        (["/apis/*"], "/apis/apps", True),
        (["/apis/*"], "/api", False),
    ],
)
def test_non_resource_urls(urls: list[str], path: str, matches: bool) -> None:
    assert matches_non_resource_url(urls, path) is matches


def test_a_classification_is_reused_until_the_configuration_changes() -> None:
    apf = controller()
    asked = resource(user("alice"), "get", "pods", "default")
    first = apf.classify(asked)
    assert first[0].flow_schema == "global-default"
    assert apf.classify(asked) is first  # remembered
    mine = alice_first()
    apf.apply([*bootstrap.flow_schemas(), mine], bootstrap.priority_levels(), 0.0)
    assert apf.classify(asked)[0].flow_schema == "alice-first"  # the new configuration counts
