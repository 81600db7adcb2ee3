"""Running a benchmark as a smoke test does: ``python -m bench NAME ARGS...``, its lines checked for shape."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.report import KEYS

ROOT = Path(__file__).resolve().parents[2]


def run_bench(
    name: str, *args: str, env: dict[str, str] | None = None, timeout: float = 90
) -> list[dict[str, Any]]:
    """Its result lines, once it exited 0 and every line has the standard keys first and its name."""
    completed = subprocess.run(
        [sys.executable, "-m", "bench", name, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    lines = [json.loads(line) for line in completed.stdout.splitlines() if line.strip()]
    for line in lines:
        assert tuple(line)[: len(KEYS)] == KEYS, line
        assert line["bench"] == name
    return lines
