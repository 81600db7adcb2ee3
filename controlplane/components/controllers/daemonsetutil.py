"""The DaemonSet controller's arithmetic: which nodes want a pod, which pod is whose, what a rollout step is.

Everything here is pure (the controller in ``daemonset`` reads the caches and writes). Upstream:
``pkg/controller/daemon/util/daemonset_util.go``, the predicates in ``daemon_controller.go`` and the
rollout in ``update.go``.

**Which nodes.** A DaemonSet wants a pod on a node when the pod it would create (``new_pod``) fits
there: the node matches the template's ``nodeSelector`` and required node affinity, and the pod
tolerates every ``NoSchedule`` and ``NoExecute`` taint of the node (``node_should_run_daemon_pod``).
A pod already on a node whose taints it no longer tolerates may *continue running* if only
``NoSchedule`` taints are untolerated (they keep new pods off; ``NoExecute`` ones evict). Every
DaemonSet pod tolerates the node-condition taints (``not-ready`` and ``unreachable`` ``NoExecute``,
``disk-pressure``, ``memory-pressure``, ``pid-pressure``, ``unschedulable`` ``NoSchedule``, and
``network-unavailable`` for host-network pods: ``add_daemon_pod_tolerations``), so a cordoned or
failing node keeps its daemons (a node's log shipper should run even when the node is sick).

**How a pod gets to its node.** Since Kubernetes 1.12 the controller does not set ``spec.nodeName``
itself: it gives each pod a required node affinity term ``matchFields: metadata.name In [<node>]``
(``replace_node_name_affinity``) and lets the scheduler bind it, so that the scheduler's view of the
node's resources (and preemption) applies to daemons too. ``target_node_name`` reads the node back
from either place.

**Revisions.** Each version of the template is a ControllerRevision named ``<ds>-<hash>`` whose
``data`` is a strategic merge patch replacing ``spec.template`` (``revision_patch``; ``kubectl rollout
undo`` applies exactly that patch). Its hash labels every pod made from it (``controller-revision-
hash``), as does the template generation (``pod-template-generation``): a pod with either current is
*updated* (``is_pod_updated``).

**Rolling update** (``plan_rolling_update``). Without surge, at most ``maxUnavailable`` (of the nodes
that want a pod; default 1) nodes may be without an available pod: the controller deletes old pods
(unavailable old pods first, always allowed) while that budget lasts, and the next syncs create their
replacements. With ``maxSurge``, it first creates the new pod beside the old one on up to ``maxSurge``
nodes, and deletes the old pod once the new one is available.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cmp_to_key
from typing import Any, Final

from controlplane.api.deepcopy import deep_copy
from controlplane.api.meta import Object, parse_timestamp
from controlplane.components.controllers.deploymentutil import (
    compute_hash,
    meta,
    name_of,
    scaled_value,
    spec,
    status,
)
from controlplane.components.controllers.podcontrol import is_pod_available
from controlplane.components.scheduler.framework import NodeInfo
from controlplane.components.scheduler.plugins.node_affinity import pod_matches_node_selector_and_affinity
from controlplane.components.scheduler.plugins.taint_toleration import find_untolerated_taint

#: ``apps.ControllerRevisionHashLabelKey`` / ``DefaultDaemonSetUniqueLabelKey``.
CONTROLLER_REVISION_HASH_LABEL: Final = "controller-revision-hash"
#: ``extensions.DaemonSetTemplateGenerationKey``.
TEMPLATE_GENERATION_LABEL: Final = "pod-template-generation"
#: ``appsv1.DeprecatedTemplateGeneration`` (the API server keeps it; see strategies.daemonsets).
TEMPLATE_GENERATION_ANNOTATION: Final = "deprecated.daemonset.template.generation"
ROLLING_UPDATE: Final = "RollingUpdate"
ON_DELETE: Final = "OnDelete"

# Taint keys of node conditions (k8s.io/api/core/v1 well_known_taints.go).
TAINT_NODE_NOT_READY: Final = "node.kubernetes.io/not-ready"
TAINT_NODE_UNREACHABLE: Final = "node.kubernetes.io/unreachable"
TAINT_NODE_DISK_PRESSURE: Final = "node.kubernetes.io/disk-pressure"
TAINT_NODE_MEMORY_PRESSURE: Final = "node.kubernetes.io/memory-pressure"
TAINT_NODE_PID_PRESSURE: Final = "node.kubernetes.io/pid-pressure"
TAINT_NODE_UNSCHEDULABLE: Final = "node.kubernetes.io/unschedulable"
TAINT_NODE_NETWORK_UNAVAILABLE: Final = "node.kubernetes.io/network-unavailable"

#: ``util.AddOrUpdateDaemonPodTolerations``, in upstream's order.
DAEMON_POD_TOLERATIONS: Final[tuple[tuple[str, str], ...]] = (
    (TAINT_NODE_NOT_READY, "NoExecute"),
    (TAINT_NODE_UNREACHABLE, "NoExecute"),
    (TAINT_NODE_DISK_PRESSURE, "NoSchedule"),
    (TAINT_NODE_MEMORY_PRESSURE, "NoSchedule"),
    (TAINT_NODE_PID_PRESSURE, "NoSchedule"),
    (TAINT_NODE_UNSCHEDULABLE, "NoSchedule"),
)

# -- pods of a DaemonSet -------------------------------------------------------------------------------


def _same_toleration(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """``Toleration.MatchToleration``: same key, operator, value and effect."""
    return all((a.get(k) or "") == (b.get(k) or "") for k in ("key", "operator", "value", "effect"))


def add_or_update_toleration(pod_spec: Object, toleration: Object) -> None:
    """``v1helper.AddOrUpdateTolerationInPodSpec``: replace a matching toleration, else append."""
    tolerations = pod_spec.get("tolerations")
    if not isinstance(tolerations, list):
        tolerations = pod_spec["tolerations"] = []
    for i, existing in enumerate(tolerations):
        if isinstance(existing, dict) and _same_toleration(existing, toleration):
            tolerations[i] = toleration
            return
    tolerations.append(toleration)


def add_daemon_pod_tolerations(pod_spec: Object) -> None:
    """``AddOrUpdateDaemonPodTolerations``: a daemon tolerates its node's conditions."""
    wanted = list(DAEMON_POD_TOLERATIONS)
    if pod_spec.get("hostNetwork"):
        wanted.append((TAINT_NODE_NETWORK_UNAVAILABLE, "NoSchedule"))
    for key, effect in wanted:
        add_or_update_toleration(pod_spec, {"key": key, "operator": "Exists", "effect": effect})


