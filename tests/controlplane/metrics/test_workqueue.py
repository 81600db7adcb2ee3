"""Workqueue metrics: each named queue reports to its cluster's provider, read when scraped."""

from __future__ import annotations

import asyncio
import gc

from controlplane.client.clientmetrics import reporting_workqueues
from controlplane.client.workqueue import Queue, RateLimitingQueue
from controlplane.clock import ManualClock
from controlplane.metrics import WorkqueueMetrics


def values(metrics: WorkqueueMetrics) -> dict[tuple[str, str], float]:
    """(sample name, queue name) -> value, buckets left out."""
    return {
        (s.name, s.labels["name"]): s.value
        for family in metrics.collect()
        for s in family.samples
        if not s.name.endswith("_bucket") and not s.name.endswith("_created")
    }


async def test_a_named_queue_reports_upstreams_series() -> None:
    clock = ManualClock(start=1000.0)
    metrics = WorkqueueMetrics()
    queue: Queue[str] = Queue("replicaset", clock=clock, metrics_provider=metrics)
    queue.add("a")
    queue.add("b")
    queue.add("a")  # deduped: not an add
    await clock.advance(2)
    item = await queue.get()
    await clock.advance(3)
    v = values(metrics)
    assert v[("workqueue_depth", "replicaset")] == 1
    assert v[("workqueue_adds_total", "replicaset")] == 2
    assert v[("workqueue_queue_duration_seconds_count", "replicaset")] == 1
    assert v[("workqueue_queue_duration_seconds_sum", "replicaset")] == 2
    assert v[("workqueue_unfinished_work_seconds", "replicaset")] == 3
    assert v[("workqueue_longest_running_processor_seconds", "replicaset")] == 3
    queue.done(item)
    v = values(metrics)
    assert v[("workqueue_work_duration_seconds_count", "replicaset")] == 1
    assert v[("workqueue_work_duration_seconds_sum", "replicaset")] == 3
    assert v[("workqueue_unfinished_work_seconds", "replicaset")] == 0
    assert v[("workqueue_retries_total", "replicaset")] == 0
    families = {f.name: f.type for f in metrics.collect()}
    assert families == {
        "workqueue_depth": "gauge",
        "workqueue_adds": "counter",
        "workqueue_queue_duration_seconds": "histogram",
        "workqueue_work_duration_seconds": "histogram",
        "workqueue_unfinished_work_seconds": "gauge",
        "workqueue_longest_running_processor_seconds": "gauge",
        "workqueue_retries": "counter",
    }


async def test_queues_made_in_a_reporting_context_report_and_counters_outlive_them() -> None:
    clock = ManualClock(start=0.0)
    metrics = WorkqueueMetrics()
    with reporting_workqueues(metrics):
        first: RateLimitingQueue[str] = RateLimitingQueue(name="deployment", clock=clock)
        unnamed: Queue[str] = Queue(clock=clock)
    outside: Queue[str] = Queue("elsewhere", clock=clock)
    first.add_rate_limited("x")
    first.add("y")
    unnamed.add("z")
    outside.add("w")
    v = values(metrics)
    assert v[("workqueue_retries_total", "deployment")] == 1
    assert v[("workqueue_depth", "deployment")] == 1
    assert {name for _, name in v} == {"deployment"}  # no unnamed queue, none made elsewhere
    first.shut_down()
    await asyncio.sleep(0)  # its delay timer, cancelled, ends
    del first
    gc.collect()
    v = values(metrics)
    assert v[("workqueue_depth", "deployment")] == 0  # a queue that is gone holds nothing
    assert v[("workqueue_adds_total", "deployment")] == 1  # but what it counted stays counted
