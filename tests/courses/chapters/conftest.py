"""The lab the chapter playthroughs share: one per module (``test_play_chapters*.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.lab import LiveLab


@pytest.fixture(scope="module")
def course_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveLab]:
    live = LiveLab(Path(tmp_path_factory.mktemp("course-lab")))
    try:
        yield live
    finally:
        live.stop()
