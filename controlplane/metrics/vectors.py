"""Metric vectors: one counter, gauge or histogram per set of label values, kept in plain dicts.

A *vector* is a metric with labels: ``apiserver_request_total`` is one counter per combination of
verb, resource, code ... that has occurred. Prometheus' own client keeps a locked object per series
and looks it up by label values on every ``inc``; Kubelab's control plane runs on one event loop, so a
vector here is a dictionary from the tuple of label values to the number(s), and recording is one
dictionary update. The ``prometheus_client`` families are built from the dictionaries only when the
metrics are scraped (``collect``).

Label values are passed as a tuple in the order of ``labelnames``. A histogram keeps, per series,
one count per bucket (not cumulative: an observation lands in the first bucket whose upper bound is
at least the value, as Prometheus' ``le`` says), the count above the last bound, and the sum;
``collect`` adds them up into Prometheus' cumulative buckets.

Nothing here is thread-safe: record from the event loop (or from one thread) only.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import cast

from prometheus_client import utils
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

Labels = tuple[str, ...]

#: A bucket bound as Prometheus writes it (Go's float formatting: ``0.005``, ``1.0``, ``1e-06``).
format_bound = cast("Callable[[float], str]", utils.floatToGoString)


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """``count`` bucket bounds from ``start``, each ``factor`` times the last (upstream's
    ``ExponentialBuckets``)."""
    return tuple(start * factor**i for i in range(count))


class CounterVec:
    """A counter per label set: it only goes up."""

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str]) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self.values: dict[Labels, float] = {}

    def inc(self, labels: Labels, amount: float = 1.0) -> None:
        values = self.values
        values[labels] = values.get(labels, 0.0) + amount

    def value(self, labels: Labels) -> float:
        return self.values.get(labels, 0.0)

    def collect(self) -> Metric:
        family = CounterMetricFamily(self.name, self.documentation, labels=self.labelnames)
        for labels, value in self.values.items():
            family.add_metric(labels, value)
        return family


class GaugeVec:
    """A gauge per label set: a value that goes up and down, set or moved by whoever measures it."""

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str]) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self.values: dict[Labels, float] = {}

    def set(self, labels: Labels, value: float) -> None:
        self.values[labels] = value

    def add(self, labels: Labels, amount: float) -> None:
        values = self.values
        values[labels] = values.get(labels, 0.0) + amount

    def collect(self) -> Metric:
        return gauge_family(self.name, self.documentation, self.labelnames, self.values)


def gauge_family(
    name: str, documentation: str, labelnames: Sequence[str], values: Mapping[Labels, float]
) -> GaugeMetricFamily:
    """A gauge family of ``values`` (for gauges computed when scraped)."""
    family = GaugeMetricFamily(name, documentation, labels=labelnames)
    for labels, value in values.items():
        family.add_metric(labels, value)
    return family


class HistogramVec:
    """A histogram per label set: observations counted into buckets, with their sum."""

    def __init__(
        self, name: str, documentation: str, labelnames: Sequence[str], buckets: Iterable[float]
    ) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self.bounds = tuple(sorted(buckets))
        self._le = [format_bound(b) for b in self.bounds] + ["+Inf"]
        #: Per series: a count per bucket, the count above the last bound, then the sum.
        self.series: dict[Labels, list[float]] = {}

    def observe(self, labels: Labels, value: float) -> None:
        counts = self.series.get(labels)
        if counts is None:
            counts = self.series[labels] = [0.0] * (len(self.bounds) + 2)
        counts[bisect_left(self.bounds, value)] += 1
        counts[-1] += value

    def count(self, labels: Labels) -> int:
        counts = self.series.get(labels)
        return 0 if counts is None else int(sum(counts[:-1]))

    def collect(self) -> Metric:
        family = HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)
        for labels, counts in self.series.items():
            family.add_metric(labels, self._cumulative(counts[:-1]), counts[-1])
        return family

    def _cumulative(self, counts: Sequence[float]) -> list[tuple[str, float]]:
        total = 0.0
        buckets = []
        for le, count in zip(self._le, counts, strict=True):
            total += count
            buckets.append((le, total))
        return buckets


class FunctionCollector:
    """A collector whose families a function computes when scraped (gauges of current state)."""

    def __init__(self, collect: Callable[[], Iterable[Metric]]) -> None:
        self._collect = collect

    def collect(self) -> Iterable[Metric]:
        return self._collect()
