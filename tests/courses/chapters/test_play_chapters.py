"""Every chapter, played as a student would, against a real lab.

For each step, on the student's own sandbox: its check must fail before the work is done (a check
that passes before is a defect), then the step's solution runs as the student and the check must pass
within its time budget. "Start here" on a later step builds that step's starting state from a reset
sandbox, where the step's check fails and its solution passes. A wrong action fails the check with a
message that says what was seen: every step's common mistake (its ``mistake``, run like a solution
before the solution) leaves the check failing at the leaf the mistake names, with words for it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from courses.engine.content import load_course
from tests.support.lab import LiveLab
from tests.support.student import ChapterSocket, chapter_socket, sign_up

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

COURSE = "control-plane"
#: A step's time budget: from its solution starting to its check passing.
BUDGET_SECONDS = 45


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveLab]:
    live = LiveLab(Path(tmp_path_factory.mktemp("course-lab")))
    try:
        yield live
    finally:
        live.stop()


def _chapters() -> list[str]:
    return [chapter.slug for chapter in load_course(COURSE).chapters]


@pytest.mark.parametrize("chapter", _chapters())
async def test_every_step_fails_first_then_its_solution_passes(lab: LiveLab, chapter: str) -> None:
    found = load_course(COURSE).chapter(chapter)
    assert found is not None
    steps = found.steps
    student = sign_up(lab, f"play-{chapter}")
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


async def test_start_here_builds_the_step_and_its_solution_passes(lab: LiveLab) -> None:
    chapter = load_course(COURSE).chapters[1]
    target = chapter.steps[-1]
    student = sign_up(lab, "play-jump")
    async with chapter_socket(student, COURSE, chapter.slug) as page:
        await page.until(lambda m: m.get("type") == "sandbox" and m.get("state") == "ready", "the sandbox")
        await page.send(action="jump", step=target.id)
        await page.until(lambda m: m.get("type") == "jumped", "the jump", seconds=240)
        await page.send(action="open", step=target.id)
        first = await page.verdict(target.id, {"failing", "passed"})
        assert first["status"] == "failing", first
        await page.send(action="solve")
        await page.verdict(target.id, {"passed"}, seconds=BUDGET_SECONDS)


async def test_a_wrong_action_fails_with_what_was_seen(lab: LiveLab) -> None:
    student = sign_up(lab, "play-wrong")
    async with chapter_socket(student, COURSE, "core-components") as page:
        await page.until(lambda m: m.get("type") == "sandbox" and m.get("state") == "ready", "the sandbox")
        await page.send(action="open", step="deployment-controllers")
        await page.verdict("deployment-controllers", {"failing"})
        two = (
            Path(__file__).parents[3]
            / "courses/content/control-plane/02-core-components/manifests/web-deployment.yaml"
        ).read_text()
        two = two.replace("replicas: 3", "replicas: 2")
        assert "replicas: 2" in two
        result = student.submit(two, course=COURSE, chapter="core-components")
        assert result.status_code == 200, result.text[:500]
        # The check now sees two of everything: it says so, and never passes.
        seen = await page.until(
            lambda m: (
                m.get("type") == "verdict"
                and m.get("status") == "failing"
                and any("2" in f["message"] for f in m["failures"])
            ),
            "a failure that says two were seen",
            seconds=30,
        )
        messages = " ".join(f["message"] for f in seen["failures"])
        assert "3" in messages, messages
        assert not any(m.get("status") == "passed" for m in page.seen if m.get("type") == "verdict")
