"""Metrics: the numbers a cluster's parts count about themselves, in Prometheus' format.

Every Kubernetes component serves ``/metrics``: plain text that a Prometheus server scrapes every few
seconds, one line per *series* (a metric name and a set of labels) with its current value::

    workqueue_adds_total{name="replicaset"} 42
    apiserver_request_total{code="201",group="apps",resource="deployments",verb="POST",...} 3

Three kinds of metric cover almost everything: a **counter** only goes up (requests served, items
added to a queue; Prometheus computes rates from it), a **gauge** goes up and down (requests in flight,
objects stored), and a **histogram** counts observations into buckets (request durations: how many
took at most 50 ms, at most 100 ms ...), from which Prometheus estimates percentiles.

In Kubelab one process runs several clusters, so each cluster has its own ``MetricsRegistry``
(``registry.py``): its API server, and the in-process components of that cluster (their workqueues
and REST clients), report into it, and ``/clusters/<name>/metrics`` shows that registry only.

Counting is on the hot path (every API request, every workqueue add), so the series live in plain
dictionaries (``vectors.py``): recording is a dictionary update, and the Prometheus objects are built
only when somebody scrapes. ``prometheus_client`` renders the text format (and OpenMetrics) and
parses it in the tests.

Names, labels and buckets are upstream's: ``k8s.io/apiserver/pkg/endpoints/metrics/metrics.go``
(``apiserver_request_*``), ``k8s.io/apiserver/pkg/storage/etcd3/metrics/metrics.go`` (``etcd_*``,
``apiserver_storage_objects``), ``k8s.io/component-base/metrics/prometheus/workqueue/metrics.go``
(``workqueue_*``) and ``.../prometheus/restclient/metrics.go`` (``rest_client_*``).
"""

from __future__ import annotations

from controlplane.metrics.registry import Collector, MetricsRegistry
from controlplane.metrics.restclient import RestClientMetrics
from controlplane.metrics.vectors import CounterVec, GaugeVec, HistogramVec
from controlplane.metrics.workqueue import WorkqueueMetrics

__all__ = [
    "Collector",
    "CounterVec",
    "GaugeVec",
    "HistogramVec",
    "MetricsRegistry",
    "RestClientMetrics",
    "WorkqueueMetrics",
]
