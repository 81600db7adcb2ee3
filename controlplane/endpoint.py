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

Each component holds its own ``ComponentLink`` to the endpoint: the network between it and the
server's address, which a fault can cut (``partition-component``) or slow (``link-latency``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from typing import Any, Protocol

from controlplane.client.config import Receive, Send


class _Server(Protocol):
    """An API server as the endpoint sees it: an ASGI app that says whether it serves."""

    @property
    def started(self) -> bool: ...

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None: ...


@dataclass(frozen=True, slots=True)
class LinkCondition:
    """What the network between one component and the API server does to its requests now: ``cut``
    (nothing gets through: a connect fails, as over a dead route), or each request waits ``delay``
    seconds before it reaches the server (latency)."""

    cut: bool = False
    delay: float = 0.0


class LinkConditions(Protocol):
    """Who decides the links' conditions (``controlplane/faults/links.py``)."""

    def condition(self, component: str) -> LinkCondition | None: ...


class APIEndpoint:
    """The in-process address of cluster ``cluster``'s API server; ``server`` returns the one serving
    there now (None while there is none).

    ``links``: the conditions of the components' links to it (``link``), None while every link is
    sound, which is all a request then costs to check.
    """

    def __init__(self, cluster: str, server: Callable[[], _Server | None]) -> None:
        self.cluster = cluster
        self._server = server
        self.links: LinkConditions | None = None

    def link(self, component: str) -> ComponentLink:
        """The address as component ``component`` (its diagram id, ``kubelet:node-2``) reaches it: over
        its own link, which a fault can cut or slow (``controlplane/faults/links.py``)."""
        return ComponentLink(self, component)

    def serving(self) -> _Server:
        """The API server serving at the address now; ``ConnectionRefusedError`` while none does."""
        server = self._server()
        if server is None or not server.started:
            raise ConnectionRefusedError(f"nothing listens for cluster {self.cluster!r}'s API")
        return server

    async def __call__(self, scope: MutableMapping[str, Any], receive: Receive, send: Send) -> None:
        await self.serving()(scope, receive, send)

    def __repr__(self) -> str:
        return f"<APIEndpoint {self.cluster}>"


class ComponentLink:
    """One component's way to its cluster's endpoint: the network between a kube-scheduler (or a
    kubelet ...) and the API server's address. While the endpoint's ``links`` say nothing it is the
    endpoint itself; a cut link refuses every request before it reaches the server, as a connect over a
    dead route fails (``connect: network is unreachable``), which the in-process transport turns into
    the error httpx raises for it (``httpx.ConnectError``), never an HTTP status; a slow one delays each
    request before it reaches the server."""

    __slots__ = ("component", "endpoint")

    def __init__(self, endpoint: APIEndpoint, component: str) -> None:
        self.endpoint = endpoint
        self.component = component

    async def __call__(self, scope: MutableMapping[str, Any], receive: Receive, send: Send) -> None:
        links = self.endpoint.links
        if links is not None and (condition := links.condition(self.component)) is not None:
            if condition.cut:
                raise self._unreachable()
            if condition.delay > 0:
                await asyncio.sleep(condition.delay)  # the network's time: real seconds
                if (now := links.condition(self.component)) is not None and now.cut:  # cut meanwhile
                    raise self._unreachable()
        # The server itself, not ``self.endpoint(...)``: one coroutine less between the client and the
        # server, which every resumption of the request (each await of the store) passes through.
        await self.endpoint.serving()(scope, receive, send)

    def _unreachable(self) -> ConnectionRefusedError:
        # What Go's dialer says when no route leads to the address (client-go passes it on).
        return ConnectionRefusedError(
            f"dial tcp {self.endpoint.cluster}-apiserver:6443: connect: network is unreachable"
        )

    def __repr__(self) -> str:
        return f"<ComponentLink {self.component} -> {self.endpoint.cluster}>"


__all__ = ["APIEndpoint", "ComponentLink", "LinkCondition", "LinkConditions"]
