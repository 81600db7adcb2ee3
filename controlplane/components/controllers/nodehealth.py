"""Node health, as the node lifecycle controller judges it: heartbeats, grace periods and taints.

A kubelet proves it is alive in two ways: it renews its **Lease** (``kube-node-lease/<node>``) every
10 s, and it posts the node's **status** (the ``Ready`` condition with a fresh ``lastHeartbeatTime``)
whenever something changes. The node lifecycle controller does not trust the timestamps written in
those objects, since the kubelet's clock may be wrong; it notes *its own* time whenever it sees either
signal change (the **probe timestamp**). A node whose probe timestamp is older than the grace period
(``node-monitor-grace-period``, 50 s since Kubernetes 1.32; ``node-startup-grace-period``, 60 s, for a
node that never posted a Ready condition) is presumed dead: the controller writes its conditions as
``Unknown`` ("Kubelet stopped posting node status.") on the kubelet's behalf.

Conditions then become **taints**, which is how the rest of the cluster reacts:

- ``Ready=False`` -> ``node.kubernetes.io/not-ready``, ``Ready=Unknown`` ->
  ``node.kubernetes.io/unreachable``, each with effect ``NoExecute`` (running pods that do not
  tolerate it are evicted by the taint eviction controller) and ``NoSchedule`` (the scheduler stops
  placing new pods there; the *TaintNodesByCondition* pass, which also maps ``MemoryPressure=True``
  to ``node.kubernetes.io/memory-pressure`` and so on);
- the controller adds taints with ``timeAdded`` set, and removes the NoExecute ones as soon as the
  node is ``Ready=True`` again.

Everything here is pure: it takes objects and the time and returns what should change. The
controller in ``nodelifecycle.py`` applies it.

Upstream: ``pkg/controller/nodelifecycle/node_lifecycle_controller.go`` (``tryUpdateNodeHealth``,
``doNoScheduleTaintingPass``, ``processTaintBaseEviction``), ``pkg/controller/util/node/
controller_utils.go`` (``SwapNodeControllerTaint``, ``MarkPodsNotReady``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

from controlplane.api.deepcopy import deep_copy
from controlplane.api.meta import Object, format_time, parse_timestamp
from controlplane.client.sharing import FrozenDict

#: Defaults of kube-controller-manager's flags (seconds).
DEFAULT_NODE_MONITOR_PERIOD: Final = 5.0
DEFAULT_NODE_MONITOR_GRACE_PERIOD: Final = 50.0
DEFAULT_NODE_STARTUP_GRACE_PERIOD: Final = 60.0

NODE_LEASE_NAMESPACE: Final = "kube-node-lease"

TAINT_NODE_NOT_READY: Final = "node.kubernetes.io/not-ready"
TAINT_NODE_UNREACHABLE: Final = "node.kubernetes.io/unreachable"
TAINT_NODE_UNSCHEDULABLE: Final = "node.kubernetes.io/unschedulable"
TAINT_NODE_MEMORY_PRESSURE: Final = "node.kubernetes.io/memory-pressure"
TAINT_NODE_DISK_PRESSURE: Final = "node.kubernetes.io/disk-pressure"
TAINT_NODE_NETWORK_UNAVAILABLE: Final = "node.kubernetes.io/network-unavailable"
TAINT_NODE_PID_PRESSURE: Final = "node.kubernetes.io/pid-pressure"

NO_EXECUTE: Final = "NoExecute"
NO_SCHEDULE: Final = "NoSchedule"

#: ``nodeConditionToTaintKeyStatusMap``: which condition status means which (NoSchedule) taint.
NODE_CONDITION_TO_TAINT_KEY: Final[Mapping[str, Mapping[str, str]]] = {
    "Ready": {"False": TAINT_NODE_NOT_READY, "Unknown": TAINT_NODE_UNREACHABLE},
    "MemoryPressure": {"True": TAINT_NODE_MEMORY_PRESSURE},
    "DiskPressure": {"True": TAINT_NODE_DISK_PRESSURE},
    "NetworkUnavailable": {"True": TAINT_NODE_NETWORK_UNAVAILABLE},
    "PIDPressure": {"True": TAINT_NODE_PID_PRESSURE},
}
#: ``taintKeyToNodeConditionMap``: the taint keys this controller owns (besides ``unschedulable``).
CONDITION_TAINT_KEYS: Final = frozenset(
    key for by_status in NODE_CONDITION_TO_TAINT_KEY.values() for key in by_status.values()
)

#: The conditions set to Unknown when the kubelet goes silent (not ``NetworkUnavailable``: the
#: network plugin owns that one).
MONITORED_CONDITIONS: Final = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")

REASON_STATUS_UNKNOWN: Final = "NodeStatusUnknown"
MESSAGE_STATUS_UNKNOWN: Final = "Kubelet stopped posting node status."
REASON_NEVER_UPDATED: Final = "NodeStatusNeverUpdated"
MESSAGE_NEVER_UPDATED: Final = "Kubelet never posted node status."


# -- conditions ----------------------------------------------------------------------------------


def get_condition(status: Mapping[str, Any] | None, type: str) -> Object | None:
    """The condition of ``type`` in a status (node or pod), if present."""
    for condition in (status or {}).get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == type:
            return condition
    return None


def ready_status(node: Mapping[str, Any]) -> str | None:
    """The node's ``Ready`` condition status ("True", "False", "Unknown"), or None if it has none."""
    condition = get_condition(node.get("status"), "Ready")
    return None if condition is None else str(condition.get("status", "Unknown"))


