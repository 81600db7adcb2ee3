"""Exponential backoff with jitter (apimachinery wait.Backoff), seeded and on a manual clock."""

from __future__ import annotations

import random

import pytest

from controlplane.client.backoff import Backoff, ExponentialBackoffManager, jitter, reflector_backoff
from controlplane.clock import ManualClock


def test_without_jitter_the_waits_double_up_to_the_cap_and_stay_there() -> None:
    backoff = Backoff(0.8, factor=2.0, cap=30.0)
    assert [backoff.step() for _ in range(8)] == pytest.approx([0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0])


def test_jitter_stretches_each_wait_by_up_to_its_factor() -> None:
    rng = random.Random(7)
    waits = [jitter(1.0, 1.0, rng) for _ in range(1000)]
    assert all(1.0 <= w < 2.0 for w in waits)
    assert jitter(1.0, 0.0, random.Random(7)) == jitter(1.0, 1.0, random.Random(7))  # 0 means 1.0


def test_a_seeded_backoff_replays_the_same_waits() -> None:
    def waits(seed: int) -> list[float]:
        manager = reflector_backoff(clock=ManualClock(), rng=random.Random(seed))
        return [manager.next() for _ in range(10)]

    assert waits(3) == waits(3)
    assert waits(3) != waits(4)
    for base, wait in zip([0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30, 30, 30, 30], waits(3), strict=True):
        assert base <= wait < 2 * base


def test_the_backoff_starts_over_after_a_quiet_period() -> None:
    clock = ManualClock()
    manager = ExponentialBackoffManager(1.0, 30.0, 120.0, 2.0, 0.0, clock=clock)
    assert [manager.next() for _ in range(3)] == [1.0, 2.0, 4.0]
    clock._now += 119  # not quiet long enough
    assert manager.next() == 8.0
    clock._now += 121
    assert manager.next() == 1.0


async def test_backoff_sleeps_on_the_clock() -> None:
    slept: list[float] = []

    class Clock:
        def now(self) -> float:
            return 0.0

        async def sleep(self, seconds: float) -> None:
            slept.append(seconds)

    manager = ExponentialBackoffManager(0.5, 10.0, 60.0, 2.0, 0.0, clock=Clock())
    await manager.backoff()
    await manager.backoff()
    assert slept == [0.5, 1.0]
