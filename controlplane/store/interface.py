"""The store interface every backend implements: etcd v3's model, one store per cluster.

kube-apiserver is the only client of etcd (hub and spoke: nothing else touches the store). It needs
very little of it: read a key or a key range at a revision, commit a transaction that compares
revisions before it writes, watch a prefix from a revision, compact old history, and attach short-lived
keys to leases. ``Store`` is that surface. The public methods validate, trace and delegate; backends
implement the ``_``-prefixed hooks (see ``sqlite.py``, ``postgres.py``, ``etcd.py``).

The common requests of an API server are built on ``txn`` here, exactly as kube-apiserver builds them
(``k8s.io/apiserver/pkg/storage/etcd3/store.go``): *create* is "put if the key does not exist",
*update* and *delete* are "... if its mod_revision is still what I read".

An ``observer`` (the API server's ``etcd_request_duration_seconds``) may be told how long each
read and transaction took, by operation (``get``, ``list``, ``create``, ``update``, ``delete``,
``txn``) and key; with none, nothing is measured.
"""

from __future__ import annotations

import abc
import asyncio
from time import perf_counter
from types import TracebackType
from typing import Protocol

from controlplane.store import mvcc
from controlplane.store.conditions import StoreConditions, StoreUnreachable
from controlplane.store.errors import KeyExists, KeyNotFound, RevisionMismatch
from controlplane.store.kv import (
    KEY_PREFIX,
    MAX_REQUEST_BYTES,
    Compare,
    Delete,
    DeleteResponse,
    Event,
    EventType,
    Get,
    GetResponse,
    KeyValue,
    Lease,
    Put,
    RangeResult,
    Txn,
    TxnResult,
)
from controlplane.store.watch import DEFAULT_WATCH_CAPACITY, Watch
from controlplane.trace import NULL_SINK, TraceSink, current_request_id, nodes
from controlplane.trace.objects import facts as object_facts

#: The diagram's edge of every store operation: the API server is etcd's only client.
_TO_ETCD = {"from": nodes.APISERVER, "to": nodes.ETCD}


def _write(event: Event) -> dict[str, object]:
    """One committed change as ``store.txn`` lists it: its type and key and, for what the diagram
    draws (a Pod, a Node, a leader Lease), the facts of the value written (``trace/objects.py``), so
    the page follows the store itself rather than guessing from requests."""
    write: dict[str, object] = {"type": event.type.value, "key": event.kv.key}
    if event.type is EventType.PUT:
        found = object_facts(event.kv.key, event.kv.value)
        if found is not None:
            write[found[0]] = found[1]
    return write


class RequestObserver(Protocol):
    """Told the duration of every store request (``etcd3/metrics.RecordEtcdRequest`` upstream)."""

    def observe(self, operation: str, key: str, seconds: float) -> None: ...


def txn_operation(txn: Txn) -> str:
    """What a transaction does, in upstream's metric words: create, update, delete, get or txn."""
    ops = txn.success
    if len(ops) == 1:
        op = ops[0]
        if isinstance(op, Delete):
            return "delete"
        if isinstance(op, Put):
            absent = len(txn.compares) == 1 and txn.compares[0] == Compare.absent(op.key)
            return "create" if absent else "update"
        return "get"
    return "txn"


