"""The cluster clock: ``timeout`` is ``asyncio.timeout`` in cluster time."""

from __future__ import annotations

import asyncio

import pytest

from controlplane.clock import Clock, ManualClock, ScaledClock, timeout


async def waiting_in_timeout(clock: Clock, seconds: float) -> asyncio.Task[None]:
    """A task blocked for good inside ``timeout(clock, seconds)``, once it is in there."""
    entered = asyncio.Event()

    async def waits() -> None:
        async with timeout(clock, seconds):
            entered.set()
            await asyncio.Event().wait()

    task = asyncio.create_task(waits())
    await entered.wait()
    return task


async def test_a_block_still_running_when_its_cluster_time_is_up_is_cancelled_with_timeout_error() -> None:
    clock = ManualClock()
    task = await waiting_in_timeout(clock, 5)
    await clock.advance(4.9)
    assert not task.done(), "the wall clock does not count, only the cluster's"
    await clock.advance(0.1)
    with pytest.raises(TimeoutError):
        await task


async def test_a_block_that_ends_in_time_is_left_alone() -> None:
    clock = ManualClock()
    async with timeout(clock, 5):
        await asyncio.sleep(0)
    await clock.advance(10)  # the timer is gone: nothing is cancelled later
    await asyncio.sleep(0)


async def test_a_cancellation_from_outside_stays_a_cancellation() -> None:
    task = await waiting_in_timeout(ManualClock(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_scaled_clock_times_out_sooner_in_wall_time() -> None:
    clock = ScaledClock(1000.0)  # 10 s of cluster time pass in 10 ms
    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(TimeoutError):
        async with timeout(clock, 10):
            await asyncio.Event().wait()
    assert loop.time() - started < 5
