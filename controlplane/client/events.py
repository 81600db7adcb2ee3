"""Recording Events through ``events.k8s.io/v1``: client-go's newer event library (``tools/events``).

Kubernetes has two event recorders. The legacy one (``record.py``, client-go ``tools/record``) writes
core/v1 Events and is still what the kubelet and the controller manager use. The newer one, written
for the ``events.k8s.io`` API, is what kube-scheduler uses, and it is this module. Both write the same
kind of object (the API server stores one Event whichever API it came through; see
``controlplane.api.conversion.events``), but what they write, and how they fold repeats, differ:

- **The Event.** ``recorder.eventf(regarding, related, type, reason, action, note)`` builds an
  ``events.k8s.io/v1`` Event: ``regarding`` (the object it is about; ``involvedObject`` in core/v1),
  an optional ``related`` object (the node a pod was bound to, the pod a controller created),
  ``eventTime`` with microseconds (``metav1.MicroTime``), ``reportingController``
  (``default-scheduler``) and ``reportingInstance`` (``default-scheduler-<hostname>``: which replica),
  ``action`` (what it did or tried: ``Binding``, ``Scheduling``), ``reason`` (the outcome:
  ``Scheduled``, ``FailedScheduling``), ``note`` (the sentence for humans) and ``type`` (``Normal`` or
  ``Warning``). Its name is ``<regarding name>.<eventTime in hex nanoseconds>``. None of the legacy
  fields (``source``, ``count``, ``firstTimestamp``, ``lastTimestamp``) is set: the API server refuses
  them through ``events.k8s.io/v1``.

- **Series, not counts.** The legacy recorder counts every repeat on the server (a ``count: N+1``
  patch per occurrence), combines similar messages ("combined from similar events") and drops a
  flood (a token bucket per source and object). The newer library does none of that. It keeps the
  Events it wrote in a cache keyed by what makes two Events *isomorphic*: the same ``type``,
  ``action``, ``reason``, ``reportingController``, ``reportingInstance``, ``regarding`` and
  ``related`` (the ``note`` does not count). A repeat of a cached Event becomes a **series**: the
  first repeat patches the Event with ``series: {count: 2, lastObservedTime}``; later repeats only
  count up in the cache, and reach the server when the series is refreshed (every 30 minutes, so a
  long series outlives the Events' one-hour expiry) or finished (a series quiet for 6 minutes is
  written once more, with its final count, and forgotten; a singleton Event is forgotten 6 minutes
  after its ``eventTime``). So a thousand identical failures cost two writes, not a thousand.
  ``kubectl get events`` shows a series as ``(x42 over 12m)``.

- **Writing.** The recorder never blocks and never fails its caller: the Event goes on a queue (at most
  1000 waiting, the rest dropped). The broadcaster writes a new Event with a create, a series with a
  strategic-merge patch of its ``series`` (created instead when the Event expired meanwhile). A server
  that cannot be reached is tried again, 12 times at most, waiting 10 to 12.5 s (``wait.Jitter(10 s,
  0.25)``) between tries; a refusal (``Invalid``, ``Forbidden``, ``AlreadyExists``) is not retried,
  except ``AlreadyExists`` for a series (the Event it patches was being created meanwhile).
  The library has no rate limit of its own: only the client's QPS holds it back.

Upstream writes each Event in a goroutine of its own; here one task writes them in order, as the
legacy recorder does, so a server outage holds the later Events back while one is being retried.

The bookkeeping (``EventSeriesCache``: which Events are cached, which repeat becomes a write, which
series are finished) is pure code with no I/O and time passed in; ``EventBroadcaster`` is the thin
async part that writes to an ``EventSink``.

Upstream: client-go ``tools/events/event_recorder.go`` (``Eventf``, ``makeEvent``),
``event_broadcaster.go`` (``recordToSink``, ``finishSeries``, ``refreshExistingEventSeries``,
``recordEvent``, ``getKey``), ``interfaces.go``; ``tools/record/util/util.go``
(``GenerateEventName``).
"""

from __future__ import annotations

import asyncio
import logging
import random
import socket
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from controlplane.api.meta import format_micro_time, parse_timestamp
from controlplane.api.validation import is_dns1123_subdomain
from controlplane.client.backoff import jitter
from controlplane.client.errors import AlreadyExists, APIError, NotFound
from controlplane.client.record import (
    EVENT_TYPE_NORMAL,
    EVENT_TYPE_WARNING,
    EventQueue,
    EventSink,
    object_reference,
)
from controlplane.client.rest import PatchType, ResourceClient, RESTClient
from controlplane.clock import SYSTEM_CLOCK, Clock

logger = logging.getLogger(__name__)

API_GROUP = "events.k8s.io"
API_VERSION = "events.k8s.io/v1"

