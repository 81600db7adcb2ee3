"""Priority-and-fairness filter: whether the server has room for this request now, or it may wait.

The stage between impersonation and authorization (upstream ``DefaultBuildHandlerChain``). It is an
async context manager around the rest of the pipeline: a request enters once it holds its seat(s),
and gives them back when its handler finishes. What it makes is the pipeline's ``Dispatched`` value,
whose ``send`` adds flow control's response headers::

    async with server.flow_control.admit(impersonated, send, report) as dispatched:
        ...authorization, then the handler...

Two implementations, chosen per cluster (``FlowControlOptions``), as kube-apiserver chooses with
``--enable-priority-and-fairness``:

- ``PriorityAndFairness`` (the default): API Priority and Fairness, whose pure parts are in
  ``controlplane/apiserver/flowcontrol/`` (read its ``__init__`` first). A request is classified,
  queued in its priority level and dispatched by fair queuing; a full queue answers 429 with
  ``Retry-After``. Responses carry ``X-Kubernetes-PF-FlowSchema-UID`` and
  ``X-Kubernetes-PF-PriorityLevel-UID``. A watch holds its seat only until it is set up (its response
  headers go out once the watch cache has registered it, upstream's ``WatchInitialized``);
  other long-running requests (logs, exec) are not limited. The configuration is read from the API
  server's watch caches of FlowSchemas and PriorityLevelConfigurations at each request, so an edit
  (``kubectl edit prioritylevelconfiguration``) applies to the next one.
- ``MaxInFlight``: ``--max-requests-inflight`` / ``--max-mutating-requests-inflight`` (see
  ``flowcontrol/maxinflight.py``). Both limits 0 is no flow control at all.

**The lab's limits.** Upstream's total is 600 seats (400 + 200): a Go server runs that many handlers
in parallel on many cores. A lab's API server is one Python process whose event loop runs one handler
at a time; its concurrency is only requests overlapping while they await the store or the network.
More seats than that only lets more requests share the loop (each one slower) before anyone waits in
a queue, where fairness applies. The lab default is a tenth of upstream's, 40 + 20 = 60, which shares
out as upstream's levels do (global-default 5 seats, workload-high 10, system 8, node-high 10,
workload-low 25, leader-election 3, catch-all 2) and leaves the in-process components well within
their levels at classroom load. ``KUBELAB_MAX_REQUESTS_INFLIGHT``, ``KUBELAB_MAX_MUTATING_REQUESTS_INFLIGHT``
and ``KUBELAB_ENABLE_PRIORITY_AND_FAIRNESS`` change it (docs/configuration.md).

What flow control decided goes on the trace twice: the ``flowcontrol`` stage of ``request.stage``
(in words), and a ``flowcontrol.decision`` event with the numbers (FlowSchema, priority level, seats
in use, queue length, how long the request waited, why it was refused). ``snapshot()`` gives the
current numbers to a metrics collector.

Rejections are answered as upstream's ``tooManyRequests`` writes them, with Go's ``http.Error``: a
line of plain text, ``Too many requests, please try again later.``, not a Status object (client-go
turns it into a TooManyRequests error itself).
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import re
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from types import TracebackType
from typing import Any

from controlplane.api.resources import ResourceRegistry
from controlplane.apiserver import errors
from controlplane.apiserver.flowcontrol import queueset
from controlplane.apiserver.flowcontrol.controller import (
    READ_ONLY_VERBS,
    APFController,
    Classification,
    FlowSchemaSnapshot,
    PriorityLevel,
    PriorityLevelSnapshot,
)
from controlplane.apiserver.flowcontrol.droppedrequests import DroppedRequests
from controlplane.apiserver.flowcontrol.ensurer import Ensurer
from controlplane.apiserver.flowcontrol.maxinflight import RETRY_AFTER, MaxInFlight
from controlplane.apiserver.http import Message, Request, Send
from controlplane.apiserver.pipeline import NO_REPORT, Dispatched, Impersonated, Reporter
from controlplane.apiserver.registry import Registry
from controlplane.apiserver.watchcache import WatchCache
from controlplane.identity import SYSTEM_MASTERS
from controlplane.tasks import cancel_and_wait
from controlplane.trace import NULL_SINK, TraceSink, nodes

#: Upstream's response headers naming the matched FlowSchema and priority level, by UID (names would
#: tell a refused client which level it is in).
FLOW_SCHEMA_UID_HEADER = "X-Kubernetes-PF-FlowSchema-UID"
PRIORITY_LEVEL_UID_HEADER = "X-Kubernetes-PF-PriorityLevel-UID"

#: How long a request may wait in a queue without a deadline of its own (upstream: a quarter of the
#: 60 s request timeout), and at most (upstream's hard limit).
DEFAULT_WAIT_LIMIT = 15.0
MAX_WAIT_LIMIT = 60.0

#: Requests upstream's ``BasicLongRunningRequestCheck`` calls long-running: never limited (a watch is,
#: until it is set up).
LONG_RUNNING_VERBS = frozenset({"watch", "proxy"})
LONG_RUNNING_SUBRESOURCES = frozenset({"attach", "exec", "proxy", "log", "portforward"})

#: Encoded response headers a filter remembers at most (one pair per FlowSchema and priority level).
HEADER_CACHE_SIZE = 1024

FLOW_SCHEMAS = "/registry/flowschemas"
PRIORITY_LEVELS = "/registry/prioritylevelconfigurations"


@dataclass(frozen=True, slots=True)
class FlowControlOptions:
    """A cluster's flow control, in kube-apiserver's flags (defaults: the lab's, see above)."""

    #: ``--enable-priority-and-fairness``: APF, or max-in-flight if False.
    enable_priority_and_fairness: bool = True
    #: ``--max-requests-inflight`` (upstream 400) and ``--max-mutating-requests-inflight`` (200): the
    #: limits of max-in-flight, whose sum is APF's total concurrency limit.
    max_requests_inflight: int = 40
    max_mutating_requests_inflight: int = 20

    def __post_init__(self) -> None:
        if self.max_requests_inflight < 0 or self.max_mutating_requests_inflight < 0:
            raise ValueError("max-requests-inflight and max-mutating-requests-inflight must be >= 0")
        if self.enable_priority_and_fairness and self.server_concurrency_limit <= 0:
            # upstream's RecommendedOptions.ApplyTo refuses it the same way
            raise ValueError(
                f"invalid configuration: MaxRequestsInFlight={self.max_requests_inflight} and "
                f"MaxMutatingRequestsInFlight={self.max_mutating_requests_inflight}; they must add up to "
                "something positive"
            )

    @property
    def server_concurrency_limit(self) -> int:
        return self.max_requests_inflight + self.max_mutating_requests_inflight


@dataclass(frozen=True, slots=True)
class FlowControlSnapshot:
    """Flow control's state now, read-only, for metrics.

    ``mode`` is ``priority-and-fairness`` or ``max-inflight``. Under max-in-flight, the two
    ``priority_levels`` are ``readOnly`` and ``mutating`` (upstream's ``request_kind``), without
    queues, and there are no FlowSchemas.
    """

    mode: str
    server_concurrency_limit: int
    priority_levels: tuple[PriorityLevelSnapshot, ...]
    flow_schemas: tuple[FlowSchemaSnapshot, ...]


def is_long_running(request: Request) -> bool:
    info = request.info
    return info.verb in LONG_RUNNING_VERBS or (
        info.is_resource_request and info.subresource in LONG_RUNNING_SUBRESOURCES
    )


def too_many_requests(retry_after: int, headers: Mapping[str, str] | None = None) -> errors.PlainTextError:
    """Upstream's ``tooManyRequests``: 429, ``Retry-After``, a plain-text line."""
    return errors.PlainTextError(
        429,
        "TooManyRequests",
        "Too many requests, please try again later.",
        headers={**(headers or {}), "Retry-After": str(retry_after)},
    )


_DURATION = re.compile(r"^(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m(?!s))?(?:(\d+(?:\.\d+)?)s)?$")


def wait_limit(timeout: str | None) -> float:
    """How long a request may queue: a quarter of its ``?timeout=`` (a Go duration), else 15 s; <= 60 s."""
    if timeout:
        match = _DURATION.match(timeout.strip())
        if match and any(match.groups()):
            hours, minutes, seconds = (float(g) if g else 0.0 for g in match.groups())
            return min(MAX_WAIT_LIMIT, (hours * 3600 + minutes * 60 + seconds) / 4)
    return DEFAULT_WAIT_LIMIT


def encode_headers(headers: Mapping[str, str]) -> list[tuple[bytes, bytes]]:
    """``headers`` as ASGI's raw header pairs (lower-case names)."""
    return [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]


def adding_headers(
    send: Send, headers: Mapping[str, str], on_start: Callable[[], None] | None = None
) -> Send:
    """``send`` with ``headers`` added to the response start (and ``on_start`` called when it goes)."""
    return adding_encoded_headers(send, encode_headers(headers), on_start)


def adding_encoded_headers(
    send: Send, extra: list[tuple[bytes, bytes]], on_start: Callable[[], None] | None = None
) -> Send:
    """``adding_headers`` for headers already encoded (``encode_headers``)."""

    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), *extra]}
            if on_start is not None:
                on_start()
        await send(message)

    return wrapped


