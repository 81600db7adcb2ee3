"""Smoke runs of ``python -m bench course --quick``: every line printed, well-formed, saying what was done.

These check the instrument, never a speed: whether a target is met is the benchmark's business (on a
shared machine the neighbours decide the form's round trip as much as the lab does). The first run
is the real one, smaller than ``--quick``: the checks' evaluator, a lab in the process hibernating and
waking sandboxes, and a ``runlab`` with three students signing up, starting their sandboxes and
submitting the form for 6 s.
The second points the labs at a directory that does not exist, to check that every line the labs
would measure says so rather than the run crashing. The last two check the lines' arithmetic on
made-up measurements, without a lab.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
from pathlib import Path
from typing import Any, cast

import pytest

from bench import course
from bench._courselab import Student, Submitted
from bench._coursesleep import SleepResult
from bench.report import Reporter
from tests.support.bench import run_bench

METRICS = [
    "check.eval_us_per_event",
    "sandbox.hibernated_rss_mb",
    "sandbox.hibernated_heap_kib",
    "sandbox.wake_p95_s",
    "sandbox.ready_quiet_lab_p95_s",
    "page.chapter_quiet_lab_p95_ms",
    "sandbox.ready_p95_s",
    "form.round_trip_p95_ms",
    "form.errors",
    "page.chapter_p95_ms",
]
TARGETS = {
    "check.eval_us_per_event": "<= 20",
    "sandbox.hibernated_rss_mb": "<= 1",
    "sandbox.wake_p95_s": "<= 1",
    "sandbox.ready_p95_s": "<= 3",
    "form.round_trip_p95_ms": "<= 150",
    "form.errors": "== 0",
    "page.chapter_p95_ms": "<= 50",
}
#: Smaller than --quick: this checks the instrument, and each student, sandbox and second costs CI time.
SMALL = (
    "--students", "3", "--duration", "6", "--sandboxes", "2", "--heap-sandboxes", "1",
    "--wake-rounds", "1", "--pages", "10", "--page-seconds", "5", "--events", "5000",
    "--check-rounds", "2", "--idle-seconds", "1",
)  # fmt: skip
QUICK_STUDENTS = 3
QUICK_SLOTS = 3  # 6 s at one every 2 s


def lines_of(*args: str, timeout: float) -> dict[str, dict[str, Any]]:
    lines = run_bench("course", *args, timeout=timeout)
    assert [line["metric"] for line in lines] == METRICS
    return {line["metric"]: line for line in lines}


def test_smoke_course_quick() -> None:
    lines = lines_of(*SMALL, timeout=400)
    for metric, line in lines.items():
        assert "error" not in line, (metric, line["error"])
        assert line["value"] is not None and line["value"] >= 0, line
        assert line["target"] == TARGETS.get(metric), line
        if line["target"] is None:
            assert line["met"] is None
        else:
            assert isinstance(line["met"], bool)

    check = lines["check.eval_us_per_event"]
    assert check["unit"] == "us" and check["events"] == 5_000 and len(check["rounds_us"]) == 2
    assert min(check["rounds_us"]) <= check["value"] <= max(check["rounds_us"])
    assert check["met"] is (check["value"] <= 20)

    rss = lines["sandbox.hibernated_rss_mb"]
    assert rss["sandboxes"] == 2
    assert rss["rss_empty_mb"] > 0 and rss["rss_running_mb"] > rss["rss_empty_mb"]
    per = (rss["rss_hibernated_mb"] - rss["rss_empty_mb"]) / rss["sandboxes"]
    assert rss["value"] == pytest.approx(per, abs=0.05)
    assert rss["met"] is (rss["value"] <= 1)
    heap = lines["sandbox.hibernated_heap_kib"]
    assert heap["sandboxes"] == 1 and heap["unit"] == "KiB" and heap["value"] > 0
    assert heap["top_files_kib"]  # which files allocated what the sleeping sandboxes keep
    assert rss["heap_kib_per_sandbox"] == pytest.approx(heap["value"], abs=0.1)

    assert len(rss["rss_one_at_a_time_mb"]) == 2
    first, last = rss["rss_one_at_a_time_mb"][0], rss["rss_one_at_a_time_mb"][-1]
    assert rss["one_at_a_time_mb_per_sandbox"] == pytest.approx(last - first, abs=0.05)

    wake = lines["sandbox.wake_p95_s"]
    assert wake["wakes"] == 1 + 2 + 2 + 1  # one round: warm-up, two RSS passes, heap
    assert wake["errors"] == 0  # every woken sandbox still had its ConfigMap
    assert wake["p50_s"] <= round(wake["value"], 3) <= wake["max_s"]
    assert lines["sandbox.ready_quiet_lab_p95_s"]["sandboxes"] == 2 * 2

    ready = lines["sandbox.ready_p95_s"]
    assert ready["sandboxes"] == QUICK_STUDENTS
    assert ready["p50_s"] <= round(ready["value"], 3) <= ready["max_s"]
    assert ready["first_s"] <= ready["max_s"] and ready["last_s"] <= ready["max_s"]
    assert ready["lab_rss_mb"] > 0 and ready["server_cores"] is not None
    assert ready["idle_server_cores"] is not None  # what the running sandboxes cost doing nothing

    form = lines["form.round_trip_p95_ms"]
    assert form["students"] == QUICK_STUDENTS and form["seconds"] == 6 and form["period_s"] == 2
    # Every slot was either used or skipped because the student still waited for an answer.
    assert form["submissions"] + form["skipped"] == QUICK_STUDENTS * QUICK_SLOTS
    assert 0 <= form["late"] <= form["submissions"]
    assert form["p50_ms"] <= round(form["value"], 1) <= form["p99_ms"] <= form["max_ms"]
    assert form["met"] is (form["value"] <= 150)
    assert form["server_cores"] > 0 and form["machine_cores"] >= 1 and form["lab_rss_mb"] > 0
    # The students' chapter pages were open: their checks ran and their diagrams got the trace.
    assert form["pages_open"] == QUICK_STUDENTS and "page_problems" not in form
    assert form["trace_events"] > 0 and form["trace_frames"] > 0 and form["step_messages"] > 0
    # Each document of each submission came back with a state (three per submission, unless refused).
    assert sum(form["documents"].values()) <= 3 * form["submissions"]
    errors = lines["form.errors"]
    assert errors["submissions"] == form["submissions"] and errors["unit"] == "count"
    assert errors["value"] == sum(errors["kinds"].values())
    assert errors["met"] is (errors["value"] == 0)
    if errors["value"] == 0:
        # Every student's first apply created the three objects; each later one changed them.
        assert form["documents"].get("created") == 3 * QUICK_STUDENTS
        assert "unchanged" not in form["documents"]

    for metric, sandboxes in (("page.chapter_quiet_lab_p95_ms", 0), ("page.chapter_p95_ms", QUICK_STUDENTS)):
        page = lines[metric]
        assert 5 <= page["requests"] <= 40  # 40, or as many as 15 s allowed
        assert page["statuses"] == {"200": page["requests"]}
        assert page["sandboxes_running"] == sandboxes
        assert page["p50_ms"] <= round(page["value"], 1) <= page["max_ms"]
        assert page["server_cores"] is not None


def test_labs_that_cannot_start_are_reported_on_every_line(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-directory"
    lines = lines_of("--dir", str(missing), "--events", "2000", "--check-rounds", "1", timeout=60)
    assert "error" not in lines["check.eval_us_per_event"]  # the evaluator needs no lab
    for metric in METRICS[1:]:
        line = lines[metric]
        assert "no-such-directory" in line["error"], line
        assert line["value"] is None
        assert line["met"] is (None if line["target"] is None else False)


def emitted(report: Any, *args: Any) -> dict[str, dict[str, Any]]:
    out = io.StringIO()
    report(Reporter("course", stream=out), *args)
    return {line["metric"]: line for line in map(json.loads, out.getvalue().splitlines())}


def test_hibernation_lines_are_per_sandbox() -> None:
    result = SleepResult(
        sandboxes=4,
        rss_empty_mb=100.0,
        rss_running_mb=140.0,
        rss_hibernated_mb=102.0,
        rss_one_at_a_time_mb=[104.0, 104.5, 104.4, 105.2],
        rss_after_wakes_mb=110.0,
        heap_sandboxes=2,
        heap_retained_bytes=200 * 1024,
        heap_top=[("controlplane/runtime.py", 150.0), ("weakref.py", 50.0)],
        ready_s=[1.0, 2.0],
        wake_s=[0.2, 0.4, 1.5],
        wake_errors=["sb-rss-1: its ConfigMap is gone after waking ([])"],
    )
    lines = emitted(course.report_sleep, result)
    assert list(lines) == METRICS[1:5]
    rss = lines["sandbox.hibernated_rss_mb"]
    assert rss["value"] == 0.5 and rss["met"] is True  # (102 - 100) / 4
    assert rss["running_mb_per_sandbox"] == 10.0 and rss["heap_kib_per_sandbox"] == 200.0
    assert rss["one_at_a_time_mb_per_sandbox"] == 0.4  # (105.2 - 104.0) / 3
    assert lines["sandbox.hibernated_heap_kib"]["top_files_kib"] == {
        "controlplane/runtime.py": 150.0,
        "weakref.py": 50.0,
    }
    wake = lines["sandbox.wake_p95_s"]
    assert wake["value"] == pytest.approx(1.39) and wake["max_s"] == 1.5
    assert wake["met"] is False  # a lost object is an error, whatever the time
    assert "ConfigMap is gone" in wake["error"]
    assert lines["sandbox.ready_quiet_lab_p95_s"]["met"] is None


def test_form_lines_count_every_kind_of_failure() -> None:
    settings = course.Settings.from_options(course_options(students=2, duration=4.0))
    submitted = [
        Submitted(0.100, 200, "ok", ("created", "created", "created")),
        Submitted(0.120, 200, "ok", ("configured", "configured", "configured")),
        Submitted(0.300, 200, "failed", ("configured",), error="failed: Could not submit the manifest"),
        Submitted(0.050, None, None, error="ReadTimeout: timed out"),
    ]
    run = course.FormRun(submitted, late=1, skipped=2)
    lines = emitted(course.report_form, settings, run, {"server_cores": 0.5, "pages_open": 0})
    assert list(lines) == ["form.round_trip_p95_ms", "form.errors"]
    trip = lines["form.round_trip_p95_ms"]
    assert trip["submissions"] == 4 and trip["late"] == 1 and trip["skipped"] == 2
    assert trip["server_cores"] == 0.5 and trip["pages_open"] == 0
    assert trip["max_ms"] == 300.0 and trip["met"] is False
    assert trip["documents"] == {"created": 3, "configured": 4}
    errors = lines["form.errors"]
    assert errors["value"] == 2 and errors["met"] is False
    assert errors["kinds"] == {"failed": 1, "ReadTimeout": 1}


def course_options(**values: Any) -> argparse.Namespace:
    """The options ``python -m bench course`` would parse from no arguments, with ``values`` set."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    course.add_arguments(parser)
    options = parser.parse_args([])
    for name, value in values.items():
        setattr(options, name, value)
    return options


