"""The etcd backend: the cluster store kept in a real etcd server, as real Kubernetes keeps it.

etcd is the database of every Kubernetes cluster. It is a small key-value store replicated with the
Raft consensus protocol, and kube-apiserver is its only client: every Pod, Node and Lease you create
ends up as one etcd key such as ``/registry/pods/default/web-0``. The other backends (SQLite,
PostgreSQL) imitate etcd; this one *is* etcd, so what you see here is what a real control plane sees.

**How we talk to it.** etcd's API is gRPC (``etcdserverpb.KV``, ``Watch``, ``Lease``). etcd also serves
a *gRPC-JSON gateway* on the same port that translates plain HTTP + JSON into those calls, so this
module needs nothing but an HTTP client:

=========================================  ======================================================
``POST /v3/kv/range``                      read a key or a key range, optionally at an old revision
``POST /v3/kv/txn``                        if every compare holds then these operations else those
``POST /v3/kv/compaction``                 throw away history older than a revision
``POST /v3/watch``                         a streaming response: one JSON message per line
``POST /v3/lease/grant|keepalive|revoke``  leases
=========================================  ======================================================

In that JSON, keys and values are base64 (they are bytes) and 64-bit integers are strings
(``"revision": "42"``); fields equal to zero, false or empty are left out altogether: a PUT event has
no ``"type"``, an empty value no ``"value"``, a DELETE event's ``kv`` only a key and a revision.

**Revisions are etcd's own.** Every write transaction etcd commits gets the next revision, and that
number is what Kubernetes shows as ``resourceVersion``. Several Kubelab clusters may share one etcd:
each lives under its own key namespace (``/kubelab/<cluster>`` + the store key, stripped again on the
way out), but they share etcd's single revision counter. So a cluster's revisions are increasing but
not consecutive, and its first write is not revision 1. The compaction mark is shared as well:
compacting one cluster compacts the history of every cluster in that etcd. That is why automatic
compaction, in real Kubernetes kube-apiserver's job (``--etcd-compaction-interval``), is not run by
this backend: it compacts only when asked (the ``clock`` and ``retention`` options are accepted and
ignored).

**Details a student may meet:**

- a read at a revision older than the compaction mark fails (``mvcc: required revision has been
  compacted``); etcd has no request that returns the mark, so ``compact_revision`` finds it by
  probing reads at revisions (a binary search, normally a single read, since the mark only moves
  forward);
- a watch is told only of the revisions under its prefix, and through the gateway it cannot ask for
  a progress notification; this store, its cluster's only writer, works out how far each watch has
  seen from its own writes (``watchprogress.py``), so that a watch cache waiting for a revision
  written elsewhere is not left waiting;
- a watch is one streaming HTTP request, with ``prev_kv`` so every event carries the key's previous
  value. etcd reports a compacted start revision only some time after it created the watch, so
  ``watch()`` checks the revision with a read first and raises ``Compacted`` itself. A compaction may
  still land between that read and etcd's replay of the history (which runs up to 100 ms later), and
  etcd releases without the fix for etcd issue #18089 (3.4.23 among them) then *silently drop* the
  DELETE events at exactly the compaction revision from the replay (compaction removes a tombstone
  at its revision, and the replay starts there). So the watch starts one revision early, at
  ``from_revision`` itself, and drops the events of that revision: a compaction up to
  ``from_revision`` costs nothing the caller needs, and one beyond it makes etcd cancel the watch
  with ``compact_revision``, which ends it with ``Compacted``;
- etcd reads an event's previous value (at the event's revision - 1) only when it sends the event, and
  leaves ``prev_kv`` out if a compaction has removed it meanwhile. An event that must have one (a PUT
  of version 2 or more, every DELETE) and arrives without it is completed with a read at that
  revision; if that read is compacted too, the watch ends with ``Compacted``: never an event with a
  wrong previous value;
- leases run on etcd's wall clock: the cluster clock (which a lesson may speed up) does not apply to
  this backend, and etcd may round a very short TTL up to its minimum. When a lease expires etcd
  deletes all of its keys in one revision;
- etcd's errors are mapped to the store's typed errors (``errors.py``):

  ================================================  ======================
  ``mvcc: required revision has been compacted``    ``Compacted``
  ``mvcc: required revision is a future revision``  ``FutureRevision``
  ``requested lease not found`` (or TTL 0)          ``LeaseNotFound``
  ``request is too large``                          ``RequestTooLarge``
  ``duplicate key given in txn request``            ``DuplicateKey``
  other invalid-argument / out-of-range errors      ``InvalidRequest``
  connection failures, timeouts, other errors       ``BackendUnavailable``
  ================================================  ======================

  As with a real etcd client, a timeout while a write is in flight cannot tell whether it committed.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import httpx

from controlplane.store import mvcc
from controlplane.store.errors import (
    BackendUnavailable,
    Compacted,
    DuplicateKey,
    FutureRevision,
    InvalidRequest,
    LeaseNotFound,
    RequestTooLarge,
    StoreClosed,
    StoreError,
)
from controlplane.store.interface import Store
from controlplane.store.kv import (
    KEY_PREFIX,
    MAX_REQUEST_BYTES,
    Delete,
    DeleteResponse,
    Event,
    EventType,
    Get,
    GetResponse,
    KeyValue,
    Lease,
    Op,
    OpResponse,
    Put,
    PutResponse,
    RangeResult,
    Txn,
    TxnResult,
)
from controlplane.store.watch import DEFAULT_WATCH_CAPACITY, FROM_ETCD, Watch
from controlplane.store.watchprogress import WatchProgress
from controlplane.trace import NULL_SINK, TraceSink

JSON = dict[str, Any]

#: Each cluster's keys live in etcd under ``NAMESPACE_ROOT + cluster``.
NAMESPACE_ROOT = "/kubelab/"

#: Seconds to wait for etcd to answer a request (or to create a watch).
DEFAULT_TIMEOUT = 10.0

# etcdserverpb.Compare's CompareTarget and CompareResult enums, by the names the gateway accepts.
_COMPARE_TARGETS = {"mod_revision": "MOD", "create_revision": "CREATE", "version": "VERSION"}
_COMPARE_RESULTS = {"=": "EQUAL", "!=": "NOT_EQUAL", "<": "LESS", ">": "GREATER"}

# gRPC status codes that mean "the request itself is wrong", not "etcd is in trouble".
_GRPC_INVALID_ARGUMENT = 3
_GRPC_FAILED_PRECONDITION = 9
_GRPC_OUT_OF_RANGE = 11
_GRPC_REQUEST_ERRORS = {_GRPC_INVALID_ARGUMENT, _GRPC_FAILED_PRECONDITION, _GRPC_OUT_OF_RANGE}


class EtcdError(Exception):
    """The gRPC error etcd answered with, before it is mapped to a store error."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"etcd error {code}: {message}")
        self.code = code
        self.message = message

    @property
    def compacted(self) -> bool:
        return "required revision has been compacted" in self.message

    @property
    def future_revision(self) -> bool:
        return "required revision is a future revision" in self.message

    @property
    def lease_not_found(self) -> bool:
        return "requested lease not found" in self.message

    def as_store_error(self) -> StoreError:
        """The store error for an etcd error that needs no further context."""
        if self.code in _GRPC_REQUEST_ERRORS:
            return InvalidRequest(self.message)
        return BackendUnavailable(f"etcd: {self.message}")


