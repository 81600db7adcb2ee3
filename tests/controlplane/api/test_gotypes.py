"""Go's decoder refuses a value of the wrong type for its field: the check and its messages."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.api.gotypes import go_type, type_error
from controlplane.api.schema import definition

DEPLOYMENT = "io.k8s.api.apps.v1.Deployment"
POD = "io.k8s.api.core.v1.Pod"
CONFIGMAP = "io.k8s.api.core.v1.ConfigMap"


def pod(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}], **spec}}


@pytest.mark.parametrize(
    ("kind", "obj", "message"),
    [
        (
            DEPLOYMENT,
            {"spec": {"replicas": "x"}},
            "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32",
        ),
        (
            DEPLOYMENT,
            {"spec": {"replicas": 2**70}},
            "json: cannot unmarshal number 1180591620717411303424 into Go struct field "
            "DeploymentSpec.spec.replicas of type int32",
        ),
        (
            DEPLOYMENT,
            {"spec": {"replicas": 1.5}},
            "json: cannot unmarshal number 1.5 into Go struct field DeploymentSpec.spec.replicas "
            "of type int32",
        ),
        (
            DEPLOYMENT,
            {"spec": 5},
            "json: cannot unmarshal number into Go struct field Deployment.spec of type v1.DeploymentSpec",
        ),
        (
            POD,
            {"metadata": {"name": 5}},
            "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.name of type string",
        ),
        (
            POD,
            {"spec": {"containers": {}}},
            "json: cannot unmarshal object into Go struct field PodSpec.spec.containers "
            "of type []v1.Container",
        ),
        (
            POD,
            pod(containers=[{"name": "c", "image": True}]),
            "json: cannot unmarshal bool into Go struct field Container.spec.containers.image of type string",
        ),
        (
            POD,
            pod(hostNetwork="yes"),
            "json: cannot unmarshal string into Go struct field PodSpec.spec.hostNetwork of type bool",
        ),
        (
            CONFIGMAP,
            {"data": {"a": 1}},
            "json: cannot unmarshal number into Go struct field ConfigMap.data of type string",
        ),
        (
            CONFIGMAP,
            {"data": []},
            "json: cannot unmarshal array into Go struct field ConfigMap.data of type map[string]string",
        ),
        (
            "io.k8s.api.core.v1.Service",
            {"spec": {"ports": [{"port": 80, "targetPort": []}]}},
            "json: cannot unmarshal array into Go struct field ServicePort.spec.ports.targetPort "
            "of type int32",
        ),
        (
            "io.k8s.api.coordination.v1.Lease",
            {"spec": {"renewTime": 5}},
            "json: cannot unmarshal number into Go struct field LeaseSpec.spec.renewTime of type string",
        ),
    ],
)
def test_a_value_of_the_wrong_type_gets_gos_message(kind: str, obj: dict[str, Any], message: str) -> None:
    assert type_error(obj, kind) == message


def test_the_first_mismatch_in_document_order_is_the_one_reported() -> None:
    obj = {"metadata": {"labels": {"a": 1}}, "spec": {"replicas": "x"}}
    assert "metadata.labels" in (type_error(obj, DEPLOYMENT) or "")


def test_well_typed_objects_nulls_and_unknown_fields_pass() -> None:
    obj = pod(
        nodeSelector=None,
        containers=[
            {
                "name": "c",
                "image": "i",
                "ports": [{"containerPort": 80}],
                "resources": {"limits": {"cpu": 0.5}},
            }
        ],
        unknownField=[1, 2],
    )
    obj["metadata"]["creationTimestamp"] = "2024-01-01T00:00:00Z"
    assert type_error(obj, POD) is None
    service = {"spec": {"ports": [{"port": 80, "targetPort": "http"}, {"port": 81, "targetPort": 8081}]}}
    assert type_error(service, "io.k8s.api.core.v1.Service") is None


def test_an_integral_float_is_taken_for_an_integer_and_stored_as_one() -> None:
    obj: dict[str, Any] = {"spec": {"replicas": 3.0}}
    assert type_error(obj, DEPLOYMENT) is None
    assert obj["spec"]["replicas"] == 3 and isinstance(obj["spec"]["replicas"], int)


def test_quantities_and_times_are_checked_as_their_unmarshalers_do() -> None:
    bad_quantity = pod(containers=[{"name": "c", "image": "i", "resources": {"limits": {"cpu": "lots"}}}])
    assert (type_error(bad_quantity, POD) or "").startswith("quantities must match the regular expression")
    bad_time = {"metadata": {"creationTimestamp": "yesterday"}}
    assert (type_error(bad_time, POD) or "").startswith(
        'parsing time "yesterday" as "2006-01-02T15:04:05Z07:00"'
    )


def test_go_type_names() -> None:
    spec = definition("io.k8s.api.core.v1.PodSpec")["properties"]
    assert go_type(spec["containers"]) == "[]v1.Container"
    assert go_type(spec["nodeSelector"]) == "map[string]string"
    assert go_type(spec["activeDeadlineSeconds"]) == "int64"
    assert go_type(spec["securityContext"]) == "v1.PodSecurityContext"


def test_map_values_and_list_items_name_their_field_not_their_key_or_index() -> None:
    assert type_error({"data": {"a": "x", "b": 1}}, CONFIGMAP) == (
        "json: cannot unmarshal number into Go struct field ConfigMap.data of type string"
    )
    groups: dict[str, Any] = pod(securityContext={"supplementalGroups": [1.0, 2, "three"]})
    assert type_error(groups, POD) == (
        "json: cannot unmarshal string into Go struct field "
        "PodSecurityContext.spec.securityContext.supplementalGroups of type int64"
    )
    assert groups["spec"]["securityContext"]["supplementalGroups"][:2] == [1, 2]
    assert type(groups["spec"]["securityContext"]["supplementalGroups"][0]) is int


def test_times_are_stored_as_their_marshalers_write_them_in_utc() -> None:
    # What Kopf posts: Python's isoformat(), microseconds and a +00:00 offset, in every time field.
    stamp = "2026-12-02T14:25:45.634164+01:00"
    event: dict[str, Any] = {
        "metadata": {"name": "e", "creationTimestamp": "2026-12-02T13:25:45Z"},
        "involvedObject": {"kind": "Greeting", "name": "hello"},
        "firstTimestamp": stamp,
        "lastTimestamp": "2026-12-02T13:25:45.1Z",
        "eventTime": stamp,
        "series": {"count": 2, "lastObservedTime": "2026-12-02T13:25:46Z"},
    }
    assert type_error(event, "io.k8s.api.core.v1.Event") is None
    assert event["firstTimestamp"] == "2026-12-02T13:25:45Z"  # metav1.Time: whole seconds
    assert event["lastTimestamp"] == "2026-12-02T13:25:45Z"
    assert event["eventTime"] == "2026-12-02T13:25:45.634164Z"  # MicroTime: six digits
    assert event["series"]["lastObservedTime"] == "2026-12-02T13:25:46.000000Z"
    assert event["metadata"]["creationTimestamp"] == "2026-12-02T13:25:45Z"