class SlowStudent:
    """A student whose every submission takes ``seconds`` to answer."""

    def __init__(self, username: str, seconds: float) -> None:
        self.username = username
        self.seconds = seconds
        self.rounds = 0
        self.sent: list[str] = []

    async def submit(self, text: str) -> Submitted:
        self.sent.append(text)
        await asyncio.sleep(self.seconds)
        return Submitted(self.seconds, 200, "ok", ("configured",) * 3)


async def test_a_slow_answer_delays_the_next_submission_and_skips_the_slots_it_covered() -> None:
    quick, slow = SlowStudent("quick", 0.01), SlowStudent("slow", 0.9)
    settings = course.Settings.from_options(course_options(duration=1.6, period=0.4))
    run = await course.form_load(cast("list[Student]", [quick, slow]), settings)
    # Four slots each: 0, 0.4, 0.8 and 1.2 s for the quick student, who uses them all; 0.2, 0.6, 1.0
    # and 1.4 s for the slow one, who sends at 0.2 s and has the answer at 1.1 s (slot 0.6 skipped,
    # slot 1.0 sent late, at once), then at 2.0 s, after the window (slot 1.4 skipped).
    assert quick.rounds == 4 and len(quick.sent) == 4
    assert slow.rounds == 2 and run.late == 1 and run.skipped == 2
    assert len(run.submitted) + run.skipped == 8
    assert 'round: "2"' in slow.sent[1]  # each submission changes a value, so each apply writes
