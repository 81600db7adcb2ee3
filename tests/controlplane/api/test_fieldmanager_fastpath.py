"""A create's managed fields written in one walk (:func:`.typed.added_fields_v1`) against the general path.

A create that starts tracking gives its manager everything the object sets, so the field manager
writes that entry's FieldsV1 straight from the object instead of comparing it with nothing, doing set
algebra and encoding the set. These tests run each object both ways (the general path is what the
field manager does when the fast one declines) and compare the results as JSON text, key order
included: pods, events, deployments, CRD-like schemas, values of the wrong shape, and random objects.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controlplane.api.fieldmanager import typed
from controlplane.api.fieldmanager.fieldpath import Set, make_path
from controlplane.api.fieldmanager.managedfields import STRIP_SET, FieldManager
from controlplane.api.meta import Object

NOW = "2025-01-01T10:00:00Z"

# A CRD-like schema: free-form and preserved-unknown subtrees, sets, list-maps with defaulted keys.
DEFS: dict[str, Any] = {
    "widget": {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"$ref": "#/$defs/meta"},
            "spec": {"$ref": "#/$defs/spec"},
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
    },
    "meta": {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "namespace": {"type": "string"},
            "uid": {"type": "string"},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "finalizers": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
        },
    },
    "spec": {
        "type": "object",
        "properties": {
            "parts": {
                "type": "array",
                "items": {"$ref": "#/$defs/part"},
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name", "kind"],
            },
            "tags": {"type": "array", "items": {"type": "string"}},
            "config": {"type": "object", "additionalProperties": True},
            "raw": {"type": "object"},
            "selector": {
                "type": "object",
                "properties": {"matchLabels": {"type": "object", "additionalProperties": {"type": "string"}}},
                "x-kubernetes-map-type": "atomic",
            },
            "nested": {"type": "object", "additionalProperties": {"$ref": "#/$defs/part"}},
        },
    },
    "part": {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "kind": {"type": "string", "default": "plain"},
            "size": {"type": "integer"},
            "opts": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
        },
    },
}


def _manager(
    group: str,
    kind: str,
    *,
    subresource: str = "",
    reset: Set | None = None,
    definitions: Mapping[str, Any] | None = None,
    definition: str = "",
) -> FieldManager:
    node = typed.root(definition, definitions) if definition else typed.root_for_kind(group, "v1", kind)
    assert node is not None
    return FieldManager(
        group=group,
        version="v1",
        kind=kind,
        node=node,
        now=lambda: NOW,
        subresource=subresource,
        reset_fields=reset,
        definitions=definitions,
    )


def _both_ways(fm: FieldManager, obj: Object) -> tuple[str, str]:
    """The field manager's answer for a create of ``obj``: (fast path, general path), as JSON text."""
    fast = json.dumps(fm.update(None, copy.deepcopy(obj), "creator/x"))
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(typed, "added_fields_v1", lambda *args, **kwargs: None)
        general = json.dumps(fm.update(None, copy.deepcopy(obj), "creator/x"))
    return fast, general


STATUS = Set([make_path("status")])
SPEC_AND_META = Set([make_path("spec"), make_path("metadata")])
DEEP = Set([make_path("spec", "containers"), make_path("metadata", "labels", "app"), make_path("status")])


def _pod() -> Object:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web-1",
            "generateName": "web-",
            "namespace": "default",
            "uid": "u-1",
            "creationTimestamp": NOW,
            "resourceVersion": "7",
            "generation": 1,
            "labels": {"app": "web", "tier": "front", "a": ""},
            "annotations": {"note": "x"},
            "finalizers": ["b.example.com/y", "a.example.com/x", 3, True],
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": "web",
                    "uid": "rs-1",
                    "controller": True,
                }
            ],
            "managedFields": [{"manager": "someone", "operation": "Update"}],
        },
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "nginx",
                    "args": ["a", "b"],
                    "ports": [{"containerPort": 80}, {"containerPort": 53, "protocol": "UDP"}, {"name": "x"}],
                    "env": [{"name": "B", "value": "1"}, {"name": "A", "valueFrom": {"fieldRef": {}}}],
                    "resources": {"requests": {"cpu": "10m", "memory": 1.5}, "limits": {}},
                    "securityContext": {},
                },
                {"name": "side", "image": "busybox", "volumeMounts": []},
                {"name": "app", "image": "duplicate"},
                {"image": "no-name"},
                "not-a-container",
            ],
            "nodeSelector": {"zone": "a"},
            "tolerations": [{"key": "k", "operator": "Exists"}],
            "affinity": None,
            "volumes": [{"name": "v", "emptyDir": {}}, {"name": "c", "configMap": {"name": "cm"}}],
            "securityContext": {},
            "terminationGracePeriodSeconds": 30,
            "readinessGates": [],
            "overhead": "wrong-shape",
            "hostAliases": {"wrong": "shape"},
            "unknownField": {"a": [1, 2]},
        },
        "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True"}]},
    }


