"""The baseline of ``python -m bench trace``: the same frames from a bare ``websockets`` server.

``python -m bench._traceraw --port PORT`` serves websockets on 127.0.0.1 with
``websockets.asyncio.server`` and nothing else: no Django, no Channels, no per-socket framing. It
speaks just enough of the trace stream (docs/trace.md, "Stream") for the benchmark's clients: a
``hello``, then a ``subscribe`` from the client, then frames. It makes the same events as the lab's
driver (``bench._traceload``), stamps them itself (``seq``, ``ts`` from the wall clock), encodes each
once, and every 33 ms (``FRAME_INTERVAL``, as the consumer paces its sockets) sends one frame with
everything made since the last one to every subscribed socket with ``websockets.broadcast``: one
frame text for all sockets, written to each without waiting. That is the least a server can do to
carry the stream; the benchmark's ratio is what Kubelab's stream costs over it.

Commands on stdin, one a line: ``drive RATE`` starts (or restarts) making ``RATE`` events a second,
``status`` says how many it made, ``stop`` stops; each is answered with a JSON line on stdout
(``{"listening": PORT}`` comes first, once the server listens). The end of stdin stops the server.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import time
from typing import Any

from websockets.asyncio.server import ServerConnection, broadcast, serve
from websockets.exceptions import ConnectionClosed

from bench._apiserve import raise_file_limit
from bench._traceload import EventSource, Schedule, encode, hello, raw_frame, stamp

#: Seconds between frames, as ``controlplane.consumers.framing.FRAME_INTERVAL``.
FRAME_INTERVAL = 1 / 30
#: Seconds between the producer's wake-ups, as ``bench._tracedrive.TICK``.
TICK = 0.005


class RawStream:
    """The subscribed sockets, the events made since the last frame, and the two tasks making both."""

    def __init__(self, cluster: str = "demo") -> None:
        self.cluster = cluster
        self.subscribers: set[ServerConnection] = set()
        self.last_seq = 0
        self.pending: list[str] = []
        self.pending_first = 1
        self.frames = 0
        self.made = 0
        self.started = 0.0
        self._tasks: list[asyncio.Task[None]] = []

    async def handler(self, connection: ServerConnection) -> None:
        """One client: hello, wait for its subscribe, then it gets every broadcast until it goes."""
        try:
            await connection.send(hello(self.cluster, self.last_seq))
            async for message in connection:
                request = json.loads(message)
                if isinstance(request, dict) and request.get("action") in ("subscribe", "resync"):
                    self.subscribers.add(connection)
        except (ConnectionClosed, ValueError):
            pass
        finally:
            self.subscribers.discard(connection)

    def drive(self, rate: float) -> None:
        self.stop()
        loop = asyncio.get_running_loop()
        self.started = loop.time()
        self.made = 0
        self._tasks = [
            loop.create_task(self._produce(Schedule(rate, self.started)), name="raw producer"),
            loop.create_task(self._frames(), name="raw frames"),
        ]

    def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        self._tasks = []

    async def _produce(self, schedule: Schedule) -> None:
        loop = asyncio.get_running_loop()
        source = EventSource(self.cluster)
        while True:
            await asyncio.sleep(TICK)
            for _ in range(schedule.due(loop.time())):
                if not self.subscribers:  # as the bus: nothing is made while nobody subscribes
                    continue
                kind, fields = source.next()
                self.last_seq += 1
                if not self.pending:
                    self.pending_first = self.last_seq
                self.pending.append(encode(stamp(self.cluster, self.last_seq, time.time(), kind, fields)))
                self.made += 1

    async def _frames(self) -> None:
        loop = asyncio.get_running_loop()
        next_frame = loop.time()
        while True:
            await asyncio.sleep(max(0.0, next_frame - loop.time()))
            next_frame = max(next_frame + FRAME_INTERVAL, loop.time())
            if self.pending:
                frame = raw_frame(self.pending_first, self.pending)
                self.pending = []
                broadcast(self.subscribers, frame)
                self.frames += 1

    def status(self) -> dict[str, Any]:
        seconds = asyncio.get_running_loop().time() - self.started
        return {
            "made": self.made,
            "seconds": round(seconds, 3),
            "made_per_s": round(self.made / seconds, 1) if seconds > 0 else None,
            "frames": self.frames,
            "last_seq": self.last_seq,
            "subscribers": len(self.subscribers),
        }


def say(message: dict[str, Any]) -> None:
    print(json.dumps(message), flush=True)


async def serve_raw(port: int) -> None:
    stream = RawStream()
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    # No compression (daphne offers none either) and no keepalive pings (daphne's come every 20 s).
    async with serve(stream.handler, "127.0.0.1", port, compression=None, ping_interval=None, max_size=None):
        say({"listening": port})
        while line := (await reader.readline()).decode().strip():
            command, _, argument = line.partition(" ")
            if command == "drive":
                stream.drive(float(argument))
                say({"driving": float(argument)})
            elif command == "status":
                say(stream.status())
            elif command == "stop":
                stream.stop()
                say({"stopped": True, **stream.status()})
            else:
                say({"error": f"unknown command {line!r}: drive RATE, status or stop"})
        stream.stop()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(0)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench._traceraw")
    parser.add_argument("--port", type=int, required=True, help="the loopback port to serve on")
    options = parser.parse_args(argv)
    raise_file_limit()
    asyncio.run(serve_raw(options.port))


if __name__ == "__main__":
    main()
