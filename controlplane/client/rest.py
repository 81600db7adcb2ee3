"""The REST client: Kubernetes API calls as Python methods, with client-go's manners.

Every Kubernetes object lives at a URL built from its group, version, resource (plural), namespace
and name::

    /api/v1/namespaces/default/configmaps/web            core group ("")
    /apis/apps/v1/namespaces/default/deployments/web     named group
    /api/v1/nodes/node-1                                 cluster-scoped
    /api/v1/namespaces/default/pods/web/binding          a subresource

and every operation is an HTTP verb on it: GET (get, list, watch with ``?watch=true``), POST
(create), PUT (update; ``/status`` for the status), PATCH, DELETE. ``RESTClient.resource(group,
version, plural, namespace)`` gives a ``ResourceClient`` with one method per operation (client-go's
dynamic client); ``RESTClient.request`` reaches anything else (subresources: binding, log, scale).

What it does on every call, as client-go's ``rest/request.go`` does:

- **Client-side rate limit.** Each request first takes a token from the client's token bucket
  (``tokenbucket.py``; QPS 5, burst 10 by default). Watches are long-running and are not throttled on
  their first attempt (client-go's ``Watch`` has no ``tryThrottle`` before its first try); every retry is.
- **Retries the server asked for.** A 429 or 5xx answer with a ``Retry-After`` header is sent again
  after that many seconds, up to 10 times (``withRetry.IsNextRetry`` and ``checkWait`` in
  ``rest/with_retry.go``). That applies to every verb, writes too: a server that answers
  ``Retry-After`` (flow control's 429) did not perform the request. A connection that broke without an
  answer (reset, EOF) is retried only for GET, as if the server had said ``Retry-After: 1``; a write
  might have been applied, and writes are not idempotent (``isErrRetryableFunc`` in ``request()``).
  A 5xx without ``Retry-After`` is not retried.
- **Typed errors.** A failure raises the ``errors.py`` class of its Status (``NotFound``,
  ``Conflict``, ``Invalid`` ...); no answer at all raises ``TransportError``.
- **Watches** (``ResourceClient.watch``) stream newline-delimited JSON events as they arrive; an
  ``ERROR`` event raises its error (410 ``Expired``: the resourceVersion is too old, list again).
- **Metrics.** Every attempt's result is reported to the config's ``request_metrics``
  (``rest_client_requests_total{code, method, host}``; ``<error>`` when no answer came), as
  client-go's ``updateURLMetrics`` reports to ``tools/metrics`` (``clientmetrics.py``).
- **An Audit-ID of its own.** Each call gets a new UUID (unless the caller's ``headers`` name one),
  sent as the ``Audit-ID`` header, which the API server adopts as the request's Audit-ID (retries of
  the call send the same one). The client reports it with ``trace.note_request`` before sending, so a
  reconcile or a scheduling cycle run inside ``trace.recording_requests()`` can list the requests it
  made on its trace event. (Upstream's clients send no Audit-ID; the server makes one up.)
"""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import re
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import TracebackType
from typing import Any, Self
from urllib.parse import quote, urlsplit

import httpx

from controlplane.api import serializer
from controlplane.api.meta import Object
from controlplane.client import tokenbucket
from controlplane.client.config import Config
from controlplane.client.errors import ConnectError, TransportError, from_response, parse_retry_after
from controlplane.client.tokenbucket import TokenBucket
from controlplane.client.transport import (
    InProcessTransport,
    Target,
    build_http_client,
    default_headers,
    in_process_transport,
)
from controlplane.client.watch import EventType, MalformedEvent, WatchEvent, decode_event, raise_for_error
from controlplane.trace import note_request
from controlplane.uids import new_uid

logger = logging.getLogger(__name__)


JSON = "application/json"

#: Connection failures client-go retries for GET (``net.IsConnectionReset || net.IsProbableEOF``).
_BROKEN_CONNECTION = (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError)
#: The wait client-go pretends the server asked for after a broken connection (``retryAfterResponse``).
BROKEN_CONNECTION_RETRY_AFTER = 1.0
#: The ``code`` of ``rest_client_requests_total`` for an attempt that got no answer (client-go's).
ERROR_CODE = "<error>"
#: The request header naming a request's Audit-ID (``auditinternal.HeaderAuditID``).
AUDIT_ID_HEADER = "Audit-ID"
#: Distinct request URLs a client keeps parsed (see ``RESTClient._url``); all are dropped when full.
URL_CACHE_SIZE = 4096
#: A path whose segments need no percent-encoding and no dot-segment removal (``RESTClient._target``).
_PLAIN_PATH = re.compile(r"(?:/[A-Za-z0-9_~-][A-Za-z0-9._~-]*)+")
#: A query key or value that needs no percent-encoding (RFC 3986 unreserved characters).
_PLAIN = re.compile(r"[A-Za-z0-9._~-]*")


