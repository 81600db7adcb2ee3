"""The node lifecycle controller: notices kubelets that went silent, and says so on their nodes.

Nobody can ask a dead machine whether it is dead. Instead every kubelet keeps proving it is alive,
by renewing its Lease in ``kube-node-lease`` every 10 s and by posting its node's status; this
controller watches those heartbeats (``nodehealth.py`` holds the rules) and, every
``node_monitor_period`` (5 s), checks each node:

1. **Health.** No heartbeat for ``node_monitor_grace_period`` (50 s; 60 s for a node that never
   posted a Ready condition): the controller writes the node's conditions as ``Unknown``, reason
   ``NodeStatusUnknown``, "Kubelet stopped posting node status.", through ``nodes/<name>/status``,
   and records the Event ``NodeNotReady`` ("Node n1 status is now: NodeNotReady").
2. **Taints.** Conditions become taints with ``timeAdded``: ``node.kubernetes.io/unreachable``
   (Ready=Unknown) or ``node.kubernetes.io/not-ready`` (Ready=False), as ``NoSchedule`` (no new pods
   there) and ``NoExecute`` (the taint eviction controller evicts the pods that do not tolerate it).
   When the kubelet is back and the node is Ready again, the taints go.
3. **Pods.** The pods on a node that stopped being Ready are marked ``Ready=False`` (Event
   ``NodeNotReady``, "Node is not ready", on each pod), so that Services stop sending them traffic
   even before they are evicted: the endpoints controllers see the pods' readiness change.

A reconcile handles one node and asks to be called again after ``node_monitor_period``: the
periodic pass of upstream's ``monitorNodeHealth``, spread over the nodes. Changes to a node or to
pods bound to it reconcile the node at once. Lease changes do not: as upstream (whose Lease informer
has no event handlers), the Lease cache is only read by the periodic pass, which is soon enough to
notice a heartbeat, and a renewal every 10 s per node would otherwise reconcile its node each time
for nothing. All timers are on the cluster clock.

Simplified from upstream: NoExecute taints are added at once, without the per-zone rate limiter
(``--node-eviction-rate`` 0.1/s) or the "full disruption" mode that stops tainting when every node of
a zone is down; a controller that starts does not first remove existing NoExecute taints.

Upstream: ``pkg/controller/nodelifecycle/node_lifecycle_controller.go``,
``pkg/controller/util/node/controller_utils.go``.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Final

from controlplane.api.meta import Object
from controlplane.client.cache import meta_namespace_key_func
from controlplane.client.errors import APIError, Conflict, NotFound
from controlplane.client.manager import Manager
from controlplane.client.reconciler import Controller, Request, Result
from controlplane.client.record import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING
from controlplane.client.rest import PatchType
from controlplane.components.controllers.indexes import ensure_pod_node_name_index, pods_on_node
from controlplane.components.controllers.kinds import LEASES, NODES, PODS
from controlplane.components.controllers.nodehealth import (
    DEFAULT_NODE_MONITOR_GRACE_PERIOD,
    DEFAULT_NODE_MONITOR_PERIOD,
    DEFAULT_NODE_STARTUP_GRACE_PERIOD,
    NODE_LEASE_NAMESPACE,
    NodeHealth,
    conditions_when_silent,
    get_condition,
    health_expired,
    no_execute_changes,
    no_schedule_changes,
    observe_node_health,
    pod_marked_not_ready,
    ready_status,
    swap_taints,
)

logger = logging.getLogger(__name__)


#: The controller's name in kube-controller-manager, and the source of its Events.
NAME: Final = "node-lifecycle-controller"
EVENT_SOURCE: Final = "node-controller"
#: How often a write that lost a race is tried again at once with a fresh copy (``NodeHealthUpdateRetry``).
RETRIES: Final = 5


def _node_ref(name: str, uid: str = "") -> Object:
    """The object an Event about a node points at (``RecordNodeEvent``)."""
    return {"kind": "Node", "apiVersion": "v1", "metadata": {"name": name, "uid": uid or name}}


def _pod_ref(pod: Mapping[str, Any]) -> Object:
    return {**pod, "kind": "Pod", "apiVersion": "v1"}


def pod_to_node(pod: Mapping[str, Any]) -> list[Request]:
    """A bound pod's changes reconcile its node (a pod bound to a node that is not Ready is marked)."""
    node_name = (pod.get("spec") or {}).get("nodeName")
    return [Request("", str(node_name))] if node_name else []