class Store(abc.ABC):
    """One cluster's MVCC key-value store."""

    #: The backend's name, as settings and the UI spell it.
    backend: str = ""

    def __init__(
        self,
        cluster: str,
        *,
        trace: TraceSink = NULL_SINK,
        prefix: str = KEY_PREFIX,
        max_request_bytes: int = MAX_REQUEST_BYTES,
        watch_capacity: int = DEFAULT_WATCH_CAPACITY,
    ) -> None:
        self.cluster = cluster
        self.prefix = prefix
        self.max_request_bytes = max_request_bytes
        self.watch_capacity = watch_capacity
        self.trace = trace
        #: Told how long each read and transaction took (the API server sets it); None: nobody.
        self.observer: RequestObserver | None = None
        #: What is wrong with the store as the API server reaches it (``conditions.py``: a fault's slow
        #: commits, or no store at all); None while nothing is, which is all an operation checks then.
        self.conditions: StoreConditions | None = None

    # -- lifecycle -------------------------------------------------------------------------------

    @abc.abstractmethod
    async def start(self) -> None:
        """Open the backend (create the schema, start background tasks). Idempotent."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Stop background tasks, end every watch with ``StoreClosed``, release connections."""

    async def __aenter__(self) -> Store:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # -- revisions -------------------------------------------------------------------------------

    @abc.abstractmethod
    async def current_revision(self) -> int:
        """The revision of the last committed write (0 for an empty store)."""

    @abc.abstractmethod
    async def compact_revision(self) -> int:
        """The compaction mark: the oldest revision still readable (0 if never compacted)."""

    async def compact(self, revision: int) -> None:
        """Discard history older than ``revision``; reads and watches before it fail with Compacted.

        Raises ``Compacted`` if ``revision`` is older than the current mark, ``FutureRevision`` if it
        is newer than the current revision.
        """
        await self._compact(revision)
        if self.trace.enabled:
            self.trace.emit("store.compact", cluster=self.cluster, revision=revision, **_TO_ETCD)

    @abc.abstractmethod
    async def _compact(self, revision: int) -> None: ...

    # -- reads -----------------------------------------------------------------------------------

    async def get(self, key: str, *, revision: int | None = None) -> KeyValue | None:
        """The key at ``revision`` (default: current), or None if it did not exist then."""
        mvcc.check_key(key, self.prefix)
        if self.conditions is not None and self.conditions.unreachable:
            raise StoreUnreachable()
        observer = self.observer
        started = perf_counter() if observer is not None else 0.0
        result = await self._range(key, key + "\0", revision=revision, limit=1)
        if observer is not None:
            observer.observe("get", key, perf_counter() - started)
        if self.trace.enabled:
            self._trace_read("get", key, result)
        return result.kvs[0] if result.kvs else None

    async def range(
        self,
        prefix: str,
        *,
        start: str | None = None,
        revision: int | None = None,
        limit: int = 0,
    ) -> RangeResult:
        """Keys under ``prefix`` at ``revision`` (default: current) in key order.

        ``start`` (inclusive) continues a paged read: pass the last key returned plus ``"\\0"``.
        ``limit`` 0 means no limit.
        """
        mvcc.check_key(prefix, self.prefix)
        end = mvcc.prefix_end(prefix)
        begin = prefix if start is None or start < prefix else start
        if self.conditions is not None and self.conditions.unreachable:
            raise StoreUnreachable()
        observer = self.observer
        started = perf_counter() if observer is not None else 0.0
        result = await self._range(begin, end, revision=revision, limit=limit)
        if observer is not None:
            observer.observe("list", prefix, perf_counter() - started)
        if self.trace.enabled:
            self._trace_read("range", prefix, result)
        return result

    async def inspect(
        self,
        prefix: str,
        *,
        start: str | None = None,
        revision: int | None = None,
        limit: int = 0,
    ) -> RangeResult:
        """``range`` for the lab's own inspection (the topology page's etcd panel, like ``etcdctl
        get``): the same read, but neither traced nor measured, because it is not the API server's
        read and must not be drawn or counted as one. The API server never calls it."""
        mvcc.check_key(prefix, self.prefix)
        begin = prefix if start is None or start < prefix else start
        return await self._range(begin, mvcc.prefix_end(prefix), revision=revision, limit=limit)

    def _trace_read(self, op: str, key: str, result: RangeResult) -> None:
        self.trace.emit(
            "store.txn",
            cluster=self.cluster,
            id=current_request_id.get(),
            **_TO_ETCD,
            op=op,
            key=key,
            revision=result.revision,
            count=len(result.kvs),
        )

    @abc.abstractmethod
    async def _range(self, begin: str, end: str, *, revision: int | None, limit: int) -> RangeResult:
        """Keys in [begin, end) at ``revision``; ``count`` counts the whole [begin, end) range."""

    # -- writes ----------------------------------------------------------------------------------

    async def txn(self, txn: Txn, *, request_id: str | None = None) -> TxnResult:
        """Commit ``txn`` atomically: one new revision if it writes, none if it does not.

        The write is durable when this returns. Invalid requests raise before anything is written.

        ``request_id`` is the Audit-ID of the API request the transaction is made for, which its
        ``store.txn`` trace event names. The API server's registry passes it: the store sits below
        the API server and never sees a request, so the id is handed down with the write. Without
        one, the event names the request being served if there is one
        (``trace.context.current_request_id``), for callers that are not handed a request.
        """
        mvcc.check_txn(txn, prefix=self.prefix, max_bytes=self.max_request_bytes)
        if request_id is None:
            request_id = current_request_id.get()
        observer = self.observer
        started = perf_counter() if observer is not None else 0.0
        if self.conditions is not None:
            await self._conditioned(self.conditions)
        result = await self._txn(txn)
        if observer is not None:
            ops = txn.success or txn.failure or txn.compares
            observer.observe(txn_operation(txn), ops[0].key if ops else "", perf_counter() - started)
        if self.trace.enabled:
            self._trace_txn(txn, result, request_id)
        return result

    @staticmethod
    async def _conditioned(conditions: StoreConditions) -> None:
        """What ``conditions`` do to a commit before it is made: refuse it, or make it wait (the
        write-ahead log's slow ``fsync``, in real seconds as a disk's are)."""
        if conditions.unreachable:
            raise StoreUnreachable()
        if conditions.commit_delay > 0:
            await asyncio.sleep(conditions.commit_delay)

    @abc.abstractmethod
    async def _txn(self, txn: Txn) -> TxnResult:
        """Commit an already validated ``txn``."""

    def _trace_txn(self, txn: Txn, result: TxnResult, request_id: str | None) -> None:
        ops = txn.success if result.succeeded else txn.failure
        self.trace.emit(
            "store.txn",
            cluster=self.cluster,
            id=request_id,
            **_TO_ETCD,
            op="txn",
            revision=result.revision,
            succeeded=result.succeeded,
            compares=[{"key": c.key, "target": c.target, "op": c.op, "value": c.value} for c in txn.compares],
            ops=[{"op": type(op).__name__.lower(), "key": op.key} for op in ops],
            writes=[_write(e) for e in result.events],
        )

    async def put(self, key: str, value: bytes, *, lease: int = 0) -> KeyValue:
        """Write ``key`` unconditionally; returns the new version."""
        result = await self.txn(Txn(success=(Put(key, value, lease),)))
        return result.events[0].kv

    async def create(self, key: str, value: bytes, *, lease: int = 0) -> KeyValue:
        """Create ``key``; ``KeyExists`` (with the current value) if it is already there."""
        result = await self.txn(
            Txn(compares=(Compare.absent(key),), success=(Put(key, value, lease),), failure=(Get(key),))
        )
        if not result.succeeded:
            response = result.responses[0]
            assert isinstance(response, GetResponse)
            raise KeyExists(key, response.kv)
        return result.events[0].kv

    async def update(self, key: str, value: bytes, *, expected_mod_revision: int, lease: int = 0) -> KeyValue:
        """Replace ``key`` if it was last written at ``expected_mod_revision``.

        ``KeyNotFound`` if it does not exist, ``RevisionMismatch`` (carrying the current value) if it
        was modified since.
        """
        result = await self.txn(
            Txn(
                compares=(Compare.unchanged(key, expected_mod_revision),),
                success=(Put(key, value, lease),),
                failure=(Get(key),),
            )
        )
        if not result.succeeded:
            response = result.responses[0]
            assert isinstance(response, GetResponse)
            if response.kv is None:
                raise KeyNotFound(key)
            raise RevisionMismatch(key, expected_mod_revision, response.kv)
        return result.events[0].kv

    async def delete(self, key: str, *, expected_mod_revision: int | None = None) -> tuple[KeyValue, int]:
        """Delete ``key`` (if unchanged since ``expected_mod_revision``, when given).

        Returns the deleted version and the deleting revision. ``KeyNotFound`` if absent,
        ``RevisionMismatch`` if modified since.
        """
        compares = () if expected_mod_revision is None else (Compare.unchanged(key, expected_mod_revision),)
        result = await self.txn(Txn(compares=compares, success=(Delete(key),), failure=(Get(key),)))
        response = result.responses[0]
        if not result.succeeded:
            assert isinstance(response, GetResponse)
            if response.kv is None:
                raise KeyNotFound(key)
            assert expected_mod_revision is not None
            raise RevisionMismatch(key, expected_mod_revision, response.kv)
        assert isinstance(response, DeleteResponse)
        if response.prev_kv is None:
            raise KeyNotFound(key)
        return response.prev_kv, result.revision

    # -- watch -----------------------------------------------------------------------------------

    async def watch(self, prefix: str, *, from_revision: int | None = None) -> Watch:
        """Watch ``prefix``: every event with a revision greater than ``from_revision``, in order.

        ``from_revision`` None means "from now". ``Compacted`` if it is older than the compaction
        mark. A revision in the future is allowed: its events arrive when they are written.
        """
        mvcc.check_key(prefix, self.prefix)
        if self.conditions is not None and self.conditions.unreachable:
            raise StoreUnreachable()
        return await self._watch(prefix, from_revision)

    @abc.abstractmethod
    async def _watch(self, prefix: str, from_revision: int | None) -> Watch: ...

    # -- leases ----------------------------------------------------------------------------------

    @abc.abstractmethod
    async def lease_grant(self, ttl: int) -> Lease:
        """A new lease that expires ``ttl`` seconds (cluster clock) from now unless kept alive."""

    @abc.abstractmethod
    async def lease_keepalive(self, lease_id: int) -> Lease:
        """Restart the lease's TTL; ``LeaseNotFound`` if it expired or never existed."""

    @abc.abstractmethod
    async def lease_revoke(self, lease_id: int) -> int:
        """End the lease now, deleting its keys in one revision; returns the store revision after."""
