"""Smoke run of ``python -m bench trace --quick``: it serves, drives, watches and prints well-formed lines.

It checks the instrument, never a speed: whether the delivery and latency targets are met is the
benchmark's business. The run is the real one made small (a lab on a free port with its driver, the
raw ``websockets`` server, 20 sockets on each for 3 s). What must hold whatever the machine's speed:
every socket got frames, the frames checked whole agreed with how they were read, the stream had no
gap (the trace's promise), and the lines add up.
"""

from __future__ import annotations

from tests.support.bench import run_bench


def test_smoke_trace_quick() -> None:
    lines = run_bench("trace", timeout=180)
    assert [line["metric"] for line in lines] == [
        "c20.delivered_events_per_s",
        "c20.latency.p50_ms",
        "c20.latency.p99_ms",
        "c20.unresolved_gaps",
    ]
    for line in lines:
        assert "error" not in line, line["error"]
        assert line["clients"] == 20
    delivered, p50, p99, gaps = lines

    assert delivered["target"] == ">= 0.5"
    assert delivered["unit"] == "events/s"
    assert delivered["value"] > 0 and delivered["baseline"] > 0
    assert abs(delivered["ratio"] - delivered["value"] / delivered["baseline"]) <= 0.01 * delivered["ratio"]
    assert delivered["met"] is (delivered["ratio"] >= 0.5)
    # Nothing can be delivered that was not made: at most every event to every socket (+10% for timing).
    assert delivered["value"] <= 1.1 * delivered["expected_events_per_s"]
    assert delivered["baseline"] <= 1.1 * delivered["expected_events_per_s"]
    assert delivered["accounted_events_per_s"]["kubelab"] >= delivered["value"] - 1
    assert delivered["accounted_events_per_s"]["raw"] >= delivered["baseline"] - 1
    assert delivered["frames_per_s"]["kubelab"] > 0 and delivered["frames_per_s"]["raw"] > 0

    assert p50["target"] is None and p50["met"] is None
    assert p99["target"] == "<= 250" and p99["unit"] == "ms"
    assert 0 < p50["value"] <= p99["value"] <= p99["max_ms"]
    assert p99["met"] is (p99["value"] <= 250)
    assert p99["samples"] > 0 and p99["latency_sockets"] == 20
    assert p99["raw"]["samples"] > 0

    assert gaps["target"] == "== 0" and gaps["unit"] == "count"
    assert gaps["value"] == 0 and gaps["met"] is True, "the trace stream had a gap no resync closed"
    assert gaps["verified_frames"] > 0
