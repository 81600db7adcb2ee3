"""Recording and reading a student's progress (HackSoft style: services write, selectors read).

Every function is keyword-only and synchronous (the ORM); asynchronous code (the chapter's socket)
calls the ``a``-prefixed twins, which run them off the event loop. A student only ever reads and
writes their own rows: every function takes the user and filters by it.

A pass is latched: ``record_pass`` sets the time once and never clears it, so a check that passed
stays passed whatever the cluster does afterwards, and a reset of the sandbox keeps it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from channels.db import database_sync_to_async
from django.db import transaction
from django.utils import timezone

from courses.progress.models import ChapterPosition, StepProgress

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

    #: Whoever is asking: a signed-in person, or a visitor (who has no progress).
    Person = AbstractBaseUser | AnonymousUser


@dataclass(frozen=True, slots=True)
class StepState:
    """What a student has done on one step."""

    step: str
    passed: datetime | None = None
    hints: int = 0
    solution: bool = False

    @property
    def done(self) -> bool:
        return self.passed is not None


def _row(user: Person, course: str, chapter: str, step: str) -> StepProgress:
    row, _ = StepProgress.objects.get_or_create(user_id=user.pk, course=course, chapter=chapter, step=step)
    return row


def record_open(*, user: Person, course: str, chapter: str, step: str) -> None:
    """The student opened ``step``: remember it as where they are in the chapter."""
    where = ChapterPosition.objects.filter(course=course, chapter=chapter, step=step)
    if where.filter(user_id=user.pk or 0).exists():
        return  # still where they were: its progress row was made when they first opened it
    with transaction.atomic():
        _row(user, course, chapter, step)
        ChapterPosition.objects.update_or_create(
            user_id=user.pk, course=course, chapter=chapter, defaults={"step": step}
        )


def record_pass(*, user: Person, course: str, chapter: str, step: str) -> datetime:
    """The step's check passed: latch it (the first time counts). Returns when it passed."""
    with transaction.atomic():
        row = _row(user, course, chapter, step)
        if row.passed is None:
            row.passed = timezone.now()
            row.save(update_fields=["passed"])
        return row.passed


def record_hint(*, user: Person, course: str, chapter: str, step: str, shown: int) -> int:
    """The student asked for hint number ``shown`` (1-based); the count only grows. Returns it."""
    with transaction.atomic():
        row = _row(user, course, chapter, step)
        if shown > row.hints:
            row.hints = shown
            row.save(update_fields=["hints"])
        return row.hints


def record_solution(*, user: Person, course: str, chapter: str, step: str) -> None:
    """The student asked to see (or run) the solution."""
    with transaction.atomic():
        row = _row(user, course, chapter, step)
        if not row.solution:
            row.solution = True
            row.save(update_fields=["solution"])


def chapter_progress(*, user: Person, course: str, chapter: str) -> dict[str, StepState]:
    """The student's state on each step of a chapter they touched, by step id."""
    if not user.is_authenticated:
        return {}
    rows = StepProgress.objects.filter(user_id=user.pk, course=course, chapter=chapter)
    return {r.step: StepState(r.step, r.passed, r.hints, r.solution) for r in rows}


def course_progress(*, user: Person, course: str) -> dict[str, dict[str, StepState]]:
    """The student's state on every step of a course, by chapter and step id."""
    found: dict[str, dict[str, StepState]] = {}
    if not user.is_authenticated:
        return found
    for r in StepProgress.objects.filter(user_id=user.pk, course=course):
        found.setdefault(r.chapter, {})[r.step] = StepState(r.step, r.passed, r.hints, r.solution)
    return found


def position(*, user: Person, course: str, chapter: str, steps: Iterable[str]) -> str | None:
    """The step to resume the chapter at: the one last open if it still exists, else None."""
    if not user.is_authenticated:
        return None
    row = ChapterPosition.objects.filter(user_id=user.pk, course=course, chapter=chapter).first()
    return row.step if row is not None and row.step in set(steps) else None


arecord_open = database_sync_to_async(record_open)
arecord_pass = database_sync_to_async(record_pass)
arecord_hint = database_sync_to_async(record_hint)
arecord_solution = database_sync_to_async(record_solution)
achapter_progress = database_sync_to_async(chapter_progress)
