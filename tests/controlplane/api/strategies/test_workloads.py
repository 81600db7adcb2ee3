"""Deployments and ReplicaSets: ``pkg/apis/apps/v1/defaults_test.go``, ``pkg/apis/apps/validation/
validation_test.go`` (``TestValidateDeployment``, ``TestValidateReplicaSet``) and the generation rules of
``pkg/registry/apps/deployment/strategy_test.go``."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from controlplane.api.strategies import DeploymentStrategy, ReplicaSetStrategy
from tests.controlplane.api.strategies import create, status_update, stored, update

DEPLOYMENTS = DeploymentStrategy()
REPLICASETS = ReplicaSetStrategy()


def deployment(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "nginx:1.25"}]},
        },
    }
    body.update(spec)
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": body}


def replicaset(**spec: Any) -> dict[str, Any]:
    return dict(deployment(**spec), kind="ReplicaSet")


def errors_of(**spec: Any) -> list[str]:
    return create(DEPLOYMENTS, deployment(**spec))[1]


def rolling(surge: Any, unavailable: Any) -> dict[str, Any]:
    return {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}}


def test_deployment_defaults() -> None:
    obj = stored(DEPLOYMENTS, deployment())
    spec = obj["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
    }
    assert spec["revisionHistoryLimit"] == 10
    assert spec["progressDeadlineSeconds"] == 600
    template = spec["template"]["spec"]
    assert template["restartPolicy"] == "Always" and template["dnsPolicy"] == "ClusterFirst"
    assert template["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    # Pod-only defaults stay out of templates (SetDefaults_Pod is not SetDefaults_PodSpec).
    assert "enableServiceLinks" not in template and "priority" not in template
    assert obj["status"] == {} and obj["metadata"]["generation"] == 1


def test_recreate_gets_no_rolling_update_defaults() -> None:
    obj = stored(DEPLOYMENTS, deployment(strategy={"type": "Recreate"}))
    assert obj["spec"]["strategy"] == {"type": "Recreate"}


def test_a_missing_selector_is_required_and_matches_nothing() -> None:
    body = deployment()
    del body["spec"]["selector"]
    assert create(DEPLOYMENTS, body)[1] == [
        "spec.selector: Required value",
        'spec.template.metadata.labels: Invalid value: {"app":"web"}: '
        "`selector` does not match template `labels`",
    ]


def test_the_selector_must_match_the_template_labels() -> None:
    assert errors_of(selector={"matchLabels": {"app": "api"}}) == [
        'spec.template.metadata.labels: Invalid value: {"app":"web"}: '
        "`selector` does not match template `labels`"
    ]
    expressions = {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "api"]}]}
    assert errors_of(selector=expressions) == []


def test_an_empty_selector_is_invalid() -> None:
    assert errors_of(selector={"matchLabels": {}}) == [
        "spec.selector: Invalid value: {}: empty selector is invalid for deployment"
    ]


def test_an_invalid_selector_stops_before_the_template() -> None:
    selector = {"matchExpressions": [{"key": "app", "operator": "Has", "values": ["web"]}]}
    assert errors_of(selector=selector) == [
        'spec.selector.matchExpressions[0].operator: Invalid value: "Has": not a valid selector operator',
        'spec.selector: Invalid value: {"matchExpressions":[{"key":"app","operator":"Has",'
        '"values":["web"]}]}: invalid label selector',
    ]


def test_replicas_may_not_be_negative() -> None:
    assert errors_of(replicas=-1) == ["spec.replicas: Invalid value: -1: must be greater than or equal to 0"]


@pytest.mark.parametrize(
    ("strategy", "messages"),
    [
        (
            rolling(0, 0),
            [
                "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when "
                "`maxSurge` is 0"
            ],
        ),
        (
            rolling("0%", "0%"),
            [
                "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0%: may not be 0 when "
                "`maxSurge` is 0"
            ],
        ),
        (
            rolling("25x", 1),
            [
                "spec.strategy.rollingUpdate.maxSurge: Invalid value: 25x: a valid percent string must be a "
                "numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for "
                "validation is "
                "'[0-9]+%')"
            ],
        ),
        (
            rolling(1, "150%"),
            [
                "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 150%: must not be greater "
                "than 100%"
            ],
        ),
        (
            rolling(-1, 1),
            ["spec.strategy.rollingUpdate.maxSurge: Invalid value: -1: must be greater than or equal to 0"],
        ),
        (rolling(2, 0), []),
        (
            {"type": "Recreate", "rollingUpdate": {"maxSurge": 1}},
            [
                "spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is "
                "'Recreate'"
            ],
        ),
        (
            {"type": "BlueGreen"},
            [
                'spec.strategy: Unsupported value: {"Type":"BlueGreen","RollingUpdate":null}: '
                'supported values: "Recreate", "RollingUpdate"'
            ],
        ),
    ],
)
def test_rollout_strategy(strategy: dict[str, Any], messages: list[str]) -> None:
    assert errors_of(strategy=strategy) == messages


def test_the_template_is_validated_like_a_pod_and_must_restart_always() -> None:
    template = {
        "metadata": {"labels": {"app": "web"}},
        "spec": {
            "restartPolicy": "Never",
            "activeDeadlineSeconds": 10,
            "containers": [{"name": "web", "image": ""}],
        },
    }
    assert errors_of(template=template) == [
        "spec.template.spec.containers[0].image: Required value",
        'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"',
        "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in ReplicaSet is not "
        "Supported",
    ]


def test_template_label_errors_use_upstreams_path_without_metadata() -> None:
    template = {
        "metadata": {"labels": {"app": "web", "bad key": "x"}},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
    }
    messages = errors_of(template=template)
    assert len(messages) == 1 and messages[0].startswith('spec.template.labels: Invalid value: "bad key"')


def test_progress_deadline_must_exceed_min_ready() -> None:
    assert errors_of(minReadySeconds=60, progressDeadlineSeconds=30) == [
        "spec.progressDeadlineSeconds: Invalid value: 30: must be greater than minReadySeconds"
    ]


def test_the_selector_is_immutable() -> None:
    old = stored(DEPLOYMENTS, deployment())
    new = copy.deepcopy(old)
    new["spec"]["selector"] = {"matchLabels": {"app": "web2"}}
    new["spec"]["template"]["metadata"]["labels"] = {"app": "web2"}
    assert update(DEPLOYMENTS, new, old)[1] == [
        'spec.selector: Invalid value: {"matchLabels":{"app":"web2"}}: field is immutable'
    ]


def test_generation_counts_spec_and_annotation_changes_only() -> None:
    old = stored(DEPLOYMENTS, deployment())
    scaled = copy.deepcopy(old)
    scaled["spec"]["replicas"] = 3
    assert update(DEPLOYMENTS, scaled, old)[0]["metadata"]["generation"] == 2
    labelled = copy.deepcopy(old)
    labelled["metadata"]["labels"] = {"team": "a"}
    assert update(DEPLOYMENTS, labelled, old)[0]["metadata"]["generation"] == 1
    annotated = copy.deepcopy(old)
    annotated["metadata"]["annotations"] = {"note": "x"}
    assert update(DEPLOYMENTS, annotated, old)[0]["metadata"]["generation"] == 2
    # A client that omits defaulted fields has not changed the spec.
    terse = copy.deepcopy(old)
    del terse["spec"]["revisionHistoryLimit"]
    del terse["spec"]["template"]["spec"]["dnsPolicy"]
    assert update(DEPLOYMENTS, terse, old)[0]["metadata"]["generation"] == 1


def test_status_is_written_only_through_status_and_validated() -> None:
    old = stored(DEPLOYMENTS, deployment())
    sneaky = copy.deepcopy(old)
    sneaky["status"] = {"replicas": 5}
    assert update(DEPLOYMENTS, sneaky, old)[0]["status"] == {}
    report = copy.deepcopy(old)
    report["spec"]["replicas"] = 9
    report["status"] = {"replicas": 1, "readyReplicas": 3, "availableReplicas": 1, "observedGeneration": 1}
    result, messages = status_update(DEPLOYMENTS, report, old)
    assert result["spec"] == old["spec"] and result["metadata"]["generation"] == 1
    assert messages == ["status.readyReplicas: Invalid value: 3: cannot be greater than status.replicas"]


def test_replicaset_defaults_and_rules() -> None:
    obj = stored(REPLICASETS, replicaset())
    assert obj["spec"]["replicas"] == 1 and "strategy" not in obj["spec"]
    assert create(REPLICASETS, replicaset(selector={}))[1] == [
        "spec.selector: Invalid value: {}: empty selector is invalid for deployment"
    ]
    annotated = copy.deepcopy(obj)
    annotated["metadata"]["annotations"] = {"note": "x"}
    assert update(REPLICASETS, annotated, obj)[0]["metadata"]["generation"] == 1
    moved = copy.deepcopy(obj)
    moved["spec"]["selector"] = {"matchLabels": {"app": "web", "v": "2"}}
    messages = update(REPLICASETS, moved, obj)[1]
    assert messages[-1].endswith("field is immutable") and messages[-1].startswith(
        "spec.selector: Invalid value:"
    )


def test_a_new_replicaset_starts_with_replicas_0_in_its_status() -> None:
    """``ReplicaSetStatus.Replicas`` has no omitempty: upstream writes ``"replicas": 0`` from the start."""
    made, problems = create(REPLICASETS, replicaset(replicas=2))
    assert problems == []
    assert made["status"] == {"replicas": 0}
