"""The benchmark harness: result lines, targets and ratios, percentiles, selection, and a smoke run.

These test the measuring instruments, never a speed: speed targets are checked by ``python -m bench``.
"""

from __future__ import annotations

import asyncio
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.__main__ import available, main
from bench.report import KEYS, Reporter, Result, parse_target, selector_matches, split_selectors, target_met
from bench.stats import percentile, summarize
from bench.timing import alternate, async_rate_for, rate_for

ROOT = Path(__file__).resolve().parents[2]


# -- targets ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "actual", "met"),
    [
        (">= 0.7", 0.7, True),
        (">= 0.7", 0.69, False),
        ("<= 50", 50.0, True),
        ("<= 50", 50.1, False),
        ("== 0", 0, True),
        ("== 0", 1, False),
        ("> 5", 5, False),
        ("< 5", 4.9, True),
        ("!= 0", 3, True),
        (">=5", 6, True),
        (">= 1e3", 999, False),
    ],
)
def test_target_met(target: str, actual: float, met: bool) -> None:
    assert target_met(target, actual) is met


def test_target_never_met_by_nan() -> None:
    assert target_met(">= 0", float("nan")) is False


@pytest.mark.parametrize("target", ["0.7", ">= ", "about 5", "=> 1", ">= x"])
def test_invalid_targets_are_refused(target: str) -> None:
    with pytest.raises(ValueError, match="invalid target"):
        parse_target(target)
    with pytest.raises(ValueError):
        Result("b", "m", 1.0, "x", target=target)


# -- result lines ----------------------------------------------------------------------------------


def test_line_has_every_key_in_order_then_extras() -> None:
    line = Result("store", "a.b", 8.0, "commits/s", baseline=10.0, target=">= 0.7", extra={"n": 3}).to_dict()
    assert tuple(line)[: len(KEYS)] == KEYS
    assert line["n"] == 3
    assert json.loads(json.dumps(line)) == line


def test_ratio_against_baseline_decides_met() -> None:
    result = Result("store", "m", 8.0, "commits/s", baseline=10.0, target=">= 0.7")
    assert result.ratio == pytest.approx(0.8)
    assert result.met is True
    assert Result("store", "m", 6.0, "commits/s", baseline=10.0, target=">= 0.7").met is False


def test_without_baseline_the_value_decides_met() -> None:
    result = Result("store", "p99", 42.0, "ms", target="<= 50")
    assert result.ratio is None
    assert result.met is True
    assert Result("store", "p99", 51.0, "ms", target="<= 50").met is False


def test_no_target_means_met_is_null() -> None:
    line = Result("store", "p50", 3.0, "ms").to_dict()
    assert line["target"] is None
    assert line["met"] is None


def test_missing_value_or_error_is_never_met() -> None:
    assert Result("store", "m", None, "commits/s", baseline=10.0, target=">= 0.7").met is False
    assert Result("store", "m", None, "ms", target="<= 50").met is False
    errored = Result("store", "m", 1.0, "ms", target="<= 50", extra={"error": "3 deliveries missed"})
    assert errored.met is False


def test_zero_baseline_gives_no_ratio() -> None:
    result = Result("store", "m", 5.0, "x", baseline=0.0, target=">= 1")
    assert result.ratio is None
    assert result.met is False


def test_extras_cannot_replace_standard_keys() -> None:
    with pytest.raises(ValueError, match="standard keys"):
        Result("store", "m", 1.0, "x", extra={"met": True})


def test_values_are_rounded_in_the_line() -> None:
    line = Result("store", "m", 1 / 3, "ms", baseline=3.0).to_dict()
    assert line["value"] == 0.333
    assert line["ratio"] == 0.111


