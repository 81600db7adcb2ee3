"""The cluster as the topology diagram draws it, at one moment: the state a page starts from.

A page that opens on a cluster cannot rebuild it from trace events: the events that created a
Deployment's pods an hour ago are long gone from the trace's history (and were never made if nobody
was watching then). So a page starts from the cluster's **state** and then applies the trace from
that moment on, as a client-go informer lists and then watches:

- the store read at one revision R: every Node (Ready, cordoned), every Pod (its node, phase, being
  deleted) and the leader-election Leases in kube-system (who leads) — the same facts a ``store.txn``
  carries for each write of one (``trace/objects.py``);
- what the lab itself knows at the trace's seq S: the components it runs (with the controllers of the
  controller manager) and those it stopped, the client watches open on the API server, and the faults
  in force (``controlplane/faults``).

The trace socket (``controlplane/consumers/trace.py``) takes S and the components and watches in one
step with its subscription, so no event falls between the state and the stream, and reads the store
afterwards at its current revision R (MVCC keeps it still while it reads): writes traced after S but
already at or below R are in the state, and the page skips them by their revision.

The rewound page reads the same objects at an older revision (``read_objects(..., revision=R)``)
through the etcd panel's view.

These reads are the lab looking into etcd, like ``etcdctl``, not the API server's: they go through
``Store.inspect``, which is neither traced nor measured, so the diagram never draws a read the API
server did not make. Only Nodes, Pods and kube-system Leases are read, never a Secret.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from controlplane.store.errors import UnknownCluster
from controlplane.trace.objects import (
    LEADER_LEASES_PREFIX,
    NODES_PREFIX,
    PODS_PREFIX,
    is_leader_lease,
    lease_facts,
    node_facts,
    pod_facts,
    stored_object,
)

if TYPE_CHECKING:
    from controlplane.apiserver.watchcache import WatchCache
    from controlplane.runtime import Lab
    from controlplane.store.interface import Store
    from controlplane.store.kv import KeyValue

#: The most objects of one kind a read answers with (a classroom cluster holds a few hundred).
MAX_OBJECTS = 5000


def node_summary(kv: KeyValue) -> dict[str, Any] | None:
    """What the diagram draws of a stored Node (``trace.objects.node_facts``) and its ``mod_revision``:
    ``{"name": "node-1", "ready": "True", "unschedulable": false, "mod_revision": 7}``. None for a
    value that is not a JSON object."""
    stored = stored_object(kv.value)
    if stored is None:
        return None
    return {**node_facts(kv.key, stored), "mod_revision": kv.mod_revision}


def pod_summary(kv: KeyValue) -> dict[str, Any] | None:
    """What the diagram draws of a stored Pod (``trace.objects.pod_facts``) and its ``mod_revision``:
    ``{"namespace": "default", "name": "web", "generateName": "", "node": "node-1", "phase": "Running",
    "deleting": false, "mod_revision": 41}``. None for a value that is not a JSON object."""
    stored = stored_object(kv.value)
    if stored is None:
        return None
    return {**pod_facts(kv.key, stored), "mod_revision": kv.mod_revision}


def lease_summary(kv: KeyValue) -> dict[str, Any] | None:
    """A leader-election Lease in kube-system: its name and holder (``trace.objects.lease_facts``)."""
    stored = stored_object(kv.value)
    if stored is None:
        return None
    return {**lease_facts(kv.key, stored), "mod_revision": kv.mod_revision}


@dataclass(frozen=True, slots=True)
class DiagramObjects:
    """The Nodes, Pods and leader Leases stored at one revision, as the diagram draws them."""

    revision: int
    current_revision: int
    compacted: int
    nodes: list[dict[str, Any]]
    pods: list[dict[str, Any]]
    leases: list[dict[str, Any]] = field(default_factory=list)
    unreadable: int = 0
    more: bool = False

    def objects_json(self) -> dict[str, Any]:
        return {
            "nodes": self.nodes,
            "pods": self.pods,
            "leases": self.leases,
            "unreadable": self.unreadable,
            "more": self.more,
        }

    def as_json(self, cluster: str) -> dict[str, Any]:
        return {
            "cluster": cluster,
            "revision": self.revision,
            "current_revision": self.current_revision,
            "compacted": self.compacted,
            "objects": self.objects_json(),
        }


async def read_objects(store: Store, *, revision: int | None = None) -> DiagramObjects:
    """The Nodes, Pods and leader Leases at ``revision`` (default: now), decoded for the diagram. A
    value that cannot be decoded (encrypted at rest) is counted in ``unreadable``.

    Raises the store's ``Compacted`` or ``FutureRevision``.
    """
    if revision is None:
        revision = await store.current_revision()
    nodes = await store.inspect(NODES_PREFIX, revision=revision, limit=MAX_OBJECTS)
    pods = await store.inspect(PODS_PREFIX, revision=revision, limit=MAX_OBJECTS)
    leases = await store.inspect(LEADER_LEASES_PREFIX, revision=revision, limit=MAX_OBJECTS)
    node_rows = [node_summary(kv) for kv in nodes.kvs]
    pod_rows = [pod_summary(kv) for kv in pods.kvs]
    lease_rows = [lease_summary(kv) for kv in leases.kvs if is_leader_lease(kv.key)]
    unreadable = sum(row is None for row in node_rows + pod_rows + lease_rows)
    return DiagramObjects(
        revision=revision,
        current_revision=await store.current_revision(),
        compacted=await store.compact_revision(),
        nodes=[row for row in node_rows if row is not None],
        pods=[row for row in pod_rows if row is not None],
        leases=[row for row in lease_rows if row is not None],
        unreadable=unreadable,
        more=nodes.more or pods.more or leases.more,
    )


def component_rows(running: Mapping[str, object], stopped: Iterable[str] = ()) -> list[dict[str, Any]]:
    """The components the lab runs for a cluster (diagram node id -> component), as the diagram draws
    them: ``{"id": "controller-manager", "state": "running", "leader": true, "controllers": [...]}``,
    and those of its plan that are stopped now (a kubelet a fault stopped): ``{"id": "kubelet:node-2",
    "state": "stopped"}``, the state their last ``component.state`` said; all by id.

    ``leader`` is there for components that stand for leader election (None: not electing);
    ``controllers`` for the controller manager, by the names its reconcile events use.
    """
    rows: list[dict[str, Any]] = [{"id": node_id, "state": "stopped"} for node_id in stopped]
    for node_id, component in running.items():
        row: dict[str, Any] = {"id": node_id, "state": "running"}
        is_leader = getattr(component, "is_leader", None)
        if callable(is_leader):
            row["leader"] = bool(is_leader())
        manager = getattr(component, "manager", None)
        controllers = getattr(manager, "controllers", None)
        if isinstance(controllers, list):
            row["controllers"] = sorted(str(getattr(c, "name", c)) for c in controllers)
        rows.append(row)
    # By id: a page draws the parts in the order it meets them, so node-2 stays between node-1 and
    # node-3 whether its kubelet is stopped or was started again after the others.
    return sorted(rows, key=lambda row: str(row["id"]))


def watch_rows(caches: Iterable[WatchCache]) -> list[dict[str, Any]]:
    """The client watches open on the API server now: each is a ``watch.opened`` the page missed,
    with the same fields (``watch``, ``from``, ``to``, ``resource``, ``namespace``)."""
    rows: list[dict[str, Any]] = []
    for cache in caches:
        for watcher in cache.watchers:
            if watcher.diagram is not None:
                rows.append(dict(watcher.diagram))
    return rows


@dataclass(frozen=True, slots=True)
class TakenState:
    """What the lab knows of a cluster at one trace seq (its components and open watches), taken in
    one step with a subscription; ``read`` adds the store's objects at the current revision."""

    store: Store
    components: list[dict[str, Any]]
    watches: list[dict[str, Any]]
    #: The faults in force (``controlplane/faults``), each as its ``fault.applied`` named it:
    #: ``{"fault": "stop-kubelet", "target": "kubelet:node-2"}``.
    faults: list[dict[str, Any]] = field(default_factory=list)

    async def read(self) -> dict[str, Any]:
        """The state as the trace socket sends it (``framing.state_message``)."""
        objects = await read_objects(self.store)
        return {
            "revision": objects.revision,
            "compacted": objects.compacted,
            "objects": objects.objects_json(),
            "components": self.components,
            "watches": self.watches,
            "faults": self.faults,
        }


