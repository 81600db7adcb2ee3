"""How the API server reaches a node's kubelet: the other direction of the hub.

Almost every request in Kubernetes goes *to* the API server. A few go *from* it: ``kubectl logs``,
``exec``, ``attach`` and ``port-forward`` need something only the node has, so the API server opens a
connection to the kubelet of the pod's node and relays the answer (kube-apiserver's
``pkg/kubelet/client``: a ``ConnectionInfoGetter`` finds the node's address and the kubelet's port,
``--kubelet-preferred-address-types`` says which address, and the request goes over HTTPS to port
10250 with the API server's own client certificate).

``KubeletConnections`` is that getter for Kubelab, with two ways to reach a kubelet:

- **in process** (the embedded cluster): the runtime ``register``\\ s each kubelet's ASGI application
  (``controlplane.components.kubelet.server``) under its node name, and a request is a direct call of
  that application, streamed chunk by chunk (a followed log never ends);
- **over HTTP** to a kubelet in another process: the Node's ``InternalIP`` (Kubelab's kubelets
  publish no resolvable host name) and ``status.daemonEndpoints.kubeletEndpoint.Port``, with ``httpx``.
  Kubelab's kubelets do not serve a socket yet, so this path is ready for them (and tested against an
  ASGI app mounted on a fake host) but unused by the embedded cluster; TLS and the API server's client
  certificate are future work (see docs/kubelet-simulation.md).

A response is handed back as a ``KubeletResponse``: status, content type, and the body as an async
iterator of chunks, with ``aclose()`` telling the kubelet the reader has gone.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, MutableMapping
from typing import Any, Protocol
from urllib.parse import quote, urlencode

import httpx

from controlplane.tasks import cancel_and_wait

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[MutableMapping[str, Any], Receive, Send], Awaitable[None]]

#: Seconds a kubelet gets to answer (headers) before the API server gives up.
CONNECT_TIMEOUT = 10.0
#: Seconds an in-process kubelet gets to return after its reader went away, before it is cancelled.
DISCONNECT_GRACE = 2.0
#: Which Node address to dial, in order (kube-apiserver ``--kubelet-preferred-address-types``, with
#: InternalIP first: Kubelab's node host names resolve nowhere).
PREFERRED_ADDRESS_TYPES = ("InternalIP", "InternalDNS", "Hostname", "ExternalIP", "ExternalDNS")


class KubeletUnavailable(Exception):
    """The kubelet could not be reached (no address, connection refused, no answer)."""


class KubeletResponse(Protocol):
    status: int
    content_type: str

    def chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives."""
        ...

    async def read(self) -> bytes:
        """The whole body (for errors and short answers)."""
        ...

    async def aclose(self) -> None:
        """The reader is done: stop the kubelet's side."""
        ...


# -- in process -------------------------------------------------------------------------------------


class _ASGIResponse:
    """A kubelet's ASGI application called directly: the response streams as the app sends it."""

    def __init__(self, app: ASGIApp, scope: MutableMapping[str, Any]) -> None:
        self._queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._gone = asyncio.Event()
        loop = asyncio.get_running_loop()
        self._started: asyncio.Future[tuple[int, str]] = loop.create_future()
        self._request_sent = False
        self._task = asyncio.create_task(self._run(app, scope), name=f"kubelet {scope['path']}")
        self.status = 0
        self.content_type = ""

    async def _receive(self) -> Message:
        if not self._request_sent:
            self._request_sent = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await self._gone.wait()
        return {"type": "http.disconnect"}

    async def _send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = {
                bytes(k).decode("latin-1").lower(): bytes(v).decode("latin-1")
                for k, v in message.get("headers", [])
            }
            if not self._started.done():
                self._started.set_result((int(message["status"]), headers.get("content-type", "")))
        elif message["type"] == "http.response.body":
            body = bytes(message.get("body", b""))
            if body:
                self._queue.put_nowait(body)
            if not message.get("more_body", False):
                self._queue.put_nowait(None)

    async def _run(self, app: ASGIApp, scope: MutableMapping[str, Any]) -> None:
        try:
            await app(scope, self._receive, self._send)
        except Exception as error:  # a broken kubelet is an unreachable kubelet
            if not self._started.done():
                self._started.set_exception(KubeletUnavailable(f"the kubelet failed: {error}"))
        finally:
            if not self._started.done():
                self._started.set_exception(KubeletUnavailable("the kubelet ended without an answer"))
            self._queue.put_nowait(None)

    async def start(self) -> None:
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT):
                self.status, self.content_type = await asyncio.shield(self._started)
        except BaseException:
            await self.aclose()
            raise

    async def chunks(self) -> AsyncIterator[bytes]:
        while (chunk := await self._queue.get()) is not None:
            yield chunk

    async def read(self) -> bytes:
        return b"".join([chunk async for chunk in self.chunks()])

    async def aclose(self) -> None:
        self._gone.set()
        if not self._task.done():
            done, _ = await asyncio.wait({self._task}, timeout=DISCONNECT_GRACE)
            if not done:
                await cancel_and_wait(self._task)
        if not self._started.done():
            self._started.cancel()