def _event() -> Object:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "node-1.18ecd", "namespace": "default", "uid": "e-1", "creationTimestamp": NOW},
        "involvedObject": {"kind": "Node", "name": "node-1", "uid": "node-1", "apiVersion": "v1"},
        "reason": "Starting",
        "message": "Starting kubelet.",
        "type": "Normal",
        "source": {"component": "kubelet", "host": "node-1"},
        "count": 1,
        "firstTimestamp": NOW,
        "lastTimestamp": NOW,
        "eventTime": None,
        "reportingComponent": "kubelet",
        "reportingInstance": "node-1",
    }


def _deployment() -> Object:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
            "template": {
                "metadata": {"labels": {"app": "web"}, "annotations": {}},
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": "nginx",
                            "ports": [{"containerPort": 80}],
                            "env": [{"name": "MODE", "value": "prod"}],
                        }
                    ]
                },
            },
        },
        "status": {"replicas": 3},
    }


def _widget() -> Object:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "uid": "u", "labels": {"x": "y"}, "finalizers": ["f", "e", "f"]},
        "spec": {
            "parts": [
                {"name": "b", "size": 2, "opts": ["z", "y"]},
                {"name": "a", "kind": "fancy"},
                {"name": "a"},
                {"name": 3},
                {"kind": "nameless"},
                None,
            ],
            "tags": ["t2", "t1"],
            "config": {"deep": {"deeper": [1, {"x": None}], "empty": {}}, "flag": True, "list": []},
            "raw": {"anything": {"goes": 1}},
            "selector": {"matchLabels": {"a": "b"}},
            "nested": {"one": {"name": "n", "opts": []}, "two": {}},
        },
        "status": {"free": {"form": [1, 2]}, "n": 1.0},
    }


CASES: dict[str, tuple[Callable[[], FieldManager], Object]] = {
    "pod": (lambda: _manager("", "Pod", reset=STATUS), _pod()),
    "pod-no-reset": (lambda: _manager("", "Pod"), _pod()),
    "pod-status-subresource": (
        lambda: _manager("", "Pod", subresource="status", reset=SPEC_AND_META),
        _pod(),
    ),
    "pod-deep-reset": (lambda: _manager("", "Pod", reset=DEEP), _pod()),
    "pod-empty": (lambda: _manager("", "Pod", reset=STATUS), {}),
    "pod-only-stripped": (
        lambda: _manager("", "Pod", reset=STATUS),
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "uid": "u"}, "status": {"phase": "x"}},
    ),
    "pod-metadata-wrong-shape": (
        lambda: _manager("", "Pod"),
        {"apiVersion": "v1", "metadata": "x", "spec": []},
    ),
    "pod-metadata-empty": (lambda: _manager("", "Pod"), {"metadata": {}, "spec": {}, "status": None}),
    "event": (lambda: _manager("", "Event"), _event()),
    "deployment": (lambda: _manager("apps", "Deployment", reset=STATUS), _deployment()),
    "widget": (lambda: _manager("example.com", "Widget", definitions=DEFS, definition="widget"), _widget()),
    "widget-reset": (
        lambda: _manager("example.com", "Widget", reset=STATUS, definitions=DEFS, definition="widget"),
        _widget(),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_create_is_written_as_the_general_path_writes_it(name: str) -> None:
    make, obj = CASES[name]
    fast, general = _both_ways(make(), obj)
    assert fast == general


def test_the_fast_path_is_taken_for_a_create() -> None:
    fm = _manager("", "Event")
    node = fm.node
    written = typed.added_fields_v1(_event(), node, excluding=fm.updater.ignored, stripping=STRIP_SET)
    assert written is not None
    assert list(written) == sorted(written)
    assert "f:metadata" not in written  # everything under it is stripped
    assert written["f:involvedObject"] == {}  # an ObjectReference is an atomic map: one member
    assert written["f:source"] == {"f:component": {}, "f:host": {}}


def test_a_root_that_is_no_struct_goes_the_general_way() -> None:
    definitions = {"list": {"type": "array", "items": {"type": "string"}}}
    assert typed.added_fields_v1({"a": 1}, typed.root("list", definitions), definitions) is None


def test_the_fast_path_matches_the_set_algebra_for_nested_exclusions() -> None:
    node = typed.root_for_kind("", "v1", "Pod")
    assert node is not None
    pod = _pod()
    excluding = Set(
        [make_path("spec", "containers", {"name": "app"}, "image"), make_path("metadata", "labels")]
    )
    stripping = Set([make_path("spec", "containers", {"name": "side"}), make_path("spec", "volumes")])
    expected = (
        typed.compare({}, pod, node, ignored=excluding)
        .added.recursive_difference(excluding)
        .difference(stripping)
        .to_fields_v1()
    )
    assert json.dumps(
        typed.added_fields_v1(pod, node, excluding=excluding, stripping=stripping)
    ) == json.dumps(expected)


# -- random objects --------------------------------------------------------------------------------

_NAMES = st.sampled_from(
    [
        "apiVersion",
        "kind",
        "metadata",
        "name",
        "namespace",
        "uid",
        "labels",
        "annotations",
        "finalizers",
        "ownerReferences",
        "spec",
        "status",
        "containers",
        "image",
        "ports",
        "containerPort",
        "protocol",
        "env",
        "value",
        "volumes",
        "emptyDir",
        "conditions",
        "type",
        "parts",
        "size",
        "opts",
        "config",
        "selector",
        "matchLabels",
        "nested",
        "x",
        "y",
    ]
)
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=300),
    st.floats(allow_nan=False, allow_infinity=False, width=16),
    st.sampled_from(["", "a", "b", "app", "TCP", "UDP", "web"]),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(_NAMES, children, max_size=6)),
    max_leaves=40,
)
_OBJECTS = st.dictionaries(_NAMES, _VALUES, max_size=8)