# -- health bookkeeping (tryUpdateNodeHealth) -----------------------------------------------------


@dataclass(frozen=True)
class NodeHealth:
    """What the controller last saw of a node (upstream ``nodeHealthData``), in its own time."""

    #: When the controller last saw a heartbeat (a new Ready heartbeat or a renewed Lease).
    probe_timestamp: float
    #: When the controller saw the Ready condition last change.
    ready_transition_timestamp: float
    #: The Ready condition as last seen (None: the node has not posted one).
    ready_condition: Object | None
    #: The Lease's renewTime as last seen.
    lease_renew_time: float | None = None


def observe_node_health(
    saved: NodeHealth | None,
    node: Mapping[str, Any],
    lease: Mapping[str, Any] | None,
    now: float,
    *,
    monitor_grace_period: float = DEFAULT_NODE_MONITOR_GRACE_PERIOD,
    startup_grace_period: float = DEFAULT_NODE_STARTUP_GRACE_PERIOD,
) -> tuple[NodeHealth, float]:
    """Update the bookkeeping from the node and its Lease as seen ``now``; the health and grace period.

    Follows ``tryUpdateNodeHealth``: a node that never posted Ready gets the startup grace period,
    counted from its creation; a changed ``lastHeartbeatTime`` of the Ready condition, or a Lease
    whose ``renewTime`` moved forward, sets the probe timestamp to ``now``.
    """
    current = get_condition(node.get("status"), "Ready")
    created = parse_timestamp((node.get("metadata") or {}).get("creationTimestamp"))
    created = now if created is None else created
    health: NodeHealth
    if current is None:
        grace = startup_grace_period
        if saved is not None:
            health = replace(saved, ready_condition=None)
        else:
            health = NodeHealth(created, created, None)
    else:
        grace = monitor_grace_period
        if not isinstance(current, FrozenDict):  # an informer's condition never changes: kept as is
            current = deep_copy(current)
        if saved is None or saved.ready_condition is None:
            lease_time = saved.lease_renew_time if saved is not None else None
            health = NodeHealth(now, now, current, lease_time)
        elif saved.ready_condition.get("lastHeartbeatTime") != current.get("lastHeartbeatTime"):
            transition = saved.ready_transition_timestamp
            if saved.ready_condition.get("lastTransitionTime") != current.get("lastTransitionTime"):
                transition = now
            health = NodeHealth(now, transition, current, saved.lease_renew_time)
        else:
            health = replace(saved, ready_condition=current)
    # "Always update the probe time if node lease is renewed."
    renew = parse_timestamp(((lease or {}).get("spec") or {}).get("renewTime")) if lease is not None else None
    if renew is not None and (health.lease_renew_time is None or health.lease_renew_time < renew):
        health = replace(health, lease_renew_time=renew, probe_timestamp=now)
    return health, grace


def health_expired(health: NodeHealth, grace_period: float, now: float) -> bool:
    """No heartbeat for longer than the grace period (strictly: ``now`` after probe + grace)."""
    return now > health.probe_timestamp + grace_period


def conditions_when_silent(node: Mapping[str, Any], now: float) -> list[Object]:
    """The node's conditions once the controller has given up on its kubelet.

    Ready, MemoryPressure, DiskPressure and PIDPressure become ``Unknown`` (reason
    ``NodeStatusUnknown``, "Kubelet stopped posting node status.") with ``lastTransitionTime`` now and
    ``lastHeartbeatTime`` kept; those never posted are added (``NodeStatusNeverUpdated``).
    """
    conditions = [deep_copy(c) for c in (node.get("status") or {}).get("conditions") or []]
    stamp = format_time(now)
    created = (node.get("metadata") or {}).get("creationTimestamp") or stamp
    for type in MONITORED_CONDITIONS:
        condition = next((c for c in conditions if c.get("type") == type), None)
        if condition is None:
            conditions.append(
                {
                    "type": type,
                    "status": "Unknown",
                    "lastHeartbeatTime": created,
                    "lastTransitionTime": stamp,
                    "reason": REASON_NEVER_UPDATED,
                    "message": MESSAGE_NEVER_UPDATED,
                }
            )
        elif condition.get("status") != "Unknown":
            condition.update(
                status="Unknown",
                reason=REASON_STATUS_UNKNOWN,
                message=MESSAGE_STATUS_UNKNOWN,
                lastTransitionTime=stamp,
            )
    return conditions


