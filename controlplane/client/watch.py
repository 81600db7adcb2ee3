"""Watch events: the stream of changes a client receives after asking ``?watch=true``.

A watch response is one JSON object per line, each an *event*::

    {"type":"ADDED","object":{"kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"12"},...}}
    {"type":"MODIFIED","object":{...,"resourceVersion":"13"}}
    {"type":"BOOKMARK","object":{"kind":"ConfigMap","metadata":{"resourceVersion":"20"}}}
    {"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired",...}}

``ADDED``, ``MODIFIED`` and ``DELETED`` carry the object after the change (for ``DELETED``, its last
state, with the revision that deleted it). A ``BOOKMARK`` carries only a newer resourceVersion: no
object changed, but the client may resume from there. An ``ERROR`` ends the watch with a Status; the
common one is 410 Expired, "the resourceVersion you asked to resume from is older than my history":
the client must list again. Here an ``ERROR`` is raised as its typed error (``Expired``), never
returned as an event, so a consumer cannot forget to look.

``WatchInterface`` is what a watch looks like to a consumer (apimachinery ``watch.Interface``): an
async iterator of ``WatchEvent`` that ends when the server closes the stream, used inside ``async
with`` so that leaving the block stops it. ``FakeWatcher`` is one fed by hand, for tests of reflectors
and informers without a server (``watch.NewFake``).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from enum import StrEnum
from types import TracebackType
from typing import Protocol, Self

from controlplane.api import serializer
from controlplane.api.meta import Object
from controlplane.client.errors import from_status


class EventType(StrEnum):
    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"
    BOOKMARK = "BOOKMARK"
    ERROR = "ERROR"


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One change: its type and the object (for a bookmark, only ``metadata.resourceVersion``)."""

    type: EventType
    object: Object

    @property
    def resource_version(self) -> str:
        return str((self.object.get("metadata") or {}).get("resourceVersion") or "")


class MalformedEvent(ValueError):
    """A watch line that is not a ``{"type": ..., "object": {...}}`` JSON object."""


def decode_event(line: str | bytes) -> WatchEvent:
    """Parse one line of a watch response."""
    try:
        data = serializer.decode(line)
        event_type = EventType(data["type"])
        obj = data["object"]
    except (ValueError, KeyError, TypeError) as error:
        raise MalformedEvent(f"not a watch event: {_shown(line)} ({error})") from None
    if not isinstance(obj, dict):
        raise MalformedEvent(f"watch event without an object: {_shown(line)}")
    return WatchEvent(event_type, obj)


def _shown(line: str | bytes) -> str:
    """The start of a line for a message, as text whether it came as bytes or not."""
    text = line[:200].decode("utf-8", "replace") if isinstance(line, bytes) else line[:200]
    return repr(text)


_TYPE_PREFIX = b'{"type":"'
_OBJECT_INFIX = b'","object":'


def split_event(line: bytes) -> tuple[bytes, bytes] | None:
    """A watch line's type and its object's bytes, if it has the API server's own layout
    (``{"type":"MODIFIED","object":{...}}``, as both kube-apiserver and Kubelab write it); None if
    not, and then only ``decode_event`` can tell what it holds.

    The object's bytes are then all the line says about the object: equal bytes decode to equal
    objects, whatever the type in front of them.
    """
    if not line.startswith(_TYPE_PREFIX):
        return None
    end = line.find(b'"', len(_TYPE_PREFIX))
    if end < 0 or not line.startswith(_OBJECT_INFIX, end) or not line.endswith(b"}"):
        return None
    return line[len(_TYPE_PREFIX) : end], line[end + len(_OBJECT_INFIX) : -1]


def raise_for_error(event: WatchEvent) -> WatchEvent:
    """``event`` itself, unless it is an ``ERROR``: then its Status as a typed error (410: ``Expired``)."""
    if event.type is EventType.ERROR:
        raise from_status(event.object)
    return event


class WatchInterface(Protocol):
    """A running watch (apimachinery ``watch.Interface``): iterate its events; ``stop`` ends it."""

    async def start(self) -> None:
        """Open the watch now (iterating opens it too); raises the typed error if it is refused."""
        ...

    def __aiter__(self) -> Self: ...

    async def __anext__(self) -> WatchEvent: ...

    async def stop(self) -> None: ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...


class FakeWatcher:
    """A watch fed by the test: ``add``/``modify``/``delete``/``bookmark``/``error``, then ``stop``."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[WatchEvent | None] = asyncio.Queue()
        self.stopped = False
        self.started = False

    # -- the producer's side (the test) -------------------------------------------------------------

    def send(self, event: WatchEvent) -> None:
        self._queue.put_nowait(event)

    def add(self, obj: Object) -> None:
        self.send(WatchEvent(EventType.ADDED, obj))

    def modify(self, obj: Object) -> None:
        self.send(WatchEvent(EventType.MODIFIED, obj))

    def delete(self, obj: Object) -> None:
        self.send(WatchEvent(EventType.DELETED, obj))

    def bookmark(self, resource_version: str, kind: str = "") -> None:
        self.send(
            WatchEvent(EventType.BOOKMARK, {"kind": kind, "metadata": {"resourceVersion": resource_version}})
        )

    def error(self, status: Object) -> None:
        self.send(WatchEvent(EventType.ERROR, status))

    def close(self) -> None:
        """The server ends the stream (a watch timeout): the consumer's iteration ends."""
        self._queue.put_nowait(None)

    # -- the consumer's side ------------------------------------------------------------------------

    async def start(self) -> None:
        self.started = True

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> WatchEvent:
        if self.stopped:
            raise StopAsyncIteration
        event = await self._queue.get()
        if event is None:
            self.stopped = True
            raise StopAsyncIteration
        if event.type is EventType.ERROR:
            self.stopped = True
        return raise_for_error(event)

    async def stop(self) -> None:
        self.stopped = True
        self._queue.put_nowait(None)

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()


__all__ = [
    "EventType",
    "FakeWatcher",
    "MalformedEvent",
    "WatchEvent",
    "WatchInterface",
    "decode_event",
    "raise_for_error",
    "split_event",
]
