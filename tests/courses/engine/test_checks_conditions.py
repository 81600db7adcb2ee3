"""Conditions on objects: each operator, and what a failing one tells the student."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.utils import translation

from courses.engine.checks.conditions import bind_condition, check_list, check_object, equal, holds
from courses.engine.checks.parsing import parse_check
from courses.engine.checks.paths import MISSING, parse_path
from courses.engine.checks.spec import Condition, Count, StateLeaf


@pytest.fixture(autouse=True)
def _english() -> Iterator[None]:
    with translation.override("en"):
        yield


def cond(path: str, op: str, operand: Any) -> Condition:
    return Condition(parse_path(path), op, operand)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("op", "operand", "seen", "result"),
    [
        ("equals", "Running", "Running", True),
        ("equals", "Running", "Pending", False),
        ("equals", 3, 3, True),
        ("equals", 3, 3.0, True),
        ("equals", 1, True, False),  # true is never 1
        ("equals", True, 1, False),
        ("equals", True, True, True),
        ("equals", "3", 3, False),
        ("equals", {"a": [1, 2]}, {"a": [1, 2]}, True),
        ("equals", {"a": [1, 2]}, {"a": [2, 1]}, False),
        ("equals", None, None, True),
        ("equals", None, MISSING, False),
        ("exists", True, "x", True),
        ("exists", True, "", True),
        ("exists", True, None, False),
        ("exists", True, MISSING, False),
        ("exists", False, MISSING, True),
        ("exists", False, None, True),
        ("exists", False, 0, False),
        ("at_least", 3, 3, True),
        ("at_least", 3, 2, False),
        ("at_least", 3, 3.5, True),
        ("at_least", 1, MISSING, False),  # an omitted count is 0
        ("at_least", 0, MISSING, True),
        ("at_least", 1, "3", False),
        ("at_least", 1, True, False),
        ("at_most", 0, MISSING, True),
        ("at_most", 2, 3, False),
        ("at_most", 2, 2, True),
        ("matches", "nginx:1\\.2[0-9]", "nginx:1.27", True),
        ("matches", "nginx", "nginx:1.27", False),  # the whole text
        ("matches", "[0-9]+", 80, True),
        ("matches", ".*", None, False),
        ("matches", ".*", MISSING, False),
        ("contains", "b", ["a", "b"], True),
        ("contains", "c", ["a", "b"], False),
        ("contains", {"name": "nginx"}, [{"name": "nginx", "image": "nginx:1.27"}], True),
        ("contains", {"name": "nginx", "image": "x"}, [{"name": "nginx", "image": "nginx:1.27"}], False),
        ("contains", "ell", "hello", True),
        ("contains", {"app": "web"}, {"app": "web", "tier": "front"}, True),
        ("contains", {"app": "db"}, {"app": "web"}, False),
        ("contains", "app", {"app": "web"}, True),
        ("contains", 1, 1, False),
        ("contains", "a", MISSING, False),
    ],
)
def test_holds(op: str, operand: Any, seen: Any, result: bool) -> None:
    assert holds(cond("x", op, operand), seen) is result


def test_equal_is_json_equality() -> None:
    assert equal([1, {"a": True}], [1.0, {"a": True}])
    assert not equal([1, {"a": True}], [1, {"a": 1}])
    assert not equal(0, False)


def test_bind_condition_treats_the_student_as_text() -> None:
    matches = Condition(parse_path("metadata.annotations.owner"), "matches", "$student.*", "$student-1")
    bound = bind_condition(matches, "student:a.b")
    assert holds(bound, "student:a.b-1")
    assert not holds(bound, "student:aXb-1")
    assert bound.example == "student:a.b-1", "the example names the student as the pattern does"
    bound = bind_condition(cond("x", "equals", {"user": "$student"}), "student:alice")
    assert bound.operand == {"user": "student:alice"}


def leaf_of(data: dict[str, Any]) -> StateLeaf:
    (leaf,) = parse_check(data, where="test").leaves()
    assert isinstance(leaf, StateLeaf)
    return leaf


DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}


@pytest.mark.parametrize(
    ("condition", "obj", "message"),
    [
        (
            {"path": "status.availableReplicas", "at_least": 3},
            {"status": {"availableReplicas": 1}},
            "expected at least 3 available replicas of deployment web, saw 1",
        ),
        (
            {"path": "status.availableReplicas", "at_least": 3},
            {"status": {}},
            "expected at least 3 available replicas of deployment web, saw 0",
        ),
        (
            {"path": "spec.replicas", "equals": 3},
            {"spec": {"replicas": 1}},
            "expected 3 replicas of deployment web, saw 1",
        ),
        (
            {"path": "status.readyReplicas", "at_most": 0},
            {"status": {"readyReplicas": 2}},
            "expected at most 0 ready replicas of deployment web, saw 2",
        ),
        (
            {"path": "spec.template.spec.containers[0].image", "equals": "nginx:1.27"},
            {"spec": {"template": {"spec": {"containers": [{"image": "nginx:1.25"}]}}}},
            "expected spec.template.spec.containers[0].image of deployment web to be nginx:1.27,"
            " saw nginx:1.25",
        ),
        (
            {"path": "status.conditions[type=Available].status", "equals": "True"},
            {"status": {"conditions": []}},
            "expected status.conditions[type=Available].status of deployment web to be True, saw nothing",
        ),
        (
            {"path": "spec.paused", "equals": True},
            {"spec": {"paused": False}},
            "expected spec.paused of deployment web to be true, saw false",
        ),
        (
            {"path": "metadata.uid", "exists": True},
            {"metadata": {}},
            "expected deployment web to have metadata.uid, but it has none",
        ),
        (
            {"path": "spec.paused", "exists": False},
            {"spec": {"paused": True}},
            "expected deployment web to have no spec.paused, saw true",
        ),
        (
            {"path": "metadata.name", "matches": "api-.*", "like": "api-1"},
            {"metadata": {"name": "web"}},
            # The author's example, never the regular expression: a student reads text.
            'expected metadata.name of deployment web to read like "api-1", saw web',
        ),
        (
            {"path": "metadata.finalizers", "contains": "x"},
            {"metadata": {"finalizers": ["a"]}},
            'expected metadata.finalizers of deployment web to contain x, saw ["a"]',
        ),
        (
            {"path": "spec.minReadySeconds", "at_least": 5},
            {"spec": {"minReadySeconds": 1}},
            # A number the messages have no words for (no translation of them) is named by its path.
            "expected spec.minReadySeconds of deployment web to be at least 5, saw 1",
        ),
        (
            {"path": "status.observedGeneration", "at_least": 2},
            {"status": {"observedGeneration": 1}},
            "expected status.observedGeneration of deployment web to be at least 2, saw 1",
        ),
    ],
)
def test_get_failures(condition: dict[str, Any], obj: Any, message: str) -> None:
    leaf = leaf_of({"id": "d", "state": {"get": DEPLOYMENT, "conditions": [condition]}})
    (failure,) = check_object(leaf, leaf.target, leaf.conditions, obj)
    assert failure.leaf_id == "d"
    assert failure.render() == message


def test_get_passes_and_not_found() -> None:
    leaf = leaf_of(
        {"state": {"get": {**DEPLOYMENT, "namespace": "shop"}, "conditions": [{"path": "a", "equals": 1}]}}
    )
    assert check_object(leaf, leaf.target, leaf.conditions, {"a": 1}) == ()
    (failure,) = check_object(leaf, leaf.target, leaf.conditions, None)
    assert failure.code == "state.not_found"
    assert failure.render() == "deployment web in namespace shop was not found"


def test_the_first_failing_condition_is_reported() -> None:
    leaf = leaf_of(
        {
            "state": {
                "get": DEPLOYMENT,
                "conditions": [{"path": "a", "at_least": 1, "at_most": 3}, {"path": "b", "exists": True}],
            }
        }
    )
    assert [c.op for c in leaf.conditions] == ["at_least", "at_most", "exists"]
    (failure,) = check_object(leaf, leaf.target, leaf.conditions, {"a": 4})
    assert failure.code == "state.at_most"


def pod(name: str, phase: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default"}, "status": {"phase": phase}}


PODS = {"apiVersion": "v1", "kind": "Pod", "labelSelector": "app=web"}


def test_list_counts_the_items_that_meet_every_condition() -> None:
    leaf = leaf_of(
        {
            "state": {
                "list": PODS,
                "count": {"at_least": 3},
                "conditions": [{"path": "status.phase", "equals": "Running"}],
            }
        }
    )
    assert leaf.count is not None
    items = [pod("web-1", "Running"), pod("web-2", "Pending"), pod("web-3", "Running")]
    main, nearest = check_list(leaf, leaf.target, leaf.conditions, leaf.count, items)
    assert main.code == "state.count_where"
    assert main.params["seen"] == 2
    assert main.render() == "expected at least 3 pods labelled app=web with status.phase = Running, saw 2"
    assert nearest.render() == "expected status.phase of pod web-2 to be Running, saw Pending"
    items.append(pod("web-4", "Running"))
    assert check_list(leaf, leaf.target, leaf.conditions, leaf.count, items) == ()


@pytest.mark.parametrize(
    ("count", "n", "message"),
    [
        ({"equals": 0}, 2, "expected exactly 0 pods labelled app=web, saw 2"),
        ({"at_most": 1}, 2, "expected at most 1 pods labelled app=web, saw 2"),
        ({"at_least": 1, "at_most": 2}, 0, "expected between 1 and 2 pods labelled app=web, saw 0"),
        ({"at_least": 3}, 2, "expected at least 3 pods labelled app=web, saw 2"),
    ],
)
def test_list_counts(count: dict[str, int], n: int, message: str) -> None:
    leaf = leaf_of({"state": {"list": PODS, "count": count}})
    assert leaf.count is not None
    failures = check_list(
        leaf, leaf.target, leaf.conditions, leaf.count, [pod(f"p{i}", "Running") for i in range(n)]
    )
    assert [f.render() for f in failures] == [message]


def test_list_phrases_name_namespaces_and_field_selectors() -> None:
    leaf = leaf_of(
        {
            "state": {
                "list": {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "allNamespaces": True,
                    "fieldSelector": "spec.nodeName=n",
                },
                "count": {"at_least": 1},
            }
        }
    )
    assert leaf.count == Count(at_least=1)
    (failure,) = check_list(leaf, leaf.target, leaf.conditions, leaf.count, [])
    assert (
        failure.render() == "expected one or more pods with fields spec.nodeName=n in every namespace, saw 0"
    )
    leaf = leaf_of({"state": {"list": {"apiVersion": "v1", "kind": "Pod", "namespace": "shop"}}})
    assert leaf.count is not None
    (failure,) = check_list(leaf, leaf.target, leaf.conditions, leaf.count, [])
    assert failure.render() == "expected one or more pods in namespace shop, saw 0"
