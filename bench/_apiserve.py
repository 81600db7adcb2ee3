"""The daphne process of ``python -m bench api`` (and ``trace``): the whole lab, plus handlers beside it.

``python -m bench._apiserve --web HOST:PORT --api HOST:PORT --raw-dir DIR`` runs ``manage.py runlab``
itself (so the lab is started on daphne's loop exactly as in production, its API port speaking HTTPS
with the lab's serving certificate), with one change: daphne serves ``application`` below instead of
``config.asgi.application``. It sends ``/raw/...`` to ``RawHandlers`` and everything else, untouched,
to ``config.asgi.application``. The raw handlers and the API server thus share one daphne, one TLS
listener, one process and one event loop: the only difference between them is the work the API does.

The raw handlers answer with bytes the benchmark captured from the real API beforehand, written to
``--raw-dir`` as ``NAME.body`` (the response body) and ``NAME.headers.json`` (the response's headers,
as ``[[name, value], ...]``):

``GET /raw/NAME``
    the captured response, status 200, the same headers and body (``get``: one pod, ``list``: the
    list of 1000 pods);
``GET /raw/stream/NAME``
    a chunked 200 response sending the lines of ``NAME.body`` one ASGI message each, as the watch
    handler sends one event per message, then ending the stream.

Files are read on first use and kept in memory (the benchmark writes them before any raw request).

``/bench/trace/...`` (plain HTTP on the web port) controls the trace benchmark's driver, a task that
emits events into a cluster's trace bus at a set rate (``bench._tracedrive``).
The data directory comes from ``KUBELAB_DATA_DIR``, as for ``manage.py``.

Profiling: with ``KUBELAB_BENCH_PROFILE=FILE`` in its environment (``python -m bench api`` passes its
own through), the process runs under ``cProfile`` and writes its statistics to ``FILE`` as it stops
(read them with ``python -m pstats FILE``). cProfile slows Python down, function calls most of
all: use it to see where the time goes, not for the numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

#: Where the raw handlers find their captured responses.
RAW_DIR_ENV = "KUBELAB_BENCH_RAW_DIR"
#: Where to write the process's cProfile statistics as it stops (unset: no profiling).
PROFILE_ENV = "KUBELAB_BENCH_PROFILE"
RAW_PREFIX = "/raw/"
#: The trace benchmark's driver control (``bench._tracedrive.PREFIX``).
TRACE_PREFIX = "/bench/trace/"


class RawHandlers:
    """The comparison: an ASGI handler that only sends bytes it already has."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._responses: dict[str, tuple[list[tuple[bytes, bytes]], bytes]] = {}
        self._streams: dict[str, tuple[list[tuple[bytes, bytes]], list[bytes]]] = {}

    def _load(self, name: str) -> tuple[list[tuple[bytes, bytes]], bytes]:
        cached = self._responses.get(name)
        if cached is None:
            body = (self.directory / f"{name}.body").read_bytes()
            raw_headers = json.loads((self.directory / f"{name}.headers.json").read_text())
            headers = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in raw_headers]
            cached = self._responses[name] = (headers, body)
        return cached

    def _load_stream(self, name: str) -> tuple[list[tuple[bytes, bytes]], list[bytes]]:
        cached = self._streams.get(name)
        if cached is None:
            headers, body = self._load(name)
            # A chunked response: no content-length, as the watch handler sends none.
            headers = [(k, v) for k, v in headers if k != b"content-length"]
            cached = self._streams[name] = (headers, body.splitlines(keepends=True))
        return cached

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        name = scope["path"][len(RAW_PREFIX) :]
        try:
            if name.startswith("stream/"):
                headers, lines = self._load_stream(name.removeprefix("stream/"))
            else:
                headers, body = self._load(name)
        except (OSError, ValueError):
            await send({"type": "http.response.start", "status": 404, "headers": []})
            await send({"type": "http.response.body", "body": b"no such raw response\n"})
            return
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        if not name.startswith("stream/"):
            await send({"type": "http.response.body", "body": body})
            return
        for line in lines:
            await send({"type": "http.response.body", "body": line, "more_body": True})
        await send({"type": "http.response.body", "body": b""})


class BenchApplication:
    """``/raw/...`` to the raw handlers, ``/bench/trace/...`` to the trace driver, the rest to Kubelab."""

    def __init__(self) -> None:
        self.raw = RawHandlers(Path(os.environ.get(RAW_DIR_ENV, ".")))
        self.kubelab: Any = None
        self.trace_driver: Any = None

    def load(self) -> None:
        """Import ``config.asgi`` (after Django is set up, before daphne serves)."""
        from config.asgi import application as kubelab

        self.kubelab = kubelab

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith(RAW_PREFIX):
            await self.raw(scope, receive, send)
            return
        if scope["type"] == "http" and scope["path"].startswith(TRACE_PREFIX):
            if self.trace_driver is None:
                from bench._tracedrive import DriverControl

                self.trace_driver = DriverControl()
            await self.trace_driver(scope, receive, send)
            return
        if self.kubelab is None:
            self.load()
        await self.kubelab(scope, receive, send)


application = BenchApplication()


def raise_file_limit(wanted: int = 65536) -> None:
    """A thousand watchers need a thousand sockets: lift the soft limit as far as the hard one allows."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench._apiserve")
    parser.add_argument("--web", required=True, help="HOST:PORT of the plain HTTP port")
    parser.add_argument("--api", required=True, help="HOST:PORT of the HTTPS API port")
    parser.add_argument("--raw-dir", required=True, type=Path, help="where the captured responses are")
    options = parser.parse_args(argv)
    os.environ[RAW_DIR_ENV] = str(options.raw_dir.resolve())
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    raise_file_limit()

    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    # runlab serves channels' default application: ours, which wraps config.asgi's. Importing it by
    # its module name (this file runs as __main__) gives the instance daphne will look up.
    import bench._apiserve as served

    served.application.raw = RawHandlers(options.raw_dir.resolve())
    served.application.load()
    settings.ASGI_APPLICATION = "bench._apiserve.application"
    profile_path = os.environ.get(PROFILE_ENV)
    if not profile_path:
        call_command("runlab", "--web", options.web, "--api", options.api)
        return
    import cProfile

    profiler = cProfile.Profile()
    profiler.enable()
    try:
        call_command("runlab", "--web", options.web, "--api", options.api)
    finally:
        profiler.disable()
        profiler.dump_stats(profile_path)


if __name__ == "__main__":
    main()
