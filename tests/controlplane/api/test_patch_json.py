"""JSON Patch (RFC 6902) as kube-apiserver applies it, with evanphx/json-patch v4.

Sources of the cases:
* RFC 6902 Appendix A (the examples, A.1 to A.16);
* evanphx/json-patch ``patch_test.go`` (``Cases``, ``MutationTestCases``, ``BadCases``, ``TestCases``,
  ``TestAdd``), ported with the copy-size limit its tests set (100 bytes);
* kube-apiserver's status codes (apiserver ``pkg/endpoints/handlers/patch.go`` ``applyJSPatch``).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from controlplane.api.patch import (
    InvalidPatch,
    JSONPatchOperationFailed,
    JSONPatchTestFailed,
    PatchTooLarge,
    apply_json_patch,
)
from controlplane.api.patch.errors import GENERIC_UNPROCESSABLE_MESSAGE


def apply(doc: str, patch: str, *, copy_size_limit: int = 100) -> Any:
    return apply_json_patch(json.loads(doc), json.loads(patch), copy_size_limit=copy_size_limit)


# -- RFC 6902 Appendix A ----------------------------------------------------------------------

RFC_6902_EXAMPLES = [
    pytest.param(
        '{"foo": "bar"}',
        '[{"op": "add", "path": "/baz", "value": "qux"}]',
        '{"baz": "qux", "foo": "bar"}',
        id="A.1 adding an object member",
    ),
    pytest.param(
        '{"foo": ["bar", "baz"]}',
        '[{"op": "add", "path": "/foo/1", "value": "qux"}]',
        '{"foo": ["bar", "qux", "baz"]}',
        id="A.2 adding an array element",
    ),
    pytest.param(
        '{"baz": "qux", "foo": "bar"}', '[{"op": "remove", "path": "/baz"}]', '{"foo": "bar"}', id="A.3"
    ),
    pytest.param(
        '{"foo": ["bar", "qux", "baz"]}',
        '[{"op": "remove", "path": "/foo/1"}]',
        '{"foo": ["bar", "baz"]}',
        id="A.4 removing an array element",
    ),
    pytest.param(
        '{"baz": "qux", "foo": "bar"}',
        '[{"op": "replace", "path": "/baz", "value": "boo"}]',
        '{"baz": "boo", "foo": "bar"}',
        id="A.5 replacing a value",
    ),
    pytest.param(
        '{"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}}',
        '[{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}]',
        '{"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}}',
        id="A.6 moving a value",
    ),
    pytest.param(
        '{"foo": ["all", "grass", "cows", "eat"]}',
        '[{"op": "move", "from": "/foo/1", "path": "/foo/3"}]',
        '{"foo": ["all", "cows", "eat", "grass"]}',
        id="A.7 moving an array element",
    ),
    pytest.param(
        '{"baz": "qux", "foo": ["a", 2, "c"]}',
        '[{"op": "test", "path": "/baz", "value": "qux"}, {"op": "test", "path": "/foo/1", "value": 2}]',
        '{"baz": "qux", "foo": ["a", 2, "c"]}',
        id="A.8 testing a value: success",
    ),
    pytest.param(
        '{"foo": "bar"}',
        '[{"op": "add", "path": "/child", "value": {"grandchild": {}}}]',
        '{"foo": "bar", "child": {"grandchild": {}}}',
        id="A.10 adding a nested member object",
    ),
    pytest.param(
        '{"foo": "bar"}',
        '[{"op": "add", "path": "/baz", "value": "qux", "xyz": 123}]',
        '{"foo": "bar", "baz": "qux"}',
        id="A.11 ignoring unrecognized elements",
    ),
    pytest.param(
        '{"/": 9, "~1": 10}',
        '[{"op": "test", "path": "/~01", "value": 10}]',
        '{"/": 9, "~1": 10}',
        id="A.14 ~ escape ordering",
    ),
    pytest.param(
        '{"foo": ["bar"]}',
        '[{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}]',
        '{"foo": ["bar", ["abc", "def"]]}',
        id="A.16 adding an array value",
    ),
]


@pytest.mark.parametrize(("doc", "patch", "result"), RFC_6902_EXAMPLES)
def test_rfc_6902_appendix_a(doc: str, patch: str, result: str) -> None:
    assert apply(doc, patch) == json.loads(result)


def test_rfc_6902_a9_a_failed_test_fails_the_patch() -> None:
    with pytest.raises(JSONPatchTestFailed) as failure:
        apply('{"baz": "qux", "foo": ["a", 2, "c"]}', '[{"op": "test", "path": "/baz", "value": "bar"}]')
    assert failure.value.detail == "testing value /baz failed: test failed"


def test_rfc_6902_a12_adding_to_a_nonexistent_target_fails() -> None:
    with pytest.raises(JSONPatchOperationFailed) as failure:
        apply('{"foo": "bar"}', '[{"op": "add", "path": "/baz/bat", "value": "qux"}]')
    assert (
        failure.value.detail == 'add operation does not apply: doc is missing path: "/baz/bat": missing value'
    )


def test_rfc_6902_a15_a_string_is_not_a_number() -> None:
    with pytest.raises(JSONPatchTestFailed):
        apply('{"/": 9, "~1": 10}', '[{"op": "test", "path": "/~01", "value": "10"}]')


# -- evanphx/json-patch patch_test.go --------------------------------------------------------------
# The cases whose document is a list ([{"foo": ...}]) carry our expected results: evanphx's own
# compareJSON decodes both sides into a map, which fails for a list and so compares nil to nil.
# v4's copy inserts (con.add), so copying into /0/bar/0 shifts the list.

EVANPHX_CASES = [
    (
        {"foo": ["bar", "baz"]},
        [{"op": "add", "path": "/foo/-1", "value": "qux"}],
        {"foo": ["bar", "baz", "qux"]},
    ),
    (
        {"foo": ["all", "grass", "cows", "eat"]},
        [{"op": "move", "from": "/foo/1", "path": "/foo/2"}],
        {"foo": ["all", "cows", "grass", "eat"]},
    ),
    (
        {"foo": "bar", "qux": {"baz": 1, "bar": None}},
        [{"op": "remove", "path": "/qux/bar"}],
        {"foo": "bar", "qux": {"baz": 1}},
    ),
    ({"foo": "bar"}, [{"op": "add", "path": "/baz", "value": None}], {"baz": None, "foo": "bar"}),
    (
        {"foo": ["bar", "qux", "baz"]},
        [{"op": "replace", "path": "/foo/1", "value": "bum"}],
        {"foo": ["bar", "bum", "baz"]},
    ),
    (
        [{"foo": ["bar", "qux", "baz"]}],
        [{"op": "replace", "path": "/0/foo/0", "value": "bum"}],
        [{"foo": ["bum", "qux", "baz"]}],
    ),
    (
        [{"foo": ["bar", "qux", "baz"], "bar": ["qux", "baz"]}],
        [{"op": "copy", "from": "/0/foo/0", "path": "/0/bar/0"}],
        [{"foo": ["bar", "qux", "baz"], "bar": ["bar", "qux", "baz"]}],
    ),
    (
        [{"foo": ["bar", "qux", "baz"], "bar": ["qux", "baz"]}],
        [{"op": "copy", "from": "/0/foo/0", "path": "/0/bar"}],
        [{"foo": ["bar", "qux", "baz"], "bar": "bar"}],
    ),
    (
        [{"foo": {"bar": ["qux", "baz"]}, "baz": {"qux": "bum"}}],
        [{"op": "copy", "from": "/0/foo/bar", "path": "/0/baz/bar"}],
        [{"baz": {"bar": ["qux", "baz"], "qux": "bum"}, "foo": {"bar": ["qux", "baz"]}}],
    ),
    ({"foo": ["bar"]}, [{"op": "copy", "path": "/foo/0", "from": "/foo"}], {"foo": [["bar"], "bar"]}),
    ({"foo": ["bar", "qux", "baz"]}, [{"op": "remove", "path": "/foo/-2"}], {"foo": ["bar", "baz"]}),
    ({"foo": []}, [{"op": "add", "path": "/foo/-1", "value": "qux"}], {"foo": ["qux"]}),
    ({"bar": [{"baz": None}]}, [{"op": "replace", "path": "/bar/0/baz", "value": 1}], {"bar": [{"baz": 1}]}),
    (
        {"bar": [{"baz": 1}]},
        [{"op": "replace", "path": "/bar/0/baz", "value": None}],
        {"bar": [{"baz": None}]},
    ),
    ({"bar": [None]}, [{"op": "replace", "path": "/bar/0", "value": 1}], {"bar": [1]}),
    ({"bar": [1]}, [{"op": "replace", "path": "/bar/0", "value": None}], {"bar": [None]}),
    (
        {"foo": ["A", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"]},
        [
            {"op": "copy", "path": "/foo/-", "from": "/foo/1"},
            {"op": "copy", "path": "/foo/-", "from": "/foo/1"},
        ],
        {
            "foo": [
                "A",
                "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
                "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
                "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
            ]
        },
    ),
]


@pytest.mark.parametrize(("doc", "patch", "result"), EVANPHX_CASES)
def test_evanphx_cases(doc: Any, patch: Any, result: Any) -> None:
    assert apply_json_patch(doc, patch, copy_size_limit=100) == result


EVANPHX_BAD_CASES = [
    ({"a": {"b": {"d": 1}}}, [{"op": "remove", "path": "/a/b/c"}]),
    ({"a": {"b": {"d": 1}}}, [{"op": "move", "from": "/a/b/c", "path": "/a/b/e"}]),
    ({"a": {"b": [1]}}, [{"op": "remove", "path": "/a/b/1"}]),
    ({"a": {"b": [1]}}, [{"op": "move", "from": "/a/b/1", "path": "/a/b/2"}]),
    ({"foo": "bar"}, [{"op": "add", "pathz": "/baz", "value": "qux"}]),
    ({"foo": "bar"}, [{"op": "add", "path": "", "value": "qux"}]),
    ({"foo": ["bar", "baz"]}, [{"op": "replace", "path": "/foo/2", "value": "bum"}]),
    ({"foo": ["bar", "baz"]}, [{"op": "add", "path": "/foo/-4", "value": "bum"}]),
    ({"name": {"foo": "bat", "qux": "bum"}}, [{"op": "replace", "path": "/foo/bar", "value": "baz"}]),
    ({"foo": ["bar"]}, [{"op": "add", "path": "/foo/2", "value": "bum"}]),
    ({"foo": []}, [{"op": "remove", "path": "/foo/-"}]),
    ({"foo": []}, [{"op": "remove", "path": "/foo/-1"}]),
    ({"foo": ["bar"]}, [{"op": "remove", "path": "/foo/-2"}]),
    ({}, [{"op": None, "path": ""}]),
    ({}, [{"op": "add", "path": None}]),
    ({}, [{"op": "copy", "from": None}]),
    ({"foo": ["bar"]}, [{"op": "copy", "path": "/foo/6666666666", "from": "/"}]),
    ({"foo": ["bar"]}, [{"op": "copy", "path": "/foo/2", "from": "/foo/0"}]),
    (
        {"foo": ["A", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"]},
        [
            {"op": "copy", "path": "/foo/-", "from": "/foo/1"},
            {"op": "copy", "path": "/foo/-", "from": "/foo/1"},
        ],
    ),
    ({"foo": ["all", "grass", "cows", "eat"]}, [{"op": "move", "from": "/foo/1", "path": "/foo/4"}]),
]


@pytest.mark.parametrize(("doc", "patch"), EVANPHX_BAD_CASES)
def test_evanphx_bad_cases_fail_with_422_and_leave_the_document_alone(doc: Any, patch: Any) -> None:
    kept = copy.deepcopy(doc)
    with pytest.raises(JSONPatchOperationFailed) as failure:
        apply_json_patch(doc, patch, copy_size_limit=100)
    assert failure.value.status_code == 422
    assert doc == kept


EVANPHX_TEST_CASES = [
    (
        {"baz": "qux", "foo": ["a", 2, "c"]},
        [{"op": "test", "path": "/baz", "value": "qux"}, {"op": "test", "path": "/foo/1", "value": "c"}],
        "/foo/1",
    ),
    ({"baz": "qux"}, [{"op": "test", "path": "/foo", "value": 42}], "/foo"),
    ({"foo": {}}, [{"op": "test", "path": "/foo", "value": None}], "/foo"),
    ({"foo": []}, [{"op": "test", "path": "/foo", "value": None}], "/foo"),
    ({"foo": []}, [{"op": "test", "path": "/foo"}], "/foo"),
]


@pytest.mark.parametrize(("doc", "patch", "failed_path"), EVANPHX_TEST_CASES)
def test_evanphx_failing_tests_name_the_path(doc: Any, patch: Any, failed_path: str) -> None:
    with pytest.raises(JSONPatchTestFailed) as failure:
        apply_json_patch(doc, patch)
    assert failure.value.detail == f"testing value {failed_path} failed: test failed"


@pytest.mark.parametrize(
    ("doc", "patch"),
    [
        ('{ "baz": "qux" }', '[ { "op": "test", "path": "/foo", "value": null } ]'),
        ('{ "foo": null }', '[ { "op": "test", "path": "/foo", "value": null } ]'),
        ('{ "baz/foo": "qux" }', '[ { "op": "test", "path": "/baz~1foo", "value": "qux"} ]'),
        (
            '{ "a": {"x": [1, {"y": true}]} }',
            '[ { "op": "test", "path": "/a", "value": {"x": [1, {"y": true}]}} ]',
        ),
    ],
)
def test_evanphx_passing_tests(doc: str, patch: str) -> None:
    assert apply(doc, patch) == json.loads(doc)


def test_test_compares_objects_both_ways() -> None:
    # evanphx TestEquality: {"foo": "bar"} and {"foo": "bar", "baz": "qux"} differ, in either order.
    with pytest.raises(JSONPatchTestFailed):
        apply(
            '{"a": {"foo": "bar"}}', '[{"op": "test", "path": "/a", "value": {"foo": "bar", "baz": "qux"}}]'
        )
    with pytest.raises(JSONPatchTestFailed):
        apply(
            '{"a": {"foo": "bar", "baz": "qux"}}', '[{"op": "test", "path": "/a", "value": {"foo": "bar"}}]'
        )


@pytest.mark.parametrize(("value"), ["1.0", "true", '"1"'])
def test_test_compares_json_types_not_python_equality(value: str) -> None:
    with pytest.raises(JSONPatchTestFailed):
        apply('{"a": 1}', f'[{{"op": "test", "path": "/a", "value": {value}}}]')


@pytest.mark.parametrize(
    ("key", "size", "expected"),
    [
        ("0", 0, ["v"]),
        ("-1", 0, ["v"]),
        ("-1", 2, [0, 1, "v"]),
        ("-3", 2, ["v", 0, 1]),
        ("+1", 2, [0, "v", 1]),
    ],
)
def test_add_at_an_index_negative_counting_from_the_end(key: str, size: int, expected: list[Any]) -> None:
    # evanphx TestAdd: "-1" on an empty list works; Go's Atoi accepts a sign.
    doc = {"l": list(range(size))}
    assert apply_json_patch(doc, [{"op": "add", "path": f"/l/{key}", "value": "v"}]) == {"l": expected}


@pytest.mark.parametrize(("key", "message"), [("1", "1"), ("-2", "-2")])
def test_add_out_of_range_names_the_index(key: str, message: str) -> None:
    with pytest.raises(JSONPatchOperationFailed) as failure:
        apply_json_patch({"l": []}, [{"op": "add", "path": f"/l/{key}", "value": "v"}])
    assert failure.value.detail == (
        f"error in add for path: '/l/{key}': "
        f"Unable to access invalid index: {message}: invalid index referenced"
    )


# -- kube-apiserver's view ---------------------------------------------------------------------------

DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "labels": {"app.kubernetes.io/name": "web"}},
    "spec": {
        "replicas": 1,
        "template": {
            "spec": {"containers": [{"name": "web", "image": "nginx:1.25", "args": ["-g", "daemon off;"]}]}
        },
    },
}


def test_a_kubectl_json_patch_on_a_deployment() -> None:
    patch = [
        {"op": "test", "path": "/spec/replicas", "value": 1},
        {"op": "replace", "path": "/spec/replicas", "value": 3},
        {"op": "replace", "path": "/metadata/labels/app.kubernetes.io~1name", "value": "frontend"},
        {"op": "add", "path": "/spec/template/spec/containers/0/args/-", "value": "--debug"},
        {"op": "remove", "path": "/spec/template/spec/containers/0/args/0"},
    ]
    result = apply_json_patch(DEPLOYMENT, patch)
    assert result["spec"]["replicas"] == 3
    assert result["metadata"]["labels"] == {"app.kubernetes.io/name": "frontend"}
    assert result["spec"]["template"]["spec"]["containers"][0]["args"] == ["daemon off;", "--debug"]
    assert DEPLOYMENT["spec"]["replicas"] == 1, "the input document must not change"


def test_adding_to_a_list_that_does_not_exist_is_upstreams_422() -> None:
    # kustomize users know this one: JSON Patch cannot create the list it appends to.
    with pytest.raises(JSONPatchOperationFailed) as failure:
        apply_json_patch(
            DEPLOYMENT, [{"op": "add", "path": "/spec/template/spec/volumes/-", "value": {"name": "data"}}]
        )
    error = failure.value
    assert error.detail == (
        'add operation does not apply: doc is missing path: "/spec/template/spec/volumes/-": missing value'
    )
    assert (error.index, error.op) == (0, "add")
    assert error.status() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": GENERIC_UNPROCESSABLE_MESSAGE,
        "reason": "Invalid",
        "details": {},
        "code": 422,
    }


def test_replace_of_a_missing_object_member_adds_it_as_evanphx_v4_does() -> None:
    # evanphx/json-patch issue #119: fixed in v5 only; kube-apiserver uses v4.
    result = apply_json_patch(
        {"metadata": {}}, [{"op": "replace", "path": "/metadata/labels", "value": {"a": "b"}}]
    )
    assert result == {"metadata": {"labels": {"a": "b"}}}


def test_replace_of_a_missing_list_index_fails() -> None:
    with pytest.raises(JSONPatchOperationFailed) as failure:
        apply_json_patch({"foo": ["a", "b"]}, [{"op": "replace", "path": "/foo/2", "value": "c"}])
    assert (
        failure.value.detail == "replace operation does not apply: doc is missing key: /foo/2: missing value"
    )


def test_copy_from_a_missing_member_copies_null_and_move_from_it_fails() -> None:
    assert apply_json_patch({}, [{"op": "copy", "from": "/nope", "path": "/x"}]) == {"x": None}
    with pytest.raises(JSONPatchOperationFailed) as failure:
        apply_json_patch({}, [{"op": "move", "from": "/nope", "path": "/x"}])
    assert (
        failure.value.detail
        == "error in move for path: 'nope': Unable to remove nonexistent key: nope: missing value"
    )


def test_copy_is_a_deep_copy() -> None:
    result = apply_json_patch(
        {"a": {"l": [1]}},
        [{"op": "copy", "from": "/a", "path": "/b"}, {"op": "add", "path": "/b/l/-", "value": 2}],
    )
    assert result == {"a": {"l": [1]}, "b": {"l": [1, 2]}}


def test_the_default_copy_limit_is_three_mebibytes() -> None:
    big = "x" * (1024 * 1024)
    ops = [{"op": "copy", "from": "/big", "path": f"/c{n}"} for n in range(3)]
    with pytest.raises(JSONPatchOperationFailed) as failure:
        apply_json_patch({"big": big}, ops)
    assert failure.value.index == 2
    assert "exceeding the limit 3145728" in failure.value.detail


def test_a_path_without_a_slash_cannot_be_found_and_the_first_token_is_ignored() -> None:
    with pytest.raises(JSONPatchOperationFailed):
        apply_json_patch({"a": 1}, [{"op": "remove", "path": "a"}])
    assert apply_json_patch({"a": 1, "b": 2}, [{"op": "remove", "path": "x/b"}]) == {"a": 1}


def test_removing_with_a_bad_index_reports_go_s_atoi_error() -> None:
    with pytest.raises(JSONPatchOperationFailed) as failure:
        apply_json_patch({"foo": [1]}, [{"op": "remove", "path": "/foo/-"}])
    assert (
        failure.value.detail
        == "error in remove for path: '/foo/-': strconv.Atoi: parsing \"-\": invalid syntax"
    )


def test_an_unknown_operation_is_a_422_naming_it() -> None:
    with pytest.raises(JSONPatchOperationFailed) as failure:
        apply_json_patch({}, [{"op": "add", "path": "/a", "value": 1}, {"op": "merge", "path": "/a"}])
    assert (failure.value.detail, failure.value.index, failure.value.op) == (
        "Unexpected kind: merge",
        1,
        "merge",
    )


def test_an_operation_without_a_path_is_a_422() -> None:
    with pytest.raises(JSONPatchOperationFailed) as failure:
        apply_json_patch({}, [{"op": "replace", "value": 1}])
    assert failure.value.detail == (
        "replace operation failed to decode path: operation missing path field: missing value"
    )


def test_a_failed_test_applies_nothing() -> None:
    doc = {"spec": {"replicas": 1}}
    with pytest.raises(JSONPatchTestFailed) as failure:
        apply_json_patch(
            doc,
            [
                {"op": "replace", "path": "/spec/replicas", "value": 5},
                {"op": "test", "path": "/spec/replicas", "value": 1},
            ],
        )
    assert failure.value.index == 1
    assert doc == {"spec": {"replicas": 1}}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"op": "add"}, "json: cannot unmarshal object into Go value of type jsonpatch.Patch"),
        ("add", "json: cannot unmarshal string into Go value of type jsonpatch.Patch"),
        (["add"], "json: cannot unmarshal string into Go value of type jsonpatch.Operation"),
        ([1], "json: cannot unmarshal number into Go value of type jsonpatch.Operation"),
    ],
)
def test_a_body_that_is_not_a_list_of_objects_is_a_400(body: Any, message: str) -> None:
    with pytest.raises(InvalidPatch) as failure:
        apply_json_patch({}, body)
    assert failure.value.status_code == 400
    assert failure.value.status()["message"] == message
    assert failure.value.status()["reason"] == "BadRequest"


def test_a_null_body_is_no_operations() -> None:
    assert apply_json_patch({"a": 1}, None) == {"a": 1}


def test_more_than_ten_thousand_operations_is_a_413() -> None:
    ops = [{"op": "test", "path": "/a", "value": 1}] * 10_001
    with pytest.raises(PatchTooLarge) as failure:
        apply_json_patch({"a": 1}, ops)
    assert failure.value.status() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": (
            "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"
        ),
        "reason": "RequestEntityTooLarge",
        "code": 413,
    }
    assert apply_json_patch({"a": 1}, ops[:10_000]) == {"a": 1}


@pytest.mark.parametrize(
    ("op", "message"),
    [
        (
            {"op": "test", "path": "/a/b/c", "value": 1},
            "test operation does not apply: is missing path: /a/b/c: missing value",
        ),
        (
            {"op": "test", "path": "/l/9", "value": 1},
            "error in test for path: '/l/9': Unable to access invalid index: 9: invalid index referenced",
        ),
        (
            {"op": "move", "from": "/a/b/c", "path": "/x"},
            "move operation does not apply: doc is missing from path: /a/b/c: missing value",
        ),
        (
            {"op": "move", "from": "/l/0", "path": "/a/b/c"},
            "move operation does not apply: doc is missing destination path: /a/b/c: missing value",
        ),
        (
            {"op": "copy", "from": "/a/b/c", "path": "/x"},
            "copy operation does not apply: doc is missing from path: /a/b/c: missing value",
        ),
        (
            {"op": "copy", "from": "/l/0", "path": "/a/b/c"},
            "copy operation does not apply: doc is missing destination path: /a/b/c: missing value",
        ),
        (
            {"op": "copy", "from": "/l/x", "path": "/y"},
            "error in copy for from: '/l/x': strconv.Atoi: parsing \"x\": invalid syntax",
        ),
        (
            {"op": "replace", "path": 7, "value": 1},
            "replace operation failed to decode path: "
            "json: cannot unmarshal number into Go value of type string",
        ),
        (
            {"op": "move", "path": "/x"},
            "move operation failed to decode from: operation, missing from field: missing value",
        ),
        (
            {"op": "add", "path": "/l/99999999999999999999", "value": 1},
            "error in add for path: '/l/99999999999999999999': value was not a proper array index: "
            "'99999999999999999999': strconv.Atoi: parsing \"99999999999999999999\": value out of range",
        ),
        (
            {"op": "remove", "path": "/l/x/y"},
            'remove operation does not apply: doc is missing path: "/l/x/y": missing value',
        ),
    ],
)
def test_evanphx_messages_for_each_operation(op: dict[str, Any], message: str) -> None:
    with pytest.raises(JSONPatchOperationFailed) as failure:
        apply_json_patch({"a": {}, "l": [True]}, [op])
    assert failure.value.detail == message
