"""Which hint comes next: the one tied to what the check saw failing, then the rest in order."""

from __future__ import annotations

from dataclasses import dataclass

from courses.chapters.hints import hint_order, hints_to_show


@dataclass(frozen=True)
class H:
    id: str
    when: str | None = None


HINTS = [H("open-the-form"), H("name-it", when="stored"), H("watch-it", when="delivered"), H("last")]


def test_without_failing_leaves_hints_come_in_the_order_written() -> None:
    assert hint_order(HINTS, failing=()) == ["open-the-form", "name-it", "watch-it", "last"]


def test_the_hint_tied_to_a_failing_leaf_comes_first() -> None:
    assert hint_order(HINTS, failing={"delivered"})[0] == "watch-it"
    assert hint_order(HINTS, failing={"delivered", "stored"})[:2] == ["name-it", "watch-it"]


def test_hints_already_shown_keep_their_place() -> None:
    # The student saw "open-the-form" first; now "stored" fails: the next one is its hint.
    assert hints_to_show(HINTS, shown=2, failing={"stored"}, first=["open-the-form"]) == [
        "open-the-form",
        "name-it",
    ]


def test_never_more_hints_than_there_are_and_unknown_ids_are_dropped() -> None:
    assert hints_to_show(HINTS, shown=10, failing=(), first=["gone"]) == [
        "open-the-form",
        "name-it",
        "watch-it",
        "last",
    ]
    assert hints_to_show(HINTS, shown=0, failing=()) == []
