"""Transports: how a request reaches the API server, over HTTPS or without leaving the process.

A client builds HTTP requests; a *transport* delivers them and hands back the response. The REST
client above does not care which transport it has, and neither does the API server below: both run
the identical request pipeline. There are two:

**HTTPS** (``build_http_client`` for a ``Config`` with a server URL): an ordinary ``httpx`` client
that trusts the cluster CA and sends the bearer token, or presents the client certificate during the
TLS handshake, exactly what kubectl does.

**In-process** (``InProcessTransport``): the API server is an ASGI application, and ASGI is just a
calling convention: ``await app(scope, receive, send)``, where ``scope`` describes the request,
``receive()`` hands the app the request body, and ``send(message)`` takes the response from it (first
``http.response.start`` with the status and headers, then ``http.response.body`` chunks until one says
``more_body: False``). So a component in the same process can call the app directly.

httpx ships an ``ASGITransport`` for this, but it waits for the *whole* response before returning
it. A watch response never ends, so a watch through it would never deliver a single event. Here the
app runs in its own task and its ``send`` feeds an ``asyncio.Queue``; the response is returned as soon
as its headers are sent, and its body is read chunk by chunk from the queue while the app keeps
writing: a watch event reaches the client the moment the server sends it, as over a socket.

A client certificate has no handshake to ride in here, so the transport puts it where a TLS server puts
the certificate its client presented: the ASGI TLS extension, ``scope["extensions"]["tls"]
["client_cert_chain"]`` (PEM strings, the client's certificate first). The API server's x509
authenticator reads it from there whichever way the request came. (Over TLS the handshake also proves
that the client holds the certificate's private key; in-process, the code holding the ``Config`` is
trusted as the code holding the key would be.)

Most requests do not stream: a GET, a create, a status update. For those the REST client calls
``InProcessTransport.call`` instead: the app runs in the caller's own task, its messages are collected,
and the response is returned once it is complete. That skips httpx's request building, a task and a
queue per request: about two thirds of what an in-process request cost the client, which is most of
what a component's request cost beyond the API server's own work. The app sees the same scope either
way.

Closing the response early (the client stops a watch) is what a closed connection is to a server:
``receive()`` answers ``http.disconnect``, the app notices and returns, and if it does not within a
grace period its task is cancelled. No task outlives its response, or the transport.

An app with nothing listening behind it (a cluster whose API server is restarting, see
``Cluster.endpoint`` in ``controlplane/runtime.py``) raises ``ConnectionRefusedError`` before it
answers anything. The transport turns that into ``httpx.ConnectError``, what httpx raises when a TCP
connection is refused, so a client cannot tell the two apart: client-go's reflector backs off and
watches again on a refused connection (``isWatchErrorRetriable`` in ``tools/cache/reflector.go``),
and so does this project's.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import ssl
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from controlplane.client.config import ASGIApp, Config, Message

logger = logging.getLogger(__name__)

#: How long ``aclose`` waits for cancelled responses before it logs the ones that have not stopped.
STOP_WARNING_SECONDS = 5.0

#: Seconds an app gets to return after the client disconnected, before its task is cancelled.
DISCONNECT_GRACE = 5.0

NOT_FOUND_BODY = (
    b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
    b'"message":"the server could not find the requested resource","reason":"NotFound","code":404}'
)


@dataclass(frozen=True, slots=True)
class _End:
    """The response body is complete (the app sent ``more_body: False``)."""


@dataclass(frozen=True, slots=True)
class _Broken:
    """The app stopped before completing the response (it raised, or returned half-way)."""

    error: BaseException | None


_Chunk = bytes | _End | _Broken


class _Chunks:
    """The response's chunks on their way from the app to the one reader: an unbounded queue.

    Not an ``asyncio.Queue``: every open watch holds one for as long as it lasts, and a cluster
    keeps about a hundred open, where ``asyncio.Queue`` brings four deques and an ``Event`` each
    (about 3 KB) for a queue that holds a chunk or two at a time, with one reader and no bound.
    """

    __slots__ = ("_items", "_waiter")

    def __init__(self) -> None:
        self._items: list[_Chunk] = []
        self._waiter: asyncio.Future[None] | None = None

    def put_nowait(self, chunk: _Chunk) -> None:
        self._items.append(chunk)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def clear(self) -> None:
        self._items.clear()

    async def get(self) -> _Chunk:
        while not self._items:
            waiter = self._waiter = asyncio.get_running_loop().create_future()
            try:
                await waiter
            finally:
                self._waiter = None
        return self._items.pop(0)


class _Exchange:
    """One request and its response: both ends of the ASGI conversation with the app."""

    def __init__(self, body: bytes) -> None:
        self._body: bytes | None = body
        loop = asyncio.get_running_loop()
        self.started: asyncio.Future[tuple[int, list[tuple[bytes, bytes]]]] = loop.create_future()
        self.chunks = _Chunks()
        #: Set when the client is gone or the response is complete: ``receive`` answers disconnect.
        self.disconnected = asyncio.Event()
        self.complete = False
        self.closed = False

    # -- the app's side ----------------------------------------------------------------------------

    async def receive(self) -> Message:
        if self._body is not None:
            body, self._body = self._body, None
            return {"type": "http.request", "body": body, "more_body": False}
        await self.disconnected.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        if self.closed:
            return  # the client went away: what a server writes to a closed connection is lost
        kind = message["type"]
        if kind == "http.response.start":
            if self.started.done():
                raise RuntimeError("ASGI: http.response.start sent twice")
            headers = [(bytes(k), bytes(v)) for k, v in message.get("headers", [])]
            self.started.set_result((int(message["status"]), headers))
        elif kind == "http.response.body":
            if not self.started.done() or self.complete:
                raise RuntimeError("ASGI: http.response.body outside a response")
            body = message.get("body", b"")
            if body:
                self.chunks.put_nowait(bytes(body))
            if not message.get("more_body", False):
                self.complete = True
                self.chunks.put_nowait(_End())
                self.disconnected.set()

    def app_finished(self, error: BaseException | None) -> None:
        """The app returned (or raised): whatever it did not send will never come."""
        if not self.started.done() and self.closed:
            self.started.cancel()  # nobody waits for this response any more
        elif not self.started.done() and isinstance(error, ConnectionRefusedError):
            self.started.set_exception(httpx.ConnectError(f"connection refused: {error}"))
        elif not self.started.done():
            self.started.set_exception(
                httpx.RemoteProtocolError(f"the ASGI app ended without a response: {error!r}")
                if error is not None
                else httpx.RemoteProtocolError("the ASGI app ended without a response")
            )
        elif not self.complete:
            self.complete = True
            self.chunks.put_nowait(_Broken(error))
        self.disconnected.set()

    # -- the client's side -------------------------------------------------------------------------

    async def close(self, task: asyncio.Task[None]) -> None:
        """The client is done with the response: tell the app, give it a moment, then cancel it."""
        self.closed = True
        self.disconnected.set()
        self.chunks.clear()
        self.chunks.put_nowait(_End())  # a reader still waiting (another task) sees the body end
        if task.done():
            return
        try:
            await asyncio.wait({task}, timeout=DISCONNECT_GRACE)
        finally:
            if not task.done():
                task.cancel()
                await asyncio.wait({task})


class _ResponseStream(httpx.AsyncByteStream):
    """The response body as the app sends it, chunk by chunk."""

    def __init__(self, exchange: _Exchange, task: asyncio.Task[None], read_timeout: float | None) -> None:
        self._exchange = exchange
        self._task = task
        self._read_timeout = read_timeout
        self._done = False

    def __aiter__(self) -> _ResponseStream:
        return self

    async def __anext__(self) -> bytes:
        if self._done:
            raise StopAsyncIteration
        if self._read_timeout is None:  # a watch: no read timeout, so no timer to arm per chunk
            chunk = await self._exchange.chunks.get()
        else:
            try:
                async with asyncio.timeout(self._read_timeout):
                    chunk = await self._exchange.chunks.get()
            except TimeoutError:
                raise httpx.ReadTimeout("timed out reading the in-process response") from None
        if isinstance(chunk, bytes):
            return chunk
        self._done = True
        if isinstance(chunk, _End):
            raise StopAsyncIteration
        raise httpx.RemoteProtocolError(
            "the in-process server ended the response before its end"
            + (f": {chunk.error!r}" if chunk.error is not None else "")
        )

    async def aclose(self) -> None:
        self._done = True
        await self._exchange.close(self._task)


@dataclass(frozen=True, slots=True)
class Target:
    """What a URL is to the app: the scope's path, query and server, worked out once per URL."""

    path: str
    raw_path: bytes
    root_path: str
    query_string: bytes
    scheme: str
    server: tuple[str, int]
    host: bytes