def take_state(
    store: Store,
    running: Mapping[str, object],
    caches: Iterable[WatchCache],
    *,
    stopped: Iterable[str] = (),
    faults: Iterable[Mapping[str, Any]] = (),
) -> TakenState:
    """The components (``running``: diagram node id -> component; ``stopped``: the ids of those
    stopped), open watches (the API server's watch caches) and faults in force now, without waiting:
    call it in the same step as the subscription it goes with."""
    return TakenState(
        store, component_rows(running, stopped), watch_rows(caches), [dict(fault) for fault in faults]
    )


def state_taker(lab: Lab, name: str) -> Callable[[], TakenState] | None:
    """What takes the state of cluster ``name`` for a page that starts (``take_state``), or None when
    ``lab`` does not run it."""
    try:
        cluster = lab.cluster(name)
    except UnknownCluster:
        return None

    def take() -> TakenState:
        apiserver = cluster.apiserver
        caches = apiserver.caches.values() if apiserver is not None else ()
        return take_state(
            cluster.store,
            cluster.components_running,
            caches,
            stopped=cluster.components_stopped,
            faults=cluster.faults_in_force,
        )

    return take


__all__ = [
    "MAX_OBJECTS",
    "DiagramObjects",
    "TakenState",
    "component_rows",
    "lease_summary",
    "node_summary",
    "pod_summary",
    "read_objects",
    "state_taker",
    "take_state",
    "watch_rows",
]
