"""Speaking the trace websocket's protocol in tests, as the topology page does (docs/trace.md, "Stream").

A socket is Channels' ``WebsocketCommunicator`` on the trace consumer (``trace_socket``), without the
session middleware: tests set the user in the scope. Nothing waits for time to pass: each helper
waits for the message it needs, ``TIMEOUT`` at most.
"""

from __future__ import annotations

import asyncio
from typing import Any

from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User
from django.urls import path

from controlplane.consumers.trace import TraceConsumer
from controlplane.trace.bus import TraceBus

TIMEOUT = 5  # seconds a test waits for one message before failing (never spent when things work)


def trace_router(**options: Any) -> URLRouter:
    """The consumer as routed in config/asgi.py, with ``TraceConsumer.as_asgi(**options)`` and no session."""
    return URLRouter([path("ws/lab/<str:cluster>/trace/", TraceConsumer.as_asgi(**options))])


class Disconnected(RuntimeError):
    """What daphne's websocket library (autobahn) raises on a send after the client began to close."""


class AsDaphne:
    """The consumer held to what daphne enforces, which Channels' test communicator does not.

    Under daphne, autobahn refuses a close code other than 1000 or 3000-4999 (it raises), and raises
    ``Disconnected`` on a send once the client has begun to close its socket, before the consumer's
    ``websocket.disconnect`` arrives. ``client_closing()`` starts that moment; ``send_failed`` is set
    once a send has run into it. Wrap the application: ``trace_socket(AsDaphne(app), ...)``.
    """

    def __init__(self, app: URLRouter) -> None:
        self.app = app
        self.closing = False
        self.send_failed = asyncio.Event()

    def client_closing(self) -> None:
        self.closing = True

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        async def checked(message: dict[str, Any]) -> None:
            if message["type"] == "websocket.close":
                code = message.get("code", 1000)
                if code != 1000 and not 3000 <= code <= 4999:
                    raise ValueError(f"invalid close code {code} (must be 1000 or from [3000, 4999])")
            elif message["type"] == "websocket.send" and self.closing:
                self.send_failed.set()
                raise Disconnected("Attempt to send on a closed protocol")
            await send(message)

        await self.app(scope, receive, checked)


def trace_socket(app: URLRouter | AsDaphne, cluster: str, user: User | None = None) -> WebsocketCommunicator:
    communicator = WebsocketCommunicator(app, f"/ws/lab/{cluster}/trace/")
    if user is not None:
        communicator.scope["user"] = user
    return communicator


def staff() -> User:
    return User(username="teacher", is_staff=True)


def student() -> User:
    return User(username="alice")


async def receive(communicator: WebsocketCommunicator) -> dict[str, Any]:
    message: dict[str, Any] = await communicator.receive_json_from(timeout=TIMEOUT)
    return message


async def open_socket(communicator: WebsocketCommunicator) -> dict[str, Any]:
    """Connect; the hello the server says first."""
    connected, _ = await communicator.connect(timeout=TIMEOUT)
    assert connected
    hello = await receive(communicator)
    assert hello["type"] == "hello", hello
    return hello


async def frames_until(
    communicator: WebsocketCommunicator, seq: int, frames: list[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """Frames (after ``frames``) until one accounts for ``seq``, checking each follows the one before."""
    frames = list(frames or [])
    while not frames or frames[-1]["last"] < seq:
        frame = await receive(communicator)
        assert frame["type"] == "frame", frame
        if frames:
            assert frame["first"] == frames[-1]["last"] + 1, "a gap or an overlap between frames"
        covered = [e["seq"] for e in frame["events"]]
        if "summary" in frame:
            covered += list(range(frame["summary"]["first"], frame["summary"]["last"] + 1))
        assert covered == list(range(frame["first"], frame["last"] + 1)), "a gap inside a frame"
        frames.append(frame)
    return frames


def emit_watch_events(bus: TraceBus, count: int, *, nodes: int = 12) -> int:
    """Emit ``count`` watch events to ``nodes`` kubelets at once; the seq of the last one."""
    for n in range(count):
        bus.emit(
            "watch.event",
            watch="w-test",
            event="MODIFIED",
            revision=n,
            **{"from": "apiserver", "to": f"kubelet:node-{n % nodes}"},
        )
    return bus.last_seq


async def close(communicator: WebsocketCommunicator) -> None:
    await communicator.disconnect(timeout=TIMEOUT)