class _Collected:
    """A whole response, collected from the app's ``send`` calls (``InProcessTransport.call``)."""

    __slots__ = ("_body", "chunks", "complete", "done", "headers", "status")

    def __init__(self, body: bytes) -> None:
        self._body: bytes | None = body
        self.status = 0
        self.headers: list[tuple[bytes, bytes]] = []
        self.chunks: list[bytes] = []
        self.complete = False
        self.done: asyncio.Future[None] | None = None

    async def receive(self) -> Message:
        if self._body is not None:
            body, self._body = self._body, None
            return {"type": "http.request", "body": body, "more_body": False}
        # Asked again: as over a connection, the client is gone once the response is complete.
        if not self.complete:
            self.done = asyncio.get_running_loop().create_future()
            await self.done
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            if self.status:
                raise RuntimeError("ASGI: http.response.start sent twice")
            self.status = int(message["status"])
            self.headers = [(bytes(k), bytes(v)) for k, v in message.get("headers", [])]
        elif kind == "http.response.body":
            if not self.status or self.complete:
                raise RuntimeError("ASGI: http.response.body outside a response")
            if body := message.get("body", b""):
                self.chunks.append(bytes(body))
            if not message.get("more_body", False):
                self.complete = True
                if self.done is not None and not self.done.done():
                    self.done.set_result(None)


