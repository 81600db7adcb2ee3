"""Choosing a cluster's store backend from a URL, and finding a cluster's store by name.

``KUBELAB_STORE`` picks the backend for every cluster:

- ``sqlite`` (the embedded default): one SQLite file per cluster,
  ``<data dir>/clusters/<name>/store.sqlite3``;
- ``postgresql://user@host:port/db``: one PostgreSQL database shared by all clusters (scale-out);
- ``etcd://host:port``: a real etcd, as in real Kubernetes; revisions are etcd's own.
"""

from __future__ import annotations

from pathlib import Path

from controlplane.clock import SYSTEM_CLOCK, Clock
from controlplane.store.compaction import RetentionPolicy
from controlplane.store.errors import UnknownCluster
from controlplane.store.interface import Store
from controlplane.trace import NULL_SINK, TraceSink


def store_path(data_dir: Path, cluster: str) -> Path:
    """Where the embedded SQLite backend keeps a cluster's store."""
    return data_dir / "clusters" / cluster / "store.sqlite3"


def open_store(
    cluster: str,
    *,
    url: str = "sqlite",
    data_dir: Path,
    trace: TraceSink = NULL_SINK,
    clock: Clock = SYSTEM_CLOCK,
    retention: RetentionPolicy | None = None,
) -> Store:
    """A (not yet started) store for ``cluster`` on the backend that ``url`` names."""
    retention = retention if retention is not None else RetentionPolicy()
    if url in ("", "sqlite") or url.startswith("sqlite:"):
        from controlplane.store.sqlite import SqliteStore

        path = store_path(data_dir, cluster)
        path.parent.mkdir(parents=True, exist_ok=True)
        return SqliteStore(cluster, path=path, trace=trace, clock=clock, retention=retention)
    if url.startswith(("postgres://", "postgresql://")):
        from controlplane.store.postgres import PostgresStore

        return PostgresStore(cluster, dsn=url, trace=trace, clock=clock, retention=retention)
    if url.startswith("etcd://"):
        from controlplane.store.etcd import EtcdStore

        return EtcdStore(cluster, endpoint="http://" + url.removeprefix("etcd://"), trace=trace)
    raise ValueError(f"unsupported store URL {url!r}: use sqlite, postgresql://... or etcd://host:port")


class StoreRegistry:
    """The stores of the clusters this process serves, by cluster name."""

    def __init__(self) -> None:
        self._stores: dict[str, Store] = {}

    def add(self, store: Store) -> None:
        self._stores[store.cluster] = store

    def remove(self, cluster: str) -> Store:
        try:
            return self._stores.pop(cluster)
        except KeyError:
            raise UnknownCluster(cluster) from None

    def get(self, cluster: str) -> Store:
        """The store of ``cluster``; ``UnknownCluster`` if this process has none."""
        try:
            return self._stores[cluster]
        except KeyError:
            raise UnknownCluster(cluster) from None

    def __contains__(self, cluster: object) -> bool:
        return cluster in self._stores

    def names(self) -> list[str]:
        return sorted(self._stores)
