"""Reading the lab for the cluster pages, without starting or touching anything (selectors, in the
HackSoft Django styleguide's terms: keyword-only, typed, no side effects).

The web UI and the clusters live in the same process under ``manage.py runlab``, so the landing page
can show each cluster's live state from the running lab. Elsewhere (a test client, ``manage.py
shell``, a second web process in a scale-out) there is no lab in this process, and the page lists the
clusters it finds in the data directory instead, as "not running here".

Everything read from the lab is read through ``courses.gateway``; this module shapes it for the pages:
the clusters' summaries (``lab_summary``, ``cluster_summary``), what a topology needs to know to start
(``topology_config``), and the etcd panel's and the rewound diagram's reads (``etcd_keys``,
``etcd_key_states``, ``diagram_objects``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from django.urls import reverse

from courses import gateway
from courses.lab.etcdpanel import MAX_KEYS, MAX_REFRESH_KEYS, StoreSnapshot, snapshot_of

# -- the clusters ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ClusterSummary:
    name: str
    #: ``starting``, ``running``, ``stopping``, ``stopped``, ``failed`` or ``not running here``.
    state: str
    error: str | None = None

    @property
    def settled(self) -> bool:
        """False while the cluster is on its way somewhere (the page keeps polling)."""
        return self.state not in gateway.UNSETTLED


@dataclass(frozen=True, slots=True)
class LabSummary:
    #: Whether this process runs the lab (``manage.py runlab``) or only reads its data directory.
    serving: bool
    #: The lab's state (``starting``, ``running`` ...) or ``not running here``.
    state: str
    clusters: tuple[ClusterSummary, ...]
    store: str

    @property
    def settled(self) -> bool:
        return self.state not in gateway.UNSETTLED and all(c.settled for c in self.clusters)


NOT_RUNNING = "not running here"


def lab_summary(*, data_dir: Path, store_url: str) -> LabSummary:
    """The clusters of the lab in ``data_dir``, with their live state when this process runs them."""
    names = gateway.cluster_names(data_dir=data_dir, store_url=store_url)
    lab = gateway.running_lab(data_dir=data_dir)
    if lab is None:
        clusters = tuple(ClusterSummary(name, NOT_RUNNING) for name in names)
        return LabSummary(serving=False, state=NOT_RUNNING, clusters=clusters, store=store_url)
    running = {c.name: c for c in lab.clusters}
    summaries = []
    for name in sorted(set(names) | set(running)):
        cluster = running.get(name)
        if cluster is None:
            state = gateway.STARTING if lab.starting else gateway.STOPPED
            summaries.append(ClusterSummary(name, state))
        else:
            summaries.append(ClusterSummary(name, cluster.state, cluster.error))
    return LabSummary(serving=True, state=lab.state, clusters=tuple(summaries), store=store_url)


def cluster_summary(*, name: str, data_dir: Path, store_url: str) -> ClusterSummary | None:
    """One cluster of the lab, or None if there is no such cluster."""
    for cluster in lab_summary(data_dir=data_dir, store_url=store_url).clusters:
        if cluster.name == name:
            return cluster
    return None


# -- the topology ------------------------------------------------------------------------------------


class TopologyConfig(TypedDict):
    """What static/topology/topology.js reads to start (the page's ``#topology-config`` JSON)."""

    cluster: str
    #: The cluster's trace socket, same origin (``controlplane.consumers`` serves it).
    socket: str
    #: The timing profile this process starts clusters with; the stream's hello says which is in force.
    timing: str
    #: The etcd panel's reads (``courses.lab.views.etcd_keys``).
    etcd: str


def topology_config(*, cluster: str, timing_profile: str) -> TopologyConfig:
    """The configuration of a topology of ``cluster``, for a page that mounts one."""
    return {
        "cluster": cluster,
        "socket": gateway.trace_socket_path(cluster=cluster),
        "timing": timing_profile,
        "etcd": reverse("courses:etcd-keys", kwargs={"name": cluster}),
    }


# -- the etcd panel and the rewound diagram ----------------------------------------------------------
#
# Each raises ``gateway.NotServedHere`` or ``gateway.NotRunning`` if the cluster is not running here,
# and the store's ``gateway.Compacted``, ``gateway.FutureRevision`` or ``gateway.InvalidRequest``.


async def etcd_keys(*, cluster: str, prefix: str, revision: int | None = None) -> StoreSnapshot:
    """Every key under ``prefix`` at ``revision`` (default: now), values described but not included."""
    read = await gateway.read_range(cluster=cluster, prefix=prefix, revision=revision, limit=MAX_KEYS)
    return snapshot_of(read, with_values=False)


async def etcd_key_states(*, cluster: str, keys: Sequence[str], revision: int | None = None) -> StoreSnapshot:
    """The given keys at ``revision`` (default: now), with their values; the missing ones as ``absent``.

    The page asks for this when a ``store.txn`` names keys it wrote, at that transaction's revision, so
    the panel agrees with the moment the diagram shows.
    """
    read = await gateway.read_keys(cluster=cluster, keys=keys[:MAX_REFRESH_KEYS], revision=revision)
    return snapshot_of(read, with_values=True)


async def diagram_objects(*, cluster: str, revision: int | None = None) -> gateway.DiagramObjects:
    """The Nodes, Pods and leader Leases at ``revision`` (default: now), decoded for the diagram."""
    return await gateway.read_diagram(cluster=cluster, revision=revision)