class WholeResponse(httpx.Response):
    """A response the in-process app sent whole (``InProcessTransport.call``): an ``httpx.Response``
    in every way its readers can tell, in the state ``httpx.Response(status, headers=...,
    content=...)`` leaves one (read and closed, ``Content-Length`` added if the app sent none), but
    made by setting that state directly: httpx's constructor would wrap the body in a stream, read it
    back chunk by chunk and parse every header, a measurable part of what a request cost the client.
    The headers are parsed only when someone reads them (an error, a ``Retry-After``), which most
    callers never do.
    """

    def __init__(self, status_code: int, raw_headers: list[tuple[bytes, bytes]], content: bytes) -> None:
        # Everything ``httpx.Response.__init__`` sets, as it leaves a response made from ``content``.
        self.status_code = status_code
        self._raw_headers: list[tuple[bytes, bytes]] | None = raw_headers
        self._headers: httpx.Headers | None = None
        self._request: httpx.Request | None = None
        self.next_request: httpx.Request | None = None
        self.extensions = {"http_version": b"HTTP/1.1"}
        self.history = []
        self.is_closed = True
        self.is_stream_consumed = True
        self.default_encoding = "utf-8"
        self.stream = httpx.ByteStream(content)
        self._num_bytes_downloaded = 0  # as httpx leaves it: it counts only what a stream reads
        self._content = content

    @property
    def headers(self) -> httpx.Headers:
        if self._headers is None:
            headers = httpx.Headers(self._raw_headers)
            headers.setdefault("Content-Length", str(len(self._content)))  # what ``content=`` adds
            self._headers, self._raw_headers = headers, None
        return self._headers

    @headers.setter
    def headers(self, value: httpx.Headers) -> None:
        self._headers, self._raw_headers = value, None


