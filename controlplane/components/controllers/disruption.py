"""The disruption controller: keep each PodDisruptionBudget's status true to its pods.

A PodDisruptionBudget (``policy/v1``) guards the pods its selector matches against voluntary
disruptions (evictions). The eviction subresource decides from the budget's *status* alone, so the
status must say, at every moment, how many of those pods may go. On each sync of a budget this
controller (upstream ``pkg/controller/disruption/disruption.go``, ``trySync``):

1. **finds the pods**: those of the budget's namespace that its selector matches (an empty selector
   ``{}`` matches them all, a missing one none);
2. **counts the expected pods** (``expectedPods``) and the **desired healthy** ones
   (``desiredHealthy``):

   - ``minAvailable: N`` (an integer): N healthy pods wanted, and the pods that exist are expected;
   - ``minAvailable: "P%"``: the expected pods are what the pods' *controllers* want, the sum of
     their scales (a Deployment's ``spec.replicas``, a ReplicaSet's, a StatefulSet's, or any
     controller's ``/scale`` subresource: ``getExpectedScale``), and P% of them, rounded up, must be
     healthy;
   - ``maxUnavailable``: expected as for a percentage; expected minus the (rounded up) unavailable
     count must be healthy.

   A pod without a controller cannot be counted that way: the budget gets an ``UnmanagedPods``
   Warning Event and such pods are left out of the scale (use an integer ``minAvailable`` for them).
   A controller that cannot be found is an error (``found no controllers for pod "x"``);
3. **counts the healthy pods** (``currentHealthy``): Ready pods that are not being deleted and that
   no eviction has just let go. An eviction records the pod it allows in ``status.disruptedPods``
   (name -> time) before deleting it; until the controller sees the pod being deleted it does not
   count as healthy, so two evictions cannot both spend the same disruption. An entry is dropped
   when the pod is being deleted or gone, or after ``DeletionTimeout`` (2 minutes: the eviction is
   assumed to have failed; Warning ``NotDeleted``), and the controller looks again at that time;
4. **writes the status**: ``disruptionsAllowed`` = currentHealthy - desiredHealthy (never below 0,
   and 0 while no pod is expected, so that a budget whose pods have just appeared protects them),
   ``observedGeneration``, and the ``DisruptionAllowed`` condition (``SufficientPods`` /
   ``InsufficientPods``). Nothing is written when nothing changed.

When the status cannot be computed (an invalid selector, a controller that is gone...), the
controller **fails safe**: it writes ``disruptionsAllowed: 0`` with the condition ``False``/
``SyncFailed`` and the error as its message, so that no eviction is allowed on a guess.

It is woken by every change of a budget and of the pods a budget matches (``getPdbForPod``: the
first matching budget; a pod matched by several gets a ``MultiplePodDisruptionBudgets`` Warning).

A second queue cleans up after evictions that did not happen: an eviction marks its pod with the
condition ``DisruptionTarget`` (``True``) just before deleting it; a pod that still carries it, not
being deleted and not finished, 2 minutes later (``stalePodDisruptionTimeout``: the delete failed)
gets it set back to ``False`` (``syncStalePodDisruption``), as it is not going anywhere.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from controlplane.api.deepcopy import deep_copy
from controlplane.api.meta import Object, format_time, parse_timestamp
from controlplane.api.poddisruptionbudget import (
    IntOrPercentError,
    conditions_are_up_to_date,
    is_pod_ready,
    scaled_value,
    set_condition,
    update_disruption_allowed_condition,
)
from controlplane.api.selectors import SelectorError, label_selector_from_object
from controlplane.api.strategies.policy import DISRUPTION_ALLOWED_CONDITION, SYNC_FAILED_REASON
from controlplane.client.cache import NAMESPACE_INDEX, DeletedFinalStateUnknown, Indexer
from controlplane.client.errors import APIError, Conflict, NotFound
from controlplane.client.informer import ResourceEventHandlerFuncs
from controlplane.client.manager import Manager
from controlplane.client.reconciler import Controller, Request, Result
from controlplane.client.record import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING, EventRecorder
from controlplane.client.rest import RESTClient, resource_path
from controlplane.clock import Clock
from controlplane.components.controllers.deploymentutil import meta, name_of, spec, status, uid_of
from controlplane.components.controllers.kinds import (
    DEPLOYMENTS,
    PODDISRUPTIONBUDGETS,
    PODS,
    REPLICASETS,
)
from controlplane.components.controllers.podcontrol import controller_ref_of

logger = logging.getLogger(__name__)

COMPONENT: Final = "disruption-controller"
#: How long after an eviction a pod in ``disruptedPods`` is expected to be seen being deleted.
DELETION_TIMEOUT: Final = 120.0
#: How long a pod may carry a ``DisruptionTarget`` condition without being deleted.
STALE_POD_DISRUPTION_TIMEOUT: Final = 120.0
DISRUPTION_TARGET: Final = "DisruptionTarget"
#: The reason of the condition the kubelet sets when it terminates a pod itself (never stale).
TERMINATION_BY_KUBELET: Final = "TerminationByKubelet"


class DisruptionSyncError(Exception):
    """Why a budget's status could not be computed (its message becomes the SyncFailed condition's)."""


@dataclass(frozen=True)
class ControllerAndScale:
    """A pod's controller and how many pods it wants (``controllerAndScale``)."""

    uid: str
    scale: int


