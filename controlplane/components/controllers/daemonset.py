"""The DaemonSet controller: one pod on every node that wants one, rolled from template to template.

A DaemonSet (``apps/v1``) runs a copy of its pod on each eligible node: log shippers, node
exporters, kube-proxy. The controller (upstream ``pkg/controller/daemon/daemon_controller.go``
``syncDaemonSet`` and ``update.go``) keeps no list of pods; on each sync it:

1. **claims** the pods and ControllerRevisions that match the selector (adopting orphans, releasing
   strays), as the ReplicaSet controller does, and groups the pods by the node they are for
   (``daemonsetutil.target_node_name``);
2. builds the **history**: the ControllerRevision whose ``data`` is the current template is the
   current revision (created if missing, named ``<ds>-<hash>``, renumbered to the next revision if it
   was an old one brought back by ``kubectl rollout undo``); every other one is old;
3. if its **expectations** are met (every pod it created or deleted last time is in its cache),
   **manages** the nodes: for each node, ``daemonsetutil.node_should_run_daemon_pod`` says whether a
   pod should run there (nodeSelector, required node affinity, taints against tolerations). A node
   that should run one and has none gets one: the pod is created with a node affinity for that node,
   and the scheduler binds it. A node that should not have one loses it. A Failed pod is deleted (and
   replaced on the next sync; a back-off per node keeps a kubelet that rejects it from causing a hot
   loop), a Succeeded one too, and of two pods on one node the younger goes;
4. **rolls out** a new template with ``RollingUpdate`` (``daemonsetutil.plan_rolling_update``: delete
   old pods while at most ``maxUnavailable`` nodes lack an available pod; or, with ``maxSurge``, start
   the new pod first), or leaves old pods alone with ``OnDelete``;
5. deletes the oldest unused revisions beyond ``revisionHistoryLimit``;
6. writes the **status**: ``desiredNumberScheduled`` (nodes that should run the pod),
   ``currentNumberScheduled`` (those of them that do), ``numberMisscheduled`` (nodes running it that
   should not), ``numberReady``, ``numberAvailable``, ``numberUnavailable``, ``updatedNumberScheduled``
   (nodes whose pod is of the current revision) and ``observedGeneration``. ``kubectl rollout status
   ds/x`` waits for updated and available to reach desired.

The controller is woken by its DaemonSets, their pods (its own handler, which counts expectations),
their ControllerRevisions, and nodes: a node added, or changed so that some DaemonSet's answer for it
changes, wakes those DaemonSets. A deleted node wakes every DaemonSet too (upstream leaves that to the
pod garbage collector deleting the node's pods; the lab has no pod garbage collector, so the status
would otherwise keep counting the node). A pod whose node was deleted before it was scheduled is
deleted by the controller, as upstream's ``getUnscheduledPodsWithoutNode`` does; a pod already bound
to a deleted node is the pod garbage collector's, and stays.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from controlplane.api.deepcopy import deep_copy
from controlplane.api.meta import Object, object_key
from controlplane.api.selectors import LabelSelector
from controlplane.client.cache import NAMESPACE_INDEX, DeletedFinalStateUnknown, Indexer
from controlplane.client.errors import AlreadyExists, APIError, NotFound, TransportError
from controlplane.client.informer import ResourceEventHandlerFuncs
from controlplane.client.manager import Kind, Manager
from controlplane.client.reconciler import Controller, Request, Result
from controlplane.client.record import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING, EventRecorder
from controlplane.client.rest import PatchType, ResourceClient, RESTClient
from controlplane.clock import Clock
from controlplane.components.controllers import daemonsetutil as dsu
from controlplane.components.controllers.daemonsetutil import CONTROLLER_REVISION_HASH_LABEL
from controlplane.components.controllers.deploymentutil import meta, name_of, spec, status, uid_of
from controlplane.components.controllers.kinds import CONTROLLER_REVISIONS, DAEMONSETS, NODES, PODS
from controlplane.components.controllers.podcontrol import (
    FAILED_CREATE_POD_REASON,
    FAILED_DELETE_POD_REASON,
    SLOW_START_INITIAL_BATCH_SIZE,
    SUCCESSFUL_CREATE_POD_REASON,
    SUCCESSFUL_DELETE_POD_REASON,
    ControllerExpectations,
    claim_dependents,
    controller_ref_of,
    error_text,
    is_pod_available,
    is_pod_ready,
    new_controller_ref,
    owned_pod_handler,
    owner_still_there,
    plan_claims,
    pod_from_template,
    resolve_controller_ref,
    selector_of,
    slow_start_batch,
)

logger = logging.getLogger(__name__)

#: The component name on its Events (upstream's ``daemonset-controller``).
COMPONENT: Final = "daemonset-controller"
#: At most this many pods are created or deleted per sync (``BurstReplicas`` of this controller).
BURST_REPLICAS: Final = 250
#: A failed status write is retried once after reading the DaemonSet again (``StatusUpdateRetries``).
STATUS_UPDATE_RETRIES: Final = 1
SELECTING_ALL_REASON: Final = "SelectingAll"
FAILED_DAEMON_POD_REASON: Final = "FailedDaemonPod"
NAMESPACE_TERMINATING_CAUSE: Final = "NamespaceTerminating"

NodeToPods = dict[str, list[Object]]


class DaemonSetReconciler:
    """One DaemonSet per reconcile (``syncDaemonSet``)."""

    def __init__(
        self,
        client: RESTClient,
        *,
        daemonsets: Indexer,
        pods: Indexer,
        nodes: Indexer,
        revisions: Indexer,
        recorder: EventRecorder,
        clock: Clock,
        expectations: ControllerExpectations | None = None,
        burst_replicas: int = BURST_REPLICAS,
    ) -> None:
        self.client = client
        self.daemonsets = daemonsets
        self.pods = pods
        self.nodes = nodes
        self.revisions = revisions
        self.recorder = recorder
        self.clock = clock
        self.expectations = expectations if expectations is not None else ControllerExpectations(clock)
        self.burst_replicas = burst_replicas
        self.failed_pods_backoff = dsu.FailedPodsBackoff()

    def _client(self, kind: Kind, namespace: str) -> ResourceClient:
        return self.client.resource(kind.group, kind.version, kind.plural, namespace)

    # -- the sync ------------------------------------------------------------------------------------

    async def reconcile(self, request: Request) -> Result:
        key = request.key
        cached = self.daemonsets.get_by_key(key)
        if cached is None:
            self.expectations.delete(key)
            return Result()
        ds = deep_copy(cached)
        nodes = list(self.nodes.list())
        if spec(ds).get("selector") == {}:
            self.recorder.event(
                ds,
                EVENT_TYPE_WARNING,
                SELECTING_ALL_REASON,
                "This daemon set is selecting all pods. A non-empty selector is required.",
            )
            return Result()
        selector = selector_of(ds)
        if selector is None:
            logger.error("%s: invalid selector %r", key, spec(ds).get("selector"))
            return Result()
        # Being deleted: its revisions may already be gone (the garbage collector does not order them
        # after the pods), so its status cannot be computed reliably. Upstream returns here too.
        if meta(ds).get("deletionTimestamp"):
            return Result()
        current, old = await self.construct_history(ds, selector)
        hash_ = (meta(current).get("labels") or {}).get(CONTROLLER_REVISION_HASH_LABEL, "")
        if not self.expectations.satisfied(key):
            # Only the status: the generation it has not acted on is not observed.
            return await self.update_status(ds, nodes, hash_, selector, update_observed_generation=False)
        requeue: list[float] = []
        sync_error: BaseException | None = None
        try:
            await self.update_daemon_set(ds, nodes, hash_, key, old, selector, requeue)
        except (APIError, TransportError) as error:
            sync_error = error
        result = await self.update_status(ds, nodes, hash_, selector, update_observed_generation=True)
        if sync_error is not None:
            raise sync_error
        if requeue and (result.requeue_after is None or min(requeue) < result.requeue_after):
            return Result(requeue_after=min(requeue))
        return result

    async def update_daemon_set(
        self,
        ds: Object,
        nodes: Sequence[Object],
        hash_: str,
        key: str,
        old: Sequence[Object],
        selector: LabelSelector,
        requeue: list[float],
    ) -> None:
        """``updateDaemonSet``: manage the nodes, roll out if nothing is pending, clean up history."""
        await self.manage(ds, nodes, hash_, selector, requeue)
        if self.expectations.satisfied(key) and dsu.is_rolling_update(ds):
            await self.rolling_update(ds, nodes, hash_, selector)
        await self.cleanup_history(ds, old, selector)

    # -- pods ----------------------------------------------------------------------------------------

    async def get_daemon_pods(self, ds: Object, selector: LabelSelector) -> list[Object]:
        """``getDaemonPods``: the pods of the namespace this DaemonSet controls (adopting orphans,
        releasing strays), terminating ones included."""
        namespace = str(meta(ds).get("namespace") or "")
        plan = plan_claims(ds, selector, self.pods.by_index(NAMESPACE_INDEX, namespace))
        return await claim_dependents(
            ds,
            plan,
            self._client(PODS, namespace),
            owner_kind=DAEMONSETS,
            may_adopt=lambda: owner_still_there(self._client(DAEMONSETS, namespace), ds),
        )

    async def get_nodes_to_daemon_pods(self, ds: Object, selector: LabelSelector) -> NodeToPods:
        """``getNodesToDaemonPods``: the claimed pods by the node they are for. A finished pod that is
        already being deleted is no longer the controller's business."""
        node_to_pods: NodeToPods = {}
        for pod in await self.get_daemon_pods(ds, selector):
            if status(pod).get("phase") in ("Succeeded", "Failed") and meta(pod).get("deletionTimestamp"):
                continue
            node_name = dsu.target_node_name(pod)
            if node_name is None:
                logger.info("%s: no target node for pod %s", name_of(ds), name_of(pod))
                continue
            node_to_pods.setdefault(node_name, []).append(pod)
        return node_to_pods

    async def manage(
        self, ds: Object, nodes: Sequence[Object], hash_: str, selector: LabelSelector, requeue: list[float]
    ) -> None:
        """``manage``: a pod on each node that should run one, none elsewhere."""
        node_to_pods = await self.get_nodes_to_daemon_pods(ds, selector)
        plan = dsu.SyncPlan()
        for node in nodes:
            create, delete = self.pods_should_be_on_node(node, node_to_pods, ds, hash_, requeue)
            plan.create_on += create
            plan.delete += delete
        # Pods for nodes that no longer exist, never scheduled: nothing else would delete them.
        existing = {name_of(node) for node in nodes}
        for node_name, pods in node_to_pods.items():
            if node_name in existing:
                continue
            plan.delete += [
                pod
                for pod in pods
                if not spec(pod).get("nodeName") and not meta(pod).get("deletionTimestamp")
            ]
        await self.sync_nodes(ds, plan, hash_)

    def pods_should_be_on_node(
        self, node: Object, node_to_pods: NodeToPods, ds: Object, hash_: str, requeue: list[float]
    ) -> tuple[list[str], list[Object]]:
        """``podsShouldBeOnNode``: (create a pod on this node?, the pods to delete from it)."""
        node_name = name_of(node)
        should_run, should_continue_running = dsu.node_should_run_daemon_pod(node, ds)
        daemon_pods = node_to_pods.get(node_name)
        create: list[str] = []
        delete: list[Object] = []
        if should_run and daemon_pods is None:
            return [node_name], []
        if should_continue_running:
            running: list[Object] = []
            for pod in daemon_pods or []:
                if meta(pod).get("deletionTimestamp"):
                    continue
                phase = status(pod).get("phase")
                if phase == "Failed":
                    backoff_key = f"{object_key(ds)}/{uid_of(ds)}/{node_name}"
                    now = self.clock.now()
                    if self.failed_pods_backoff.in_backoff_since_update(backoff_key, now):
                        requeue.append(self.failed_pods_backoff.get(backoff_key))
                        continue
                    self.failed_pods_backoff.next(backoff_key, now)
                    self.recorder.eventf(
                        ds,
                        EVENT_TYPE_WARNING,
                        FAILED_DAEMON_POD_REASON,
                        "Found failed daemon pod %s/%s on node %s, will try to kill it",
                        meta(pod).get("namespace"),
                        name_of(pod),
                        node_name,
                    )
                    delete.append(pod)
                elif phase == "Succeeded":
                    delete.append(pod)  # a daemon that exited is replaced, as a failed one is
                else:
                    running.append(pod)
            if not dsu.allows_surge(ds):
                # Without surge, one pod per node: all but the oldest go.
                if len(running) > 1:
                    delete += dsu.sort_by_creation_and_phase(running)[1:]
                return create, delete
            if len(running) <= 1:
                if not running and should_run:
                    create.append(node_name)  # surging needs at least one live pod on the node
                return create, delete
            delete += self._surge_excess(ds, running, hash_)
            return create, delete
        if daemon_pods:
            delete += [pod for pod in daemon_pods if not meta(pod).get("deletionTimestamp")]
        return create, delete

    def _surge_excess(self, ds: Object, running: Sequence[Object], hash_: str) -> list[Object]:
        """With surge, two pods may share a node: the oldest new one while it is not available yet,
        and the oldest old one while it is ready. Every other pod goes."""
        delete: list[Object] = []
        oldest_new: Object | None = None
        oldest_old: Object | None = None
        for pod in dsu.sort_by_creation_and_phase(running):
            if (meta(pod).get("labels") or {}).get(CONTROLLER_REVISION_HASH_LABEL) == hash_:
                if oldest_new is None:
                    oldest_new = pod
                    continue
            elif oldest_old is None:
                oldest_old = pod
                continue
            delete.append(pod)
        if (
            oldest_new is not None
            and oldest_old is not None
            and (
                not is_pod_ready(oldest_old)
                or is_pod_available(oldest_new, dsu.min_ready_seconds(ds), self.clock.now())
            )
        ):
            delete.append(oldest_old)
        return delete

    async def sync_nodes(self, ds: Object, plan: dsu.SyncPlan, hash_: str) -> None:
        """``syncNodes``: create the pods (slow start), delete the others, expecting both."""
        key = object_key(ds)
        namespace = str(meta(ds).get("namespace") or "")
        nodes_needing = plan.create_on[: self.burst_replicas]
        victims = plan.delete[: self.burst_replicas]
        self.expectations.set_expectations(key, len(nodes_needing), [object_key(pod) for pod in victims])
        template = dsu.create_pod_template(spec(ds).get("template") or {}, dsu.template_generation(ds), hash_)
        controller_ref = new_controller_ref(ds, api_version=DAEMONSETS.api_version, kind=DAEMONSETS.kind)
        pods_client = self._client(PODS, namespace)
        targets = iter(nodes_needing)
        attempted = itertools.count()
        errors: list[BaseException] = []

        async def create_one() -> None:
            node_name = next(targets)
            next(attempted)
            pod_template = deep_copy(template)
            pod_template.setdefault("spec", {})["affinity"] = dsu.replace_node_name_affinity(
                pod_template["spec"].get("affinity"), node_name
            )
            try:
                created = await pods_client.create(pod_from_template(pod_template, ds, controller_ref))
            except APIError as error:
                self.expectations.creation_observed(key)
                if any(cause.type == NAMESPACE_TERMINATING_CAUSE for cause in error.causes):
                    return  # every later creation would fail too: the namespace is going away
                self.recorder.eventf(
                    ds, EVENT_TYPE_WARNING, FAILED_CREATE_POD_REASON, "Error creating: %s", error.message
                )
                raise
            except TransportError:
                self.expectations.creation_observed(key)
                raise
            self.recorder.eventf(
                ds, EVENT_TYPE_NORMAL, SUCCESSFUL_CREATE_POD_REASON, "Created pod: %s", name_of(created)
            )

        _, error = await slow_start_batch(len(nodes_needing), SLOW_START_INITIAL_BATCH_SIZE, create_one)
        if error is not None:
            errors.append(error)
            # The pods never attempted will never be observed.
            for _ in range(len(nodes_needing) - next(attempted)):
                self.expectations.creation_observed(key)

        async def delete_one(pod: Object) -> None:
            try:
                await pods_client.delete(name_of(pod))
            except NotFound:
                self.expectations.deletion_observed(key, object_key(pod))
                return
            except (APIError, TransportError) as error:
                self.expectations.deletion_observed(key, object_key(pod))
                self.recorder.eventf(
                    ds, EVENT_TYPE_WARNING, FAILED_DELETE_POD_REASON, "Error deleting: %s", error_text(error)
                )
                raise
            self.recorder.eventf(
                ds, EVENT_TYPE_NORMAL, SUCCESSFUL_DELETE_POD_REASON, "Deleted pod: %s", name_of(pod)
            )

        results = await asyncio.gather(*(delete_one(pod) for pod in victims), return_exceptions=True)
        for result in results:
            if isinstance(result, asyncio.CancelledError):
                raise result
            if isinstance(result, BaseException):
                errors.append(result)
        if errors:
            raise errors[0]

    # -- rolling update --------------------------------------------------------------------------------

    async def rolling_update(
        self, ds: Object, nodes: Sequence[Object], hash_: str, selector: LabelSelector
    ) -> None:
        """``rollingUpdate``: one step of the rollout (see ``daemonsetutil.plan_rolling_update``)."""
        node_to_pods = await self.get_nodes_to_daemon_pods(ds, selector)
        desired = 0
        for node in nodes:
            if dsu.node_should_run_daemon_pod(node, ds)[0]:
                desired += 1
                node_to_pods.setdefault(name_of(node), [])
        max_unavailable = dsu.unavailable_count(ds, desired)
        max_surge = dsu.surge_count(ds, desired)
        if desired > 0 and max_unavailable == 0 and max_surge == 0:
            # Validation forbids it, but be safe: accept one unavailable node (updatedDesiredNodeCounts).
            max_unavailable = 1
        by_name = {name_of(node): node for node in nodes}

        def should_run(node_name: str) -> bool:
            node = by_name.get(node_name)
            return node is not None and dsu.node_should_run_daemon_pod(node, ds)[0]

        plan = dsu.plan_rolling_update(
            ds, node_to_pods, hash_, max_surge, max_unavailable, self.clock.now(), should_run
        )
        await self.sync_nodes(ds, plan, hash_)

    # -- history ---------------------------------------------------------------------------------------

    async def controlled_histories(self, ds: Object, selector: LabelSelector) -> list[Object]:
        """``controlledHistories``: the ControllerRevisions this DaemonSet controls (adopt, release)."""
        namespace = str(meta(ds).get("namespace") or "")
        plan = plan_claims(ds, selector, self.revisions.by_index(NAMESPACE_INDEX, namespace))
        plan.claimed = [deep_copy(r) for r in plan.claimed]
        return await claim_dependents(
            ds,
            plan,
            self._client(CONTROLLER_REVISIONS, namespace),
            owner_kind=DAEMONSETS,
            may_adopt=lambda: owner_still_there(self._client(DAEMONSETS, namespace), ds),
        )

    async def construct_history(self, ds: Object, selector: LabelSelector) -> tuple[Object, list[Object]]:
        """``constructHistory``: (the current revision, created or renumbered if need be; the old ones)."""
        namespace = str(meta(ds).get("namespace") or "")
        client = self._client(CONTROLLER_REVISIONS, namespace)
        current: list[Object] = []
        old: list[Object] = []
        for history in await self.controlled_histories(ds, selector):
            labels = meta(history).setdefault("labels", {})
            if CONTROLLER_REVISION_HASH_LABEL not in labels:
                # The name, not a recomputed hash: no collision to worry about.
                labels[CONTROLLER_REVISION_HASH_LABEL] = name_of(history)
                history = await client.update(history)
            (current if dsu.revision_matches(ds, history) else old).append(history)
        next_revision = dsu.max_revision(old) + 1
        if not current:
            return await self.snapshot(ds, next_revision), old
        cur = await self.dedup_current_histories(ds, current, selector)
        if dsu.revision_number(cur) < next_revision:
            cur = deep_copy(cur)
            cur["revision"] = next_revision
            cur = await client.update(cur)
        return cur, old

    async def dedup_current_histories(
        self, ds: Object, histories: Sequence[Object], selector: LabelSelector
    ) -> Object:
        """``dedupCurHistories``: keep the highest revision; relabel its pods; delete the rest."""
        if len(histories) == 1:
            return histories[0]
        keep = max(histories, key=dsu.revision_number)
        keep_hash = (meta(keep).get("labels") or {}).get(CONTROLLER_REVISION_HASH_LABEL)
        namespace = str(meta(ds).get("namespace") or "")
        for history in histories:
            if name_of(history) == name_of(keep):
                continue
            for pod in await self.get_daemon_pods(ds, selector):
                if (meta(pod).get("labels") or {}).get(CONTROLLER_REVISION_HASH_LABEL) != keep_hash:
                    await self._client(PODS, namespace).patch(
                        name_of(pod),
                        {"metadata": {"labels": {CONTROLLER_REVISION_HASH_LABEL: keep_hash}}},
                        patch_type=PatchType.STRATEGIC_MERGE,
                    )
            with contextlib.suppress(NotFound):
                await self._client(CONTROLLER_REVISIONS, namespace).delete(name_of(history))
        return keep

    async def snapshot(self, ds: Object, revision: int) -> Object:
        """``snapshot``: create the current revision; on a name taken by another template (a hash
        collision), bump ``status.collisionCount`` and fail the sync so the next one uses a new name."""
        namespace = str(meta(ds).get("namespace") or "")
        hash_ = dsu.revision_hash(ds)
        template_labels = ((spec(ds).get("template") or {}).get("metadata") or {}).get("labels") or {}
        history_meta: Object = {
            "name": f"{name_of(ds)}-{hash_}",
            "namespace": namespace,
            "labels": {**template_labels, CONTROLLER_REVISION_HASH_LABEL: hash_},
            "ownerReferences": [
                new_controller_ref(ds, api_version=DAEMONSETS.api_version, kind=DAEMONSETS.kind)
            ],
        }
        if meta(ds).get("annotations"):
            history_meta["annotations"] = dict(meta(ds)["annotations"])
        history: Object = {
            "apiVersion": CONTROLLER_REVISIONS.api_version,
            "kind": CONTROLLER_REVISIONS.kind,
            "metadata": history_meta,
            "data": dsu.revision_patch(ds),
            "revision": revision,
        }
        client = self._client(CONTROLLER_REVISIONS, namespace)
        try:
            return await client.create(history)
        except AlreadyExists:
            existing = await client.get(history_meta["name"])
            if dsu.revision_matches(ds, existing):
                return existing
            ds_client = self._client(DAEMONSETS, namespace)
            fresh = await ds_client.get(name_of(ds))
            count = status(fresh).get("collisionCount")
            fresh.setdefault("status", {})["collisionCount"] = (count if isinstance(count, int) else 0) + 1
            await ds_client.update_status(fresh)
            raise

    async def cleanup_history(self, ds: Object, old: Sequence[Object], selector: LabelSelector) -> None:
        """``cleanupHistory``: delete the oldest old revisions beyond the limit that no pod uses."""
        if not dsu.revisions_to_clean_up(ds, old, ()):
            return
        node_to_pods = await self.get_nodes_to_daemon_pods(ds, selector)
        live = [pod for pods in node_to_pods.values() for pod in pods]
        client = self._client(CONTROLLER_REVISIONS, str(meta(ds).get("namespace") or ""))
        for revision in dsu.revisions_to_clean_up(ds, old, live):
            with contextlib.suppress(NotFound):
                await client.delete(name_of(revision))

    # -- status ----------------------------------------------------------------------------------------

    async def update_status(
        self,
        ds: Object,
        nodes: Sequence[Object],
        hash_: str,
        selector: LabelSelector,
        *,
        update_observed_generation: bool,
    ) -> Result:
        """``updateDaemonSetStatus``: count the nodes, write the status if it changed."""
        node_to_pods = await self.get_nodes_to_daemon_pods(ds, selector)
        now = self.clock.now()
        generation = dsu.template_generation(ds)
        min_ready = dsu.min_ready_seconds(ds)
        desired = current = misscheduled = ready = updated = available = 0
        for node in nodes:
            should_run, _ = dsu.node_should_run_daemon_pod(node, ds)
            pods = node_to_pods.get(name_of(node)) or []
            if not should_run:
                if pods:
                    misscheduled += 1
                continue
            desired += 1
            if not pods:
                continue
            current += 1
            pod = dsu.sort_by_creation_and_phase(pods)[0]
            if is_pod_ready(pod):
                ready += 1
                if is_pod_available(pod, min_ready, now):
                    available += 1
            if dsu.is_pod_updated(pod, hash_, generation):
                updated += 1
        counts = {
            "desiredNumberScheduled": desired,
            "currentNumberScheduled": current,
            "numberMisscheduled": misscheduled,
            "numberReady": ready,
            "updatedNumberScheduled": updated,
            "numberAvailable": available,
            "numberUnavailable": desired - available,
        }
        await self.store_status(ds, counts, update_observed_generation=update_observed_generation)
        if min_ready > 0 and ready != available:
            # A last line of defence against a missed readiness transition (and clock skew).
            return Result(requeue_after=float(min_ready))
        return Result()

    async def store_status(
        self, ds: Object, counts: Mapping[str, int], *, update_observed_generation: bool
    ) -> None:
        """``storeDaemonSetStatus``: nothing if unchanged and the generation observed; one retry."""
        current = status(ds)
        generation = meta(ds).get("generation") or 0
        if (
            all((current.get(field) or 0) == value for field, value in counts.items())
            and (current.get("observedGeneration") or 0) >= generation
        ):
            return
        client = self._client(DAEMONSETS, str(meta(ds).get("namespace") or ""))
        to_update = deep_copy(ds)
        attempt = 0
        while True:
            new_status = to_update.setdefault("status", {})
            if update_observed_generation:
                new_status["observedGeneration"] = generation
            for field, value in counts.items():
                # The first four have no omitempty; the others are left out when 0, as Go does.
                if value or field in _ALWAYS_WRITTEN:
                    new_status[field] = value
                else:
                    new_status.pop(field, None)
            try:
                await client.update_status(to_update)
                return
            except NotFound:
                return  # deleted since the cache showed it: there is no status left to write
            except (APIError, TransportError):
                if attempt >= STATUS_UPDATE_RETRIES:
                    raise
                attempt += 1
                try:
                    to_update = await client.get(name_of(ds))
                except NotFound:
                    return

    # -- waking DaemonSets -------------------------------------------------------------------------------

    def _request(self, ds: Mapping[str, Any]) -> Request:
        return Request(str(meta(ds).get("namespace") or ""), name_of(ds))

    def resolve_controller_ref(self, namespace: str, ref: Mapping[str, Any]) -> Object | None:
        return resolve_controller_ref(self.daemonsets, DAEMONSETS, namespace, ref)

    def daemon_sets_selecting(self, obj: Mapping[str, Any]) -> list[Object]:
        """``getDaemonSetsForPod`` / ``getDaemonSetsForHistory``: those whose selector matches an orphan."""
        labels = meta(obj).get("labels") or {}
        found = []
        for ds in self.daemonsets.by_index(NAMESPACE_INDEX, str(meta(obj).get("namespace") or "")):
            selector = selector_of(ds)
            if selector is not None and not selector.empty and selector.matches(labels):
                found.append(ds)
        return found

    def requests_for_revision(self, revision: Mapping[str, Any]) -> list[Request]:
        """``addHistory``/``updateHistory``/``deleteHistory``: the owner, or those that could adopt it."""
        ref = controller_ref_of(revision)
        if ref is not None:
            ds = self.resolve_controller_ref(str(meta(revision).get("namespace") or ""), ref)
            return [] if ds is None else [self._request(ds)]
        return [self._request(ds) for ds in self.daemon_sets_selecting(revision)]

    def node_event_handler(self, enqueue: Callable[[Request], None]) -> ResourceEventHandlerFuncs:
        """``addNode``/``updateNode`` (and a deletion, see the module docstring)."""

        def on_add(node: Object) -> None:
            for ds in self.daemonsets.list():
                if dsu.node_should_run_daemon_pod(node, ds)[0]:
                    enqueue(self._request(ds))

        def on_update(old: Object, cur: Object) -> None:
            if _same_node_for_daemons(old, cur):
                return
            for ds in self.daemonsets.list():
                if dsu.node_should_run_daemon_pod(old, ds) != dsu.node_should_run_daemon_pod(cur, ds):
                    enqueue(self._request(ds))

        def on_delete(obj: Object | DeletedFinalStateUnknown) -> None:
            for ds in self.daemonsets.list():
                enqueue(self._request(ds))

        return ResourceEventHandlerFuncs(on_add, on_update, on_delete)

    def pod_event_handler(
        self,
        enqueue: Callable[[Request], None],
        enqueue_after: Callable[[Request, float], None] | None = None,
    ) -> ResourceEventHandlerFuncs:
        """``addPod``/``updatePod``/``deletePod``: observe expectations, wake the DaemonSets concerned."""
        return owned_pod_handler(
            owner_of=self.resolve_controller_ref,
            selecting=self.daemon_sets_selecting,
            min_ready_seconds=dsu.min_ready_seconds,
            expectations=self.expectations,
            enqueue=enqueue,
            enqueue_after=enqueue_after,
        )