class FlowControl(abc.ABC):
    """The flow-control stage of one API server."""

    def __init__(self, *, trace: TraceSink = NULL_SINK, cluster: str = "") -> None:
        self.trace = trace
        self.cluster = cluster

    async def start(self) -> None:  # noqa: B027 (optional hook)
        """Called once the API server's caches are filled, before it serves."""

    async def stop(self) -> None:  # noqa: B027 (optional hook)
        """Called as the API server stops."""

    @abc.abstractmethod
    def admit(
        self, impersonated: Impersonated, send: Send, report: Reporter
    ) -> contextlib.AbstractAsyncContextManager[Dispatched]:
        """The flow-control stage: wait for room for the request (or raise 429); the body runs
        holding it, with the ``Dispatched`` request."""

    @abc.abstractmethod
    def snapshot(self) -> FlowControlSnapshot: ...

    def _emit(self, impersonated: Impersonated, **fields: Any) -> None:
        if self.trace.enabled:
            self.trace.emit(
                "flowcontrol.decision",
                cluster=self.cluster,
                id=impersonated.request.audit_id,
                **{"from": impersonated.source, "to": nodes.APISERVER},
                **fields,
            )


def _expire(future: asyncio.Future[None]) -> None:
    """A queued request's wait limit has passed: unless it was dispatched meanwhile, it times out."""
    if not future.done():
        future.set_exception(TimeoutError())


