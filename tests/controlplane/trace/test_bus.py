"""The bus: stamps the envelope, numbers events without gaps, records them, and fans them out."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from controlplane.trace import request_context
from controlplane.trace.bus import LOG_TRIM, TraceBus, summarise
from controlplane.trace.recorder import OutOfOrder, TooOld, Untraced
from controlplane.trace.schema import SCHEMA_VERSION


def ticking() -> TraceBus:
    clock = itertools.count(1000)
    return TraceBus("demo", now=lambda: float(next(clock)))


def test_the_bus_stamps_the_envelope_in_order() -> None:
    bus = ticking()
    bus.emit("store.compact", revision=5, **{"from": "apiserver", "to": "etcd"})
    (event,) = bus.recorder
    assert list(event)[:5] == ["v", "cluster", "seq", "ts", "type"]
    assert event == {
        "v": SCHEMA_VERSION,
        "cluster": "demo",
        "seq": 1,
        "ts": 1000.0,
        "type": "store.compact",
        "revision": 5,
        "from": "apiserver",
        "to": "etcd",
    }


def test_seq_is_gapless_and_the_bus_owns_the_envelope() -> None:
    bus = ticking()
    for _ in range(3):
        bus.emit("store.compact", revision=1, cluster="someone-else", seq=99)
    assert [(e["seq"], e["cluster"]) for e in bus.recorder] == [(1, "demo"), (2, "demo"), (3, "demo")]
    assert bus.last_seq == 3


def test_the_request_being_served_names_the_event() -> None:
    bus = ticking()
    with request_context("audit-1"):
        bus.emit("store.txn", op="txn", revision=3)
        bus.emit("store.txn", op="txn", revision=4, id=None)  # an emitter's own answer wins
    bus.emit("store.txn", op="txn", revision=5)
    first, second, third = bus.recorder
    assert first["id"] == "audit-1"
    assert second["id"] is None
    assert "id" not in third


def test_with_recording_off_and_nobody_watching_nothing_is_made() -> None:
    bus = TraceBus("demo", recording=False)
    assert not bus.enabled
    bus.emit("store.compact", revision=1)
    assert bus.last_seq == 0 and len(bus.recorder) == 0
    with bus.subscribe() as subscription:
        assert bus.enabled
        bus.emit("store.compact", revision=2)
        assert [e["seq"] for e in subscription.drain().events] == [1]
    assert not bus.enabled and bus.subscribers == 0
    assert len(bus.recorder) == 1  # what was made while watched stays recorded for re-syncs


def test_a_subscriber_cannot_catch_up_across_a_time_nobody_watched() -> None:
    """With recording off, the cluster goes on untraced once the last subscriber leaves: a page that
    reconnects from its last seq must start again from the state, not believe it missed nothing."""
    bus = TraceBus("demo", recording=False)
    first = bus.subscribe()
    bus.emit("component.state", component="scheduler", state="running")
    bus.emit("component.state", component="scheduler", state="leading")
    second = bus.subscribe()
    first.close()  # someone still watches: the trace goes on
    bus.emit("component.state", component="scheduler", state="running")
    assert [e["seq"] for e in bus.since(1)] == [2, 3]
    second.close()  # nobody watches: whatever happens now is not traced
    bus.emit("component.state", component="scheduler", state="stopped")
    assert bus.last_seq == 3, "an event was made while nobody watched"
    with pytest.raises(Untraced) as untraced:
        bus.subscribe(since=3)
    assert untraced.value.untraced_after == 3
    assert isinstance(untraced.value, TooOld)  # a page treats it as any gap it cannot fill
    assert bus.since(0) == bus.recorder.since(0), "since 0 (whatever is held) is not a catch-up"
    bus.subscribe()  # from now: the state a page starts from covers what went untraced


def test_a_recording_bus_never_goes_untraced() -> None:
    bus = TraceBus("demo")
    bus.subscribe().close()
    bus.emit("component.state", component="scheduler", state="running")
    assert bus.untraced_after is None
    assert [e["seq"] for e in bus.since(0)] == [1]


def test_recording_is_on_by_default() -> None:
    bus = TraceBus("demo")
    assert bus.enabled and bus.subscribers == 0
    bus.emit("store.compact", revision=1)
    assert len(bus.recorder) == 1


async def test_a_subscriber_waits_for_the_next_batch() -> None:
    bus = ticking()
    subscription = bus.subscribe()
    waiting = asyncio.create_task(subscription.next_batch())
    await asyncio.sleep(0)  # let it start waiting (a loop turn, not a timed sleep)
    assert not waiting.done()
    bus.emit("store.compact", revision=1)
    bus.emit("store.compact", revision=2)
    batch = await waiting
    assert batch is not None and [e["seq"] for e in batch.events] == [1, 2] and batch.missed is None
    subscription.close()


async def test_batches_can_be_limited_and_iteration_ends_with_the_bus() -> None:
    bus = ticking()
    subscription = bus.subscribe()
    for revision in range(5):
        bus.emit("store.compact", revision=revision)
    assert [e["seq"] for e in subscription.drain(2).events] == [1, 2]
    assert subscription.pending == 3
    bus.close()
    assert not bus.enabled
    batches = [batch async for batch in subscription]
    assert [[e["seq"] for e in b.events] for b in batches] == [[3, 4, 5]]
    assert await subscription.next_batch() is None


def test_a_subscriber_that_falls_behind_is_told_exactly_what_it_missed() -> None:
    bus = ticking()
    subscription = bus.subscribe(max_pending=2)
    for revision in range(5):
        bus.emit("store.compact", revision=revision)
    batch = subscription.drain()
    assert [e["seq"] for e in batch.events] == [1, 2]
    assert batch.missed == (3, 5) and batch.missed_count == 3 and batch.last_seq == 5
    # the missed events are in the recorder
    assert [e["seq"] for e in bus.recorder.range(*batch.missed)] == [3, 4, 5]
    bus.emit("store.compact", revision=9)
    after = subscription.drain()
    assert [e["seq"] for e in after.events] == [6] and after.missed is None
    assert subscription.missed_total == 3


def test_a_partial_drain_keeps_the_missed_range_for_the_end() -> None:
    bus = ticking()
    subscription = bus.subscribe(max_pending=2)
    for revision in range(4):
        bus.emit("store.compact", revision=revision)
    first = subscription.drain(1)
    assert [e["seq"] for e in first.events] == [1] and first.missed is None
    second = subscription.drain(1)
    assert [e["seq"] for e in second.events] == [2] and second.missed == (3, 4)


def test_room_freed_by_a_partial_drain_is_counted_as_event_by_event() -> None:
    bus = ticking()
    subscription = bus.subscribe(max_pending=3)
    for revision in range(2):
        bus.emit("store.compact", revision=revision)
    assert [e["seq"] for e in subscription.drain(1).events] == [1]
    for revision in range(3):  # seq 2 waits: room for 3 and 4, not 5
        bus.emit("store.compact", revision=revision)
    batch = subscription.drain()
    assert [e["seq"] for e in batch.events] == [2, 3, 4] and batch.missed == (5, 5)


def test_a_subscriber_that_never_drains_does_not_make_the_log_grow() -> None:
    bus = ticking()
    stuck = bus.subscribe(max_pending=100)
    live = bus.subscribe()
    taken: list[int] = []
    for revision in range(10_000):
        bus.emit("store.compact", revision=revision)
        if revision % 50 == 0:
            taken.extend(e["seq"] for e in live.drain().events)
    taken.extend(e["seq"] for e in live.drain().events)
    assert taken == list(range(1, 10_001)), "a subscriber that keeps up lost or repeated events"
    assert bus.logged <= 2 * LOG_TRIM, f"the shared log holds {bus.logged} events for a stuck subscriber"
    batch = stuck.drain()
    assert [e["seq"] for e in batch.events] == list(range(1, 101)) and batch.missed == (101, 10_000)
    assert stuck.missed_total == 9_900


async def test_one_burst_wakes_every_waiting_subscriber_once() -> None:
    bus = ticking()
    subscriptions = [bus.subscribe() for _ in range(3)]
    waiting = [asyncio.create_task(s.next_batch()) for s in subscriptions]
    await asyncio.sleep(0)  # every one is waiting now
    for revision in range(100):
        bus.emit("store.compact", revision=revision)
    for task in waiting:
        batch = await task
        assert batch is not None and [e["seq"] for e in batch.events] == list(range(1, 101))


async def test_a_waiter_that_is_cancelled_does_not_cancel_the_others() -> None:
    bus = ticking()
    gone, staying = bus.subscribe(), bus.subscribe()
    cancelled = asyncio.create_task(gone.wait())
    waiting = asyncio.create_task(staying.next_batch())
    await asyncio.sleep(0)
    cancelled.cancel()
    await asyncio.sleep(0)
    bus.emit("store.compact", revision=1)
    batch = await asyncio.wait_for(waiting, 5)
    assert batch is not None and [e["seq"] for e in batch.events] == [1]
    assert cancelled.cancelled()


async def test_closing_a_subscription_ends_its_waiter_after_what_waits() -> None:
    bus = ticking()
    subscription = bus.subscribe()
    bus.emit("store.compact", revision=1)
    subscription.close()
    bus.emit("store.compact", revision=2)  # after the close: not for it
    assert [[e["seq"] for e in b.events] async for b in subscription] == [[1]]


def test_a_reconnecting_subscriber_resyncs_from_the_recorder() -> None:
    bus = ticking()
    for revision in range(4):
        bus.emit("store.compact", revision=revision)
    subscription = bus.subscribe(since=2)
    bus.emit("store.compact", revision=9)
    assert [e["seq"] for e in subscription.drain().events] == [3, 4, 5]


def test_a_subscriber_too_far_behind_must_start_over() -> None:
    bus = TraceBus("demo", capacity=2)
    for revision in range(4):
        bus.emit("store.compact", revision=revision)
    with pytest.raises(TooOld):
        bus.subscribe(since=1)
    assert bus.subscribers == 0


def test_emit_never_raises(caplog: pytest.LogCaptureFixture) -> None:
    def broken() -> float:
        raise RuntimeError("clock gone")

    bus = TraceBus("demo", now=broken)
    bus.emit("store.compact", revision=1)
    assert len(bus.recorder) == 0
    assert "could not emit a store.compact event" in caplog.text


def test_schema_checking_collects_what_does_not_fit() -> None:
    bus = TraceBus("demo", check_schema=True)
    bus.emit("store.compact", revision=1)
    bus.emit("store.compact", revision="one", extra=1)
    assert bus.problems == [
        (
            2,
            "store.compact",
            ["store.compact.revision: expected integer, got str", "store.compact.extra: not in the schema"],
        )
    ]


def test_a_closed_bus_takes_no_subscribers() -> None:
    bus = TraceBus("demo")
    bus.close()
    with pytest.raises(RuntimeError):
        bus.subscribe()


def stamped(seqs: range) -> list[dict[str, object]]:
    """Events as another process's bus made them."""
    return [
        {"v": SCHEMA_VERSION, "cluster": "demo", "seq": s, "ts": 1000.0 + s, "type": "store.compact"}
        for s in seqs
    ]


