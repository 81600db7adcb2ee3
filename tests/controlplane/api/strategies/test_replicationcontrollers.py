"""ReplicationControllers and PodTemplates: ``SetDefaults_ReplicationController`` and
``TestValidateReplicationController`` / ``TestValidatePodTemplate`` of
``pkg/apis/core/validation/validation_test.go``."""

from __future__ import annotations

from typing import Any

from controlplane.api.strategies import PodTemplateStrategy, ReplicationControllerStrategy
from tests.controlplane.api.strategies import create, status_update, stored, update

RCS = ReplicationControllerStrategy()
TEMPLATES = PodTemplateStrategy()


def rc(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "replicas": 2,
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "nginx"}]},
        },
    }
    body.update(spec)
    return {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "web"}, "spec": body}


def test_selector_and_labels_default_from_the_template() -> None:
    obj = stored(RCS, rc(replicas=None))
    assert obj["spec"]["selector"] == {"app": "web"}
    assert obj["metadata"]["labels"] == {"app": "web"}
    assert obj["spec"]["replicas"] == 1
    assert obj["spec"]["template"]["spec"]["restartPolicy"] == "Always"
    assert obj["status"] == {"replicas": 0} and obj["metadata"]["generation"] == 1
    # Given ones are kept.
    kept = stored(RCS, {**rc(selector={"app": "web"}), "metadata": {"name": "web", "labels": {"team": "a"}}})
    assert kept["metadata"]["labels"] == {"team": "a"}


def test_the_selector_must_match_the_template() -> None:
    assert create(RCS, rc(selector={"app": "other"}))[1] == [
        'spec.template.metadata.labels: Invalid value: {"app":"web"}: '
        "`selector` does not match template `labels`"
    ]


def test_an_empty_selector_and_a_missing_template_are_required() -> None:
    no_labels = rc()
    no_labels["spec"]["template"]["metadata"] = {}
    assert create(RCS, no_labels)[1] == ["spec.selector: Required value"]
    assert create(RCS, rc(selector={"app": "web"}, template=None))[1] == ["spec.template: Required value"]


def test_template_rules() -> None:
    bad = rc(replicas=-1)
    bad["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    bad["spec"]["template"]["spec"]["activeDeadlineSeconds"] = 5
    assert create(RCS, bad)[1] == [
        "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
        'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"',
        "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in ReplicationController "
        "is not Supported",
    ]


def test_the_selector_may_change_and_the_generation_follows_the_spec() -> None:
    old = stored(RCS, rc())
    new = rc(selector={"app": "web"})
    new["spec"]["template"]["metadata"]["labels"] = {"app": "web", "v": "2"}
    updated, errors = update(RCS, new, old)
    assert errors == [] and updated["metadata"]["generation"] == 2
    relabelled, errors = update(RCS, {**old, "metadata": {**old["metadata"], "labels": {"x": "y"}}}, old)
    assert errors == [] and relabelled["metadata"]["generation"] == 1


def test_status_counts() -> None:
    old = stored(RCS, rc())
    new = {**old, "status": {"replicas": 1, "readyReplicas": 2, "availableReplicas": 3}}
    assert status_update(RCS, new, old)[1] == [
        "status.readyReplicas: Invalid value: 2: cannot be greater than status.replicas",
        "status.availableReplicas: Invalid value: 3: cannot be greater than status.replicas",
        "status.availableReplicas: Invalid value: 3: cannot be greater than readyReplicas",
    ]


def test_pod_template_is_validated_and_counts_generations() -> None:
    template = {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {"name": "base"},
        "template": {
            "metadata": {"labels": {"app": "x"}},
            "spec": {"containers": [{"name": "m", "image": "b"}]},
        },
    }
    obj = stored(TEMPLATES, template)
    assert obj["metadata"]["generation"] == 1
    assert obj["template"]["spec"]["dnsPolicy"] == "ClusterFirst"
    changed = {**obj, "template": {**obj["template"], "metadata": {"labels": {"app": "y"}}}}
    assert update(TEMPLATES, changed, obj)[0]["metadata"]["generation"] == 2
    no_containers = {**template, "template": {"spec": {"containers": []}}}
    assert create(TEMPLATES, no_containers)[1] == ["template.spec.containers: Required value"]
