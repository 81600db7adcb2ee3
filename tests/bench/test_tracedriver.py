"""The trace driver of ``python -m bench ui``: its events fit the schema and hang together; it keeps its rate.

``Workload`` stands in for a busy cluster, so what matters is that the page cannot tell: every event
validates strictly, requests run their pipeline to an answer, revisions only rise, watch events name
the revisions that were written, and the pods come and go instead of piling up.
"""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any

from bench._tracedriver import Driver, Workload
from controlplane.trace.bus import TraceBus
from controlplane.trace.schema import validate
from controlplane.trace.sink import ListSink


def stamped(count: int, **options: Any) -> list[dict[str, Any]]:
    """The first ``count`` events of a workload, stamped by a real bus (with its schema check on)."""
    bus = TraceBus("demo", check_schema=True)
    for kind, fields in itertools.islice(Workload(**options), count):
        bus.emit(kind, **fields)
    assert bus.problems == [], bus.problems[:5]
    return bus.recorder.since(0)


def test_every_event_fits_the_schema_strictly() -> None:
    events = stamped(20_000, seed=7)
    problems = [(e["seq"], validate(e, strict=True)) for e in events if validate(e, strict=True)]
    assert problems == []
    assert len(events) == 20_000


def test_the_mix_is_a_busy_clusters_with_pods_lives_making_most_of_it() -> None:
    events = stamped(20_000)
    types = Counter(e["type"] for e in events)
    needed = [
        "request.received", "request.stage", "request.completed", "store.txn", "watch.event", "reconcile",
        "scheduler.decision", "admission.step", "rbac.decision", "flowcontrol.decision", "watch.opened",
        "watch.closed",
    ]  # fmt: skip
    for kind in needed:
        assert types[kind] > 0, f"no {kind} in 20,000 events: {types}"
    assert types["request.stage"] > 0.3 * len(events)  # as in a traced kubectl session
    refusals = [e for e in events if e["type"] == "rbac.decision" and not e["allowed"]]
    assert refusals and all(e["considered"] and e["message"] for e in refusals)
    nodes = {e["to"] for e in events if e["type"] == "watch.event"}
    assert {"scheduler", "controller-manager", "kubelet:node-1", "kubelet:node-2", "kubelet:node-3"} <= nodes


def test_requests_run_to_an_answer_and_denied_ones_stop_at_authorization() -> None:
    events = stamped(20_000)
    by_request: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        if event["type"].startswith("request."):
            by_request.setdefault(event["id"], []).append(event)
    finished = [steps for steps in by_request.values() if steps[0]["type"] == "request.received"]
    assert len(finished) > 500
    for steps in finished[:-10]:  # the last few may still be in flight when the sample ends
        received, *middle, last = steps
        if received["verb"] == "watch":
            continue  # a watch request is answered when the watch ends
        assert last["type"] == "request.completed", steps
        stages = [s["stage"] for s in middle]
        assert stages[:3] == ["authentication", "audit", "impersonation"], stages
        if last["code"] == 403:
            assert stages[-1] == "authorization" and middle[-1]["outcome"] == "deny"


def test_revisions_rise_one_per_write_and_watch_events_name_written_ones() -> None:
    events = stamped(20_000, first_revision=500)
    writes = [e["revision"] for e in events if e["type"] == "store.txn" and e["op"] == "txn"]
    assert writes == list(range(500, 500 + len(writes)))
    written = set(writes)
    delivered = [e["revision"] for e in events if e["type"] == "watch.event"]
    assert delivered and set(delivered) <= written


def test_pods_come_and_go_within_the_population() -> None:
    workload = Workload(pods=6, seed=3)
    events = list(itertools.islice(workload, 30_000))
    assert len(workload.pods) <= 6
    changes = [f for kind, f in events if kind == "watch.event" and f.get("kind") == "Pod"]
    created = {f["key"] for f in changes if f["event"] == "ADDED"}
    deleted = {f["key"] for f in changes if f["event"] == "DELETED"}
    assert len(created) > 20, "pods should be replaced, not only made"
    assert len(created - deleted) <= 6 + 4  # the live ones, and the few being made right now


def test_the_same_seed_makes_the_same_stream() -> None:
    first = list(itertools.islice(Workload(seed=5), 3000))
    second = list(itertools.islice(Workload(seed=5), 3000))
    other = list(itertools.islice(Workload(seed=6), 3000))
    assert first == second
    assert first != other


def test_the_driver_emits_what_is_due_and_catches_up_no_more_than_a_burst() -> None:
    sink = ListSink()
    driver = Driver(sink, Workload(), rate=1000, max_burst=100)
    assert driver.emit_due(10.0) == 0  # the start
    assert driver.emit_due(10.05) == 50
    assert driver.emit_due(10.5) == 100  # 450 were due: one burst now, the rest at later ticks
    assert driver.stats().max_behind == 350
    assert driver.emit_due(10.5) == 100
    assert len(sink.events) == 250


async def test_a_timed_drive_emits_exactly_its_events_and_stops() -> None:
    sink = ListSink()
    driver = Driver(sink, Workload(), rate=2000, tick=0.002)
    await driver.run(0.05)
    stats = driver.stats()
    assert len(sink.events) == stats.emitted == 100
    assert not stats.running
    assert stats.seconds >= 0.05