def new_audit_id() -> str:
    """A fresh Audit-ID, as the API server would make one (a UUID)."""
    return new_uid()


def _with_audit_id(headers: Mapping[str, str] | None) -> dict[str, str]:
    """``headers`` with an ``Audit-ID`` (the caller's, else a new one), reported to ``note_request``."""
    out = dict(headers) if headers else {}
    audit_id = None
    for name, value in out.items():
        if name.lower() == "audit-id":
            audit_id = value
            break
    if audit_id is None:
        audit_id = out[AUDIT_ID_HEADER] = new_audit_id()
    note_request(audit_id)
    return out


class PatchType(StrEnum):
    """The four kinds of PATCH body, by content type (apimachinery ``types.PatchType``)."""

    JSON = "application/json-patch+json"
    MERGE = "application/merge-patch+json"
    STRATEGIC_MERGE = "application/strategic-merge-patch+json"
    APPLY = "application/apply-patch+yaml"


@dataclass(frozen=True, kw_only=True)
class ListOptions:
    """The query of a list or watch (``metav1.ListOptions``)."""

    label_selector: str | None = None
    field_selector: str | None = None
    #: "" or None: the latest, consistent; "0": any recent state; "N": not older than N.
    resource_version: str | None = None
    resource_version_match: str | None = None
    limit: int | None = None
    continue_: str | None = None
    timeout_seconds: int | None = None
    allow_watch_bookmarks: bool = False
    send_initial_events: bool | None = None

    def params(self) -> dict[str, str]:
        params: dict[str, str] = {}
        if self.label_selector:
            params["labelSelector"] = self.label_selector
        if self.field_selector:
            params["fieldSelector"] = self.field_selector
        if self.resource_version:
            params["resourceVersion"] = self.resource_version
        if self.resource_version_match:
            params["resourceVersionMatch"] = self.resource_version_match
        if self.limit:
            params["limit"] = str(self.limit)
        if self.continue_:
            params["continue"] = self.continue_
        if self.timeout_seconds is not None:
            params["timeoutSeconds"] = str(self.timeout_seconds)
        if self.allow_watch_bookmarks:
            params["allowWatchBookmarks"] = "true"
        if self.send_initial_events is not None:
            params["sendInitialEvents"] = "true" if self.send_initial_events else "false"
        return params


def _segment(text: str) -> str:
    """``text`` percent-encoded as one path segment (``quote(text, safe="")``); a name made of the
    characters ``quote`` keeps as they are (nearly every one) is returned without the call."""
    return text if _PLAIN.fullmatch(text) is not None else quote(text, safe="")


def resource_path(
    group: str,
    version: str,
    plural: str,
    *,
    namespace: str | None = None,
    name: str | None = None,
    subresource: str | None = None,
) -> str:
    """``/api/v1/namespaces/<ns>/<plural>/<name>/<sub>`` or ``/apis/<group>/<version>/...``."""
    parts = ["/api", version] if not group else ["/apis", group, version]
    if namespace:
        parts += ["namespaces", _segment(namespace)]
    parts.append(plural)
    if name:
        parts.append(_segment(name))
    if subresource:
        parts.append(subresource)
    return "/".join(parts)


def _encode(body: Any, content_type: str | None) -> tuple[bytes | None, str | None]:
    if body is None:
        return None, content_type
    if isinstance(body, bytes):
        return body, content_type or JSON
    if isinstance(body, str):
        return body.encode(), content_type or JSON
    try:
        return serializer.encode(body), content_type or JSON
    except serializer.UnencodableObject:
        return json.dumps(body, separators=(",", ":")).encode(), content_type or JSON


def _transport_error(method: str, path: str, error: httpx.TransportError) -> TransportError:
    cls = ConnectError if isinstance(error, httpx.ConnectError) else TransportError
    return cls(f"{method} {path}: {type(error).__name__}: {error}")


