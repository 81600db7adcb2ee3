"""What every workload controller needs: owner references, pods from templates, and expectations.

This is the Python shape of upstream's ``pkg/controller/controller_utils.go`` and
``controller_ref_manager.go``, the helpers the ReplicaSet, Deployment, Job and StatefulSet controllers
share. Everything here is pure, except ``slow_start_batch`` which runs the callables it is given.

**Owner references.** A pod created by a ReplicaSet names it in ``metadata.ownerReferences`` with
``controller: true`` (there is at most one controller per object) and ``blockOwnerDeletion: true``
(a foreground delete of the ReplicaSet waits for the pod). That reference, not the labels, says whose
pod it is. Labels only say whose pod it *could* be: the **controller ref manager** (``plan_claims``)
reconciles the two on every sync. A pod that matches the selector but has no controller is
**adopted** (a patch adds the reference); a pod that has this controller but no longer matches (its
labels were edited) is **released** (a patch removes it); a pod controlled by someone else is left
alone.

**Pods from a template** (``pod_from_template``): the template's labels, annotations, finalizers and
spec, the controller reference, and ``generateName: <owner>-`` so the API server picks the suffix.

**Expectations** (``ControllerExpectations``). A controller reads pods from its informer's cache,
which lags behind the API server. Right after creating 3 pods, the cache may not show them yet; a
second sync reading it would create 3 more. So before creating, the controller *expects* 3 creations
and does not act again (it only updates status) until its pod handler has *observed* 3 new pods, or 5
minutes passed (then something went wrong and the cache is trusted again). Deletions are expected by
pod key. Upstream: ``ControllerExpectations`` / ``UIDTrackingControllerExpectations``.

**Slow start** (``slow_start_batch``): pods are created in batches of 1, 2, 4, 8 ... and the first
failing batch stops the rest: a quota or admission error costs one failed request, not 500.

**Which pods to delete first** (``pods_to_delete``), ``ActivePodsWithRanks``: unscheduled before
scheduled, Pending before Unknown before Running, not ready before ready, lower
``controller.kubernetes.io/pod-deletion-cost`` first, pods on crowded nodes first, then the most
recently ready, the most restarted and the newest (compared on a log2 scale of their age, ties broken
by UID, as ``LogarithmicScaleDown`` does).

**The pod handler** (``owned_pod_handler``): what a controller of pods does with its pod informer's
events (``addPod``/``updatePod``/``deletePod``): a pod with a controller reference wakes that owner
and counts against its expectations; an orphan wakes every owner whose selector matches it, who may
adopt it.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cmp_to_key
from typing import Any, Final

from controlplane.api.deepcopy import deep_copy
from controlplane.api.meta import Object, object_key, parse_timestamp
from controlplane.api.selectors import LabelSelector, SelectorError, label_selector_from_object
from controlplane.client.cache import DeletedFinalStateUnknown, Indexer
from controlplane.client.errors import APIError, NotFound, TransportError
from controlplane.client.informer import ResourceEventHandlerFuncs
from controlplane.client.manager import Kind
from controlplane.client.reconciler import Request
from controlplane.client.rest import PatchType, ResourceClient
from controlplane.clock import Clock
from controlplane.components.controllers.deploymentutil import meta, name_of, spec, status, uid_of

#: At most this many pods are created or deleted in one sync (``BurstReplicas``).
BURST_REPLICAS: Final = 500
#: The first batch of ``slow_start_batch`` (``SlowStartInitialBatchSize``).
SLOW_START_INITIAL_BATCH_SIZE: Final = 1
#: Unfulfilled expectations are given up after 5 minutes (``ExpectationsTimeout``).
EXPECTATIONS_TIMEOUT: Final = 5 * 60.0
POD_DELETION_COST_ANNOTATION: Final = "controller.kubernetes.io/pod-deletion-cost"

# Event reasons (controller_utils.go).
FAILED_CREATE_POD_REASON: Final = "FailedCreate"
SUCCESSFUL_CREATE_POD_REASON: Final = "SuccessfulCreate"
FAILED_DELETE_POD_REASON: Final = "FailedDelete"
SUCCESSFUL_DELETE_POD_REASON: Final = "SuccessfulDelete"


# -- owner references --------------------------------------------------------------------------------


def controller_ref_of(obj: Mapping[str, Any]) -> Object | None:
    """``metav1.GetControllerOf``: the owner reference with ``controller: true``, if any."""
    for ref in meta(obj).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller"):
            return ref
    return None


def new_controller_ref(owner: Mapping[str, Any], *, api_version: str, kind: str) -> Object:
    """``metav1.NewControllerRef``: a controlling, deletion-blocking reference to ``owner``."""
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name_of(owner),
        "uid": uid_of(owner),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def adopt_patch(
    owner: Mapping[str, Any], dependent: Mapping[str, Any], *, api_version: str, kind: str
) -> Object:
    """The strategic merge patch that adopts ``dependent`` (``ownerRefControllerPatch``): the
    reference is merged by ``uid``; the dependent's own ``uid`` makes the patch apply only to it."""
    return {
        "metadata": {
            "ownerReferences": [new_controller_ref(owner, api_version=api_version, kind=kind)],
            "uid": uid_of(dependent),
        }
    }


