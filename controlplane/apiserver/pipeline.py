"""The pipeline's stages as the trace sees them: which stage a request is in, and what it decided.

Every request passes the same stages, in upstream's order; the filters (authentication, audit,
impersonation, flow control, authorization) run in ``server.py``, the handler's stages (mutating
admission, validation, validating admission, storage) deep inside the registry. So that each can report
without being handed the request, the current request's reporter lives in a context variable, as the
Audit-ID does: ``stage("validation", "deny", "spec.containers: Required value")``.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar

from controlplane.apiserver.requestscope import Scoped

#: The stages of the pipeline, in upstream's order (the diagram draws them as a strip).
STAGES = (
    "authentication",
    "audit",
    "impersonation",
    "flowcontrol",
    "authorization",
    "mutating-admission",
    "validation",
    "validating-admission",
    "storage",
)

Reporter = Callable[[str, str, str], None]

_reporter: ContextVar[Reporter | None] = ContextVar("pipeline_reporter", default=None)


def stage(name: str, outcome: str, detail: str = "") -> None:
    """Report that the current request passed (``pass``) or was stopped at (``deny``) stage ``name``."""
    reporter = _reporter.get()
    if reporter is not None:
        reporter(name, outcome, detail)


def reporting(reporter: Reporter | None) -> Scoped[Reporter | None]:
    """``with reporting(reporter):`` every ``stage`` reported inside goes to ``reporter`` (None: nowhere,
    when nobody watches the trace)."""
    return Scoped(_reporter, reporter)
