"""The client's token bucket (client-go flowcontrol.NewTokenBucketRateLimiter), on a manual clock."""

from __future__ import annotations

import asyncio

import pytest

from controlplane.client.tokenbucket import TokenBucketRateLimiter, for_config
from controlplane.clock import ManualClock


def test_a_full_bucket_allows_a_burst_then_refills_at_qps() -> None:
    clock = ManualClock()
    bucket = TokenBucketRateLimiter(qps=2.0, burst=3, clock=clock)
    assert [bucket.try_accept() for _ in range(4)] == [True, True, True, False]
    clock._now += 0.4  # 0.8 of a token: not yet
    assert not bucket.try_accept()
    clock._now += 0.1
    assert bucket.try_accept()
    clock._now += 100  # refilling stops at the burst
    assert bucket.tokens == 3.0


def test_reservations_queue_up_in_order() -> None:
    clock = ManualClock()
    bucket = TokenBucketRateLimiter(qps=5.0, burst=1, clock=clock)
    assert [bucket.reserve() for _ in range(4)] == pytest.approx([0.0, 0.2, 0.4, 0.6])


async def test_accept_waits_on_the_clock_until_its_token_is_there() -> None:
    clock = ManualClock()
    bucket = TokenBucketRateLimiter(qps=1.0, burst=1, clock=clock)
    await bucket.accept()
    waiting = asyncio.create_task(bucket.accept())
    await clock.advance(0.9)
    assert not waiting.done()
    await clock.advance(0.1)
    assert waiting.done()
    await waiting


async def test_a_cancelled_wait_gives_its_token_back() -> None:
    clock = ManualClock()
    bucket = TokenBucketRateLimiter(qps=1.0, burst=1, clock=clock)
    await bucket.accept()
    waiting = asyncio.create_task(bucket.accept())
    await asyncio.sleep(0)
    assert bucket.tokens == -1.0
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert bucket.tokens == 0.0


def test_config_values_as_client_go_reads_them() -> None:
    default = for_config(0, 0)
    assert default is not None and (default.qps, default.burst) == (5.0, 10)
    assert for_config(-1, 10) is None
    scheduler = for_config(50, 100)
    assert scheduler is not None and (scheduler.qps, scheduler.burst) == (50.0, 100)
