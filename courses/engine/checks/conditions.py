"""Conditions on objects: does the object the API server returned look the way the step asks?

A state leaf names fields by path (``paths.py``) and says what each must be:

- ``equals``: the value, exactly (a number equals the same number written as 3 or 3.0; ``true`` is
  never 1);
- ``exists: true`` / ``exists: false``: the field is there (and not null) / is not;
- ``at_least`` / ``at_most``: a number. A count that is not there counts as 0, because the API leaves
  zero counts out of an object (Go's ``omitempty``: a Deployment with no available replicas has no
  ``status.availableReplicas`` at all), and "expected at least 1, saw nothing" would be a riddle;
- ``matches``: a regular expression that must match the whole text (``fullmatch``); a failure shows
  the author's example of a text it accepts (``like``), since a student reads text, not patterns;
- ``contains``: a list holds an item equal to this one (for a map, an item that has at least these
  keys and values: ``{name: nginx}`` finds the container named nginx); a text holds this text; a map
  holds these keys and values, or this key.

``check_object`` answers with the first ``Failure`` of an object, or None when every condition holds;
``check_list`` counts the items that meet every condition against the leaf's ``count``. Pure functions,
with ``$student`` already bound in the conditions (``bind_condition``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from courses.engine.checks.describe import (
    bound_phrase,
    condition_phrase,
    count_label,
    field_label,
    is_count_field,
    item_phrase,
    object_phrase,
    objects_phrase,
)
from courses.engine.checks.failures import Failure, Param, show
from courses.engine.checks.paths import MISSING, resolve
from courses.engine.checks.spec import Condition, Count, StateLeaf, Target, bind_value


def bind_condition(condition: Condition, student: str) -> Condition:
    """``condition`` with ``$student`` replaced in its operand."""
    operand = bind_value(condition.operand, student)
    if condition.op == "matches" and operand != condition.operand:
        # The student's name is text to match, not a pattern (a "." in it matches only a ".").
        operand = condition.operand.replace("$student", re.escape(student))
    return Condition(condition.path, condition.op, operand, bind_value(condition.example, student))


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def equal(seen: Any, expected: Any) -> bool:
    """JSON equality: booleans only equal booleans, numbers compare by value."""
    if isinstance(seen, bool) or isinstance(expected, bool):
        return isinstance(seen, bool) and isinstance(expected, bool) and seen is expected
    if _is_number(seen) and _is_number(expected):
        return bool(seen == expected)
    if isinstance(seen, Mapping) and isinstance(expected, Mapping):
        return seen.keys() == expected.keys() and all(equal(seen[k], expected[k]) for k in seen)
    if isinstance(seen, list) and isinstance(expected, list):
        return len(seen) == len(expected) and all(equal(a, b) for a, b in zip(seen, expected, strict=True))
    return type(seen) is type(expected) and bool(seen == expected)


def _includes(item: Any, expected: Any) -> bool:
    """``item`` is ``expected``, or (for maps) has at least ``expected``'s keys with equal values."""
    if isinstance(expected, Mapping):
        return isinstance(item, Mapping) and all(
            k in item and _includes(item[k], v) for k, v in expected.items()
        )
    return equal(item, expected)


def holds(condition: Condition, seen: Any) -> bool:
    """Whether the value ``seen`` at the condition's path (maybe ``MISSING``) meets the condition."""
    op, operand = condition.op, condition.operand
    if op == "exists":
        present = seen is not MISSING and seen is not None
        return present is operand
    if op == "equals":
        return seen is not MISSING and equal(seen, operand)
    if op in ("at_least", "at_most"):
        number = 0 if seen is MISSING else seen
        if not _is_number(number):
            return False
        return bool(number >= operand) if op == "at_least" else bool(number <= operand)
    if op == "matches":
        if isinstance(seen, bool) or not isinstance(seen, str | int | float):
            return False
        return re.fullmatch(operand, str(seen)) is not None
    # contains
    if isinstance(seen, list):
        return any(_includes(item, operand) for item in seen)
    if isinstance(seen, str):
        return isinstance(operand, str) and operand in seen
    if isinstance(seen, Mapping):
        if isinstance(operand, Mapping):
            return _includes(seen, operand)
        return isinstance(operand, str) and operand in seen
    return False


def failure(leaf_id: str | None, condition: Condition, seen: Any, what: Param) -> Failure:
    """What to tell the student when ``condition`` does not hold for the object ``what``."""
    op, operand, path = condition.op, condition.operand, condition.path
    params: dict[str, Param] = {"object": what, "field": field_label(path), "path": path.text}
    if op == "exists":
        if operand:
            return Failure(leaf_id, "state.exists", params)
        return Failure(leaf_id, "state.absent", {**params, "seen": show(seen)})
    if op in ("at_least", "at_most") and seen is MISSING:
        seen = 0  # a count the API left out (omitempty) is 0
    params.update(expected=show(operand), seen=show(seen))
    if op == "matches":
        params["example"] = operand if condition.example is None else condition.example
        return Failure(leaf_id, "state.matches", params)
    if op in ("equals", "at_least", "at_most") and is_count_field(path, operand) and _is_number(seen):
        # "saw 1" reads as a count; "saw nothing" does not ("expected 3 replicas ..., saw nothing").
        params["field"] = count_label(path)
        return Failure(leaf_id, f"state.{op}_count", params)
    return Failure(leaf_id, f"state.{op}", params)


def first_failure(
    leaf_id: str | None, conditions: Sequence[Condition], obj: Any, what: Param
) -> Failure | None:
    """The first condition ``obj`` does not meet, as a ``Failure``; None when it meets them all."""
    for condition in conditions:
        seen = resolve(obj, condition.path)
        if not holds(condition, seen):
            return failure(leaf_id, condition, seen, what)
    return None


def check_object(
    leaf: StateLeaf, target: Target, conditions: Sequence[Condition], obj: Any
) -> tuple[Failure, ...]:
    """A ``get`` leaf's verdict on the object read (None: it was not found)."""
    if obj is None:
        return (Failure(leaf.id, "state.not_found", {"object": object_phrase(target)}),)
    found = first_failure(leaf.id, conditions, obj, object_phrase(target))
    return () if found is None else (found,)


def check_list(
    leaf: StateLeaf, target: Target, conditions: Sequence[Condition], count: Count, items: Sequence[Any]
) -> tuple[Failure, ...]:
    """A ``list`` leaf's verdict: how many items meet every condition, against ``count``.

    When too few do, the first item that fell short says why, so "expected at least 3 pods labelled
    app=web with status.phase = Running, saw 1" comes with "expected status.phase of pod web-2 to be
    Running, saw Pending".
    """
    meeting = 0
    nearest: Failure | None = None
    for item in items:
        found = first_failure(leaf.id, conditions, item, item_phrase(target, item)) if conditions else None
        if found is None:
            meeting += 1
        elif nearest is None:
            nearest = found
    if count.holds(meeting):
        return ()
    params: dict[str, Param] = {
        "bound": bound_phrase(count),
        "objects": objects_phrase(target),
        "seen": meeting,
    }
    if conditions:
        params["conditions"] = tuple(condition_phrase(c) for c in conditions)
        main = Failure(leaf.id, "state.count_where", params)
    else:
        main = Failure(leaf.id, "state.count", params)
    too_few = (count.at_least is not None and meeting < count.at_least) or (
        count.equals is not None and meeting < count.equals
    )
    return (main, nearest) if too_few and nearest is not None else (main,)


__all__ = [
    "bind_condition",
    "check_list",
    "check_object",
    "equal",
    "failure",
    "first_failure",
    "holds",
]
