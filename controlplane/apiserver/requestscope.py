"""Request scope: a value that holds while one request is served, whatever it awaits.

The API server keeps a few things per request in context variables rather than passing them down
every call: where pipeline stages are reported (``pipeline.reporting``), who asks for an RBAC write
(``authz.escalation.requesting``). asyncio gives every task a copy of the context, so a value set for
a request stays that request's across ``await``s, and never leaks into another one served meanwhile.

``Scoped`` sets such a variable for a ``with`` block and puts the old value back after it. It is a
small class rather than a ``contextlib.contextmanager`` generator: it is entered for every request.
"""

from __future__ import annotations

from contextvars import ContextVar, Token
from typing import Generic, TypeVar

T = TypeVar("T")


class Scoped(Generic[T]):
    """``with Scoped(variable, value):`` runs the block with ``variable`` set to ``value``."""

    __slots__ = ("_token", "_value", "_variable")

    def __init__(self, variable: ContextVar[T], value: T) -> None:
        self._variable = variable
        self._value = value

    def __enter__(self) -> None:
        self._token: Token[T] = self._variable.set(self._value)

    def __exit__(self, *exc_info: object) -> None:
        self._variable.reset(self._token)


__all__ = ["Scoped"]
