"""Calling a webhook: one HTTPS POST of an AdmissionReview, with the webhook's CA and timeout.

The API server is the *client* here: it verifies the webhook server's certificate against the
configuration's ``caBundle`` (or the system's trust store without one), sends the review with
``?timeout=<n>s`` as upstream's REST client does, and gives up after ``timeoutSeconds``. Every way
the call can fail becomes a ``CallFailed`` in upstream's words (``failed to call webhook: Post
"https://...": context deadline exceeded``), which ``failurePolicy`` turns into a refusal or a
shrug. One HTTP client is kept per CA bundle, so the TLS setup is paid once, not per request.

The network between the API server and a webhook can fail too: the server is down (a connect is
refused) or far away (each call waits). ``WebhookClient.network`` says what it does to a call of a
given webhook now (``WebhookCondition``); the fault catalogue sets it (``controlplane/faults/
webhooklinks.py``) while ``webhook-down`` or ``webhook-slow`` is in force, and while it is None a
call checks nothing more.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol
from urllib.parse import urlsplit

import httpx

from controlplane.apiserver.admission.attributes import Attributes, Object
from controlplane.apiserver.admission.webhook import (
    CallFailed,
    InvalidResponse,
    Verdict,
    Webhook,
    WebhookIndex,
    parse_configurations,
    parse_response,
    review_request,
)

#: Upstream refuses webhook answers above 3 MiB as well (the request body limit).
MAX_RESPONSE: Final = 3 * 1024 * 1024


def call_url(hook: Webhook) -> str:
    """The URL with the ``timeout`` parameter client-go adds for a request with a deadline."""
    assert hook.url is not None
    return f"{hook.url}{'&' if '?' in hook.url else '?'}timeout={hook.timeout_seconds}s"


@dataclass(frozen=True, slots=True)
class WebhookCondition:
    """What the network between the API server and one webhook does to a call now: ``down`` (nothing
    listens there: the connect is refused), and each call waits ``delay`` seconds first (latency)."""

    down: bool = False
    delay: float = 0.0


class WebhookNetwork(Protocol):
    """Who decides the webhooks' links (``controlplane/faults/webhooklinks.py``)."""

    def condition(self, webhook: str) -> WebhookCondition | None: ...


def dial_address(url: str) -> str:
    """``host:port`` as Go's dialer names it in its errors (``dial tcp 127.0.0.1:9443``), 443 by
    default for https. (Go names the address a host name resolved to; the lab names the host.)"""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    return f"{host}:{port or (80 if parts.scheme == 'http' else 443)}"