class NodeLifecycleController:
    """The reconciler: one node's health, taints and pods per call."""

    def __init__(
        self,
        manager: Manager,
        *,
        node_monitor_period: float = DEFAULT_NODE_MONITOR_PERIOD,
        node_monitor_grace_period: float = DEFAULT_NODE_MONITOR_GRACE_PERIOD,
        node_startup_grace_period: float = DEFAULT_NODE_STARTUP_GRACE_PERIOD,
    ) -> None:
        self.clock = manager.clock
        self.node_monitor_period = node_monitor_period
        self.node_monitor_grace_period = node_monitor_grace_period
        self.node_startup_grace_period = node_startup_grace_period
        self.nodes = manager.informer_for(NODES)
        self.leases = manager.informer_for(LEASES)
        self.pods = manager.informer_for(PODS)
        ensure_pod_node_name_index(self.pods)
        self.recorder = manager.event_recorder(EVENT_SOURCE)
        self._nodes_api = manager.client.resource(NODES.group, NODES.version, NODES.plural)
        self._pods_api = manager.client.resource(PODS.group, PODS.version, PODS.plural)
        #: ``nodeHealthMap``: what this controller saw of each node, in its own time.
        self.health: dict[str, NodeHealth] = {}
        #: ``knownNodeSet``: nodes seen so far (name -> uid), for RegisteredNode / RemovingNode.
        self.known: dict[str, str] = {}
        #: ``nodesToRetry``: nodes whose pods could not all be marked not ready.
        self.retry_pods: set[str] = set()
        #: The pods seen bound to each node, to spot pods newly bound to a node that is not Ready.
        self.pods_seen: dict[str, set[str]] = {}

    async def reconcile(self, request: Request) -> Result:
        name = request.name
        node = self.nodes.indexer.get_by_key(name)
        if node is None:
            self._forget(name)
            return Result()
        uid = str((node.get("metadata") or {}).get("uid") or "")
        if name not in self.known:
            self.known[name] = uid
            self.recorder.event(
                _node_ref(name, uid),
                EVENT_TYPE_NORMAL,
                "RegisteredNode",
                f"Registered Node {name} in Controller",
            )
        updated = await self._update_health(node)
        if updated is None:
            return Result()
        node, observed, current = updated
        await self._update_taints(node, observed, current)
        await self._update_pods(node, observed, current)
        return Result(requeue_after=self.node_monitor_period)

    def _forget(self, name: str) -> None:
        uid = self.known.pop(name, None)
        if uid is not None:
            self.recorder.event(
                _node_ref(name, uid),
                EVENT_TYPE_NORMAL,
                "RemovingNode",
                f"Removing Node {name} from Controller",
            )
        self.health.pop(name, None)
        self.retry_pods.discard(name)
        self.pods_seen.pop(name, None)

    # -- 1. health (tryUpdateNodeHealth) ---------------------------------------------------------------

    async def _update_health(self, node: Object) -> tuple[Object, str, str | None] | None:
        """Bookkeeping, and the Unknown conditions when the grace period is over.

        Returns the node (as written, if it was), the Ready status observed before this pass
        ("Unknown" if it had none) and the current one (None: the node has posted no Ready condition
        and is still within its startup grace period); None if the node is gone.
        """
        name = str(node["metadata"]["name"])
        error: APIError | None = None
        for _ in range(RETRIES):
            now = self.clock.now()
            lease = self.leases.indexer.get_by_key(f"{NODE_LEASE_NAMESPACE}/{name}")
            health, grace = observe_node_health(
                self.health.get(name),
                node,
                lease,
                now,
                monitor_grace_period=self.node_monitor_grace_period,
                startup_grace_period=self.node_startup_grace_period,
            )
            self.health[name] = health
            current = ready_status(node)
            observed = current or "Unknown"
            if not health_expired(health, grace, now):
                return node, observed, current
            conditions = conditions_when_silent(node, now)
            ready = get_condition({"conditions": conditions}, "Ready")
            if ready == get_condition(node.get("status"), "Ready"):
                return node, observed, "Unknown"
            logger.info("%s: node %s stopped posting status; marking it Unknown", NAME, name)
            body = copy.deepcopy(node)
            body.setdefault("status", {})["conditions"] = conditions
            try:
                written = await self._nodes_api.update_status(body)
            except NotFound:
                return None
            except Conflict as conflict:
                error = conflict
                try:
                    node = await self._nodes_api.get(name)
                except NotFound:
                    return None
                continue
            self.health[name] = replace(
                health, ready_transition_timestamp=now, ready_condition=copy.deepcopy(ready)
            )
            return written, observed, "Unknown"
        assert error is not None
        raise error

    # -- 2. taints (doNoScheduleTaintingPass + processTaintBaseEviction) ------------------------------

    async def _update_taints(self, node: Object, observed: str, current: str | None) -> None:
        """NoSchedule taints from the node's conditions; NoExecute ones from the observed Ready status.

        One merge patch with the node's resourceVersion as precondition (``PatchNodeTaints``); on a
        conflict, read the node again and recompute.
        """
        name = str(node["metadata"]["name"])
        for _ in range(RETRIES):
            add, remove = no_schedule_changes(node)
            if current is not None:
                no_execute_add, no_execute_remove = no_execute_changes(observed)
                add, remove = add + no_execute_add, remove + no_execute_remove
            taints = swap_taints((node.get("spec") or {}).get("taints") or [], add, remove, self.clock.now())
            if taints is None:
                return
            patch = {
                "metadata": {"resourceVersion": node["metadata"].get("resourceVersion")},
                "spec": {"taints": taints or None},
            }
            try:
                await self._nodes_api.patch(name, patch, patch_type=PatchType.MERGE)
                return
            except NotFound:
                return
            except Conflict:
                try:
                    node = await self._nodes_api.get(name)
                except NotFound:
                    return
        logger.warning("%s: could not update the taints of node %s; next pass", NAME, name)

    # -- 3. pods (MarkPodsNotReady) --------------------------------------------------------------------

    async def _update_pods(self, node: Object, observed: str, current: str | None) -> None:
        name = str(node["metadata"]["name"])
        pods = pods_on_node(self.pods, name)
        keys = {meta_namespace_key_func(p) for p in pods}
        newly_bound = keys - self.pods_seen.get(name, set())
        self.pods_seen[name] = keys
        if current is None:
            return
        if current != "True" and observed == "True":
            # Report the node event only once, when the status changes.
            self.recorder.event(
                _node_ref(name, self.known.get(name, "")),
                EVENT_TYPE_NORMAL,
                "NodeNotReady",
                f"Node {name} status is now: NodeNotReady",
            )
            to_mark = pods
        elif name in self.retry_pods and observed != "True":
            to_mark = pods
        elif current != "True":
            # ``processPod``: pods newly bound to a node that is not Ready.
            to_mark = [p for p in pods if meta_namespace_key_func(p) in newly_bound]
        else:
            self.retry_pods.discard(name)
            return
        if await self._mark_pods_not_ready(to_mark, name):
            self.retry_pods.discard(name)
        else:
            self.retry_pods.add(name)

    async def _mark_pods_not_ready(self, pods: list[Object], node_name: str) -> bool:
        """Set Ready=False on each pod (``MarkPodsNotReady``); False if some could not be written."""
        ok = True
        for pod in pods:
            if (pod.get("spec") or {}).get("nodeName") != node_name:
                continue
            status = pod_marked_not_ready(pod, self.clock.now())
            if status is None:
                continue
            body = {**copy.deepcopy(pod), "status": status}
            try:
                await self._pods_api.in_namespace(pod["metadata"]["namespace"]).update_status(body)
            except NotFound:
                continue
            except APIError as error:
                logger.info(
                    "%s: could not mark pod %s not ready: %s", NAME, meta_namespace_key_func(pod), error
                )
                ok = False
                continue
            self.recorder.event(_pod_ref(pod), EVENT_TYPE_WARNING, "NodeNotReady", "Node is not ready")
        return ok


def add_to_manager(
    manager: Manager,
    *,
    node_monitor_period: float = DEFAULT_NODE_MONITOR_PERIOD,
    node_monitor_grace_period: float = DEFAULT_NODE_MONITOR_GRACE_PERIOD,
    node_startup_grace_period: float = DEFAULT_NODE_STARTUP_GRACE_PERIOD,
    workers: int = 1,
) -> Controller:
    """Build the node lifecycle controller and register it: for Nodes, woken by pods bound to them.

    The Lease informer is only read (``self.leases``, started and synced by the manager), not watched.
    """
    reconciler = NodeLifecycleController(
        manager,
        node_monitor_period=node_monitor_period,
        node_monitor_grace_period=node_monitor_grace_period,
        node_startup_grace_period=node_startup_grace_period,
    )
    controller = manager.new_controller(NAME, reconciler, for_=NODES, workers=workers)
    controller.watch(reconciler.pods, pod_to_node)
    return controller


__all__ = ["NAME", "NodeLifecycleController", "add_to_manager", "pod_to_node"]
