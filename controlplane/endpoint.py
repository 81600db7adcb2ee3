"""A cluster's API endpoint: where its API server listens, for the clients in the same process.

A client never holds an API server; it holds an address (``https://10.0.0.1:6443``) and connects to
whatever listens there. That is what lets a kube-apiserver restart under its clients: for a moment
nothing listens and connections are refused, then a new process listens at the same address, with
caches of its own, and the clients' next connections reach it. Their open watches were cut when the
old process stopped; each reflector watches again from the last resourceVersion it saw, and lists
again if the new server's watch cache answers 410 (client-go ``tools/cache/reflector.go``).

Over HTTPS the lab's router (``apiserver/mount.py``) is that address: it looks the cluster's API
server up for every request. The components of a cluster and the web app's own requests call the API
server without a socket (``client/transport.py``), so they get an ``APIEndpoint`` as their ASGI app
instead of the API server itself: it forwards each request to the server serving now, and raises
``ConnectionRefusedError`` while none does, which the in-process transport turns into the error
httpx raises for a refused TCP connection. Nothing in the clients knows whether a server restarted.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import Any, Protocol

from controlplane.client.config import Receive, Send


class _Server(Protocol):
    """An API server as the endpoint sees it: an ASGI app that says whether it serves."""

    @property
    def started(self) -> bool: ...

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None: ...


class APIEndpoint:
    """The in-process address of cluster ``cluster``'s API server; ``server`` returns the one serving
    there now (None while there is none)."""

    def __init__(self, cluster: str, server: Callable[[], _Server | None]) -> None:
        self.cluster = cluster
        self._server = server

    async def __call__(self, scope: MutableMapping[str, Any], receive: Receive, send: Send) -> None:
        server = self._server()
        if server is None or not server.started:
            raise ConnectionRefusedError(f"nothing listens for cluster {self.cluster!r}'s API")
        await server(scope, receive, send)

    def __repr__(self) -> str:
        return f"<APIEndpoint {self.cluster}>"


__all__ = ["APIEndpoint"]
