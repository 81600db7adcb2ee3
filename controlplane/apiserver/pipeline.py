"""The pipeline's stages as the trace sees them: which stage a request is in, and what it decided.

Every request passes the same stages, in upstream's order; the filters (authentication, audit,
impersonation, flow control, authorization) run in ``server.py``, the handler's stages (mutating
admission, validation, validating admission, storage) deep inside the registry. So that each can report
without being handed the request, the current request's reporter lives in a context variable, as the
Audit-ID does: ``stage("validation", "deny", "spec.containers: Required value")``.

``detail`` is narration for people; what a reader of the trace needs is in fields of their own. The
storage stage's pass says what it wrote: ``stage("storage", "pass", "updated ... at revision 18",
key=key, revision=18, op="update")``, ``op`` being one of ``schema.STORAGE_OPS``.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Protocol

from controlplane.apiserver.requestscope import Scoped
from controlplane.trace.schema import PIPELINE_STAGES

#: The stages of the pipeline, in upstream's order (the diagram draws them as a strip). The schema's
#: tuple itself: the trace sits below the API server, so the list lives there.
STAGES = PIPELINE_STAGES


class Reporter(Protocol):
    """Where the stages of the current request go (the API server's trace)."""

    def __call__(self, name: str, outcome: str, detail: str, /, **fields: str | int) -> None: ...


_reporter: ContextVar[Reporter | None] = ContextVar("pipeline_reporter", default=None)


def stage(name: str, outcome: str, detail: str = "", **fields: str | int) -> None:
    """Report that the current request passed (``pass``) or was stopped at (``deny``) stage ``name``;
    ``fields`` go into the event as they are (the storage stage's ``key``, ``revision`` and ``op``)."""
    reporter = _reporter.get()
    if reporter is not None:
        reporter(name, outcome, detail, **fields)


#: How the storage stage says what it wrote, by its ``op`` (``schema.STORAGE_OPS``).
_STORED = {"create": "created", "update": "updated", "delete": "deleted", "terminate": "marked"}


def stored(op: str, key: str, revision: int, *, detail: str = "") -> None:
    """Report the storage stage's pass: the request wrote ``key`` at ``revision`` (``op``: create,
    update, delete, or terminate: marked for deletion, kept until its grace period or finalizers end).
    ``detail`` adds to the sentence (``with 2 claims``)."""
    what = f"{key} Terminating" if op == "terminate" else key
    extra = f" {detail}" if detail else ""
    stage(
        "storage",
        "pass",
        f"{_STORED[op]} {what}{extra} at revision {revision}",
        key=key,
        revision=revision,
        op=op,
    )


def reporting(reporter: Reporter | None) -> Scoped[Reporter | None]:
    """``with reporting(reporter):`` every ``stage`` reported inside goes to ``reporter`` (None: nowhere,
    when nobody watches the trace)."""
    return Scoped(_reporter, reporter)
