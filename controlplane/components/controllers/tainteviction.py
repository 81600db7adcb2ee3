"""The taint eviction controller: pods leave nodes whose ``NoExecute`` taints they do not tolerate.

A taint with effect ``NoExecute`` does more than keep new pods away (that is ``NoSchedule``): pods
already running on the node must go. For each pod bound to a tainted node the controller decides:

- a ``NoExecute`` taint the pod does **not tolerate**: delete the pod **at once**;
- every taint tolerated, and some matching tolerations have ``tolerationSeconds``: delete the pod
  after the **smallest** of them (a toleration with ``tolerationSeconds <= 0`` means at once);
- tolerated by tolerations without ``tolerationSeconds``: the pod may stay **forever**.

The clock starts when the controller first sees the pod on the tainted node (as upstream, which
starts the timer on observation, not at the taint's ``timeAdded``); if the taint goes away, or the
pod, before the time is up, the eviction is **cancelled** (Event "Cancelling deletion of Pod ns/x").
This is how a node that is unreachable for five minutes loses its pods: the node lifecycle
controller adds ``node.kubernetes.io/unreachable:NoExecute``, and the DefaultTolerationSeconds
admission plugin gave every pod a toleration of it with ``tolerationSeconds: 300``.

An eviction records the Event ``TaintManagerEviction`` ("Marking for deletion Pod ns/x"), adds the
pod condition ``DisruptionTarget`` (reason ``DeletionByTaintManager``) so the pod's owner can tell why
it went, and deletes the pod. A reconcile handles one pod; a change to a node's taints reconciles
every pod on it; a scheduled eviction is a ``Result(requeue_after=...)`` on the cluster clock.

Upstream: ``pkg/controller/tainteviction/taint_eviction.go`` (``processPodOnNode``,
``getMinTolerationTime``, ``addConditionAndDeletePod``), ``k8s.io/api/core/v1/toleration.go``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from controlplane.api.deepcopy import deep_copy
from controlplane.api.meta import Object, format_time
from controlplane.client.errors import APIError, Conflict, NotFound
from controlplane.client.manager import Manager
from controlplane.client.reconciler import Controller, Request, Result
from controlplane.client.record import EVENT_TYPE_NORMAL
from controlplane.components.controllers.indexes import ensure_pod_node_name_index, pods_on_node
from controlplane.components.controllers.kinds import NODES, PODS
from controlplane.components.controllers.nodehealth import get_condition

logger = logging.getLogger(__name__)


NAME: Final = "taint-eviction-controller"
NO_EXECUTE: Final = "NoExecute"
DISRUPTION_TARGET: Final = "DisruptionTarget"
REASON_DELETION_BY_TAINT_MANAGER: Final = "DeletionByTaintManager"
MESSAGE_DELETION_BY_TAINT_MANAGER: Final = "Taint manager: deleting due to NoExecute taint"
#: Attempts at the condition + delete (``retries`` in ``deletePodHandler``).
RETRIES: Final = 5


# -- pure rules ----------------------------------------------------------------------------------


def no_execute_taints(taints: Iterable[Mapping[str, Any]] | None) -> list[Mapping[str, Any]]:
    return [t for t in taints or [] if t.get("effect") == NO_EXECUTE]


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """``Toleration.ToleratesTaint``: effect (empty = any), key (empty = any), then operator."""
    if toleration.get("effect") and toleration.get("effect") != taint.get("effect"):
        return False
    if toleration.get("key") and toleration.get("key") != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    if operator == "Equal":
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return False


def matching_tolerations(
    taints: Sequence[Mapping[str, Any]], tolerations: Sequence[Mapping[str, Any]]
) -> tuple[bool, list[Mapping[str, Any]]]:
    """(all taints tolerated, the first toleration matching each) (``GetMatchingTolerations``)."""
    used: list[Mapping[str, Any]] = []
    for taint in taints:
        match = next((t for t in tolerations if tolerates(t, taint)), None)
        if match is None:
            return False, []
        used.append(match)
    return True, used


def min_toleration_seconds(tolerations: Sequence[Mapping[str, Any]]) -> float | None:
    """The shortest ``tolerationSeconds`` (0 if any is <= 0, or if there are no tolerations); None
    when none has one: tolerated forever (``getMinTolerationTime``)."""
    if not tolerations:
        return 0.0
    seconds = [t["tolerationSeconds"] for t in tolerations if t.get("tolerationSeconds") is not None]
    if not seconds:
        return None
    return float(max(0, min(int(s) for s in seconds)))


def eviction_delay(
    taints: Iterable[Mapping[str, Any]] | None, tolerations: Sequence[Mapping[str, Any]]
) -> float | None:
    """Seconds until a pod with ``tolerations`` on a node with ``taints`` must go; None: never.

    Only ``NoExecute`` taints count; 0 means at once.
    """
    relevant = no_execute_taints(taints)
    if not relevant:
        return None
    tolerated, used = matching_tolerations(relevant, tolerations)
    if not tolerated:
        return 0.0
    return min_toleration_seconds(used)


@dataclass(frozen=True)
class ScheduledEviction:
    """A pod's eviction, decided at ``created_at`` to happen at ``fire_at`` (``TimedWorker``)."""

    created_at: float
    fire_at: float