def whole_response(status: int, headers: list[tuple[bytes, bytes]], content: bytes) -> httpx.Response:
    """The response of a request the app answered whole: a ``WholeResponse``, or httpx's own for a
    body that is content-encoded (httpx would decode it when reading; the API server never encodes)."""
    if any(name == b"content-encoding" for name, _ in headers):
        return httpx.Response(
            status, headers=headers, content=content, extensions={"http_version": b"HTTP/1.1"}
        )
    return WholeResponse(status, headers, content)


class InProcessTransport(httpx.AsyncBaseTransport):
    """An httpx transport that calls an ASGI app in this process and streams its responses.

    ``mount_prefix`` is stripped from request paths (and becomes the scope's ``root_path``) when ``app``
    is one cluster's API server rather than the router that mounts it; ``identity_headers`` are put on
    every request, replacing any header of the same name; ``client_certificate`` returns the PEM of the
    client certificate (chain) each request presents in the scope's TLS extension.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        identity_headers: Mapping[str, str] | None = None,
        mount_prefix: str = "",
        client: tuple[str, int] = ("127.0.0.1", 0),
        client_certificate: Callable[[], bytes] | None = None,
    ) -> None:
        self.app = app
        self.client_certificate = client_certificate
        self._chain: tuple[bytes, list[str]] | None = None
        self.mount_prefix = mount_prefix.rstrip("/")
        self.client = client
        self._identity = [
            (k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (identity_headers or {}).items()
        ]
        #: The names of ``_identity``: a request's own headers of these names are dropped.
        self._identity_names = frozenset(name for name, _ in self._identity)
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False

    def target(self, url: httpx.URL) -> Target | None:
        """Where ``url`` goes in the app; None if it is not under the app's mount point."""
        return self.target_of(
            url.scheme, url.host, url.port, url.path, url.raw_path.split(b"?", 1)[0], url.query
        )

    def target_of(
        self, scheme: str, host: str, port: int | None, path: str, raw_path: bytes, query: bytes
    ) -> Target | None:
        """``target`` from a URL's parts: ``path`` decoded, ``raw_path`` as sent (no query), ``query``
        the encoded query string, ``port`` None for the scheme's default."""
        root_path = ""
        if self.mount_prefix:
            prefix = self.mount_prefix
            if path != prefix and not path.startswith(prefix + "/"):
                return None
            path = path[len(prefix) :] or "/"
            raw_path = raw_path[len(prefix.encode()) :] or b"/"
            root_path = prefix
        host_header = host if port is None else f"{host}:{port}"
        server = (host, port or (443 if scheme == "https" else 80))
        return Target(path, raw_path, root_path, query, scheme, server, host_header.encode("ascii"))

    def _scope(self, method: str, target: Target, raw_headers: list[tuple[bytes, bytes]]) -> dict[str, Any]:
        replaced = self._identity_names
        headers = [(k.lower(), v) for k, v in raw_headers if k.lower() not in replaced]
        headers.extend(self._identity)
        scope: dict[str, Any] = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": method,
            "scheme": target.scheme,
            "path": target.path,
            "raw_path": target.raw_path,
            "root_path": target.root_path,
            "query_string": target.query_string,
            "headers": headers,
            "server": target.server,
            "client": self.client,
        }
        if self.client_certificate is not None:
            scope["extensions"] = {"tls": self._tls_extension(self.client_certificate())}
        return scope

    async def call(
        self,
        method: str,
        target: Target | None,
        headers: list[tuple[bytes, bytes]],
        body: bytes,
        *,
        read_timeout: float | None,
    ) -> httpx.Response:
        """A request whose response is read whole, served in the caller's task (the module docstring).

        ``headers`` are the request's, lower-case, without ``host`` and ``content-length`` (added here).
        Failures are httpx's, as from ``handle_async_request``: ``ReadTimeout`` when the app has not
        answered within ``read_timeout`` seconds (the app is cancelled then, as if the client went away),
        ``RemoteProtocolError`` when it ended without a complete response.
        """
        if self._closed:
            raise httpx.ConnectError("the in-process transport is closed")
        if target is None:  # not under the app's mount point: what the router answers for unknown paths
            return httpx.Response(404, headers={"content-type": "application/json"}, content=NOT_FOUND_BODY)
        raw = [(b"host", target.host), *headers]
        if body or method in ("POST", "PUT", "PATCH"):
            raw.append((b"content-length", str(len(body)).encode()))
        scope = self._scope(method, target, raw)
        collected = _Collected(body)
        # A request over a socket always lets the event loop run other tasks before its answer comes;
        # one served from caches here might not, and a component looping over such requests would
        # starve every other task of the process. So it yields once, as a socket would make it.
        await asyncio.sleep(0)
        try:
            async with asyncio.timeout(read_timeout):
                await self.app(scope, collected.receive, collected.send)
        except TimeoutError:
            raise httpx.ReadTimeout("timed out waiting for the in-process response") from None
        except ConnectionRefusedError as refused:  # nothing listens there (see the module docstring)
            raise httpx.ConnectError(f"connection refused: {refused}") from None
        except Exception as failure:  # a bug in the app: the client sees a broken response, like a reset
            logger.exception("in-process ASGI app failed on %s %s", method, target.path)
            raise httpx.RemoteProtocolError(
                f"the ASGI app ended without a response: {failure!r}"
            ) from failure
        if not collected.complete:
            raise httpx.RemoteProtocolError(
                "the ASGI app ended without a response"
                if not collected.status
                else "the in-process server ended the response before its end"
            )
        return whole_response(collected.status, collected.headers, b"".join(collected.chunks))

    def _tls_extension(self, pem: bytes) -> dict[str, Any]:
        """The ASGI TLS extension of a connection whose client presented ``pem`` (split per certificate)."""
        if self._chain is None or self._chain[0] is not pem:
            self._chain = (pem, pem_chain(pem))
        return {
            "server_cert": None,
            "client_cert_chain": list(self._chain[1]),
            "client_cert_name": None,
            "client_cert_error": None,
            "tls_version": None,
            "cipher_suite": None,
        }

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self._closed:
            raise httpx.ConnectError("the in-process transport is closed", request=request)
        target = self.target(request.url)
        if target is None:  # not under the app's mount point: what the router answers for unknown paths
            return httpx.Response(404, headers={"content-type": "application/json"}, content=NOT_FOUND_BODY)
        scope = self._scope(request.method, target, list(request.headers.raw))
        body = await request.aread()
        timeouts: Mapping[str, float | None] = request.extensions.get("timeout", {})
        read_timeout = timeouts.get("read")
        exchange = _Exchange(body)
        task = asyncio.create_task(
            self._run(scope, exchange), name=f"in-process {request.method} {request.url.path}"
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        try:
            async with asyncio.timeout(read_timeout):
                status, headers = await asyncio.shield(exchange.started)
        except TimeoutError:
            await exchange.close(task)
            raise httpx.ReadTimeout(
                "timed out waiting for the in-process response", request=request
            ) from None
        except BaseException:
            await exchange.close(task)
            raise
        return httpx.Response(
            status,
            headers=headers,
            stream=_ResponseStream(exchange, task, read_timeout),
            extensions={"http_version": b"HTTP/1.1"},
        )

    async def _run(self, scope: dict[str, Any], exchange: _Exchange) -> None:
        error: BaseException | None = None
        try:
            await self.app(scope, exchange.receive, exchange.send)
        except asyncio.CancelledError as cancelled:
            error = cancelled
            raise
        except ConnectionRefusedError as refused:  # nothing listens there (see the module docstring)
            error = refused
        except Exception as failure:  # a bug in the app: the client sees a broken response, like a reset
            logger.exception("in-process ASGI app failed on %s %s", scope["method"], scope["path"])
            error = failure
        finally:
            exchange.app_finished(error)

    async def aclose(self) -> None:
        """Stop every response still running (watches the client never closed)."""
        self._closed = True
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=STOP_WARNING_SECONDS)
        if pending:
            # A handler that swallows its cancellation would hold the close forever: say where it is.
            stacks = "\n".join(f"{task!r}: {task.get_stack(limit=8)!r}" for task in pending)
            logger.error("%d in-process responses did not stop when cancelled:\n%s", len(pending), stacks)
            await asyncio.wait(pending)


