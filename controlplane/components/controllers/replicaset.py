"""The ReplicaSet controller: keep ``spec.replicas`` pods running, no more, no fewer.

A ReplicaSet does not list its pods. On every sync the controller (upstream
``pkg/controller/replicaset/replica_set.go``) looks at the pods in the namespace, from its informer's
cache, and:

1. **claims** them (``podcontrol.plan_claims``): pods it controls and that match its selector are its
   own; an orphan that matches is adopted (a patch adds the owner reference); a pod it controls whose
   labels no longer match is released. ``kubectl label pod web-x app-`` takes a pod out of its
   ReplicaSet, which then creates a replacement;
2. counts the **active** ones (not finished, not being deleted: a terminating pod is already on its way
   out and is not counted, so a replacement is created at once);
3. if its **expectations** are met (``podcontrol.ControllerExpectations``: every pod it created or
   deleted last time has shown up in the cache), **manages replicas**: too few, it creates the missing
   pods in slow-start batches of 1, 2, 4 ... (at most 500 per sync); too many, it deletes the ones that
   hurt least (unscheduled, pending, not ready, newest: ``podcontrol.pods_to_delete``). Each creation
   and deletion is an Event on the ReplicaSet (``SuccessfulCreate`` "Created pod: web-x",
   ``SuccessfulDelete`` "Deleted pod: web-x", or ``FailedCreate`` "Error creating: ...");
4. writes its **status**: ``replicas`` (active pods), ``fullyLabeledReplicas`` (those carrying every
   template label), ``readyReplicas``, ``availableReplicas`` (ready for ``minReadySeconds``),
   ``terminatingReplicas``, ``observedGeneration``, and the ``ReplicaFailure`` condition while creating
   or deleting fails (``calculate_status``).

Pod events reach the controller through its own handler (``PodEventHandler``), as upstream's
``addPod``/``updatePod``/``deletePod``: a new pod lowers its owner's creation expectation, a pod being
deleted lowers the deletion expectation, and each wakes the owner; an orphan wakes every ReplicaSet
whose selector matches it, so one of them adopts it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from controlplane.api.deepcopy import deep_copy
from controlplane.api.meta import Object, format_time, object_key
from controlplane.api.selectors import LabelSelector
from controlplane.client.cache import NAMESPACE_INDEX, Indexer
from controlplane.client.errors import APIError, NotFound, TransportError
from controlplane.client.informer import ResourceEventHandlerFuncs
from controlplane.client.manager import Kind, Manager
from controlplane.client.reconciler import Controller, Request, Result
from controlplane.client.record import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING, EventRecorder
from controlplane.client.rest import RESTClient
from controlplane.clock import Clock
from controlplane.components.controllers.deploymentutil import (
    meta,
    name_of,
    same_status,
    spec,
    spec_replicas,
    status,
    uid_of,
)
from controlplane.components.controllers.kinds import PODS, REPLICASETS
from controlplane.components.controllers.podcontrol import (
    BURST_REPLICAS,
    FAILED_CREATE_POD_REASON,
    FAILED_DELETE_POD_REASON,
    SLOW_START_INITIAL_BATCH_SIZE,
    SUCCESSFUL_CREATE_POD_REASON,
    SUCCESSFUL_DELETE_POD_REASON,
    ControllerExpectations,
    claim_dependents,
    controller_ref_of,
    error_text,
    is_pod_active,
    is_pod_available,
    is_pod_ready,
    is_pod_terminating,
    new_controller_ref,
    owned_pod_handler,
    owner_still_there,
    plan_claims,
    pod_from_template,
    pods_to_delete,
    resolve_controller_ref,
    selector_of,
    slow_start_batch,
)

logger = logging.getLogger(__name__)


#: The component name on its Events, as upstream's (``replicaset-controller``).
COMPONENT: Final = "replicaset-controller"
REPLICA_FAILURE: Final = "ReplicaFailure"
#: A failed status write is retried once after reading the ReplicaSet again (``statusUpdateRetries``).
STATUS_UPDATE_RETRIES: Final = 1
#: The Status cause of a create refused because the namespace is being deleted.
NAMESPACE_TERMINATING_CAUSE: Final = "NamespaceTerminating"


# -- pure: status ------------------------------------------------------------------------------------


def calculate_status(
    rs: Mapping[str, Any],
    active_pods: Sequence[Object],
    terminating_pods: Sequence[Object] | None,
    manage_replicas_error: BaseException | None,
    now: float,
) -> Object:
    """``calculateStatus`` (replica_set_utils.go): the ReplicaSet's new status (observedGeneration is
    set when it is written). Zero counts are left out, as Go's ``omitempty`` does, except ``replicas``:
    ``ReplicaSetStatus.Replicas`` (and ``ReplicationControllerStatus.Replicas``) has no ``omitempty``
    (staging/src/k8s.io/api/apps/v1/types.go), and typed clients require it."""
    new_status: Object = deep_copy(status(rs))
    template_labels: Mapping[str, str] = ((spec(rs).get("template") or {}).get("metadata") or {}).get(
        "labels"
    ) or {}
    min_ready = int(spec(rs).get("minReadySeconds") or 0)
    fully_labeled = ready = available = 0
    for pod in active_pods:
        labels = meta(pod).get("labels") or {}
        if all(labels.get(k) == v for k, v in template_labels.items()):
            fully_labeled += 1
        if is_pod_ready(pod):
            ready += 1
            if is_pod_available(pod, min_ready, now):
                available += 1
    conditions = [c for c in new_status.get("conditions") or [] if c.get("type") != REPLICA_FAILURE]
    failure = next((c for c in new_status.get("conditions") or [] if c.get("type") == REPLICA_FAILURE), None)
    if manage_replicas_error is not None and failure is None:
        diff = len(active_pods) - spec_replicas(rs)
        reason = "FailedCreate" if diff < 0 else ("FailedDelete" if diff > 0 else "")
        conditions.append(
            {
                "type": REPLICA_FAILURE,
                "status": "True",
                "lastTransitionTime": format_time(now),
                "reason": reason,
                "message": error_text(manage_replicas_error),
            }
        )
    elif manage_replicas_error is not None and failure is not None:
        conditions.append(failure)
    new_status["replicas"] = len(active_pods)
    counts = {
        "fullyLabeledReplicas": fully_labeled,
        "readyReplicas": ready,
        "availableReplicas": available,
    }
    for field, value in counts.items():
        if value:
            new_status[field] = value
        else:
            new_status.pop(field, None)
    if terminating_pods is not None:
        new_status["terminatingReplicas"] = len(terminating_pods)
    if conditions:
        new_status["conditions"] = conditions
    else:
        new_status.pop("conditions", None)
    return new_status


def status_needs_update(rs: Mapping[str, Any], new_status: Mapping[str, Any]) -> bool:
    """``updateReplicaSetStatus``'s early return: nothing changed and the generation is observed."""
    observed = status(rs).get("observedGeneration") or 0
    current = {k: v for k, v in status(rs).items() if k != "observedGeneration"}
    wanted = {k: v for k, v in new_status.items() if k != "observedGeneration"}
    return not same_status(current, wanted) or (meta(rs).get("generation") or 0) != observed


