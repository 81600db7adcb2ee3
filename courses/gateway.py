"""The web application's one door into the running lab.

Under ``manage.py runlab`` the web side (``courses``) and the clusters share one process. Everything
the web side needs from the clusters goes through this module, and no other module of ``courses``
imports ``controlplane.runtime``, ``controlplane.diagram`` or ``controlplane.consumers``: the
import-linter contract "Only courses.gateway reaches into the running lab" (pyproject.toml) says so.
Today that is:

- the clusters of the lab and their states (``cluster_names``, ``running_lab``);
- the rule for a cluster's name (``check_cluster_name``), for the classrooms' model;
- a running cluster's store, read the lab's own way (``Store.inspect``, like ``etcdctl``: neither
  traced nor measured, so the diagram never draws a read the API server did not make): a range of
  keys or some keys for the etcd panel (``read_range``, ``read_keys``), the Nodes, Pods and Leases the
  diagram draws (``read_diagram``);
- the path of a cluster's trace socket (``trace_socket_path``), a route the control plane serves.

What comes back is plain data (frozen dataclasses, the store's ``KeyValue`` rows), never the ``Lab``,
a ``Cluster`` or a ``Store``, so a caller cannot start, stop or write anything by accident. The errors
a caller handles are defined or re-exported here: ``NotServedHere``, ``NotRunning``,
``InvalidClusterName`` and the store's ``Compacted``, ``FutureRevision`` and ``InvalidRequest``.

A feature that needs more of the lab (a student's own cluster, a request from the kubectl console,
the objects a check looks at) adds a function here, so the web side's dependencies on the control
plane stay in one place. The functions are keyword-only and typed (the HackSoft Django styleguide's
services and selectors); selectors and services call them, views call those.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
from django.urls import reverse

from controlplane.client.transport import InProcessTransport
from controlplane.consumers.routing import websocket_urlpatterns
from controlplane.diagram import DiagramObjects, read_objects
from controlplane.runtime import (
    Cluster,
    ClusterState,
    InvalidClusterName,
    LabState,
    active_lab,
    known_clusters,
)
from controlplane.runtime import check_cluster_name as _check_cluster_name
from controlplane.store.errors import Compacted, FutureRevision, InvalidRequest, UnknownCluster
from controlplane.store.kv import KeyValue
from controlplane.trace.bus import Subscription

# -- the lab and its clusters ------------------------------------------------------------------------

#: A cluster's state while it starts, and once stopped.
STARTING = ClusterState.STARTING.value
STOPPED = ClusterState.STOPPED.value
#: The states of a lab still starting: the clusters it has not started yet are still to come.
_LAB_STARTING = frozenset({LabState.NEW.value, LabState.STARTING.value})
#: The states of a lab or a cluster that has not settled yet (a page showing it keeps polling).
UNSETTLED = _LAB_STARTING | {ClusterState.NEW.value, ClusterState.STARTING.value}


@dataclass(frozen=True, slots=True)
class ClusterStatus:
    """One cluster of the lab this process runs."""

    name: str
    #: ``new``, ``starting``, ``running``, ``stopping``, ``stopped`` or ``failed``.
    state: str
    error: str | None = None


@dataclass(frozen=True, slots=True)
class LabStatus:
    """The lab this process runs."""

    #: ``new``, ``starting``, ``running``, ``stopping`` or ``stopped``.
    state: str
    #: Its clusters, by name.
    clusters: tuple[ClusterStatus, ...]

    @property
    def starting(self) -> bool:
        """Whether the lab is still starting: a cluster it has not started yet is still to come."""
        return self.state in _LAB_STARTING


def cluster_names(*, data_dir: Path, store_url: str) -> list[str]:
    """The names of the clusters of the lab in ``data_dir`` (running here or not), by name."""
    return known_clusters(data_dir, store_url=store_url)


def running_lab(*, data_dir: Path) -> LabStatus | None:
    """The lab this process runs (``manage.py runlab``), if it is the one in ``data_dir``; else None.

    None in a test client, ``manage.py shell`` or a second web process of a scale-out.
    """
    lab = active_lab()
    if lab is None or lab.data_dir != data_dir:
        return None
    clusters = tuple(ClusterStatus(c.name, c.state.value, c.error) for c in lab.clusters())
    return LabStatus(state=lab.state.value, clusters=clusters)


def check_cluster_name(*, name: str) -> None:
    """Raise ``InvalidClusterName`` unless ``name`` is a DNS label, as the lab requires of a cluster."""
    _check_cluster_name(name)


# -- a running cluster's store -----------------------------------------------------------------------


class NotServedHere(LookupError):
    """The cluster is not running in this process: no lab here, or none by that name."""

    def __init__(self, cluster: str) -> None:
        super().__init__(f"cluster {cluster!r} is not running in this process")
        self.cluster = cluster


class NotRunning(Exception):
    """The cluster is in this process's lab but not running (starting, stopped, failed ...)."""

    def __init__(self, cluster: str, *, state: str) -> None:
        super().__init__(f"cluster {cluster!r} is {state}")
        self.cluster = cluster
        self.state = state


def _running(cluster: str) -> Cluster:
    lab = active_lab()
    try:
        if lab is None:
            raise UnknownCluster(cluster)
        found = lab.cluster(cluster)
    except UnknownCluster:
        raise NotServedHere(cluster) from None
    if found.state is not ClusterState.RUNNING:
        raise NotRunning(cluster, state=found.state.value)
    return found