#: ``maxTriesPerEvent``: a write is tried this many times while the server cannot be reached.
MAX_TRIES_PER_EVENT = 12
#: ``defaultSleepDuration`` between tries, stretched by up to ``RETRY_JITTER`` of itself.
DEFAULT_SLEEP_DURATION = 10.0
RETRY_JITTER = 0.25
#: ``finishTime``: a series quiet this long is finished; a singleton this old is forgotten.
FINISH_TIME = 6 * 60.0
#: ``refreshTime``: ongoing series are written again this often (Events expire after an hour).
REFRESH_TIME = 30 * 60.0
#: ``maxQueuedEvents``: events waiting to be written; more are dropped.
MAX_QUEUED_EVENTS = 1000

Event = dict[str, Any]
#: The fields of an ``ObjectReference`` that make two references the same (Go compares the struct).
_REFERENCE_FIELDS = ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
#: What makes two Events isomorphic (``eventKey``): type, action, reason, reporting controller and
#: instance, then the regarding and related references field by field.
SeriesKey = tuple[str, ...]


def event_name(regarding_name: str, nanos: int, rng: random.Random | None = None) -> str:
    """``GenerateEventName``: ``<name>.<nanos in hex>``, or a random UUID (drawn from ``rng``) if that
    is not a valid name (an object's name need not be a DNS subdomain, an Event's must)."""
    name = f"{regarding_name}.{nanos:x}"
    if is_dns1123_subdomain(name):
        return str(uuid.uuid4() if rng is None else uuid.UUID(int=rng.getrandbits(128), version=4))
    return name


def _reference_key(ref: Mapping[str, Any] | None) -> tuple[str, ...]:
    if not ref:
        return ("",) * len(_REFERENCE_FIELDS)
    return tuple(str(ref.get(field) or "") for field in _REFERENCE_FIELDS)


def series_key(event: Mapping[str, Any]) -> SeriesKey:
    """Isomorphic Events have the same key (``getKey``); the ``note`` is not part of it."""
    return (
        str(event.get("type") or ""),
        str(event.get("action") or ""),
        str(event.get("reason") or ""),
        str(event.get("reportingController") or ""),
        str(event.get("reportingInstance") or ""),
        *_reference_key(event.get("regarding")),
        *_reference_key(event.get("related")),
    )


def series_patch(event: Mapping[str, Any]) -> dict[str, Any]:
    """``createPatchBytesForSeries``: the two-way merge patch from the Event without its series to the
    Event with it, which is the series alone."""
    return {"series": dict(event["series"])}


# -- the bookkeeping: pure, no I/O, time passed in -------------------------------------------------


class EventSeriesCache:
    """The Events a broadcaster wrote, by isomorphic key, and what each new occurrence means.

    ``observe`` is ``recordToSink``'s decision; ``finish`` and ``ongoing`` are what ``finishSeries``
    and ``refreshExistingEventSeries`` go through. Events returned for writing are copies: writing
    them never changes the cache (upstream deep-copies them for the same reason).
    """

    def __init__(self) -> None:
        self._events: dict[SeriesKey, Event] = {}

    def __len__(self) -> int:
        return len(self._events)

    def get(self, key: SeriesKey) -> Event | None:
        return self._events.get(key)

    def observe(self, event: Event, now: float) -> Event | None:
        """An occurrence of ``event``: the Event to write, or None if only the cache changes.

        The first occurrence is cached and written as it is. The first repeat starts a series on the
        cached Event (``count: 2``) and is written (a patch of the first Event). Later repeats count
        up in the cache only.
        """
        key = series_key(event)
        cached = self._events.get(key)
        if cached is None:
            self._events[key] = event
            return {**event, "metadata": dict(event["metadata"])}
        series = cached.get("series")
        observed = format_micro_time(now)
        if series is not None:
            series["count"] += 1
            series["lastObservedTime"] = observed
            return None
        cached["series"] = {"count": 2, "lastObservedTime": observed}
        return {**cached, "metadata": dict(cached["metadata"]), "series": dict(cached["series"])}

    def finish(self, now: float, finish_time: float = FINISH_TIME) -> list[tuple[SeriesKey, Event]]:
        """``finishSeries``: forget singletons older than ``finish_time``; return the series that have
        been quiet that long, to be written with their final count (``forget`` each once written)."""
        ended: list[tuple[SeriesKey, Event]] = []
        cutoff = now - finish_time
        for key, event in list(self._events.items()):
            series = event.get("series")
            last = series.get("lastObservedTime") if series is not None else event.get("eventTime")
            # A missing or unreadable time counts as long past: the Event is done with.
            if (parse_timestamp(last) or 0.0) >= cutoff:
                continue
            if series is not None:
                ended.append((key, _copy(event)))
            else:
                del self._events[key]
        return ended

    def ongoing(self) -> list[tuple[SeriesKey, Event]]:
        """``refreshExistingEventSeries``: every cached series, to be written again (copies)."""
        return [(key, _copy(event)) for key, event in self._events.items() if event.get("series") is not None]

    def forget(self, key: SeriesKey) -> None:
        self._events.pop(key, None)

    def refreshed(self, key: SeriesKey, written: Event) -> None:
        """Cache the server's answer to a refresh in place of what was cached (as upstream does)."""
        if key in self._events:
            self._events[key] = written


