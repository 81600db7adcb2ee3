"""The request context: which API request caused the work being done right now.

kube-apiserver gives every request an Audit-ID and returns it in the ``Audit-Id`` response header.
Everything done on a request's behalf names it, so that the browser can draw cause to effect. Most of
the API server hands the id down explicitly (its ``RequestScope`` carries it to the registry, which
gives it to the store's ``txn``). Two values cannot be handed down, and travel in context variables
instead; asyncio copies them into the tasks a request or a reconcile starts, so each follows its work
through ``await``s and never leaks into work served meanwhile:

- ``current_request_id``, the Audit-ID of the request being served (``request_context``). The trace bus
  stamps it as the ``id`` of every event emitted while it is set, unless the emitter gives one. The
  emitters are everywhere below and beside the API server (a store read, a watch cache, a webhook
  call): they all speak ``TraceSink.emit(type, **fields)``, a protocol that knows nothing of
  requests, and the store is a layer below the API server that cannot see its request at all.
- The Audit-IDs of the requests a component's work made. A reconcile or a scheduling attempt makes
  requests, and its trace event lists their Audit-IDs (``requests``) so the browser can follow the work
  to the requests it made. The component runs its work inside ``recording_requests()``; its API client
  calls ``note_request`` with the Audit-ID of every request it sends. The requests are made by the
  controller's own code through the client's ordinary methods (``get``, ``create``, ``patch``...),
  whose signatures are the Kubernetes client's; threading a collector through every one of them, and
  through every controller, would change the client's API for the sake of the trace.

The revisions a request wrote need neither: the API server's ``RequestScope`` collects them
(``RequestScope.stored``), handed to every registry write.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from contextvars import ContextVar, Token
from typing import Generic, TypeVar

T = TypeVar("T")

#: The Audit-ID of the API request being served (see the module docstring for why it is a context
#: variable: the trace bus stamps it on events whose emitters are never handed the request).
current_request_id: ContextVar[str | None] = ContextVar("current_request_id", default=None)

#: The Audit-IDs a component's work made (see the module docstring: the client's methods cannot take it).
_issued_requests: ContextVar[list[str] | None] = ContextVar("issued_requests", default=None)


class _Setting(Generic[T]):
    """``with _Setting(variable, value) as value:`` runs the block with ``variable`` set to ``value``,
    and puts the old value back after it, however the block ends.

    A small class rather than a ``contextlib.contextmanager`` generator: the API server enters one for
    every request it serves, and a generator costs twice as much each time.
    """

    __slots__ = ("_token", "_value", "_variable")

    def __init__(self, variable: ContextVar[T | None], value: T) -> None:
        self._variable = variable
        self._value = value

    def __enter__(self) -> T:
        self._token: Token[T | None] = self._variable.set(self._value)
        return self._value

    def __exit__(self, *exc_info: object) -> None:
        self._variable.reset(self._token)


def request_context(request_id: str | None) -> AbstractContextManager[str | None]:
    """``with request_context(audit_id):`` runs the body as part of the request ``audit_id``."""
    return _Setting(current_request_id, request_id)


def recording_requests() -> AbstractContextManager[list[str]]:
    """``with recording_requests() as issued:`` collects in ``issued`` the Audit-IDs of the API requests
    made in the body (and in tasks it starts)."""
    return _Setting(_issued_requests, [])


def note_request(audit_id: str) -> None:
    """An API client made a request with this Audit-ID: tell the ``recording_requests`` around it, if any."""
    issued = _issued_requests.get()
    if issued is not None and audit_id:
        issued.append(audit_id)
