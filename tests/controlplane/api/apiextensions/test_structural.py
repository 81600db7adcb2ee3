"""Structural schemas: the rules a CRD's schema must follow, and validation, pruning and defaulting of
custom objects against it (cases after upstream's pkg/apiserver/schema and validation tests)."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.api.apiextensions import structural

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["image"],
            "properties": {
                "cronSpec": {"type": "string", "pattern": r"^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$"},
                "image": {"type": "string", "maxLength": 20, "minLength": 1},
                "replicas": {"type": "integer", "minimum": 1, "maximum": 10, "default": 1},
                "mode": {"type": "string", "enum": ["a", "b"]},
                "port": {"x-kubernetes-int-or-string": True},
                "tags": {"type": "array", "maxItems": 2, "items": {"type": "string"}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "template": {"type": "object", "x-kubernetes-embedded-resource": True, "properties": {}},
                "containers": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string"},
                            "pull": {"type": "string", "default": "Always"},
                        },
                    },
                },
            },
        },
        "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
    },
}


def messages(obj: dict[str, Any]) -> list[str]:
    return [e.message() for e in structural.validate(obj, SCHEMA)]


def obj(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "x.example.com/v1",
        "kind": "X",
        "metadata": {"name": "a"},
        "spec": {"image": "i", **spec},
    }


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"replicas": 15},
         "spec.replicas: Invalid value: 15: spec.replicas in body should be less than or equal to 10"),
        ({"replicas": 0},
         "spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1"),
        ({"replicas": "3"},
         'spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"'),
        ({"mode": "c"}, 'spec.mode: Unsupported value: "c": supported values: "a", "b"'),
        ({"image": "x" * 21}, "spec.image: Too long: may not be more than 20 bytes"),
        ({"image": ""}, 'spec.image: Invalid value: "": spec.image in body should be at least 1 chars long'),
        ({"cronSpec": "soon"}, "spec.cronSpec: Invalid value: \"soon\": spec.cronSpec in body should match "
         "'^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$'"),
        ({"tags": ["a", "b", "c"]}, "spec.tags: Too many: 3: must have at most 2 items"),
        ({"tags": ["a", 1]},
         'spec.tags[1]: Invalid value: "integer": spec.tags[1] in body must be of type string: "integer"'),
        ({"labels": {"a": 1}},
         'spec.labels.a: Invalid value: "integer": spec.labels.a in body must be of type string: "integer"'),
        ({"port": True},
         'spec.port: Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean"'),
    ],
)  # fmt: skip
def test_validation_messages_are_upstreams(spec: dict[str, Any], expected: str) -> None:
    assert messages(obj(**spec)) == [expected]


def test_valid_objects_pass() -> None:
    good = obj(replicas=3.0, port="http", cronSpec="* * * * */5", free={"any": {"thing": 1}}, tags=["a"])
    assert messages(good) == []
    assert messages(obj(port=8080)) == []


def test_required_fields() -> None:
    assert messages({"spec": {}}) == ["spec.image: Required value"]


def test_pruning_drops_unknown_fields_but_keeps_preserved_and_embedded_ones() -> None:
    value = obj(
        color="blue",
        free={"anything": {"goes": True}},
        template={"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"x": 1}},
        labels={"k": "v"},
        containers=[{"name": "c", "extra": 1}],
    )
    value["extra"] = 1
    dropped = structural.prune(value, SCHEMA)
    assert dropped == ["extra", "spec.color", "spec.containers[0].extra", "spec.template.spec"]
    assert value["spec"]["free"] == {"anything": {"goes": True}}
    assert value["spec"]["template"] == {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}
    assert value["spec"]["labels"] == {"k": "v"}
    assert value["metadata"] == {"name": "a"}


def test_defaulting_fills_missing_properties_where_the_parent_exists() -> None:
    value = obj(containers=[{"name": "c"}, {"name": "d", "pull": "Never"}])
    structural.default(value, SCHEMA)
    assert value["spec"]["replicas"] == 1
    assert [c["pull"] for c in value["spec"]["containers"]] == ["Always", "Never"]
    no_spec: dict[str, Any] = {"metadata": {}}
    structural.default(no_spec, SCHEMA)
    assert no_spec == {"metadata": {}}  # no spec: nothing inside it is defaulted


PATH = "spec.versions[0].schema.openAPIV3Schema"


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        (None, [f"{PATH}: Required value: schemas are required"]),
        ({"properties": {}}, [f"{PATH}.type: Required value: must not be empty at the root"]),
        ({"type": "string"}, [f'{PATH}.type: Invalid value: "string": must be object at the root']),
        (
            {"type": "object", "properties": {"spec": {"properties": {}}}},
            [f"{PATH}.properties[spec].type: Required value: must not be empty for specified object fields"],
        ),
        (
            {"type": "object", "properties": {"l": {"type": "array", "items": {}}}},
            [f"{PATH}.properties[l].items.type: Required value: must not be empty for specified array items"],
        ),
        (
            {"type": "object", "properties": {"p": {"type": "string", "x-kubernetes-int-or-string": True}}},
            [
                f'{PATH}.properties[p].type: Invalid value: "string": '
                "must be empty if x-kubernetes-int-or-string is true"
            ],
        ),
        (
            {"type": "object", "properties": {"r": {"$ref": "#/definitions/x"}}},
            [
                f"{PATH}.properties[r].$ref: Forbidden: $ref is not supported",
                f"{PATH}.properties[r].type: Required value: must not be empty for specified object fields",
            ],
        ),
        (
            {
                "type": "object",
                "properties": {
                    "m": {"type": "object", "properties": {}, "additionalProperties": {"type": "string"}}
                },
            },
            [
                f"{PATH}.properties[m].additionalProperties: Forbidden: "
                "additionalProperties and properties are mutual exclusive"
            ],
        ),
        ({"type": "object", "x-kubernetes-preserve-unknown-fields": True}, []),
        ({"type": "object", "properties": {"p": {"x-kubernetes-int-or-string": True}}}, []),
    ],
)  # fmt: skip
def test_structural_schema_rules(schema: Any, expected: list[str]) -> None:
    assert [e.message() for e in structural.validate_schema(schema, PATH)] == expected
