"""Incremental equals all-at-once: offering events one by one finds exactly what a brute-force search
over the whole list finds.

The reference below states the rules of a trace leaf once more, as plainly as possible: try every
choice of events for the steps (in seq order; a step with ``times: {at_least: N}`` is N steps), keep
those that fit every step, ``same_request``, ``within`` and ``not_before``, and take the earliest last
event. It shares no code with
``tracepattern.py`` but the parser, so a shortcut of the incremental matcher that loses a match (or
invents one) shows up as a counterexample.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from courses.engine.checks import Status, parse_check
from courses.engine.checks.spec import EventMatcher, TraceLeaf

STUDENT = "student:alice"
IDS = ["a", "b"]

# -- events ----------------------------------------------------------------------------------------------


@st.composite
def events(draw: st.DrawFn) -> list[dict[str, Any]]:
    n = draw(st.integers(min_value=2, max_value=11))
    out: list[dict[str, Any]] = []
    ts = 100.0
    for seq in range(1, n + 1):
        ts += draw(st.sampled_from([0.0, 0.5, 1.0, 3.0]))
        kind = draw(st.sampled_from(["request.received", "request.received", "store.txn", "reconcile"]))
        event: dict[str, Any] = {"seq": seq, "ts": ts, "type": kind}
        if kind == "request.received":
            event["id"] = draw(st.sampled_from(IDS))
            event["verb"] = draw(st.sampled_from(["create", "update"]))
            event["user"] = draw(st.sampled_from([STUDENT, "bob"]))
        elif kind == "store.txn":
            event["id"] = draw(st.sampled_from([*IDS, None]))
            event["op"] = "txn"
            event["revision"] = seq
            key = draw(st.sampled_from(["/registry/pods/default/web", "/registry/configmaps/default/x"]))
            event["writes"] = [{"type": draw(st.sampled_from(["PUT", "DELETE"])), "key": key}]
        else:
            event["controller"] = draw(st.sampled_from(["rs", "deployment"]))
            event["key"] = "default/web"
            event["result"] = "success"
            event["requests"] = draw(st.lists(st.sampled_from(IDS), max_size=2, unique=True))
        out.append(event)
    return out


# -- checks ----------------------------------------------------------------------------------------------


@st.composite
def matchers(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["request.received", "store.txn", "reconcile"]))
    spec: dict[str, Any] = {"type": kind}
    if kind == "request.received":
        if draw(st.integers(0, 2)) == 0:
            spec["verb"] = draw(st.sampled_from(["create", "update", "*e"]))
        if draw(st.integers(0, 2)) == 0:
            spec["user"] = draw(st.sampled_from(["$student", "bob", "*o*"]))
    elif kind == "store.txn":
        choice = draw(st.sampled_from(["none", "none", "type", "key", "both"]))
        if choice != "none":
            writes: dict[str, Any] = {}
            if choice in ("type", "both"):
                writes["type"] = draw(st.sampled_from(["PUT", "DELETE"]))
            if choice in ("key", "both"):
                writes["key"] = draw(st.sampled_from(["/registry/pods/*", "*/x"]))
            spec["writes"] = writes
    elif draw(st.integers(0, 2)) == 0:
        spec["controller"] = draw(st.sampled_from(["rs", "d*"]))
    if draw(st.integers(0, 3)) == 0:
        spec["times"] = {"at_least": draw(st.integers(min_value=1, max_value=3))}
    return spec


def counted(step: Mapping[str, Any]) -> bool:
    return int(step.get("times", {}).get("at_least", 1)) > 1


@st.composite
def trace_leaves(draw: st.DrawFn) -> dict[str, Any]:
    steps = draw(st.lists(matchers(), min_size=1, max_size=3))
    for index in range(1, len(steps)):
        if draw(st.booleans()):
            earlier = draw(st.integers(min_value=0, max_value=index - 1))
            if counted(steps[earlier]):
                continue  # as names one event: never a step that waits for several
            steps[earlier]["as"] = f"s{earlier}"
            steps[index]["same_request"] = f"s{earlier}"
    spec: dict[str, Any] = {"sequence": steps}
    if draw(st.booleans()):
        spec["not_before"] = [{k: v for k, v in draw(matchers()).items() if k != "times"}]
    within: dict[str, Any] = {}
    if draw(st.booleans()):
        within["events"] = draw(st.integers(min_value=1, max_value=4))
    if draw(st.booleans()):
        within["seconds"] = draw(st.sampled_from([0.5, 1.0, 2.0, 4.0]))
    if within:
        spec["within"] = within
    return spec


# -- the reference -------------------------------------------------------------------------------------


def fits(expected: Any, value: Any) -> bool:
    if isinstance(value, list) and not isinstance(expected, list):
        return any(fits(expected, item) for item in value)
    if isinstance(expected, str):
        text = expected.replace("$student", STUDENT)
        pattern = ".*".join(re.escape(part) for part in text.split("*"))
        return isinstance(value, str) and re.fullmatch(pattern, value, re.DOTALL) is not None
    if isinstance(expected, dict):
        return isinstance(value, Mapping) and all(
            k in value and fits(v, value[k]) for k, v in expected.items()
        )
    return bool(value == expected)


def event_fits(matcher: EventMatcher, event: Mapping[str, Any]) -> bool:
    return event["type"] == matcher.type and all(
        name in event and fits(value, event[name]) for name, value in matcher.fields
    )


def ids(event: Mapping[str, Any]) -> set[str]:
    found = {event["id"]} if event.get("id") else set()
    return found | set(event.get("requests") or ())


def reference(leaf: TraceLeaf, all_events: list[dict[str, Any]], after: int | None) -> int | None:
    """The seq of the earliest event that completes ``leaf`` after ``after``, by trying everything."""
    if after is None:
        return None
    evs = [e for e in all_events if e["seq"] > after]
    block = next(
        (i for i, e in enumerate(evs) if any(event_fits(m, e) for m in leaf.not_before)),
        len(evs),
    )
    steps = [m for m in leaf.sequence for _ in range(m.at_least)]  # times: N steps in a row
    names = {m.as_name: k for k, m in enumerate(steps) if m.as_name}
    best: int | None = None
    for combo in itertools.combinations(range(len(evs)), len(steps)):
        if combo[0] > block:
            continue
        chosen = [evs[i] for i in combo]
        if not all(event_fits(m, e) for m, e in zip(steps, chosen, strict=True)):
            continue
        if not all(
            m.same_request is None or ids(e) & ids(chosen[names[m.same_request]])
            for m, e in zip(steps, chosen, strict=True)
        ):
            continue
        within = leaf.within
        if within is not None:
            if within.events is not None and chosen[-1]["seq"] - chosen[0]["seq"] > within.events:
                continue
            if within.seconds is not None and chosen[-1]["ts"] - chosen[0]["ts"] > within.seconds:
                continue
        last = int(chosen[-1]["seq"])
        best = last if best is None else min(best, last)
    return best


# -- the property ----------------------------------------------------------------------------------------


def _e(seq: int, type_: str, **fields: Any) -> dict[str, Any]:
    return {"seq": seq, "ts": 100.0 + seq, "type": type_, **fields}


_RECONCILE = {"controller": "rs", "key": "k", "result": "success"}


@settings(max_examples=400, deadline=None)
@given(
    first=trace_leaves(),
    second=st.one_of(st.none(), trace_leaves()),
    trace=events(),
    since_seq=st.integers(0, 3),
)
# A newer start must replace an older one that the window will not let finish.
@example(
    first={"sequence": [{"type": "reconcile"}, {"type": "store.txn"}], "within": {"events": 2}},
    second=None,
    trace=[
        _e(1, "reconcile", **_RECONCILE),
        _e(2, "reconcile", **_RECONCILE),
        _e(3, "request.received", id="a"),
        _e(4, "store.txn", op="txn", revision=4),
    ],
    since_seq=0,
)
# A named middle step keeps every candidate: the second create is the one whose write comes.
@example(
    first={
        "sequence": [
            {"type": "reconcile"},
            {"type": "request.received", "verb": "create", "as": "b"},
            {"type": "store.txn", "same_request": "b"},
        ]
    },
    second=None,
    trace=[
        _e(1, "reconcile", **_RECONCILE),
        _e(2, "request.received", id="a", verb="create"),
        _e(3, "request.received", id="b", verb="create"),
        _e(4, "store.txn", id="b", op="txn", revision=4),
    ],
    since_seq=0,
)
# A later start that counted less replaces none that counted more: the window lets only it finish.
@example(
    first={
        "sequence": [{"type": "reconcile", "times": {"at_least": 3}}, {"type": "store.txn"}],
        "within": {"events": 3},
    },
    second=None,
    trace=[
        _e(1, "reconcile", **_RECONCILE),
        _e(2, "request.received", id="a"),
        _e(3, "reconcile", **_RECONCILE),
        _e(4, "reconcile", **_RECONCILE),
        _e(5, "reconcile", **_RECONCILE),
        _e(6, "store.txn", op="txn", revision=6),
    ],
    since_seq=0,
)
# Counted events of the same request as a named step: the other request's events do not count.
@example(
    first={
        "sequence": [
            {"type": "request.received", "as": "r"},
            {"type": "store.txn", "same_request": "r", "times": {"at_least": 2}},
        ]
    },
    second=None,
    trace=[
        _e(1, "request.received", id="a"),
        _e(2, "request.received", id="b"),
        _e(3, "store.txn", id="a", op="txn", revision=3),
        _e(4, "store.txn", id="b", op="txn", revision=4),
        _e(5, "store.txn", id="b", op="txn", revision=5),
    ],
    since_seq=0,
)
# The window counts the seqs between the first and the last event, both ends included in "events".
@example(
    first={"sequence": [{"type": "reconcile"}, {"type": "store.txn"}], "within": {"events": 2}},
    second=None,
    trace=[
        _e(1, "reconcile", **_RECONCILE),
        _e(2, "request.received", id="a"),
        _e(3, "store.txn", op="txn", revision=3),
    ],
    since_seq=0,
)
def test_incremental_matches_the_reference(
    first: dict[str, Any], second: dict[str, Any] | None, trace: list[dict[str, Any]], since_seq: int
) -> None:
    data: dict[str, Any] = {"id": "first", "trace": first}
    if second is not None:
        data = {"all": [data, {"id": "second", "trace": {**second, "since": "first"}}]}
    check = parse_check(data, where="property")
    leaves = check.leaves()
    assert all(isinstance(leaf, TraceLeaf) for leaf in leaves)

    evaluator = check.evaluator(student=STUDENT, since_seq=since_seq, stability=0)
    for event in trace:
        evaluator.offer(event)

    first_leaf = leaves[0]
    assert isinstance(first_leaf, TraceLeaf)
    expected_first = reference(first_leaf, trace, since_seq)
    got_first = evaluator.matched("first")
    assert (got_first.last_seq if got_first else None) == expected_first
    holds = expected_first is not None
    if second is not None:
        second_leaf = leaves[1]
        assert isinstance(second_leaf, TraceLeaf)
        expected_second = reference(second_leaf, trace, expected_first)
        got_second = evaluator.matched("second")
        assert (got_second.last_seq if got_second else None) == expected_second
        holds = holds and expected_second is not None
    assert (evaluator.verdict(0.0).status is Status.PASSED) is holds


@settings(max_examples=100, deadline=None)
@given(spec=trace_leaves(), trace=events(), cut=st.integers(0, 11))
def test_batches_do_not_matter(spec: dict[str, Any], trace: list[dict[str, Any]], cut: int) -> None:
    """The same events in two batches (``offer_all``) or one at a time: the same verdict."""
    check = parse_check({"id": "t", "trace": spec}, where="property")
    one = check.evaluator(student=STUDENT, since_seq=0, stability=0)
    for event in trace:
        one.offer(event)
    two = check.evaluator(student=STUDENT, since_seq=0, stability=0)
    two.offer_all(trace[:cut])
    two.offer_all(trace[cut:])
    assert one.verdict(0.0) == two.verdict(0.0) or (
        one.verdict(0.0).status == two.verdict(0.0).status
        and [f.render() for f in one.verdict(0.0).failures] == [f.render() for f in two.verdict(0.0).failures]
    )
