"""How the smoke tests run a benchmark: ``python -m bench NAME --quick ...``, as CI would, lines checked.

A smoke test checks the instrument, never a speed: the run must exit 0 and every line it prints must
be a result line of that benchmark (the standard keys, in order). What each line must say is the
test's own business.
"""

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
    """The result lines of ``python -m bench NAME --quick ARGS``."""
    completed = subprocess.run(
        [sys.executable, "-m", "bench", name, "--quick", *args],
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
        assert line["bench"] == name, line
    return lines
