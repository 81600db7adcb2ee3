"""The daphne process of ``python -m bench ui``: the whole lab, plus a trace driver to switch on.

``python -m bench._uiserve --web HOST:PORT --api HOST:PORT`` runs ``manage.py runlab`` itself (the lab
on daphne's loop, exactly as in production) with one change: daphne serves ``application`` below,
which answers ``/bench/drive`` and ``/bench/events`` itself and sends everything else, untouched, to
``config.asgi.application``. The topology page, its websocket, the etcd panel's reads and the API
port are thus served by the real code; under load the events come from ``bench._tracedriver``
instead of a busy cluster, and for the lag behind live from the cluster itself (``bench._uilag``).

``/bench/drive`` (loopback only: this process is started by the benchmark on a free local port):

``POST`` ``{"cluster": "demo", "rate": 2000, "seconds": 600, "seed": 1}``
    start a ``Driver`` emitting a ``Workload`` into that cluster's trace bus from a task on the lab's
    loop (replacing one already running); answers its stats. ``seconds`` null: until stopped.
``GET``
    the driver's stats (``DriverStats.as_dict``), ``{"running": false, ...}`` before any drive.
``DELETE``
    stop the driver; answers its final stats.

The workload's revisions start after the store's current revision, so that they read like the
cluster's own; its keys are under namespace ``bench``, which the store does not hold (the etcd panel's
reads of them find nothing, or a revision not written yet).

``/bench/events`` (``GET`` only, loopback too) reads the cluster's trace recorder, on the lab's loop,
without adding an event to it:

``GET /bench/events?cluster=demo``
    ``{"cluster", "last_seq", "first_seq", "timing", "nodes", "clock_offset_ms"}``: the last seq the
    cluster's bus handed out, the oldest its recorder still holds, the cluster's timing profile and
    simulated nodes, and how far the cluster clock (which stamps ``ts``) is from ``time.time()``.
``GET /bench/events?cluster=demo&since=N``
    the same, plus ``"events"``: every recorded event after seq ``N``, each as ``[seq, ts, type, id,
    from, request]`` (``id`` and ``from`` null when the event has none; ``request`` is ``"GET /api"``
    for a ``request.received``, else null); 410 if some of them have already left the recorder.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qs

from bench._apiserve import raise_file_limit
from bench._tracedriver import Driver, Workload

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

DRIVE_PATH = "/bench/drive"
EVENTS_PATH = "/bench/events"


async def read_body(receive: Receive) -> bytes:
    body = b""
    while True:
        message = await receive()
        body += bytes(message.get("body", b""))
        if not message.get("more_body"):
            return body


async def answer_json(send: Send, status: int, answer: dict[str, Any]) -> None:
    payload = json.dumps(answer).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


class DriveEndpoint:
    """``/bench/drive``: start, read and stop the one trace driver of this process."""

    def __init__(self) -> None:
        self.driver: Driver | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = await read_body(receive)
        try:
            status, answer = await self.handle(scope["method"], body)
        except (LookupError, ValueError, TypeError) as error:
            status, answer = 400, {"error": f"{type(error).__name__}: {error}"}
        await answer_json(send, status, answer)

    async def handle(self, method: str, body: bytes) -> tuple[int, dict[str, Any]]:
        if method == "GET":
            return 200, self.stats()
        if method == "DELETE":
            if self.driver is not None:
                await self.driver.stop()
            return 200, self.stats()
        if method != "POST":
            return 405, {"error": f"{method} is not allowed: GET, POST or DELETE"}
        request = json.loads(body or b"{}")
        from controlplane.runtime import active_lab

        lab = active_lab()
        if lab is None:
            return 503, {"error": "the lab is not running yet"}
        cluster = lab.cluster(str(request.get("cluster", "demo")))
        if self.driver is not None:
            await self.driver.stop()
        seconds = request.get("seconds")
        workload = Workload(
            seed=int(request.get("seed", 1)), first_revision=await cluster.store.current_revision() + 1
        )
        self.driver = Driver(cluster.trace, workload, rate=float(request.get("rate", 2000)))
        self.driver.start(None if seconds is None else float(seconds))
        return 200, self.stats()

    def stats(self) -> dict[str, Any]:
        if self.driver is None:
            return {"running": False, "emitted": 0}
        return self.driver.stats().as_dict()


class EventsEndpoint:
    """``/bench/events``: what a cluster's trace recorder holds, read on the lab's loop."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await read_body(receive)
        if scope["method"] != "GET":
            await answer_json(send, 405, {"error": f"{scope['method']} is not allowed: GET"})
            return
        query = parse_qs(scope.get("query_string", b"").decode())
        try:
            status, answer = self.read(query.get("cluster", ["demo"])[0], query.get("since", [None])[0])
        except (LookupError, ValueError, TypeError) as error:
            status, answer = 400, {"error": f"{type(error).__name__}: {error}"}
        await answer_json(send, status, answer)

    def read(self, name: str, since: str | None) -> tuple[int, dict[str, Any]]:
        from controlplane.runtime import active_lab
        from controlplane.trace.recorder import TooOld

        lab = active_lab()
        if lab is None:
            return 503, {"error": "the lab is not running yet"}
        cluster = lab.cluster(name)
        bus = cluster.trace
        answer: dict[str, Any] = {
            "cluster": name,
            "last_seq": bus.last_seq,
            "first_seq": bus.recorder.first_seq,
            "timing": lab.config.timing.name,
            "nodes": lab.config.nodes,
            "clock_offset_ms": (lab.config.clock.now() - time.time()) * 1000,
        }
        if since is not None:
            try:
                events = bus.recorder.since(int(since))
            except TooOld as error:
                return 410, {**answer, "error": str(error)}
            answer["events"] = [compact(e) for e in events]
        return 200, answer


def compact(event: dict[str, Any]) -> list[Any]:
    """``[seq, ts, type, id, from, request]``: ``request`` is ``"METHOD path"`` for a ``request.received``."""
    request = f"{event.get('method')} {event.get('path')}" if event["type"] == "request.received" else None
    return [event["seq"], event["ts"], event["type"], event.get("id"), event.get("from"), request]


class BenchApplication:
    """``/bench/drive`` and ``/bench/events`` to the benchmark's endpoints, everything else to Kubelab's
    own ASGI application."""

    def __init__(self) -> None:
        self.drive = DriveEndpoint()
        self.events = EventsEndpoint()
        self.kubelab: Any = None

    def load(self) -> None:
        """Import ``config.asgi`` (after Django is set up, before daphne serves)."""
        from config.asgi import application as kubelab

        self.kubelab = kubelab

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == DRIVE_PATH:
            await self.drive(scope, receive, send)
            return
        if scope["type"] == "http" and scope["path"] == EVENTS_PATH:
            await self.events(scope, receive, send)
            return
        if self.kubelab is None:
            self.load()
        await self.kubelab(scope, receive, send)


application = BenchApplication()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench._uiserve")
    parser.add_argument("--web", required=True, help="HOST:PORT of the plain HTTP port")
    parser.add_argument("--api", required=True, help="HOST:PORT of the HTTPS API port")
    options = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    raise_file_limit()

    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    # runlab serves channels' default application: ours, imported by its module name (this file runs
    # as __main__), which is the instance daphne will look up.
    import bench._uiserve as served

    served.application.load()
    settings.ASGI_APPLICATION = "bench._uiserve.application"
    call_command("runlab", "--web", options.web, "--api", options.api)


if __name__ == "__main__":
    main()
