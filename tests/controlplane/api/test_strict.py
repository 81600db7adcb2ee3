"""Strict decoding's pruning: what the Go decoder keeps of a body, found in one copy-on-write walk."""

from __future__ import annotations

import json
from typing import Any

import pytest

from controlplane.api import strict
from controlplane.api.fieldmanager import typed

_POD = typed.root_for_kind("", "v1", "Pod")
assert _POD is not None
POD = _POD


def pod(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "labels": {"app": "web"}, "annotations": {"a": "b"}},
        "spec": {"containers": [{"name": "app", "image": "nginx", "ports": [{"containerPort": 80}]}], **spec},
        "status": {"phase": "Running"},
    }


def test_a_clean_object_is_kept_as_it_is_without_a_copy() -> None:
    clean = pod()
    kept, unknown = strict.without_unknown_fields(clean, POD)
    assert unknown == []
    assert kept is clean, "nothing unknown: nothing is copied"
    assert strict.prune_unknown(clean, POD) is clean


def test_unknown_fields_are_dropped_from_a_copy_and_named_in_document_order() -> None:
    dirty = pod(replicaz=3)
    dirty["spec"]["containers"][0]["imagez"] = "x"
    dirty["metadata"]["labelz"] = {"x": "y"}
    kept, unknown = strict.without_unknown_fields(dirty, POD)
    assert unknown == [
        'unknown field "metadata.labelz"',
        'unknown field "spec.containers[0].imagez"',
        'unknown field "spec.replicaz"',
    ]
    assert "labelz" not in kept["metadata"] and "replicaz" not in kept["spec"]
    assert kept["spec"]["containers"] == [{"name": "app", "image": "nginx", "ports": [{"containerPort": 80}]}]
    # The caller's object is untouched, and what held nothing unknown is shared, not copied.
    assert dirty["spec"]["replicaz"] == 3 and dirty["spec"]["containers"][0]["imagez"] == "x"
    assert kept["status"] is dirty["status"]
    assert kept["metadata"]["labels"] is dirty["metadata"]["labels"]


def test_map_keys_are_never_unknown_but_map_values_are_checked() -> None:
    labelled = pod()
    labelled["metadata"]["labels"]["anything/goes"] = "yes"
    labelled["spec"]["nodeSelector"] = {"disk": "ssd"}
    assert strict.without_unknown_fields(labelled, POD)[1] == []
    assert strict.unknown_fields(labelled, POD) == []


def test_unknown_fields_in_list_items_are_named_by_position_and_pruned_alike() -> None:
    dirty = pod(hostnamez="x", volumes=[{"name": "v", "emptyDir": {}, "bogus": 1}])
    assert strict.unknown_fields(dirty, POD) == [
        'unknown field "spec.hostnamez"',
        'unknown field "spec.volumes[0].bogus"',
    ]
    kept = strict.prune_unknown(dirty, POD)
    assert kept == strict.without_unknown_fields(dirty, POD)[0]
    assert "hostnamez" not in kept["spec"] and kept["spec"]["volumes"] == [{"name": "v", "emptyDir": {}}]


def test_decode_unique_is_json_loads_when_no_object_repeats_a_member() -> None:
    raw = b'{"metadata":{"name":"web","labels":{"a":"1","b":"2"}},"items":[{"a":1},{"a":2}],"n":null}'
    assert strict.decode_unique(raw) == (True, json.loads(raw))
    assert strict.decode_unique(b"[1, 2]") == (True, [1, 2])
    assert strict.decode_unique(b"null") == (True, None)


def test_decode_unique_gives_up_on_a_repeated_member_or_a_body_that_is_not_json() -> None:
    assert strict.decode_unique(b'{"spec":{"items":[{"a":1,"a":2}]}}') == (False, None)
    assert strict.decode_unique(b"{") == (False, None)
    assert strict.decode_unique(b"\xff") == (False, None)
    assert strict.decode_unique(b"kind: Pod") == (False, None)


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a":1,"b":{"c":[1,2.5,"x"]}}',  # compact: the fast path
        b'{"a": 1, "b": {"c": [1, 2.5, "x"]}}',  # spaced: the standard library's path
        '{"name":"été","big":1e308}'.encode(),
        b'{"tag":"\\u003cb\\u003e"}',  # Go's escapes of < and >
    ],
)
def test_decode_unique_reads_compact_and_other_json_alike(raw: bytes) -> None:
    assert strict.decode_unique(raw) == (True, json.loads(raw))


@pytest.mark.parametrize(
    ("raw", "unique"),
    [
        (b'{"a":1,"a":1}', False),  # compact, yet repeated: written back it would be shorter
        (b'{"spec":{"replicas":3,"replicas":3}}', False),
        (b'{"n":NaN}', False),  # Go's decoder refuses these, so the standard library's path does
        (b'{"n":1e400}', False),
        (b'{"s":"\\ud800"}', True),  # orjson refuses a lone surrogate; Go reads it as U+FFFD
        (b'{"n":123456789012345678901234567890}', True),  # beyond orjson's integers, not JSON's
    ],
)
def test_compact_bodies_orjson_refuses_or_repeat_a_member_take_the_standard_librarys_path(
    raw: bytes, unique: bool
) -> None:
    assert strict.decode_unique(raw)[0] is unique
