"""A cluster's metrics registry: every collector of one cluster, rendered for ``/metrics``.

A **collector** is anything with ``collect()`` returning Prometheus metric families: the API server's
request metrics, the store's, each workqueue provider, each REST client's, and later flow control's
``apiserver_flowcontrol_*``. It is asked for its families only when ``/metrics`` is scraped, so what it
reports can be computed then (the depth of every queue, the objects in every watch cache).

Upstream registers every metric in one process-wide registry (``legacyregistry``); Kubelab runs several
clusters in one process, so each cluster has one ``MetricsRegistry`` and everything of that cluster
registers there. To add metrics (flow control's, say), write a collector and register it::

    class FlowControlMetrics:
        def collect(self) -> Iterable[Metric]:
            yield gauge_family("apiserver_flowcontrol_current_executing_requests", "...", labels, values)

    apiserver.metrics_registry.register(FlowControlMetrics())
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import Metric


class Collector(Protocol):
    """What a registry asks for its metrics (``prometheus_client``'s collector interface)."""

    def collect(self) -> Iterable[Metric]: ...


class MetricsRegistry:
    """The collectors of one cluster."""

    def __init__(self) -> None:
        self._registry = CollectorRegistry(auto_describe=False)
        self._collectors: list[Collector] = []

    def register(self, collector: Collector) -> None:
        """Report ``collector``'s families from now on (registering one twice changes nothing)."""
        if any(c is collector for c in self._collectors):
            return
        self._collectors.append(collector)
        self._registry.register(collector)

    def unregister(self, collector: Collector) -> None:
        if any(c is collector for c in self._collectors):
            self._collectors = [c for c in self._collectors if c is not collector]
            self._registry.unregister(collector)

    def collect(self) -> Iterable[Metric]:
        return self._registry.collect()

    def exposition(self, accept: str = "") -> tuple[bytes, str]:
        """The registry rendered for a client that ``Accept``s ``accept``: (body, content type).

        Prometheus' text format, or OpenMetrics for a scraper that asks for it.
        """
        encoder, content_type = choose_encoder(accept)
        return encoder(self._registry), content_type
