"""The Deployment controller: roll a pod template out, one ReplicaSet per version.

A Deployment owns ReplicaSets and moves replicas between them; the ReplicaSet controller turns those
numbers into pods. Each sync (upstream ``pkg/controller/deployment/deployment_controller.go``
``syncDeployment``) goes:

1. **claim** the ReplicaSets that match the selector (adopt orphans, release strays), and group the
   pods by ReplicaSet;
2. a Deployment being deleted only gets its status updated; a **paused** one is only scaled
   (``Progressing`` becomes Unknown ``DeploymentPaused`` while it is, ``DeploymentResumed`` after);
3. a **scaling event** (``kubectl scale``: some active ReplicaSet was sized for another
   ``spec.replicas``, says its ``desired-replicas`` annotation) resizes the ReplicaSets, in
   proportion mid-rollout, and nothing else;
4. otherwise a **rollout** step, by ``spec.strategy.type``:

   - ``RollingUpdate`` (``rolling.go``): find or create the new ReplicaSet
     ``<deployment>-<pod-template-hash>``; scale it up as far as ``replicas + maxSurge`` allows; if it
     could not grow, scale old ones down as far as ``replicas - maxUnavailable`` available pods
     allows. One step per sync: each write wakes the controller again;
   - ``Recreate`` (``recreate.go``): scale every old ReplicaSet to 0, wait until none of their pods
     exists any more (not even terminating), then create the new ReplicaSet at full size;

5. once the rollout is complete, delete the oldest old ReplicaSets beyond ``revisionHistoryLimit``;
6. write the **status** with the ``Available`` and ``Progressing`` conditions that ``kubectl rollout
   status`` reads (``deploymentutil.rollout_status``), and if no progress is being made, look again
   when ``progressDeadlineSeconds`` would run out (on the cluster clock).

Every resize is an Event on the Deployment: ``ScalingReplicaSet`` "Scaled up replica set web-7c5ddbdf54
from 0 to 3". A rollback (``kubectl rollout undo``) is a client-side copy of an old ReplicaSet's
template into the Deployment: the controller then finds that old ReplicaSet as the new one and gives
it the next revision.

All arithmetic lives in ``deploymentutil`` (pure); this module reads the caches and writes.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping, Sequence
from typing import Any, Final

from controlplane.api.deepcopy import deep_copy
from controlplane.api.meta import Object
from controlplane.api.selectors import LabelSelector
from controlplane.client.cache import NAMESPACE_INDEX, Indexer
from controlplane.client.errors import AlreadyExists, APIError, NotFound, TransportError
from controlplane.client.manager import Manager
from controlplane.client.reconciler import Controller, Request, Result, owner_requests
from controlplane.client.record import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING, EventRecorder
from controlplane.client.rest import ResourceClient, RESTClient
from controlplane.clock import Clock
from controlplane.components.controllers import deploymentutil as du
from controlplane.components.controllers.deploymentutil import (
    ScaleStep,
    annotations_of,
    meta,
    name_of,
    spec,
    spec_replicas,
    status,
    uid_of,
)
from controlplane.components.controllers.kinds import DEPLOYMENTS, PODS, REPLICASETS
from controlplane.components.controllers.podcontrol import (
    claim_dependents,
    controller_ref_of,
    new_controller_ref,
    owner_still_there,
    plan_claims,
    selector_of,
)

logger = logging.getLogger(__name__)


COMPONENT: Final = "deployment-controller"
SCALING_REPLICA_SET_REASON: Final = "ScalingReplicaSet"


class DeploymentReconciler:
    """One Deployment per reconcile (``syncDeployment``)."""

    def __init__(
        self,
        client: RESTClient,
        *,
        deployments: Indexer,
        replicasets: Indexer,
        pods: Indexer,
        recorder: EventRecorder,
        clock: Clock,
    ) -> None:
        self.client = client
        self.deployments = deployments
        self.replicasets = replicasets
        self.pods = pods
        self.recorder = recorder
        self.clock = clock

    def _deployments(self, namespace: str) -> ResourceClient:
        return self.client.resource(DEPLOYMENTS.group, DEPLOYMENTS.version, DEPLOYMENTS.plural, namespace)

    def _replicasets(self, namespace: str) -> ResourceClient:
        return self.client.resource(REPLICASETS.group, REPLICASETS.version, REPLICASETS.plural, namespace)

    # -- mapping watch events to Deployments ---------------------------------------------------------

    def requests_for_replica_set(self, rs: Mapping[str, Any]) -> list[Request]:
        """A ReplicaSet wakes its controlling Deployment; an orphan, every Deployment that could adopt
        it (``addReplicaSet``/``getDeploymentsForReplicaSet``)."""
        if controller_ref_of(rs) is not None:
            return owner_requests(rs, owner_kind=DEPLOYMENTS.kind, owner_api_version=DEPLOYMENTS.api_version)
        namespace = str(meta(rs).get("namespace") or "")
        labels = meta(rs).get("labels") or {}
        requests = []
        for d in self.deployments.by_index(NAMESPACE_INDEX, namespace):
            selector = selector_of(d)
            if selector is None or selector.empty or not selector.matches(labels):
                continue
            requests.append(Request(namespace, name_of(d)))
        return requests

    def requests_for_pod(self, pod: Mapping[str, Any]) -> list[Request]:
        """A pod wakes the Deployment of its ReplicaSet, if that Deployment recreates: a Recreate rollout
        waits for the old pods to be gone (upstream's ``deletePod``)."""
        ref = controller_ref_of(pod)
        if ref is None or ref.get("kind") != REPLICASETS.kind:
            return []
        namespace = str(meta(pod).get("namespace") or "")
        rs = self.replicasets.get_by_key(f"{namespace}/{ref.get('name')}")
        if rs is None or uid_of(rs) != ref.get("uid"):
            return []
        for request in owner_requests(
            rs, owner_kind=DEPLOYMENTS.kind, owner_api_version=DEPLOYMENTS.api_version
        ):
            d = self.deployments.get_by_key(request.key)
            if d is not None and not du.is_rolling_update(d):
                return [request]
        return []

    # -- the sync ------------------------------------------------------------------------------------

    async def reconcile(self, request: Request) -> Result:
        cached = self.deployments.get_by_key(request.key)
        if cached is None:
            return Result()
        d = deep_copy(cached)
        if spec(d).get("selector") == {}:
            self.recorder.event(
                d,
                EVENT_TYPE_WARNING,
                "SelectingAll",
                "This deployment is selecting all pods. A non-empty selector is required.",
            )
            if (status(d).get("observedGeneration") or 0) < (meta(d).get("generation") or 0):
                d.setdefault("status", {})["observedGeneration"] = meta(d).get("generation")
                await self._update_status(d)
            return Result()
        selector = selector_of(d)
        if selector is None:
            logger.error("%s: invalid selector %r", request.key, spec(d).get("selector"))
            return Result()
        rs_list = await self.get_replica_sets_for_deployment(d, selector)
        pod_map = self.get_pod_map(d, selector, rs_list)
        if meta(d).get("deletionTimestamp"):
            await self.sync_status_only(d, rs_list)
            return Result()
        await self.check_paused_conditions(d)
        if spec(d).get("paused"):
            await self.sync(d, rs_list)
            return Result()
        new_rs, old_rss = await self.get_all_replica_sets_and_sync_revision(d, rs_list, create=False)
        if du.is_scaling_event(d, new_rs, old_rss):
            await self.sync(d, rs_list)
            return Result()
        if du.is_rolling_update(d):
            return await self.rollout_rolling(d, rs_list)
        return await self.rollout_recreate(d, rs_list, pod_map)

    async def get_replica_sets_for_deployment(self, d: Object, selector: LabelSelector) -> list[Object]:
        """``getReplicaSetsForDeployment``: claim the ReplicaSets (adopt and release as needed)."""
        namespace = str(meta(d).get("namespace") or "")
        plan = plan_claims(d, selector, self.replicasets.by_index(NAMESPACE_INDEX, namespace))
        claimed = await claim_dependents(
            d,
            plan,
            self._replicasets(namespace),
            owner_kind=DEPLOYMENTS,
            may_adopt=lambda: owner_still_there(self._deployments(namespace), d),
        )
        return [deep_copy(rs) for rs in claimed]

    def get_pod_map(
        self, d: Object, selector: LabelSelector, rs_list: Sequence[Object]
    ) -> dict[str, list[Object]]:
        """``getPodMapForDeployment``: the Deployment's pods by ReplicaSet UID (terminating ones too)."""
        pod_map: dict[str, list[Object]] = {uid_of(rs): [] for rs in rs_list}
        for pod in self.pods.by_index(NAMESPACE_INDEX, str(meta(d).get("namespace") or "")):
            if not selector.matches(meta(pod).get("labels") or {}):
                continue
            ref = controller_ref_of(pod)
            if ref is not None and ref.get("uid") in pod_map:
                pod_map[str(ref["uid"])].append(pod)
        return pod_map

    # -- new ReplicaSet and revisions ----------------------------------------------------------------

    async def get_all_replica_sets_and_sync_revision(
        self, d: Object, rs_list: list[Object], *, create: bool
    ) -> tuple[Object | None, list[Object]]:
        _, all_old = du.find_old_replica_sets(d, rs_list)
        new_rs = await self.get_new_replica_set(d, rs_list, all_old, create=create)
        return new_rs, all_old

    async def get_new_replica_set(
        self, d: Object, rs_list: list[Object], old_rss: Sequence[Object], *, create: bool
    ) -> Object | None:
        """``getNewReplicaSet``: the ReplicaSet of the current template, its revision brought up to
        date (max old revision + 1); created if asked and missing."""
        namespace = str(meta(d).get("namespace") or "")
        existing = du.find_new_replica_set(d, rs_list)
        new_revision = du.max_revision(old_rss) + 1
        if existing is not None:
            update = du.existing_new_replica_set_update(d, existing, new_revision)
            if update is not None:
                updated = await self._replicasets(namespace).update(update)
                # Later steps of this sync must see the ReplicaSet as written (or they would conflict).
                rs_list[:] = [updated if uid_of(rs) == uid_of(updated) else rs for rs in rs_list]
                return updated
            revision = annotations_of(existing).get(du.REVISION_ANNOTATION, "")
            needs_update = self._set_revision(d, revision)
            if du.has_progress_deadline(d) and du.get_condition(status(d), du.PROGRESSING) is None:
                du.set_condition(
                    d.setdefault("status", {}),
                    du.new_condition(
                        du.PROGRESSING,
                        "True",
                        du.FOUND_NEW_RS_REASON,
                        f'Found new replica set "{name_of(existing)}"',
                        self.clock.now(),
                    ),
                )
                needs_update = True
            if needs_update:
                await self._update_status(d)
            return existing
        if not create:
            return None
        controller_ref = new_controller_ref(d, api_version=DEPLOYMENTS.api_version, kind=DEPLOYMENTS.kind)
        new_rs = du.new_replica_set(d, old_rss, new_revision, controller_ref=controller_ref)
        replicas = spec_replicas(new_rs)
        already_exists = False
        try:
            created = await self._replicasets(namespace).create(new_rs)
        except AlreadyExists:
            # A slow cache, or a hash collision: is it ours, with our template?
            already_exists = True
            found = self.replicasets.get_by_key(f"{namespace}/{name_of(new_rs)}")
            if found is None:
                found = await self._replicasets(namespace).get(name_of(new_rs))
            ref = controller_ref_of(found)
            if (
                ref is not None
                and ref.get("uid") == uid_of(d)
                and du.equal_ignore_hash(spec(d).get("template") or {}, spec(found).get("template") or {})
            ):
                created = deep_copy(found)
            else:
                current = status(d).get("collisionCount")
                d.setdefault("status", {})["collisionCount"] = (
                    current if isinstance(current, int) else 0
                ) + 1
                await self._update_status(d)
                raise
        except APIError as error:
            if any(cause.type == "NamespaceTerminating" for cause in error.causes):
                raise
            message = f'Failed to create new replica set "{name_of(new_rs)}": {error.message}'
            if du.has_progress_deadline(d):
                du.set_condition(
                    d.setdefault("status", {}),
                    du.new_condition(
                        du.PROGRESSING, "False", du.FAILED_RS_CREATE_REASON, message, self.clock.now()
                    ),
                )
                with contextlib.suppress(APIError, TransportError):  # the failed creation is the news
                    await self._update_status(d)
            self.recorder.event(d, EVENT_TYPE_WARNING, du.FAILED_RS_CREATE_REASON, message)
            raise
        if not already_exists and replicas > 0:
            self.recorder.eventf(
                d,
                EVENT_TYPE_NORMAL,
                SCALING_REPLICA_SET_REASON,
                "Scaled up replica set %s from 0 to %d",
                name_of(created),
                replicas,
            )
        needs_update = self._set_revision(d, str(new_revision))
        if not already_exists and du.has_progress_deadline(d):
            du.set_condition(
                d.setdefault("status", {}),
                du.new_condition(
                    du.PROGRESSING,
                    "True",
                    du.NEW_REPLICA_SET_REASON,
                    f'Created new replica set "{name_of(created)}"',
                    self.clock.now(),
                ),
            )
            needs_update = True
        if needs_update:
            await self._update_status(d)
        return created

    @staticmethod
    def _set_revision(d: Object, revision: str) -> bool:
        """``SetDeploymentRevision``: the Deployment carries its new ReplicaSet's revision."""
        annotations = meta(d).setdefault("annotations", {})
        if annotations.get(du.REVISION_ANNOTATION) == revision:
            return False
        annotations[du.REVISION_ANNOTATION] = revision
        return True

    async def _update_status(self, d: Object) -> None:
        """``UpdateStatus`` with the Deployment as it is in memory, keeping its resourceVersion current.

        The Deployment status strategy keeps annotation changes made through ``/status`` (it resets
        only spec and labels): that is how the revision annotation reaches the Deployment.
        """
        namespace = str(meta(d).get("namespace") or "")
        written = await self._deployments(namespace).update_status(d)
        meta(d)["resourceVersion"] = meta(written).get("resourceVersion")
        meta(d)["generation"] = meta(written).get("generation")

    # -- scaling -------------------------------------------------------------------------------------

    async def scale_replica_set(
        self, rs: Object, new_scale: int, d: Object, *, always: bool
    ) -> tuple[bool, Object]:
        """``scaleReplicaSet`` (``always``) / ``scaleReplicaSetAndRecordEvent``: write the new size and
        the replicas annotations; an Event when the size changed. Returns (scaled, the ReplicaSet)."""
        old_scale = spec_replicas(rs)
        if not always and old_scale == new_scale:
            return False, rs
        replicas = spec_replicas(d)
        maximum = replicas + du.max_surge(d)
        size_changed = old_scale != new_scale
        if not size_changed and not du.replicas_annotations_need_update(rs, replicas, maximum):
            return False, rs
        rs_copy = deep_copy(rs)
        rs_copy.setdefault("spec", {})["replicas"] = new_scale
        du.set_replicas_annotations(rs_copy, replicas, maximum)
        updated = await self._replicasets(str(meta(rs).get("namespace") or "")).update(rs_copy)
        if size_changed:
            direction = "up" if old_scale < new_scale else "down"
            self.recorder.eventf(
                d,
                EVENT_TYPE_NORMAL,
                SCALING_REPLICA_SET_REASON,
                "Scaled %s replica set %s from %d to %d",
                direction,
                name_of(updated),
                old_scale,
                new_scale,
            )
        return size_changed, updated

    async def apply_steps(self, d: Object, steps: Sequence[ScaleStep]) -> bool:
        """Carry out scale steps in order (a ReplicaSet scaled twice is written twice, as upstream)."""
        latest: dict[str, Object] = {}
        scaled = False
        for step in steps:
            rs = latest.get(uid_of(step.rs), step.rs)
            changed, latest[uid_of(step.rs)] = await self.scale_replica_set(
                rs, step.replicas, d, always=step.always
            )
            scaled = scaled or changed
        return scaled

    async def sync(self, d: Object, rs_list: list[Object]) -> None:
        """``sync``: scaling events and paused Deployments: resize, clean up when paused, status."""
        new_rs, old_rss = await self.get_all_replica_sets_and_sync_revision(d, rs_list, create=False)
        await self.apply_steps(d, du.scale_steps(d, new_rs, old_rss))
        if spec(d).get("paused"):
            await self.cleanup_deployment(old_rss, d)
        await self.sync_deployment_status([*old_rss, new_rs], new_rs, d)

    async def sync_status_only(self, d: Object, rs_list: list[Object]) -> None:
        new_rs, old_rss = await self.get_all_replica_sets_and_sync_revision(d, rs_list, create=False)
        await self.sync_deployment_status([*old_rss, new_rs], new_rs, d)

    async def sync_deployment_status(
        self, all_rss: Sequence[Object | None], new_rs: Object | None, d: Object
    ) -> None:
        """``syncDeploymentStatus``: the counts and ``Available``, without judging progress."""
        new_status = du.calculate_status(all_rss, new_rs, d, self.clock.now())
        if du.same_status(status(d), new_status):
            return
        d["status"] = new_status
        await self._update_status(d)

    async def check_paused_conditions(self, d: Object) -> None:
        new_status = du.paused_condition_status(d, self.clock.now())
        if new_status is not None:
            d["status"] = new_status
            await self._update_status(d)

    async def cleanup_deployment(self, old_rss: Sequence[Object], d: Object) -> None:
        """``cleanupDeployment``: delete old ReplicaSets beyond ``revisionHistoryLimit``."""
        for rs in du.replica_sets_to_clean_up(d, old_rss):
            with contextlib.suppress(NotFound):
                await self._replicasets(str(meta(rs).get("namespace") or "")).delete(name_of(rs))

    # -- rollouts ------------------------------------------------------------------------------------

    async def rollout_rolling(self, d: Object, rs_list: list[Object]) -> Result:
        """``rolloutRolling``: one step up, or else one step down, then status."""
        new_rs, old_rss = await self.get_all_replica_sets_and_sync_revision(d, rs_list, create=True)
        assert new_rs is not None
        all_rss: list[Object] = [*old_rss, new_rs]
        replicas = spec_replicas(d)
        # reconcileNewReplicaSet
        if spec_replicas(new_rs) != replicas:
            target = (
                replicas if spec_replicas(new_rs) > replicas else du.new_rs_new_replicas(d, all_rss, new_rs)
            )
            scaled, _ = await self.scale_replica_set(new_rs, target, d, always=False)
            if scaled:
                return await self.sync_rollout_status(all_rss, new_rs, d)
        # reconcileOldReplicaSets
        steps = du.old_replica_sets_scale_down(d, all_rss, du.filter_active(old_rss), new_rs)
        if await self.apply_steps(d, steps):
            return await self.sync_rollout_status(all_rss, new_rs, d)
        if du.deployment_complete(d, status(d)):
            await self.cleanup_deployment(old_rss, d)
        return await self.sync_rollout_status(all_rss, new_rs, d)

    async def rollout_recreate(
        self, d: Object, rs_list: list[Object], pod_map: Mapping[str, Sequence[Object]]
    ) -> Result:
        """``rolloutRecreate``: all old pods gone before the first new one is asked for."""
        new_rs, old_rss = await self.get_all_replica_sets_and_sync_revision(d, rs_list, create=False)
        all_rss: list[Object | None] = [*old_rss, new_rs]
        scaled_down = await self.apply_steps(d, [ScaleStep(rs, 0) for rs in du.filter_active(old_rss)])
        if scaled_down:
            return await self.sync_rollout_status(all_rss, new_rs, d)
        if du.old_pods_running(new_rs, old_rss, pod_map):
            return await self.sync_rollout_status(all_rss, new_rs, d)
        if new_rs is None:
            new_rs, old_rss = await self.get_all_replica_sets_and_sync_revision(d, rs_list, create=True)
            assert new_rs is not None
            all_rss = [*old_rss, new_rs]
        await self.scale_replica_set(new_rs, spec_replicas(d), d, always=False)
        if du.deployment_complete(d, status(d)):
            await self.cleanup_deployment(old_rss, d)
        return await self.sync_rollout_status(all_rss, new_rs, d)

    async def sync_rollout_status(
        self, all_rss: Sequence[Object | None], new_rs: Object | None, d: Object
    ) -> Result:
        """``syncRolloutStatus``: status with progress; if it is unchanged, when to check the deadline."""
        now = self.clock.now()
        new_status = du.rollout_status(d, all_rss, new_rs, now)
        if du.same_status(status(d), new_status):
            after = du.requeue_stuck_deployment(d, new_status, now)
            if after is None:
                return Result()
            if after == du.REQUEUE_NOW:
                return Result(requeue=True)
            return Result(requeue_after=after)
        d["status"] = new_status
        await self._update_status(d)
        return Result()


def add_to_manager(manager: Manager, *, workers: int = 1) -> Controller:
    """Build the Deployment controller on ``manager``: for Deployments, woken by their ReplicaSets
    (orphans too, for adoption) and, for Recreate, by their pods."""
    reconciler = DeploymentReconciler(
        manager.client,
        deployments=manager.cache(DEPLOYMENTS),
        replicasets=manager.cache(REPLICASETS),
        pods=manager.cache(PODS),
        recorder=manager.event_recorder(COMPONENT),
        clock=manager.clock,
    )
    controller = manager.new_controller("deployment", reconciler, for_=DEPLOYMENTS, workers=workers)
    controller.watch(manager.informer_for(REPLICASETS), reconciler.requests_for_replica_set)
    controller.watch(manager.informer_for(PODS), reconciler.requests_for_pod)
    return controller
