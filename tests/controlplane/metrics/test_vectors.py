"""Metric vectors: plain-dict counters, gauges and histograms, exposed as Prometheus families."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from controlplane.metrics import CounterVec, GaugeVec, HistogramVec, MetricsRegistry


def test_a_histogram_counts_into_cumulative_buckets_by_le() -> None:
    h = HistogramVec("op_seconds", "How long.", ("op",), (0.1, 1.0))
    for value in (0.05, 0.1, 0.5, 2.0):
        h.observe(("get",), value)
    (family,) = [h.collect()]
    buckets = {s.labels["le"]: s.value for s in family.samples if s.name == "op_seconds_bucket"}
    assert buckets == {"0.1": 2, "1.0": 3, "+Inf": 4}  # 0.1 is "<= 0.1"
    assert {s.name: s.value for s in family.samples if not s.name.endswith("_bucket")} == {
        "op_seconds_count": 4,
        "op_seconds_sum": 2.65,
    }
    assert h.count(("get",)) == 4 and h.count(("put",)) == 0


def test_a_registry_renders_text_that_prometheus_parses() -> None:
    registry = MetricsRegistry()
    counter = CounterVec("things_total", "Things.", ("kind", "code"))
    counter.inc(("a", "200"))
    counter.inc(("a", "200"), 2)
    gauge = GaugeVec("level", "A level.", ("name",))
    gauge.set(("x",), 3)
    gauge.add(("x",), -1)

    class Pair:
        def collect(self):  # type: ignore[no-untyped-def]
            yield counter.collect()
            yield gauge.collect()

    collector = Pair()
    registry.register(collector)
    registry.register(collector)  # twice: once
    text, content_type = registry.exposition()
    assert content_type.startswith("text/plain")
    families = {f.name: f for f in text_string_to_metric_families(text.decode())}
    assert families["things"].type == "counter"
    assert [(s.labels, s.value) for s in families["things"].samples if s.name == "things_total"] == [
        ({"kind": "a", "code": "200"}, 3.0)
    ]
    assert families["level"].samples[0].value == 2
    registry.unregister(collector)
    assert registry.exposition()[0] == b""