def _retry_after(response: httpx.Response) -> float | None:
    """client-go ``checkWait``: 429 or any 5xx with a ``Retry-After`` header in seconds."""
    if response.status_code != 429 and response.status_code < 500:
        return None
    return parse_retry_after(response.headers.get("retry-after"))


class RESTClient:
    """A client of one cluster's API server, over the transport its ``Config`` names."""

    def __init__(
        self,
        config: Config,
        *,
        http_client: httpx.AsyncClient | None = None,
        rate_limiter: TokenBucket | None = None,
    ) -> None:
        self.config = config
        self.clock = config.clock
        #: In-process, requests that do not stream skip httpx (``InProcessTransport.call``).
        self._direct = in_process_transport(config) if http_client is None else None
        self._http = (
            http_client if http_client is not None else build_http_client(config, transport=self._direct)
        )
        self._urls: dict[tuple[str, tuple[tuple[str, str], ...]], httpx.URL] = {}
        self._targets: dict[httpx.URL, Target | None] = {}
        #: ``_target``'s answers by request line (path and params); dropped when full, as ``_urls``.
        self._lines: dict[tuple[str, tuple[tuple[str, str], ...]], Target | None] = {}
        base = self._http.base_url  # httpx keeps its path ending in "/"
        self._base = (base.scheme, base.host, base.port, base.path, base.raw_path)
        self._default_headers = {name.lower(): value for name, value in default_headers(config).items()}
        self._owns_http = http_client is None
        #: The server's ``host:port``, the ``host`` label of ``rest_client_requests_total``.
        self._host = urlsplit(config.host).netloc
        self.rate_limiter: TokenBucket | None = (
            rate_limiter
            if rate_limiter is not None
            else tokenbucket.for_config(config.qps, config.burst, clock=config.clock)
        )

    def with_own_rate_limiter(self) -> RESTClient:
        """A client over this one's connection with a token bucket of its own (``qps``, ``burst``).

        kube-controller-manager gives each controller a client of its own
        (``ControllerClientBuilder.ClientOrDie``), so each is throttled on its own: a controller with
        little to do is not queued behind a busy one. Closing it leaves the connection open."""
        clone = copy.copy(self)
        config = self.config
        clone.rate_limiter = tokenbucket.for_config(config.qps, config.burst, clock=config.clock)
        clone._owns_http = False
        return clone

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def resource(self, group: str, version: str, plural: str, namespace: str | None = None) -> ResourceClient:
        return ResourceClient(self, group, version, plural, namespace)

    # -- sending ------------------------------------------------------------------------------------

    def _count(self, code: str, method: str) -> None:
        """Report one attempt's result (client-go's ``updateURLMetrics``)."""
        if self.config.request_metrics is not None:
            self.config.request_metrics.increment(code, method, self._host)

    async def _throttle(self) -> None:
        if self.rate_limiter is not None:
            await self.rate_limiter.accept()

    def _token_at_hand(self) -> bool:
        """Take a token if there is one now, without a coroutine: ``_throttle`` would not wait then
        either, and nearly every request finds one. False: ``_throttle`` must wait for one."""
        return self.rate_limiter is None or self.rate_limiter.try_accept()

    def _url(self, path: str, params: Mapping[str, str] | None) -> httpx.URL:
        """The absolute URL of ``path`` with ``params``, parsed once per distinct request line.

        A component asks for the same few URLs again and again (its Events, its pods' status), and
        httpx would otherwise parse and re-join the base URL and the path for every request.
        """
        key = (path, tuple(params.items()) if params else ())
        url = self._urls.get(key)
        if url is None:
            if len(self._urls) >= URL_CACHE_SIZE:
                self._urls.clear()
                self._targets.clear()
            base = str(self._http.base_url)
            if not base.endswith("/"):  # "http://host": httpx keeps the path "/" but prints none
                base += "/"
            url = self._urls[key] = httpx.URL(base + path.lstrip("/"), params=params or None)
        return url

    def _target(
        self, transport: InProcessTransport, path: str, params: Mapping[str, str] | None
    ) -> Target | None:
        """Where ``path`` with ``params`` goes in the in-process app.

        Most request lines are plain: every path segment and every query key and value made of
        characters a URL carries as they are (RFC 3986's unreserved ones), no segment starting with a
        dot. For those, the URL httpx would build is the base URL, the path and ``k=v&...`` as given,
        so the target is put together from them directly (parsing a URL for each pod's name is a
        measurable cost); anything else goes through ``httpx.URL``, cached per request line.

        Either way the answer is kept per request line: a component sends the same few again and
        again (a kubelet its Lease renewal every few seconds). It depends on nothing but the line,
        the client's base URL and the transport's mount point, which never change.
        """
        key = (path, tuple(params.items()) if params else ())
        if key in self._lines:
            return self._lines[key]
        if len(self._lines) >= URL_CACHE_SIZE:
            self._lines.clear()
        if _PLAIN_PATH.fullmatch(path) is not None and (
            not params or all(_PLAIN.fullmatch(k) and _PLAIN.fullmatch(v) for k, v in params.items())
        ):
            scheme, host, port, base_path, base_raw_path = self._base
            relative = path[1:]
            query = "&".join([f"{k}={v}" for k, v in params.items()]) if params else ""
            target = transport.target_of(
                scheme,
                host,
                port,
                base_path + relative,
                base_raw_path + relative.encode("ascii"),
                query.encode("ascii"),
            )
        else:
            url = self._url(path, params)
            if url not in self._targets:
                self._targets[url] = transport.target(url)
            target = self._targets[url]
        self._lines[key] = target
        return target

    async def _send(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        stream: bool = False,
        throttle_first: bool = True,
        http_timeout: httpx.Timeout | None = None,
    ) -> httpx.Response:
        """Send with client-go's throttling and retries; the response of the last attempt.

        Every attempt carries the same ``Audit-ID`` (see the module docstring).
        """
        headers = _with_audit_id(headers)
        if throttle_first and not self._token_at_hand():
            await self._throttle()
        retries = 0
        while True:
            try:
                if self._direct is not None and not stream:
                    target = self._target(self._direct, path, params)
                    response = await self._call_direct(self._direct, method, target, content, headers)
                else:
                    request = self._http.build_request(
                        method,
                        self._url(path, params),
                        content=content,
                        headers=headers,
                        timeout=http_timeout if http_timeout is not None else self._http.timeout,
                    )
                    response = await self._http.send(request, stream=stream)
            except httpx.TransportError as error:
                self._count(ERROR_CODE, method)
                if (
                    method == "GET"
                    and isinstance(error, _BROKEN_CONNECTION)
                    and retries < self.config.max_retries
                ):
                    retries += 1
                    logger.debug("%s %s: %s; retry %d", method, path, error, retries)
                    await self.clock.sleep(BROKEN_CONNECTION_RETRY_AFTER)
                    await self._throttle()
                    continue
                raise _transport_error(method, path, error) from error
            self._count(str(response.status_code), method)
            wait = _retry_after(response)
            if wait is None or retries >= self.config.max_retries:
                return response
            await response.aclose()
            retries += 1
            logger.debug(
                "%s %s: %d with Retry-After %ss; retry %d", method, path, response.status_code, wait, retries
            )
            await self.clock.sleep(wait)
            await self._throttle()

    async def _call_direct(
        self,
        transport: InProcessTransport,
        method: str,
        target: Target | None,
        content: bytes | None,
        headers: Mapping[str, str],
    ) -> httpx.Response:
        """One attempt through ``InProcessTransport.call``, with the headers httpx would have sent."""
        merged = dict(self._default_headers)
        for name, value in headers.items():
            merged[name.lower()] = value
        raw = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in merged.items()]
        return await transport.call(method, target, raw, content or b"", read_timeout=self._http.timeout.read)

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str | None = None,
        accept: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        """Any API request (subresources such as binding, log, scale); the body is read.

        ``body`` is sent as JSON unless it is ``bytes`` or ``str`` (then as is, with ``content_type``).
        A failure raises its typed error.
        """
        content, ctype = _encode(body, content_type)
        all_headers = dict(headers or {})
        if ctype:
            all_headers["Content-Type"] = ctype
        if accept:
            all_headers["Accept"] = accept
        response = await self._send(method, path, params=params, content=content, headers=all_headers)
        if response.status_code >= 400:
            raise from_response(response.status_code, response.content, response.headers)
        return response

    async def request_json(self, method: str, path: str, **options: Any) -> Object:
        """``request``, with the answer decoded from JSON."""
        response = await self.request(method, path, **options)
        try:
            decoded = serializer.decode(response.content)
        except ValueError as error:
            raise TransportError(f"{method} {path}: the answer is not JSON: {error}") from None
        if not isinstance(decoded, dict):
            raise TransportError(f"{method} {path}: expected a JSON object, got {type(decoded).__name__}")
        return decoded

    async def open_stream(
        self, method: str, path: str, *, params: Mapping[str, str] | None = None, watch: bool = False
    ) -> httpx.Response:
        """A response whose body is read as it arrives (watch, ``log?follow=true``); the caller closes it.

        No read timeout applies: the server ends the stream (``timeoutSeconds``).
        """
        no_read_timeout = httpx.Timeout(self.config.timeout, read=None)
        response = await self._send(
            method, path, params=params, stream=True, throttle_first=not watch, http_timeout=no_read_timeout
        )
        if response.status_code >= 400:
            try:
                body = await response.aread()
            except httpx.TransportError as error:
                raise _transport_error(method, path, error) from error
            finally:
                await response.aclose()
            raise from_response(response.status_code, body, response.headers)
        return response

    def watch(self, path: str, params: Mapping[str, str]) -> Watch:
        """A watch of the collection at ``path`` (``watch=true`` is added)."""
        return Watch(self, path, {**params, "watch": "true"})


