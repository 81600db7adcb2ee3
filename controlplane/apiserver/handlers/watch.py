"""Watch: a long-lived response that streams every change to the objects a client is interested in.

``GET /api/v1/namespaces/default/pods?watch=true&resourceVersion=1234`` answers 200 and then never
finishes on its own: each change is one line of JSON, ``{"type":"ADDED","object":{...}}``, sent as a
chunk of a chunked response. This is how the scheduler sees new pods, how a kubelet sees the pods bound
to it and how ``kubectl get -w`` prints updates.

The details clients rely on (apiserver ``endpoints/handlers/watch.go``, ``storage/cacher``):

- from a resourceVersion, every change after it; without one (or ``"0"``), first the current objects
  as ``ADDED``, then changes;
- a resourceVersion older than the cache's window: the response is still 200, but its only event is
  ``ERROR`` with a 410 Expired Status; the client must list again;
- ``allowWatchBookmarks``: now and then a ``BOOKMARK`` carrying only a newer resourceVersion, so a
  client that resumes later does not start from a too-old one;
- ``sendInitialEvents=true`` (kubectl 1.35+): the current objects as ``ADDED``, then a bookmark
  annotated ``k8s.io/initial-events-end: "true"``, then changes;
- selectors apply to transitions: an object that starts matching arrives as ``ADDED``, one that stops
  matching as ``DELETED``;
- the deprecated path that names an object (``/api/v1/watch/namespaces/default/configmaps/app-config``)
  watches that object only: upstream's ``ListResource`` (``endpoints/handlers/get.go``) turns the name
  into a ``metadata.name`` field selector, and refuses a field selector for another name (400);
- ``timeoutSeconds`` ends the stream cleanly, on a bookmark when the client allows them; a stream the
  server cuts (it shuts down or restarts, the client fell too far behind) ends without one.

On the trace a client's watch is the diagram's edge from ``apiserver`` to the watcher's node
(``scheduler``, ``kubelet:node-1``, ``user:alice``), named by the watch request's Audit-ID:
``watch.opened`` (resource, namespace, selectors), one ``watch.event`` per change sent (revision, type,
key, resource, kind, namespace, name; the revision is what links it to the write, see ``trace/causality.py``),
and ``watch.closed`` with the reason it ended. Bookmarks carry no change and are not traced. The
events are built from the cache's fields only when the trace is enabled: no JSON is encoded for them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
from datetime import UTC, datetime
from typing import Any

from controlplane.api import selectors
from controlplane.apiserver import errors, pagination, tables
from controlplane.apiserver.handlers.resources import CACHE_WAIT, Context, Reply, build_filter
from controlplane.apiserver.http import Send, dumps
from controlplane.apiserver.watchcache import CacheEvent, TooOldResourceVersion
from controlplane.trace import TraceSink, nodes

#: How often a watch with bookmarks gets one (upstream: about once a minute).
BOOKMARK_INTERVAL = 60.0
#: Upstream's default request timeout for watches: 1800 s, times a random factor in [1, 2).
DEFAULT_TIMEOUT = 1800.0


async def watch(ctx: Context, *, bookmark_interval: float = BOOKMARK_INTERVAL) -> Reply:
    """Stream events until the client leaves, the timeout passes or the watcher is closed."""
    send, trace = ctx.send, ctx.backends.trace
    query = ctx.request.query
    send_initial = query.get("sendInitialEvents")
    bookmarks = ctx.request.flag("allowWatchBookmarks")
    pagination.validate_list_options(
        resource_version=query.get("resourceVersion"),
        match=query.get("resourceVersionMatch"),
        continue_=query.get("continue"),
        watch=True,
        send_initial_events=send_initial,
    )
    cache = ctx.cache
    if cache is None:
        raise errors.method_not_supported(ctx.rtype.plural, ctx.rtype.group, "watch")
    matches = build_filter(ctx)
    rv = pagination.parse_resource_version(query.get("resourceVersion"))
    timeout = _timeout(query.get("timeoutSeconds"))
    namespace = ctx.namespace if ctx.rtype.namespaced else None
    initial = send_initial == "true" or (rv in (None, 0) and send_initial is None)

    if rv and not await cache.wait_for(rv, CACHE_WAIT):
        raise errors.too_large_resource_version(rv, cache.revision)
    if rv is None:
        await cache.wait_for(await ctx.store.current_revision(), CACHE_WAIT)

    try:
        watcher = cache.watch(namespace, matches, None if initial else rv, trigger_value=_trigger_value(ctx))
    except TooOldResourceVersion as error:
        tracer = _Tracer(ctx, trace, None if initial else rv)
        await _start(send, ctx)
        status = errors.resource_expired(str(error)).status()
        await _chunk(send, {"type": "ERROR", "object": status})
        await send({"type": "http.response.body", "body": b""})
        tracer.closed(str(error))
        return Reply.streamed(200)
    tracer = _Tracer(ctx, trace, None if initial else rv)
    # While it is open, the watch is part of the cluster's state a topology page starts from
    # (controlplane/diagram.py), whether or not anyone traced its opening.
    watcher.diagram = {
        **{name: tracer.common[name] for name in ("watch", "from", "to")},
        "resource": ctx.rtype.plural,
        "namespace": ctx.namespace if ctx.rtype.namespaced else "",
    }
    # Headers go out now, not with the first event: a client must see its 200 even on a quiet watch.
    await _start(send, ctx)

    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    next_bookmark = loop.time() + bookmark_interval if bookmarks else deadline
    # One timer for the deadline and the bookmarks, and one task for the client leaving; no per-event
    # tasks. Both only poke the watcher, so everything is decided in the loop below.
    timer = loop.call_at(min(deadline, next_bookmark), watcher.poke)
    disconnected = asyncio.ensure_future(_wait_disconnect(ctx))
    disconnected.add_done_callback(lambda _: watcher.close("the client went away"))
    encoder = _Encoder(ctx)
    initial_left = watcher.initial if send_initial == "true" else -1
    if initial_left == 0:
        await _chunk_raw(send, encoder.bookmark(cache.revision, initial_end=True))
        initial_left = -1
    reason = "the API server stopped serving it"
    try:
        while True:
            events = await watcher.take()
            if watcher.closed_reason is not None:
                break  # closed: the client left, or the cache let it go; the client re-watches or re-lists
            if events and trace.enabled:
                tracer.events(events)
            out: list[bytes] = []
            for event in events:
                encoder.event(event, out)
                if initial_left > 0:
                    initial_left -= 1
                    if initial_left == 0:
                        # Every initial ADDED is out: tell the client where the initial state ends,
                        # at the revision the state was taken at (not the newest object's: a client
                        # resumes from it, and upstream's cacher sets it to the watch cache's revision,
                        # ``bookmarkAfterResourceVersion`` in storage/cacher/cacher.go).
                        out.append(encoder.bookmark(watcher.initial_revision, initial_end=True))
                        initial_left = -1
            now = loop.time()
            if now >= deadline:
                if out:
                    await _chunk_raw(send, b"".join(out))
                reason = "timeout"
                break
            if bookmarks and now >= next_bookmark:
                out.append(encoder.bookmark(cache.revision))
                next_bookmark = now + bookmark_interval
                timer.cancel()
                timer = loop.call_at(min(deadline, next_bookmark), watcher.poke)
            if out:
                await _chunk_raw(send, b"".join(out))
        if bookmarks and reason == "timeout" and not disconnected.done():
            # A watch that times out ends on a bookmark, so its client resumes from there (upstream's
            # cacheWatcher sends one just before the deadline, ``nextBookmarkTime`` in
            # ``storage/cacher/cache_watcher.go``). A watch the server cut (it shuts down, the watcher
            # fell behind, the cache lost its history) ends without one, as upstream's: its client
            # resumes from the last change it really got, and learns from a 410 if that is gone.
            await _chunk_raw(send, encoder.bookmark(cache.revision))
    finally:
        timer.cancel()
        cache.forget(watcher)
        disconnected.cancel()
        tracer.closed(watcher.closed_reason or reason)
        with contextlib.suppress(Exception):
            await send({"type": "http.response.body", "body": b""})
    return Reply.streamed(200)


class _Tracer:
    """The trace events of one client watch (see the module docstring); silent when tracing is off."""

    def __init__(self, ctx: Context, trace: TraceSink, revision: int | None) -> None:
        self.ctx = ctx
        self.trace = trace
        request = ctx.request
        #: The fields every event of this watch has: the request, the edge, which watch.
        self.common: dict[str, Any] = {
            "id": request.audit_id,
            "from": nodes.APISERVER,
            "to": ctx.source,
            "source": "apiserver",
            "watch": request.audit_id,
        }
        if trace.enabled:
            query = request.query
            opened: dict[str, Any] = {
                "resource": ctx.rtype.plural,
                "namespace": ctx.namespace if ctx.rtype.namespaced else "",
                "revision": revision,
            }
            if query.get("labelSelector"):
                opened["label_selector"] = query["labelSelector"]
            if query.get("fieldSelector"):
                opened["field_selector"] = query["fieldSelector"]
            trace.emit("watch.opened", **self.common, **opened)

    def events(self, events: list[CacheEvent]) -> None:
        """One ``watch.event`` per change sent, from the cache's fields (nothing is encoded)."""
        kind = self.ctx.rtype.kind
        resource = self.ctx.rtype.plural
        emit = self.trace.emit
        common = self.common
        prefix = (self.ctx.rtype.storage_prefix or "") + "/"
        namespaced = self.ctx.rtype.namespaced
        for event in events:
            if event.key.startswith(prefix):  # the key names it: no need to decode the object
                key = event.key
                namespace, _, name = (
                    key[len(prefix) :].rpartition("/") if namespaced else ("", "", key[len(prefix) :])
                )
            else:  # the initial state's ADDED events come from the cache's objects, without their key
                meta = event.object.obj.get("metadata") or {}
                namespace = str(meta.get("namespace") or "")
                name = str(meta.get("name") or "")
                key = self.ctx.rtype.key(namespace, name)
            emit(
                "watch.event",
                **common,
                event=event.type,
                revision=event.revision,
                key=key,
                resource=resource,
                kind=kind,
                namespace=namespace,
                name=name,
            )

    def closed(self, reason: str) -> None:
        if self.trace.enabled:
            self.trace.emit("watch.closed", **self.common, reason=reason)


