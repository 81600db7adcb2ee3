"""Playing a chapter as a student would, against a real lab: the steps of
``tests/courses/chapters/test_play_chapters*.py`` (split in two modules so that two test workers
play them side by side).

Each chapter is played by a student of its own on a sandbox of its own, so the chapters of a module
are played at the same time (``play_chapters``): most of a playthrough is waiting for the cluster's
timers (a node going NotReady, a Deployment rolling out), which overlaps. Each chapter's test then
reports its own chapter's outcome.

For each step, on the student's own sandbox: its check must fail before the work is done (a check
that passes before is a defect), then the step's common mistake (its ``mistake``, run like a solution)
must leave the check failing at the leaf it names, with words for it, and then the step's solution
runs as the student and the check must pass within its time budget.
"""

from __future__ import annotations

import asyncio

from courses.engine.content import load_course
from tests.support.lab import LiveLab
from tests.support.student import ChapterSocket, chapter_socket, sign_up

COURSE = "control-plane"
#: A step's time budget: from its solution starting to its check passing.
BUDGET_SECONDS = 45


def chapters(*, first: int, last: int) -> list[str]:
    """The slugs of the course's chapters ``first`` to ``last`` (numbered from 1)."""
    return [chapter.slug for chapter in load_course(COURSE).chapters[first - 1 : last]]


def play_chapters(lab: LiveLab, slugs: list[str]) -> dict[str, Exception | None]:
    """Play every chapter of ``slugs`` at the same time in ``lab``; what each raised (None: it passed)."""

    async def one(chapter: str) -> Exception | None:
        try:
            await play_chapter(lab, chapter)
        except Exception as error:  # the chapter's own test raises it again
            return error
        return None

    async def every() -> list[Exception | None]:
        return await asyncio.gather(*(one(chapter) for chapter in slugs))

    return dict(zip(slugs, asyncio.run(every()), strict=True))


async def play_chapter(lab: LiveLab, chapter: str) -> None:
    """Every step of ``chapter``: failing first, failing at its mistake's leaf, then passing."""
    found = load_course(COURSE).chapter(chapter)
    assert found is not None
    steps = found.steps
    # In a thread: the sign-up form is a blocking client, and other chapters play on this loop.
    student = await asyncio.to_thread(sign_up, lab, f"play-{chapter}")
    async with chapter_socket(student, COURSE, chapter) as page:
        ready = await page.until(
            lambda m: m.get("type") == "sandbox" and m.get("state") != "starting", "the sandbox"
        )
        assert ready["state"] == "ready", ready
        for step in steps:
            await page.send(action="open", step=step.id)
            first = await page.verdict(step.id, {"failing", "unknown", "pending", "passed"})
            assert first["status"] == "failing", f"step {step.id}'s check must fail before the work: {first}"
            assert first["failures"], f"a failing check says what failed: {first}"
            assert step.mistake is not None, f"step {step.id} has no common mistake to tell from its solution"
            await _mistake_fails(page, step.id, step.mistake.failing)
            await page.send(action="solve")
            await page.verdict(step.id, {"passed"}, seconds=BUDGET_SECONDS)


async def _mistake_fails(page: ChapterSocket, step: str, leaf: str) -> None:
    """Run the open step's mistake; then the check, asked again, must fail at ``leaf`` and say so."""
    mark = len(page.seen)
    await page.send(action="mistake")
    ran = await page.until(
        lambda m: m.get("type") == "progress" and m.get("ended") is True,
        f"step {step}'s mistake to run",
        seconds=BUDGET_SECONDS + 30,
    )
    assert ran["state"] == "done", f"step {step}'s mistake did not run: {ran['text']}"
    await page.send(action="check")
    after = await page.verdict(step, {"failing", "unknown", "pending", "passed", "settling"})
    assert after["status"] == "failing", f"step {step}'s check must still fail after its mistake: {after}"
    assert leaf in after["failing"], f"step {step}'s mistake should fail at {leaf!r}: {after}"
    said = [f["message"] for f in after["failures"]]
    assert all(said), f"step {step}'s check failed without words: {after}"
    passed = [m for m in page.seen[mark:] if m.get("type") == "verdict" and m.get("status") == "passed"]
    assert not passed, f"step {step}'s check passed on its mistake: {passed}"