def new_pod(ds: Mapping[str, Any], node_name: str) -> Object:
    """``NewPod``: the pod the DaemonSet would run on ``node_name``, for the predicates."""
    template = spec(ds).get("template") or {}
    pod_spec: Object = deep_copy(template.get("spec") or {})
    pod_spec["nodeName"] = node_name
    add_daemon_pod_tolerations(pod_spec)
    pod_meta: Object = deep_copy(template.get("metadata") or {})
    pod_meta["namespace"] = meta(ds).get("namespace")
    return {"metadata": pod_meta, "spec": pod_spec}


def node_should_run_daemon_pod(node: Mapping[str, Any], ds: Mapping[str, Any]) -> tuple[bool, bool]:
    """``NodeShouldRunDaemonPod``: (should run a new pod here, may keep running one here)."""
    node_name = name_of(node)
    template_node = ((spec(ds).get("template") or {}).get("spec") or {}).get("nodeName") or ""
    if template_node and template_node != node_name:
        return False, False
    pod = new_pod(ds, node_name)
    if not pod_matches_node_selector_and_affinity(pod, NodeInfo(dict(node))):
        return False, False
    taints: list[Mapping[str, Any]] = list(spec(node).get("taints") or [])
    tolerations: list[Mapping[str, Any]] = list(pod["spec"].get("tolerations") or [])
    if find_untolerated_taint(taints, tolerations, {"NoSchedule", "NoExecute"}) is not None:
        # A pod already there may stay unless a NoExecute taint would evict it.
        return False, find_untolerated_taint(taints, tolerations, {"NoExecute"}) is None
    return True, True


