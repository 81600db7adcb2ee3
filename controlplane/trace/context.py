"""The request context: which API request caused the work being done right now.

kube-apiserver gives every request an Audit-ID and returns it in the ``Audit-Id`` response header. Kubelab
keeps it in a context variable so that everything done on the request's behalf (a store transaction, the
revision it wrote) names the request, and the browser can draw cause to effect. asyncio copies context
variables into tasks, so the id follows the request through ``await``s without being passed by hand.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

current_request_id: ContextVar[str | None] = ContextVar("current_request_id", default=None)


@contextlib.contextmanager
def request_context(request_id: str | None) -> Iterator[None]:
    """Run the body as part of the request ``request_id``."""
    token = current_request_id.set(request_id)
    try:
        yield
    finally:
        current_request_id.reset(token)