def release_patch(owner: Mapping[str, Any], dependent: Mapping[str, Any]) -> Object:
    """The strategic merge patch that releases ``dependent``
    (``GenerateDeleteOwnerRefStrategicMergeBytes``)."""
    return {
        "metadata": {
            "ownerReferences": [{"$patch": "delete", "uid": uid_of(owner)}],
            "uid": uid_of(dependent),
        }
    }


@dataclass
class ClaimPlan:
    """What the controller ref manager decided: objects already ours, to adopt, and to release."""

    claimed: list[Object] = field(default_factory=list)
    adopt: list[Object] = field(default_factory=list)
    release: list[Object] = field(default_factory=list)


def plan_claims(owner: Mapping[str, Any], selector: LabelSelector, candidates: Iterable[Object]) -> ClaimPlan:
    """``BaseControllerRefManager.ClaimObject`` for each candidate, as a plan (no I/O).

    Ours and matching: claimed (even while we are being deleted, it costs nothing). Ours and no longer
    matching: released, unless we are being deleted. An orphan that matches, in our namespace, not
    being deleted itself, while we are not: adopted. Anybody else's: ignored.
    """
    plan = ClaimPlan()
    owner_uid = uid_of(owner)
    owner_deleting = bool(meta(owner).get("deletionTimestamp"))
    owner_namespace = meta(owner).get("namespace")
    for obj in candidates:
        labels = meta(obj).get("labels") or {}
        ref = controller_ref_of(obj)
        if ref is not None:
            if ref.get("uid") != owner_uid:
                continue
            if selector.matches(labels):
                plan.claimed.append(obj)
            elif not owner_deleting:
                plan.release.append(obj)
            continue
        if owner_deleting or not selector.matches(labels) or meta(obj).get("deletionTimestamp"):
            continue
        if owner_namespace and meta(obj).get("namespace") != owner_namespace:
            continue
        plan.adopt.append(obj)
    return plan


def resolve_controller_ref(
    owners: Indexer, owner_kind: Kind, namespace: str, ref: Mapping[str, Any]
) -> Object | None:
    """``resolveControllerRef``: the owner in ``owners`` (a cache of ``owner_kind``) that ``ref``
    names, if it is that very object: same kind and API group, same name in ``namespace``, same uid
    (an owner deleted and made again under the same name is another owner)."""
    if (
        ref.get("kind") != owner_kind.kind
        or str(ref.get("apiVersion", "")).rpartition("/")[0] != owner_kind.group
    ):
        return None
    owner = owners.get_by_key(f"{namespace}/{ref.get('name')}")
    if owner is None or uid_of(owner) != ref.get("uid"):
        return None
    return owner


async def owner_still_there(client: ResourceClient, owner: Object) -> bool:
    """``RecheckDeletionTimestamp``: a fresh read of ``owner`` (through ``client``, its resource),
    so that nothing is adopted for an owner deleted, or deleted and made again, since the cache saw it."""
    try:
        fresh = await client.get(name_of(owner))
    except NotFound:
        return False
    return uid_of(fresh) == uid_of(owner) and not meta(fresh).get("deletionTimestamp")