def _namespace_terminating(error: APIError) -> bool:
    return any(cause.type == NAMESPACE_TERMINATING_CAUSE for cause in error.causes)


# -- the reconciler ----------------------------------------------------------------------------------


class ReplicaSetReconciler:
    """One ReplicaSet per reconcile: claim pods, create or delete, write status."""

    def __init__(
        self,
        client: RESTClient,
        *,
        replicasets: Indexer,
        pods: Indexer,
        recorder: EventRecorder,
        clock: Clock,
        expectations: ControllerExpectations | None = None,
        burst_replicas: int = BURST_REPLICAS,
        kind: Kind = REPLICASETS,
    ) -> None:
        self.client = client
        self.replicasets = replicasets
        self.pods = pods
        self.recorder = recorder
        self.clock = clock
        self.expectations = expectations if expectations is not None else ControllerExpectations(clock)
        self.burst_replicas = burst_replicas
        self.kind = kind

    def selector_of(self, rs: Mapping[str, Any]) -> LabelSelector | None:
        """The owner's selector (a LabelSelector; the ReplicationController controller reads its map)."""
        return selector_of(rs)

    # -- reconcile ---------------------------------------------------------------------------------------

    async def reconcile(self, request: Request) -> Result:
        """``syncReplicaSet``."""
        key = request.key
        cached = self.replicasets.get_by_key(key)
        if cached is None:
            self.expectations.delete(key)
            return Result()
        rs = deep_copy(cached)
        needs_sync = self.expectations.satisfied(key)
        selector = self.selector_of(rs)
        if selector is None:
            logger.error("%s: invalid selector %r", key, spec(rs).get("selector"))
            return Result()
        all_pods = self.pods.by_index(NAMESPACE_INDEX, request.namespace)
        active = [pod for pod in all_pods if is_pod_active(pod)]
        terminating = [
            pod
            for pod in all_pods
            if is_pod_terminating(pod)
            and (ref := controller_ref_of(pod)) is not None
            and ref.get("uid") == uid_of(rs)
            and selector.matches(meta(pod).get("labels") or {})
        ]
        active = await self.claim_pods(rs, selector, active)
        manage_error: BaseException | None = None
        if needs_sync and not meta(rs).get("deletionTimestamp"):
            try:
                await self.manage_replicas(active, rs)
            except (APIError, TransportError) as error:
                manage_error = error
        new_status = calculate_status(rs, active, terminating, manage_error, self.clock.now())
        updated = await self.update_status(rs, new_status)
        if manage_error is not None:
            raise manage_error
        min_ready = int(spec(updated).get("minReadySeconds") or 0)
        replicas = spec_replicas(updated)
        if (
            min_ready > 0
            and (status(updated).get("readyReplicas") or 0) == replicas
            and (status(updated).get("availableReplicas") or 0) != replicas
        ):
            return Result(requeue_after=float(min_ready))
        return Result()

    async def claim_pods(self, rs: Object, selector: LabelSelector, pods: Sequence[Object]) -> list[Object]:
        """``claimPods``: adopt matching orphans, release our pods that stopped matching."""
        namespace = meta(rs).get("namespace")
        owners = self.client.resource(self.kind.group, self.kind.version, self.kind.plural, namespace)
        return await claim_dependents(
            rs,
            plan_claims(rs, selector, pods),
            self.client.resource(PODS.group, PODS.version, PODS.plural, namespace),
            owner_kind=self.kind,
            may_adopt=lambda: owner_still_there(owners, rs),
        )

    async def manage_replicas(self, active: Sequence[Object], rs: Object) -> None:
        """``manageReplicas``: create or delete pods until ``len(active) == spec.replicas``."""
        key = f"{meta(rs).get('namespace')}/{name_of(rs)}"
        namespace = meta(rs).get("namespace")
        pods_client = self.client.resource(PODS.group, PODS.version, PODS.plural, namespace)
        diff = len(active) - spec_replicas(rs)
        if diff < 0:
            to_create = min(-diff, self.burst_replicas)
            self.expectations.expect_creations(key, to_create)
            controller_ref = new_controller_ref(rs, api_version=self.kind.api_version, kind=self.kind.kind)
            template = spec(rs).get("template") or {}

            async def create_one() -> None:
                pod = pod_from_template(template, rs, controller_ref)
                try:
                    created = await pods_client.create(pod)
                except APIError as error:
                    if _namespace_terminating(error):
                        return  # every later create would fail too; the namespace is going away
                    self.recorder.eventf(
                        rs, EVENT_TYPE_WARNING, FAILED_CREATE_POD_REASON, "Error creating: %s", error.message
                    )
                    raise
                self.recorder.eventf(
                    rs, EVENT_TYPE_NORMAL, SUCCESSFUL_CREATE_POD_REASON, "Created pod: %s", name_of(created)
                )

            successes, error = await slow_start_batch(to_create, SLOW_START_INITIAL_BATCH_SIZE, create_one)
            # The pods that were never created will never be observed: stop expecting them.
            for _ in range(to_create - successes):
                self.expectations.creation_observed(key)
            if error is not None:
                raise error
        elif diff > 0:
            to_delete = min(diff, self.burst_replicas)
            victims = pods_to_delete(active, self._related_pods(rs), to_delete, self.clock.now())
            self.expectations.expect_deletions(key, [object_key(pod) for pod in victims])

            async def delete_one(pod: Object) -> None:
                try:
                    await pods_client.delete(name_of(pod))
                except NotFound:
                    self.expectations.deletion_observed(key, object_key(pod))
                    return
                except (APIError, TransportError) as error:
                    self.expectations.deletion_observed(key, object_key(pod))
                    self.recorder.eventf(
                        rs,
                        EVENT_TYPE_WARNING,
                        FAILED_DELETE_POD_REASON,
                        "Error deleting: %s",
                        error_text(error),
                    )
                    raise
                self.recorder.eventf(
                    rs, EVENT_TYPE_NORMAL, SUCCESSFUL_DELETE_POD_REASON, "Deleted pod: %s", name_of(pod)
                )

            results = await asyncio.gather(*(delete_one(pod) for pod in victims), return_exceptions=True)
            errors = [r for r in results if isinstance(r, BaseException)]
            if errors:
                raise errors[0]

    def _related_pods(self, rs: Object) -> list[Object]:
        """``getIndirectlyRelatedPods``: pods of every ReplicaSet with the same controller as ``rs``
        (the other ReplicaSets of its Deployment), for spreading deletions across nodes."""
        namespace = str(meta(rs).get("namespace") or "")
        owner = controller_ref_of(rs)
        if owner is None:
            siblings = {uid_of(rs)}
        else:
            siblings = {
                uid_of(other)
                for other in self.replicasets.by_index(NAMESPACE_INDEX, namespace)
                if (ref := controller_ref_of(other)) is not None and ref.get("uid") == owner.get("uid")
            } | {uid_of(rs)}
        return [
            pod
            for pod in self.pods.by_index(NAMESPACE_INDEX, namespace)
            if (ref := controller_ref_of(pod)) is not None and ref.get("uid") in siblings
        ]

    async def update_status(self, rs: Object, new_status: Object) -> Object:
        """``updateReplicaSetStatus``: write the status unless nothing changed; retry once on failure."""
        if not status_needs_update(rs, new_status):
            return rs
        new_status = {**new_status, "observedGeneration": meta(rs).get("generation")}
        rs_client = self.client.resource(
            self.kind.group, self.kind.version, self.kind.plural, meta(rs).get("namespace")
        )
        body = {**rs, "status": new_status}
        attempt = 0
        while True:
            try:
                return await rs_client.update_status(body)
            except (APIError, TransportError):
                if attempt >= STATUS_UPDATE_RETRIES:
                    raise
                attempt += 1
                body = {**(await rs_client.get(name_of(rs))), "status": new_status}

    # -- pod events (addPod / updatePod / deletePod) -----------------------------------------------------

    def resolve_controller_ref(self, namespace: str, ref: Mapping[str, Any]) -> Object | None:
        return resolve_controller_ref(self.replicasets, self.kind, namespace, ref)

    def pod_replica_sets(self, pod: Mapping[str, Any]) -> list[Object]:
        """``GetPodReplicaSets``: the ReplicaSets whose (non-empty) selector matches an orphan pod."""
        labels = meta(pod).get("labels") or {}
        found = []
        for rs in self.replicasets.by_index(NAMESPACE_INDEX, str(meta(pod).get("namespace") or "")):
            selector = self.selector_of(rs)
            if selector is None or selector.empty or not selector.matches(labels):
                continue
            found.append(rs)
        return found

    def pod_event_handler(
        self,
        enqueue: Callable[[Request], None],
        enqueue_after: Callable[[Request, float], None] | None = None,
    ) -> ResourceEventHandlerFuncs:
        """The pod informer's handler: observe expectations, then wake the ReplicaSets concerned."""
        return owned_pod_handler(
            owner_of=self.resolve_controller_ref,
            selecting=self.pod_replica_sets,
            min_ready_seconds=lambda rs: int(spec(rs).get("minReadySeconds") or 0),
            expectations=self.expectations,
            enqueue=enqueue,
            enqueue_after=enqueue_after,
            relabelled_deletion_wakes_old_owners=True,
        )


def add_to_manager(
    manager: Manager,
    *,
    workers: int = 1,
    burst_replicas: int = BURST_REPLICAS,
    expectations: ControllerExpectations | None = None,
) -> Controller:
    """Build the ReplicaSet controller on ``manager``: for ReplicaSets, woken by their pods.

    Pods are not wired with ``owns=``: the controller's own handler on the shared pod informer must
    observe expectations before it wakes the owner, and wake matching ReplicaSets for orphans.
    """
    reconciler = ReplicaSetReconciler(
        manager.client,
        replicasets=manager.cache(REPLICASETS),
        pods=manager.cache(PODS),
        recorder=manager.event_recorder(COMPONENT),
        clock=manager.clock,
        expectations=expectations,
        burst_replicas=burst_replicas,
    )
    controller = manager.new_controller("replicaset", reconciler, for_=REPLICASETS, workers=workers)

    def enqueue_after(request: Request, delay: float) -> None:
        controller.queue.add_after(request, delay)

    manager.informer_for(PODS).add_event_handler(
        reconciler.pod_event_handler(controller.enqueue, enqueue_after)
    )
    return controller
