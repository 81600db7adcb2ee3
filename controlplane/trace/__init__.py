"""The trace: every observable step of the control plane as one JSON-able event.

Each part of a cluster reports what it does to a ``TraceSink`` (``sink.py``), building an event only
when the sink is ``enabled``. A running cluster's sink is its ``TraceBus`` (``bus.py``): it stamps each
event with the schema's envelope (``schema.py``: version, cluster, a gapless ``seq``, time, request id),
keeps it in a bounded ``Recorder`` (``recorder.py``) and hands it to subscribers (the browser's
websocket). ``causality.py`` follows cause to effect through the events (request -> store revision ->
watch events -> reconcile or scheduling -> the requests that made); ``export.py`` saves a run as JSON
lines and loads it back, with Secret values redacted (``redaction.py``). ``context.py`` carries the id
of the request being served and the requests a component's work made.
``nodes.py`` spells the diagram's node ids that events name in ``from`` and ``to``.
docs/trace.md describes all of it for readers of the course.
"""

from __future__ import annotations

from controlplane.trace.bus import Batch, Subscription, TraceBus, summarise
from controlplane.trace.causality import CausalGraph
from controlplane.trace.context import (
    current_request_id,
    note_request,
    recording_requests,
    request_context,
)
from controlplane.trace.recorder import DEFAULT_CAPACITY, Recorder, TooOld
from controlplane.trace.schema import EVENT_TYPES, SCHEMA_VERSION, SchemaError, validate
from controlplane.trace.sink import NULL_SINK, ListSink, NullSink, TraceSink

__all__ = [
    "DEFAULT_CAPACITY",
    "EVENT_TYPES",
    "NULL_SINK",
    "SCHEMA_VERSION",
    "Batch",
    "CausalGraph",
    "ListSink",
    "NullSink",
    "Recorder",
    "SchemaError",
    "Subscription",
    "TooOld",
    "TraceBus",
    "TraceSink",
    "current_request_id",
    "note_request",
    "recording_requests",
    "request_context",
    "summarise",
    "validate",
]
