"""Reading the lab for the web UI, without starting or touching anything (a selector, in HackSoft's terms).

The web UI and the clusters live in the same process under ``manage.py runlab``, so the landing page
can show each cluster's live state from the active ``Lab``. Elsewhere (a test client, ``manage.py
shell``, a second web process in a scale-out) there is no lab in this process, and the page lists the
clusters it finds in the data directory instead, as "not running here".
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from controlplane.runtime import ClusterState, LabState, active_lab, known_clusters


@dataclass(frozen=True, slots=True)
class ClusterSummary:
    name: str
    #: ``starting``, ``running``, ``stopping``, ``stopped``, ``failed`` or ``not running here``.
    state: str
    error: str | None = None

    @property
    def settled(self) -> bool:
        """False while the cluster is on its way somewhere (the page keeps polling)."""
        return self.state not in (ClusterState.STARTING.value, ClusterState.NEW.value)


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
        unsettled = (LabState.NEW.value, LabState.STARTING.value)
        return self.state not in unsettled and all(c.settled for c in self.clusters)


NOT_RUNNING = "not running here"


def lab_summary(*, data_dir: Path, store_url: str) -> LabSummary:
    """The clusters of the lab in ``data_dir``, with their live state when this process runs them."""
    names = known_clusters(data_dir, store_url=store_url)
    lab = active_lab()
    if lab is None or lab.data_dir != data_dir:
        clusters = tuple(ClusterSummary(name, NOT_RUNNING) for name in names)
        return LabSummary(serving=False, state=NOT_RUNNING, clusters=clusters, store=store_url)
    running = {c.name: c for c in lab.clusters()}
    starting = lab.state in (LabState.NEW, LabState.STARTING)
    summaries = []
    for name in sorted(set(names) | set(running)):
        cluster = running.get(name)
        if cluster is None:
            state = ClusterState.STARTING.value if starting else ClusterState.STOPPED.value
            summaries.append(ClusterSummary(name, state))
        else:
            summaries.append(ClusterSummary(name, cluster.state.value, cluster.error))
    return LabSummary(serving=True, state=lab.state.value, clusters=tuple(summaries), store=store_url)


def cluster_summary(name: str, *, data_dir: Path, store_url: str) -> ClusterSummary | None:
    """One cluster of the lab, or None if there is no such cluster."""
    for cluster in lab_summary(data_dir=data_dir, store_url=store_url).clusters:
        if cluster.name == name:
            return cluster
    return None