async def claim_dependents(
    owner: Object,
    plan: ClaimPlan,
    client: ResourceClient,
    *,
    owner_kind: Kind,
    may_adopt: Callable[[], Awaitable[bool]],
    adopting: Callable[[Object], Object] | None = None,
    releasing: Callable[[Object], Object] | None = None,
) -> list[Object]:
    """Carry out ``plan`` through ``client`` (the dependents' resource): upstream's ``ClaimObject``
    adoptions and releases, as strategic merge patches. ``may_adopt`` is asked once, before the
    first adoption (usually ``owner_still_there``); ``adopting``/``releasing`` give the patch for one
    dependent when it is more than ``adopt_patch``/``release_patch`` (a Job's finalizer).

    Returns the dependents ``owner`` controls now: those it had, and those adopted, as the patch left
    them. A dependent gone meanwhile is skipped; like ``ClaimObjects``' aggregate error, the first
    other failure is raised once every dependent has been tried.
    """

    def adopt(obj: Object) -> Object:
        return adopt_patch(owner, obj, api_version=owner_kind.api_version, kind=owner_kind.kind)

    claimed = list(plan.claimed)
    errors: list[BaseException] = []
    can_adopt: bool | None = None
    for obj in plan.adopt:
        if can_adopt is None:
            can_adopt = await may_adopt()
        if not can_adopt:
            break
        try:
            patch = (adopting or adopt)(obj)
            claimed.append(await client.patch(name_of(obj), patch, patch_type=PatchType.STRATEGIC_MERGE))
        except NotFound:
            continue
        except (APIError, TransportError) as error:
            errors.append(error)
    for obj in plan.release:
        try:
            patch = releasing(obj) if releasing is not None else release_patch(owner, obj)
            await client.patch(name_of(obj), patch, patch_type=PatchType.STRATEGIC_MERGE)
        except NotFound:
            continue
        except (APIError, TransportError) as error:
            errors.append(error)
    if errors:
        raise errors[0]
    return claimed


# -- pods from templates -----------------------------------------------------------------------------


def pods_prefix(controller_name: str) -> str:
    """``getPodsPrefix``: ``<name>-``, unless that would make too long a pod name."""
    prefix = f"{controller_name}-"
    return prefix if len(prefix) <= 253 else controller_name


def pod_from_template(
    template: Mapping[str, Any], owner: Mapping[str, Any], controller_ref: Mapping[str, Any] | None
) -> Object:
    """``GetPodFromTemplate``: the pod a controller creates from its template."""
    template_meta = template.get("metadata") or {}
    pod_meta: Object = {"generateName": pods_prefix(name_of(owner))}
    for key in ("labels", "annotations"):
        if template_meta.get(key):
            pod_meta[key] = dict(template_meta[key])
    if template_meta.get("finalizers"):
        pod_meta["finalizers"] = list(template_meta["finalizers"])
    if controller_ref is not None:
        pod_meta["ownerReferences"] = [dict(controller_ref)]
    namespace = meta(owner).get("namespace")
    if namespace:
        pod_meta["namespace"] = namespace
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": pod_meta,
        "spec": deep_copy(template.get("spec") or {}),
    }


# -- pod states --------------------------------------------------------------------------------------


def is_pod_active(pod: Mapping[str, Any]) -> bool:
    """``IsPodActive``: not finished and not being deleted."""
    return status(pod).get("phase") not in ("Succeeded", "Failed") and not meta(pod).get("deletionTimestamp")


def is_pod_terminating(pod: Mapping[str, Any]) -> bool:
    """``IsPodTerminating``: being deleted and not finished (still holding its resources)."""
    return status(pod).get("phase") not in ("Succeeded", "Failed") and bool(
        meta(pod).get("deletionTimestamp")
    )


def pod_ready_condition(pod: Mapping[str, Any]) -> Object | None:
    for condition in status(pod).get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == "Ready":
            return condition
    return None


def is_pod_ready(pod: Mapping[str, Any]) -> bool:
    """``podutil.IsPodReady``: the ``Ready`` condition is True."""
    condition = pod_ready_condition(pod)
    return condition is not None and condition.get("status") == "True"


def pod_ready_time(pod: Mapping[str, Any]) -> float | None:
    """When the pod last became ready (its Ready condition's ``lastTransitionTime``)."""
    condition = pod_ready_condition(pod)
    if condition is None or condition.get("status") != "True":
        return None
    return parse_timestamp(condition.get("lastTransitionTime"))


