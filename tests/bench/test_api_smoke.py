"""Smoke runs of ``python -m bench api``: it starts, measures and prints well-formed result lines.

These check the instrument, never a speed: whether a target is met is the benchmark's business. The
first run is the real one (a lab on free ports, 1000 pods, wrk rounds), quick and GET only; where wrk
is not installed its line carries an ``error`` instead, and the shape is still checked. The second
hides wrk from the benchmark to check that a missing load generator is reported, not a crash.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from tests.bench.smoke import run_bench as run


def run_bench(*args: str, env: dict[str, str] | None = None, timeout: float = 90) -> list[dict[str, Any]]:
    return run("api", "--quick", *args, env=env, timeout=timeout)


def test_smoke_api_quick_get() -> None:
    """``python -m bench api --quick --only get``: one GET line against the raw handler."""
    lines = run_bench("--only", "get")
    assert [line["metric"] for line in lines] == ["get.requests_per_s"]
    line = lines[0]
    assert line["unit"] == "requests/s"
    assert line["target"] == ">= 0.5"
    if shutil.which("wrk") is None:
        assert line["error"]
        assert line["value"] is None
        assert line["met"] is False
        return
    assert "error" not in line, line["error"]
    assert line["value"] > 0
    assert line["baseline"] > 0
    assert abs(line["ratio"] - line["value"] / line["baseline"]) <= 0.01 * line["ratio"]
    assert line["met"] is (line["ratio"] >= 0.5)
    assert len(line["rounds"]["raw"]) == len(line["rounds"]["api"]) == 2
    assert line["path"].startswith("/clusters/demo/api/v1/namespaces/default/pods/")


def test_missing_wrk_is_reported_not_a_crash(tmp_path: Path) -> None:
    """Without wrk the GET and LIST lines say so (and ``met`` is false); no lab is started for them."""
    env = {**os.environ, "PATH": str(tmp_path)}  # an empty directory: no wrk on it
    lines = run_bench("--only", "get,list", env=env, timeout=30)
    assert [line["metric"] for line in lines] == ["get.requests_per_s", "list.requests_per_s"]
    for line in lines:
        assert "wrk" in line["error"]
        assert line["value"] is None
    assert lines[0]["met"] is False
    assert lines[1]["met"] is None  # LIST has no target: reported for information
