"""The load inside the served lab of ``python -m bench trace``: events into a cluster's real ``TraceBus``.

The benchmark measures the trace stream as the lab serves it: daphne, Channels, the
``TraceConsumer``, the framing, the bus. What it needs on top is a cluster making a steady 2000 events
a second, which a lab's own work does not (and whose rate it could not set). So the daphne process of
the benchmark (``bench._apiserve``, which is ``manage.py runlab``) also serves, over plain HTTP on its
web port, a small control for a **driver**: a task on the lab's event loop that calls
``bus.emit(type, **fields)`` on the cluster's bus at the requested rate, with the events of
``bench._traceload.EventSource`` (a store transaction and its watch events, schema-valid). The bus
stamps them as it stamps every emitter's: ``seq``, and ``ts`` from the cluster clock (the wall clock:
the lab's clock is not scaled), which the clients compare with their own clock as a frame arrives.

``POST /bench/trace/drive?cluster=demo&rate=2000``
    start (or restart) driving; the answer says so. Before it starts, the first events of the cycle
    are stamped and checked with ``schema.validate(strict=True)``: a driver that drifted from the
    schema answers 500 with the problems instead of running.
    With ``&profile=FILE&profile_seconds=S``, the event loop's thread runs under ``cProfile`` for
    the first ``S`` seconds of driving, and its statistics go to ``FILE`` (``python -m pstats FILE``):
    the sockets' work under load, without the lab's start and stop, and written even while the lab
    is too busy to answer HTTP.
``POST /bench/trace/stop``, ``GET /bench/trace/status``
    stop driving / say how it went: events emitted (``bus.emit`` calls while someone subscribed; the
    bus makes nothing while nobody does), seconds, the bus's last seq and subscribers, and how late
    the driver's ticks woke (``late_ms``: the event loop's lag, which a saturated server shows first).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qs

from bench._traceload import EventSource, Schedule, stamp

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

PREFIX = "/bench/trace/"
#: Seconds between the driver's wake-ups (each makes the events due since the last one).
TICK = 0.005


class Driver:
    """Emits ``rate`` events a second into ``bus`` until stopped (see the module's docstring)."""

    def __init__(self, bus: Any, rate: float) -> None:
        self.bus = bus
        self.rate = rate
        self.source = EventSource(bus.cluster)
        self.emitted = 0
        self.made = 0
        self.started = 0.0
        self.stopped: float | None = None
        self.late_max = 0.0
        self.late_total = 0.0
        self.ticks = 0
        self._task: asyncio.Task[None] | None = None
        self._profiler: asyncio.Task[None] | None = None

    def problems(self) -> list[str]:
        """What ``schema.validate(strict=True)`` finds wrong with one cycle of the events, stamped."""
        from controlplane.trace.schema import validate

        found: list[str] = []
        for i in range(8):
            kind, fields = EventSource.event(i)
            event = stamp(self.bus.cluster, i + 1, 1.7e9, kind, fields)
            found.extend(f"{kind}: {p}" for p in validate(event, strict=True))
        return found

    def start(self, profile: str | None = None, profile_seconds: float = 10.0) -> None:
        loop = asyncio.get_running_loop()
        self.started = loop.time()
        self._task = loop.create_task(self._run(Schedule(self.rate, self.started)), name="bench trace driver")
        if profile:
            self._profiler = loop.create_task(
                self._profile(profile, profile_seconds), name="bench trace profile"
            )

    @staticmethod
    async def _profile(path: str, seconds: float) -> None:
        """cProfile the event loop's thread (every task: the sockets, the bus, daphne) for ``seconds``."""
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
        try:
            await asyncio.sleep(seconds)
        finally:
            profiler.disable()
            profiler.dump_stats(path)

    async def _run(self, schedule: Schedule) -> None:
        loop = asyncio.get_running_loop()
        emit = self.bus.emit
        source = self.source
        wake = loop.time() + TICK
        while True:
            await asyncio.sleep(max(0.0, wake - loop.time()))
            now = loop.time()
            late = max(0.0, now - wake)
            self.late_max = max(self.late_max, late)
            self.late_total += late
            self.ticks += 1
            wake = now + TICK
            before = self.bus.last_seq
            for _ in range(schedule.due(now)):
                kind, fields = source.next()
                emit(kind, **fields)
            self.emitted = source.made
            self.made += self.bus.last_seq - before

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            self.stopped = asyncio.get_running_loop().time()

    def status(self) -> dict[str, Any]:
        end = self.stopped if self.stopped is not None else asyncio.get_running_loop().time()
        seconds = end - self.started
        return {
            "cluster": self.bus.cluster,
            "driving": self._task is not None,
            "rate": self.rate,
            "seconds": round(seconds, 3),
            "emitted": self.emitted,
            # Events the bus made (it makes none while nobody subscribes).
            "made": self.made,
            "made_per_s": round(self.made / seconds, 1) if seconds > 0 else None,
            "last_seq": self.bus.last_seq,
            "subscribers": self.bus.subscribers,
            "late_ms": {
                "max": round(self.late_max * 1000, 3),
                "mean": round(self.late_total / self.ticks * 1000, 3) if self.ticks else None,
            },
        }


class DriverControl:
    """The ASGI handler of ``/bench/trace/...`` (one driver at a time)."""

    def __init__(self) -> None:
        self.driver: Driver | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        action = scope["path"][len(PREFIX) :].strip("/")
        query = {k: v[-1] for k, v in parse_qs(scope.get("query_string", b"").decode()).items()}
        status, body = await self.handle(scope["method"], action, query)
        payload = json.dumps(body).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": payload})

    async def handle(self, method: str, action: str, query: dict[str, str]) -> tuple[int, dict[str, Any]]:
        if action == "status" and method == "GET":
            if self.driver is None:
                return 404, {"error": "not driving"}
            return 200, self.driver.status()
        if action == "stop" and method == "POST":
            if self.driver is None:
                return 404, {"error": "not driving"}
            await self.driver.stop()
            return 200, self.driver.status()
        if action == "drive" and method == "POST":
            return await self.drive(
                query.get("cluster", "demo"),
                float(query.get("rate", "2000")),
                query.get("profile"),
                float(query.get("profile_seconds", "10")),
            )
        return 404, {"error": f"no action {method} {action!r}: POST drive or stop, GET status"}

    async def drive(
        self, cluster: str, rate: float, profile: str | None = None, profile_seconds: float = 10.0
    ) -> tuple[int, dict[str, Any]]:
        from controlplane.runtime import active_lab
        from controlplane.store.errors import UnknownCluster

        lab = active_lab()
        if lab is None:
            return 503, {"error": "the lab is not running"}
        try:
            bus = lab.cluster(cluster).trace
        except UnknownCluster:
            return 404, {"error": f"there is no cluster {cluster!r}"}
        if self.driver is not None:
            await self.driver.stop()
        driver = Driver(bus, rate)
        problems = driver.problems()
        if problems:
            return 500, {"error": "the driver's events do not fit the schema", "problems": problems}
        self.driver = driver
        driver.start(profile, profile_seconds)
        return 200, driver.status()


__all__ = ["PREFIX", "Driver", "DriverControl"]