async def _json_lines(response: httpx.Response) -> AsyncIterator[bytes]:
    """The lines of a newline-delimited JSON stream, as they arrive.

    JSON as the API server writes it has no raw line breaks (inside strings they are escaped), so
    the lines are the bytes between ``\n``s: split as they come, and handed to the JSON decoder as
    bytes, without httpx's text decoding and its ``str.splitlines`` (which would also split at the
    Unicode line separators a JSON string may hold as they are).
    """
    rest = b""
    async for chunk in response.aiter_bytes():
        if rest:
            chunk = rest + chunk
        *lines, rest = chunk.split(b"\n")
        for line in lines:
            yield line
    if rest:
        yield rest


class Watch:
    """A running watch: an async iterator of ``WatchEvent``, parsed line by line as they arrive.

    Use it as ``async with resource.watch(...) as events: async for event in events: ...``; leaving
    the block closes the request (the server sees the client disconnect). The iteration ends when the
    server ends the stream (``timeoutSeconds``); an ``ERROR`` event raises its typed error.
    """

    def __init__(self, client: RESTClient, path: str, params: Mapping[str, str]) -> None:
        self._client = client
        self.path = path
        self.params = dict(params)
        self._response: httpx.Response | None = None
        self._lines: Any = None  # the response's line iterator (an async generator)
        self._stopped = False
        #: How a line becomes an event; an informer puts in its own, which shares what it decodes.
        self.decode: Callable[[bytes], WatchEvent] = decode_event

    async def start(self) -> None:
        if self._response is None and not self._stopped:
            self._response = await self._client.open_stream("GET", self.path, params=self.params, watch=True)
            self._lines = _json_lines(self._response)

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> WatchEvent:
        if self._stopped:
            raise StopAsyncIteration
        await self.start()
        while True:
            try:
                line: bytes = await anext(self._lines)
            except StopAsyncIteration:
                await self.stop()
                raise
            except httpx.TransportError as error:
                await self.stop()
                raise _transport_error("GET", self.path, error) from error
            if not line.strip():
                continue
            try:
                event = self.decode(line)
            except MalformedEvent:
                await self.stop()
                raise
            if event.type is EventType.ERROR:
                await self.stop()
            return raise_for_error(event)

    async def stop(self) -> None:
        """Close the request; iterating afterwards ends at once.

        Call it from the task that iterates (leaving ``async with`` does), or cancel that task. The
        in-process transport also ends an iteration running in another task cleanly; over HTTPS that
        reader may instead see the connection closed (``TransportError``).
        """
        self._stopped = True
        lines, self._lines = self._lines, None
        response, self._response = self._response, None
        if lines is not None:
            # RuntimeError: being iterated by another task; closing the response ends that iteration.
            with contextlib.suppress(RuntimeError):
                await lines.aclose()
        if response is not None:
            await response.aclose()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()