_ALWAYS_WRITTEN: Final = frozenset(
    {"desiredNumberScheduled", "currentNumberScheduled", "numberMisscheduled", "numberReady"}
)


def _same_node_for_daemons(old: Mapping[str, Any], cur: Mapping[str, Any]) -> bool:
    """``shouldIgnoreNodeUpdate``: only the resource version or the conditions' heartbeats changed."""

    def condition_states(node: Mapping[str, Any]) -> dict[str, Any]:
        return {c.get("type"): c.get("status") for c in status(node).get("conditions") or []}

    if condition_states(old) != condition_states(cur):
        return False

    def stripped(node: Mapping[str, Any]) -> Object:
        copied: Object = {k: v for k, v in node.items() if k != "status"}
        copied["metadata"] = {
            k: v for k, v in meta(node).items() if k not in ("resourceVersion", "managedFields")
        }
        copied["status"] = {k: v for k, v in status(node).items() if k != "conditions"}
        return copied

    return stripped(old) == stripped(cur)


def add_to_manager(
    manager: Manager, *, workers: int = 1, expectations: ControllerExpectations | None = None
) -> Controller:
    """Build the DaemonSet controller on ``manager``: for DaemonSets, woken by their pods, their
    ControllerRevisions and the nodes."""
    reconciler = DaemonSetReconciler(
        manager.client,
        daemonsets=manager.cache(DAEMONSETS),
        pods=manager.cache(PODS),
        nodes=manager.cache(NODES),
        revisions=manager.cache(CONTROLLER_REVISIONS),
        recorder=manager.event_recorder(COMPONENT),
        clock=manager.clock,
        expectations=expectations,
    )
    controller = manager.new_controller("daemonset", reconciler, for_=DAEMONSETS, workers=workers)

    def enqueue_after(request: Request, delay: float) -> None:
        controller.queue.add_after(request, delay)

    manager.informer_for(PODS).add_event_handler(
        reconciler.pod_event_handler(controller.enqueue, enqueue_after)
    )
    manager.informer_for(NODES).add_event_handler(reconciler.node_event_handler(controller.enqueue))
    controller.watch(manager.informer_for(CONTROLLER_REVISIONS), reconciler.requests_for_revision)
    return controller


__all__ = ["COMPONENT", "DaemonSetReconciler", "add_to_manager"]