@dataclass(eq=False, slots=True)
class _Waiter:
    future: asyncio.Future[None]
    classified: Classification
    level: PriorityLevel


def _mark(cache: WatchCache | None) -> tuple[int, int, int] | None:
    """What changes whenever ``cache`` applies an event or re-lists: its objects' map (a re-list
    makes a new one), the revision of its last event, and its size."""
    if cache is None:
        return None
    return (id(cache.objects), cache.events[-1].revision if cache.events else -1, len(cache.objects))


class PriorityAndFairness(FlowControl):
    """API Priority and Fairness over the API server's FlowSchemas and PriorityLevelConfigurations."""

    def __init__(
        self,
        options: FlowControlOptions,
        *,
        caches: Mapping[str, WatchCache],
        registries: Mapping[tuple[str, str, str], Registry],
        types: ResourceRegistry,
        trace: TraceSink = NULL_SINK,
        cluster: str = "",
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(trace=trace, cluster=cluster)
        self.options = options
        self.caches = caches
        self.types = types
        self.clock = clock
        self.wall_clock = wall_clock
        self.controller = APFController(options.server_concurrency_limit, now=clock())
        self.dropped = DroppedRequests()
        fs_registry = registries.get(("flowcontrol.apiserver.k8s.io", "v1", "flowschemas"))
        pl_registry = registries.get(("flowcontrol.apiserver.k8s.io", "v1", "prioritylevelconfigurations"))
        self.ensurer = Ensurer(fs_registry, pl_registry) if fs_registry and pl_registry else None
        self._seen: tuple[Any, ...] | None = None
        self._dirty = asyncio.Event()
        self._maintainer: asyncio.Task[None] | None = None
        self._encoded_headers: dict[tuple[str, str], tuple[dict[str, str], list[tuple[bytes, bytes]]]] = {}

    # -- configuration ---------------------------------------------------------------------------

    def _objects(self, prefix: str) -> dict[str, dict[str, Any]]:
        cache = self.caches.get(prefix)
        if cache is None:
            return {}
        return {c.obj["metadata"]["name"]: c.obj for c in cache.objects.values()}

    def _fingerprint(self) -> tuple[Any, ...]:
        """Changes whenever either cache applies an event or re-lists (cheap: no object is read).

        (It is taken for every request, so it does without a loop over the two caches.)
        """
        return (_mark(self.caches.get(FLOW_SCHEMAS)), _mark(self.caches.get(PRIORITY_LEVELS)))

    def refresh(self) -> None:
        """Re-digest the objects if the caches changed since the last look (``kubectl edit`` applies)."""
        fingerprint = self._fingerprint()
        if fingerprint == self._seen:
            return
        self._seen = fingerprint
        woken = self.controller.apply(
            self._objects(FLOW_SCHEMAS).values(), self._objects(PRIORITY_LEVELS).values(), self.clock()
        )
        self._wake(woken)
        self._dirty.set()

    async def start(self) -> None:
        await self._maintain_once()
        self.refresh()
        self._maintainer = asyncio.create_task(self._maintain(), name=f"apf-config-{self.cluster}")

    async def stop(self) -> None:
        if self._maintainer is not None:
            await cancel_and_wait(self._maintainer)
            self._maintainer = None

    async def _maintain(self) -> None:
        """Each time the objects changed: restore the bootstrap ones and write Dangling conditions."""
        while True:
            await self._dirty.wait()
            self._dirty.clear()
            await self._maintain_once()

    async def _maintain_once(self) -> None:
        if self.ensurer is None:
            return
        levels, schemas = await self.ensurer.ensure(
            self._objects(PRIORITY_LEVELS), self._objects(FLOW_SCHEMAS)
        )
        # Let each cache see what ensure wrote to it: up to its own last write there, not the store's
        # newest revision, which may be another prefix's (or, in a shared etcd, another cluster's)
        # and would never reach this watch, since etcd tells a watch of no revision outside its prefix.
        for prefix, written in ((FLOW_SCHEMAS, schemas), (PRIORITY_LEVELS, levels)):
            cache = self.caches.get(prefix)
            if cache is not None and written:
                await cache.wait_for(written, 5.0)
        names = set(self._objects(PRIORITY_LEVELS))
        await self.ensurer.update_status(self._objects(FLOW_SCHEMAS), names, datetime.now(UTC))

    # -- requests --------------------------------------------------------------------------------

    def _object_count(self, request: Request) -> int | None:
        info = request.info
        if info.verb != "list":
            return None
        rtype = self.types.lookup(info.api_group, info.api_version, info.resource)
        if rtype is None:
            return None
        cache = self.caches.get(rtype.cache_key or "")
        return len(cache.objects) if cache is not None else None

    def _wake(self, dispatched: list[queueset.Request]) -> None:
        for request in dispatched:
            waiter = request.ticket
            if isinstance(waiter, _Waiter):
                self.controller.note(waiter.classified, waiter.level, request)
                if not waiter.future.done():
                    waiter.future.set_result(None)

    def admit(self, impersonated: Impersonated, send: Send, report: Reporter) -> _Admission:
        return _Admission(self, impersonated, send, report)

    def _headers(self, classified: Classification) -> tuple[dict[str, str], list[tuple[bytes, bytes]]]:
        """The response headers naming ``classified``'s FlowSchema and priority level, and the same
        encoded, made once per pair of UIDs. Both are shared by every request of the pair, so neither
        is ever changed: a refusal copies them (``too_many_requests``, ``_Admission.__aexit__``), the
        response start adds the encoded ones to a new list (``adding_encoded_headers``)."""
        key = (classified.flow_schema_uid, classified.priority_level_uid)
        known = self._encoded_headers.get(key)
        if known is None:
            if len(self._encoded_headers) >= HEADER_CACHE_SIZE:
                self._encoded_headers.clear()
            headers = {FLOW_SCHEMA_UID_HEADER: key[0], PRIORITY_LEVEL_UID_HEADER: key[1]}
            known = self._encoded_headers[key] = (headers, encode_headers(headers))
        return known

    async def _enter(self, admission: _Admission) -> Dispatched:
        """Classify, queue and dispatch the request (or refuse it with 429): the ``admit`` body's
        first half; ``_Admission.__aexit__`` gives the seats back."""
        impersonated, send, report = admission.impersonated, admission.send, admission.report
        request = impersonated.request
        info = request.info
        user = impersonated.acting
        if is_long_running(request) and info.verb != "watch":
            report("flowcontrol", "pass", "long-running request: not limited")
            return impersonated.dispatched(send)
        self.refresh()
        classified, level = self.controller.classify_request(user, info)
        headers, encoded_headers = self._headers(classified)
        limit = request.query.get("limit")
        seats = self.controller.seats(
            level, info.verb, self._object_count(request), int(limit) if limit and limit.isdigit() else None
        )
        arrived = self.clock()
        queued = self.controller.start(classified, level, seats, arrived)
        if queued.state is queueset.State.WAITING:
            await self._wait(impersonated, queued, classified, level)
        if queued.state is queueset.State.REJECTED or report is not NO_REPORT or self.trace.enabled:
            # A refusal, the trace and the stage's detail say how long it waited and why; the usual
            # request (dispatched, nobody watching) needs none of it, only its seat and its headers.
            self._conclude(impersonated, report, classified, level, queued, round(self.clock() - arrived, 6))

        admission.headers = headers
        admission.seat = (level, queued)
        # A watch gives its seat back once it is set up: when its response headers go out.
        return impersonated.dispatched(
            adding_encoded_headers(send, encoded_headers, admission.release if info.verb == "watch" else None)
        )

    def _conclude(
        self,
        impersonated: Impersonated,
        report: Reporter,
        classified: Classification,
        level: PriorityLevel,
        queued: queueset.Request,
        waited: float,
    ) -> None:
        """Say how the request's wait ended (trace, stage detail); if it was rejected, raise the 429."""
        where = f"flowschema {classified.flow_schema}, priority level {level.name}"
        if queued.state is queueset.State.REJECTED:
            self.dropped.record(level.name, self.wall_clock())
            retry_after = self.dropped.retry_after(level.name)
            self._decision(
                impersonated,
                "rejected",
                classified,
                level,
                queued,
                waited,
                reason=queued.reason,
                retry_after=retry_after,
            )
            report("flowcontrol", "deny", f"{where}: rejected ({queued.reason}), Retry-After {retry_after}s")
            raise too_many_requests(retry_after, self._headers(classified)[0])

        self._decision(impersonated, "dispatched", classified, level, queued, waited)
        detail = (
            f"{where}: exempt"
            if classified.exempt
            else (
                f"{where}: dispatched, {level.queueset.seats_in_use}/{level.concurrency_limit} seats in use"
                + (f", waited {waited:.3f}s" if waited else "")
            )
        )
        report("flowcontrol", "pass", detail)

    async def _wait(
        self,
        impersonated: Impersonated,
        queued: queueset.Request,
        classified: Classification,
        level: PriorityLevel,
    ) -> None:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        queued.ticket = _Waiter(future, classified, level)
        if self.trace.enabled:
            self._decision(impersonated, "queued", classified, level, queued, 0.0)
        # The wait limit fails the future itself (a dispatch that came first has resolved it, and
        # then wins): cheaper than ``asyncio.timeout``, which cancels and un-cancels the task.
        timeout = impersonated.request.query.get("timeout")
        timer = loop.call_later(wait_limit(timeout), _expire, future)
        try:
            await future
        except TimeoutError:
            if queued.state is queueset.State.WAITING:
                self._wake(level.queueset.cancel(queued, queueset.TIME_OUT, self.clock()))
                self.controller.note(classified, level, queued)
        except asyncio.CancelledError:  # the client went away while it waited
            if queued.state is queueset.State.WAITING:
                self._wake(level.queueset.cancel(queued, queueset.CANCELLED, self.clock()))
                self.controller.note(classified, level, queued)
            elif queued.state is queueset.State.EXECUTING:
                self._wake(level.queueset.finish(queued, self.clock()))
            raise
        finally:
            timer.cancel()

    def _decision(
        self,
        impersonated: Impersonated,
        outcome: str,
        classified: Classification,
        level: PriorityLevel,
        queued: queueset.Request,
        waited: float,
        **extra: Any,
    ) -> None:
        if not self.trace.enabled:
            return
        fields: dict[str, Any] = {
            "outcome": outcome,
            "flowschema": classified.flow_schema,
            "priority_level": level.name,
            "flow": classified.distinguisher,
            "seats": queued.seats,
            "seats_in_use": level.queueset.seats_in_use,
            "concurrency_limit": level.concurrency_limit,
            "waiting": level.queueset.waiting,
            "waited": waited,
            **extra,
        }
        if queued.queue is not None:
            fields["queue"] = queued.queue.index
            fields["queue_length"] = len(queued.queue.waiting)
        self._emit(impersonated, **fields)

    def snapshot(self) -> FlowControlSnapshot:
        levels, schemas = self.controller.snapshot()
        return FlowControlSnapshot(
            "priority-and-fairness", self.options.server_concurrency_limit, tuple(levels), tuple(schemas)
        )


class _Admission:
    """``PriorityAndFairness.admit``'s context manager: holds the request's seats while its body runs.

    (A class rather than an ``asynccontextmanager`` generator: it runs for every request, and a
    generator costs a frame, an async generator and its finalizer hooks each time.)
    """

    __slots__ = ("_flow_control", "headers", "impersonated", "report", "seat", "send")

    def __init__(
        self, flow_control: PriorityAndFairness, impersonated: Impersonated, send: Send, report: Reporter
    ) -> None:
        self._flow_control = flow_control
        self.impersonated = impersonated
        self.send = send
        self.report = report
        #: Set once the request is dispatched: its FlowSchema's headers, and its level and seat.
        self.headers: dict[str, str] | None = None
        self.seat: tuple[PriorityLevel, queueset.Request] | None = None

    async def __aenter__(self) -> Dispatched:
        return await self._flow_control._enter(self)

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, _: TracebackType | None
    ) -> None:
        if isinstance(error, errors.StatusError) and self.headers is not None:
            for key, value in self.headers.items():
                error.headers.setdefault(key, value)
        self.release()

    def release(self) -> None:
        """Give the seats back (once: a watch does when its headers go out, then again at its end)."""
        seat = self.seat
        if seat is not None:
            self.seat = None
            level, queued = seat
            flow_control = self._flow_control
            flow_control._wake(level.queueset.finish(queued, flow_control.clock()))


