"""A cluster's endpoint: requests reach the API server serving now; with none, the connection is refused,
as a TCP connection to an address nothing listens on (both ways the in-process transport calls an app)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from controlplane.client.config import Config
from controlplane.client.errors import ConnectError
from controlplane.client.rest import RESTClient
from controlplane.client.transport import InProcessTransport
from controlplane.endpoint import APIEndpoint


class Server:
    """An API server stand-in that answers every request with its own name."""

    def __init__(self, name: str, *, started: bool = True) -> None:
        self.name = name
        self.started = started

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        body = f'{{"kind":"Status","apiVersion":"v1","message":"{self.name}"}}'.encode()
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": body})


async def test_requests_reach_whichever_server_serves_now_and_are_refused_without_one() -> None:
    serving: list[Server | None] = [Server("first")]
    endpoint = APIEndpoint("demo", lambda: serving[0])
    client = RESTClient(Config.for_in_process(endpoint, "demo", mount_prefix="/clusters/demo", qps=-1))
    streaming = httpx.AsyncClient(
        transport=InProcessTransport(endpoint, mount_prefix="/clusters/demo"),
        base_url="http://lab/clusters/demo",
    )
    try:
        assert (await client.request_json("GET", "/version"))["message"] == "first"
        serving[0] = Server("second")  # restarted: the same address, another server
        assert (await client.request_json("GET", "/version"))["message"] == "second"

        for nobody in (None, Server("starting", started=False)):
            serving[0] = nobody
            with pytest.raises(ConnectError, match="connection refused: nothing listens for cluster 'demo'"):
                await client.request_json("GET", "/version")
            with pytest.raises(httpx.ConnectError):
                await streaming.get("/api/v1/pods", params={"watch": "true"})
        assert repr(endpoint) == "<APIEndpoint demo>"
    finally:
        await client.aclose()
        await streaming.aclose()