def target_node_name(pod: Mapping[str, Any]) -> str | None:
    """``GetTargetNodeName``: ``spec.nodeName``, or the node the pod's affinity pins it to."""
    node_name = spec(pod).get("nodeName")
    if node_name:
        return str(node_name)
    required = ((spec(pod).get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    for term in required.get("nodeSelectorTerms") or []:
        for expression in (term or {}).get("matchFields") or []:
            if expression.get("key") == "metadata.name" and expression.get("operator") == "In":
                values = expression.get("values") or []
                return str(values[0]) if len(values) == 1 else None
    return None


def replace_node_name_affinity(affinity: Any, node_name: str) -> Object:
    """``ReplaceDaemonSetPodNodeNameNodeAffinity``: the required terms become "this node"."""
    requirement = {"key": "metadata.name", "operator": "In", "values": [node_name]}
    selector = {"nodeSelectorTerms": [{"matchFields": [requirement]}]}
    result: Object = deep_copy(affinity) if isinstance(affinity, dict) else {}
    node_affinity = result.get("nodeAffinity")
    if not isinstance(node_affinity, dict):
        result["nodeAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": selector}
        return result
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if not isinstance(required, dict):
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = selector
        return result
    required["nodeSelectorTerms"] = selector["nodeSelectorTerms"]
    return result


def template_generation(ds: Mapping[str, Any]) -> int | None:
    """``GetTemplateGeneration``: the annotation as a number, None if missing or unreadable."""
    value = (meta(ds).get("annotations") or {}).get(TEMPLATE_GENERATION_ANNOTATION)
    try:
        return int(value) if isinstance(value, str) else None
    except ValueError:
        return None


def create_pod_template(template: Mapping[str, Any], generation: int | None, hash_: str) -> Object:
    """``CreatePodTemplate``: the template with the daemon tolerations and the two version labels."""
    result: Object = deep_copy(dict(template))
    pod_spec = result.get("spec")
    if not isinstance(pod_spec, dict):
        pod_spec = result["spec"] = {}
    add_daemon_pod_tolerations(pod_spec)
    template_meta = result.get("metadata")
    if not isinstance(template_meta, dict):
        template_meta = result["metadata"] = {}
    labels = template_meta.get("labels")
    if not isinstance(labels, dict):
        labels = template_meta["labels"] = {}
    if generation is not None:
        labels[TEMPLATE_GENERATION_LABEL] = str(generation)
    if hash_:
        labels[CONTROLLER_REVISION_HASH_LABEL] = hash_
    return result


def is_pod_updated(pod: Mapping[str, Any], hash_: str, generation: int | None) -> bool:
    """``IsPodUpdated``: the pod carries the current revision's hash or template generation."""
    labels = meta(pod).get("labels") or {}
    template_matches = generation is not None and labels.get(TEMPLATE_GENERATION_LABEL) == str(generation)
    hash_matches = bool(hash_) and labels.get(CONTROLLER_REVISION_HASH_LABEL) == hash_
    return hash_matches or template_matches


def _compare_creation_and_phase(a: Mapping[str, Any], b: Mapping[str, Any]) -> int:
    """``podByCreationTimestampAndPhase``: scheduled pods first, then oldest, then by name."""
    node_a, node_b = bool(spec(a).get("nodeName")), bool(spec(b).get("nodeName"))
    if node_a != node_b:
        return -1 if node_a else 1
    created_a = parse_timestamp(meta(a).get("creationTimestamp")) or 0.0
    created_b = parse_timestamp(meta(b).get("creationTimestamp")) or 0.0
    if created_a == created_b:
        return -1 if name_of(a) < name_of(b) else (1 if name_of(a) > name_of(b) else 0)
    return -1 if created_a < created_b else 1


def sort_by_creation_and_phase(pods: Iterable[Object]) -> list[Object]:
    return sorted(pods, key=cmp_to_key(_compare_creation_and_phase))


# -- the update strategy ---------------------------------------------------------------------------------


def is_rolling_update(ds: Mapping[str, Any]) -> bool:
    return bool((spec(ds).get("updateStrategy") or {}).get("type") == ROLLING_UPDATE)


def _rolling(ds: Mapping[str, Any]) -> Mapping[str, Any] | None:
    if not is_rolling_update(ds):
        return None
    rolling = (spec(ds).get("updateStrategy") or {}).get("rollingUpdate")
    return rolling if isinstance(rolling, dict) else None


def unavailable_count(ds: Mapping[str, Any], number_to_schedule: int) -> int:
    """``UnavailableCount``: ``maxUnavailable`` of ``number_to_schedule``, rounded up (0 if OnDelete)."""
    rolling = _rolling(ds)
    if rolling is None:
        return 0
    return scaled_value(rolling.get("maxUnavailable"), number_to_schedule, round_up=True)


def surge_count(ds: Mapping[str, Any], number_to_schedule: int) -> int:
    """``SurgeCount``: ``maxSurge`` of ``number_to_schedule``, rounded up (0 if unset or OnDelete)."""
    rolling = _rolling(ds)
    if rolling is None or rolling.get("maxSurge") is None:
        return 0
    return scaled_value(rolling.get("maxSurge"), number_to_schedule, round_up=True)


def allows_surge(ds: Mapping[str, Any]) -> bool:
    """``AllowsSurge``."""
    try:
        return surge_count(ds, 1) != 0
    except ValueError:
        return False


def min_ready_seconds(ds: Mapping[str, Any]) -> int:
    value = spec(ds).get("minReadySeconds")
    return value if isinstance(value, int) else 0


def find_updated_pods_on_node(
    pods: Sequence[Object], hash_: str, generation: int | None
) -> tuple[Object | None, Object | None, bool]:
    """``findUpdatedPodsOnNode``: (the new pod, the old pod, ok); not ok if there are two of either."""
    new: Object | None = None
    old: Object | None = None
    for pod in pods:
        if meta(pod).get("deletionTimestamp"):
            continue
        if is_pod_updated(pod, hash_, generation):
            if new is not None:
                return None, None, False
            new = pod
        else:
            if old is not None:
                return None, None, False
            old = pod
    return new, old, True


@dataclass
class SyncPlan:
    """What one step decides: the nodes to create a pod on and the pods to delete."""

    create_on: list[str] = field(default_factory=list)
    delete: list[Object] = field(default_factory=list)


def plan_rolling_update(
    ds: Mapping[str, Any],
    node_to_pods: Mapping[str, Sequence[Object]],
    hash_: str,
    max_surge: int,
    max_unavailable: int,
    now: float,
    should_run: Callable[[str], bool],
) -> SyncPlan:
    """``rollingUpdate``'s choice. ``node_to_pods`` has an entry (maybe empty) for every node that
    wants a pod (``updatedDesiredNodeCounts`` adds them) and one for every node that has a pod."""
    generation = template_generation(ds)
    min_ready = min_ready_seconds(ds)
    plan = SyncPlan()
    if max_surge == 0:
        unavailable = 0
        allowed: list[Object] = []
        candidates: list[Object] = []
        for pods in node_to_pods.values():
            new, old, ok = find_updated_pods_on_node(pods, hash_, generation)
            if not ok:
                unavailable += 1  # the manage loop will clean this node up; count it unavailable
                continue
            if (old is None and new is None) or (old is not None and new is not None):
                unavailable += 1  # the manage loop creates or deletes the right pod here
            elif new is not None:
                if not is_pod_available(new, min_ready, now):
                    unavailable += 1
            elif old is not None:
                if not is_pod_available(old, min_ready, now):
                    allowed.append(old)  # an unavailable old pod costs nothing to replace
                elif unavailable < max_unavailable:
                    candidates.append(old)
        remaining = max(0, min(max_unavailable - unavailable, len(candidates)))
        plan.delete = allowed + candidates[:remaining]
        return plan
    surging = 0
    allowed_nodes: list[str] = []
    candidate_nodes: list[str] = []
    for node_name, pods in node_to_pods.items():
        new, old, ok = find_updated_pods_on_node(pods, hash_, generation)
        if not ok:
            surging += 1  # the manage loop will clean this node up; count it as surging
            continue
        if old is None:
            continue  # nothing to replace: the manage loop creates a pod if one is missing
        if new is None:
            if not is_pod_available(old, min_ready, now):
                if not should_run(node_name):
                    plan.delete.append(old)
                    continue
                allowed_nodes.append(node_name)  # unavailable anyway: replace it at once
            elif surging < max_surge:
                candidate_nodes.append(node_name)
            continue
        if not is_pod_available(new, min_ready, now):
            surging += 1  # the new pod is on its way
            continue
        plan.delete.append(old)  # the new pod is available: the old one can go
    remaining = max(0, min(max_surge - surging, len(candidate_nodes)))
    plan.create_on = allowed_nodes + candidate_nodes[:remaining]
    return plan


# -- revisions -------------------------------------------------------------------------------------------


def revision_patch(ds: Mapping[str, Any]) -> Object:
    """``getPatch``: ``{"spec": {"template": {..., "$patch": "replace"}}}``.

    Go marshals the template struct: an empty ``metadata`` still comes out as ``{}`` (a struct is never
    ``omitempty``), an unset ``creationTimestamp`` not at all (``omitzero`` since Kubernetes 1.35).
    Upstream builds the patch through a ``map[string]interface{}``, whose JSON has its keys sorted at
    every level: kubectl compares those bytes with the revision's (``rollout undo`` says "skipped
    rollback" when they are equal), so the keys here are sorted too and the API server's compact
    JSON gives the same bytes.
    """
    template: Object = deep_copy(dict(spec(ds).get("template") or {}))
    if not isinstance(template.get("metadata"), dict):
        template["metadata"] = {}
    template["$patch"] = "replace"
    patch: Object = _sorted_keys({"spec": {"template": template}})
    return patch


def _sorted_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _sorted_keys(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_sorted_keys(item) for item in value]
    return value


def revision_matches(ds: Mapping[str, Any], revision: Mapping[str, Any]) -> bool:
    """``Match``: the revision's data is this DaemonSet's current patch."""
    return bool(revision.get("data") == revision_patch(ds))


def revision_hash(ds: Mapping[str, Any]) -> str:
    """The hash of the template (with the collision count) that names the revision."""
    collision = status(ds).get("collisionCount")
    return compute_hash(spec(ds).get("template") or {}, collision if isinstance(collision, int) else None)


def revision_number(revision: Mapping[str, Any]) -> int:
    value = revision.get("revision")
    return value if isinstance(value, int) else 0


def max_revision(revisions: Iterable[Mapping[str, Any]]) -> int:
    """``maxRevision``."""
    return max((revision_number(r) for r in revisions), default=0)


def revisions_to_clean_up(
    ds: Mapping[str, Any], old: Sequence[Object], live_pods: Iterable[Object]
) -> list[Object]:
    """``cleanupHistory``: the oldest old revisions beyond ``revisionHistoryLimit`` that no pod uses."""
    limit = spec(ds).get("revisionHistoryLimit")
    to_kill = len(old) - (limit if isinstance(limit, int) else 10)
    if to_kill <= 0:
        return []
    live_hashes = {
        h for pod in live_pods if (h := (meta(pod).get("labels") or {}).get(CONTROLLER_REVISION_HASH_LABEL))
    }
    doomed: list[Object] = []
    for revision in sorted(old, key=revision_number):
        if len(doomed) >= to_kill:
            break
        if (meta(revision).get("labels") or {}).get(CONTROLLER_REVISION_HASH_LABEL) in live_hashes:
            continue
        doomed.append(revision)
    return doomed


# -- the failed-pod backoff ----------------------------------------------------------------------------

#: ``failedPodsBackoff``: 1 s doubling to 15 minutes (``BackoffGCInterval`` aside).
FAILED_POD_BACKOFF_INITIAL: Final = 1.0
FAILED_POD_BACKOFF_MAX: Final = 15 * 60.0


@dataclass
class _BackoffEntry:
    duration: float
    last_update: float


class FailedPodsBackoff:
    """``flowcontrol.Backoff`` by (DaemonSet, node): a failed daemon pod is deleted at most once per
    wait, so a kubelet that keeps rejecting the pod does not make the controller hot-loop."""

    def __init__(
        self, initial: float = FAILED_POD_BACKOFF_INITIAL, maximum: float = FAILED_POD_BACKOFF_MAX
    ) -> None:
        self.initial = initial
        self.maximum = maximum
        self._entries: dict[str, _BackoffEntry] = {}

    def get(self, key: str) -> float:
        entry = self._entries.get(key)
        return entry.duration if entry is not None else 0.0

    def next(self, key: str, now: float) -> None:
        """``Next``: start at ``initial``, or double (a long-quiet entry starts over)."""
        entry = self._entries.get(key)
        if entry is None or now - entry.last_update > 2 * self.maximum:
            self._entries[key] = _BackoffEntry(self.initial, now)
            return
        entry.duration = min(entry.duration * 2, self.maximum)
        entry.last_update = now

    def in_backoff_since_update(self, key: str, now: float) -> bool:
        """``IsInBackOffSinceUpdate``."""
        entry = self._entries.get(key)
        return entry is not None and now - entry.last_update < entry.duration


__all__ = [
    "CONTROLLER_REVISION_HASH_LABEL",
    "DAEMON_POD_TOLERATIONS",
    "TEMPLATE_GENERATION_LABEL",
    "FailedPodsBackoff",
    "SyncPlan",
    "add_daemon_pod_tolerations",
    "allows_surge",
    "create_pod_template",
    "find_updated_pods_on_node",
    "is_pod_updated",
    "max_revision",
    "new_pod",
    "node_should_run_daemon_pod",
    "plan_rolling_update",
    "replace_node_name_affinity",
    "revision_hash",
    "revision_matches",
    "revision_patch",
    "revisions_to_clean_up",
    "sort_by_creation_and_phase",
    "surge_count",
    "target_node_name",
    "template_generation",
    "unavailable_count",
]
