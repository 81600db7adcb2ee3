"""The workqueue keeps client-go's promises (queue_test.go, delaying_queue_test.go, in Python)."""

from __future__ import annotations

import asyncio
import random

import pytest

from controlplane.client.workqueue import DelayingQueue, Queue, QueueShutDown, RateLimitingQueue
from controlplane.client.workqueue_ratelimiters import ItemExponentialFailureRateLimiter
from controlplane.clock import ManualClock


async def turns(n: int = 5) -> None:
    """Let other tasks run up to their next await ``n`` times (no time passes)."""
    for _ in range(n):
        await asyncio.sleep(0)


# -- Queue -------------------------------------------------------------------------------------


async def test_items_come_out_in_the_order_they_went_in() -> None:
    queue: Queue[str] = Queue("fifo")
    for key in ("a", "b", "c"):
        queue.add(key)
    assert len(queue) == 3
    assert [await queue.get() for _ in range(3)] == ["a", "b", "c"]
    assert len(queue) == 0


async def test_adding_a_pending_item_again_does_nothing() -> None:
    queue: Queue[str] = Queue()
    queue.add("a")
    queue.add("b")
    queue.add("a")
    assert len(queue) == 2
    assert await queue.get() == "a"
    assert await queue.get() == "b"
    assert queue.metrics.adds_total == 2


async def test_an_item_added_while_processing_is_queued_again_by_done_not_before() -> None:
    queue: Queue[str] = Queue()
    queue.add("a")
    item = await queue.get()
    queue.add("a")  # changed again while a worker holds it
    assert len(queue) == 0, "a second worker must not get an item that is being processed"
    assert queue.find("a")
    queue.add("b")
    assert await queue.get() == "b"  # the second worker gets other work
    queue.add("a")  # and a third change folds into the pending one
    queue.done(item)
    assert len(queue) == 1
    assert await queue.get() == "a"
    queue.done("a")
    queue.done("b")
    assert not queue.find("a")
    assert len(queue) == 0


async def test_a_waiting_worker_wakes_when_an_item_is_added() -> None:
    queue: Queue[str] = Queue()
    getter = asyncio.create_task(queue.get())
    await turns()
    assert not getter.done()
    queue.add("x")
    assert await asyncio.wait_for(getter, 1) == "x"


async def test_no_item_is_ever_processed_by_two_workers_at_once() -> None:
    queue: Queue[int] = Queue()
    rng = random.Random(7)
    in_flight: set[int] = set()
    overlaps: list[int] = []
    processed: list[int] = []

    async def worker() -> None:
        while True:
            try:
                item = await queue.get()
            except QueueShutDown:
                return
            if item in in_flight:
                overlaps.append(item)
            in_flight.add(item)
            for _ in range(rng.randrange(3)):
                await asyncio.sleep(0)
            in_flight.discard(item)
            processed.append(item)
            queue.done(item)

    workers = [asyncio.create_task(worker()) for _ in range(4)]
    for _ in range(300):
        queue.add(rng.randrange(5))
        await asyncio.sleep(0)
    await queue.shut_down_with_drain()
    await asyncio.wait_for(asyncio.gather(*workers), 5)
    assert overlaps == []
    assert len(processed) > 5
    assert set(processed) == set(range(5))


async def test_shut_down_hands_out_what_is_queued_then_ends_workers() -> None:
    queue: Queue[str] = Queue()
    queue.add("a")
    waiting = asyncio.create_task(queue.get())
    idle = asyncio.create_task(queue.get())
    assert await waiting == "a"
    await turns()
    queue.shut_down()
    with pytest.raises(QueueShutDown):
        await asyncio.wait_for(idle, 1)
    queue.add("b")  # ignored once shutting down
    assert len(queue) == 0
    assert queue.shutting_down
    with pytest.raises(QueueShutDown):
        await queue.get()


async def test_items_queued_before_shut_down_are_still_handed_out() -> None:
    queue: Queue[str] = Queue()
    queue.add("a")
    queue.add("b")
    queue.shut_down()
    assert await queue.get() == "a"
    assert await queue.get() == "b"
    with pytest.raises(QueueShutDown):
        await queue.get()


async def test_shut_down_with_drain_waits_for_the_items_being_processed() -> None:
    queue: Queue[str] = Queue()
    queue.add("a")
    queue.add("b")
    first, second = await queue.get(), await queue.get()
    drain = asyncio.create_task(queue.shut_down_with_drain())
    await turns()
    assert not drain.done()
    queue.done(first)
    await turns()
    assert not drain.done(), "one item is still being processed"
    queue.done(second)
    await asyncio.wait_for(drain, 1)
    with pytest.raises(QueueShutDown):
        await queue.get()


async def test_shut_down_ends_a_drain_early() -> None:
    queue: Queue[str] = Queue()
    queue.add("a")
    await queue.get()
    drain = asyncio.create_task(queue.shut_down_with_drain())
    await turns()
    assert not drain.done()
    queue.shut_down()
    await asyncio.wait_for(drain, 1)


async def test_shut_down_with_drain_returns_at_once_when_idle() -> None:
    queue: Queue[str] = Queue()
    await asyncio.wait_for(queue.shut_down_with_drain(), 1)
    assert queue.shutting_down


