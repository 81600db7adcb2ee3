"""The scheduler's cache: the nodes, and the pods bound or assumed on each of them.

kube-scheduler keeps its own picture of the cluster (upstream ``pkg/scheduler/backend/cache``) rather
than reading the informers' stores at every attempt. It holds:

- **nodes**, by name, as the node informer delivers them;
- **pods** that are *bound*: the informer has seen them with ``spec.nodeName``, so they take up room
  on that node;
- **assumed** pods: the scheduler chose a node and wrote the pod here *before* the API server heard
  of the binding (``AssumePod``). The next attempt, a millisecond later, already sees that room taken.
  When the informer delivers the pod bound, the bound copy takes over; when the binding fails, the
  assumption is forgotten (``ForgetPod``) and the room is free again.

Each attempt schedules against a **snapshot** of the cache (``UpdateSnapshot``): one ``NodeInfo`` per
node, with the requests of every pod on it summed up. Rebuilding every ``NodeInfo`` for every attempt
would cost pods x pods in all, so, as upstream's does, the cache keeps its node infos between attempts
and applies only what changed since the last snapshot. Every write to ``nodes``, ``pods`` and
``assumed`` notes the key it touched; the snapshot applies just those keys.

Not modelled: the expiry of assumed pods whose binding never shows up (upstream's ``cleanupAssumedPods``).
"""

from __future__ import annotations

from typing import Any, Self

from controlplane.api.meta import object_key
from controlplane.components.scheduler.framework import NodeInfo, Obj, Snapshot


class ChangeTrackingDict(dict[str, Obj]):
    """A dict that notes, in the set ``changed``, every key set or removed, by whichever method.

    The snapshot relies on it: a write that escaped ``changed`` would leave a stale ``NodeInfo``.
    Reads are plain dict reads.
    """

    def __init__(self, changed: set[str]) -> None:
        super().__init__()
        self._changed = changed

    def __setitem__(self, key: str, value: Obj) -> None:
        self._changed.add(key)
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        self._changed.add(key)
        super().__delitem__(key)

    def pop(self, key: str, *default: Any) -> Any:
        self._changed.add(key)
        return super().pop(key, *default)

    def popitem(self) -> tuple[str, Obj]:
        key, value = super().popitem()
        self._changed.add(key)
        return key, value

    def setdefault(self, key: str, default: Obj) -> Obj:
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self) -> None:
        self._changed.update(self)
        super().clear()

    def update(self, *others: Any, **items: Obj) -> None:
        # dict's own update writes without calling __setitem__, so every key goes through it here.
        for key, value in dict(*others, **items).items():
            self[key] = value

    # typeshed types dict's ``|=`` together with ``|``, which builds a new plain dict and is left as is.
    def __ior__(self, other: Any) -> Self:  # type: ignore[override,misc]
        self.update(other)
        return self


class Cache:
    """Nodes, bound pods and assumed pods, and the snapshot each scheduling attempt reads."""

    def __init__(self) -> None:
        #: The keys set or removed since the last snapshot: node names, and pod keys (bound or assumed).
        self._changed_nodes: set[str] = set()
        self._changed_pods: set[str] = set()
        #: Nodes by name.
        self.nodes: dict[str, Obj] = ChangeTrackingDict(self._changed_nodes)
        #: Pods bound to a node, as the informer delivered them, by key.
        self.pods: dict[str, Obj] = ChangeTrackingDict(self._changed_pods)
        #: Pods assumed on a node (``spec.nodeName`` set by the scheduler) whose binding the informer
        #: has not delivered yet, by key.
        self.assumed: dict[str, Obj] = ChangeTrackingDict(self._changed_pods)
        #: The node infos the snapshot is made of, and where each pod in them is (node, the object).
        self._node_infos: dict[str, NodeInfo] = {}
        self._placed: dict[str, tuple[str, Obj]] = {}
        #: The snapshot over those infos, ordered by node name: kept until a node comes or goes.
        self._snapshot: Snapshot | None = None

    def update_snapshot(self) -> Snapshot:
        """The cache as one attempt sees it: every node, with its bound and assumed pods.

        Like upstream's ``UpdateSnapshot``, only what changed since the last call is applied: a node
        object replaced, a pod placed, moved or gone. The snapshot itself (the infos in name order)
        lasts until a node comes or goes.
        """
        infos = self._node_infos
        changed_nodes = [(name, self.nodes.get(name), infos.get(name)) for name in self._changed_nodes]
        self._changed_nodes.clear()
        if any(node is None or info is None for _, node, info in changed_nodes):
            self._rebuild()  # a node came or went (rare): place every pod again
            self._snapshot = None
        else:
            for _, node, info in changed_nodes:
                assert node is not None and info is not None
                info.set_node(node)
            for key in self._changed_pods:
                pod = self.pods.get(key)
                self._place(key, pod if pod is not None else self.assumed.get(key))
        self._changed_pods.clear()
        if self._snapshot is None:
            self._snapshot = Snapshot.of(infos.values())
        return self._snapshot

    def _rebuild(self) -> None:
        """Match the node infos to the node set, then place every bound and assumed pod."""
        infos = self._node_infos
        for name in [n for n in infos if n not in self.nodes]:
            for pod in infos.pop(name).pods:
                self._placed.pop(object_key(pod), None)
        for name, node in self.nodes.items():
            info = infos.get(name)
            if info is None:
                infos[name] = NodeInfo(node)
            else:
                info.set_node(node)
        wanted = dict(self.pods)
        for key, pod in self.assumed.items():
            wanted.setdefault(key, pod)
        for key in [k for k in self._placed if k not in wanted]:
            self._place(key, None)
        for key, pod in wanted.items():
            self._place(key, pod)

    def _place(self, key: str, pod: Obj | None) -> None:
        """Put the pod on its node's info (taking it off the one it was on), or off if None."""
        placed = self._placed.get(key)
        if placed is not None and placed[1] is pod:
            return
        if placed is not None:
            del self._placed[key]
            if (info := self._node_infos.get(placed[0])) is not None:
                info.remove_pod(placed[1])
        if pod is None:
            return
        node_name = str((pod.get("spec") or {}).get("nodeName") or "")
        if (info := self._node_infos.get(node_name)) is not None:
            info.add_pod(pod)
            self._placed[key] = (node_name, pod)
        # else: bound to a node the scheduler does not know (yet); placed when the node comes


__all__ = ["Cache", "ChangeTrackingDict"]
