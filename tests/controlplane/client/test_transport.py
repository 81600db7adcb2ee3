"""The in-process transport: a proper ASGI conversation, responses streamed as the app writes them."""

from __future__ import annotations

import asyncio
from collections.abc import MutableMapping
from typing import Any

import httpx
import pytest

from controlplane.client import transport
from controlplane.client.config import Config
from controlplane.client.transport import InProcessTransport, build_http_client

Message = MutableMapping[str, Any]


class StreamingApp:
    """Sends its headers, then one chunk per ``release``; records what it saw and how it ended."""

    def __init__(self, *, ignore_disconnect: bool = False) -> None:
        self.scopes: list[MutableMapping[str, Any]] = []
        self.bodies: list[bytes] = []
        self.chunks: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.ended: asyncio.Future[str] | None = None
        self.ignore_disconnect = ignore_disconnect

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        self.ended = asyncio.get_running_loop().create_future()
        self.scopes.append(scope)
        self.bodies.append((await receive())["body"])
        await send(
            {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]}
        )

        async def disconnected() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass

        watcher = asyncio.ensure_future(disconnected())
        getter: asyncio.Future[bytes | None] | None = None
        try:
            while True:
                getter = asyncio.ensure_future(self.chunks.get())
                waiting: set[asyncio.Future[Any]] = {getter} if self.ignore_disconnect else {getter, watcher}
                done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                if watcher in done:
                    getter.cancel()
                    self.ended.set_result("disconnect")
                    return
                chunk = getter.result()
                if chunk is None:
                    await send({"type": "http.response.body", "body": b""})
                    self.ended.set_result("complete")
                    return
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        except asyncio.CancelledError:
            self.ended.set_result("cancelled")
            raise
        finally:
            watcher.cancel()
            if getter is not None:
                getter.cancel()


async def test_a_streamed_response_arrives_chunk_by_chunk_while_the_app_is_still_writing() -> None:
    app = StreamingApp()
    async with (
        httpx.AsyncClient(transport=InProcessTransport(app), base_url="http://inprocess") as client,
        client.stream("POST", "/watch?x=1", content=b"hello") as response,
    ):
        assert response.status_code == 200
        chunks = response.aiter_raw()
        await app.chunks.put(b"first\n")
        assert await anext(chunks) == b"first\n"  # delivered although the response has not ended
        await app.chunks.put(b"second\n")
        assert await anext(chunks) == b"second\n"
        await app.chunks.put(None)
        with pytest.raises(StopAsyncIteration):
            await anext(chunks)
    assert app.ended is not None and app.ended.result() == "complete"
    assert app.bodies == [b"hello"]
    scope = app.scopes[0]
    assert (scope["method"], scope["path"], scope["query_string"]) == ("POST", "/watch", b"x=1")
    assert scope["type"] == "http" and scope["asgi"]["version"] == "3.0"


async def test_closing_the_response_early_tells_the_app_the_client_disconnected() -> None:
    app = StreamingApp()
    async with httpx.AsyncClient(transport=InProcessTransport(app), base_url="http://inprocess") as client:
        async with client.stream("GET", "/watch") as response:
            await app.chunks.put(b"one\n")
            assert await anext(response.aiter_raw()) == b"one\n"
        # Leaving the block closed the response: the app saw http.disconnect and returned.
        assert app.ended is not None and app.ended.result() == "disconnect"


async def test_an_app_that_ignores_the_disconnect_is_cancelled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transport, "DISCONNECT_GRACE", 0.01)
    app = StreamingApp(ignore_disconnect=True)
    async with (
        httpx.AsyncClient(transport=InProcessTransport(app), base_url="http://inprocess") as client,
        client.stream("GET", "/watch"),
    ):
        pass
    assert app.ended is not None and app.ended.result() == "cancelled"


async def test_closing_the_transport_stops_responses_nobody_closed() -> None:
    app = StreamingApp()
    in_process = InProcessTransport(app)
    client = httpx.AsyncClient(transport=in_process, base_url="http://inprocess")
    response = await client.send(client.build_request("GET", "/watch"), stream=True)
    assert response.status_code == 200
    await client.aclose()  # closes the transport, which cancels the app still streaming
    assert app.ended is not None and app.ended.result() == "cancelled"