def _shaped(obj: Object) -> Object:
    """A random object with some parts put where the schema has structure, so the walk goes deep."""
    out = dict(obj)
    if isinstance(out.get("spec"), dict):
        spec = dict(out["spec"])
        spec.setdefault("containers", [{"name": "app", "ports": [{"containerPort": 80}, obj.get("x")]}, obj])
        out["spec"] = spec
    return out


_MANAGERS: dict[str, Callable[[], FieldManager]] = {
    "pod": lambda: _manager("", "Pod", reset=DEEP),
    "pod-status": lambda: _manager("", "Pod", subresource="status", reset=SPEC_AND_META),
    "event": lambda: _manager("", "Event"),
    "deployment": lambda: _manager("apps", "Deployment", reset=STATUS),
    "widget": lambda: _manager("example.com", "Widget", definitions=DEFS, definition="widget"),
}


@settings(max_examples=150, deadline=None)
@given(obj=_OBJECTS, which=st.sampled_from(sorted(_MANAGERS)))
def test_random_creates_are_written_as_the_general_path_writes_them(obj: Object, which: str) -> None:
    fast, general = _both_ways(_MANAGERS[which](), _shaped(obj))
    assert fast == general


# -- fields that are always leaves ------------------------------------------------------------------


def _without_leaf_shortcuts(run: Callable[[], Any]) -> Any:
    """``run()`` with no field known to be a leaf in advance, so every value is walked down to its atom."""
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(typed, "_leaves", lambda a, defs: (frozenset(), False))
        return run()


@settings(max_examples=150, deadline=None)
@given(
    live=_OBJECTS,
    new=_OBJECTS,
    which=st.sampled_from(sorted(_MANAGERS)),
)
def test_random_updates_are_the_same_without_the_leaf_shortcuts(
    live: Object, new: Object, which: str
) -> None:
    fm = _MANAGERS[which]()
    created = fm.update(None, _shaped(live), "creator")
    updated = _shaped(new)
    if isinstance(created.get("metadata"), dict):
        updated["metadata"] = (
            {**(new.get("metadata") or {}), "uid": "u-1"}
            if isinstance(new.get("metadata"), dict)
            else {"uid": "u-1"}
        )
        updated["metadata"]["managedFields"] = created["metadata"].get("managedFields")

    def both() -> tuple[str, str]:
        return (
            json.dumps(fm.update(copy.deepcopy(created), copy.deepcopy(updated), "updater")),
            json.dumps(typed.compare(created, updated, fm.node, fm.definitions).__dict__, default=repr),
        )

    assert both() == _without_leaf_shortcuts(both)


@pytest.mark.parametrize("name", sorted(CASES))
def test_an_update_of_each_case_is_the_same_without_the_leaf_shortcuts(name: str) -> None:
    make, obj = CASES[name]
    fm = make()
    live = fm.update(None, copy.deepcopy(obj), "creator")
    changed = copy.deepcopy(live)
    changed["kind"] = "Changed"
    changed.setdefault("spec", {})
    if isinstance(changed["spec"], dict):
        changed["spec"].pop("terminationGracePeriodSeconds", None)
        changed["spec"]["nodeName"] = "node-1"
        changed["spec"]["tolerations"] = []
    changed["status"] = {"phase": "Running", "hostIP": "10.0.0.1"}

    def run() -> str:
        return json.dumps(fm.update(copy.deepcopy(live), copy.deepcopy(changed), "updater"))

    assert run() == _without_leaf_shortcuts(run)
