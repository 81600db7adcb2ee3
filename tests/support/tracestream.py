"""Speaking the trace websocket's protocol in tests, as the topology page does (docs/trace.md, "Stream").

A socket is Channels' ``WebsocketCommunicator`` on the trace consumer (``trace_socket``), without the
session middleware: tests set the user in the scope. Nothing waits for time to pass: each helper
waits for the message it needs, ``TIMEOUT`` at most.
"""

from __future__ import annotations

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


def trace_socket(app: URLRouter, cluster: str, user: User | None = None) -> WebsocketCommunicator:
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
