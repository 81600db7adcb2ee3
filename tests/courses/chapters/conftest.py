"""The lab the chapter playthroughs share, one per module (``test_play_chapters*.py``), and the
playthrough of the module's ``CHAPTERS``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.lab import LiveLab
from tests.support.playthrough import play_chapters


@pytest.fixture(scope="module")
def course_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveLab]:
    live = LiveLab(Path(tmp_path_factory.mktemp("course-lab")))
    try:
        yield live
    finally:
        live.stop()


@pytest.fixture(scope="module")
def played(request: pytest.FixtureRequest, course_lab: LiveLab) -> dict[str, Exception | None]:
    """Every chapter of the module's ``CHAPTERS``, played at the same time by students of their own:
    what each raised (None: it passed)."""
    return play_chapters(course_lab, request.module.CHAPTERS)
