"""The workqueue: the to-do list between a controller's event handlers and its workers.

A controller does not act inside its watch handlers. A handler only notes *which object changed*,
by its key (``"namespace/name"``), on a queue; workers take keys off the queue and *reconcile*:
read the object's current state from the informer's cache and make the world match it. Because a
worker always reads the latest state, ten changes to one object need one reconcile, not ten; the
queue is built to make that so. This is client-go's ``util/workqueue``, with its names.

``Queue`` keeps two sets besides the FIFO order of the keys:

- **dirty**: keys that need processing. Adding a key that is already dirty does nothing: this
  is the **dedupe** that folds ten changes into one reconcile.
- **processing**: keys a worker holds right now (between ``get()`` and ``done()``). A key added
  while it is being processed is marked dirty but *not* put in the FIFO; ``done()`` puts it back.
  So **no key is ever processed by two workers at once**, and no change is lost: the change that
  arrived during the reconcile gets a reconcile of its own after it.

Every ``get()`` must be paired with a ``done()`` (in a ``finally``). ``shut_down()`` ignores later
adds; ``get()`` still hands out what is queued and then raises ``QueueShutDown`` (as client-go's
``Get`` returns ``shutdown=true``), so workers end. ``shut_down_with_drain()`` also waits until every
key being processed is ``done()``.

``DelayingQueue.add_after(key, seconds)`` adds a key later, on the cluster clock: the queue keeps
a heap of ``(ready_at, key)`` and one timer sleeping until the earliest, which adds each key when
its time comes (a key waiting twice keeps the earlier time).

``RateLimitingQueue.add_rate_limited(key)`` is ``add_after`` with the delay a rate limiter
(``workqueue_ratelimiters.py``) chooses; ``forget(key)`` resets the key's backoff after success, and
``num_requeues(key)`` says how often it failed in a row. The usual worker::

    while True:
        try:
            key = await queue.get()
        except QueueShutDown:
            return
        try:
            await reconcile(key)
        except Exception:
            queue.add_rate_limited(key)   # try again later, backing off
        else:
            queue.forget(key)             # success: the next failure starts at 5 ms again
        finally:
            queue.done(key)

``metrics`` carries the counters client-go exports as ``workqueue_depth``, ``workqueue_adds_total``,
``workqueue_queue_duration_seconds``, ``workqueue_work_duration_seconds``,
``workqueue_unfinished_work_seconds``, ``workqueue_longest_running_processor_seconds`` and
``workqueue_retries_total``, read from the cluster clock. A named queue also reports them to a
metrics provider (``clientmetrics.py``): the one it is given, or the one of the context it is made in, so
that ``/metrics`` of its cluster shows them.

Upstream: client-go ``util/workqueue/queue.go``, ``delaying_queue.go``, ``rate_limiting_queue.go``,
``metrics.go``.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from controlplane.client.clientmetrics import (
    QueueObserver,
    WorkqueueMetricsProvider,
    workqueue_metrics_provider,
)
from controlplane.client.workqueue_ratelimiters import WorkqueueRateLimiter, default_controller_rate_limiter
from controlplane.clock import SYSTEM_CLOCK, Clock

T = TypeVar("T", bound=Hashable)


class QueueShutDown(Exception):
    """``get()`` on a queue that is shut down and has nothing left to hand out: the worker ends."""


@dataclass
class QueueMetrics:
    """One queue's counters, named after client-go's ``workqueue_*`` Prometheus metrics.

    Durations are kept as a sum and a count here; the ``observer`` (a metrics provider's, for a named
    queue) also gets each one, for the Prometheus histograms. ``now`` reads the queue's clock.
    """

    name: str
    depth: int = 0
    adds_total: int = 0
    retries_total: int = 0
    queue_duration_seconds_sum: float = 0.0
    queue_duration_seconds_count: int = 0
    work_duration_seconds_sum: float = 0.0
    work_duration_seconds_count: int = 0
    now: Callable[[], float] = field(default=SYSTEM_CLOCK.now, repr=False)
    observer: QueueObserver | None = field(default=None, repr=False)
    _added_at: dict[Hashable, float] = field(default_factory=dict, repr=False)
    _processing_since: dict[Hashable, float] = field(default_factory=dict, repr=False)

    def added(self, item: Hashable, now: float) -> None:
        self.adds_total += 1
        self.depth += 1
        self._added_at.setdefault(item, now)
        if self.observer is not None:
            self.observer.added()

    def retried(self) -> None:
        self.retries_total += 1
        if self.observer is not None:
            self.observer.retried()

    def got(self, item: Hashable, now: float) -> None:
        self.depth -= 1
        self._processing_since[item] = now
        added_at = self._added_at.pop(item, None)
        if added_at is not None:
            self.queue_duration_seconds_sum += now - added_at
            self.queue_duration_seconds_count += 1
            if self.observer is not None:
                self.observer.waited(now - added_at)

    def finished(self, item: Hashable, now: float) -> None:
        started = self._processing_since.pop(item, None)
        if started is not None:
            self.work_duration_seconds_sum += now - started
            self.work_duration_seconds_count += 1
            if self.observer is not None:
                self.observer.worked(now - started)

    def unfinished_work_seconds(self, now: float) -> float:
        """How long the items being processed now have been at it, added up."""
        return sum(now - started for started in self._processing_since.values())

    def longest_running_processor_seconds(self, now: float) -> float:
        """How long the oldest item being processed now has been at it."""
        return max((now - started for started in self._processing_since.values()), default=0.0)


class Queue(Generic[T]):
    """client-go's ``workqueue.Type``: FIFO order, dedupe of pending items, one worker per item."""

    def __init__(
        self,
        name: str = "",
        *,
        clock: Clock = SYSTEM_CLOCK,
        metrics_provider: WorkqueueMetricsProvider | None = None,
    ) -> None:
        self.name = name
        self.clock = clock
        self.metrics = QueueMetrics(name, now=clock.now)
        provider = metrics_provider if metrics_provider is not None else workqueue_metrics_provider()
        if provider is not None and name:  # client-go: an unnamed queue reports nothing
            self.metrics.observer = provider.observer(name, self.metrics)
        self._queue: deque[T] = deque()
        self._dirty: set[T] = set()
        self._processing: set[T] = set()
        self._shutting_down = False
        self._drain = False
        #: Workers waiting in ``get()`` for an item, woken one per added item.
        self._getters: deque[asyncio.Future[None]] = deque()
        #: ``shut_down_with_drain()`` calls waiting for the processing set to empty.
        self._drainers: list[asyncio.Future[None]] = []

    def __len__(self) -> int:
        """Items waiting to be handed out (not those being processed); informational only."""
        return len(self._queue)

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    def add(self, item: T) -> None:
        """Mark ``item`` as needing processing (nothing happens if it already does)."""
        if self._shutting_down or item in self._dirty:
            return
        self.metrics.added(item, self.clock.now())
        self._dirty.add(item)
        if item in self._processing:
            return  # done() queues it again
        self._queue.append(item)
        self._wake_one_getter()

    def find(self, item: T) -> bool:
        """Whether ``item`` waits in the queue or is being processed."""
        return item in self._dirty or item in self._processing

    async def get(self) -> T:
        """The next item, once there is one; ``QueueShutDown`` once shut down with nothing left.

        The caller owns the item until it calls ``done(item)``.
        """
        while not self._queue and not self._shutting_down:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._getters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                with contextlib.suppress(ValueError):
                    self._getters.remove(waiter)
                # Woken, then cancelled before it could take the item: pass the wake-up on.
                if waiter.done() and not waiter.cancelled():
                    self._wake_one_getter()
                raise
        if not self._queue:
            raise QueueShutDown(self.name)
        item = self._queue.popleft()
        self.metrics.got(item, self.clock.now())
        self._processing.add(item)
        self._dirty.discard(item)
        return item

    def done(self, item: T) -> None:
        """Processing of ``item`` finished; if it was added meanwhile, it is queued again now."""
        self.metrics.finished(item, self.clock.now())
        self._processing.discard(item)
        if item in self._dirty:
            self._queue.append(item)
            self._wake_one_getter()
        elif not self._processing:
            self._wake_drainers()

    def shut_down(self) -> None:
        """Ignore later adds; ``get()`` hands out what is queued, then raises ``QueueShutDown``."""
        self._drain = False
        self._shutdown()

    async def shut_down_with_drain(self) -> None:
        """``shut_down()``, then wait until every item being processed is ``done()``.

        Workers must keep calling ``done()``; a ``shut_down()`` meanwhile ends the wait early.
        """
        self._drain = True
        self._shutdown()
        while self._processing and self._drain:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._drainers.append(waiter)
            try:
                await waiter
            finally:
                with contextlib.suppress(ValueError):
                    self._drainers.remove(waiter)

    def _shutdown(self) -> None:
        self._shutting_down = True
        while self._getters:
            self._wake_one_getter()
        self._wake_drainers()

    def _wake_one_getter(self) -> None:
        while self._getters:
            waiter = self._getters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def _wake_drainers(self) -> None:
        for waiter in self._drainers:
            if not waiter.done():
                waiter.set_result(None)


