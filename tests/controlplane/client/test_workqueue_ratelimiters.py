"""Rate limiters give client-go's exact delays (default_rate_limiters_test.go, in Python)."""

from __future__ import annotations

import pytest

from controlplane.client.workqueue_ratelimiters import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    default_controller_rate_limiter,
)
from controlplane.clock import ManualClock


def test_exponential_doubles_per_failure_of_each_item_and_forget_starts_over() -> None:
    limiter = ItemExponentialFailureRateLimiter(0.001, 1.0)
    assert [limiter.when("one") for _ in range(5)] == pytest.approx([0.001, 0.002, 0.004, 0.008, 0.016])
    assert limiter.num_requeues("one") == 5
    # Another item has its own count.
    assert limiter.when("two") == pytest.approx(0.001)
    assert limiter.num_requeues("two") == 1
    limiter.forget("one")
    assert limiter.num_requeues("one") == 0
    assert limiter.when("one") == pytest.approx(0.001)


def test_exponential_is_capped_and_never_overflows() -> None:
    limiter = ItemExponentialFailureRateLimiter(1.0, 5.0)
    assert [limiter.when("x") for _ in range(5)] == [1.0, 2.0, 4.0, 5.0, 5.0]
    for _ in range(2000):
        delay = limiter.when("x")
    assert delay == 5.0
    assert limiter.num_requeues("x") == 2005


def test_exponential_defaults_are_client_gos() -> None:
    limiter = ItemExponentialFailureRateLimiter()
    delays = [limiter.when("k") for _ in range(20)]
    assert delays[0] == pytest.approx(0.005)
    assert delays[17] == pytest.approx(0.005 * 2**17)  # 655.36 s
    assert delays[18] == 1000.0  # 0.005 * 2**18 = 1310.72 s, capped


def test_fast_slow_switches_after_the_fast_attempts() -> None:
    limiter = ItemFastSlowRateLimiter(0.005, 10.0, 3)
    assert [limiter.when("a") for _ in range(5)] == [0.005, 0.005, 0.005, 10.0, 10.0]
    assert limiter.num_requeues("a") == 5
    assert limiter.when("b") == 0.005
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
    assert limiter.when("a") == 0.005


async def test_bucket_gives_the_burst_free_then_one_token_per_qps() -> None:
    clock = ManualClock()
    limiter = BucketRateLimiter(qps=10, burst=100, clock=clock)
    assert [limiter.when(i) for i in range(100)] == [0.0] * 100
    # The 101st token is 1/10 s away, the 102nd 2/10 s: reservations go into debt.
    assert limiter.when("101") == pytest.approx(0.1)
    assert limiter.when("102") == pytest.approx(0.2)
    # One second later ten tokens flowed in: the debt of two is paid, eight are free.
    await clock.advance(1.0)
    assert [limiter.when(i) for i in range(8)] == [0.0] * 8
    assert limiter.when("next") == pytest.approx(0.1)
    # The bucket tracks no items.
    assert limiter.num_requeues("next") == 0


async def test_bucket_refills_only_up_to_its_burst() -> None:
    clock = ManualClock()
    limiter = BucketRateLimiter(qps=1, burst=3, clock=clock)
    assert [limiter.when(i) for i in range(3)] == [0.0, 0.0, 0.0]
    await clock.advance(3600)
    assert [limiter.when(i) for i in range(4)] == pytest.approx([0.0, 0.0, 0.0, 1.0])


def test_max_of_answers_the_slowest_and_forgets_everywhere() -> None:
    limiter = MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(0.001, 1.0), ItemFastSlowRateLimiter(0.003, 10.0, 3)
    )
    assert [limiter.when("a") for _ in range(5)] == pytest.approx([0.003, 0.003, 0.004, 10.0, 10.0])
    assert limiter.num_requeues("a") == 5
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
    assert limiter.when("a") == pytest.approx(0.003)


async def test_default_controller_rate_limiter_is_max_of_backoff_and_bucket() -> None:
    clock = ManualClock()
    limiter = default_controller_rate_limiter(clock=clock)
    # Per item: 5 ms, 10 ms, 20 ms (the bucket still has tokens).
    assert [limiter.when("a") for _ in range(3)] == pytest.approx([0.005, 0.01, 0.02])
    # 97 more failures of other items use up the burst of 100 ...
    for i in range(97):
        limiter.when(f"other-{i}")
    # ... so a fresh item now waits for the bucket (0.1 s), not its own 5 ms.
    assert limiter.when("fresh") == pytest.approx(0.1)
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