def require_running(*, cluster: str) -> None:
    """Raise ``NotServedHere`` or ``NotRunning`` unless the cluster runs in this process."""
    _running(cluster)


@dataclass(frozen=True, slots=True)
class StoreRead:
    """What one read of a cluster's store found, with the store's marks at the time."""

    #: The revision read at.
    revision: int
    current_revision: int
    #: The compaction mark: history before it is gone.
    compacted: int
    kvs: tuple[KeyValue, ...]
    #: Whether more keys matched than were answered, and how many matched.
    more: bool = False
    count: int = 0
    #: The keys asked for by name (``read_keys``) that do not exist at ``revision``.
    absent: tuple[str, ...] = ()


async def read_range(*, cluster: str, prefix: str, limit: int, revision: int | None = None) -> StoreRead:
    """The keys under ``prefix`` at ``revision`` (default: now), at most ``limit`` of them.

    Raises ``NotServedHere``, ``NotRunning``, or the store's ``Compacted`` (older than the compaction
    mark), ``FutureRevision`` or ``InvalidRequest`` (a prefix outside the store's).
    """
    store = _running(cluster).store
    result = await store.inspect(prefix, revision=revision, limit=limit)
    current, compacted = await store.current_revision(), await store.compact_revision()
    return StoreRead(
        result.revision, current, compacted, tuple(result.kvs), more=result.more, count=result.count
    )


async def read_keys(*, cluster: str, keys: Sequence[str], revision: int | None = None) -> StoreRead:
    """The given keys at ``revision`` (default: now), one read each; the missing ones as ``absent``.

    Raises as ``read_range`` does.
    """
    store = _running(cluster).store
    if revision is None:
        revision = await store.current_revision()
    found: list[KeyValue] = []
    absent: list[str] = []
    for key in keys:
        result = await store.inspect(key, revision=revision, limit=1)
        match = [kv for kv in result.kvs if kv.key == key]
        if match:
            found.append(match[0])
        else:
            absent.append(key)
    current, compacted = await store.current_revision(), await store.compact_revision()
    return StoreRead(revision, current, compacted, tuple(found), count=len(found), absent=tuple(absent))


async def read_diagram(*, cluster: str, revision: int | None = None) -> DiagramObjects:
    """The Nodes, Pods and leader Leases at ``revision`` (default: now), as the diagram draws them.

    Raises as ``read_range`` does.
    """
    return await read_objects(_running(cluster).store, revision=revision)


# -- acting on a cluster: its API server, its trace -----------------------------------------------------


@asynccontextmanager
async def api_client(
    *, cluster: str, token: str, read_timeout: float = 30.0
) -> AsyncIterator[httpx.AsyncClient]:
    """An httpx client for the cluster's API server in this process, as the holder of ``token``.

    Its requests go through the API server's whole pipeline (authentication, audit, flow control,
    RBAC, admission, storage) and are traced like kubectl's: the in-process transport is the same one
    the components use, without a socket. Paths are the API's own (``/api/v1/namespaces``), relative
    to the client's base URL ``http://lab/clusters/<cluster>``. The web app never holds a credential
    with more rights than the person it acts for; ``token`` is theirs.

    Raises ``NotServedHere`` or ``NotRunning`` as ``read_range`` does.
    """
    server = _running(cluster).apiserver
    if server is None:
        raise NotRunning(cluster, state=STOPPED)
    prefix = f"/clusters/{cluster}"
    transport = InProcessTransport(server, mount_prefix=prefix)
    client = httpx.AsyncClient(
        transport=transport,
        base_url=f"http://lab{prefix}",
        headers={"Authorization": f"Bearer {token}", "User-Agent": "kubelab-web/1.0"},
        timeout=read_timeout,
    )
    try:
        yield client
    finally:
        await client.aclose()


def subscribe_trace(*, cluster: str) -> Subscription:
    """A subscription to every trace event of the cluster from now on (close it when done).

    While it is open the cluster traces even when no page watches, which is what a step's check that
    listens for events needs. Raises ``NotServedHere`` or ``NotRunning`` as ``read_range`` does.
    """
    return _running(cluster).trace.subscribe()


# -- the control plane's own routes ------------------------------------------------------------------

#: The control plane's websocket routes (controlplane/consumers/routing.py). Channels serves them,
#: outside ``ROOT_URLCONF``, so ``reverse`` cannot find them there: this module names them as its
#: ``urlpatterns`` and ``trace_socket_path`` reverses against it (``urlconf=__name__``). No request is
#: ever routed through this module.
urlpatterns = websocket_urlpatterns


def trace_socket_path(*, cluster: str) -> str:
    """The path of the cluster's trace socket (``/ws/lab/<cluster>/trace/``), by its route's name."""
    return reverse("trace-stream", urlconf=__name__, kwargs={"cluster": cluster})


__all__ = [
    "STARTING",
    "STOPPED",
    "UNSETTLED",
    "ClusterStatus",
    "Compacted",
    "DiagramObjects",
    "FutureRevision",
    "InvalidClusterName",
    "InvalidRequest",
    "KeyValue",
    "LabStatus",
    "NotRunning",
    "NotServedHere",
    "StoreRead",
    "Subscription",
    "api_client",
    "check_cluster_name",
    "cluster_names",
    "read_diagram",
    "read_keys",
    "read_range",
    "require_running",
    "running_lab",
    "subscribe_trace",
    "trace_socket_path",
]
