"""The cluster clock: where every component of a cluster reads the time.

Kubernetes is full of timers (a Lease lasts 40 s, a node is judged unreachable after 50 s, a pod is
evicted 300 s later). To watch them happen in a lesson, a cluster's time can run faster than the wall
clock: a ``ScaledClock`` with ``scale=10`` makes 40 simulated seconds pass in 4 real ones. Everything
that waits or stamps a time asks the cluster's clock, never ``time`` directly, so the whole cluster
speeds up together and the ratios between its timers stay the ones upstream uses.

``ManualClock`` only moves when a test tells it to, so timer-driven behaviour is tested without sleeping.
Waiting with a limit goes through the clock too: ``timeout(clock, seconds)`` is ``asyncio.timeout`` in
the cluster's time.

**Randomness** is treated like time. Whatever a component draws at random (a retry's jitter, which of
two equal nodes a pod goes to, a generated name) comes from a ``random.Random`` it is given, never from
the ``random`` module's shared generator; the runtime seeds each component's from
``LaunchOptions.seed`` (``controlplane.components.launch``), so with a seed and a ``ManualClock`` a
scenario plays out the same way every time.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Protocol


class Clock(Protocol):
    """Simulated time for one cluster, in seconds."""

    def now(self) -> float:
        """Seconds since the Unix epoch, in the cluster's time."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` of the cluster's time."""
        ...


class ScaledClock:
    """Cluster time that runs ``scale`` times faster than the wall clock (1.0 = real time)."""

    def __init__(self, scale: float = 1.0) -> None:
        if scale <= 0:
            raise ValueError(f"clock scale must be positive, got {scale}")
        self.scale = scale
        self._wall_origin = time.time()
        self._mono_origin = time.monotonic()

    def now(self) -> float:
        return self._wall_origin + (time.monotonic() - self._mono_origin) * self.scale

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds) / self.scale)


SYSTEM_CLOCK = ScaledClock(1.0)


class SkewedClock:
    """A machine's own clock: the cluster's, off by ``skew`` seconds (0: in step), changeable as it runs.

    Each node reads the time from its own clock, which NTP keeps close to the others' but never equal;
    a node whose NTP fails, or whose clock someone sets by hand, stamps what it writes (its Lease's
    ``renewTime``, its conditions' ``lastHeartbeatTime``) with a time that is off. Setting ``skew``
    steps the clock, as ``date -s`` does: ``now()`` jumps, and durations (``sleep``) stay the
    cluster's, since a stepped clock does not tick faster. Reading it costs one addition.
    """

    def __init__(self, clock: Clock, skew: float = 0.0) -> None:
        self.clock = clock
        self.skew = skew

    def now(self) -> float:
        return self.clock.now() + self.skew

    async def sleep(self, seconds: float) -> None:
        await self.clock.sleep(seconds)


class ManualClock:
    """A clock that moves only when ``advance`` is called; sleepers wake when their time has come."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self._now = start
        self._sleepers: list[tuple[float, asyncio.Future[None]]] = []

    def now(self) -> float:
        return self._now

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._sleepers.append((self._now + seconds, future))
        await future

    async def advance(self, seconds: float) -> None:
        """Move time forward and let every sleeper whose deadline passed run."""
        self._now += seconds
        due = [(t, f) for t, f in self._sleepers if t <= self._now]
        self._sleepers = [(t, f) for t, f in self._sleepers if t > self._now]
        for _, future in due:
            if not future.done():
                future.set_result(None)
        # Let the woken tasks run up to their next await.
        for _ in range(5):
            await asyncio.sleep(0)


@contextlib.asynccontextmanager
async def timeout(clock: Clock, seconds: float) -> AsyncIterator[None]:
    """``asyncio.timeout(seconds)`` on ``clock``: ``TimeoutError`` if the block still runs after
    ``seconds`` of cluster time (the block is cancelled then, as ``asyncio.timeout`` cancels it)."""
    task = asyncio.current_task()
    if task is None:
        raise RuntimeError("timeout() must be used inside a task")
    cancelling = task.cancelling()
    expired = False

    async def expire() -> None:
        nonlocal expired
        await clock.sleep(seconds)
        expired = True
        task.cancel()

    timer = asyncio.create_task(expire())
    try:
        yield
    except asyncio.CancelledError:
        # Our own cancellation becomes the TimeoutError; one requested by anyone else stays a
        # cancellation (``uncancel`` tells them apart, as in ``asyncio.timeout``).
        if expired and task.uncancel() <= cancelling:
            raise TimeoutError from None
        raise
    finally:
        timer.cancel()
