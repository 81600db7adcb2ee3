"""Workqueue metrics: how busy each controller's to-do list is (``workqueue_*{name=...}``).

The Prometheus side of client-go's workqueue metrics (``k8s.io/component-base/metrics/prometheus/
workqueue/metrics.go``), as a provider the queues of one cluster report to
(``controlplane.client.clientmetrics.WorkqueueMetricsProvider``). Every series has one label, ``name``: the
queue's name, which is its controller's (``replicaset``, ``deployment`` ...).

- ``workqueue_adds_total``, ``workqueue_retries_total``: counters, kept here per name, so they keep
  counting across a controller's restarts (a new queue of the same name adds to them).
- ``workqueue_queue_duration_seconds`` (how long an item waited before a worker took it) and
  ``workqueue_work_duration_seconds`` (how long the worker took): histograms, buckets from 1 us to
  1000 s by factors of ten, also kept here.
- ``workqueue_depth``, ``workqueue_unfinished_work_seconds`` (the work in progress, added up) and
  ``workqueue_longest_running_processor_seconds``: gauges, read from the live queues when scraped
  (upstream updates the last two every 500 ms; reading them when asked is the same, only exact).
  Several live queues of one name are added up (the longest is the longest of all).

The queues are held weakly: a queue that is gone stops counting in the gauges.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable
from typing import Protocol

from prometheus_client.metrics_core import Metric

from controlplane.metrics.vectors import CounterVec, HistogramVec, exponential_buckets, gauge_family

#: ``k8smetrics.ExponentialBuckets(10e-7, 10, 10)``: 1 us ... 1000 s.
DURATION_BUCKETS = exponential_buckets(10e-7, 10, 10)

_NAME = ("name",)


class QueueMetrics(Protocol):
    """What is read from a live queue when scraped (``controlplane.client.workqueue.QueueMetrics``)."""

    @property
    def name(self) -> str: ...

    @property
    def depth(self) -> int: ...

    @property
    def now(self) -> Callable[[], float]: ...

    def unfinished_work_seconds(self, now: float) -> float: ...

    def longest_running_processor_seconds(self, now: float) -> float: ...


class _QueueSeries:
    """The counters and histograms of one queue name (what a queue's ``observer`` is)."""

    __slots__ = ("_labels", "_metrics")

    def __init__(self, metrics: WorkqueueMetrics, name: str) -> None:
        self._metrics = metrics
        self._labels = (name,)

    def added(self) -> None:
        self._metrics.adds.inc(self._labels)

    def retried(self) -> None:
        self._metrics.retries.inc(self._labels)

    def waited(self, seconds: float) -> None:
        self._metrics.queue_duration.observe(self._labels, seconds)

    def worked(self, seconds: float) -> None:
        self._metrics.work_duration.observe(self._labels, seconds)


class WorkqueueMetrics:
    """The ``workqueue_*`` metrics of one cluster's queues: a provider and a collector."""

    def __init__(self) -> None:
        self.adds = CounterVec("workqueue_adds_total", "Total number of adds handled by workqueue", _NAME)
        self.retries = CounterVec(
            "workqueue_retries_total", "Total number of retries handled by workqueue", _NAME
        )
        self.queue_duration = HistogramVec(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested.",
            _NAME,
            DURATION_BUCKETS,
        )
        self.work_duration = HistogramVec(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            _NAME,
            DURATION_BUCKETS,
        )
        self._series: dict[str, _QueueSeries] = {}
        #: The live queues, by id (held weakly: a queue that is gone stops counting).
        self._queues: weakref.WeakValueDictionary[int, QueueMetrics] = weakref.WeakValueDictionary()

    def observer(self, name: str, queue: QueueMetrics) -> _QueueSeries:
        """Count ``queue`` (a queue's metrics) under ``name``."""
        self._queues[id(queue)] = queue
        series = self._series.get(name)
        if series is None:
            series = self._series[name] = _QueueSeries(self, name)
            # Every series exists from the queue's creation on, at 0, as upstream's do.
            self.adds.inc((name,), 0)
            self.retries.inc((name,), 0)
        return series

    def collect(self) -> Iterable[Metric]:
        depth: dict[tuple[str, ...], float] = {(name,): 0.0 for name in self._series}
        unfinished = dict(depth)
        longest = dict(depth)
        for queue in list(self._queues.values()):
            key = (queue.name,)
            if key not in depth:
                continue
            now = queue.now()
            depth[key] += queue.depth
            unfinished[key] += queue.unfinished_work_seconds(now)
            longest[key] = max(longest[key], queue.longest_running_processor_seconds(now))
        yield gauge_family("workqueue_depth", "Current depth of workqueue", _NAME, depth)
        yield self.adds.collect()
        yield self.queue_duration.collect()
        yield self.work_duration.collect()
        yield gauge_family(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has done that is in progress and hasn't been observed by "
            "work_duration. Large values indicate stuck threads. One can deduce the number of stuck "
            "threads by observing the rate at which this increases.",
            _NAME,
            unfinished,
        )
        yield gauge_family(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            _NAME,
            longest,
        )
        yield self.retries.collect()