@pytest.mark.parametrize(
    ("value", "baseline", "target", "key", "shown"),
    [
        (4996.0, 10000.0, ">= 0.5", "ratio", 0.4996),
        (5004.0, 10000.0, "<= 0.5", "ratio", 0.5004),
        (50.0004, None, "<= 50", "value", 50.0004),
        (0.49996, None, ">= 0.5", "value", 0.49996),
    ],
)
def test_rounding_never_contradicts_met(
    value: float, baseline: float | None, target: str, key: str, shown: float
) -> None:
    """A figure just short of its target keeps the digits that show it is short."""
    line = Result("api", "m", value, "x", baseline=baseline, target=target).to_dict()
    assert line[key] == shown
    assert line["met"] is target_met(target, line[key])


# -- the reporter and --only -------------------------------------------------------------------------


def test_reporter_prints_one_json_line_per_result() -> None:
    out = io.StringIO()
    reporter = Reporter("store", stream=out)
    reporter.emit("sqlite.single_writer.commits_per_s", 800.0, "commits/s", baseline=1000.0, target=">= 0.7")
    reporter.error("postgres.single_writer.commits_per_s", "commits/s", OSError("refused"), target=">= 0.6")
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [line["metric"] for line in lines] == [
        "sqlite.single_writer.commits_per_s",
        "postgres.single_writer.commits_per_s",
    ]
    assert lines[0]["bench"] == "store"
    assert lines[0]["ratio"] == 0.8
    assert lines[0]["met"] is True
    assert lines[1]["value"] is None
    assert lines[1]["met"] is False
    assert lines[1]["error"] == "OSError: refused"
    assert reporter.all_met() is False


@pytest.mark.parametrize(
    ("selector", "name", "selected"),
    [
        ("sqlite.single_writer", "sqlite.single_writer.commits_per_s", True),
        ("sqlite", "sqlite.watch_latency.p99_ms", True),
        ("sqlite.single_writer", "sqlite.single_writer", True),
        ("sqlite.single", "sqlite.single_writer.commits_per_s", False),
        ("*.p99_ms", "sqlite.watch_latency.p99_ms", True),
        ("*.p99_ms", "sqlite.watch_latency.p50_ms", False),
        ("postgres", "sqlite.single_writer.commits_per_s", False),
    ],
)
def test_selector_matches(selector: str, name: str, selected: bool) -> None:
    assert selector_matches(selector, name) is selected


def test_only_filters_output_and_measurement() -> None:
    out = io.StringIO()
    reporter = Reporter("store", only=["sqlite.watch_latency.p99_ms"], stream=out)
    assert reporter.wants("sqlite.watch_latency")  # the group holds the selected metric: measure it
    assert reporter.wants("sqlite")
    assert not reporter.wants("sqlite.single_writer")
    assert not reporter.wants("postgres")
    reporter.emit("sqlite.watch_latency.p50_ms", 3.0, "ms")
    reporter.emit("sqlite.watch_latency.p99_ms", 9.0, "ms", target="<= 50")
    assert [json.loads(line)["metric"] for line in out.getvalue().splitlines()] == [
        "sqlite.watch_latency.p99_ms"
    ]


def test_glob_selector_wants_every_group() -> None:
    reporter = Reporter("store", only=["*.p99_ms"], stream=io.StringIO())
    assert reporter.wants("sqlite.watch_latency")
    assert not reporter.selected("sqlite.single_writer.commits_per_s")


def test_no_selector_wants_everything() -> None:
    reporter = Reporter("store", stream=io.StringIO())
    assert reporter.wants("anything")
    assert reporter.selected("anything.at.all")


def test_split_selectors() -> None:
    assert split_selectors(["a,b", " c ", ""]) == ["a", "b", "c"]
    assert split_selectors(None) == []


# -- statistics --------------------------------------------------------------------------------------


def test_percentile_interpolates_linearly() -> None:
    assert percentile([4, 1, 3, 2], 50) == 2.5
    assert percentile([1, 2, 3, 4], 25) == pytest.approx(1.75)
    assert percentile([1, 2, 3, 4], 0) == 1
    assert percentile([1, 2, 3, 4], 100) == 4
    assert percentile([7.0], 99) == 7.0
    assert percentile(range(1, 101), 99) == pytest.approx(99.01)


