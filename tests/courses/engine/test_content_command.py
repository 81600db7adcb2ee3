"""``manage.py checkcontent``: every problem printed, and an exit status that fails a build."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from courses.engine import content

FIXTURES = Path(__file__).parent / "fixtures" / "valid"
MANAGE = Path(__file__).resolve().parents[3] / "manage.py"


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    content.reload()


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(MANAGE), "checkcontent", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_valid_content_exits_0_and_says_what_it_checked() -> None:
    result = run("--root", str(FIXTURES))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "tiny: 2 chapters, 3 steps: ok"
    assert result.stderr == ""


def test_broken_content_exits_1_with_every_problem_on_a_line(tmp_path: Path) -> None:
    shutil.copytree(FIXTURES / "tiny", tmp_path / "tiny")
    (tmp_path / "tiny" / "01-first" / "zh-Hans.md").unlink()
    chapter = tmp_path / "tiny" / "02-second" / "chapter.yaml"
    chapter.write_text(chapter.read_text().replace("nodes: 3", "nodes: 30"))
    result = run("--root", str(tmp_path))
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert lines == [
        "tiny/01-first/zh-Hans.md: the file is missing: every chapter is written in every language",
        "tiny/02-second/chapter.yaml: nodes: must be from 1 to 10, not 30",
        "CommandError: the course content has 2 problems",
    ]


def test_one_course_by_name_and_an_unknown_one(tmp_path: Path) -> None:
    call_command("checkcontent", "tiny", "--root", str(FIXTURES))
    with pytest.raises(CommandError, match="no course nope"):
        call_command("checkcontent", "nope", "--root", str(FIXTURES))
    with pytest.raises(CommandError, match="there is no content directory"):
        call_command("checkcontent", "--root", str(tmp_path / "missing"))