def schedule_eviction(existing: ScheduledEviction | None, delay: float, now: float) -> ScheduledEviction:
    """Keep an eviction already scheduled (its clock started earlier), else start one now.

    ``processPodOnNode`` keeps the pending work when a pod or node changes again: a later start
    would only fire later.
    """
    if existing is not None:
        return existing
    return ScheduledEviction(now, now + delay)


def with_disruption_target(pod: Mapping[str, Any], now: float) -> Object | None:
    """The pod's status with the DisruptionTarget condition, or None if it already has it."""
    status = deep_copy(dict(pod.get("status") or {}))
    wanted = {
        "type": DISRUPTION_TARGET,
        "status": "True",
        "reason": REASON_DELETION_BY_TAINT_MANAGER,
        "message": MESSAGE_DELETION_BY_TAINT_MANAGER,
    }
    current = get_condition(status, DISRUPTION_TARGET)
    if current is not None and all(current.get(k) == v for k, v in wanted.items()):
        return None
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != DISRUPTION_TARGET]
    transition = current.get("lastTransitionTime") if current and current.get("status") == "True" else None
    conditions.append({**wanted, "lastTransitionTime": transition or format_time(now)})
    status["conditions"] = conditions
    return status


# -- the controller -----------------------------------------------------------------------------


def _pod_ref(namespace: str, name: str) -> Object:
    """The Event's object: upstream's reference has no uid (``emitPodDeletionEvent``)."""
    return {"kind": "Pod", "apiVersion": "v1", "metadata": {"namespace": namespace, "name": name}}


class TaintEvictionController:
    """The reconciler: one pod's fate on its node's NoExecute taints."""

    def __init__(self, manager: Manager) -> None:
        self.clock = manager.clock
        self.nodes = manager.informer_for(NODES)
        self.pods = manager.informer_for(PODS)
        ensure_pod_node_name_index(self.pods)
        self.recorder = manager.event_recorder(NAME)
        self._pods_api = manager.client.resource(PODS.group, PODS.version, PODS.plural)
        #: Pending evictions by pod key (``taintEvictionQueue``).
        self.scheduled: dict[str, ScheduledEviction] = {}

    def node_to_pods(self, node: Mapping[str, Any]) -> list[Request]:
        """A node's changes reconcile every pod bound to it."""
        name = (node.get("metadata") or {}).get("name")
        return [Request.for_object(p) for p in pods_on_node(self.pods, str(name))] if name else []

    async def reconcile(self, request: Request) -> Result:
        key = request.key
        pod = self.pods.indexer.get_by_key(key)
        if pod is None:
            self._cancel(request)
            return Result()
        if (pod.get("metadata") or {}).get("deletionTimestamp"):
            self.scheduled.pop(key, None)  # already on its way out
            return Result()
        node_name = (pod.get("spec") or {}).get("nodeName")
        node = self.nodes.indexer.get_by_key(str(node_name)) if node_name else None
        taints = ((node or {}).get("spec") or {}).get("taints")
        delay = eviction_delay(taints, (pod.get("spec") or {}).get("tolerations") or [])
        if delay is None:
            self._cancel(request)
            return Result()
        now = self.clock.now()
        if delay == 0:
            self._cancel(request)  # "we're going to delete the Pod right away"
            scheduled = ScheduledEviction(now, now)
        else:
            scheduled = schedule_eviction(self.scheduled.get(key), delay, now)
        self.scheduled[key] = scheduled
        if scheduled.fire_at > now:
            return Result(requeue_after=scheduled.fire_at - now)
        await self._evict(request)
        return Result()

    def _cancel(self, request: Request) -> None:
        if self.scheduled.pop(request.key, None) is not None:
            self.recorder.event(
                _pod_ref(request.namespace, request.name),
                EVENT_TYPE_NORMAL,
                "TaintManagerEviction",
                f"Cancelling deletion of Pod {request.key}",
            )

    async def _evict(self, request: Request) -> None:
        """Event, DisruptionTarget condition, delete (``deletePodHandler``)."""
        self.scheduled.pop(request.key, None)
        logger.info("%s: deleting pod %s", NAME, request.key)
        self.recorder.event(
            _pod_ref(request.namespace, request.name),
            EVENT_TYPE_NORMAL,
            "TaintManagerEviction",
            f"Marking for deletion Pod {request.key}",
        )
        pods = self._pods_api.in_namespace(request.namespace)
        error: APIError | None = None
        for _ in range(RETRIES):
            try:
                pod = await pods.get(request.name)
                status = with_disruption_target(pod, self.clock.now())
                if status is not None:
                    await pods.update_status({**pod, "status": status})
                await pods.delete(request.name)
                return
            except NotFound:
                return
            except Conflict as conflict:
                error = conflict
        assert error is not None
        raise error


def add_to_manager(manager: Manager, *, workers: int = 1) -> Controller:
    """Build the taint eviction controller and register it: for Pods, woken by their nodes' changes."""
    reconciler = TaintEvictionController(manager)
    controller = manager.new_controller(NAME, reconciler, for_=PODS, workers=workers)
    controller.watch(reconciler.nodes, reconciler.node_to_pods)
    return controller


__all__ = [
    "NAME",
    "ScheduledEviction",
    "TaintEvictionController",
    "add_to_manager",
    "eviction_delay",
    "matching_tolerations",
    "min_toleration_seconds",
    "no_execute_taints",
    "schedule_eviction",
    "tolerates",
    "with_disruption_target",
]
