"""The request context: which API request caused the work being done right now.

kube-apiserver gives every request an Audit-ID and returns it in the ``Audit-Id`` response header. Kubelab
keeps it in a context variable so that everything done on the request's behalf (a store transaction, the
revision it wrote) names the request, and the browser can draw cause to effect. asyncio copies context
variables into tasks, so the id follows the request through ``await``s without being passed by hand.
The trace bus stamps it as the ``id`` of every event emitted while it is set (unless the emitter gives one).

The other direction is a component's: a reconcile or a scheduling attempt makes requests, and its trace
event lists their Audit-IDs (``requests``) so the browser can follow the work to the requests it made.
The component runs its work inside ``recording_requests()``; its API client calls ``note_request`` with
the ``Audit-Id`` of every response; the list the context manager yields then holds them all.

The API server, in turn, wants to say which store revision a request wrote (``request.completed``'s
``revision``): it serves the request inside ``recording_revisions()``, and the store calls
``note_revision`` for every transaction that wrote one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

current_request_id: ContextVar[str | None] = ContextVar("current_request_id", default=None)

_issued_requests: ContextVar[list[str] | None] = ContextVar("issued_requests", default=None)

_written_revisions: ContextVar[list[int] | None] = ContextVar("written_revisions", default=None)


@contextlib.contextmanager
def request_context(request_id: str | None) -> Iterator[None]:
    """Run the body as part of the request ``request_id``."""
    token = current_request_id.set(request_id)
    try:
        yield
    finally:
        current_request_id.reset(token)


@contextlib.contextmanager
def recording_requests() -> Iterator[list[str]]:
    """Collect the Audit-IDs of the API requests made in the body (and in tasks it starts)."""
    issued: list[str] = []
    token = _issued_requests.set(issued)
    try:
        yield issued
    finally:
        _issued_requests.reset(token)


def note_request(audit_id: str) -> None:
    """An API client made a request with this Audit-ID: tell the ``recording_requests`` around it, if any."""
    issued = _issued_requests.get()
    if issued is not None and audit_id:
        issued.append(audit_id)


@contextlib.contextmanager
def recording_revisions() -> Iterator[list[int]]:
    """Collect the store revisions written in the body (and in tasks it starts), oldest first."""
    written: list[int] = []
    token = _written_revisions.set(written)
    try:
        yield written
    finally:
        _written_revisions.reset(token)


def note_revision(revision: int) -> None:
    """The store committed a write as ``revision``: tell the ``recording_revisions`` around it, if any."""
    written = _written_revisions.get()
    if written is not None:
        written.append(revision)