async def test_a_cancelled_getter_does_not_swallow_the_wake_up() -> None:
    queue: Queue[str] = Queue()
    first = asyncio.create_task(queue.get())
    second = asyncio.create_task(queue.get())
    await turns()
    queue.add("x")  # wakes the first getter ...
    first.cancel()  # ... which is cancelled before it can take the item
    assert await asyncio.wait_for(second, 1) == "x"
    with pytest.raises(asyncio.CancelledError):
        await first


async def test_metrics_count_adds_depth_and_durations_on_the_cluster_clock() -> None:
    clock = ManualClock(start=0.0)
    queue: Queue[str] = Queue("metered", clock=clock)
    queue.add("a")
    queue.add("a")
    queue.add("b")
    assert (queue.metrics.adds_total, queue.metrics.depth) == (2, 2)
    await clock.advance(3)
    item = await queue.get()
    assert queue.metrics.depth == 1
    assert queue.metrics.queue_duration_seconds_sum == 3
    assert queue.metrics.queue_duration_seconds_count == 1
    await clock.advance(2)
    assert queue.metrics.unfinished_work_seconds(clock.now()) == 2
    assert queue.metrics.longest_running_processor_seconds(clock.now()) == 2
    queue.done(item)
    assert queue.metrics.work_duration_seconds_sum == 2
    assert queue.metrics.work_duration_seconds_count == 1
    assert queue.metrics.longest_running_processor_seconds(clock.now()) == 0


# -- DelayingQueue -----------------------------------------------------------------------------


async def test_add_after_adds_when_the_cluster_clock_says_so() -> None:
    clock = ManualClock(start=0.0)
    queue: DelayingQueue[str] = DelayingQueue("delayed", clock=clock)
    try:
        queue.add_after("a", 5)
        await turns()
        assert len(queue) == 0
        assert queue.waiting() == 1
        await clock.advance(4.9)
        assert len(queue) == 0
        await clock.advance(0.1)
        assert len(queue) == 1
        assert queue.waiting() == 0
        assert await queue.get() == "a"
        assert queue.metrics.retries_total == 1
    finally:
        queue.shut_down()


async def test_add_after_without_delay_adds_at_once() -> None:
    queue: DelayingQueue[str] = DelayingQueue(clock=ManualClock(start=0.0))
    queue.add_after("a", 0)
    queue.add_after("b", -1)
    assert len(queue) == 2
    queue.shut_down()


async def test_an_item_waiting_twice_keeps_the_earlier_time() -> None:
    clock = ManualClock(start=0.0)
    queue: DelayingQueue[str] = DelayingQueue(clock=clock)
    try:
        queue.add_after("a", 10)
        await turns()
        queue.add_after("a", 3)  # earlier: wins, and wakes the waiting loop
        queue.add_after("a", 7)  # later: ignored
        await clock.advance(3)
        assert len(queue) == 1
        assert await queue.get() == "a"
        queue.done("a")
        await clock.advance(10)
        assert len(queue) == 0, "the superseded 10 s entry must not add the item again"
        assert queue.metrics.adds_total == 1
    finally:
        queue.shut_down()


async def test_delayed_items_are_added_in_time_order() -> None:
    clock = ManualClock(start=0.0)
    queue: DelayingQueue[str] = DelayingQueue(clock=clock)
    try:
        queue.add_after("late", 3)
        queue.add_after("early", 1)
        queue.add_after("middle", 2)
        await clock.advance(1.5)
        assert len(queue) == 1
        await clock.advance(2)
        assert [await queue.get() for _ in range(3)] == ["early", "middle", "late"]
    finally:
        queue.shut_down()


async def test_shut_down_stops_the_waiting_loop_and_drops_waiting_items() -> None:
    clock = ManualClock(start=0.0)
    queue: DelayingQueue[str] = DelayingQueue(clock=clock)
    queue.add_after("a", 1)
    await turns()
    queue.shut_down()
    await clock.advance(5)
    assert len(queue) == 0
    queue.add_after("b", 1)  # ignored
    assert queue.waiting() == 1


# -- RateLimitingQueue -------------------------------------------------------------------------


async def test_add_rate_limited_backs_off_exponentially_until_forget() -> None:
    clock = ManualClock(start=0.0)
    queue: RateLimitingQueue[str] = RateLimitingQueue(
        ItemExponentialFailureRateLimiter(1.0, 100.0), "limited", clock=clock
    )
    try:
        for expected_delay in (1.0, 2.0, 4.0):
            queue.add_rate_limited("a")
            await clock.advance(expected_delay - 0.5)
            assert len(queue) == 0
            await clock.advance(0.5)
            assert len(queue) == 1
            queue.done(await queue.get())
        assert queue.num_requeues("a") == 3
        queue.forget("a")
        assert queue.num_requeues("a") == 0
        queue.add_rate_limited("a")
        await clock.advance(1.0)
        assert len(queue) == 1
    finally:
        queue.shut_down()


async def test_the_default_rate_limiter_starts_at_five_milliseconds() -> None:
    clock = ManualClock(start=0.0)
    queue: RateLimitingQueue[str] = RateLimitingQueue(clock=clock)
    try:
        queue.add_rate_limited("a")
        await clock.advance(0.004)
        assert len(queue) == 0
        await clock.advance(0.001)
        assert len(queue) == 1
    finally:
        queue.shut_down()
