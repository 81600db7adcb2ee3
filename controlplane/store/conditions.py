"""What may be wrong with the store as the API server reaches it: slow commits, or no store at all.

Two failures of etcd every operator meets:

- **slow disks.** etcd commits a write only once its write-ahead log is on disk (``fsync``); on a slow
  disk every commit waits that much longer (etcd's ``etcd_disk_wal_fsync_duration_seconds``, and the
  "apply request took too long" warnings), and so does every write request of kube-apiserver, which
  holds its request (and its API Priority and Fairness seat) until etcd answers. Reads are not
  slowed: they are served from memory. ``commit_delay`` is that added latency, in seconds.
- **unreachable.** kube-apiserver cannot reach etcd (its members are down, or cut off): each request
  it sends fails after its timeout with ``etcdserver: request timed out``, which the API server
  answers as an error of the request (see ``StoreUnreachable``), and its ``/readyz`` check of etcd
  fails (``[-]etcd failed``). Reads served from its watch cache go on (nothing new is written).

``StoreConditions`` says which holds; ``Store`` (``interface.py``) checks its ``conditions`` on each
read, commit and new watch, and does nothing more while it is None (the lab's faults set it:
``controlplane/faults/storefaults.py``). Nothing here does I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from controlplane.store.errors import BackendUnavailable

#: What etcd's client returns when no member answers a request in time (etcd
#: ``server/etcdserver/errors/errors.go`` ``ErrTimeout``); kube-apiserver passes it on unchanged.
REQUEST_TIMED_OUT = "etcdserver: request timed out"


class StoreUnreachable(BackendUnavailable):
    """The store cannot be reached: nothing was read or written.

    Upstream, the etcd client's error reaches the API server's handler unchanged (the storage layer
    maps only its own errors: ``storeerr.Interpret*Error`` in
    k8s.io/apiserver/pkg/registry/generic/registry/store.go), so it answers with
    ``convertStorageErrorOrNot`` (endpoints/handlers/responsewriters/status.go): 500, reason unknown
    (empty), the message as etcd said it. kubectl prints ``Error from server: etcdserver: request
    timed out``.
    """

    def __init__(self, message: str = REQUEST_TIMED_OUT) -> None:
        super().__init__(message)


@dataclass(frozen=True, slots=True)
class StoreConditions:
    """What is wrong with the store now (see the module's docstring)."""

    #: Seconds every commit takes longer (a slow ``fsync``).
    commit_delay: float = 0.0
    #: Whether the store cannot be reached at all.
    unreachable: bool = False


__all__ = ["REQUEST_TIMED_OUT", "StoreConditions", "StoreUnreachable"]
