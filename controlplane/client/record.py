"""Recording Events: how components tell people what they did to an object.

When the scheduler binds a pod it writes an **Event** ("Scheduled: Successfully assigned default/web
to node-1") that points at the pod; ``kubectl describe pod web`` lists the Events whose
``involvedObject`` is that pod, with ``Type``, ``Reason``, ``Age``, ``From`` (``source.component``) and
``Message``. This is client-go's ``tools/record``, writing ``core/v1`` Events (the ones
``kubectl describe`` shows), with its names:

- an ``EventRecorder`` (``broadcaster.new_recorder("my-controller")``) has one call,
  ``event(obj, type, reason, message)``, with ``type`` ``Normal`` or ``Warning`` and ``reason`` a short
  UpperCamelCase word. It never blocks and never fails the caller: the event goes on a queue
  (at most 1000 waiting; more are dropped);
- the ``EventBroadcaster`` takes events off that queue, passes each through the ``EventCorrelator``
  and writes it to the API server, retrying a server it cannot reach (12 tries, 10 s apart).

A controller that fails the same way every few seconds would otherwise write thousands of Events.
The ``EventCorrelator`` (client-go ``events_cache.go``; no I/O, time from the cluster clock) prevents it:

- **dedupe**: an event identical to one already written (same source, involved object, type, reason
  and message) is not written again; the existing Event is **patched** instead, ``count`` + 1 and a
  new ``lastTimestamp``, so ``kubectl describe`` shows ``(x5 over 2m)``. The memory is an LRU of
  4096 events (no time limit: an Event the server has already expired is created again);
- **aggregation**: 10 events within 10 minutes that differ only in their message become one Event,
  "(combined from similar events): <latest message>", counted from then on;
- **spam filter**: each source may write 25 events about one object at once, then one every 5
  minutes (a token bucket per source and object); the rest are dropped.

The kubelet and the controller manager record through this legacy library, as upstream's do. The
scheduler uses the newer one, for ``events.k8s.io/v1`` (``events.py``: ``eventTime``, ``action``,
series instead of counts).

Upstream: client-go ``tools/record/event.go``, ``events_cache.go``; ``tools/reference/ref.go``.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from controlplane.api.meta import format_time
from controlplane.client.errors import APIError, NotFound
from controlplane.client.rest import PatchType, ResourceClient, RESTClient
from controlplane.client.tokenbucket import TokenBucketRateLimiter
from controlplane.clock import SYSTEM_CLOCK, Clock

logger = logging.getLogger(__name__)

EVENT_TYPE_NORMAL = "Normal"
EVENT_TYPE_WARNING = "Warning"

MAX_LRU_CACHE_ENTRIES = 4096
DEFAULT_AGGREGATE_MAX_EVENTS = 10
DEFAULT_AGGREGATE_INTERVAL_SECONDS = 600.0
DEFAULT_SPAM_BURST = 25
DEFAULT_SPAM_QPS = 1.0 / 300.0
MAX_TRIES_PER_EVENT = 12
DEFAULT_SLEEP_DURATION = 10.0
MAX_QUEUED_EVENTS = 1000

Event = dict[str, Any]

_K = TypeVar("_K")
_V = TypeVar("_V")


def object_reference(obj: Mapping[str, Any]) -> dict[str, Any]:
    """An ``ObjectReference`` to ``obj`` (needs its ``kind``; ``tools/reference.GetReference``)."""
    meta = obj.get("metadata") or {}
    if not obj.get("kind") or not meta.get("name"):
        raise ValueError("an event needs an object with kind and metadata.name to point at")
    ref = {
        "kind": obj["kind"],
        "namespace": meta.get("namespace", ""),
        "name": meta["name"],
        "uid": meta.get("uid", ""),
        "apiVersion": obj.get("apiVersion", ""),
        "resourceVersion": meta.get("resourceVersion", ""),
    }
    return {k: v for k, v in ref.items() if v}


class _LRU(Generic[_K, _V]):
    """A small least-recently-used cache (``groupcache/lru``)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[_K, _V] = OrderedDict()

    def get(self, key: _K) -> _V | None:
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def add(self, key: _K, value: _V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.size:
            self._items.popitem(last=False)


def _paths(*paths: str) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(path.split(".")) for path in paths)


def _fields(event: Event, paths: tuple[tuple[str, ...], ...]) -> tuple[str, ...]:
    values = []
    for path in paths:
        value: Any = event
        for part in path:
            value = value.get(part) if type(value) is dict or isinstance(value, Mapping) else None
        values.append("" if value is None else str(value))
    return tuple(values)


