"""Upstream's schemas as data: the definitions load, and patch metadata reads as upstream's struct tags.

The expected strategies and merge keys are the Go struct tags in kubernetes/api (``core/v1/types.go``:
``Containers []Container `patchStrategy:"merge" patchMergeKey:"name"```, ``Tolerations`` without
one; ``apps/v1/types.go``: ``Strategy DeploymentStrategy `patchStrategy:"retainKeys"```).
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from controlplane.api import schema

POD_SPEC = "io.k8s.api.core.v1.PodSpec"


def test_the_definitions_file_is_upstreams_1_37_with_its_862_definitions() -> None:
    assert schema.KUBERNETES_VERSION == "1.37.0"
    assert len(schema.definitions()) == 862
    assert "containers" in schema.definition(POD_SPEC)["properties"]


def test_the_file_is_parsed_once_and_shared() -> None:
    assert schema.definitions() is schema.definitions()
    assert schema.definition(POD_SPEC) is schema.definitions()[POD_SPEC]


def test_definitions_are_read_only_at_the_top() -> None:
    with pytest.raises(TypeError):
        schema.definitions()["x"] = {}  # type: ignore[index]


def test_an_unknown_definition_is_a_key_error_naming_it() -> None:
    with pytest.raises(KeyError, match=re.escape("io.k8s.api.core.v1.Nope")):
        schema.definition("io.k8s.api.core.v1.Nope")


@pytest.mark.parametrize(
    ("group", "version", "kind", "expected"),
    [
        ("", "v1", "Pod", "io.k8s.api.core.v1.Pod"),
        ("apps", "v1", "Deployment", "io.k8s.api.apps.v1.Deployment"),
        ("rbac.authorization.k8s.io", "v1", "ClusterRole", "io.k8s.api.rbac.v1.ClusterRole"),
        ("coordination.k8s.io", "v1", "Lease", "io.k8s.api.coordination.v1.Lease"),
        (
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
        ),
    ],
)
def test_a_kind_finds_its_definition_through_x_kubernetes_group_version_kind(
    group: str, version: str, kind: str, expected: str
) -> None:
    assert schema.definition_for_kind(group, version, kind) == expected


@pytest.mark.parametrize(
    ("group", "version", "kind"),
    [
        ("", "v1", "Widget"),
        ("apps", "v1beta9", "Deployment"),
        ("", "v1", "deployment"),
        ("stable.example.com", "v1", "CronTab"),
    ],
)
def test_an_unknown_kind_has_no_definition(group: str, version: str, kind: str) -> None:
    assert schema.definition_for_kind(group, version, kind) is None


def test_resolve_follows_ref_and_leaves_other_schemas_alone() -> None:
    spec = schema.definition("io.k8s.api.apps.v1.Deployment")["properties"]["spec"]
    assert "$ref" in spec
    assert schema.resolve(spec) is schema.definition("io.k8s.api.apps.v1.DeploymentSpec")
    plain = {"type": "string"}
    assert schema.resolve(plain) is plain


def test_a_property_named_dollar_ref_is_not_a_reference() -> None:
    # JSONSchemaProps (CRD validation schemas) has a field called "$ref"; its value is a schema.
    props = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps"
    ref_field = schema.field(props, "$ref")
    assert ref_field is not None
    assert ref_field.type_name is None
    assert schema.json_types(ref_field.type()) == {"string"}


def test_containers_merge_by_name() -> None:
    containers = schema.field(POD_SPEC, "containers")
    assert containers is not None
    assert containers.patch_strategy == "merge"
    assert containers.patch_strategies == ("merge",)
    assert containers.patch_merge_key == "name"
    assert containers.list_type == "map"
    assert containers.list_map_keys == ("name",)
    assert containers.is_list
    items = containers.items()
    assert items is schema.definition("io.k8s.api.core.v1.Container")


def test_container_ports_merge_by_container_port_but_are_keyed_by_port_and_protocol_for_apply() -> None:
    ports = schema.field("io.k8s.api.core.v1.Container", "ports")
    assert ports is not None
    assert (ports.patch_strategy, ports.patch_merge_key) == ("merge", "containerPort")
    assert ports.list_map_keys == ("containerPort", "protocol")


def test_tolerations_have_no_merge_key_so_a_patch_replaces_them() -> None:
    tolerations = schema.field(POD_SPEC, "tolerations")
    assert tolerations is not None
    assert tolerations.patch_strategy is None
    assert tolerations.patch_strategies == ()
    assert tolerations.patch_merge_key is None
    assert tolerations.list_type == "atomic"


def test_finalizers_merge_as_a_set_of_strings_without_a_key() -> None:
    finalizers = schema.field("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "finalizers")
    assert finalizers is not None
    assert finalizers.patch_strategies == ("merge",)
    assert finalizers.patch_merge_key is None
    assert finalizers.list_type == "set"
    assert schema.json_types(finalizers.items() or {}) == {"string"}


def test_volumes_merge_by_name_and_retain_keys() -> None:
    volumes = schema.field(POD_SPEC, "volumes")
    assert volumes is not None
    assert volumes.patch_strategies == ("merge", "retainKeys")
    assert volumes.patch_merge_key == "name"


def test_deployment_strategy_is_retain_keys_and_refers_to_its_type() -> None:
    strategy = schema.field("io.k8s.api.apps.v1.DeploymentSpec", "strategy")
    assert strategy is not None
    assert strategy.patch_strategies == ("retainKeys",)
    assert strategy.type_name == "io.k8s.api.apps.v1.DeploymentStrategy"
    assert set(schema.field_names(strategy.type())) == {"type", "rollingUpdate"}
    assert not strategy.is_list
    assert strategy.items() is None


def test_a_field_carries_upstreams_description() -> None:
    replicas = schema.field("io.k8s.api.apps.v1.DeploymentSpec", "replicas")
    assert replicas is not None
    assert replicas.description is not None
    assert "Number of desired pods" in replicas.description


def test_an_unknown_field_is_none_and_a_map_field_has_no_properties() -> None:
    assert schema.field(POD_SPEC, "nope") is None
    labels = schema.field("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "labels")
    assert labels is not None
    assert schema.json_types(labels.type()) == {"object"}
    assert labels.type()["additionalProperties"] == {"type": ["string", "null"]}
    assert schema.field_names(labels.type()) == ()


def test_json_types_drop_null_and_accept_a_single_type() -> None:
    assert schema.json_types({"type": ["array", "null"]}) == {"array"}
    assert schema.json_types({"type": "object"}) == {"object"}
    assert (
        schema.json_types(schema.definition("io.k8s.apimachinery.pkg.util.intstr.IntOrString")) == frozenset()
    )


def test_short_name_is_the_go_type_name() -> None:
    assert schema.short_name(POD_SPEC) == "PodSpec"


def test_a_caller_may_bring_its_own_definitions() -> None:
    own: dict[str, dict[str, Any]] = {
        "Thing": {
            "type": "object",
            "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/Part"}}},
        },
        "Part": {"type": "object"},
    }
    items = schema.field("Thing", "items", own)
    assert items is not None
    assert items.items() is own["Part"]
    with pytest.raises(KeyError):
        schema.definition(POD_SPEC, own)