# -- taints --------------------------------------------------------------------------------------


def taint_matches(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Same key and effect (``Taint.MatchTaint``): the identity of a taint on a node."""
    return a.get("key") == b.get("key") and a.get("effect") == b.get("effect")


def condition_taints(node: Mapping[str, Any]) -> list[Object]:
    """The NoSchedule taints the node's conditions (and ``spec.unschedulable``) call for
    (``doNoScheduleTaintingPass``)."""
    taints: list[Object] = []
    for condition in (node.get("status") or {}).get("conditions") or []:
        key = NODE_CONDITION_TO_TAINT_KEY.get(condition.get("type"), {}).get(condition.get("status"))
        if key is not None:
            taints.append({"key": key, "effect": NO_SCHEDULE})
    if (node.get("spec") or {}).get("unschedulable"):
        taints.append({"key": TAINT_NODE_UNSCHEDULABLE, "effect": NO_SCHEDULE})
    return taints


def no_schedule_changes(node: Mapping[str, Any]) -> tuple[list[Object], list[Object]]:
    """(to add, to remove) among the NoSchedule taints this controller owns."""
    wanted = condition_taints(node)
    owned = [
        t
        for t in (node.get("spec") or {}).get("taints") or []
        if t.get("effect") == NO_SCHEDULE
        and (t.get("key") == TAINT_NODE_UNSCHEDULABLE or t.get("key") in CONDITION_TAINT_KEYS)
    ]
    add = [t for t in wanted if not any(taint_matches(t, o) for o in owned)]
    remove = [o for o in owned if not any(taint_matches(o, t) for t in wanted)]
    return add, remove


def no_execute_changes(observed_ready: str | None) -> tuple[list[Object], list[Object]]:
    """(to add, to remove) NoExecute taints for the Ready status the controller observed.

    not-ready and unreachable are mutually exclusive, mirroring the Ready condition; Ready=True
    removes both (``markNodeAsReachable``); no Ready condition yet: nothing to do.
    """
    not_ready = {"key": TAINT_NODE_NOT_READY, "effect": NO_EXECUTE}
    unreachable = {"key": TAINT_NODE_UNREACHABLE, "effect": NO_EXECUTE}
    if observed_ready == "False":
        return [not_ready], [unreachable]
    if observed_ready == "Unknown":
        return [unreachable], [not_ready]
    if observed_ready == "True":
        return [], [not_ready, unreachable]
    return [], []


def swap_taints(
    taints: Iterable[Mapping[str, Any]],
    add: Iterable[Mapping[str, Any]],
    remove: Iterable[Mapping[str, Any]],
    now: float,
) -> list[Object] | None:
    """The node's taints with ``remove`` gone and ``add`` present, new ones stamped ``timeAdded``
    (``SwapNodeControllerTaint``); None if nothing changes. A taint already present keeps its time."""
    current = [dict(t) for t in taints]
    result = [t for t in current if not any(taint_matches(t, r) for r in remove)]
    for taint in add:
        if not any(taint_matches(taint, t) for t in result):
            result.append({**taint, "timeAdded": format_time(now)})
    return None if result == current else result


# -- pods ----------------------------------------------------------------------------------------


def pod_marked_not_ready(pod: Mapping[str, Any], now: float) -> Object | None:
    """The pod's status with ``Ready=False``, or None if it has no Ready condition or already is.

    ``MarkPodsNotReady`` only flips an existing Ready condition (``UpdatePodCondition``: a changed
    status gets a new ``lastTransitionTime``).
    """
    status = deep_copy(dict(pod.get("status") or {}))
    condition = get_condition(status, "Ready")
    if condition is None or condition.get("status") == "False":
        return None
    condition["status"] = "False"
    condition["lastTransitionTime"] = format_time(now)
    return status


__all__ = [
    "CONDITION_TAINT_KEYS",
    "DEFAULT_NODE_MONITOR_GRACE_PERIOD",
    "DEFAULT_NODE_MONITOR_PERIOD",
    "DEFAULT_NODE_STARTUP_GRACE_PERIOD",
    "MESSAGE_STATUS_UNKNOWN",
    "NODE_LEASE_NAMESPACE",
    "REASON_STATUS_UNKNOWN",
    "TAINT_NODE_NOT_READY",
    "TAINT_NODE_UNREACHABLE",
    "NodeHealth",
    "condition_taints",
    "conditions_when_silent",
    "get_condition",
    "health_expired",
    "no_execute_changes",
    "no_schedule_changes",
    "observe_node_health",
    "pod_marked_not_ready",
    "ready_status",
    "swap_taints",
]
