"""Exponential backoff with jitter: waiting longer after each failure, and not all at the same time.

When something fails, trying again at once usually fails again, and a thousand clients that all try
again at once can keep a recovering server down. So clients wait, and double the wait after each
failure up to a cap (*exponential backoff*), and add a random part to the wait (*jitter*) so that
clients that failed together do not return together. After a quiet period the wait starts small again.

Two pieces, as in apimachinery ``pkg/util/wait``:

- ``Backoff`` (``wait.Backoff``): the arithmetic. ``step()`` returns the next wait: ``duration``,
  then ``duration * factor``, ... until ``cap``, each one stretched by up to ``jitter`` times itself
  (a jitter of 1.0 makes a wait of d anywhere in [d, 2d)).
- ``ExponentialBackoffManager`` (``wait.NewExponentialBackoffManager``): a ``Backoff`` that starts
  over once ``reset_after`` seconds passed since the last wait began, and sleeps on a clock.

A reflector uses ``reflector_backoff()``: 800 ms doubling to 30 s, jitter 1.0, reset after 2 minutes
(client-go ``tools/cache/reflector.go``). Randomness comes from a ``random.Random`` the caller may
seed, and time from the cluster clock, so a test replays the same waits.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Protocol

from controlplane.clock import SYSTEM_CLOCK, Clock


def jitter(duration: float, max_factor: float, rng: random.Random) -> float:
    """``duration`` stretched by a random part of up to ``max_factor`` times itself (``wait.Jitter``)."""
    if max_factor <= 0.0:
        max_factor = 1.0
    return duration + rng.random() * max_factor * duration


@dataclass
class Backoff:
    """The waits of an exponential backoff (``wait.Backoff``); ``step`` consumes one."""

    #: The first wait, in seconds.
    duration: float
    #: Each wait is the previous one times this (1.0 or 0: constant).
    factor: float = 1.0
    #: Up to this fraction of a wait is added at random (0: none).
    jitter: float = 0.0
    #: Waits that still grow; after that they stay at the last duration.
    steps: int = 2**31 - 1
    #: No wait (before jitter) exceeds this; 0 for no cap.
    cap: float = 0.0
    rng: random.Random = field(default_factory=random.Random)

    def step(self) -> float:
        if self.steps < 1:
            return jitter(self.duration, self.jitter, self.rng) if self.jitter > 0 else self.duration
        self.steps -= 1
        duration = self.duration
        if self.factor != 0:
            self.duration = self.duration * self.factor
            if self.cap > 0 and self.duration > self.cap:
                self.duration = self.cap
                self.steps = 0
        if self.jitter > 0:
            duration = jitter(duration, self.jitter, self.rng)
        return duration


class BackoffManager(Protocol):
    """Something that decides and sleeps the next wait (``wait.BackoffManager``)."""

    def next(self) -> float: ...

    async def backoff(self) -> None: ...


class ExponentialBackoffManager:
    """Exponential backoff that starts over after ``reset_after`` quiet seconds."""

    def __init__(
        self,
        initial: float,
        max_backoff: float,
        reset_after: float,
        factor: float,
        jitter: float,
        *,
        clock: Clock = SYSTEM_CLOCK,
        rng: random.Random | None = None,
    ) -> None:
        self.initial = initial
        self.max_backoff = max_backoff
        self.reset_after = reset_after
        self.factor = factor
        self.jitter = jitter
        self.clock = clock
        self.rng = rng if rng is not None else random.Random()
        self._backoff = self._fresh()
        self._last_start = clock.now()

    def _fresh(self) -> Backoff:
        return Backoff(self.initial, self.factor, self.jitter, cap=self.max_backoff, rng=self.rng)

    def next(self) -> float:
        """The next wait in seconds (``getNextBackoff``); starts over after a quiet period."""
        now = self.clock.now()
        if now - self._last_start > self.reset_after:
            self._backoff = self._fresh()
        self._last_start = now
        return self._backoff.step()

    async def backoff(self) -> None:
        """Sleep the next wait on the clock."""
        await self.clock.sleep(self.next())


#: client-go's reflector backoff: 800 ms, doubling, up to 30 s, reset after 2 min, jitter 1.0.
REFLECTOR_INITIAL_BACKOFF = 0.8
REFLECTOR_MAX_BACKOFF = 30.0
REFLECTOR_BACKOFF_RESET = 120.0


def reflector_backoff(
    *, clock: Clock = SYSTEM_CLOCK, rng: random.Random | None = None
) -> ExponentialBackoffManager:
    return ExponentialBackoffManager(
        REFLECTOR_INITIAL_BACKOFF,
        REFLECTOR_MAX_BACKOFF,
        REFLECTOR_BACKOFF_RESET,
        2.0,
        1.0,
        clock=clock,
        rng=rng,
    )


__all__ = [
    "REFLECTOR_BACKOFF_RESET",
    "REFLECTOR_INITIAL_BACKOFF",
    "REFLECTOR_MAX_BACKOFF",
    "Backoff",
    "BackoffManager",
    "ExponentialBackoffManager",
    "jitter",
    "reflector_backoff",
]