def is_pod_available(pod: Mapping[str, Any], min_ready_seconds: int, now: float) -> bool:
    """``podutil.IsPodAvailable``: ready, and for at least ``minReadySeconds``."""
    if not is_pod_ready(pod):
        return False
    if min_ready_seconds == 0:
        return True
    since = pod_ready_time(pod)
    return since is not None and since + min_ready_seconds < now


# -- which pods to delete ----------------------------------------------------------------------------

_PHASE_ORDINAL: Final = {"Pending": 0, "Unknown": 1, "Running": 2}


def _deletion_cost(pod: Mapping[str, Any]) -> int:
    value = (meta(pod).get("annotations") or {}).get(POD_DELETION_COST_ANNOTATION)
    try:
        return int(value) if value is not None else 0
    except ValueError:
        return 0


def _max_restarts(pod: Mapping[str, Any]) -> int:
    return max(
        (int(c.get("restartCount") or 0) for c in status(pod).get("containerStatuses") or []), default=0
    )


def _log_rank(when: float, now: float) -> int:
    """``logarithmicRankDiff``'s rank: log2 of the age in nanoseconds (-1 for none)."""
    age = (now - when) * 1e9
    return int(math.log2(age)) if age > 0 else -1


def _compare_times(t1: float | None, t2: float | None, now: float | None, uid1: str, uid2: str) -> int:
    """Newer first, unset first of all (``afterOrZero``), on a log2 scale with a UID tie-break."""
    if t1 is None or t2 is None:
        return -1 if t1 is None and t2 is not None else (1 if t2 is None and t1 is not None else 0)
    if now is None:
        return -1 if t1 > t2 else (1 if t1 < t2 else 0)
    diff = _log_rank(t1, now) - _log_rank(t2, now)
    if diff == 0:
        return -1 if uid1 < uid2 else (1 if uid1 > uid2 else 0)
    return -1 if diff < 0 else 1


def _compare_for_deletion(a: tuple[Object, int], b: tuple[Object, int], now: float | None) -> int:
    """``ActivePodsWithRanks.Less`` as a three-way comparison: negative when ``a`` goes first."""
    pa, rank_a = a
    pb, rank_b = b
    node_a, node_b = spec(pa).get("nodeName") or "", spec(pb).get("nodeName") or ""
    if node_a != node_b and (not node_a or not node_b):
        return -1 if not node_a else 1
    phase_a = _PHASE_ORDINAL.get(str(status(pa).get("phase")), 0)
    phase_b = _PHASE_ORDINAL.get(str(status(pb).get("phase")), 0)
    if phase_a != phase_b:
        return -1 if phase_a < phase_b else 1
    ready_a, ready_b = is_pod_ready(pa), is_pod_ready(pb)
    if ready_a != ready_b:
        return -1 if not ready_a else 1
    cost_a, cost_b = _deletion_cost(pa), _deletion_cost(pb)
    if cost_a != cost_b:
        return -1 if cost_a < cost_b else 1
    if rank_a != rank_b:
        return -1 if rank_a > rank_b else 1
    uid_a, uid_b = uid_of(pa), uid_of(pb)
    if ready_a and ready_b:
        time_a, time_b = pod_ready_time(pa), pod_ready_time(pb)
        if time_a != time_b:
            result = _compare_times(time_a, time_b, now, uid_a, uid_b)
            if result:
                return result
    restarts_a, restarts_b = _max_restarts(pa), _max_restarts(pb)
    if restarts_a != restarts_b:
        return -1 if restarts_a > restarts_b else 1
    created_a = parse_timestamp(meta(pa).get("creationTimestamp"))
    created_b = parse_timestamp(meta(pb).get("creationTimestamp"))
    if created_a != created_b:
        return _compare_times(created_a, created_b, now, uid_a, uid_b)
    return 0