def _group_of(api_version: str) -> str:
    return api_version.rpartition("/")[0] if "/" in api_version else ""


def verify_group_kind(ref: Mapping[str, Any], kind: str, groups: tuple[str, ...]) -> bool:
    """``verifyGroupKind``: the reference names ``kind`` in one of ``groups``."""
    return ref.get("kind") == kind and _group_of(str(ref.get("apiVersion") or "")) in groups


def go_label_selector_string(selector: Any) -> str:
    """A ``*metav1.LabelSelector`` as Go's ``%v`` prints it (its generated ``String()``)."""
    if not isinstance(selector, Mapping):
        return "nil"
    labels = selector.get("matchLabels") or {}
    rendered_labels = "".join(f"{k}: {v}," for k, v in sorted(labels.items()))
    expressions = "".join(
        f"LabelSelectorRequirement{{Key:{e.get('key', '')},Operator:{e.get('operator', '')},"
        f"Values:[{' '.join(str(v) for v in e.get('values') or [])}],}},"
        for e in selector.get("matchExpressions") or []
        if isinstance(e, Mapping)
    )
    return (
        f"&LabelSelector{{MatchLabels:map[string]string{{{rendered_labels}}},"
        f"MatchExpressions:[]LabelSelectorRequirement{{{expressions}}},}}"
    )


def build_disrupted_pod_map(
    pods: list[Object], pdb: Mapping[str, Any], now: float
) -> tuple[dict[str, str], float | None, list[Object]]:
    """``buildDisruptedPodMap``: the entries still pending, when to look again, and the overdue pods.

    An entry stays while its pod exists, is not yet being deleted and the eviction is younger than
    ``DELETION_TIMEOUT``; the earliest such deadline is when the controller must look again.
    """
    recorded: Mapping[str, Any] = status(pdb).get("disruptedPods") or {}
    result: dict[str, str] = {}
    recheck: float | None = None
    overdue: list[Object] = []
    if not recorded:
        return result, recheck, overdue
    for pod in pods:
        if meta(pod).get("deletionTimestamp"):
            continue
        name = name_of(pod)
        if name not in recorded:
            continue
        disrupted_at = parse_timestamp(recorded[name])
        if disrupted_at is None:
            continue
        expected_deletion = disrupted_at + DELETION_TIMEOUT
        if expected_deletion < now:
            overdue.append(pod)
        else:
            if recheck is None or expected_deletion < recheck:
                recheck = expected_deletion
            result[name] = str(recorded[name])
    return result, recheck, overdue


def count_healthy_pods(pods: list[Object], disrupted: Mapping[str, str], now: float) -> int:
    """``countHealthyPods``: Ready, not being deleted, not just evicted."""
    healthy = 0
    for pod in pods:
        if meta(pod).get("deletionTimestamp"):
            continue
        disrupted_at = parse_timestamp(disrupted.get(name_of(pod)))
        if disrupted_at is not None and disrupted_at + DELETION_TIMEOUT > now:
            continue
        if is_pod_ready(pod):
            healthy += 1
    return healthy


def disruptions_allowed(current_healthy: int, desired_healthy: int, expected: int) -> int:
    """``updatePdbStatus``: healthy beyond desired, but none while no pod is expected."""
    allowed = current_healthy - desired_healthy
    return 0 if expected <= 0 or allowed <= 0 else allowed