def _copy(event: Event) -> Event:
    copied = {**event, "metadata": dict(event.get("metadata") or {})}
    if event.get("series") is not None:
        copied["series"] = dict(event["series"])
    return copied


# -- writing: the sink, the recorder, the broadcaster -----------------------------------------------


class EventSinkImpl:
    """Events written through the REST client as ``events.k8s.io/v1`` Events (client-go ``EventSinkImpl``)."""

    def __init__(self, client: RESTClient) -> None:
        self.client = client

    def _events(self, event: Event) -> ResourceClient:
        namespace = event["metadata"].get("namespace")
        if not namespace:
            raise ValueError("can't write an event with empty namespace")
        return self.client.resource(API_GROUP, "v1", "events", namespace)

    async def create(self, event: Event) -> Event:
        return await self._events(event).create(event)

    async def patch(self, event: Event, patch: dict[str, Any]) -> Event:
        name = event["metadata"]["name"]
        return await self._events(event).patch(name, patch, patch_type=PatchType.STRATEGIC_MERGE)


async def record_event(sink: EventSink, event: Event) -> tuple[Event | None, bool]:
    """``recordEvent``: write ``event`` once; the written Event (or None) and whether to try again."""
    is_series = event.get("series") is not None
    name = event["metadata"]["name"]
    try:
        if is_series:
            try:
                return await sink.patch(event, series_patch(event)), False
            except NotFound:
                pass  # the Event expired on the server: create it again, series and all
        fresh = {**event, "metadata": {k: v for k, v in event["metadata"].items() if k != "resourceVersion"}}
        return await sink.create(fresh), False
    except AlreadyExists:
        # For a series, the Event it patched was being created meanwhile: the patch will work now.
        logger.debug("event %s already exists%s", name, " (will retry)" if is_series else "")
        return None, is_series
    except APIError as error:
        logger.error("server rejected event %s: %s (will not retry)", name, error)
        return None, False
    except Exception as error:  # transport errors, and whatever else did not come from the server
        logger.warning("unable to write event %s: %s (may retry after sleeping)", name, error)
        return None, True


class EventRecorder:
    """Records Events on behalf of one controller instance (client-go ``events.EventRecorder``)."""

    def __init__(
        self, broadcaster: EventBroadcaster, reporting_controller: str, reporting_instance: str
    ) -> None:
        self.broadcaster = broadcaster
        self.reporting_controller = reporting_controller
        self.reporting_instance = reporting_instance

    def eventf(
        self,
        regarding: Mapping[str, Any],
        related: Mapping[str, Any] | None,
        type: str,
        reason: str,
        action: str,
        note: str,
        *args: object,
    ) -> None:
        """Record that ``action`` on ``regarding`` had the outcome ``reason``; never blocks, never raises.

        ``note`` is ``note % args`` when ``args`` are given (Go's ``Sprintf``), else taken as it is.
        """
        message = note % args if args else note
        try:
            regarding_ref = object_reference(regarding)
        except ValueError as error:
            logger.error("cannot record event %s %r: %s", reason, message, error)
            return
        related_ref: dict[str, Any] | None = None
        if related is not None:
            try:
                related_ref = object_reference(related)
            except ValueError:
                related_ref = None  # upstream records the event without it
        if type not in (EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING):
            logger.error("unsupported event type %r: not recording %s %s", type, reason, message)
            return
        self.broadcaster.action(self._make_event(regarding_ref, related_ref, type, reason, action, message))

    def _make_event(
        self,
        regarding: dict[str, Any],
        related: dict[str, Any] | None,
        type: str,
        reason: str,
        action: str,
        note: str,
    ) -> Event:
        """``makeEvent``: Go leaves empty strings and a nil ``related``/``series`` out of the JSON."""
        now = self.broadcaster.clock.now()
        event: Event = {
            "apiVersion": API_VERSION,
            "kind": "Event",
            "metadata": {
                "name": event_name(
                    regarding["name"], self.broadcaster.unique_nanos(now), self.broadcaster.rng
                ),
                "namespace": regarding.get("namespace") or "default",
            },
            "eventTime": format_micro_time(now),
            "reportingController": self.reporting_controller,
            "reportingInstance": self.reporting_instance,
        }
        if action:
            event["action"] = action
        if reason:
            event["reason"] = reason
        event["regarding"] = regarding
        if related is not None:
            event["related"] = related
        if note:
            event["note"] = note
        event["type"] = type
        return event