def _delete_options(
    *,
    grace_period_seconds: int | None,
    propagation_policy: str | None,
    preconditions: Mapping[str, str] | None,
    dry_run: bool,
) -> Object:
    options: Object = {"kind": "DeleteOptions", "apiVersion": "v1"}
    if grace_period_seconds is not None:
        options["gracePeriodSeconds"] = grace_period_seconds
    if propagation_policy is not None:
        options["propagationPolicy"] = propagation_policy
    if preconditions:
        options["preconditions"] = dict(preconditions)
    if dry_run:
        options["dryRun"] = ["All"]
    return options


def _write_params(
    *, field_manager: str | None, field_validation: str | None, dry_run: bool, force: bool | None = None
) -> dict[str, str]:
    params: dict[str, str] = {}
    if field_manager:
        params["fieldManager"] = field_manager
    if field_validation:
        params["fieldValidation"] = field_validation
    if dry_run:
        params["dryRun"] = "All"
    if force is not None:
        params["force"] = "true" if force else "false"
    return params


class ResourceClient:
    """The operations on one resource (client-go ``dynamic.ResourceInterface``), objects as dicts.

    With ``namespace`` None, a namespaced resource is listed and watched across all namespaces, and
    created in the namespace its object names.
    """

    def __init__(
        self, client: RESTClient, group: str, version: str, plural: str, namespace: str | None = None
    ) -> None:
        self.client = client
        self.group = group
        self.version = version
        self.plural = plural
        self.namespace = namespace

    def __repr__(self) -> str:
        gv = f"{self.group}/{self.version}" if self.group else self.version
        where = f" in {self.namespace}" if self.namespace else ""
        return f"<ResourceClient {self.plural}.{gv}{where}>"

    def in_namespace(self, namespace: str | None) -> ResourceClient:
        return ResourceClient(self.client, self.group, self.version, self.plural, namespace)

    def path(
        self, name: str | None = None, subresource: str | None = None, *, namespace: str | None = None
    ) -> str:
        return resource_path(
            self.group,
            self.version,
            self.plural,
            namespace=namespace or self.namespace,
            name=name,
            subresource=subresource,
        )

    def _object_path(self, body: Mapping[str, Any], subresource: str | None = None) -> str:
        meta = body.get("metadata") or {}
        name = meta.get("name")
        if not name:
            raise ValueError("the object has no metadata.name")
        return self.path(name, subresource, namespace=self.namespace or meta.get("namespace"))

    # -- reads --------------------------------------------------------------------------------------

    async def get(self, name: str, *, resource_version: str | None = None) -> Object:
        params = {"resourceVersion": resource_version} if resource_version else None
        return await self.client.request_json("GET", self.path(name), params=params)

    async def list(
        self,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_: str | None = None,
        resource_version: str | None = None,
        resource_version_match: str | None = None,
        timeout_seconds: int | None = None,
    ) -> Object:
        """One page of the collection (all of it without ``limit``): ``{"items": [...], "metadata": ...}``."""
        options = ListOptions(
            label_selector=label_selector,
            field_selector=field_selector,
            limit=limit,
            continue_=continue_,
            resource_version=resource_version,
            resource_version_match=resource_version_match,
            timeout_seconds=timeout_seconds,
        )
        return await self.client.request_json("GET", self.path(), params=options.params())

    def watch(
        self,
        *,
        resource_version: str | None = None,
        allow_bookmarks: bool = False,
        timeout_seconds: int | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        send_initial_events: bool | None = None,
        resource_version_match: str | None = None,
    ) -> Watch:
        """A watch from ``resource_version`` (None or "0": the current objects as ADDED first)."""
        options = ListOptions(
            label_selector=label_selector,
            field_selector=field_selector,
            resource_version=resource_version,
            resource_version_match=resource_version_match,
            timeout_seconds=timeout_seconds,
            allow_watch_bookmarks=allow_bookmarks,
            send_initial_events=send_initial_events,
        )
        return self.client.watch(self.path(), options.params())

    # -- writes -------------------------------------------------------------------------------------

    async def create(
        self,
        body: Mapping[str, Any],
        *,
        field_manager: str | None = None,
        field_validation: str | None = None,
        dry_run: bool = False,
    ) -> Object:
        namespace = self.namespace or (body.get("metadata") or {}).get("namespace")
        return await self.client.request_json(
            "POST",
            self.path(namespace=namespace),
            params=_write_params(
                field_manager=field_manager, field_validation=field_validation, dry_run=dry_run
            ),
            body=body,
        )

    async def update(
        self,
        body: Mapping[str, Any],
        *,
        field_manager: str | None = None,
        field_validation: str | None = None,
        dry_run: bool = False,
    ) -> Object:
        """PUT the object: 409 ``Conflict`` if its ``metadata.resourceVersion`` is not the current one."""
        return await self.client.request_json(
            "PUT",
            self._object_path(body),
            params=_write_params(
                field_manager=field_manager, field_validation=field_validation, dry_run=dry_run
            ),
            body=body,
        )

    async def update_status(
        self, body: Mapping[str, Any], *, field_manager: str | None = None, dry_run: bool = False
    ) -> Object:
        """PUT the ``status`` subresource: only the status changes, whatever else the body says."""
        return await self.client.request_json(
            "PUT",
            self._object_path(body, "status"),
            params=_write_params(field_manager=field_manager, field_validation=None, dry_run=dry_run),
            body=body,
        )

    async def patch(
        self,
        name: str,
        patch: Any,
        *,
        patch_type: PatchType | str = PatchType.MERGE,
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool | None = None,
        dry_run: bool = False,
    ) -> Object:
        """PATCH ``name`` with a JSON, merge, strategic merge or apply (server-side apply) patch."""
        return await self.client.request_json(
            "PATCH",
            self.path(name, subresource),
            params=_write_params(
                field_manager=field_manager, field_validation=None, dry_run=dry_run, force=force
            ),
            body=patch,
            content_type=str(patch_type),
        )

    async def delete(
        self,
        name: str,
        *,
        grace_period_seconds: int | None = None,
        propagation_policy: str | None = None,
        preconditions: Mapping[str, str] | None = None,
        dry_run: bool = False,
    ) -> Object:
        """DELETE ``name``; the answer is the object (being) deleted, or a Status."""
        options = _delete_options(
            grace_period_seconds=grace_period_seconds,
            propagation_policy=propagation_policy,
            preconditions=preconditions,
            dry_run=dry_run,
        )
        return await self.client.request_json("DELETE", self.path(name), body=options)

    async def delete_collection(
        self,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        grace_period_seconds: int | None = None,
        propagation_policy: str | None = None,
    ) -> Object:
        """DELETE every object of the collection that the selectors match."""
        options = _delete_options(
            grace_period_seconds=grace_period_seconds,
            propagation_policy=propagation_policy,
            preconditions=None,
            dry_run=False,
        )
        params = ListOptions(label_selector=label_selector, field_selector=field_selector).params()
        return await self.client.request_json("DELETE", self.path(), params=params, body=options)

    async def request(
        self,
        method: str,
        name: str,
        subresource: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str | None = None,
        accept: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        """A request on a subresource of ``name`` (``binding``, ``log``, ``scale``...), the raw response."""
        return await self.client.request(
            method,
            self.path(name, subresource),
            params=params,
            body=body,
            content_type=content_type,
            accept=accept,
            headers=headers,
        )


#: What a component is given to reach the API server: a client (the caller owns and closes it), or a
#: function making one (the component makes it when it starts and closes it when it stops).
ClientOrFactory = RESTClient | Callable[[], RESTClient]


class ClientLease:
    """A component's hold on its client: ``open()`` at start, ``close()`` at stop.

    Given a ``RESTClient``, ``open`` returns it and ``close`` leaves it open (its owner closes it);
    given a factory, ``open`` makes a new client each time and ``close`` closes the one it made. So a
    component can be stopped and started again, each time with a fresh connection of its own.
    """

    def __init__(self, client_or_factory: ClientOrFactory) -> None:
        self._source = client_or_factory
        self._made: RESTClient | None = None

    def open(self) -> RESTClient:
        if isinstance(self._source, RESTClient):
            return self._source
        if self._made is None:
            self._made = self._source()
        return self._made

    async def close(self) -> None:
        made, self._made = self._made, None
        if made is not None:
            await made.aclose()


__all__ = [
    "AUDIT_ID_HEADER",
    "BROKEN_CONNECTION_RETRY_AFTER",
    "ClientLease",
    "ClientOrFactory",
    "ListOptions",
    "PatchType",
    "RESTClient",
    "ResourceClient",
    "Watch",
    "new_audit_id",
    "resource_path",
]