_OBJECT = (
    "source.component",
    "source.host",
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
)
_EVENT_KEY = _paths(*_OBJECT, "involvedObject.fieldPath", "type", "reason", "message")
_SPAM_KEY = _paths(*_OBJECT)
_AGGREGATE_KEY = _paths(*_OBJECT, "type", "reason", "reportingComponent", "reportingInstance")


def event_key(event: Event) -> tuple[str, ...]:
    """Events with the same key are the same event (``getEventKey``)."""
    return _fields(event, _EVENT_KEY)


def spam_key(event: Event) -> tuple[str, ...]:
    """One token bucket per source and object (``getSpamKey``)."""
    return _fields(event, _SPAM_KEY)


def aggregate_key(event: Event) -> tuple[tuple[str, ...], str]:
    """Similar events differ only in their message (``EventAggregatorByReasonFunc``)."""
    return _fields(event, _AGGREGATE_KEY), str(event.get("message", ""))


# Slots: a recorder keeps one of each per recent event (a thousand kubelets, ten thousand pods).
@dataclass(slots=True)
class _Aggregate:
    messages: set[str]
    last: float


@dataclass(frozen=True, slots=True)
class _Log:
    """What was last written for one event key (``eventLog``)."""

    count: int
    first_timestamp: str
    name: str
    resource_version: str


@dataclass(frozen=True)
class CorrelateResult:
    """The event to write and, for a repeat, the patch to send instead of a create; or ``skip``."""

    event: Event | None
    patch: dict[str, Any] | None = None
    skip: bool = False


class EventCorrelator:
    """Filters, aggregates and counts events before they are written (client-go ``EventCorrelator``)."""

    def __init__(
        self,
        *,
        clock: Clock = SYSTEM_CLOCK,
        lru_size: int = MAX_LRU_CACHE_ENTRIES,
        spam_burst: int = DEFAULT_SPAM_BURST,
        spam_qps: float = DEFAULT_SPAM_QPS,
        max_events: int = DEFAULT_AGGREGATE_MAX_EVENTS,
        max_interval: float = DEFAULT_AGGREGATE_INTERVAL_SECONDS,
    ) -> None:
        self.clock = clock
        self.spam_burst = spam_burst
        self.spam_qps = spam_qps
        self.max_events = max_events
        self.max_interval = max_interval
        self._spam: _LRU[tuple[str, ...], TokenBucketRateLimiter] = _LRU(lru_size)
        self._aggregates: _LRU[tuple[str, ...], _Aggregate] = _LRU(lru_size)
        self._logs: _LRU[tuple[str, ...], _Log] = _LRU(lru_size)

    def correlate(self, event: Event) -> CorrelateResult:
        """Aggregate, then count (a repeat becomes a patch), then filter spam; ``event`` is not changed."""
        now = self.clock.now()
        aggregated, cache_key = self._aggregate(event, now)
        observed, patch = self._observe(aggregated, cache_key, now)
        if self._filtered(observed):
            return CorrelateResult(None, skip=True)
        return CorrelateResult(observed, patch)

    def update_state(self, event: Event) -> None:
        """Remember the Event as the server returned it (its name and resourceVersion)."""
        self._logs.add(event_key(event), self._log_of(event))

    def _aggregate(self, event: Event, now: float) -> tuple[Event, tuple[str, ...]]:
        group, message = aggregate_key(event)
        record = self._aggregates.get(group)
        if record is None or now - record.last > self.max_interval:
            record = _Aggregate(set(), now)
        record.messages.add(message)
        record.last = now
        self._aggregates.add(group, record)
        if len(record.messages) < self.max_events:
            return event, event_key(event)
        record.messages.pop()  # keep the set from growing past the threshold
        involved = event.get("involvedObject") or {}
        combined: Event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{involved.get('name', '')}.{int(now * 1e9):x}",
                "namespace": event["metadata"]["namespace"],
            },
            "involvedObject": involved,
            "reason": event.get("reason", ""),
            "message": f"(combined from similar events): {message}",
            "type": event.get("type", ""),
            "source": event.get("source", {}),
            "count": 1,
            "firstTimestamp": format_time(now),
            "lastTimestamp": format_time(now),
        }
        return combined, group

    def _observe(
        self, event: Event, cache_key: tuple[str, ...], now: float
    ) -> tuple[Event, dict[str, Any] | None]:
        event = {**event, "metadata": dict(event.get("metadata") or {})}
        last = self._logs.get(cache_key)
        patch: dict[str, Any] | None = None
        if last is not None and last.count > 0:
            event["metadata"]["name"] = last.name
            event["metadata"]["resourceVersion"] = last.resource_version
            event["firstTimestamp"] = last.first_timestamp
            event["count"] = last.count + 1
            patch = {
                "count": event["count"],
                "lastTimestamp": event.get("lastTimestamp") or format_time(now),
                "message": event.get("message", ""),
            }
        self._logs.add(cache_key, self._log_of(event))
        return event, patch

    @staticmethod
    def _log_of(event: Event) -> _Log:
        meta = event.get("metadata") or {}
        return _Log(
            count=int(event.get("count") or 0),
            first_timestamp=str(event.get("firstTimestamp") or ""),
            name=str(meta.get("name") or ""),
            resource_version=str(meta.get("resourceVersion") or ""),
        )

    def _filtered(self, event: Event) -> bool:
        key = spam_key(event)
        bucket = self._spam.get(key)
        if bucket is None:
            bucket = TokenBucketRateLimiter(self.spam_qps, self.spam_burst, clock=self.clock)
        self._spam.add(key, bucket)
        return not bucket.try_accept()