class MaxInFlightFilter(FlowControl):
    """``--enable-priority-and-fairness=false``: two counters (``flowcontrol/maxinflight.py``)."""

    def __init__(
        self, options: FlowControlOptions, *, trace: TraceSink = NULL_SINK, cluster: str = ""
    ) -> None:
        super().__init__(trace=trace, cluster=cluster)
        self.options = options
        self.state = MaxInFlight.create(options.max_requests_inflight, options.max_mutating_requests_inflight)

    @contextlib.asynccontextmanager
    async def admit(
        self, impersonated: Impersonated, send: Send, report: Reporter
    ) -> AsyncIterator[Dispatched]:
        request = impersonated.request
        info = request.info
        if not self.state.enabled or is_long_running(request):
            report("flowcontrol", "pass", "max-in-flight: not limited")
            yield impersonated.dispatched(send)
            return
        mutating = info.verb not in READ_ONLY_VERBS
        kind = "mutating" if mutating else "readOnly"
        counter = self.state.limit_for(mutating)
        if not counter.try_acquire():
            if SYSTEM_MASTERS in impersonated.acting.groups:
                # upstream lets system:masters through uncounted: a super-user always gets an answer
                counter.rejected -= 1
                self.state.privileged += 1
                report(
                    "flowcontrol", "pass", f"max-in-flight: {kind} limit reached, system:masters let through"
                )
                yield impersonated.dispatched(send)
                return
            self._emit(
                impersonated,
                outcome="rejected",
                mode="max-inflight",
                priority_level=kind,
                seats_in_use=counter.in_flight,
                concurrency_limit=counter.limit,
                reason=queueset.CONCURRENCY_LIMIT,
                retry_after=RETRY_AFTER,
            )
            report(
                "flowcontrol",
                "deny",
                f"max-in-flight: {counter.in_flight}/{counter.limit} {kind} requests in flight",
            )
            raise too_many_requests(RETRY_AFTER)
        self._emit(
            impersonated,
            outcome="dispatched",
            mode="max-inflight",
            priority_level=kind,
            seats_in_use=counter.in_flight,
            concurrency_limit=counter.limit,
        )
        report(
            "flowcontrol",
            "pass",
            f"max-in-flight: {counter.in_flight}/{counter.limit or 'unlimited'} {kind} requests in flight",
        )
        try:
            yield impersonated.dispatched(send)
        finally:
            counter.release()

    def snapshot(self) -> FlowControlSnapshot:
        def level(name: str, counter: Any) -> PriorityLevelSnapshot:
            return PriorityLevelSnapshot(
                name=name,
                exempt=counter.limit == 0,
                concurrency_limit=counter.limit,
                seats_in_use=counter.in_flight,
                executing=counter.in_flight,
                waiting=0,
                queue_lengths=(),
                dispatched=counter.served,
                rejected={queueset.CONCURRENCY_LIMIT: counter.rejected} if counter.rejected else {},
            )

        return FlowControlSnapshot(
            "max-inflight",
            self.options.server_concurrency_limit,
            (level("readOnly", self.state.read_only), level("mutating", self.state.mutating)),
            (),
        )


def build(
    options: FlowControlOptions,
    *,
    caches: Mapping[str, WatchCache],
    registries: Mapping[tuple[str, str, str], Registry],
    types: ResourceRegistry,
    trace: TraceSink = NULL_SINK,
    cluster: str = "",
) -> FlowControl:
    """The flow control ``options`` ask for."""
    if options.enable_priority_and_fairness:
        return PriorityAndFairness(
            options, caches=caches, registries=registries, types=types, trace=trace, cluster=cluster
        )
    return MaxInFlightFilter(options, trace=trace, cluster=cluster)