_PEM_CERTIFICATE = re.compile(rb"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", re.DOTALL)


def pem_chain(pem: bytes) -> list[str]:
    """The certificates of a PEM bundle as PEM strings, in order; bytes without any are kept as one
    (undecodable) string, for the server to refuse as the garbage it is."""
    blocks = [block.decode("ascii", "replace") + "\n" for block in _PEM_CERTIFICATE.findall(pem)]
    return blocks or [pem.decode("utf-8", "replace")]


def load_client_certificate(context: ssl.SSLContext, cert_pem: bytes, key_pem: bytes) -> None:
    """Have ``context`` present this certificate and key. Python's ``ssl`` reads them only from files,
    so they are written to a private temporary directory and removed as soon as they are loaded."""
    with tempfile.TemporaryDirectory(prefix="kubelab-client-cert-") as directory:  # mode 0700
        paths = []
        for name, data in (("client.crt", cert_pem), ("client.key", key_pem)):
            path = os.path.join(directory, name)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            paths.append(path)
        context.load_cert_chain(paths[0], paths[1])


def ssl_context(config: Config) -> ssl.SSLContext | bool:
    """What httpx should verify the server against (the cluster CA, the system's CAs, or nothing), and
    the client certificate to present, if the config has one."""
    if config.cert_data and config.key_data:
        context = ssl.create_default_context(
            cadata=config.ca_data.decode("ascii") if config.ca_data else None
        )
        if config.insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        load_client_certificate(context, config.cert_data, config.key_data)
        return context
    if config.insecure:
        return False
    if config.ca_data:
        return ssl.create_default_context(cadata=config.ca_data.decode("ascii"))
    return True