class EventSink(Protocol):
    """Where events are written (client-go's ``record.EventSink`` and ``events.EventSink`` alike: the legacy
    recorder writes core/v1 Events through it, ``client/events`` events.k8s.io/v1 ones); must respect
    each event's namespace."""

    async def create(self, event: Event) -> Event: ...

    async def patch(self, event: Event, patch: dict[str, Any]) -> Event:
        """Strategic-merge-patch the existing Event named like ``event``."""
        ...


class EventSinkImpl:
    """Events written through the REST client as ``core/v1`` Events (client-go ``EventSinkImpl``)."""

    def __init__(self, client: RESTClient) -> None:
        self.client = client

    def _events(self, event: Event) -> ResourceClient:
        return self.client.resource("", "v1", "events", event["metadata"]["namespace"])

    async def create(self, event: Event) -> Event:
        return await self._events(event).create(event)

    async def patch(self, event: Event, patch: dict[str, Any]) -> Event:
        name = event["metadata"]["name"]
        return await self._events(event).patch(name, patch, patch_type=PatchType.STRATEGIC_MERGE)


class EventRecorder:
    """Records events on behalf of one source (a component, and optionally the host it runs on)."""

    def __init__(self, broadcaster: EventBroadcaster, component: str, host: str = "") -> None:
        self.broadcaster = broadcaster
        self.component = component
        self.host = host

    def event(self, obj: Mapping[str, Any], type: str, reason: str, message: str) -> None:
        """Record that ``reason: message`` happened to ``obj``; never blocks, never raises."""
        if type not in (EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING):
            logger.error("unsupported event type %r: not recording %s %s", type, reason, message)
            return
        try:
            ref = object_reference(obj)
        except ValueError as error:
            logger.error("cannot record event %s %r: %s", reason, message, error)
            return
        self.broadcaster.action(self._make_event(ref, type, reason, message))

    def eventf(
        self, obj: Mapping[str, Any], type: str, reason: str, message_format: str, *args: object
    ) -> None:
        """``event`` with ``message_format % args`` as the message."""
        self.event(obj, type, reason, message_format % args if args else message_format)

    def _make_event(self, ref: dict[str, Any], type: str, reason: str, message: str) -> Event:
        now = self.broadcaster.clock.now()
        timestamp = format_time(now)
        source = {"component": self.component, **({"host": self.host} if self.host else {})}
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{ref['name']}.{self.broadcaster.unique_nanos(now):x}",
                "namespace": ref.get("namespace") or "default",
            },
            "involvedObject": ref,
            "reason": reason,
            "message": message,
            "type": type,
            "source": source,
            "count": 1,
            "firstTimestamp": timestamp,
            "lastTimestamp": timestamp,
            "reportingComponent": self.component,
            "reportingInstance": self.host,
        }


