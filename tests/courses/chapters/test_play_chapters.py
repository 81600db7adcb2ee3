"""Chapters 1 to 5, played as a student would, against a real lab (``tests.support.playthrough``;
chapters 6 to 11 are in ``test_play_chapters_later.py``).

Every step's check fails before the work is done, fails at its common mistake's leaf with words for
it, and passes after its solution. "Start here" on a later step builds that step's starting state
from a reset sandbox, where the step's check fails and its solution passes. A wrong action fails the
check with a message that says what was seen.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from courses.engine.content import load_course
from tests.support.lab import LiveLab
from tests.support.playthrough import BUDGET_SECONDS, COURSE, chapters
from tests.support.student import chapter_socket, sign_up

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


CHAPTERS = chapters(first=1, last=5)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_step_fails_first_then_its_solution_passes(
    played: dict[str, Exception | None], chapter: str
) -> None:
    error = played[chapter]
    if error is not None:
        raise error


async def test_start_here_builds_the_step_and_its_solution_passes(course_lab: LiveLab) -> None:
    chapter = load_course(COURSE).chapters[1]
    target = chapter.steps[-1]
    student = sign_up(course_lab, "play-jump")
    async with chapter_socket(student, COURSE, chapter.slug) as page:
        await page.until(lambda m: m.get("type") == "sandbox" and m.get("state") == "ready", "the sandbox")
        await page.send(action="jump", step=target.id)
        await page.until(lambda m: m.get("type") == "jumped", "the jump", seconds=240)
        await page.send(action="open", step=target.id)
        first = await page.verdict(target.id, {"failing", "passed"})
        assert first["status"] == "failing", first
        await page.send(action="solve")
        await page.verdict(target.id, {"passed"}, seconds=BUDGET_SECONDS)


async def test_a_wrong_action_fails_with_what_was_seen(course_lab: LiveLab) -> None:
    student = sign_up(course_lab, "play-wrong")
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