def test_percentile_refuses_nonsense() -> None:
    with pytest.raises(ValueError):
        percentile([], 50)
    with pytest.raises(ValueError):
        percentile([1.0], 101)
    with pytest.raises(ValueError):
        percentile([1.0], -1)


def test_summarize() -> None:
    summary = summarize([5.0, 1.0, 3.0])
    assert (summary.count, summary.min, summary.p50, summary.max) == (3, 1.0, 3.0, 5.0)
    assert summary.mean == pytest.approx(3.0)
    assert summary.as_dict()["p99"] == pytest.approx(4.96)
    with pytest.raises(ValueError):
        summarize([])


# -- timing ------------------------------------------------------------------------------------------


def test_rate_for_counts_calls_in_the_duration() -> None:
    calls: list[int] = []
    rate = rate_for(0.05, lambda: calls.append(1))
    assert rate.count == len(calls) > 0
    assert rate.seconds >= 0.05
    assert rate.per_second == pytest.approx(rate.count / rate.seconds)


def test_async_rate_for() -> None:
    async def step() -> None:
        await asyncio.sleep(0)

    rate = asyncio.run(async_rate_for(0.02, step))
    assert rate.count > 0
    assert rate.seconds >= 0.02


def test_alternate_runs_contenders_in_turn_and_keeps_every_sample() -> None:
    order: list[str] = []
    samples = iter([1.0, 10.0, 3.0, 7.0])

    def raw() -> float:
        order.append("raw")
        return next(samples)

    async def store() -> float:
        order.append("store")
        return next(samples)

    rounds = asyncio.run(alternate(2, [("raw", raw), ("store", store)]))
    assert order == ["raw", "store", "raw", "store"]
    assert rounds.samples == {"raw": [1.0, 3.0], "store": [10.0, 7.0]}
    assert rounds.best("raw") == 3.0
    assert rounds.lowest("store") == 7.0


# -- the command line --------------------------------------------------------------------------------


def test_store_is_a_benchmark_and_helpers_are_not() -> None:
    names = available()
    assert "store" in names
    assert not {"report", "stats", "timing", "__main__"} & set(names)


def test_unknown_benchmark_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["no-such-bench"]) == 2
    assert "unknown benchmark" in capsys.readouterr().err


def test_unreachable_postgres_reports_instead_of_crashing(capsys: pytest.CaptureFixture[str]) -> None:
    dsn = "postgresql://nobody@127.0.0.1:1/nothing"
    assert main(["store", "--quick", "--only", "postgres.single_writer", "--dsn", dsn]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["metric"] for line in lines] == ["postgres.single_writer.commits_per_s"]
    assert lines[0]["met"] is False
    assert lines[0]["value"] is None
    assert lines[0]["error"]


def test_smoke_store_quick_single_writer() -> None:
    """``python -m bench store --quick --only sqlite.single_writer`` prints valid result lines."""
    completed = subprocess.run(
        [sys.executable, "-m", "bench", "store", "--quick", "--only", "sqlite.single_writer"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    lines = [json.loads(line) for line in completed.stdout.splitlines() if line.strip()]
    assert [line["metric"] for line in lines] == ["sqlite.single_writer.commits_per_s"]
    line = lines[0]
    assert tuple(line)[: len(KEYS)] == KEYS
    assert line["bench"] == "store"
    assert line["unit"] == "commits/s"
    assert line["target"] == ">= 0.7"
    assert "error" not in line, line["error"]
    assert line["value"] > 0
    assert line["baseline"] > 0
    assert line["ratio"] == pytest.approx(line["value"] / line["baseline"], rel=1e-2)
    assert line["met"] is (line["ratio"] >= 0.7)