class EventBroadcaster(EventQueue):
    """Writes recorded Events to a sink through an ``EventSeriesCache``, and keeps its series alive.

    ``start()`` starts the writer and the series upkeep (finish every 6 minutes, refresh every 30, on
    the cluster clock); ``flush()`` waits until every Event recorded so far was written (or given up);
    ``shutdown()`` stops, dropping what is still queued.
    """

    def __init__(
        self,
        sink: EventSink,
        *,
        clock: Clock = SYSTEM_CLOCK,
        rng: random.Random | None = None,
        sleep_duration: float = DEFAULT_SLEEP_DURATION,
        max_queued: int = MAX_QUEUED_EVENTS,
    ) -> None:
        super().__init__(sink, clock=clock, rng=rng, sleep_duration=sleep_duration, max_queued=max_queued)
        self.cache = EventSeriesCache()
        # Upstream's mutex: the upkeep holds it across its writes, so no repeat is counted on a series
        # while it is being finished (and then lost with it).
        self._lock = asyncio.Lock()
        self._tasks: list[asyncio.Task[None]] = []

    def new_recorder(self, reporting_controller: str, hostname: str | None = None) -> EventRecorder:
        """A recorder for ``reporting_controller``; its instance is ``<controller>-<hostname>``
        (``NewRecorder``; the host's name unless ``hostname`` is given)."""
        host = socket.gethostname() if hostname is None else hostname
        return EventRecorder(self, reporting_controller, f"{reporting_controller}-{host}")

    def start(self) -> None:
        """Start writing recorded Events and keeping series up (``StartRecordingToSink``)."""
        if self._tasks:
            return
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._write_loop(), name="events-broadcaster"),
            loop.create_task(self._every(FINISH_TIME, self.finish_series), name="events-finish-series"),
            loop.create_task(self._every(REFRESH_TIME, self.refresh_series), name="events-refresh-series"),
        ]

    async def flush(self) -> None:
        """Wait until every Event recorded so far has been written or given up (after ``start()``)."""
        if not self._tasks:
            raise RuntimeError("flush() on an event broadcaster that is not started")
        await self._queue.join()

    async def shutdown(self) -> None:
        """Stop writing; Events still queued are dropped (as client-go's ``Shutdown``)."""
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _every(self, period: float, work: Callable[[], Awaitable[None]]) -> None:
        """``wait.Until``: ``work`` at once, then every ``period`` seconds after it ends."""
        while True:
            try:
                await work()
            except Exception:
                logger.exception("event series upkeep failed")
            await self.clock.sleep(period)

    async def _write_loop(self) -> None:
        while True:
            event = await self._queue.get()
            try:
                async with self._lock:
                    to_write = self.cache.observe(event, self.clock.now())
                if to_write is not None:
                    await self.attempt_recording(to_write)
            except Exception:
                logger.exception("unexpected error writing event %s", event["metadata"]["name"])
            finally:
                self._queue.task_done()

    async def attempt_recording(self, event: Event) -> Event | None:
        """``attemptRecording``: write ``event``, trying again while the server cannot be reached."""
        for tries in range(1, MAX_TRIES_PER_EVENT + 1):
            written, retry = await record_event(self.sink, event)
            if not retry:
                return written
            if tries == MAX_TRIES_PER_EVENT:
                break
            # Randomized, so that clients do not all come back at once after an outage.
            await self.clock.sleep(jitter(self.sleep_duration, RETRY_JITTER, self.rng))
        logger.error("unable to write event %s (retry limit exceeded)", event["metadata"]["name"])
        return None

    async def finish_series(self) -> None:
        """``finishSeries``: write each series quiet for 6 minutes once more, then forget it."""
        async with self._lock:
            for key, event in self.cache.finish(self.clock.now()):
                _, retry = await record_event(self.sink, event)
                if not retry:
                    self.cache.forget(key)

    async def refresh_series(self) -> None:
        """``refreshExistingEventSeries``: write every ongoing series again, so it does not expire."""
        async with self._lock:
            for key, event in self.cache.ongoing():
                written, retry = await record_event(self.sink, event)
                if not retry and written is not None:
                    self.cache.refreshed(key, written)


__all__ = [
    "API_GROUP",
    "API_VERSION",
    "FINISH_TIME",
    "REFRESH_TIME",
    "EventBroadcaster",
    "EventRecorder",
    "EventSeriesCache",
    "EventSink",
    "EventSinkImpl",
    "event_name",
    "record_event",
    "series_key",
    "series_patch",
]