def rank_pods_for_deletion(
    pods: Sequence[Object], related: Iterable[Object], now: float | None
) -> list[Object]:
    """``getPodsRankedByRelatedPodsOnSameNode`` + sort: ``pods`` in the order they should be deleted.

    A pod's rank is the number of active ``related`` pods (those of every ReplicaSet of the same
    Deployment) on its node: deleting from the most crowded node first spreads what remains.
    """
    on_node: dict[str, int] = {}
    for pod in related:
        if is_pod_active(pod):
            node = str(spec(pod).get("nodeName") or "")
            on_node[node] = on_node.get(node, 0) + 1
    ranked = [(pod, on_node.get(str(spec(pod).get("nodeName") or ""), 0)) for pod in pods]

    def compare(a: tuple[Object, int], b: tuple[Object, int]) -> int:
        return _compare_for_deletion(a, b, now)

    ranked.sort(key=cmp_to_key(compare))
    return [pod for pod, _ in ranked]


def pods_to_delete(
    pods: Sequence[Object], related: Iterable[Object], diff: int, now: float | None
) -> list[Object]:
    """``getPodsToDelete``: the first ``diff`` pods by deletion preference (no sort when all go)."""
    if diff < len(pods):
        return rank_pods_for_deletion(pods, related, now)[:diff]
    return list(pods)[:diff]


# -- expectations ------------------------------------------------------------------------------------


@dataclass
class _Expectation:
    add: int
    deletions: set[str]
    timestamp: float

    def fulfilled(self) -> bool:
        return self.add <= 0 and not self.deletions


class ControllerExpectations:
    """How many creations, and which deletions, each controller key still waits to see in its cache.

    ``satisfied(key)`` is what a sync asks before acting: True when nothing is expected, when
    everything expected was observed, or when the expectations are older than ``timeout`` (upstream
    ``SatisfiedExpectations``: after 5 minutes the cache is trusted again).
    """

    def __init__(self, clock: Clock, *, timeout: float = EXPECTATIONS_TIMEOUT) -> None:
        self.clock = clock
        self.timeout = timeout
        self._store: dict[str, _Expectation] = {}

    def get(self, key: str) -> tuple[int, frozenset[str]] | None:
        """(creations still expected, pod keys whose deletion is still expected), if any are recorded."""
        exp = self._store.get(key)
        return None if exp is None else (exp.add, frozenset(exp.deletions))

    def satisfied(self, key: str) -> bool:
        exp = self._store.get(key)
        if exp is None:
            return True
        if exp.fulfilled():
            return True
        return self.clock.now() - exp.timestamp > self.timeout

    def expect_creations(self, key: str, count: int) -> None:
        """``ExpectCreations``: replaces whatever was expected for ``key``."""
        self._store[key] = _Expectation(count, set(), self.clock.now())

    def expect_deletions(self, key: str, pod_keys: Iterable[str]) -> None:
        """``ExpectDeletions`` (UID-tracking flavour, by pod key)."""
        self._store[key] = _Expectation(0, set(pod_keys), self.clock.now())

    def set_expectations(self, key: str, creations: int, deletions: Iterable[str]) -> None:
        """``SetExpectations``: creations and deletions at once (a DaemonSet's sync does both)."""
        self._store[key] = _Expectation(creations, set(deletions), self.clock.now())

    def creation_observed(self, key: str) -> None:
        """A pod of ``key`` showed up in the cache (or a creation failed and never will)."""
        exp = self._store.get(key)
        if exp is not None:
            exp.add -= 1

    def deletion_observed(self, key: str, pod: str) -> None:
        """The pod ``pod`` of ``key`` is gone or being deleted (or its deletion failed)."""
        exp = self._store.get(key)
        if exp is not None:
            exp.deletions.discard(pod)

    def delete(self, key: str) -> None:
        """``DeleteExpectations``: the controller object is gone."""
        self._store.pop(key, None)


# -- slow start --------------------------------------------------------------------------------------


