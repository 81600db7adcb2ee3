"""The trace: every observable step of the control plane as one JSON-able event.

This package holds the contract (``TraceSink``), the context that carries the id of the request being
served (``current_request_id``), and the sinks. The full bus, recorder and schema arrive with the
topology issue; the store already emits through the sink it is given.
"""

from __future__ import annotations

from controlplane.trace.context import current_request_id, request_context
from controlplane.trace.sink import NULL_SINK, ListSink, NullSink, TraceSink

__all__ = ["NULL_SINK", "ListSink", "NullSink", "TraceSink", "current_request_id", "request_context"]
