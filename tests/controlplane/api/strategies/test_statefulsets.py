"""StatefulSets: ``SetDefaults_StatefulSet`` (``pkg/apis/apps/v1/defaults.go``) and
``ValidateStatefulSet*`` (``pkg/apis/apps/validation/validation.go``)."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.api.strategies import StatefulSetStrategy
from tests.controlplane.api.strategies import create, status_update, stored, update

STATEFULSETS = StatefulSetStrategy()


def stateful_set(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "serviceName": "web",
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "nginx"}]},
        },
    }
    body.update(spec)
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "web"}, "spec": body}


def test_defaults() -> None:
    obj = stored(STATEFULSETS, stateful_set())
    spec = obj["spec"]
    assert spec["replicas"] == 1 and spec["revisionHistoryLimit"] == 10
    assert spec["podManagementPolicy"] == "OrderedReady"
    assert spec["updateStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"partition": 0, "maxUnavailable": 1},
    }
    assert spec["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Retain", "whenScaled": "Retain"}
    assert spec["template"]["spec"]["restartPolicy"] == "Always"
    assert obj["status"] == {"replicas": 0, "availableReplicas": 0}
    assert obj["metadata"]["generation"] == 1
    on_delete = stored(STATEFULSETS, stateful_set(updateStrategy={"type": "OnDelete"}))
    assert on_delete["spec"]["updateStrategy"] == {"type": "OnDelete"}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"selector": {"matchLabels": {"app": "other"}}},
            'spec.template.metadata.labels: Invalid value: {"app":"web"}: '
            "`selector` does not match template `labels`",
        ),
        ({"selector": {}}, "spec.selector: Invalid value: {}: empty selector is invalid for statefulset"),
        ({"replicas": -1}, "spec.replicas: Invalid value: -1: must be greater than or equal to 0"),
        (
            {"podManagementPolicy": "Random"},
            "spec.podManagementPolicy: Invalid value: \"Random\": must be 'OrderedReady' or 'Parallel'",
        ),
        (
            {"updateStrategy": {"type": "Sometimes"}},
            'spec.updateStrategy: Invalid value: {"Type":"Sometimes","RollingUpdate":null}: '
            "must be 'RollingUpdate' or 'OnDelete'",
        ),
        (
            {"updateStrategy": {"type": "OnDelete", "rollingUpdate": {"partition": 1}}},
            'spec.updateStrategy.rollingUpdate: Invalid value: {"Partition":1,"MaxUnavailable":null}: '
            "only allowed for updateStrategy 'RollingUpdate'",
        ),
        (
            {"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": -1}}},
            "spec.updateStrategy.rollingUpdate.partition: Invalid value: -1: "
            "must be greater than or equal to 0",
        ),
        (
            {"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0}}},
            "spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: 0: cannot be 0",
        ),
    ],
)
def test_spec_validation_messages(spec: dict[str, Any], message: str) -> None:
    assert message in create(STATEFULSETS, stateful_set(**spec))[1]


def test_the_template_rules() -> None:
    sts = stateful_set()
    sts["spec"]["template"]["spec"]["restartPolicy"] = "OnFailure"
    sts["spec"]["template"]["spec"]["activeDeadlineSeconds"] = 5
    problems = create(STATEFULSETS, sts)[1]
    assert (
        'spec.template.spec.restartPolicy: Unsupported value: "OnFailure": supported values: "Always"'
        in problems
    )
    assert (
        "spec.template.spec.activeDeadlineSeconds: Forbidden: "
        "activeDeadlineSeconds in StatefulSet is not Supported" in problems
    )


def test_only_some_fields_may_change() -> None:
    old = stored(STATEFULSETS, stateful_set(replicas=2))
    scaled, problems = update(STATEFULSETS, stateful_set(replicas=5, minReadySeconds=3), old)
    assert problems == [] and scaled["metadata"]["generation"] == 2
    _, problems = update(STATEFULSETS, stateful_set(replicas=2, serviceName="other"), old)
    assert problems == [
        "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', "
        "'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and "
        "'minReadySeconds' are forbidden"
    ]


def test_status_counts_are_checked() -> None:
    old = stored(STATEFULSETS, stateful_set())
    new = dict(old, status={"replicas": 1, "readyReplicas": 2, "availableReplicas": 0})
    _, problems = status_update(STATEFULSETS, new, old)
    assert problems == ["status.readyReplicas: Invalid value: 2: cannot be greater than status.replicas"]
    new = dict(old, status={"replicas": 2, "readyReplicas": 1, "availableReplicas": 2})
    _, problems = status_update(STATEFULSETS, new, old)
    assert problems == [
        "status.availableReplicas: Invalid value: 2: cannot be greater than status.readyReplicas"
    ]


def test_volume_mounts_may_name_claim_templates_and_names_are_dns_labels() -> None:
    sts = stateful_set(
        volumeClaimTemplates=[{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"]}}]
    )
    sts["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] = [
        {"name": "data", "mountPath": "/data"}
    ]
    assert create(STATEFULSETS, sts)[1] == []
    dotted = stateful_set()
    dotted["metadata"]["name"] = "web.v1"
    [problem] = create(STATEFULSETS, dotted)[1]
    assert problem.startswith('metadata.name: Invalid value: "web.v1": a lowercase RFC 1123 label')
