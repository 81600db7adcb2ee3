"""Rate limiters for the workqueue: how long to wait before an item is tried again.

A controller that fails to reconcile something puts its key back on the queue. Putting it back at
once would make a hot loop: the same failing request, thousands of times a second, against an API
server that is perhaps failing *because* it is overloaded. client-go's ``util/workqueue`` answers
with rate limiters, and this module has the same ones under the same names.

A rate limiter answers one question, ``when(item)``: *how many seconds from now may this item be
added again?* Asking counts as a failure of the item (the limiter remembers it), ``forget(item)``
clears that memory once the item succeeded, and ``num_requeues(item)`` says how often it was asked.

- ``ItemExponentialFailureRateLimiter`` (per item): ``base * 2**failures``, capped at ``max_delay``.
  The defaults 5 ms and 1000 s give 5 ms, 10 ms, 20 ms, ... 1000 s after 18 failures.
- ``ItemFastSlowRateLimiter`` (per item): ``fast_delay`` for the first ``max_fast_attempts``
  failures, then ``slow_delay``.
- ``BucketRateLimiter`` (overall, whatever the item): a token bucket of ``burst`` tokens refilled
  at ``qps`` tokens per second. Each ``when`` *reserves* the next token, as Go's
  ``golang.org/x/time/rate`` ``Limiter.Reserve`` does: while tokens are left the delay is 0, after
  that the n-th token past the burst is ready ``n / qps`` seconds from now. It protects the API
  server from a controller whose every item fails at once.
- ``MaxOfRateLimiter``: asks all of its limiters and waits for the slowest.
- ``default_controller_rate_limiter()``: what every client-go controller uses, the maximum of a
  per-item exponential backoff (5 ms to 1000 s) and an overall bucket of 10 qps with a burst of 100.

Everything here is pure: the only input besides the item is the time, read from the cluster
``Clock``, so a test with a ``ManualClock`` gets exact delays. Nothing here sleeps; the
``RateLimitingQueue`` (``workqueue.py``) does the waiting.

Upstream: client-go ``util/workqueue/default_rate_limiters.go``.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Protocol

from controlplane.client.tokenbucket import TokenBucketRateLimiter
from controlplane.clock import SYSTEM_CLOCK, Clock


class WorkqueueRateLimiter(Protocol):
    """client-go's ``workqueue.RateLimiter``."""

    def when(self, item: Hashable) -> float:
        """Seconds to wait before ``item`` may be added again; counts as one more failure of it."""
        ...

    def forget(self, item: Hashable) -> None:
        """Stop tracking ``item`` (it succeeded, or was given up): its next failure starts afresh."""
        ...

    def num_requeues(self, item: Hashable) -> int:
        """How many failures of ``item`` are being tracked."""
        ...


class ItemExponentialFailureRateLimiter:
    """``base_delay * 2**failures`` per item, never more than ``max_delay``."""

    def __init__(self, base_delay: float = 0.005, max_delay: float = 1000.0) -> None:
        if base_delay < 0 or max_delay < 0:
            raise ValueError("rate limiter delays must not be negative")
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._failures: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        exponent = self._failures.get(item, 0)
        self._failures[item] = exponent + 1
        # 2.0**exponent overflows a float past 1023; long before that the cap applies anyway.
        if exponent >= 1000:
            return self.max_delay
        return min(self.base_delay * 2.0**exponent, self.max_delay)

    def forget(self, item: Hashable) -> None:
        self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        return self._failures.get(item, 0)


class ItemFastSlowRateLimiter:
    """``fast_delay`` for an item's first ``max_fast_attempts`` failures, ``slow_delay`` after that."""

    def __init__(self, fast_delay: float, slow_delay: float, max_fast_attempts: int) -> None:
        self.fast_delay = fast_delay
        self.slow_delay = slow_delay
        self.max_fast_attempts = max_fast_attempts
        self._failures: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        failures = self._failures.get(item, 0) + 1
        self._failures[item] = failures
        return self.fast_delay if failures <= self.max_fast_attempts else self.slow_delay

    def forget(self, item: Hashable) -> None:
        self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        return self._failures.get(item, 0)


class BucketRateLimiter:
    """One token bucket for all items (``qps`` refill, ``burst`` size): an overall retry budget.

    The bucket is the REST client's (``tokenbucket.TokenBucketRateLimiter``), used by reservation.
    """

    def __init__(self, qps: float = 10.0, burst: int = 100, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self.bucket = TokenBucketRateLimiter(qps, burst, clock=clock)

    def when(self, item: Hashable) -> float:
        return self.bucket.reserve()

    def forget(self, item: Hashable) -> None:
        return None

    def num_requeues(self, item: Hashable) -> int:
        return 0


class MaxOfRateLimiter:
    """Asks every limiter (each counts the failure) and answers the longest delay."""

    def __init__(self, *limiters: WorkqueueRateLimiter) -> None:
        if not limiters:
            raise ValueError("MaxOfRateLimiter needs at least one limiter")
        self.limiters = limiters

    def when(self, item: Hashable) -> float:
        return max([limiter.when(item) for limiter in self.limiters])

    def forget(self, item: Hashable) -> None:
        for limiter in self.limiters:
            limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return max(limiter.num_requeues(item) for limiter in self.limiters)


def default_controller_rate_limiter(*, clock: Clock = SYSTEM_CLOCK) -> MaxOfRateLimiter:
    """client-go's ``DefaultControllerRateLimiter``: max(5 ms x 2^n up to 1000 s, 10 qps / 100 burst)."""
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(0.005, 1000.0),
        BucketRateLimiter(qps=10.0, burst=100, clock=clock),
    )


__all__ = [
    "BucketRateLimiter",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "WorkqueueRateLimiter",
    "default_controller_rate_limiter",
]