def stale_disruption_wait(pod: Mapping[str, Any], now: float) -> float | None:
    """``nonTerminatingPodHasStaleDisruptionCondition``: seconds until the pod's ``DisruptionTarget``
    condition is stale (0: it is), or None when it has none that could go stale."""
    if meta(pod).get("deletionTimestamp") or status(pod).get("phase") in ("Succeeded", "Failed"):
        return None
    for condition in status(pod).get("conditions") or []:
        if isinstance(condition, Mapping) and condition.get("type") == DISRUPTION_TARGET:
            if condition.get("status") != "True" or condition.get("reason") == TERMINATION_BY_KUBELET:
                return None
            since = parse_timestamp(condition.get("lastTransitionTime")) or now
            return max(0.0, STALE_POD_DISRUPTION_TIMEOUT - (now - since))
    return None


class StalePodDisruptionCleaner:
    """``syncStalePodDisruption``: a pod marked for a disruption that never came is unmarked."""

    def __init__(self, client: RESTClient, *, pods: Indexer, clock: Clock) -> None:
        self.client = client
        self.pods = pods
        self.clock = clock

    async def reconcile(self, request: Request) -> Result:
        pod = self.pods.get_by_key(request.key)
        if pod is None:
            return Result()
        wait = stale_disruption_wait(pod, self.clock.now())
        if wait is None:
            return Result()
        if wait > 0:
            return Result(requeue_after=wait)
        updated = deep_copy(pod)
        now = format_time(self.clock.now())
        for condition in status(updated).get("conditions") or []:
            if condition.get("type") == DISRUPTION_TARGET:
                # UpdatePodCondition with {Type: DisruptionTarget, Status: False}: no reason, no message.
                condition.clear()
                condition.update(
                    {
                        "type": DISRUPTION_TARGET,
                        "status": "False",
                        "lastProbeTime": None,
                        "lastTransitionTime": now,
                    }
                )
        pods = self.client.resource(PODS.group, PODS.version, PODS.plural, request.namespace)
        try:
            await pods.update_status(updated)
        except NotFound:
            return Result()
        logger.info("reset stale DisruptionTarget condition of pod %s to False", request.key)
        return Result()


