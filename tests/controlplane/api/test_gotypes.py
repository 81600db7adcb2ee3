"""Go's decoder refuses a value of the wrong type for its field: the check and its messages."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.api.gotypes import (
    conversion_error,
    go_format_float,
    go_json,
    go_json_number,
    go_json_string,
    go_parse_bool,
    go_quote,
    go_sprint,
    go_type,
    type_error,
)
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


# -- FromUnstructured: what a strategic merge patch's result goes through ------------------------------

DEPLOYMENT_SPEC_CONVERSIONS = [
    # (spec, error) as apimachinery pkg/runtime/converter.go's fromUnstructured words it
    ({"replicas": "x"}, "unrecognized type: int32"),  # string for int32: not convertible
    ({"replicas": True}, "unrecognized type: int32"),
    ({"replicas": {"a": 1}}, "unrecognized type: int32"),
    ({"replicas": 1.5}, "cannot convert float64 to int32"),  # convertible, but not integral
    ({"paused": 1}, "unrecognized type: bool"),  # number for bool
    ({"paused": "yes"}, "unrecognized type: bool"),
    ({"template": "x"}, "cannot restore struct from: string"),
    ({"template": [1]}, "cannot restore struct from: slice"),
    ({"template": 5}, "cannot restore struct from: int64"),
    ({"template": 5.5}, "cannot restore struct from: float64"),
    ({"selector": {"matchLabels": [1]}}, "cannot restore map from slice"),  # list for map
    ({"selector": {"matchLabels": "a=b"}}, "cannot restore map from string"),
    ({"selector": {"matchLabels": {"a": 1}}}, "cannot convert int64 to string"),  # Go converts ints to runes
    ({"selector": {"matchLabels": {"a": 1.5}}}, "unrecognized type: string"),
    ({"selector": {"matchLabels": {"a": {}}}}, "unrecognized type: string"),  # object for string
    ({"selector": {"matchLabels": {"a": False}}}, "unrecognized type: string"),
    ({"template": {"spec": {"containers": {"name": "c"}}}}, "cannot restore slice from map"),
    ({"template": {"spec": {"containers": "c"}}}, "cannot restore slice from string"),
    # types with their own UnmarshalJSON get the value as JSON, and answer as they do
    (
        {"strategy": {"rollingUpdate": {"maxSurge": True}}},
        "json: cannot unmarshal bool into Go value of type int32",
    ),
    (
        {"strategy": {"rollingUpdate": {"maxSurge": [1]}}},
        "json: cannot unmarshal array into Go value of type int32",
    ),
    (
        {"strategy": {"rollingUpdate": {"maxSurge": 1.5}}},
        "json: cannot unmarshal number 1.5 into Go value of type int32",
    ),
    (
        {"template": {"metadata": {"creationTimestamp": 5}}},
        "json: cannot unmarshal number into Go value of type string",
    ),
]


@pytest.mark.parametrize(("spec", "message"), DEPLOYMENT_SPEC_CONVERSIONS)
def test_a_conversion_error_is_worded_as_the_unstructured_converter_words_it(
    spec: dict[str, Any], message: str
) -> None:
    assert conversion_error({"spec": spec}, DEPLOYMENT) == message


def test_a_conversion_accepts_what_json_would_and_converts_integers_as_go_does() -> None:
    obj: dict[str, Any] = {
        "spec": {
            "replicas": 2**32 + 2,  # reflect.Value.Convert wraps: no range check
            "revisionHistoryLimit": 3.0,
            "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1.0}},
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": 0.5}}}]}},
        },
        "unknownField": [1],
    }
    assert conversion_error(obj, DEPLOYMENT) is None
    assert obj["spec"]["replicas"] == 2
    assert type(obj["spec"]["revisionHistoryLimit"]) is int
    assert obj["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 1
    negative: dict[str, Any] = {"spec": {"replicas": -(2**31) - 1}}
    assert conversion_error(negative, DEPLOYMENT) is None
    assert negative["spec"]["replicas"] == 2**31 - 1


def test_quantities_convert_as_their_unmarshaler_reads_them() -> None:
    bad = pod(containers=[{"name": "c", "image": "i", "resources": {"limits": {"cpu": "lots"}}}])
    assert (conversion_error(bad, POD) or "").startswith("quantities must match the regular expression")


# -- Go's text forms ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "printed"),
    [
        # strconv.FormatFloat(f, 'g', -1, 64), as fmt's %v prints a float64 (strconv/ftoa_test.go's
        # shortest %g cases)
        (1.0, "1"),
        (2.5, "2.5"),
        (-1.5, "-1.5"),
        (0.0, "0"),
        (-0.0, "-0"),
        (100000.0, "100000"),
        (1e6, "1e+06"),
        (123456789.0, "1.23456789e+08"),
        (1e23, "1e+23"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (1.5e-7, "1.5e-07"),
        (3.14159, "3.14159"),
        (float("inf"), "+Inf"),
        (float("-inf"), "-Inf"),
        (float("nan"), "NaN"),
    ],
)
def test_floats_print_as_fmt_prints_them(value: float, printed: str) -> None:
    assert go_format_float(value) == printed


@pytest.mark.parametrize(
    ("value", "written"),
    [
        (2.0, "2"),
        (0.5, "0.5"),
        (1e6, "1000000"),
        (1e21, "1e+21"),
        (1e-7, "1e-7"),
        (1.5e-7, "1.5e-7"),
        (7, "7"),
    ],
)
def test_numbers_are_written_as_gos_json_encoder_writes_them(value: float, written: str) -> None:
    assert go_json_number(value) == written


def test_maps_print_as_fmt_plus_v_prints_them() -> None:
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "router",
                            "readinessProbe": {"timeoutSeconds": "abc"},
                            "livenessProbe": {"timeoutSeconds": "abc"},
                        }
                    ]
                }
            }
        }
    }
    # openshift/origin test/extended/router: the Invalid value of such a strategic merge patch
    assert go_sprint(patch) == (
        "map[spec:map[template:map[spec:map[containers:[map[livenessProbe:map[timeoutSeconds:abc] "
        "name:router readinessProbe:map[timeoutSeconds:abc]]]]]]]"
    )
    assert go_sprint({"b": [1, 2.5, 1e6, None, True, "x y"], "a": {}, "c": []}) == (
        "map[a:map[] b:[1 2.5 1e+06 <nil> true x y] c:[]]"
    )
    assert go_sprint({"big": 2**70}) == "map[big:1.1805916207174113e+21]"  # beyond int64: a float64


def test_strings_are_quoted_as_strconv_quote_does() -> None:
    assert go_quote('map[a:"b\\c"]') == '"map[a:\\"b\\\\c\\"]"'
    assert go_quote("é\n\t\x01\x7f\u200b\U000e0001 <&>") == '"é\\n\\t\\x01\\x7f\\u200b\\U000e0001 <&>"'


def test_json_strings_are_written_html_safe_as_go_writes_them() -> None:
    assert go_json_string('<a href="x">&\u2028é\b\f\x01') == (
        '"\\u003ca href=\\"x\\"\\u003e\\u0026\\u2028é\\b\\f\\u0001"'
    )
    assert go_json({"b": [1, 2.5, None, True], "a": {"y": "<", "x": 1}}) == (
        '{"b":[1,2.5,null,true],"a":{"y":"\\u003c","x":1}}'
    )
    assert go_json({"b": 1, "a": {"y": 1, "x": 2}}, sort_keys=True) == '{"a":{"x":2,"y":1},"b":1}'


def test_parse_bool_knows_gos_twelve_spellings_and_nothing_else() -> None:
    assert [go_parse_bool(t) for t in ("1", "t", "T", "TRUE", "true", "True")] == [True] * 6
    assert [go_parse_bool(t) for t in ("0", "f", "F", "FALSE", "false", "False")] == [False] * 6
    assert [go_parse_bool(t) for t in ("", "yes", "tRue", " true")] == [None] * 4
