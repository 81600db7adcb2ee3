"""What a failing step says, in both languages: words, never keys; each thing once; one language.

The course's own checks are evaluated against a fresh sandbox (no objects, no trace events) and
against bare objects (there, with none of the fields a check asks for), and every failure is rendered
in English and in Simplified Chinese.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from django.utils import translation

from courses.chapters.hints import hint_order
from courses.engine import content
from courses.engine.checks import Check, Evaluator, ReadResult, Status, parse_check
from courses.engine.checks.conditions import check_object
from courses.engine.checks.spec import StateLeaf

ALICE = "student:alice"
LANGUAGES = ("en", "zh-hans")
CJK = re.compile(r"[\u4e00-\u9fff]")
#: Two Chinese characters (or a character and Chinese punctuation) with a space between them.
CJK_GAP = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef] [\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")
#: A template's placeholder, a message id or a code left in a message ("%(object)s", "state.equals").
RAW = re.compile(r"%\(\w+\)|\{\w+\}|\$student|\b(?:state|trace|not|unknown)\.[a-z_]+\b")


def _checks() -> Iterator[tuple[str, Check]]:
    for chapter in content.load_course("control-plane").chapters:
        for step in chapter.steps:
            yield f"{chapter.slug}/{step.id}", step.check
            if step.wait is not None:
                yield f"{chapter.slug}/{step.id} (wait)", step.wait


CHECKS = list(_checks())
BARE = {"metadata": {"name": "x", "namespace": "default"}}


def _fresh(check: Check, *, bare: bool) -> Evaluator:
    evaluator = check.evaluator(student=ALICE, since_seq=0, stability=0.0)
    for read in evaluator.reads():
        if bare:
            evaluator.give(read, ReadResult.ok(BARE) if read.exact else ReadResult.ok({"items": [BARE]}))
        else:
            evaluator.give(read, ReadResult.not_found() if read.exact else ReadResult.ok({"items": []}))
    return evaluator


def _said(evaluator: Evaluator, language: str) -> list[str]:
    verdict = evaluator.verdict(0.0)
    with translation.override(language):
        return [failure.render() for failure in verdict.failures]


@pytest.mark.parametrize("bare", [False, True], ids=["empty", "bare"])
@pytest.mark.parametrize(("where", "check"), CHECKS, ids=[where for where, _ in CHECKS])
def test_course_checks_say_each_failure_once_in_words_of_one_language(
    where: str, check: Check, bare: bool
) -> None:
    evaluator = _fresh(check, bare=bare)
    for language in LANGUAGES:
        said = _said(evaluator, language)
        assert len(said) == len(set(said)), f"{where} says a failure twice in {language}: {said}"
        for message in said:
            assert not RAW.search(message), f"{where}: a raw key in {message!r}"
            if language == "en":
                assert not CJK.search(message), f"{where}: Chinese in the English {message!r}"
            else:
                # Identifiers stay as written (kinds, paths, values); words around them are Chinese.
                assert CJK.search(message), f"{where}: no Chinese in {message!r}"
                assert "replicas" not in re.sub(r"[\w.\[\]=]*[Rr]eplicas\w*", "", message), message
                assert " of " not in message and "expected" not in message and "saw " not in message
                assert not CJK_GAP.search(message), f"{where}: a space between Chinese words in {message!r}"


# -- the same failure, once -------------------------------------------------------------------------

REQUEST = {"type": "request.received", "user": "$student", "resource": "configmaps", "as": "change"}
WRITE = {"type": "store.txn", "op": "txn", "same_request": "change"}
WATCH = {"type": "watch.event", "to": "user:$student", "event": "MODIFIED"}
CM = {"apiVersion": "v1", "kind": "ConfigMap", "name": "app-config"}
COLOR = {"path": "data.color", "exists": True}


def build(data: Any) -> Evaluator:
    return parse_check(data, where="test").evaluator(student=ALICE, since_seq=0, stability=0.0)


def test_two_leaves_that_fail_alike_are_said_once_and_both_fail() -> None:
    evaluator = build(
        {
            "all": [
                {"id": "written", "trace": {"sequence": [REQUEST, WRITE]}},
                {"id": "delivered", "trace": {"sequence": [REQUEST, WRITE, WATCH]}},
                {"id": "stored", "state": {"get": CM, "conditions": [COLOR]}},
                {"id": "blue", "state": {"get": CM, "conditions": [{**COLOR, "equals": "blue"}]}},
            ]
        }
    )
    for read in evaluator.reads():
        evaluator.give(read, ReadResult.not_found())
    verdict = evaluator.verdict(0.0)
    assert verdict.status is Status.FAILING
    assert verdict.failing_ids == {"written", "delivered", "stored", "blue"}
    with translation.override("en"):
        assert [f.render() for f in verdict.failures] == [
            "no request for configmaps by student:alice was seen since this step began",
            "configmap app-config was not found",
        ]
    assert [f.leaf_id for f in verdict.failures] == ["written", "stored"]


# -- a leaf that has not begun -------------------------------------------------------------------------

SINCE = {
    "all": [
        {"id": "written", "trace": {"sequence": [REQUEST, WRITE]}},
        {"id": "delivered", "trace": {"since": "written", "sequence": [WATCH]}},
    ]
}


def event(seq: int, type_: str, **fields: Any) -> dict[str, Any]:
    return {"seq": seq, "ts": float(seq), "type": type_, **fields}


def test_a_leaf_since_another_says_nothing_before_the_other_completed() -> None:
    evaluator = build(SINCE)
    verdict = evaluator.verdict(0.0)
    # Not "no watch event ... was seen since the store transaction ...": the student made none yet.
    assert verdict.failing_ids == {"written"}
    with translation.override("en"):
        assert [f.render() for f in verdict.failures] == [
            "no request for configmaps by student:alice was seen since this step began"
        ]
    evaluator.offer(event(1, "request.received", id="r1", user=ALICE, resource="configmaps"))
    evaluator.offer(event(2, "store.txn", op="txn", revision=2, requests=["r1"], writes=[]))
    verdict = evaluator.verdict(0.0)
    assert verdict.failing_ids == {"delivered"}
    with translation.override("en"):
        assert [f.render() for f in verdict.failures] == [
            "no MODIFIED watch event to user:student:alice was seen since the store transaction (op=txn)"
        ]


def test_a_leaf_since_another_still_speaks_when_nothing_else_would() -> None:
    # The leaf it waits for is under a ``not``: it holds while it has not happened, and says nothing.
    evaluator = build(
        {
            "all": [
                {"id": "no-write", "not": {"id": "written", "trace": {"sequence": [REQUEST, WRITE]}}},
                {"id": "delivered", "trace": {"since": "written", "sequence": [WATCH]}},
            ]
        }
    )
    verdict = evaluator.verdict(0.0)
    assert verdict.status is Status.FAILING
    assert [f.leaf_id for f in verdict.failures] == ["delivered"]


# -- counts, in the student's language --------------------------------------------------------------

DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}


def failure_of(condition: dict[str, Any], obj: Any, language: str) -> str:
    (leaf,) = parse_check({"state": {"get": DEPLOYMENT, "conditions": [condition]}}, where="t").leaves()
    assert isinstance(leaf, StateLeaf)
    (failure,) = check_object(leaf, leaf.target, leaf.conditions, obj)
    with translation.override(language):
        return failure.render()


@pytest.mark.parametrize(
    ("condition", "obj", "english", "chinese"),
    [
        (
            {"path": "status.availableReplicas", "at_least": 3},
            {"status": {"availableReplicas": 1}},
            "expected at least 3 available replicas of deployment web, saw 1",
            "期望 deployment web 至少有 3 个可用副本，实际为 1 个",  # noqa: RUF001
        ),
        (
            {"path": "spec.replicas", "equals": 3},
            {"spec": {"replicas": 1}},
            "expected 3 replicas of deployment web, saw 1",
            "期望 deployment web 有 3 个副本，实际为 1 个",  # noqa: RUF001
        ),
        (
            # "saw nothing" is no count: not "实际为无个".
            {"path": "spec.replicas", "equals": 3},
            {"spec": {}},
            "expected spec.replicas of deployment web to be 3, saw nothing",
            "期望 deployment web 的 spec.replicas 为 3，实际为无",  # noqa: RUF001
        ),
        (
            # A number the messages have no words for is named by its path, in every language.
            {"path": "spec.minReadySeconds", "at_least": 5},
            {"spec": {"minReadySeconds": 1}},
            "expected spec.minReadySeconds of deployment web to be at least 5, saw 1",
            "期望 deployment web 的 spec.minReadySeconds 至少为 5，实际为 1",  # noqa: RUF001
        ),
    ],
)
def test_counts_are_said_in_the_students_language(
    condition: dict[str, Any], obj: Any, english: str, chinese: str
) -> None:
    assert failure_of(condition, obj, "en") == english
    assert failure_of(condition, obj, "zh-hans") == chinese


# -- the hints of chapter 1's watch step ----------------------------------------------------------


def test_a_watch_hint_waits_for_a_change_that_was_made() -> None:
    chapter = content.load_course("control-plane").chapter("one-hub")
    assert chapter is not None
    step = chapter.step("watch-a-change")
    assert step is not None
    verdict = _fresh(step.check, bare=False).verdict(0.0)
    assert verdict.failing_ids == {"updated"}
    # "Your change reached etcd, but no watch of yours was open" comes last while no change was made.
    assert hint_order(step.hints, failing=verdict.failing_ids)[-1] == "watch-was-not-open"
    assert hint_order(step.hints, failing={"delivered"})[0] == "watch-was-not-open"


def test_a_map_an_event_must_carry_is_spelled_out_leaf_by_leaf_not_cut_short() -> None:
    nodes = {
        f"node-{i}": {
            "filters": {"NodeResourcesFit": {"code": "Unschedulable", "reasons": "Insufficient cpu"}}
        }
        for i in (1, 2, 3)
    }
    evaluator = build(
        {
            "id": "refused",
            "trace": {"sequence": [{"type": "scheduler.decision", "name": "big", "nodes": nodes}]},
        }
    )
    with translation.override("en"):
        (said,) = [f.render() for f in evaluator.verdict(0.0).failures]
    assert "..." not in said, f"the detail was cut short: {said}"
    for i in (1, 2, 3):
        assert f"nodes.node-{i}.filters.NodeResourcesFit.code=Unschedulable" in said, said
        assert f"nodes.node-{i}.filters.NodeResourcesFit.reasons=Insufficient cpu" in said, said
