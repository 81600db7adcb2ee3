"""Client-side rate limiting: a token bucket in front of every request a client sends.

An API server serves everyone, so every client-go client holds back on its own: ``rest.Config``'s
``QPS`` (5) and ``Burst`` (10) mean a client may send 10 requests at once, and after that 5 a second,
however much work it has. A controller that wakes up to 1000 changed objects therefore takes a few
minutes to write them all, and the API server stays responsive for everyone else. (The scheduler is
trusted with more: 50/100.)

The mechanism is a **token bucket** (client-go ``util/flowcontrol.NewTokenBucketRateLimiter``, which
wraps ``golang.org/x/time/rate``): the bucket holds at most ``burst`` tokens and refills at ``qps``
tokens a second; a request takes one token, and waits when there is none. Waiting is done by
*reservation*: a caller takes the next token even if it is not there yet (the count goes negative)
and sleeps until it will have been refilled. So callers are served in the order they asked, and none
can starve.

Time comes from the cluster clock, so a test drives the bucket with a ``ManualClock`` and a cluster
running faster than real time also throttles faster.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from controlplane.client.config import DEFAULT_BURST, DEFAULT_QPS
from controlplane.clock import SYSTEM_CLOCK, Clock


class TokenBucket(Protocol):
    """client-go's ``flowcontrol.RateLimiter``: what the REST client asks before each request."""

    def try_accept(self) -> bool:
        """Take a token if one is there now; never waits."""
        ...

    async def accept(self) -> None:
        """Take a token, waiting until one is available."""
        ...


class TokenBucketRateLimiter:
    """``qps`` requests a second on average, with bursts of up to ``burst``; the bucket starts full."""

    # Slots: an event recorder keeps one bucket per object it reports on (``record.py``).
    __slots__ = ("_last", "_tokens", "burst", "clock", "qps")

    def __init__(self, qps: float, burst: int, *, clock: Clock = SYSTEM_CLOCK) -> None:
        if qps <= 0:
            raise ValueError(f"qps must be positive, got {qps}")
        if burst < 1:
            raise ValueError(f"burst must be at least 1, got {burst}")
        self.qps = float(qps)
        self.burst = burst
        self.clock = clock
        self._tokens = float(burst)
        self._last = clock.now()

    def _refill(self) -> None:
        now = self.clock.now()
        elapsed = max(0.0, now - self._last)
        self._last = max(self._last, now)
        self._tokens = min(float(self.burst), self._tokens + elapsed * self.qps)

    @property
    def tokens(self) -> float:
        """Tokens in the bucket now (negative while callers wait for reserved ones)."""
        self._refill()
        return self._tokens

    def try_accept(self) -> bool:
        self._refill()
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False

    def reserve(self) -> float:
        """Take the next token, present or future; the seconds until it is there (0: now)."""
        self._refill()
        self._tokens -= 1.0
        if self._tokens >= 0.0:
            return 0.0
        return -self._tokens / self.qps

    async def accept(self) -> None:
        delay = self.reserve()
        if delay <= 0:
            return
        try:
            await self.clock.sleep(delay)
        except asyncio.CancelledError:
            # The caller will not use its token: give it back for the next one.
            self._tokens = min(float(self.burst), self._tokens + 1.0)
            raise

    #: client-go's ``Wait(ctx)``: the same as ``accept`` (cancellation is the context).
    wait = accept


def for_config(qps: float, burst: int, *, clock: Clock = SYSTEM_CLOCK) -> TokenBucketRateLimiter | None:
    """The limiter for a ``rest.Config``'s QPS and burst: qps 0 means 5/10, a negative qps means none."""
    if qps < 0:
        return None
    return TokenBucketRateLimiter(qps or DEFAULT_QPS, burst or DEFAULT_BURST, clock=clock)


__all__ = ["TokenBucket", "TokenBucketRateLimiter", "for_config"]
