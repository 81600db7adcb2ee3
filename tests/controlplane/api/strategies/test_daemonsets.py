"""DaemonSets and ControllerRevisions: ``SetDefaults_DaemonSet`` (``pkg/apis/apps/v1/defaults.go``),
``ValidateDaemonSet*`` and ``ValidateControllerRevision*`` (``pkg/apis/apps/validation/validation.go``)
and the template generation of ``pkg/registry/apps/daemonset/strategy.go``."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.api.strategies import ControllerRevisionStrategy, DaemonSetStrategy
from tests.controlplane.api.strategies import create, status_update, stored, update

DAEMONSETS = DaemonSetStrategy()
REVISIONS = ControllerRevisionStrategy()
GENERATION = "deprecated.daemonset.template.generation"


def daemon_set(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "selector": {"matchLabels": {"app": "agent"}},
        "template": {
            "metadata": {"labels": {"app": "agent"}},
            "spec": {"containers": [{"name": "agent", "image": "fluentd"}]},
        },
    }
    body.update(spec)
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"}, "spec": body}


def errors(**spec: Any) -> list[str]:
    return create(DAEMONSETS, daemon_set(**spec))[1]


def test_defaults_status_and_template_generation() -> None:
    obj = stored(DAEMONSETS, daemon_set())
    assert obj["spec"]["updateStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0},
    }
    assert obj["spec"]["revisionHistoryLimit"] == 10
    assert obj["spec"]["template"]["spec"]["restartPolicy"] == "Always"
    assert obj["spec"]["template"]["spec"]["dnsPolicy"] == "ClusterFirst"
    assert obj["metadata"]["generation"] == 1
    assert obj["metadata"]["annotations"] == {GENERATION: "1"}
    assert obj["status"] == {
        "currentNumberScheduled": 0,
        "numberMisscheduled": 0,
        "desiredNumberScheduled": 0,
        "numberReady": 0,
    }
    on_delete = stored(DAEMONSETS, daemon_set(updateStrategy={"type": "OnDelete"}))
    assert on_delete["spec"]["updateStrategy"] == {"type": "OnDelete"}


def test_the_template_generation_counts_template_changes_only() -> None:
    old = stored(DAEMONSETS, daemon_set())
    new = daemon_set(minReadySeconds=5)
    new["metadata"]["annotations"] = {GENERATION: "7"}  # a client cannot set it
    changed, problems = update(DAEMONSETS, new, old)
    assert problems == []
    assert changed["metadata"]["generation"] == 2
    assert changed["metadata"]["annotations"][GENERATION] == "1"
    image = daemon_set(minReadySeconds=5)
    image["spec"]["template"]["spec"]["containers"][0]["image"] = "fluentd:2"
    rolled, problems = update(DAEMONSETS, image, changed)
    assert problems == []
    assert (rolled["metadata"]["generation"], rolled["metadata"]["annotations"][GENERATION]) == (3, "2")
    # Labels only: neither generation moves.
    relabeled = dict(rolled, metadata={**rolled["metadata"], "labels": {"team": "ops"}})
    same, _ = update(DAEMONSETS, relabeled, rolled)
    assert (same["metadata"]["generation"], same["metadata"]["annotations"][GENERATION]) == (3, "2")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"selector": {"matchLabels": {"app": "other"}}},
            'spec.template.metadata.labels: Invalid value: {"app":"agent"}: '
            "`selector` does not match template `labels`",
        ),
        (
            {"selector": {}},
            "spec.selector: Invalid value: {}: empty selector is invalid for daemonset",
        ),
        (
            {"minReadySeconds": -1},
            "spec.minReadySeconds: Invalid value: -1: must be greater than or equal to 0",
        ),
        (
            {"revisionHistoryLimit": -1},
            "spec.revisionHistoryLimit: Invalid value: -1: must be greater than or equal to 0",
        ),
        (
            {"updateStrategy": {"type": "Sometimes"}},
            'spec.updateStrategy: Unsupported value: {"Type":"Sometimes","RollingUpdate":null}: '
            'supported values: "RollingUpdate", "OnDelete"',
        ),
        (
            {"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0}}},
            "spec.updateStrategy.rollingUpdate.maxUnavailable: Required value: "
            "cannot be 0 when maxSurge is 0",
        ),
        (
            {
                "updateStrategy": {
                    "type": "RollingUpdate",
                    "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 1},
                }
            },
            "spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: 1: "
            "may not be set when maxUnavailable is non-zero",
        ),
        (
            {"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "120%"}}},
            "spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: 120%: "
            "must not be greater than 100%",
        ),
    ],
)
def test_spec_validation_messages(spec: dict[str, Any], message: str) -> None:
    assert message in errors(**spec)


def test_template_rules_as_for_deployments() -> None:
    ds = daemon_set()
    ds["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    ds["spec"]["template"]["spec"]["activeDeadlineSeconds"] = 10
    problems = create(DAEMONSETS, ds)[1]
    assert (
        'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"' in problems
    )
    assert (
        "spec.template.spec.activeDeadlineSeconds: Forbidden: "
        "activeDeadlineSeconds in DaemonSet is not Supported" in problems
    )
    surge = stored(
        DAEMONSETS,
        daemon_set(
            updateStrategy={
                "type": "RollingUpdate",
                "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "10%"},
            }
        ),
    )
    assert surge["spec"]["updateStrategy"]["rollingUpdate"] == {"maxUnavailable": 0, "maxSurge": "10%"}


def test_the_selector_is_immutable() -> None:
    old = stored(DAEMONSETS, daemon_set())
    new = daemon_set(selector={"matchLabels": {"app": "agent", "tier": "node"}})
    new["spec"]["template"]["metadata"]["labels"]["tier"] = "node"
    _, problems = update(DAEMONSETS, new, old)
    assert problems == [
        'spec.selector: Invalid value: {"matchLabels":{"app":"agent","tier":"node"}}: field is immutable'
    ]


def test_status_writes_keep_the_spec_and_refuse_negative_counts() -> None:
    old = stored(DAEMONSETS, daemon_set())
    new = dict(old, status={"desiredNumberScheduled": -1, "numberReady": 0}, spec={})
    written, problems = status_update(DAEMONSETS, new, old)
    assert written["spec"] == old["spec"]
    assert "status.desiredNumberScheduled: Invalid value: -1: must be greater than or equal to 0" in problems
    counted = dict(old, status={**old["status"], "collisionCount": 2})
    counted, _ = status_update(DAEMONSETS, counted, old)
    _, problems = status_update(
        DAEMONSETS, dict(counted, status={**counted["status"], "collisionCount": 1}), counted
    )
    assert problems == ["status.collisionCount: Invalid value: 1: cannot be decremented"]


def revision(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": {"name": "agent-1"}, **fields}


def test_controller_revisions_need_data_and_keep_it() -> None:
    assert create(REVISIONS, revision(revision=1))[1] == ["data: Required value: data is mandatory"]
    assert create(REVISIONS, revision(data={}, revision=-1))[1] == [
        "revision: Invalid value: -1: must be greater than or equal to 0"
    ]
    old = stored(REVISIONS, revision(data={"spec": {"template": {"$patch": "replace"}}}, revision=1))
    renumbered, problems = update(REVISIONS, dict(old, revision=3), old)
    assert problems == [] and renumbered["revision"] == 3
    _, problems = update(REVISIONS, dict(old, data={"spec": {}}), old)
    assert problems == ['data: Invalid value: {"spec":{}}: field is immutable']
