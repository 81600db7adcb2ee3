"""Flow control's metrics: upstream's ``apiserver_flowcontrol_*`` series, read off at scrape time.

kube-apiserver reports how full each priority level is and what it dispatched and rejected
(``k8s.io/apiserver/pkg/util/flowcontrol/metrics/metrics.go``). Here the flow-control filter already
keeps those counts for the trace and ``snapshot()``; this collector turns a snapshot into Prometheus
families when ``/metrics`` is read, so serving requests costs nothing extra. The gauges are per
priority level only (upstream also splits executing and waiting requests by FlowSchema).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric

if TYPE_CHECKING:  # the filter imports this package: only the annotation needs its snapshot type
    from controlplane.apiserver.filters.priority_and_fairness import FlowControlSnapshot


class FlowControlMetrics:
    """A collector over ``snapshot`` (the flow-control filter's)."""

    def __init__(self, snapshot: Callable[[], FlowControlSnapshot]) -> None:
        self.snapshot = snapshot

    def collect(self) -> Iterable[Metric]:
        now = self.snapshot()
        executing = GaugeMetricFamily(
            "apiserver_flowcontrol_current_executing_requests",
            "Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution stage in the "
            "API Priority and Fairness subsystem",
            labels=("priority_level",),
        )
        seats = GaugeMetricFamily(
            "apiserver_flowcontrol_current_executing_seats",
            "Concurrency (number of seats) occupied by the currently executing (initial stage for a WATCH, "
            "any stage otherwise) requests in the API Priority and Fairness subsystem",
            labels=("priority_level",),
        )
        waiting = GaugeMetricFamily(
            "apiserver_flowcontrol_current_inqueue_requests",
            "Number of requests currently pending in queues of the API Priority and Fairness subsystem",
            labels=("priority_level",),
        )
        limit = GaugeMetricFamily(
            "apiserver_flowcontrol_nominal_limit_seats",
            "Nominal number of execution seats configured for each priority level",
            labels=("priority_level",),
        )
        dispatched = CounterMetricFamily(
            "apiserver_flowcontrol_dispatched_requests",
            "Number of requests executed by API Priority and Fairness subsystem",
            labels=("priority_level", "flow_schema"),
        )
        rejected = CounterMetricFamily(
            "apiserver_flowcontrol_rejected_requests",
            "Number of requests rejected by API Priority and Fairness subsystem",
            labels=("priority_level", "flow_schema", "reason"),
        )
        for level in now.priority_levels:
            executing.add_metric((level.name,), level.executing)
            seats.add_metric((level.name,), level.seats_in_use)
            waiting.add_metric((level.name,), level.waiting)
            limit.add_metric((level.name,), level.concurrency_limit)
        for schema in now.flow_schemas:
            dispatched.add_metric((schema.priority_level, schema.name), schema.dispatched)
            for reason, count in schema.rejected.items():
                rejected.add_metric((schema.priority_level, schema.name, reason), count)
        yield from (executing, seats, waiting, limit, dispatched, rejected)
