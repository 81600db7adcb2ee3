"""Timing helpers: rates over a fixed duration, and rounds that alternate contenders.

Throughput is measured for a fixed wall-clock duration (not a fixed count), so a slow contender does
not stretch the run. When a figure is a ratio against a baseline measured in the same run, the two
are measured in alternating rounds (baseline, contender, baseline, contender, ...) and the best
round of each is kept: disk and scheduler noise then hits both alike, and "best of" discards rounds
that a neighbour's I/O slowed down.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Rate:
    """``count`` operations in ``seconds``."""

    count: int
    seconds: float

    @property
    def per_second(self) -> float:
        return self.count / self.seconds if self.seconds > 0 else 0.0


class Deadline:
    """A point ``seconds`` from now on the monotonic clock."""

    def __init__(self, seconds: float) -> None:
        self.start = time.perf_counter()
        self.end = self.start + seconds

    def expired(self) -> bool:
        return time.perf_counter() >= self.end

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def remaining(self) -> float:
        return max(0.0, self.end - time.perf_counter())


def rate_for(seconds: float, step: Callable[[], object]) -> Rate:
    """Call ``step()`` back to back for ``seconds``; how many calls completed, and in what time."""
    deadline = Deadline(seconds)
    count = 0
    while not deadline.expired():
        step()
        count += 1
    return Rate(count, deadline.elapsed())


async def async_rate_for(seconds: float, step: Callable[[], Awaitable[object]]) -> Rate:
    """``rate_for`` for a coroutine function: ``await step()`` back to back for ``seconds``."""
    deadline = Deadline(seconds)
    count = 0
    while not deadline.expired():
        await step()
        count += 1
    return Rate(count, deadline.elapsed())


Measurement = Callable[[], float] | Callable[[], Awaitable[float]]


@dataclass(slots=True)
class Rounds:
    """The samples of each contender, in the order they were run."""

    names: tuple[str, ...]
    samples: dict[str, list[float]] = field(default_factory=dict)

    def best(self, name: str) -> float:
        """The highest sample of ``name`` (for rates: the round least disturbed by noise)."""
        return max(self.samples[name])

    def lowest(self, name: str) -> float:
        """The lowest sample of ``name`` (for latencies and durations)."""
        return min(self.samples[name])


async def alternate(rounds: int, contenders: Sequence[tuple[str, Measurement]]) -> Rounds:
    """Run every contender once per round, in turn, ``rounds`` times; each returns one sample.

    Contenders may be plain or coroutine functions.
    """
    result = Rounds(tuple(name for name, _ in contenders), {name: [] for name, _ in contenders})
    for _ in range(rounds):
        for name, measure in contenders:
            sample = measure()
            if inspect.isawaitable(sample):
                sample = await sample
            assert isinstance(sample, (int, float))
            result.samples[name].append(float(sample))
    return result