async def test_mount_prefix_is_stripped_and_becomes_the_root_path() -> None:
    app = StreamingApp()
    client = httpx.AsyncClient(
        transport=InProcessTransport(app, mount_prefix="/clusters/demo"),
        base_url="http://inprocess/clusters/demo",
    )
    async with client, client.stream("GET", "/api/v1/pods") as response:
        assert response.status_code == 200
        await app.chunks.put(None)
        await response.aread()
        outside = await client.get("http://inprocess/clusters/other/api")
        assert outside.status_code == 404
        assert outside.json()["reason"] == "NotFound"
    scope = app.scopes[0]
    assert scope["path"] == "/api/v1/pods"
    assert scope["root_path"] == "/clusters/demo"


async def test_without_a_mount_prefix_the_path_passes_through_unchanged() -> None:
    app = StreamingApp()
    async with (
        httpx.AsyncClient(
            transport=InProcessTransport(app), base_url="http://inprocess/clusters/demo"
        ) as client,
        client.stream("GET", "/api/v1/namespaces/a%2Fb/pods") as response,
    ):
        await app.chunks.put(None)
        await response.aread()
    assert app.scopes[0]["path"] == "/clusters/demo/api/v1/namespaces/a/b/pods"
    assert app.scopes[0]["raw_path"] == b"/clusters/demo/api/v1/namespaces/a%2Fb/pods"


async def test_identity_headers_replace_the_requests_own() -> None:
    app = StreamingApp()
    config = Config.for_in_process(
        app,
        "demo",
        bearer_token="from-config",
        identity_headers={"Authorization": "Bearer from-runtime"},
        user_agent="kube-scheduler/v1.37.0",
    )
    async with build_http_client(config) as client, client.stream("GET", "/api") as response:
        await app.chunks.put(None)
        await response.aread()
    headers = app.scopes[0]["headers"]
    assert (b"authorization", b"Bearer from-runtime") in headers
    assert [v for k, v in headers if k == b"authorization"] == [b"Bearer from-runtime"]
    assert (b"user-agent", b"kube-scheduler/v1.37.0") in headers
    assert app.scopes[0]["path"] == "/clusters/demo/api"


async def test_an_app_that_fails_before_answering_is_a_transport_error() -> None:
    async def broken(scope: Any, receive: Any, send: Any) -> None:
        raise RuntimeError("boom")

    async with httpx.AsyncClient(transport=InProcessTransport(broken), base_url="http://inprocess") as client:
        with pytest.raises(httpx.RemoteProtocolError, match="boom"):
            await client.get("/")


async def test_an_app_that_fails_half_way_breaks_the_body() -> None:
    async def half(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"par", "more_body": True})
        raise RuntimeError("crashed")

    async with httpx.AsyncClient(transport=InProcessTransport(half), base_url="http://inprocess") as client:
        with pytest.raises(httpx.RemoteProtocolError, match="crashed"):
            await client.get("/")


async def test_a_read_timeout_applies_while_waiting_for_the_response(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transport, "DISCONNECT_GRACE", 0.01)
    never = asyncio.Event()

    async def slow(scope: Any, receive: Any, send: Any) -> None:
        await never.wait()

    async with httpx.AsyncClient(
        transport=InProcessTransport(slow), base_url="http://inprocess", timeout=0.01
    ) as client:
        with pytest.raises(httpx.ReadTimeout):
            await client.get("/")


@pytest.mark.parametrize(
    "headers",
    [
        [(b"content-type", b"application/json"), (b"audit-id", b"a1")],
        [(b"content-type", b"application/json"), (b"content-length", b"17")],
        [],
    ],
)
async def test_a_whole_response_is_what_httpx_makes_of_the_same_answer(
    headers: list[tuple[bytes, bytes]],
) -> None:
    body = b'{"kind":"Status"}'
    expected = httpx.Response(200, headers=headers, content=body, extensions={"http_version": b"HTTP/1.1"})
    response = transport.whole_response(200, list(headers), body)
    assert isinstance(response, transport.WholeResponse)
    for name in (
        "status_code",
        "content",
        "text",
        "is_closed",
        "is_stream_consumed",
        "http_version",
        "encoding",
    ):
        assert getattr(response, name) == getattr(expected, name), name
    assert response.headers.raw == expected.headers.raw
    assert response.json() == expected.json()
    assert await response.aread() == body
    assert [chunk async for chunk in response.stream] == [body]  # type: ignore[union-attr]
    await response.aclose()


async def test_a_content_encoded_whole_response_is_decoded_by_httpx() -> None:
    import gzip

    body = gzip.compress(b"{}")
    response = transport.whole_response(200, [(b"content-encoding", b"gzip")], body)
    assert not isinstance(response, transport.WholeResponse)
    assert response.content == b"{}"