class DisruptionController:
    """One PodDisruptionBudget per reconcile (``sync``)."""

    def __init__(
        self,
        client: RESTClient,
        *,
        pdbs: Indexer,
        pods: Indexer,
        replicasets: Indexer,
        deployments: Indexer,
        recorder: EventRecorder,
        clock: Clock,
    ) -> None:
        self.client = client
        self.pdbs = pdbs
        self.pods = pods
        self.replicasets = replicasets
        self.deployments = deployments
        self.recorder = recorder
        self.clock = clock

    # -- the pods' budgets ---------------------------------------------------------------------------

    def pdbs_for_pod(self, pod: Mapping[str, Any]) -> list[Object]:
        """``GetPodPodDisruptionBudgets`` (policy/v1 lister): an empty selector matches every pod."""
        labels = meta(pod).get("labels") or {}
        if not labels:
            return []
        matching = []
        for pdb in self.pdbs.by_index(NAMESPACE_INDEX, str(meta(pod).get("namespace") or "")):
            try:
                selector = label_selector_from_object(spec(pdb).get("selector"))
            except SelectorError:
                continue
            if selector.matches(labels):
                matching.append(pdb)
        return sorted(matching, key=name_of)

    def pdb_for_pod(self, pod: Mapping[str, Any]) -> Object | None:
        """``getPdbForPod``: the first budget of the pod, with a Warning when it has several."""
        pdbs = self.pdbs_for_pod(pod)
        if not pdbs:
            return None
        if len(pdbs) > 1:
            message = (
                f'Pod "{meta(pod).get("namespace")}"/"{name_of(pod)}" matches multiple '
                f'PodDisruptionBudgets.  Chose "{name_of(pdbs[0])}" arbitrarily.'
            )
            self.recorder.event(pod, EVENT_TYPE_WARNING, "MultiplePodDisruptionBudgets", message)
        return pdbs[0]

    def pod_event_handler(
        self, enqueue: Callable[[Request], None], enqueue_stale: Callable[[Request], None]
    ) -> ResourceEventHandlerFuncs:
        """``addPod``/``updatePod``/``deletePod``: wake the pod's budget; hand a pod whose
        ``DisruptionTarget`` condition may go stale to the cleanup queue."""

        def wake(pod: Object) -> None:
            pdb = self.pdb_for_pod(pod)
            if pdb is not None:
                enqueue(Request(str(meta(pdb).get("namespace") or ""), name_of(pdb)))

        def added_or_updated(pod: Object) -> None:
            wake(pod)
            if stale_disruption_wait(pod, self.clock.now()) is not None:
                enqueue_stale(Request(str(meta(pod).get("namespace") or ""), name_of(pod)))

        def on_delete(obj: Object | DeletedFinalStateUnknown) -> None:
            pod = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
            if pod is not None:
                wake(pod)

        return ResourceEventHandlerFuncs(
            add_func=added_or_updated,
            update_func=lambda old, cur: added_or_updated(cur),
            delete_func=on_delete,
        )

    # -- expected pods -------------------------------------------------------------------------------

    def pods_for_pdb(self, pdb: Mapping[str, Any]) -> list[Object]:
        """``getPodsForPdb``: raises ``SelectorError`` for a selector that does not parse."""
        selector = label_selector_from_object(spec(pdb).get("selector"))
        namespace = str(meta(pdb).get("namespace") or "")
        return [
            pod
            for pod in self.pods.by_index(NAMESPACE_INDEX, namespace)
            if selector.matches(meta(pod).get("labels") or {})
        ]

    def _replica_set(self, ref: Mapping[str, Any], namespace: str) -> Object | None:
        if not verify_group_kind(ref, "ReplicaSet", ("apps", "extensions")):
            return None
        rs = self.replicasets.get_by_key(f"{namespace}/{ref.get('name')}")
        if rs is None or uid_of(rs) != ref.get("uid"):
            return None
        return rs

    async def pod_replica_set(self, ref: Mapping[str, Any], namespace: str) -> ControllerAndScale | None:
        """``getPodReplicaSet``: a ReplicaSet no Deployment controls."""
        rs = self._replica_set(ref, namespace)
        if rs is None:
            return None
        owner = controller_ref_of(rs)
        if owner is not None and owner.get("kind") == "Deployment":
            return None
        return ControllerAndScale(uid_of(rs), int(spec(rs).get("replicas") or 0))

    async def pod_deployment(self, ref: Mapping[str, Any], namespace: str) -> ControllerAndScale | None:
        """``getPodDeployment``: the Deployment controlling the pod's ReplicaSet."""
        rs = self._replica_set(ref, namespace)
        if rs is None:
            return None
        owner = controller_ref_of(rs)
        if owner is None or not verify_group_kind(owner, "Deployment", ("apps", "extensions")):
            return None
        deployment = self.deployments.get_by_key(f"{namespace}/{owner.get('name')}")
        if deployment is None or uid_of(deployment) != owner.get("uid"):
            return None
        return ControllerAndScale(uid_of(deployment), int(spec(deployment).get("replicas") or 0))

    async def _discover(self, group: str, version: str) -> list[Mapping[str, Any]]:
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        try:
            listed = await self.client.request_json("GET", path)
        except NotFound:
            return []
        return [r for r in listed.get("resources") or [] if isinstance(r, Mapping)]

    async def scale_controller(self, ref: Mapping[str, Any], namespace: str) -> ControllerAndScale | None:
        """``getScaleController``: any controller serving ``/scale`` (StatefulSets, custom resources...).

        Upstream reads ReplicationControllers and StatefulSets from informers first; Kubelab serves
        neither kind by default, so they are found here, through their ``/scale`` like any other.
        """
        api_version = str(ref.get("apiVersion") or "")
        group = _group_of(api_version)
        version = api_version.rpartition("/")[2]
        kind = str(ref.get("kind") or "")
        resources = await self._discover(group, version)
        plural = next(
            (
                str(r.get("name"))
                for r in resources
                if r.get("kind") == kind and "/" not in str(r.get("name"))
            ),
            None,
        )
        if plural is None:
            raise DisruptionSyncError(f'no matches for kind "{kind}" in version "{api_version}"')
        path = resource_path(
            group, version, plural, namespace=namespace, name=str(ref.get("name")), subresource="scale"
        )
        try:
            scale = await self.client.request_json("GET", path)
        except NotFound:
            implements = any(
                r.get("name") == f"{plural}/scale" and r.get("kind") == "Scale" for r in resources
            )
            if not implements:
                resource = f"{plural}.{group}" if group else plural
                raise DisruptionSyncError(f"{resource} does not implement the scale subresource") from None
            return None
        if uid_of(scale) != ref.get("uid"):
            return None
        return ControllerAndScale(uid_of(scale), int(spec(scale).get("replicas") or 0))

    async def expected_scale(self, pods: list[Object]) -> tuple[int, list[str]]:
        """``getExpectedScale``: the sum of the scales of the pods' controllers, and the unmanaged pods."""
        finders = (self.pod_deployment, self.pod_replica_set, self.scale_controller)
        scales: dict[str, int] = {}
        unmanaged: list[str] = []
        for pod in pods:
            ref = controller_ref_of(pod)
            if ref is None:
                unmanaged.append(name_of(pod))
                continue
            if ref.get("uid") in scales:
                continue
            namespace = str(meta(pod).get("namespace") or "")
            for finder in finders:
                found = await finder(ref, namespace)
                if found is not None:
                    scales[found.uid] = found.scale
                    break
            else:
                raise DisruptionSyncError(f'found no controllers for pod "{name_of(pod)}"')
        return sum(scales.values()), unmanaged

    async def expected_pod_count(
        self, pdb: Mapping[str, Any], pods: list[Object]
    ) -> tuple[int, int, list[str]]:
        """``getExpectedPodCount``: (expected pods, desired healthy pods, unmanaged pods)."""
        max_unavailable = spec(pdb).get("maxUnavailable")
        min_available = spec(pdb).get("minAvailable")
        try:
            if max_unavailable is not None:
                expected, unmanaged = await self.expected_scale(pods)
                unavailable = scaled_value(max_unavailable, expected, round_up=True)
                return expected, max(0, expected - unavailable), unmanaged
            if isinstance(min_available, int) and not isinstance(min_available, bool):
                return len(pods), min_available, []
            if min_available is not None:
                expected, unmanaged = await self.expected_scale(pods)
                return expected, scaled_value(min_available, expected, round_up=True), unmanaged
        except IntOrPercentError as error:
            raise DisruptionSyncError(str(error)) from None
        return 0, 0, []

    # -- the sync ------------------------------------------------------------------------------------

    async def reconcile(self, request: Request) -> Result:
        """``sync``: compute the status; on failure other than a conflict, fail safe."""
        pdb = self.pdbs.get_by_key(request.key)
        if pdb is None:
            return Result()
        try:
            return await self.try_sync(pdb)
        except Conflict:
            raise  # a newer budget is on its way: requeue without failing safe
        except (DisruptionSyncError, SelectorError, APIError) as error:
            logger.info("failed to sync PDB %s: %s", request.key, error)
            await self.fail_safe(pdb, str(error))
            return Result()

    async def try_sync(self, pdb: Object) -> Result:
        """``trySync``."""
        try:
            pods = self.pods_for_pdb(pdb)
        except SelectorError as error:
            self.recorder.event(pdb, EVENT_TYPE_WARNING, "NoPods", f"Failed to get pods: {error}")
            raise
        if not pods:
            self.recorder.event(pdb, EVENT_TYPE_NORMAL, "NoPods", "No matching pods found")
        try:
            expected, desired, unmanaged = await self.expected_pod_count(pdb, pods)
        except (DisruptionSyncError, APIError) as error:
            self.recorder.event(
                pdb,
                EVENT_TYPE_WARNING,
                "CalculateExpectedPodCountFailed",
                f"Failed to calculate the number of expected pods: {error}",
            )
            raise
        if unmanaged:
            self.recorder.event(
                pdb,
                EVENT_TYPE_WARNING,
                "UnmanagedPods",
                f"Pods selected by this PodDisruptionBudget (selector: "
                f"{go_label_selector_string(spec(pdb).get('selector'))}) were found to be unmanaged. As a "
                "result, the status of the PDB cannot be calculated correctly, which may result in "
                'undefined behavior. To account for these pods please set ".spec.minAvailable" field of '
                "the PDB to an integer value.",
            )
        now = self.clock.now()
        disrupted, recheck, overdue = build_disrupted_pod_map(pods, pdb, now)
        for pod in overdue:
            # Upstream's message names the budget's namespace twice (pdb.Namespace, pdb.Namespace).
            namespace = meta(pdb).get("namespace")
            self.recorder.event(
                pod,
                EVENT_TYPE_WARNING,
                "NotDeleted",
                f"Pod was expected by PDB {namespace}/{namespace} to be deleted but it wasn't",
            )
        healthy = count_healthy_pods(pods, disrupted, now)
        await self.update_status(pdb, healthy, desired, expected, disrupted)
        if recheck is not None:
            return Result(requeue_after=max(0.0, recheck - now))
        return Result()

    async def update_status(
        self, pdb: Object, healthy: int, desired: int, expected: int, disrupted: dict[str, str]
    ) -> None:
        """``updatePdbStatus``: write the status only when something changed."""
        allowed = disruptions_allowed(healthy, desired, expected)
        current = status(pdb)
        generation = meta(pdb).get("generation") or 0
        if (
            current.get("currentHealthy", 0) == healthy
            and current.get("desiredHealthy", 0) == desired
            and current.get("expectedPods", 0) == expected
            and current.get("disruptionsAllowed", 0) == allowed
            and (current.get("disruptedPods") or {}) == disrupted
            and (current.get("observedGeneration") or 0) == generation
            and conditions_are_up_to_date(pdb)
        ):
            return
        updated = deep_copy(pdb)
        new_status: dict[str, Any] = {}
        if disrupted:
            new_status["disruptedPods"] = disrupted
        if generation:
            new_status["observedGeneration"] = generation
        new_status.update(
            {
                "disruptionsAllowed": allowed,
                "currentHealthy": healthy,
                "desiredHealthy": desired,
                "expectedPods": expected,
                "conditions": list(status(updated).get("conditions") or []),
            }
        )
        updated["status"] = new_status
        update_disruption_allowed_condition(updated, format_time(self.clock.now()))
        await self._write(updated)

    async def fail_safe(self, pdb: Object, message: str) -> None:
        """``failSafe``: no disruption allowed, and a ``SyncFailed`` condition saying why."""
        updated = deep_copy(pdb)
        new_status = updated.setdefault("status", {})
        new_status["disruptionsAllowed"] = 0
        conditions = new_status.setdefault("conditions", [])
        condition: dict[str, Any] = {
            "type": DISRUPTION_ALLOWED_CONDITION,
            "status": "False",
            "reason": SYNC_FAILED_REASON,
            "message": message,
        }
        if new_status.get("observedGeneration"):
            condition["observedGeneration"] = new_status["observedGeneration"]
        set_condition(conditions, condition, format_time(self.clock.now()))
        await self._write(updated)

    async def _write(self, pdb: Object) -> None:
        """``writePdbStatus``: one try; a failure is retried by the queue."""
        client = self.client.resource(
            PODDISRUPTIONBUDGETS.group,
            PODDISRUPTIONBUDGETS.version,
            PODDISRUPTIONBUDGETS.plural,
            str(meta(pdb).get("namespace") or ""),
        )
        await client.update_status(pdb)