async def test_a_mirror_keeps_the_seqs_of_the_bus_it_mirrors() -> None:
    mirror = TraceBus.mirror("demo", last_seq=40, capacity=100)
    assert mirror.last_seq == 40 and len(mirror.recorder) == 0
    subscription = mirror.subscribe()
    mirror.publish_remote(stamped(range(41, 44)))
    batch = await subscription.next_batch()
    assert batch is not None and [e["seq"] for e in batch.events] == [41, 42, 43]
    assert mirror.last_seq == 43 and mirror.recorder.first_seq == 41
    with pytest.raises(OutOfOrder):  # 44 was lost on the way: nothing of this is taken
        mirror.publish_remote(stamped(range(45, 47)))
    assert mirror.last_seq == 43 and subscription.pending == 0


def test_a_mirror_fills_in_what_came_before_it_joined() -> None:
    mirror = TraceBus.mirror("demo", last_seq=40, capacity=100)
    mirror.backfill(stamped(range(31, 41)))  # nothing live yet: history up to last_seq
    mirror.publish_remote(stamped(range(41, 43)))
    mirror.backfill(stamped(range(21, 36)))  # overlapping what it has: only 21..30 are new
    assert [e["seq"] for e in mirror.recorder.since(20)] == list(range(21, 43))
    with pytest.raises(OutOfOrder):
        TraceBus.mirror("demo", last_seq=40).backfill(stamped(range(31, 39)))  # 39 and 40 missing


def test_summaries_count_exactly() -> None:
    events = [
        {"type": "watch.event", "from": "apiserver", "to": f"kubelet:node-{i % 3}"} for i in range(7)
    ] + [{"type": "reconcile", "from": "controller-manager"}]
    assert summarise(events) == [
        {
            "type": "watch.event",
            "count": 7,
            "from": ["apiserver"],
            "to": ["kubelet:node-0", "kubelet:node-1", "kubelet:node-2"],
        },
        {"type": "reconcile", "count": 1, "from": ["controller-manager"], "to": []},
    ]
