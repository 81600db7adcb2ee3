"""Smoke runs of ``python -m bench ui``: a lab, headless Chromium on its topology page, well-formed lines.

These check the instrument, never a speed: whether a target is met is the benchmark's business (and
on a shared machine, the machine decides the dropped frames as much as the page does). The first run
is the real one, ``--quick``: the lab, the trace driver at 2000 events/s, the page measured for 12 s.
Without Playwright or Debian's Chromium it is skipped locally and fails in CI, as the browser tests
are. The second points the benchmark at a browser that is not there, to check that this is reported
on every line, not a crash.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.ui import browser_missing
from tests.support.bench import run_bench as run
from tests.support.services import service_missing

METRICS = [
    "frame_handler.p95_ms",
    "dropped_frames.percent",
    "heap_growth_mb",
    "events_received",
    "frames_received",
    "timeline_tick.p95_ms",
    "long_tasks",
    "main_thread.busy_percent",
]


def run_bench(*args: str, timeout: float = 120) -> dict[str, dict[str, Any]]:
    lines = run("ui", *args, timeout=timeout)
    assert [line["metric"] for line in lines] == METRICS
    return {line["metric"]: line for line in lines}


def test_smoke_ui_quick() -> None:
    missing = browser_missing()
    if missing is not None:
        service_missing(missing)
    lines = run_bench()
    for line in lines.values():
        assert "error" not in line, line["error"]
        assert "page_errors" not in line, line["page_errors"]
        assert line["seconds"] >= 12

    handler = lines["frame_handler.p95_ms"]
    assert handler["target"] == "<= 8"
    assert handler["frames"] > 100  # the server sends up to 30 frames a second
    assert 0 < handler["p50_ms"] <= handler["value"] <= handler["p99_ms"] <= handler["max_ms"]
    assert handler["met"] is (handler["value"] <= 8)

    dropped = lines["dropped_frames.percent"]
    assert dropped["target"] == "<= 1"
    assert 10 <= dropped["frame_period_ms"] <= 40  # headless Chromium runs at 60 Hz
    assert dropped["shown"] + dropped["dropped"] >= 0.9 * dropped["expected"]
    percent = 100 * dropped["dropped"] / dropped["expected"]  # "expected" is rounded to a whole frame
    assert dropped["value"] == pytest.approx(percent, rel=0.01, abs=0.01)
    assert dropped["met"] is (dropped["value"] <= 1)
    assert dropped["browser_cores"] > 0 and dropped["server_cores"] > 0  # what used the CPU meanwhile
    assert dropped["other_cores"] is not None and dropped["machine_cores"] >= 1

    heap = lines["heap_growth_mb"]
    assert heap["target"] == "<= 20"
    assert min(heap["heap_idle_mb"], heap["heap_start_mb"], heap["heap_end_mb"]) > 0
    assert abs(heap["value"] - (heap["heap_end_mb"] - heap["heap_start_mb"])) < 0.02
    assert all(count > 0 for count in heap["dom_nodes"])

    events = lines["events_received"]
    assert events["emitted"] >= 0.8 * 2000 * 12  # the driver kept its rate
    assert events["value"] >= 0.9 * events["emitted"]  # and the page got them
    assert events["summarised"] <= 0.1 * events["emitted"]  # rather than summaries of them
    assert lines["frames_received"]["value"] == handler["frames"]
    assert lines["timeline_tick.p95_ms"]["ticks"] > 0
    assert 0 < lines["main_thread.busy_percent"]["value"] <= 100


def test_a_missing_browser_is_reported_not_a_crash(tmp_path: Path) -> None:
    lines = run_bench("--chromium", str(tmp_path / "no-chromium"), timeout=30)
    for line in lines.values():
        assert "no-chromium does not exist" in line["error"]
        assert line["value"] is None
    assert lines["dropped_frames.percent"]["met"] is False
    assert lines["events_received"]["met"] is None  # for information: no target