def add_to_manager(manager: Manager) -> Controller:
    """Build the disruption controller on ``manager``: for PodDisruptionBudgets, woken by their pods."""
    reconciler = DisruptionController(
        manager.client,
        pdbs=manager.cache(PODDISRUPTIONBUDGETS),
        pods=manager.cache(PODS),
        replicasets=manager.cache(REPLICASETS),
        deployments=manager.cache(DEPLOYMENTS),
        # Upstream's disruption controller records its Events as "controllermanager".
        recorder=manager.event_recorder("controllermanager"),
        clock=manager.clock,
    )
    controller = manager.new_controller("disruption", reconciler, for_=PODDISRUPTIONBUDGETS)
    stale = Controller(
        "stale-pod-disruption",
        StalePodDisruptionCleaner(manager.client, pods=manager.cache(PODS), clock=manager.clock),
        clock=manager.clock,
        trace=manager.trace,
        trace_fields={"from": manager.name},
    )
    manager.controllers.append(stale)
    manager.informer_for(PODS).add_event_handler(
        reconciler.pod_event_handler(controller.enqueue, stale.enqueue)
    )
    return controller


__all__ = [
    "COMPONENT",
    "DELETION_TIMEOUT",
    "DISRUPTION_TARGET",
    "STALE_POD_DISRUPTION_TIMEOUT",
    "ControllerAndScale",
    "DisruptionController",
    "DisruptionSyncError",
    "StalePodDisruptionCleaner",
    "add_to_manager",
    "build_disrupted_pod_map",
    "count_healthy_pods",
    "disruptions_allowed",
    "go_label_selector_string",
    "stale_disruption_wait",
    "verify_group_kind",
]
