"""The client's metric hooks: what a REST client and a workqueue report, to whoever listens.

client-go does not depend on Prometheus. Its REST client reports each request's result to
``tools/metrics`` (``metrics.RequestResult.Increment(ctx, code, method, host)``) and its workqueues
ask a ``MetricsProvider`` (``util/workqueue/metrics.go``) for their counters; both do nothing until a
program plugs in an implementation (``k8s.io/component-base/metrics/prometheus/restclient`` and
``.../workqueue``, which register ``rest_client_requests_total`` and ``workqueue_*``). Kubelab keeps
the same seam: the protocols below are what the client calls, ``controlplane.metrics`` implements
them for Prometheus, and the runtime plugs one in per cluster.

Upstream plugs its implementations in once per process (global variables). Kubelab runs several
clusters in one process, so:

- a REST client reports to the ``request_metrics`` of its ``Config`` (the runtime gives every
  component of a cluster that cluster's);
- a workqueue reports to the provider given to it, or else to the provider of the context it is
  created in: the runtime starts a cluster's components inside ``reporting_workqueues(provider)``,
  and every task they start inherits the context, so every queue they make counts for their cluster.

A queue with no name reports nothing, as in client-go.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from controlplane.client.workqueue import QueueMetrics


class RequestMetrics(Protocol):
    """Receives the result of every HTTP request a REST client sends (client-go ``RequestResult``)."""

    def increment(self, code: str, method: str, host: str) -> None:
        """One request to ``host`` with ``method`` ended with ``code`` (a status, or ``<error>``)."""
        ...


class QueueObserver(Protocol):
    """The counters and histograms of one queue name (``workqueue_*{name=...}``)."""

    def added(self) -> None: ...

    def retried(self) -> None: ...

    def waited(self, seconds: float) -> None:
        """An item waited ``seconds`` in the queue before a worker took it."""
        ...

    def worked(self, seconds: float) -> None:
        """A worker spent ``seconds`` on an item."""
        ...


class WorkqueueMetricsProvider(Protocol):
    """Gives each named queue its observer (client-go ``MetricsProvider``).

    ``queue`` is kept (weakly) to read its depth and the age of its work in progress when scraped.
    """

    def observer(self, name: str, queue: QueueMetrics) -> QueueObserver: ...


_workqueue_provider: ContextVar[WorkqueueMetricsProvider | None] = ContextVar(
    "workqueue_metrics_provider", default=None
)


def workqueue_metrics_provider() -> WorkqueueMetricsProvider | None:
    """The provider queues created now report to (None: they report nothing)."""
    return _workqueue_provider.get()


@contextlib.contextmanager
def reporting_workqueues(provider: WorkqueueMetricsProvider | None) -> Iterator[None]:
    """Queues created inside (and in tasks started inside) report to ``provider``."""
    token = _workqueue_provider.set(provider)
    try:
        yield
    finally:
        _workqueue_provider.reset(token)
