"""A smoke run of ``python -m bench classroom --quick``: every line printed, well-formed, measured.

This checks the instrument, never a speed: one and two running sandboxes read idle, and the
instructor's fault fanned out to both and cleared. Whether a target is met is the benchmark's business.
"""

from __future__ import annotations

from tests.support.bench import run_bench

METRICS = [
    "idle.n1.cpu_percent_per_sandbox",
    "idle.n1.rss_mb_per_sandbox",
    "idle.n2.cpu_percent_per_sandbox",
    "idle.n2.rss_mb_per_sandbox",
    "fault.fanout_p99_s",
    "fault.clear_all_p99_s",
]


def test_every_line_is_measured_with_its_target() -> None:
    lines = run_bench(
        "classroom", "--counts", "1,2", "--idle-seconds", "1", "--settle-seconds", "0", "--fanout", "2",
        timeout=180,
    )  # fmt: skip
    assert [line["metric"] for line in lines] == METRICS
    for line in lines:
        assert "error" not in line, line
        assert line["value"] is not None and line["value"] >= 0, line
    by_metric = {line["metric"]: line for line in lines}
    assert by_metric["idle.n2.cpu_percent_per_sandbox"]["target"] == "<= 0.17"
    assert by_metric["idle.n2.rss_mb_per_sandbox"]["target"] == "<= 5"
    fanout = by_metric["fault.fanout_p99_s"]
    assert (fanout["target"], fanout["reached"], fanout["errors"]) == ("<= 1", 2, [])
    cleared = by_metric["fault.clear_all_p99_s"]
    assert (cleared["target"], cleared["healthy"], cleared["errors"]) == ("<= 10", 2, [])
    # The node went NotReady before clearing: the node lifecycle controller's grace period had passed.
    assert cleared["node_not_ready_after_s"] > 0
