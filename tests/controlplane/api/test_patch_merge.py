"""JSON merge patch (RFC 7386) as kube-apiserver applies it, with evanphx/json-patch v4 ``MergePatch``.

Cases: RFC 7386 Appendix A (all fifteen rows; two differ on purpose, as upstream's library does),
evanphx/json-patch ``merge.go`` behaviours (null pruning, issue #132), and kubectl-style patches.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from controlplane.api.patch import InvalidPatch, UnhandledPatchError, apply_merge_patch

RFC_7386_APPENDIX_A = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
]


@pytest.mark.parametrize(("doc", "patch", "result"), RFC_7386_APPENDIX_A)
def test_rfc_7386_appendix_a(doc: Any, patch: Any, result: Any) -> None:
    assert apply_merge_patch(doc, patch) == result


@pytest.mark.parametrize("patch", [None, "bar", 1, 1.5, True])
def test_a_patch_that_is_null_or_a_scalar_is_rejected_with_400(patch: Any) -> None:
    # RFC 7386 rows {"a":"foo"} + null -> null and + "bar" -> "bar": evanphx v4 answers
    # errBadJSONPatch instead, which kube-apiserver turns into 400 BadRequest.
    with pytest.raises(InvalidPatch) as failure:
        apply_merge_patch({"a": "foo"}, patch)
    assert failure.value.status() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "Invalid JSON Patch",
        "reason": "BadRequest",
        "code": 400,
    }


def test_a_null_document_is_an_unhandled_500() -> None:
    with pytest.raises(UnhandledPatchError) as failure:
        apply_merge_patch(None, {"a": 1})
    assert (failure.value.status_code, failure.value.message) == (500, "Invalid JSON Document")
    assert "reason" not in failure.value.status()


def test_nulls_inside_a_new_member_are_pruned_at_any_depth_but_list_elements_stay() -> None:
    # evanphx merge.go pruneNulls / pruneAryNulls; null elements kept since PR #143 (issue #132,
    # raised for kubernetes/kubernetes#98080).
    patch = {"spec": {"x": None, "list": [None, {"a": None, "b": 1}], "nested": {"y": {"z": None}}}}
    assert apply_merge_patch({}, patch) == {"spec": {"list": [None, {"b": 1}], "nested": {"y": {}}}}


def test_a_member_that_was_null_is_treated_as_new() -> None:
    assert apply_merge_patch({"a": None}, {"a": {"b": None, "c": 1}}) == {"a": {"c": 1}}


def test_a_list_replacing_an_object_is_stored_as_sent() -> None:
    # merge(): the current value is an object, the patch value is not -> "return patch", unpruned.
    assert apply_merge_patch({"a": {"b": 1}}, {"a": [{"c": None}]}) == {"a": [{"c": None}]}


def test_an_object_replacing_a_scalar_is_pruned() -> None:
    assert apply_merge_patch({"a": 1}, {"a": {"b": None, "c": 2}}) == {"a": {"c": 2}}


def test_a_list_patch_replaces_the_document_with_its_nulls_pruned() -> None:
    assert apply_merge_patch({"a": 1}, [{"b": None}, None]) == [{}, None]


def test_kubectl_patch_type_merge_on_labels_and_containers() -> None:
    pod = {
        "metadata": {"name": "p", "labels": {"app": "web", "tier": "frontend"}},
        "spec": {"containers": [{"name": "web", "image": "nginx"}, {"name": "sidecar", "image": "envoy"}]},
    }
    kept = copy.deepcopy(pod)
    patch = {
        "metadata": {"labels": {"tier": None, "team": "blue"}},
        "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
    }
    result = apply_merge_patch(pod, patch)
    assert result["metadata"] == {"name": "p", "labels": {"app": "web", "team": "blue"}}
    # A merge patch replaces lists whole: the sidecar is gone (strategic merge patch keeps it).
    assert result["spec"]["containers"] == [{"name": "web", "image": "nginx:1.27"}]
    assert pod == kept, "the input document must not change"


def test_deleting_a_member_that_is_not_there_is_a_no_op() -> None:
    assert apply_merge_patch({"a": 1}, {"b": None}) == {"a": 1}


def test_an_empty_patch_changes_nothing() -> None:
    doc = {"a": {"b": [1, 2]}}
    result = apply_merge_patch(doc, {})
    assert result == doc
    assert result is not doc


def test_a_callers_own_copy_is_patched_in_place_when_asked() -> None:
    doc: dict[str, Any] = {"spec": {"replicas": 1, "paused": True}, "status": {"ready": 0}}
    patch = {"spec": {"replicas": 3, "paused": None}}
    kept = copy.deepcopy(doc)
    assert apply_merge_patch(doc, patch) == {"spec": {"replicas": 3}, "status": {"ready": 0}}
    assert doc == kept, "by default the document is copied, never changed"
    result = apply_merge_patch(doc, patch, copy=False)
    assert result is doc and doc == {"spec": {"replicas": 3}, "status": {"ready": 0}}
    assert patch == {"spec": {"replicas": 3, "paused": None}}, "the patch itself is never changed"


@pytest.mark.parametrize(("doc", "patch", "result"), RFC_7386_APPENDIX_A)
def test_a_consumed_patch_gives_the_same_result(doc: Any, patch: Any, result: Any) -> None:
    """``consume=True`` (the API server's own decoded body) moves the patch's parts instead of copying."""
    assert apply_merge_patch(copy.deepcopy(doc), copy.deepcopy(patch), consume=True) == result