async def _start(send: Send, ctx: Context) -> None:
    headers = [
        (b"content-type", b"application/json"),
        (b"audit-id", ctx.request.audit_id.encode()),
        (b"cache-control", b"no-cache, private"),
    ]
    admitting = ctx.scope.admission
    if admitting is not None and admitting.scope.warnings:  # a deprecated kind's, for one
        warnings = ", ".join(f"299 - {json.dumps(w)}" for w in admitting.scope.warnings)
        headers.append((b"warning", warnings.encode()))
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": b"", "more_body": True})


def _timeout(value: str | None) -> float:
    if value:
        try:
            return max(0.0, float(int(value)))
        except ValueError:
            raise errors.bad_request(f'invalid timeoutSeconds "{value}"') from None
    return DEFAULT_TIMEOUT * (1 + random.random())


async def _wait_disconnect(ctx: Context) -> None:
    while True:
        message = await ctx.request.receive()
        if message["type"] == "http.disconnect":
            return


async def _chunk(send: Send, event: dict[str, Any]) -> None:
    await _chunk_raw(send, dumps(event) + b"\n")


async def _chunk_raw(send: Send, data: bytes) -> None:
    await send({"type": "http.response.body", "body": data, "more_body": True})


class _Encoder:
    """Turns cache events into wire lines: plain objects, or one-row Tables for ``kubectl get -w``."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.table = ctx.accept.table
        self.partial = bool(ctx.accept.partial)  # each event's object as PartialObjectMetadata
        self.first_table = True

    def event(self, event: CacheEvent, out: list[bytes]) -> None:
        """Append ``event``'s line to ``out``, the pieces of the next chunk."""
        if self.table:
            now = datetime.fromtimestamp(self.ctx.registry.clock.now(), UTC)
            table = tables.table(
                self.ctx.rtype,
                [event.object.obj],
                self.ctx.accept,
                resource_version={"resourceVersion": str(event.revision)},
                now=now,
                column_definitions=self.first_table,
            )
            if not self.first_table:
                table.pop("columnDefinitions", None)
            self.first_table = False
            out.append(dumps({"type": event.type, "object": table}) + b"\n")
        elif self.partial:
            metadata = tables.partial_metadata(event.object.obj, self.ctx.accept.meta_version)
            out.append(dumps({"type": event.type, "object": metadata}) + b"\n")
        else:
            out.extend(event.line_parts())  # the object's bytes are the same for every watcher

    def bookmark(self, revision: int, *, initial_end: bool = False) -> bytes:
        rtype = self.ctx.rtype
        meta: dict[str, Any] = {"resourceVersion": str(revision)}
        if initial_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        if self.table:
            obj: dict[str, Any] = {
                "kind": "Table",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": meta,
                "rows": [],
            }
        else:
            obj = {"kind": rtype.kind, "apiVersion": rtype.api_version, "metadata": meta}
        return dumps({"type": "BOOKMARK", "object": obj}) + b"\n"


def _trigger_value(ctx: Context) -> str | None:
    """The value the watch's field selector pins the cache's indexed trigger field to, if it does
    (``spec.nodeName=node-1`` for a kubelet's pod watch). The selector was checked by ``build_filter``."""
    cache = ctx.cache
    text = ctx.request.query.get("fieldSelector", "")
    if cache is None or cache.trigger is None or not text:
        return None
    try:
        return selectors.parse_field_selector(text).exact_match(cache.trigger[0])
    except selectors.SelectorError:
        return None
