"""CustomResourceDefinition defaults and validation, and the resource types a definition serves."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

from controlplane.api.apiextensions import customresources
from controlplane.api.strategies.apiextensions import CLEANUP_FINALIZER, CustomResourceDefinitionStrategy

STRATEGY = CustomResourceDefinitionStrategy()


def crd(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "crontabs.stable.example.com"},
        "spec": {
            "group": "stable.example.com",
            "scope": "Namespaced",
            "names": {"plural": "crontabs", "kind": "CronTab", "shortNames": ["ct"]},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object"}}}
                    },
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [
                        {"name": "Spec", "type": "string", "jsonPath": ".spec.cronSpec"}
                    ],
                }
            ],
        },
    }
    base["spec"].update(spec)
    return base


def prepared(obj: dict[str, Any]) -> dict[str, Any]:
    STRATEGY.default(obj)
    STRATEGY.prepare_for_create(obj)
    return obj


def problems(obj: dict[str, Any]) -> list[str]:
    return [e.message() for e in STRATEGY.validate(prepared(obj), namespaced=False)]


def test_defaults_and_the_initial_status() -> None:
    obj = prepared(crd())
    names = obj["spec"]["names"]
    assert (names["singular"], names["listKind"]) == ("crontab", "CronTabList")
    assert obj["spec"]["conversion"] == {"strategy": "None"}
    assert obj["status"] == {
        "acceptedNames": {"kind": "", "plural": ""},
        "conditions": [],
        "storedVersions": ["v1"],
    }
    assert obj["metadata"]["finalizers"] == [CLEANUP_FINALIZER]
    assert obj["metadata"]["generation"] == 1
    assert problems(crd()) == []


def test_the_name_must_be_plural_dot_group() -> None:
    bad = crd()
    bad["metadata"]["name"] = "crontab.stable.example.com"
    assert problems(bad) == [
        'metadata.name: Invalid value: "crontab.stable.example.com": must be spec.names.plural+"."+spec.group'
    ]


def test_scope_group_and_versions_are_checked() -> None:
    assert problems(crd(scope="Global")) == [
        'spec.scope: Unsupported value: "Global": supported values: "Cluster", "Namespaced"'
    ]
    bad = crd(group="example")
    bad["metadata"]["name"] = "crontabs.example"
    assert problems(bad) == ['spec.group: Invalid value: "example": should be a domain with at least one dot']
    two = crd()
    second = copy.deepcopy(two["spec"]["versions"][0])
    two["spec"]["versions"].append(second)
    found = problems(two)
    assert any("must have exactly one version marked as storage version" in p for p in found)
    assert 'spec.versions[1].name: Duplicate value: "v1"' in found


def test_names_are_checked() -> None:
    found = problems(crd(names={"plural": "CronTabs", "kind": "CronTab", "listKind": "CronTab"}))
    assert any(p.startswith('spec.names.plural: Invalid value: "CronTabs": a DNS-1035 label') for p in found)
    assert 'spec.names.listKind: Invalid value: "CronTab": kind and listKind may not be the same' in found


def test_the_scope_is_immutable_once_established() -> None:
    old = prepared(crd())
    old["status"]["conditions"] = [{"type": "Established", "status": "True"}]
    new = copy.deepcopy(old)
    new["spec"]["scope"] = "Cluster"
    STRATEGY.prepare_for_update(new, old)
    found = [e.message() for e in STRATEGY.validate_update(new, old, namespaced=False)]
    assert 'spec.scope: Invalid value: "Cluster": field is immutable' in found


def test_served_versions_become_resource_types_stored_as_the_storage_version() -> None:
    obj = prepared(crd())
    v2 = copy.deepcopy(obj["spec"]["versions"][0])
    v2.update(name="v2", storage=False)
    obj["spec"]["versions"].insert(0, v2)
    second, v1 = customresources.resource_types(obj)  # v2 first: the preferred version
    assert second.version == "v2"
    assert (v1.version, v1.plural, v1.kind, v1.namespaced, v1.short_names) == (
        "v1",
        "crontabs",
        "CronTab",
        True,
        ("ct",),
    )
    assert v1.storage_prefix == second.storage_prefix == "/registry/stable.example.com/crontabs"
    assert [s.name for s in v1.subresources] == ["status"]
    stored = second.to_storage({"apiVersion": "stable.example.com/v2", "kind": "CronTab"})
    assert stored["apiVersion"] == "stable.example.com/v1"
    assert second.from_storage(stored)["apiVersion"] == "stable.example.com/v2"


def test_versions_sort_as_upstream_prefers_them() -> None:
    names = ["v1alpha1", "v1beta1", "v1", "v2beta2", "v2", "v2beta1", "foo", "v10"]
    ordered = sorted(names, key=customresources.version_priority)
    assert ordered == ["v10", "v2", "v1", "v2beta2", "v2beta1", "v1beta1", "v1alpha1", "foo"]


def test_printer_columns_follow_json_paths() -> None:
    printer = customresources.printer(
        [
            {"name": "Spec", "type": "string", "jsonPath": ".spec.cronSpec"},
            {"name": "First", "type": "string", "jsonPath": ".spec.list[0].name"},
            {"name": "App", "type": "string", "jsonPath": ".metadata.labels.app\\.kubernetes\\.io/name"},
            {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        ]
    )
    assert [c.name for c in printer.columns] == ["Name", "Spec", "First", "App", "Age"]
    obj = {
        "metadata": {
            "name": "a",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"app.kubernetes.io/name": "x"},
        },
        "spec": {"list": [{"name": "one"}]},
    }
    now = datetime(2026, 1, 1, 0, 5, tzinfo=UTC)
    assert printer.row(obj, now) == ["a", None, "one", "x", "5m"]
    assert [c.name for c in customresources.printer([]).columns] == ["Name", "Age"]


def test_generation_counts_changes_outside_metadata_and_status() -> None:
    [rtype] = customresources.resource_types(prepared(crd()))
    strategy = rtype.strategy
    old: dict[str, Any] = {"metadata": {"name": "a", "generation": 1}, "spec": {"x": 1}}
    same = copy.deepcopy(old)
    same["metadata"]["labels"] = {"a": "b"}
    strategy.prepare_for_update(same, old)
    assert same["metadata"]["generation"] == 1
    changed = copy.deepcopy(old)
    changed["spec"]["x"] = 2
    strategy.prepare_for_update(changed, old)
    assert changed["metadata"]["generation"] == 2
