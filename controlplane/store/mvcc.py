"""MVCC bookkeeping: what a transaction does to the keys, decided without any I/O.

etcd is a multi-version store: it never overwrites a key in place. Every committed write transaction
gets the next **revision**, and writes a new version of each key it touches, stamped with that
revision. Reading "at revision R" means: for each key, the newest version written at or before R.
Deleting writes a *tombstone*, so history stays readable until compaction throws old versions away.

This module is the pure core of that bookkeeping, in the style of h11: given a way to read the
current state of a key, it checks a transaction, evaluates its compares, and says which new versions
it writes, with which revision, create_revision and version. Backends (SQLite, PostgreSQL) persist
what it decides; the etcd backend leaves the same decisions to etcd itself. The conformance suite
holds every backend to the same answers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import NamedTuple

from controlplane.store.errors import (
    Compacted,
    DuplicateKey,
    FutureRevision,
    KeyOutsidePrefix,
    LeaseNotFound,
    RequestTooLarge,
)
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
    Op,
    OpResponse,
    Put,
    PutResponse,
    Txn,
)

ReadKey = Callable[[str], KeyValue | None]
HasLease = Callable[[int], bool]


def check_key(key: str, prefix: str = KEY_PREFIX) -> None:
    """Refuse a key outside the cluster's prefix."""
    if not key.startswith(prefix):
        raise KeyOutsidePrefix(key, prefix)


def prefix_end(prefix: str) -> str:
    """The smallest key greater than every key starting with ``prefix`` (etcd's ``GetPrefixRangeEnd``)."""
    if not prefix:
        raise ValueError("empty prefix")
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


def request_size(txn: Txn) -> int:
    """An estimate of the request's size on the wire, as etcd's limit sees it: keys plus values."""
    size = 0
    for cmp in txn.compares:
        size += len(cmp.key) + 16
    for op in (*txn.success, *txn.failure):
        size += len(op.key.encode()) + 16
        if isinstance(op, Put):
            size += len(op.value)
    return size


def check_txn(txn: Txn, *, prefix: str = KEY_PREFIX, max_bytes: int = MAX_REQUEST_BYTES) -> None:
    """Validate a transaction before anything is written; raises an ``InvalidRequest``."""
    for cmp in txn.compares:
        check_key(cmp.key, prefix)
    for branch in (txn.success, txn.failure):
        written: set[str] = set()
        for op in branch:
            check_key(op.key, prefix)
            if isinstance(op, Put | Delete):
                if op.key in written:
                    raise DuplicateKey(op.key)
                written.add(op.key)
    size = request_size(txn)
    if size > max_bytes:
        raise RequestTooLarge(size, max_bytes)


class Outcome(NamedTuple):
    """What a transaction does: which branch ran, its responses, and the versions it writes.

    ``events`` is empty when the transaction writes nothing; then it takes no revision.
    """

    succeeded: bool
    responses: tuple[OpResponse, ...]
    events: tuple[Event, ...]


def evaluate(txn: Txn, read: ReadKey, revision: int, has_lease: HasLease | None = None) -> Outcome:
    """Evaluate ``txn`` against the state ``read`` returns, writing (if at all) at ``revision``.

    ``revision`` must be the current revision + 1. Operations apply in order, and a later operation
    sees the effect of an earlier one (a Get after a Put reads the Put), as in etcd.
    """
    succeeded = True
    for cmp in txn.compares:
        if not cmp.holds(read(cmp.key)):
            succeeded = False
            break
    ops: Iterable[Op] = txn.success if succeeded else txn.failure
    overlay: dict[str, KeyValue | None] = {}
    responses: list[OpResponse] = []
    events: list[Event] = []
    for op in ops:
        key = op.key
        prev = overlay[key] if key in overlay else read(key)
        if isinstance(op, Put):
            if op.lease and has_lease is not None and not has_lease(op.lease):
                raise LeaseNotFound(op.lease)
            if prev is None:
                kv = KeyValue(key, op.value, revision, revision, 1, op.lease)
            else:
                kv = KeyValue(key, op.value, prev.create_revision, revision, prev.version + 1, op.lease)
            overlay[key] = kv
            events.append(Event(EventType.PUT, kv, prev))
            responses.append(PutResponse(prev))
        elif isinstance(op, Get):
            responses.append(GetResponse(prev))
        elif prev is None:
            responses.append(DeleteResponse(0, None))
        else:
            overlay[key] = None
            events.append(Event(EventType.DELETE, tombstone(key, revision), prev))
            responses.append(DeleteResponse(1, prev))
    return Outcome(succeeded, tuple(responses), tuple(events))


def tombstone(key: str, revision: int) -> KeyValue:
    """The record of a deletion, shaped as etcd reports it in a DELETE event."""
    return KeyValue(key=key, value=b"", create_revision=0, mod_revision=revision, version=0)


def check_read_revision(revision: int, *, current: int, compacted: int) -> None:
    """A read or watch may ask for any revision from the compaction mark up to the current one."""
    if revision < compacted:
        raise Compacted(revision, compacted)
    if revision > current:
        raise FutureRevision(revision, current)