class EventQueue:
    """What both event broadcasters share (this legacy one and ``client/events``' events.k8s.io
    one): the sink, the clock, and a bounded queue that drops what does not fit (client-go's
    ``watch.Broadcaster`` with ``DropIfChannelFull`` under both)."""

    def __init__(
        self,
        sink: EventSink,
        *,
        clock: Clock,
        rng: random.Random | None,
        sleep_duration: float,
        max_queued: int,
    ) -> None:
        self.sink = sink
        self.clock = clock
        self.rng = rng or random.Random()
        self.sleep_duration = sleep_duration
        self._queue: asyncio.Queue[Event] = asyncio.Queue(max_queued)
        self._last_nanos = 0
        self.dropped = 0

    def unique_nanos(self, now: float) -> int:
        """``now`` in nanoseconds, made unique (a ``ManualClock`` may stand still between events)."""
        self._last_nanos = max(int(now * 1e9), self._last_nanos + 1)
        return self._last_nanos

    def action(self, event: Event) -> None:
        """Queue ``event`` for writing; drop it if the queue is full (``ActionOrDrop``)."""
        try:
            self._queue.put_nowait(event)
        except asyncio.QueueFull:
            self.dropped += 1
            logger.error("too many queued events, dropped %s", event["metadata"]["name"])


class EventBroadcaster(EventQueue):
    """Writes recorded events to a sink, one at a time, through an ``EventCorrelator``.

    ``start()`` starts the writer task; ``flush()`` waits until every event recorded so far was
    written (or given up); ``shutdown()`` stops, dropping what is still queued.
    """

    def __init__(
        self,
        sink: EventSink,
        *,
        clock: Clock = SYSTEM_CLOCK,
        rng: random.Random | None = None,
        correlator: EventCorrelator | None = None,
        sleep_duration: float = DEFAULT_SLEEP_DURATION,
        max_queued: int = MAX_QUEUED_EVENTS,
    ) -> None:
        super().__init__(sink, clock=clock, rng=rng, sleep_duration=sleep_duration, max_queued=max_queued)
        self.correlator = correlator or EventCorrelator(clock=clock)
        self._task: asyncio.Task[None] | None = None

    def new_recorder(self, component: str, host: str = "") -> EventRecorder:
        return EventRecorder(self, component, host)

    def start(self) -> None:
        """Start writing recorded events (``StartRecordingToSink``)."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._write_loop(), name="event-broadcaster")

    async def flush(self) -> None:
        """Wait until every event recorded so far has been written or given up (after ``start()``)."""
        if self._task is None:
            raise RuntimeError("flush() on an event broadcaster that is not started")
        await self._queue.join()

    async def shutdown(self) -> None:
        """Stop writing; events still queued are dropped (as client-go's ``Shutdown``)."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _write_loop(self) -> None:
        while True:
            event = await self._queue.get()
            try:
                await self._record_to_sink(event)
            except Exception:
                logger.exception("unexpected error writing event %s", event["metadata"]["name"])
            finally:
                self._queue.task_done()

    async def _record_to_sink(self, event: Event) -> None:
        result = self.correlator.correlate(event)
        if result.skip or result.event is None:
            return
        for tries in range(1, MAX_TRIES_PER_EVENT + 1):
            if await self._record_event(result.event, result.patch):
                return
            if tries == MAX_TRIES_PER_EVENT:
                break
            # The first wait is random, so that clients do not all retry at once after an outage.
            delay = self.sleep_duration * (self.rng.random() if tries == 1 else 1.0)
            await self.clock.sleep(delay)
        logger.error("unable to write event %s (retry limit exceeded)", result.event["metadata"]["name"])

    async def _record_event(self, event: Event, patch: dict[str, Any] | None) -> bool:
        """True if written or not worth retrying; False if the server could not be reached."""
        try:
            written: Event | None = None
            if patch is not None and event.get("count", 1) > 1:
                try:
                    written = await self.sink.patch(event, patch)
                except NotFound:
                    written = None  # the Event expired on the server: create it again
            if written is None:
                fresh = {**event, "metadata": {**event["metadata"]}}
                fresh["metadata"].pop("resourceVersion", None)
                written = await self.sink.create(fresh)
        except APIError as error:
            # The server refused it (AlreadyExists, Invalid, a terminating namespace): do not retry.
            logger.info("server rejected event %s: %s (will not retry)", event["metadata"]["name"], error)
            return True
        except Exception as error:
            logger.warning("unable to write event %s: %s (may retry)", event["metadata"]["name"], error)
            return False
        self.correlator.update_state(written)
        return True


__all__ = [
    "EVENT_TYPE_NORMAL",
    "EVENT_TYPE_WARNING",
    "CorrelateResult",
    "EventBroadcaster",
    "EventCorrelator",
    "EventRecorder",
    "EventSink",
    "EventSinkImpl",
    "aggregate_key",
    "event_key",
    "object_reference",
    "spam_key",
]