@dataclass(order=True)
class _Waiting(Generic[T]):
    ready_at: float
    seq: int
    item: T = field(compare=False)
    cancelled: bool = field(default=False, compare=False)


class DelayingQueue(Queue[T]):
    """A ``Queue`` that can also add an item after a delay on the cluster clock (``add_after``)."""

    def __init__(
        self,
        name: str = "",
        *,
        clock: Clock = SYSTEM_CLOCK,
        metrics_provider: WorkqueueMetricsProvider | None = None,
    ) -> None:
        super().__init__(name, clock=clock, metrics_provider=metrics_provider)
        self._heap: list[_Waiting[T]] = []
        self._waiting: dict[T, _Waiting[T]] = {}
        self._seq = itertools.count()
        #: The one timer, sleeping until the earliest waiting item is due (``_timer_at``).
        self._timer: asyncio.Task[None] | None = None
        self._timer_at = 0.0

    def waiting(self) -> int:
        """How many items wait for their delay to pass."""
        return len(self._waiting)

    def add_after(self, item: T, delay: float) -> None:
        """Add ``item`` once ``delay`` seconds of cluster time have passed (at once if ``delay <= 0``).

        An item already waiting keeps the earlier of its two times. Must be called on the event loop.
        """
        if self._shutting_down:
            return
        self.metrics.retried()
        if delay <= 0:
            self.add(item)
            return
        ready_at = self.clock.now() + delay
        existing = self._waiting.get(item)
        if existing is not None:
            if existing.ready_at <= ready_at:
                return
            existing.cancelled = True  # left in the heap, skipped when it comes up
        entry = _Waiting(ready_at, next(self._seq), item)
        self._waiting[item] = entry
        heapq.heappush(self._heap, entry)
        self._set_timer()

    def _shutdown(self) -> None:
        super()._shutdown()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _set_timer(self) -> None:
        """Have the timer sleep until the earliest waiting item is due (or stop it if none waits)."""
        while self._heap and self._heap[0].cancelled:
            heapq.heappop(self._heap)
        if self._timer is not None:
            if self._heap and self._timer_at == self._heap[0].ready_at:
                return
            self._timer.cancel()
            self._timer = None
        if self._heap and not self._shutting_down:
            self._timer_at = self._heap[0].ready_at
            self._timer = asyncio.get_running_loop().create_task(
                self._sleep_until(self._timer_at), name=f"workqueue-delay:{self.name}"
            )

    async def _sleep_until(self, ready_at: float) -> None:
        await self.clock.sleep(ready_at - self.clock.now())
        self._timer = None
        now = self.clock.now()
        while self._heap and self._heap[0].ready_at <= now:
            entry = heapq.heappop(self._heap)
            if not entry.cancelled:
                del self._waiting[entry.item]
                self.add(entry.item)
        self._set_timer()


class RateLimitingQueue(DelayingQueue[T]):
    """A ``DelayingQueue`` whose ``add_rate_limited`` waits as long as its rate limiter says."""

    def __init__(
        self,
        rate_limiter: WorkqueueRateLimiter | None = None,
        name: str = "",
        *,
        clock: Clock = SYSTEM_CLOCK,
        metrics_provider: WorkqueueMetricsProvider | None = None,
    ) -> None:
        super().__init__(name, clock=clock, metrics_provider=metrics_provider)
        self.rate_limiter = rate_limiter or default_controller_rate_limiter(clock=clock)

    def add_rate_limited(self, item: T) -> None:
        """Add ``item`` after the rate limiter's delay (which counts one more failure of it)."""
        self.add_after(item, self.rate_limiter.when(item))

    def forget(self, item: T) -> None:
        """Stop the rate limiter tracking ``item``; ``done(item)`` is still needed."""
        self.rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return self.rate_limiter.num_requeues(item)


__all__ = ["DelayingQueue", "Queue", "QueueMetrics", "QueueShutDown", "RateLimitingQueue"]
