"""Smoke run of ``python -m bench cluster --quick``: a small cluster, every line well-formed.

It checks the instrument, never a speed: whether the targets are met is the benchmark's business.
The sizes are cut down further than ``--quick`` (3 nodes, 12 pods, 2 s idle) to keep it short; the
lines must still say what the run did: how many pods, how many store writes and API requests each cost.
"""

from __future__ import annotations

from tests.support.bench import run_bench

SIZES = ("--nodes", "3", "--pods", "12", "--hold-nodes", "3", "--hold-pods", "12", "--probe-pods", "3")


def test_smoke_cluster_quick() -> None:
    lines = run_bench("cluster", *SIZES, "--idle-seconds", "2", timeout=240)
    by_metric = {line["metric"]: line for line in lines}
    assert list(by_metric) == [
        "throughput.running_pods_per_s",
        "throughput.scheduled_pods_per_s",
        "throughput.cpu_ms_per_pod",
        "startup.p50_ms",
        "startup.p99_ms",
        "memory.peak_rss_mb",
        "idle.cpu_percent_of_a_core",
    ]
    for line in lines:
        assert "error" not in line, line["error"]
        assert line["value"] is not None and line["value"] >= 0, line
    running = by_metric["throughput.running_pods_per_s"]
    assert running["target"] == ">= 300" and running["met"] is (running["value"] >= 300)
    assert running["pods"] == 12 and running["nodes"] == 3
    # Every pod is at least created, bound and given a status: three writes and three requests each.
    assert running["store_writes"] >= 3 * 12
    cpu = by_metric["throughput.cpu_ms_per_pod"]
    assert cpu["value"] > 0 and cpu["api_requests_per_pod"] >= 3
    assert by_metric["startup.p99_ms"]["probes"] == 3
    assert by_metric["startup.p99_ms"]["target"] == "<= 1000"
    assert by_metric["memory.peak_rss_mb"]["target"] == "<= 1536"
    assert by_metric["idle.cpu_percent_of_a_core"]["target"] == "< 3"
