"""REST client metrics: the requests a cluster's components sent to the API server.

``rest_client_requests_total{code, method, host}`` counts every HTTP attempt a client made (a retry is
another attempt), by its status code (``<error>`` when no answer came), HTTP method and the server's
``host:port`` (``inprocess`` for the components that call the API server without a socket). Upstream:
``k8s.io/component-base/metrics/prometheus/restclient/metrics.go`` (``requestResult``), fed by
client-go's ``rest/request.go``. The API server's ``apiserver_request_total`` counts the same traffic
from the other side.

Components running as their own processes (``manage.py runcomponent``) count into their own process,
which serves no ``/metrics``: only the in-process components of a cluster appear here.
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.metrics_core import Metric

from controlplane.metrics.vectors import CounterVec


class RestClientMetrics:
    """``rest_client_requests_total`` of one cluster's in-process clients (``RequestMetrics``)."""

    def __init__(self) -> None:
        self.requests = CounterVec(
            "rest_client_requests_total",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            ("code", "method", "host"),
        )

    def increment(self, code: str, method: str, host: str) -> None:
        self.requests.inc((code, method, host))

    def collect(self) -> Iterable[Metric]:
        yield self.requests.collect()