# -- over HTTP --------------------------------------------------------------------------------------


class _HTTPResponse:
    def __init__(self, response: httpx.Response) -> None:
        self._response = response
        self.status = response.status_code
        self.content_type = response.headers.get("content-type", "")

    async def chunks(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._response.aiter_raw():
                yield chunk
        except httpx.TransportError:
            return  # the kubelet went away mid-stream: the log simply ends

    async def read(self) -> bytes:
        return await self._response.aread()

    async def aclose(self) -> None:
        await self._response.aclose()


def node_address(node: Mapping[str, Any]) -> tuple[str, int]:
    """The host and port to dial for ``node`` (``GetConnectionInfo``); ``KubeletUnavailable`` if none."""
    status: Mapping[str, Any] = node.get("status") or {}
    addresses = [a for a in status.get("addresses") or [] if isinstance(a, Mapping)]
    for kind in PREFERRED_ADDRESS_TYPES:
        for address in addresses:
            if address.get("type") == kind and address.get("address"):
                port = ((status.get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}).get("Port")
                if not isinstance(port, int) or port <= 0:
                    raise KubeletUnavailable(f"invalid kubelet port {port!r} for node {node_name(node)}")
                return str(address["address"]), port
    known = [f"{a.get('type')}:{a.get('address')}" for a in addresses]
    raise KubeletUnavailable(f"no preferred addresses found; known addresses: [{' '.join(known)}]")


def node_name(node: Mapping[str, Any]) -> str:
    return str((node.get("metadata") or {}).get("name", ""))


class KubeletConnections:
    """Node name -> how to reach its kubelet (upstream's ``ConnectionInfoGetter`` plus the transport)."""

    def __init__(self, *, transport: httpx.AsyncBaseTransport | None = None, scheme: str = "http") -> None:
        self._apps: dict[str, ASGIApp] = {}
        #: Nodes whose kubelet ran in this process: their addresses are simulated, never dialled.
        self._simulated: set[str] = set()
        self._transport = transport
        self.scheme = scheme
        self._http: httpx.AsyncClient | None = None

    def register(self, node: str, app: ASGIApp) -> None:
        """An in-process kubelet for ``node`` (the runtime calls this when it starts the kubelet)."""
        self._apps[node] = app
        self._simulated.add(node)

    def unregister(self, node: str, app: ASGIApp | None = None) -> None:
        """Forget ``node``'s in-process kubelet (only if it is still ``app``, when given)."""
        if app is None or self._apps.get(node) is app:
            self._apps.pop(node, None)

    def __contains__(self, node: object) -> bool:
        return node in self._apps

    async def get(
        self, node: str, node_object: Mapping[str, Any] | None, path: str, query: Mapping[str, str]
    ) -> KubeletResponse:
        """GET ``path`` (already quoted) from ``node``'s kubelet; ``KubeletUnavailable`` if unreachable."""
        app = self._apps.get(node)
        if app is not None:
            scope: MutableMapping[str, Any] = {
                "type": "http",
                "asgi": {"version": "3.0"},
                "http_version": "1.1",
                "method": "GET",
                "scheme": "https",
                "path": path,
                "raw_path": path.encode(),
                "root_path": "",
                "query_string": urlencode(query).encode(),
                "headers": [(b"host", f"{node}:10250".encode())],
                "server": (node, 10250),
                "client": ("127.0.0.1", 0),
            }
            response = _ASGIResponse(app, scope)
            await response.start()
            return response
        if node_object is None:
            raise KubeletUnavailable(f'nodes "{node}" not found')
        host, port = node_address(node_object)
        url = f"{self.scheme}://{host}:{port}{path}"
        if query:
            url += "?" + urlencode(query)
        if node in self._simulated:
            # Its kubelet ran here and is stopped: nothing listens at its (simulated) address, so the
            # answer is what dialling a node whose kubelet is down gives upstream, never a real dial
            # to an address that may be somebody else's.
            raise KubeletUnavailable(f'Get "{url}": dial tcp {host}:{port}: connect: connection refused')
        if self._http is None:
            self._http = httpx.AsyncClient(
                transport=self._transport, timeout=httpx.Timeout(CONNECT_TIMEOUT, read=None)
            )
        try:
            request = self._http.build_request("GET", url)
            return _HTTPResponse(await self._http.send(request, stream=True))
        except httpx.TransportError as error:
            raise KubeletUnavailable(f'Get "{url}": {error or type(error).__name__}') from None

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None


def container_logs_path(namespace: str, pod: str, container: str) -> str:
    """``/containerLogs/{namespace}/{pod}/{container}`` (``LogLocation``), each part quoted."""
    return "/containerLogs/" + "/".join(quote(part, safe="") for part in (namespace, pod, container))


__all__ = [
    "PREFERRED_ADDRESS_TYPES",
    "KubeletConnections",
    "KubeletResponse",
    "KubeletUnavailable",
    "container_logs_path",
    "node_address",
]
