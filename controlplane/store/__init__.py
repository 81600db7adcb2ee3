"""The cluster store: etcd v3's data model (revisions, MVCC, transactions, watch, leases, compaction).

Only the API server talks to it (hub and spoke). One store per cluster, behind one interface
(``Store``), with three backends that pass one conformance suite: SQLite (the embedded default),
PostgreSQL and a real etcd.
"""

from __future__ import annotations

from controlplane.store.errors import (
    BackendUnavailable,
    Compacted,
    DuplicateKey,
    FutureRevision,
    InvalidRequest,
    KeyExists,
    KeyNotFound,
    KeyOutsidePrefix,
    LeaseNotFound,
    RequestTooLarge,
    RevisionMismatch,
    StoreClosed,
    StoreError,
    UnknownCluster,
    WatcherTooSlow,
)
from controlplane.store.interface import Store
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
    PutResponse,
    RangeResult,
    Txn,
    TxnResult,
)
from controlplane.store.watch import Watch

__all__ = [
    "KEY_PREFIX",
    "MAX_REQUEST_BYTES",
    "BackendUnavailable",
    "Compacted",
    "Compare",
    "Delete",
    "DeleteResponse",
    "DuplicateKey",
    "Event",
    "EventType",
    "FutureRevision",
    "Get",
    "GetResponse",
    "InvalidRequest",
    "KeyExists",
    "KeyNotFound",
    "KeyOutsidePrefix",
    "KeyValue",
    "Lease",
    "LeaseNotFound",
    "Put",
    "PutResponse",
    "RangeResult",
    "RequestTooLarge",
    "RevisionMismatch",
    "Store",
    "StoreClosed",
    "StoreError",
    "Txn",
    "TxnResult",
    "UnknownCluster",
    "Watch",
    "WatcherTooSlow",
]