class WebhookClient:
    """Posts AdmissionReviews; ``aclose`` when the API server stops.

    ``network``: the condition of its links to the webhooks, None while every one is sound.
    """

    def __init__(self) -> None:
        self._clients: dict[bytes | None, httpx.AsyncClient] = {}
        self.network: WebhookNetwork | None = None

    def _client(self, ca_bundle: bytes | None) -> httpx.AsyncClient:
        client = self._clients.get(ca_bundle)
        if client is None:
            context = ssl.create_default_context()
            if ca_bundle is not None:
                context = ssl.create_default_context(cadata=ca_bundle.decode("ascii", "replace"))
            client = httpx.AsyncClient(verify=context, follow_redirects=False, trust_env=False)
            self._clients[ca_bundle] = client
        return client

    async def post(self, hook: Webhook, review: Object) -> bytes:
        """The webhook's answer body; ``CallFailed`` if there is none to be had."""
        if hook.broken:
            raise CallFailed(hook.name, hook.broken)
        url = call_url(hook)
        try:
            client = self._client(hook.ca_bundle)
        except (ssl.SSLError, ValueError) as error:
            raise CallFailed(hook.name, f"failed to call webhook: invalid caBundle: {error}") from None
        body = json.dumps(review, separators=(",", ":")).encode()
        timeout = float(hook.timeout_seconds)
        if self.network is not None and (condition := self.network.condition(hook.name)) is not None:
            timeout = await self._across(hook, url, condition, timeout)
        try:
            response = await client.post(
                url,
                content=body,
                headers={"Content-Type": "application/json", "Accept": "application/json"},
                timeout=timeout,
            )
        except httpx.TimeoutException:
            raise CallFailed(hook.name, _deadline_exceeded(url)) from None
        except httpx.HTTPError as error:
            raise CallFailed(hook.name, f'failed to call webhook: Post "{url}": {error}') from None
        if not 200 <= response.status_code < 300:
            raise CallFailed(
                hook.name,
                f"failed to call webhook: the server responded with the status code {response.status_code} "
                "but did not return more information",
            )
        if len(response.content) > MAX_RESPONSE:
            raise CallFailed(hook.name, "failed to call webhook: the response is too large")
        return response.content

    @staticmethod
    async def _across(hook: Webhook, url: str, condition: WebhookCondition, budget: float) -> float:
        """Cross a faulty network to ``hook``: wait its delay within the call's ``budget`` of seconds
        (upstream puts the whole call, connect included, under a context of ``timeoutSeconds``:
        validating ``dispatcher.go`` ``callHook``), then connect; the seconds left for the call."""
        if condition.delay:
            if condition.delay >= budget:
                await asyncio.sleep(budget)
                raise CallFailed(hook.name, _deadline_exceeded(url))
            await asyncio.sleep(condition.delay)
            budget -= condition.delay
        if condition.down:
            # Go's net.Dialer error for a port nothing listens on (ECONNREFUSED), wrapped by the REST
            # client's url.Error: Post "<url>": dial tcp <host:port>: connect: connection refused.
            refused = f"dial tcp {dial_address(url)}: connect: connection refused"
            raise CallFailed(hook.name, f'failed to call webhook: Post "{url}": {refused}')
        return budget

    async def aclose(self) -> None:
        clients, self._clients = self._clients, {}
        for client in clients.values():
            await client.aclose()


def _deadline_exceeded(url: str) -> str:
    """The call ran out of ``timeoutSeconds`` (Go's ``context.DeadlineExceeded`` in a url.Error)."""
    return f'failed to call webhook: Post "{url}": context deadline exceeded'


class Configurations:
    """The webhooks of one kind of configuration, read from the watch cache, indexed by resource.

    The index is rebuilt only when the configurations change; the check is the number of cached
    configurations and their newest revision (any write gives a new, higher revision; a delete
    changes the number), so a cluster without webhooks pays one ``len`` per request.
    """

    def __init__(self, objects: Callable[[], Mapping[str, Any]], *, mutating: bool) -> None:
        #: The cache's objects by key (``WatchCache.objects``), each with ``.obj`` and ``.revision``.
        self._objects = objects
        self.mutating = mutating
        self._signature: tuple[int, int] = (0, 0)
        self._index = WebhookIndex([])

    def candidates(self, group: str, resource: str) -> list[Webhook]:
        objects = self._objects()
        if not objects:
            return []
        signature = (len(objects), max(c.revision for c in objects.values()))
        if signature != self._signature:
            self._index = WebhookIndex(
                parse_configurations([c.obj for c in objects.values()], mutating=self.mutating)
            )
            self._signature = signature
        return self._index.candidates(group, resource)


async def call(client: WebhookClient, hook: Webhook, a: Attributes, uid: str) -> Verdict:
    """One call: the review out, the checked verdict back; ``CallFailed`` for any failure."""
    body = await client.post(hook, review_request(a, uid))
    try:
        return parse_response(body, uid, mutating=hook.mutating)
    except InvalidResponse as error:
        raise CallFailed(hook.name, f"received invalid webhook response: {error}") from None


__all__ = [
    "Configurations",
    "WebhookClient",
    "WebhookCondition",
    "WebhookNetwork",
    "call",
    "call_url",
    "dial_address",
]