class EtcdStore(Store):
    """One cluster's store, kept in an etcd server under the key namespace ``/kubelab/<cluster>``.

    ``endpoint`` is etcd's client URL (``http://127.0.0.1:2379``); ``namespace`` overrides the key
    namespace (tests give each store a fresh one while keeping the cluster's name). The ``clock`` and
    ``retention`` options of the other backends are accepted and ignored: etcd's leases run on its own
    wall clock, and it compacts only when asked.
    """

    backend = "etcd"

    def __init__(
        self,
        cluster: str,
        *,
        endpoint: str,
        trace: TraceSink = NULL_SINK,
        watch_capacity: int = DEFAULT_WATCH_CAPACITY,
        prefix: str = KEY_PREFIX,
        max_request_bytes: int = MAX_REQUEST_BYTES,
        timeout: float = DEFAULT_TIMEOUT,
        namespace: str | None = None,
        **ignored: object,
    ) -> None:
        super().__init__(
            cluster,
            trace=trace,
            prefix=prefix,
            max_request_bytes=max_request_bytes,
            watch_capacity=watch_capacity,
        )
        if namespace is None:
            if not cluster or "/" in cluster:
                raise ValueError(f"cluster name {cluster!r} cannot name an etcd key namespace")
            namespace = f"{NAMESPACE_ROOT}{cluster}"
        self.endpoint = endpoint.rstrip("/")
        self.namespace = namespace
        self._ns = self.namespace.encode()
        self._timeout = timeout
        self._client: httpx.AsyncClient | None = None
        self._watch_client: httpx.AsyncClient | None = None
        self._closed = False
        # The highest compaction mark seen so far; the mark never moves back, so it is a lower bound.
        self._compact_mark = 0
        self._watches: dict[Watch, asyncio.Task[None]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        # What each watch has seen beyond its own events (docs in watchprogress.py).
        self._progress = WatchProgress()

    # -- lifecycle -------------------------------------------------------------------------------

    async def start(self) -> None:
        if self._closed:
            raise StoreClosed()
        if self._client is not None:
            return
        self._client = httpx.AsyncClient(base_url=self.endpoint, timeout=self._timeout, trust_env=False)
        # Watches hold their connection for as long as they run, and are silent while nothing changes.
        self._watch_client = httpx.AsyncClient(
            base_url=self.endpoint,
            timeout=httpx.Timeout(self._timeout, read=None),
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=0),
            trust_env=False,
        )
        try:
            await self._call("/v3/maintenance/status", {})
        except BaseException:
            await self._release()
            raise

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for watch in list(self._watches):
            watch.fail(StoreClosed())
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._release()

    async def _release(self) -> None:
        clients = [c for c in (self._client, self._watch_client) if c is not None]
        self._client = self._watch_client = None
        for client in clients:
            await client.aclose()

    def _http(self, *, watch: bool = False) -> httpx.AsyncClient:
        client = self._watch_client if watch else self._client
        if self._closed:
            raise StoreClosed()
        if client is None:
            raise StoreError("the etcd store has not been started")
        return client

    # -- revisions -------------------------------------------------------------------------------

    async def current_revision(self) -> int:
        """etcd's revision: shared by every cluster in this etcd, and at least 1 even when empty."""
        data = await self._call("/v3/kv/range", {"key": self._key(""), "count_only": True})
        return _revision(data)

    async def compact_revision(self) -> int:
        known = self._compact_mark
        if await self._readable(max(known, 1)):
            return known
        # Another cluster sharing this etcd has compacted: find the oldest readable revision.
        unreadable, readable = max(known, 1), await self.current_revision()
        while readable - unreadable > 1:
            middle = (unreadable + readable) // 2
            if await self._readable(middle):
                readable = middle
            else:
                unreadable = middle
        self._compact_mark = max(self._compact_mark, readable)
        return readable

    async def _readable(self, revision: int) -> bool:
        """Whether a read at ``revision`` succeeds, i.e. the revision is not compacted."""
        body = {"key": self._key(""), "count_only": True, "revision": str(revision)}
        try:
            await self._call("/v3/kv/range", body)
        except EtcdError as error:
            if error.compacted:
                return False
            if error.future_revision:
                return True
            raise error.as_store_error() from None
        return True

    async def _compact(self, revision: int) -> None:
        if revision < 1:
            # Revision 0 is "before the first write": nothing to discard.
            mark = await self.compact_revision()
            if revision < mark:
                raise Compacted(revision, mark)
            return
        try:
            # physical: answer only once the old versions are gone, not merely scheduled for removal.
            await self._call("/v3/kv/compaction", {"revision": str(revision), "physical": True})
        except EtcdError as error:
            if error.compacted:
                mark = await self.compact_revision()
                if revision == mark:
                    return  # already compacted exactly there
                raise Compacted(revision, mark) from None
            raise await self._revision_error(error, revision) from None
        self._compact_mark = max(self._compact_mark, revision)

    async def _revision_error(self, error: EtcdError, revision: int) -> StoreError:
        """The store error for an etcd error answered to a request at ``revision``."""
        if error.compacted:
            return Compacted(revision, await self.compact_revision())
        if error.future_revision:
            return FutureRevision(revision, await self.current_revision())
        return error.as_store_error()

    # -- reads -----------------------------------------------------------------------------------

    async def _range(self, begin: str, end: str, *, revision: int | None, limit: int) -> RangeResult:
        body: JSON = {"key": self._key(begin), "range_end": self._key(end)}
        if limit:
            body["limit"] = str(limit)
        if revision is not None:
            # etcd reads revision 0 as "current"; revision 1 is its empty initial state.
            body["revision"] = str(max(revision, 1))
        try:
            data = await self._call("/v3/kv/range", body)
        except EtcdError as error:
            raise await self._revision_error(error, revision or 0) from None
        return RangeResult(
            kvs=tuple(self._kv(kv) for kv in data.get("kvs", ())),
            revision=_revision(data) if revision is None else revision,
            more=bool(data.get("more", False)),
            count=_int(data, "count"),
        )

    # -- writes ----------------------------------------------------------------------------------

    async def _txn(self, txn: Txn) -> TxnResult:
        body: JSON = {
            "compare": [
                {
                    "key": self._key(c.key),
                    "target": _COMPARE_TARGETS[c.target],
                    "result": _COMPARE_RESULTS[c.op],
                    c.target: str(c.value),
                }
                for c in txn.compares
            ],
            "success": [self._request_op(op) for op in txn.success],
            "failure": [self._request_op(op) for op in txn.failure],
        }
        self._progress.writing += 1
        try:
            data = await self._call("/v3/kv/txn", body)
        except EtcdError as error:
            if error.lease_not_found:
                raise LeaseNotFound(await self._missing_lease(txn)) from None
            if "duplicate key given in txn request" in error.message:
                raise DuplicateKey(_duplicate_key(txn)) from None
            if "request is too large" in error.message:
                raise RequestTooLarge(mvcc.request_size(txn), self.max_request_bytes) from None
            raise error.as_store_error() from None
        finally:
            self._progress.writing -= 1

        succeeded = bool(data.get("succeeded", False))
        revision = _revision(data)
        ops = txn.success if succeeded else txn.failure
        self._progress.wrote(revision, [op.key for op in ops if not isinstance(op, Get)])
        self._progress.advance(self._watches)
        responses: list[OpResponse] = []
        events: list[Event] = []
        # etcd answers the operations in order; the writes' new versions are not in the answer, so
        # they are rebuilt from the previous versions it returns (prev_kv) and the new revision.
        for op, answer in zip(ops, data.get("responses", ()), strict=True):
            if isinstance(op, Get):
                kvs = answer.get("response_range", {}).get("kvs", ())
                responses.append(GetResponse(self._kv(kvs[0]) if kvs else None))
            elif isinstance(op, Put):
                prev_data = answer.get("response_put", {}).get("prev_kv")
                prev = self._kv(prev_data) if prev_data else None
                kv = KeyValue(
                    key=op.key,
                    value=op.value,
                    create_revision=prev.create_revision if prev else revision,
                    mod_revision=revision,
                    version=prev.version + 1 if prev else 1,
                    lease=op.lease,
                )
                responses.append(PutResponse(prev))
                events.append(Event(EventType.PUT, kv, prev))
            else:
                deleted = answer.get("response_delete_range", {})
                prevs = deleted.get("prev_kvs", ())
                prev = self._kv(prevs[0]) if prevs else None
                responses.append(DeleteResponse(_int(deleted, "deleted"), prev))
                if prev is not None:
                    events.append(Event(EventType.DELETE, mvcc.tombstone(op.key, revision), prev))
        return TxnResult(succeeded, revision, tuple(responses), tuple(events))

    def _request_op(self, op: Op) -> JSON:
        if isinstance(op, Put):
            put: JSON = {"key": self._key(op.key), "value": _b64(op.value), "prev_kv": True}
            if op.lease:
                put["lease"] = str(op.lease)
            return {"request_put": put}
        if isinstance(op, Delete):
            return {"request_delete_range": {"key": self._key(op.key), "prev_kv": True}}
        return {"request_range": {"key": self._key(op.key)}}

    async def _missing_lease(self, txn: Txn) -> int:
        """Which lease of ``txn`` etcd did not find (its error does not say)."""
        leases = list(dict.fromkeys(op.lease for op in (*txn.success, *txn.failure) if isinstance(op, Put)))
        leases = [lease for lease in leases if lease]
        for lease in leases:
            data = await self._call("/v3/lease/timetolive", {"ID": str(lease)})
            if _int(data, "TTL") < 0:
                return lease
        return leases[0] if leases else 0

    # -- watch -----------------------------------------------------------------------------------

    async def _watch(self, prefix: str, from_revision: int | None) -> Watch:
        client = self._http(watch=True)
        if from_revision is not None and not await self._readable(max(from_revision, 1)):
            raise Compacted(from_revision, await self.compact_revision())
        create: JSON = {
            "key": self._key(prefix),
            "range_end": self._key(mvcc.prefix_end(prefix)),
            "prev_kv": True,
            # A replay larger than etcd's request limit comes in several messages, not one huge line.
            "fragment": True,
        }
        if from_revision is not None:
            # One revision early (see the module docstring): events of from_revision are dropped.
            # Revision 0 would mean "now" to etcd; revision 1 is its empty initial state.
            create["start_revision"] = str(max(from_revision, 1))
        request = client.build_request("POST", "/v3/watch", json={"create_request": create})
        try:
            response = await client.send(request, stream=True)
        except httpx.TransportError as error:
            raise self._unreachable(error) from error
        try:
            lines = response.aiter_lines()
            created = await self._first_message(lines)
            if created.get("canceled"):
                raise self._canceled(created, from_revision or 0)
            # With no start revision etcd watches from just after the revision it reports here.
            start = _revision(created) if from_revision is None else from_revision
            watch = Watch(
                prefix, start, capacity=self.watch_capacity, trace=self.trace, on_close=self._forget
            )
            watch.begin_history(start, _no_history())
            self._progress.watching(watch, start)
        except BaseException:
            await _close_lines(lines)
            await response.aclose()
            raise
        task = asyncio.create_task(self._feed(watch, response, lines), name=f"etcd-watch-{watch.id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        self._watches[watch] = task
        if self.trace.enabled:
            self.trace.emit(
                "watch.opened", **FROM_ETCD, source="store", watch=watch.id, prefix=prefix, revision=start
            )
        return watch

    async def _first_message(self, lines: AsyncIterator[str]) -> JSON:
        """Wait for the watch's "created" (or "canceled") message."""
        try:
            async with asyncio.timeout(self._timeout):
                async for line in lines:
                    if line.strip():
                        return self._watch_result(line)
        except TimeoutError:
            raise BackendUnavailable(f"etcd at {self.endpoint} did not create the watch in time") from None
        except httpx.TransportError as error:
            raise self._unreachable(error) from error
        raise BackendUnavailable("etcd ended the watch stream before creating the watch")

    async def _feed(self, watch: Watch, response: httpx.Response, lines: AsyncIterator[str]) -> None:
        """Push the events of etcd's watch stream into ``watch`` until either ends.

        Every way out ends the watch: etcd cancelling it (``Compacted`` when a compaction overtook it),
        the stream ending or failing (``BackendUnavailable``), or an event that cannot be completed.
        """
        seen = watch.from_revision
        try:
            async for line in lines:
                if not line.strip():
                    continue
                result = self._watch_result(line)
                # Fragments of a large response are consecutive messages whose events are in order:
                # each is delivered as it comes.
                events: list[Event] = []
                try:
                    for data in result.get("events", ()):
                        event = await self._event(data, after=watch.from_revision)
                        if event is not None:
                            events.append(event)
                finally:
                    # The events completed before one that could not be are right: deliver them.
                    if events:
                        watch.push(events)
                        seen = events[-1].revision
                        self._progress.delivered(watch, seen)
                        self._progress.advance((watch,))
                if result.get("canceled"):
                    watch.fail(self._canceled(result, seen))
                    return
            watch.fail(BackendUnavailable("etcd ended the watch stream"))
        except Compacted as error:
            watch.fail(Compacted(seen, error.compact_revision))
        except httpx.TransportError as error:
            watch.fail(self._unreachable(error))
        except StoreError as error:
            watch.fail(error)
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            watch.fail(BackendUnavailable(f"malformed watch message from etcd: {error!r}"))
        except Exception as error:  # never leave the consumer waiting for a feeder that died
            watch.fail(BackendUnavailable(f"the etcd watch failed: {error!r}"))
        finally:
            await _close_lines(lines)
            await response.aclose()

    def _watch_result(self, line: str) -> JSON:
        try:
            message = json.loads(line)
        except ValueError as error:
            raise BackendUnavailable(f"malformed watch message from etcd: {line[:200]!r}") from error
        if "error" in message:
            raise _grpc_error(message).as_store_error()
        result: JSON = message.get("result", {})
        return result

    def _canceled(self, result: JSON, revision: int) -> StoreError:
        compact_revision = _int(result, "compact_revision")
        if compact_revision:
            self._compact_mark = max(self._compact_mark, compact_revision)
            return Compacted(revision, compact_revision)
        reason = result.get("cancel_reason") or "no reason given"
        return BackendUnavailable(f"etcd cancelled the watch: {reason}")

    def _forget(self, watch: Watch) -> None:
        """``Watch``'s on_close: stop its feeder (unless the feeder itself is ending it)."""
        task = self._watches.pop(watch, None)
        self._progress.forget(watch)
        if task is not None and task is not asyncio.current_task():
            task.cancel()

    async def _event(self, data: JSON, *, after: int) -> Event | None:
        """The store event for etcd's ``data``, or None if its revision is not after ``after``.

        A missing ``prev_kv`` is read back when the event must have one; ``Compacted`` if it is gone.
        """
        kv = data["kv"]
        revision = _int(kv, "mod_revision")
        if revision <= after:
            return None
        # Present even when every field but the key is zero: only an absent prev_kv means "none".
        prev_data = data.get("prev_kv")
        prev = self._kv(prev_data) if prev_data is not None else None
        kind = data.get("type", "PUT")  # PUT is enum value 0, which the gateway leaves out
        if kind == "DELETE":
            # etcd's DELETE event carries only the key and the deleting revision: a tombstone.
            event = Event(EventType.DELETE, mvcc.tombstone(self._strip(kv["key"]), revision), prev)
        elif kind == "PUT":
            event = Event(EventType.PUT, self._kv(kv), prev)
        else:
            raise BackendUnavailable(f"etcd sent a watch event of unknown type {kind!r}")
        if prev is None and (event.type is EventType.DELETE or event.kv.version > 1):
            # The key existed just before this event, so etcd omitted its previous version only
            # because a compaction removed it before etcd read it.
            event = Event(event.type, event.kv, await self._previous(event.key, revision))
        return event

    async def _previous(self, key: str, revision: int) -> KeyValue:
        """``key`` as it was just before ``revision``, which changed it; ``Compacted`` if that is gone."""
        body = {"key": self._key(key), "revision": str(revision - 1)}
        try:
            data = await self._call("/v3/kv/range", body)
        except EtcdError as error:
            raise await self._revision_error(error, revision - 1) from None
        kvs = data.get("kvs", ())
        if not kvs:
            raise BackendUnavailable(
                f"etcd has no version of {key!r} at revision {revision - 1}, before its event at {revision}"
            )
        return self._kv(kvs[0])

    # -- leases ----------------------------------------------------------------------------------

    async def lease_grant(self, ttl: int) -> Lease:
        """A new etcd lease of ``ttl`` wall-clock seconds (etcd may raise a tiny TTL to its minimum)."""
        try:
            data = await self._call("/v3/lease/grant", {"TTL": str(ttl)})
        except EtcdError as error:
            raise error.as_store_error() from None
        granted = _int(data, "TTL")
        return Lease(id=_int(data, "ID"), ttl=granted, expires_at=time.time() + granted)

    async def lease_keepalive(self, lease_id: int) -> Lease:
        """Restart the lease's TTL on etcd's wall clock; ``LeaseNotFound`` if it is gone."""
        try:
            data = await self._call("/v3/lease/keepalive", {"ID": str(lease_id)})
        except EtcdError as error:
            if error.lease_not_found:
                raise LeaseNotFound(lease_id) from None
            raise error.as_store_error() from None
        # keepalive is a stream: its one answer is wrapped in "result"; TTL 0 means "no such lease".
        result = data.get("result", data)
        ttl = _int(result, "TTL")
        if ttl <= 0:
            raise LeaseNotFound(lease_id)
        return Lease(id=lease_id, ttl=ttl, expires_at=time.time() + ttl)

    async def lease_revoke(self, lease_id: int) -> int:
        try:
            data = await self._call("/v3/lease/revoke", {"ID": str(lease_id)})
        except EtcdError as error:
            if error.lease_not_found:
                raise LeaseNotFound(lease_id) from None
            raise error.as_store_error() from None
        return _revision(data)

    # -- the wire --------------------------------------------------------------------------------

    async def _call(self, path: str, body: JSON) -> JSON:
        """POST ``body`` to the gateway; raises ``EtcdError`` for an etcd error, else a store error."""
        client = self._http()
        try:
            response = await client.post(path, json=body)
        except httpx.TransportError as error:
            raise self._unreachable(error) from error
        try:
            data = response.json()
        except ValueError:
            raise BackendUnavailable(
                f"etcd answered {path} with HTTP {response.status_code}: {response.text[:200]!r}"
            ) from None
        if not isinstance(data, dict):
            raise BackendUnavailable(f"etcd answered {path} with {data!r}")
        if "error" in data:
            raise _grpc_error(data)
        if response.status_code != 200:
            raise BackendUnavailable(f"etcd answered {path} with HTTP {response.status_code}")
        self._progress.heard(_revision(data))
        self._progress.advance(self._watches)
        return data

    def _unreachable(self, error: httpx.TransportError) -> BackendUnavailable:
        return BackendUnavailable(f"etcd at {self.endpoint} is unreachable: {error!r}")

    def _key(self, key: str) -> str:
        return _b64(self._ns + key.encode())

    def _strip(self, key: str) -> str:
        raw = _unb64(key)
        if not raw.startswith(self._ns):
            raise BackendUnavailable(f"etcd returned a key outside {self.namespace!r}: {raw!r}")
        return raw[len(self._ns) :].decode()

    def _kv(self, data: JSON) -> KeyValue:
        return KeyValue(
            key=self._strip(data["key"]),
            value=_unb64(data.get("value", "")),
            create_revision=_int(data, "create_revision"),
            mod_revision=_int(data, "mod_revision"),
            version=_int(data, "version"),
            lease=_int(data, "lease"),
        )


async def _no_history() -> AsyncIterator[Sequence[Event]]:
    """etcd replays a watch's history itself, in the stream: there is nothing to replay here."""
    return
    yield  # pragma: no cover - makes this an async generator


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except binascii.Error as error:
        raise BackendUnavailable(f"etcd returned invalid base64: {text[:100]!r}") from error


def _int(data: JSON, field: str) -> int:
    """An int64 field of etcd's JSON: a string, or absent when it is zero."""
    return int(data.get(field) or 0)


def _revision(data: JSON) -> int:
    return _int(data.get("header", {}), "revision")


def _grpc_error(data: JSON) -> EtcdError:
    """An error in either of the gateway's shapes: unary ``{"error": msg, "code": n}``, or a stream's
    ``{"error": {"grpc_code": n, "message": msg}}``."""
    error = data["error"]
    if isinstance(error, dict):
        return EtcdError(int(error.get("grpc_code") or error.get("code") or 0), str(error.get("message", "")))
    return EtcdError(int(data.get("code") or 0), str(data.get("message") or error))


def _duplicate_key(txn: Txn) -> str:
    for branch in (txn.success, txn.failure):
        written: set[str] = set()
        for op in branch:
            if isinstance(op, Put | Delete):
                if op.key in written:
                    return op.key
                written.add(op.key)
    return ""


async def _close_lines(lines: AsyncIterator[str]) -> None:
    """Close the stream's line iterator (an async generator) here and now: left to the garbage
    collector, its ``aclose`` would run later as a stray task of whichever loop is current."""
    aclose = getattr(lines, "aclose", None)
    if aclose is not None:
        await aclose()
