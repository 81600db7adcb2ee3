"""Shared object versions: equal versions are one frozen object; nothing can change it; copies can."""

from __future__ import annotations

import copy
import gc
import pickle
from typing import Any

import orjson
import pytest

from controlplane.api import serializer
from controlplane.api.deepcopy import deep_copy
from controlplane.api.meta import Object
from controlplane.client.sharing import (
    FrozenDict,
    FrozenList,
    SharedObjectChanged,
    SharedVersions,
    freeze,
)


def pod(rv: str = "7", uid: str = "u-1", **spec: Any) -> Object:
    """A pod as a watch delivers it: freshly decoded (no string shared with anything)."""
    obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web-1", "namespace": "default", "uid": uid, "resourceVersion": rv},
        "spec": {
            "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10", "args": ["--v", "2"]}],
            "priority": 0,
            "enableServiceLinks": True,
            **spec,
        },
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }
    decoded: Object = serializer.decode(serializer.encode(obj))
    return decoded


def test_equal_versions_of_one_object_are_one_frozen_object() -> None:
    versions = SharedVersions()
    first = versions.share(pod())
    second = versions.share(pod())
    assert second is first
    assert first == pod()
    assert isinstance(first, FrozenDict) and isinstance(first["spec"]["containers"], FrozenList)
    assert serializer.encode(first) == serializer.encode(pod())  # same JSON, key order included


def test_other_versions_and_objects_and_different_contents_are_not_shared() -> None:
    versions = SharedVersions()
    shared = versions.share(pod())
    assert versions.share(pod(rv="8")) is not shared
    assert versions.share(pod(uid="u-2")) is not shared
    # Same uid and resourceVersion but different contents (another transform): not that object.
    different = versions.share(pod(nodeName="node-1"))
    assert different is not shared and different["spec"]["nodeName"] == "node-1"


def test_an_object_without_uid_or_resource_version_is_kept_as_it_is_strings_interned() -> None:
    versions = SharedVersions()
    obj = pod(uid="")
    image = obj["spec"]["containers"][0]["image"]
    assert versions.share(obj) is obj
    assert type(obj) is dict and len(versions) == 0
    other = pod(uid="")
    versions.share(other)
    assert other["spec"]["containers"][0]["image"] is obj["spec"]["containers"][0]["image"]
    assert image == other["spec"]["containers"][0]["image"]


def test_a_version_nobody_holds_is_forgotten() -> None:
    versions = SharedVersions()
    versions.share(pod())
    gc.collect()
    assert len(versions) == 0
    held = versions.share(pod())
    assert len(versions) == 1 and held is versions.share(pod())


@pytest.mark.parametrize(
    "change",
    [
        lambda p: p.__setitem__("kind", "Node"),
        lambda p: p.__delitem__("status"),
        lambda p: p["metadata"].update(labels={"a": "b"}),
        lambda p: p["metadata"].setdefault("annotations", {}),
        lambda p: p["metadata"].pop("name"),
        lambda p: p["metadata"].popitem(),
        lambda p: p["metadata"].clear(),
        lambda p: p["metadata"].__ior__({"x": 1}),
        lambda p: p["spec"]["containers"].append({}),
        lambda p: p["spec"]["containers"].extend([{}]),
        lambda p: p["spec"]["containers"].insert(0, {}),
        lambda p: p["spec"]["containers"].__setitem__(0, {}),
        lambda p: p["spec"]["containers"].__delitem__(0),
        lambda p: p["spec"]["containers"].__iadd__([{}]),
        lambda p: p["spec"]["containers"].__imul__(2),
        lambda p: p["spec"]["containers"][0]["args"].sort(),
        lambda p: p["spec"]["containers"][0]["args"].reverse(),
        lambda p: p["spec"]["containers"][0]["args"].remove("2"),
        lambda p: p["spec"]["containers"][0]["args"].pop(),
        lambda p: p["status"]["conditions"].clear(),
    ],
)
def test_no_change_reaches_a_shared_object(change: Any) -> None:
    versions = SharedVersions()
    shared = versions.share(pod())
    with pytest.raises(SharedObjectChanged):
        change(shared)
    assert shared == pod()


@pytest.mark.parametrize(
    "copier",
    [
        deep_copy,
        copy.deepcopy,
        lambda o: pickle.loads(pickle.dumps(o)),
        lambda o: orjson.loads(orjson.dumps(o)),
    ],
)
def test_a_deep_copy_is_plain_and_changeable_and_leaves_the_shared_object_alone(copier: Any) -> None:
    versions = SharedVersions()
    shared = versions.share(pod())
    copied = copier(shared)
    assert copied == shared
    assert type(copied) is dict and type(copied["spec"]["containers"]) is list
    assert type(copied["spec"]["containers"][0]) is dict
    copied["spec"]["containers"][0]["args"].append("--extra")
    copied["metadata"].setdefault("labels", {})["app"] = "web"
    assert shared == pod() and versions.share(pod()) is shared


def test_shallow_copies_are_plain_at_the_top_only() -> None:
    shared = SharedVersions().share(pod())
    for top in (dict(shared), copy.copy(shared), shared.copy(), {**shared}):
        assert type(top) is dict and top == shared
        top["kind"] = "Changed"
        assert isinstance(top["spec"], FrozenDict)  # below the top, still the shared parts
    containers = shared["spec"]["containers"]
    for listed in (list(containers), copy.copy(containers), containers.copy(), containers[:], [*containers]):
        assert type(listed) is list
        listed.append({})
    assert shared == pod()


def test_freeze_keeps_values_types_and_order() -> None:
    original = {"b": 1, "a": True, "c": [1.5, None, {"z": "s", "y": []}], "d": {}}
    frozen = freeze(original)
    assert frozen == original and list(frozen) == ["b", "a", "c", "d"]
    assert frozen["a"] is True and type(frozen["b"]) is int
    assert serializer.encode(frozen) == serializer.encode(original)
    with pytest.raises(SharedObjectChanged):
        frozen["c"][2]["y"].append(1)
