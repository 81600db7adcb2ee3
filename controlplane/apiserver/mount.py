"""Mounting: every cluster's API server under ``/clusters/<name>/`` of one HTTP port.

A real cluster has one API server at the root of its own address. The lab serves many clusters from
one process, so each API server is mounted under a path prefix and kubeconfigs point at
``https://127.0.0.1:6443/clusters/<name>``; kubectl and the client libraries accept a server URL with
a path and prepend it to every request. Requests for a cluster that does not exist (or has not
started) are answered with a Status, not a Django 404 page.

The router is also where a lab learns that a cluster is in use. A student's sandbox that nobody used
for a while **hibernates** (``controlplane/runtime.py``): its API server is stopped. A request for it
wakes it first (``Lab.wake``) and is then served as any other, so kubectl sees only a slower first
answer, never an error. While a request is served (a watch for as long as it streams) the cluster
counts as busy (``Lab.busy``) and does not hibernate under it. A lab that does neither (a test's
stand-in with only ``cluster``) is served as before.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from controlplane.apiserver import errors
from controlplane.apiserver.http import Receive, Scope, Send, respond_error

logger = logging.getLogger(__name__)

PREFIX = "/clusters/"


class _Cluster(Protocol):
    @property
    def apiserver(self) -> Any: ...


class _Lab(Protocol):
    def cluster(self, name: str) -> Any: ...


@runtime_checkable
class _HibernatingLab(_Lab, Protocol):
    """A lab whose clusters may hibernate (``controlplane.runtime.Lab``)."""

    def needs_waking(self, name: str) -> bool: ...

    async def wake(self, name: str) -> None: ...

    async def may_wake(self, name: str, *, token: str | None, certificate: bool) -> bool: ...

    def busy(self, name: str) -> contextlib.AbstractContextManager[None]: ...


ASGIApp = Callable[..., Any]


class ClusterAPIRouter:
    """Sends ``/clusters/<name>/...`` to the cluster's API server and the rest to ``fallback``."""

    def __init__(self, lab: Callable[[], _Lab | None], fallback: ASGIApp) -> None:
        self.lab = lab
        self.fallback = fallback

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope.get("path", "")
        if scope["type"] != "http" or not path.startswith(PREFIX):
            await self.fallback(scope, receive, send)
            return
        name, _, rest = path[len(PREFIX) :].partition("/")
        lab = self.lab()
        if isinstance(lab, _HibernatingLab) and _known(lab, name):
            # Counted busy from here, before any await: the lab cannot hibernate it in between.
            with lab.busy(name):
                if lab.needs_waking(name) and not await lab.may_wake(
                    name, token=_bearer(scope), certificate=_has_certificate(scope)
                ):
                    # What the API server would answer a request without valid credentials; nothing
                    # is started for it.
                    await respond_error(send, errors.StatusError(401, "Unauthorized", "Unauthorized"))
                    return
                await self._wake(lab, name)
                await self._route(lab, name, rest, scope, receive, send)
            return
        await self._route(lab, name, rest, scope, receive, send)

    @staticmethod
    async def _wake(lab: _HibernatingLab, name: str) -> None:
        """Wake the cluster if it hibernates; a cluster that cannot wake is answered 503 below."""
        if lab.needs_waking(name):
            try:
                await lab.wake(name)
            except Exception as error:
                logger.warning("cluster %r did not wake for a request: %s", name, error)

    async def _route(
        self, lab: _Lab | None, name: str, rest: str, scope: Scope, receive: Receive, send: Send
    ) -> None:
        server = None
        if lab is not None:
            try:
                server = lab.cluster(name).apiserver
            except Exception:
                server = None
        if server is not None and not server.started:
            server = None  # still filling its caches: 503 until it serves
        if server is None:
            await respond_error(
                send,
                errors.service_unavailable(f'cluster "{name}" is not running in this lab')
                if lab is not None and _known(lab, name)
                else errors.StatusError(404, "NotFound", f'cluster "{name}" not found'),
            )
            return
        inner = dict(scope)
        inner["path"] = "/" + rest
        inner["root_path"] = scope.get("root_path", "") + PREFIX + name
        await server(inner, receive, send)


def _bearer(scope: Scope) -> str | None:
    for key, value in scope.get("headers") or ():
        if key == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            return token.strip() if scheme.lower() == "bearer" else None
    return None


def _has_certificate(scope: Scope) -> bool:
    tls = (scope.get("extensions") or {}).get("tls") or {}
    return bool(tls.get("client_cert_chain"))


def _known(lab: _Lab, name: str) -> bool:
    try:
        lab.cluster(name)
    except Exception:
        return False
    return True
