"""The store's vocabulary: key-values, events, and the parts of a transaction.

These mirror etcd's v3 API (``mvccpb.KeyValue``, ``mvccpb.Event``, ``etcdserverpb.Compare`` and
``RequestOp``), because that is the interface kube-apiserver programs against:

- a **revision** is a cluster-wide counter, bumped by one for every committed write transaction;
- each key carries its ``create_revision`` (when it was created), ``mod_revision`` (when it was last
  written) and ``version`` (how many times it was written since it was created);
- a **transaction** is *if every compare holds, then do these operations, else do those*; it commits
  as one revision. kube-apiserver's optimistic concurrency is exactly this: "update the pod if its
  mod_revision is still 42" (``k8s.io/apiserver/pkg/storage/etcd3/store.go``, ``GuaranteedUpdate``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Literal, NamedTuple

#: Every key of a cluster lives under this prefix, as in kube-apiserver (``--etcd-prefix``).
KEY_PREFIX = "/registry/"

#: etcd's default ``--max-request-bytes``: 1.5 MiB.
MAX_REQUEST_BYTES = 1536 * 1024


class KeyValue(NamedTuple):
    """A key as stored at some revision.

    (Immutable, like every value the store hands out: one event object is shared by all watchers. The
    hot types are named tuples rather than frozen dataclasses because they are created for every
    write and a named tuple is three times cheaper to build.)
    """

    key: str
    value: bytes
    create_revision: int
    mod_revision: int
    version: int
    lease: int = 0


class EventType(enum.Enum):
    PUT = "PUT"
    DELETE = "DELETE"


class Event(NamedTuple):
    """One change seen by a watch.

    For a DELETE, ``kv`` carries the key and the deleting revision as ``mod_revision`` (value empty,
    version 0), exactly as etcd reports it; ``prev_kv`` is the key as it was just before the change.
    """

    type: EventType
    kv: KeyValue
    prev_kv: KeyValue | None

    @property
    def revision(self) -> int:
        return self.kv.mod_revision

    @property
    def key(self) -> str:
        return self.kv.key


CompareTarget = Literal["mod_revision", "create_revision", "version"]
CompareOp = Literal["=", "!=", "<", ">"]


class Compare(NamedTuple):
    """One condition of a transaction; a key that does not exist has all three targets equal to 0."""

    key: str
    target: CompareTarget
    op: CompareOp
    value: int

    @classmethod
    def absent(cls, key: str) -> Compare:
        """The key does not exist (etcd: ``Compare(CreateRevision(key), "=", 0)``)."""
        return cls(key, "create_revision", "=", 0)

    @classmethod
    def unchanged(cls, key: str, mod_revision: int) -> Compare:
        """The key was last written at ``mod_revision``."""
        return cls(key, "mod_revision", "=", mod_revision)

    def holds(self, current: KeyValue | None) -> bool:
        actual = 0 if current is None else getattr(current, self.target)
        if self.op == "=":
            return bool(actual == self.value)
        if self.op == "!=":
            return bool(actual != self.value)
        if self.op == "<":
            return bool(actual < self.value)
        return bool(actual > self.value)


class Put(NamedTuple):
    """Write ``value`` at ``key``, optionally attached to a lease (the key dies with the lease)."""

    key: str
    value: bytes
    lease: int = 0


class Delete(NamedTuple):
    """Delete ``key`` (a no-op, writing nothing, when it does not exist)."""

    key: str


class Get(NamedTuple):
    """Read ``key`` inside the transaction, e.g. to return the current object after a failed compare."""

    key: str


Op = Put | Delete | Get


class Txn(NamedTuple):
    """``if all(compares) then success else failure``, committed as one revision if it writes."""

    compares: tuple[Compare, ...] = ()
    success: tuple[Op, ...] = ()
    failure: tuple[Op, ...] = ()


class PutResponse(NamedTuple):
    prev_kv: KeyValue | None


class DeleteResponse(NamedTuple):
    deleted: int
    prev_kv: KeyValue | None


class GetResponse(NamedTuple):
    kv: KeyValue | None


OpResponse = PutResponse | DeleteResponse | GetResponse


class TxnResult(NamedTuple):
    """The outcome of a transaction.

    ``revision`` is the store's revision after it: the new revision if it wrote, else the current one.
    ``responses`` has one entry per operation of the branch that ran.
    """

    succeeded: bool
    revision: int
    responses: tuple[OpResponse, ...] = ()
    events: tuple[Event, ...] = ()


@dataclass(frozen=True, slots=True)
class RangeResult:
    """Keys read at ``revision``, in key order.

    ``more`` says whether keys beyond ``limit`` remain; ``count`` is the number of keys in the whole
    range at that revision (kube-apiserver derives ``remainingItemCount`` from it).
    """

    kvs: tuple[KeyValue, ...]
    revision: int
    more: bool
    count: int


@dataclass(frozen=True, slots=True)
class Lease:
    """A lease: keys attached to it are deleted, in one revision, when it expires or is revoked."""

    id: int
    ttl: int
    expires_at: float
