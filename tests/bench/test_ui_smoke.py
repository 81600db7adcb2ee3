"""Smoke runs of ``python -m bench ui``: a lab, headless Chromium on its topology page, well-formed lines.

These check the instrument, never a speed: whether a target is met is the benchmark's business (and
on a shared machine, the machine decides the dropped frames and the lag as much as the page does).
The first run is the real one, ``--quick``: the lab; the lag behind live while the cluster idles 3 s
and a student (the real kubectl) creates, scales and deletes a Deployment; then the trace driver at
2000 events/s, the page measured for 12 s. Without Playwright or Debian's Chromium it is skipped
locally and fails in CI, as the browser tests are. The second points the benchmark at a browser that
is not there, to check that this is reported on every line, not a crash. The last checks the lag's
arithmetic on made-up readings, without a browser.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from bench._uilag import LagReadings, analyse
from bench._uilag import report as report_lag
from bench.report import Reporter
from bench.ui import browser_missing
from tests.support.bench import run_bench as run
from tests.support.services import service_missing

LAG_METRICS = ["lag.p95_ms", "lag.own_events_animated", "lag.events_drawn"]
LOAD_METRICS = [
    "frame_handler.p95_ms",
    "dropped_frames.percent",
    "heap_growth_mb",
    "events_received",
    "frames_received",
    "timeline_tick.p95_ms",
    "long_tasks",
    "main_thread.busy_percent",
]
METRICS = LAG_METRICS + LOAD_METRICS
STEPS = ["idle", "create 3", "scale 6", "scale 2", "delete"]


def run_bench(*args: str, timeout: float = 180) -> dict[str, dict[str, Any]]:
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
    for metric in LOAD_METRICS:
        assert lines[metric]["seconds"] >= 12
    for metric in LAG_METRICS:
        line = lines[metric]
        assert line["seconds"] >= 3  # the idle period, then the student's steps
        assert line["idle_s"] == 3
        assert line["timing"] == "classroom" and line["nodes"] >= 1  # the cluster's own components ran
        assert line["speed"] == 1 and line["kubectl_cache"] == "cold"

    lag = lines["lag.p95_ms"]
    assert lag["unit"] == "ms" and lag["target"] == "<= 1000"
    assert lag["events"] > 0
    assert lag["p50_ms"] <= round(lag["value"], 1) <= lag["p99_ms"] <= lag["max_ms"]
    assert lag["met"] is (lag["value"] <= 1000)
    assert 0 <= lag["over_1s"] <= lag["events"]
    assert lag["own_p95_ms"] is not None and lag["own_max_ms"] >= lag["own_p95_ms"]
    assert lag["arrival_to_drawn_p95_ms"] is not None
    assert set(lag["clock_offset_ms"]) == {"server", "page"}
    assert all(abs(offset) < 1000 for offset in lag["clock_offset_ms"].values())
    steps = lag["steps"]
    assert [step["step"] for step in steps] == STEPS
    assert sum(step["events"] for step in steps) == lines["lag.events_drawn"]["emitted"]
    assert steps[0]["student_requests"] == 0  # idling
    assert all(step["student_requests"] >= 1 for step in steps[1:])  # every command reached the API
    assert any("POST /apis/apps/v1/namespaces/default/deployments" in r for r in steps[1]["requests"])
    assert all(step["shown_after_s"] >= 0 and step["kubectl_ms"] > 0 for step in steps[1:])

    own = lines["lag.own_events_animated"]
    assert own["unit"] == "fraction" and own["target"] == ">= 1"
    assert own["user"] == "user:student"
    assert own["emitted"] >= sum(step["student_requests"] for step in steps)  # a request is several events
    assert 0 <= own["animated"] <= own["drawn"] <= own["emitted"]
    assert own["value"] == pytest.approx(own["animated"] / own["emitted"], abs=0.001)
    assert own["met"] is (own["value"] >= 1)
    assert isinstance(own["not_animated"], dict)

    drawn = lines["lag.events_drawn"]
    assert drawn["unit"] == "events" and drawn["target"] is None and drawn["met"] is None
    assert drawn["value"] == lag["events"]
    assert drawn["value"] + drawn["not_drawn"] == drawn["emitted"]
    assert drawn["animated"] + drawn["folded_background"] + drawn["applied_to_keep_up"] == drawn["value"]
    assert drawn["animated"] >= own["animated"]
    assert drawn["seqs"][1] - drawn["seqs"][0] + 1 == drawn["emitted"]
    assert isinstance(drawn["caught_up"], bool)

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
    assert lines["lag.p95_ms"]["met"] is False
    assert lines["events_received"]["met"] is None  # for information: no target
    assert lines["lag.events_drawn"]["met"] is None


def test_the_lag_is_emission_to_drawing_and_own_events_are_the_students_requests() -> None:
    post = "POST /apis/apps/v1/namespaces/default/deployments"
    readings = LagReadings(
        first=1,
        last=6,
        seconds=2.0,
        idle=1.0,
        # [seq, ts, type, id, from, request], as /bench/events answers
        events=[
            [1, 100.0, "store.txn", None, "kubelet:node-1", None],
            [2, 100.1, "request.received", "a", "user:student", post],
            [3, 100.1, "request.stage", "a", "user:student", None],
            [4, 100.2, "store.txn", "a", "apiserver", None],
            [5, 100.3, "reconcile", None, "controller-manager", None],
            [6, 100.4, "request.received", "b", "user:admin", "GET /api"],
        ],
        drawn=[[1, 100_010.0], [2, 100_300.0], [3, 100_500.0], [4, 101_500.0], [5, 100_400.0]],
        played=[2, 3],
        folded=[1],
        behind=[4, 5],
        own=[2, 3, 4],
        summary={"timings": {"lag": {"p95": 900.0}}, "counters": {}},
        page_last_seq=5,
        caught_up=False,
        speed=1.0,
        warm=False,
        timing="classroom",
        nodes=3,
        clock_offsets={"server": 0.0, "page": 0.1},
        steps=[
            {"step": "idle", "at_s": 0.0, "wall": 99.0},
            {"step": "create 1", "at_s": 1.0, "wall": 100.05, "kubectl_ms": 60, "shown_after_s": 0.5},
        ],
    )
    a = analyse(readings)
    assert a.lags_ms == pytest.approx([10, 100, 200, 400, 1300])
    assert a.own_lags_ms == pytest.approx([200, 400, 1300])
    assert (a.emitted, a.drawn, a.not_drawn, a.not_drawn_types) == (6, 5, 1, {"request.received": 1})
    # The student's own: every event of request "a" (its store write too), not admin's request "b".
    assert (a.own_emitted, a.own_animated, a.own_drawn, a.own_classified) == (3, 2, 3, 3)
    assert a.own_not_animated == {"store.txn": 1}  # applied at once: drawn, but not animated
    assert (a.played, a.folded, a.behind) == (2, 1, 2)
    assert [(step["step"], step["events"], step["student_requests"]) for step in a.steps] == [
        ("idle", 1, 0),
        ("create 1", 5, 1),
    ]
    assert a.steps[1]["requests"] == [post] and "wall" not in a.steps[1]

    out = io.StringIO()
    report_lag(Reporter("ui", stream=out), readings)
    lines = {line["metric"]: line for line in map(json.loads, out.getvalue().splitlines())}
    assert list(lines) == LAG_METRICS
    assert lines["lag.p95_ms"]["met"] is False and lines["lag.p95_ms"]["over_1s"] == 1
    assert lines["lag.own_events_animated"]["value"] == pytest.approx(2 / 3, abs=0.001)
    assert lines["lag.own_events_animated"]["met"] is False
    assert lines["lag.events_drawn"]["value"] == 5 and lines["lag.events_drawn"]["met"] is None
