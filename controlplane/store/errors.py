"""What can go wrong in the store, as types.

etcd answers with gRPC errors such as ``mvcc: required revision has been compacted``; kube-apiserver
turns them into HTTP answers (410 Gone for a compacted revision, 409 Conflict for a failed
compare-and-swap). Kubelab's store raises these types, so the API server can map each to upstream's
Status without parsing messages. Every error leaves the store unchanged: nothing is half-written.
"""

from __future__ import annotations

from controlplane.store.kv import KeyValue


class StoreError(Exception):
    """Base of every error the store raises."""


class Compacted(StoreError):
    """The revision asked for is older than the compaction mark: its history is gone.

    kube-apiserver answers 410 Gone ("too old resource version"), and a reflector re-lists.
    """

    def __init__(self, revision: int, compact_revision: int) -> None:
        super().__init__(
            f"required revision {revision} has been compacted (oldest available is {compact_revision})"
        )
        self.revision = revision
        self.compact_revision = compact_revision


class FutureRevision(StoreError):
    """The revision asked for has not been written yet."""

    def __init__(self, revision: int, current_revision: int) -> None:
        super().__init__(f"required revision {revision} is a future revision (current is {current_revision})")
        self.revision = revision
        self.current_revision = current_revision


class InvalidRequest(StoreError):
    """A request the store refuses before touching anything (bad key, oversize value, bad txn)."""


class KeyOutsidePrefix(InvalidRequest):
    """Every key of a cluster lives under its prefix, ``/registry/`` as in kube-apiserver."""

    def __init__(self, key: str, prefix: str) -> None:
        super().__init__(f"key {key!r} is outside the cluster's prefix {prefix!r}")
        self.key = key
        self.prefix = prefix


class RequestTooLarge(InvalidRequest):
    """A request larger than etcd's default ``--max-request-bytes`` (1.5 MiB)."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"request is too large: {size} bytes, the limit is {limit} bytes")
        self.size = size
        self.limit = limit


class DuplicateKey(InvalidRequest):
    """A transaction that writes the same key twice (etcd: "duplicate key given in txn request")."""

    def __init__(self, key: str) -> None:
        super().__init__(f"duplicate key given in txn request: {key!r}")
        self.key = key


class UnknownCluster(StoreError):
    """No store exists for this cluster name."""

    def __init__(self, cluster: str) -> None:
        super().__init__(f"unknown cluster {cluster!r}")
        self.cluster = cluster


class KeyExists(StoreError):
    """create-if-absent found the key already there (kube-apiserver: 409 AlreadyExists)."""

    def __init__(self, key: str, current: KeyValue | None = None) -> None:
        super().__init__(f"key {key!r} already exists")
        self.key = key
        self.current = current


class KeyNotFound(StoreError):
    """An update or delete of a key that does not exist (kube-apiserver: 404 NotFound)."""

    def __init__(self, key: str) -> None:
        super().__init__(f"key {key!r} not found")
        self.key = key


class RevisionMismatch(StoreError):
    """update-/delete-if-unchanged found the key modified since (kube-apiserver: 409 Conflict).

    ``current`` is the key as it is now, so the caller can retry without another read.
    """

    def __init__(self, key: str, expected: int, current: KeyValue | None) -> None:
        actual = current.mod_revision if current else 0
        super().__init__(f"key {key!r} was modified: expected mod_revision {expected}, found {actual}")
        self.key = key
        self.expected = expected
        self.current = current


class LeaseNotFound(StoreError):
    """The lease does not exist or has already expired (etcd: "requested lease not found")."""

    def __init__(self, lease_id: int) -> None:
        super().__init__(f"requested lease not found: {lease_id}")
        self.lease_id = lease_id


class WatcherTooSlow(StoreError):
    """A watcher fell so far behind that the store closed it rather than lose events silently.

    Like kube-apiserver's cacher, which terminates an unresponsive watcher: the client re-lists and
    watches again from the list's revision.
    """

    def __init__(self, backlog: int) -> None:
        super().__init__(f"watcher closed: it fell {backlog} events behind")
        self.backlog = backlog


class StoreClosed(StoreError):
    """The store was closed; its watches end with this error."""

    def __init__(self) -> None:
        super().__init__("store is closed")


class BackendUnavailable(StoreError):
    """The backend (database server, etcd) could not be reached or failed; nothing was written."""
