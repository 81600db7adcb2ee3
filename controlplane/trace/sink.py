"""Trace sinks: where the control plane's trace events go.

Emitting must cost nothing when nobody is watching a cluster, so a sink says whether it is ``enabled``
and callers build an event only when it is::

    if trace.enabled:
        trace.emit("store.txn", revision=rev, key=key)

``NullSink`` is the sink of a cluster without viewers; ``ListSink`` keeps events in a list for tests.
"""

from __future__ import annotations

from typing import Any, Protocol


class TraceSink(Protocol):
    """Receives trace events. ``emit`` must not block and must not raise."""

    @property
    def enabled(self) -> bool: ...

    def emit(self, type: str, /, **fields: Any) -> None: ...


class NullSink:
    """The sink of a cluster nobody is watching: drops everything, and says so up front."""

    enabled = False

    def emit(self, type: str, /, **fields: Any) -> None:
        return None


NULL_SINK = NullSink()


class ListSink:
    """Collects events as ``{"type": ..., **fields}`` dicts; for tests and small tools."""

    enabled = True

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def emit(self, type: str, /, **fields: Any) -> None:
        self.events.append({"type": type, **fields})

    def of_type(self, type: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] == type]
