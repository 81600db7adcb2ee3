"""Chapters 6 to 11, played as a student would, against a real lab: as chapters 1 to 5 in
``test_play_chapters.py`` (``tests.support.playthrough``), in a module of its own so that a second
test worker plays them at the same time."""

from __future__ import annotations

import pytest

from tests.support.playthrough import chapters

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


CHAPTERS = chapters(first=6, last=11)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_step_fails_first_then_its_solution_passes(
    played: dict[str, Exception | None], chapter: str
) -> None:
    error = played[chapter]
    if error is not None:
        raise error