async def slow_start_batch(
    count: int, initial_batch_size: int, fn: Callable[[], Awaitable[None]]
) -> tuple[int, BaseException | None]:
    """``slowStartBatch``: call ``fn`` ``count`` times in batches of 1, 2, 4 ... (each batch at once);
    stop after the first batch with a failure. Returns (successes, the first error or None)."""
    remaining = count
    successes = 0
    batch = min(remaining, initial_batch_size)
    while batch > 0:
        results = await asyncio.gather(*(fn() for _ in range(batch)), return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        for error in errors:
            if isinstance(error, asyncio.CancelledError):
                raise error
        successes += batch - len(errors)
        if errors:
            return successes, errors[0]
        remaining -= batch
        batch = min(2 * batch, remaining)
    return successes, None


def selector_of(owner: Mapping[str, Any]) -> LabelSelector | None:
    """A workload's ``spec.selector``, None if it is invalid (upstream logs it and gives up the sync)."""
    try:
        return label_selector_from_object(spec(owner).get("selector"))
    except SelectorError:
        return None


def error_text(error: BaseException) -> str:
    """What a failed request said, for an Event or a condition's message."""
    return error.message if isinstance(error, APIError) else str(error)


def owned_pod_handler(
    *,
    owner_of: Callable[[str, Mapping[str, Any]], Object | None],
    selecting: Callable[[Mapping[str, Any]], list[Object]],
    min_ready_seconds: Callable[[Mapping[str, Any]], int],
    expectations: ControllerExpectations,
    enqueue: Callable[[Request], None],
    enqueue_after: Callable[[Request, float], None] | None = None,
    relabelled_deletion_wakes_old_owners: bool = False,
) -> ResourceEventHandlerFuncs:
    """The pod informer's handler of the ReplicaSet and DaemonSet controllers (``addPod``, ``updatePod``,
    ``deletePod`` in pkg/controller/replicaset/replica_set.go and pkg/controller/daemon/daemon_controller.go).

    ``owner_of(namespace, ref)`` resolves a controller reference (``resolveControllerRef``);
    ``selecting(pod)`` are the owners whose selector matches an orphan. A pod that turns ready wakes
    its owner again ``minReadySeconds`` later, when it counts as available. The ReplicaSet controller
    also treats a pod being deleted whose labels changed as gone from its old owners
    (``relabelled_deletion_wakes_old_owners``); the DaemonSet controller does not.
    """

    def request_for(owner: Mapping[str, Any]) -> Request:
        return Request(str(meta(owner).get("namespace") or ""), name_of(owner))

    def on_delete(obj: Object | DeletedFinalStateUnknown) -> None:
        pod = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if pod is None:
            return
        ref = controller_ref_of(pod)
        if ref is None:
            return
        owner = owner_of(str(meta(pod).get("namespace") or ""), ref)
        if owner is None:
            return
        request = request_for(owner)
        expectations.deletion_observed(request.key, object_key(pod))
        enqueue(request)

    def on_add(pod: Object) -> None:
        if meta(pod).get("deletionTimestamp"):
            # A pod already being deleted (seen after a restart) is no creation to count.
            on_delete(pod)
            return
        ref = controller_ref_of(pod)
        if ref is not None:
            owner = owner_of(str(meta(pod).get("namespace") or ""), ref)
            if owner is None:
                return
            request = request_for(owner)
            expectations.creation_observed(request.key)
            enqueue(request)
            return
        for owner in selecting(pod):
            enqueue(request_for(owner))

    def on_update(old: Object, cur: Object) -> None:
        if meta(old).get("resourceVersion") == meta(cur).get("resourceVersion"):
            return  # a resync: nothing changed
        labels_changed = (meta(old).get("labels") or {}) != (meta(cur).get("labels") or {})
        if meta(cur).get("deletionTimestamp"):
            # Deleted gracefully: act now, not when the kubelet finally removes it.
            on_delete(cur)
            if labels_changed and relabelled_deletion_wakes_old_owners:
                on_delete(old)
            return
        namespace = str(meta(cur).get("namespace") or "")
        cur_ref, old_ref = controller_ref_of(cur), controller_ref_of(old)
        ref_changed = (cur_ref or {}).get("uid") != (old_ref or {}).get("uid")
        if ref_changed and old_ref is not None:
            old_owner = owner_of(namespace, old_ref)
            if old_owner is not None:
                enqueue(request_for(old_owner))
        if cur_ref is not None:
            owner = owner_of(namespace, cur_ref)
            if owner is None:
                return
            request = request_for(owner)
            enqueue(request)
            min_ready = min_ready_seconds(owner)
            if enqueue_after is not None and min_ready > 0 and not is_pod_ready(old) and is_pod_ready(cur):
                # Look again once the pod has been ready long enough to count as available.
                enqueue_after(request, float(min_ready) + 1.0)
            return
        if labels_changed or ref_changed:
            for owner in selecting(cur):
                enqueue(request_for(owner))

    return ResourceEventHandlerFuncs(on_add, on_update, on_delete)