class _NoCookies(httpx.Cookies):
    """No cookie jar: the Kubernetes API sets no cookies and client-go keeps none. httpx would
    otherwise parse every response for ``Set-Cookie`` through ``http.cookiejar``, a measurable cost
    for a component that makes thousands of requests a second."""

    def extract_cookies(self, response: httpx.Response) -> None:
        return None

    def set_cookie_header(self, request: httpx.Request) -> None:
        return None


def _without_cookies(client: httpx.AsyncClient) -> httpx.AsyncClient:
    client._cookies = _NoCookies()  # the ``cookies`` setter would copy it into a plain jar
    return client


def default_headers(config: Config) -> dict[str, str]:
    """The headers every request of a client of ``config`` carries (a request's own may replace them)."""
    headers = {"User-Agent": config.user_agent, "Accept": "application/json"}
    if config.bearer_token:
        headers["Authorization"] = f"Bearer {config.bearer_token}"
    return headers


def in_process_transport(config: Config) -> InProcessTransport | None:
    """The in-process transport to ``config.app`` (None: ``config`` names a server URL instead)."""
    if config.app is None:
        return None
    certificate = config.cert_source
    if certificate is None and config.cert_data:
        cert_data = config.cert_data
        certificate = lambda: cert_data  # noqa: E731
    return InProcessTransport(
        config.app,
        identity_headers=config.identity_headers,
        mount_prefix=config.mount_prefix,
        client_certificate=certificate,
    )


def build_http_client(config: Config, *, transport: InProcessTransport | None = None) -> httpx.AsyncClient:
    """The httpx client for ``config``: in-process if it names an app (through ``transport``, when
    given), HTTPS (or HTTP) otherwise."""
    headers = default_headers(config)
    timeout = httpx.Timeout(config.timeout)
    if transport is None:
        transport = in_process_transport(config)
    if transport is not None:
        return _without_cookies(
            httpx.AsyncClient(base_url=config.host, transport=transport, headers=headers, timeout=timeout)
        )
    return _without_cookies(
        httpx.AsyncClient(base_url=config.host, headers=headers, timeout=timeout, verify=ssl_context(config))
    )


__all__ = [
    "DISCONNECT_GRACE",
    "InProcessTransport",
    "Target",
    "WholeResponse",
    "build_http_client",
    "default_headers",
    "in_process_transport",
    "pem_chain",
    "ssl_context",
]
