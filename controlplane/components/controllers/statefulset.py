"""The StatefulSet controller: pods with stable names, created, updated and removed in ordinal order.

A StatefulSet's pods are ``<set>-0`` .. ``<set>-(replicas-1)``: a missing ordinal is recreated under
the same name, with the same hostname (and ``subdomain``, the governing Service), and the labels
``statefulset.kubernetes.io/pod-name`` and ``apps.kubernetes.io/pod-index``. On each sync the
controller (upstream ``pkg/controller/statefulset/stateful_set.go`` and ``stateful_set_control.go``):

1. **claims** the pods and ControllerRevisions that match the selector, as the other workload
   controllers do;
2. works out the **revisions** (``getStatefulSetRevisions``): the *update revision* is the
   ControllerRevision whose ``data`` is the current template (created ``<set>-<hash>`` if missing; an
   older one brought back by ``kubectl rollout undo`` is renumbered as the newest), the *current
   revision* the one ``status.currentRevision`` names. Pods carry their revision's name in the
   ``controller-revision-hash`` label;
3. sorts the pods into **replicas** (ordinal below ``replicas``) and **condemned** (the others), then
   processes the replicas in ordinal order: a finished pod (Failed or Succeeded) is deleted and
   recreated, a missing one is created from the current revision's template if its ordinal is below
   the ``partition``, else from the update revision's. With ``podManagementPolicy: OrderedReady`` the
   controller stops at the first pod that is not yet created, Running and Ready (and available for
   ``minReadySeconds``): pod *n* never starts before pods 0..*n-1* are up. Condemned pods are deleted
   from the highest ordinal down, one at a time, each only once every pod before it is healthy.
   ``Parallel`` does all of this at once;
4. with ``RollingUpdate``, once every replica is healthy, deletes the pods not at the update revision
   from the highest ordinal down to ``partition``, no more than ``maxUnavailable`` (default 1) unhealthy
   at a time; the next syncs recreate them at the new revision (``OnDelete``: only what someone deleted);
5. writes the **status** (``replicas``, ``readyReplicas``, ``availableReplicas``, ``currentReplicas``,
   ``updatedReplicas``, ``currentRevision``, ``updateRevision``, ``collisionCount``,
   ``observedGeneration``): a rollout is complete when every pod is updated and ready, and then the
   update revision becomes the current one; ``kubectl rollout status sts/x`` reads this;
6. deletes the oldest revisions beyond ``revisionHistoryLimit`` that neither a pod nor the status uses.

**Storage.** Each entry of ``volumeClaimTemplates`` gives every pod a PersistentVolumeClaim of its own,
``<template>-<set>-<ordinal>`` (``www-web-0``), created before the pod (and again while the pod is
Pending, if someone deleted it) and mounted as the volume named after the template. The claims
outlive their pods: pod ``web-0`` recreated gets ``www-web-0`` back, with its data (the retention
policy ``Retain``; ``Delete`` policies are stored but not acted on).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from controlplane.api.deepcopy import deep_copy
from controlplane.api.meta import Object
from controlplane.api.selectors import LabelSelector
from controlplane.client.cache import NAMESPACE_INDEX, DeletedFinalStateUnknown, Indexer
from controlplane.client.errors import AlreadyExists, APIError, NotFound, TransportError
from controlplane.client.informer import ResourceEventHandlerFuncs
from controlplane.client.manager import Kind, Manager
from controlplane.client.reconciler import Controller, Request, Result
from controlplane.client.record import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING, EventRecorder
from controlplane.client.rest import ResourceClient, RESTClient
from controlplane.clock import Clock
from controlplane.components.controllers.daemonsetutil import revision_patch
from controlplane.components.controllers.deploymentutil import (
    fnv32a,
    meta,
    name_of,
    safe_encode_string,
    scaled_value,
    spec,
    status,
    uid_of,
)
from controlplane.components.controllers.kinds import (
    CONTROLLER_REVISIONS,
    PERSISTENT_VOLUME_CLAIMS,
    PODS,
    STATEFULSETS,
)
from controlplane.components.controllers.podcontrol import (
    claim_dependents,
    controller_ref_of,
    error_text,
    is_pod_available,
    is_pod_ready,
    new_controller_ref,
    owner_still_there,
    plan_claims,
    pod_from_template,
    selector_of,
)

logger = logging.getLogger(__name__)

COMPONENT: Final = "statefulset-controller"
#: ``apps.StatefulSetRevisionLabel``: the name of the pod's revision.
REVISION_LABEL: Final = "controller-revision-hash"
#: ``apps.StatefulSetPodNameLabel`` and ``apps.PodIndexLabel``.
POD_NAME_LABEL: Final = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL: Final = "apps.kubernetes.io/pod-index"
ON_DELETE: Final = "OnDelete"
ROLLING_UPDATE: Final = "RollingUpdate"
PARALLEL: Final = "Parallel"

_ORDINAL_RE: Final = re.compile(r"^(.*)-([0-9]+)$")


# -- pure: identities, revisions, status ---------------------------------------------------------------


def replicas_of(sts: Mapping[str, Any]) -> int:
    value = spec(sts).get("replicas")
    return value if isinstance(value, int) else 1


def start_ordinal(sts: Mapping[str, Any]) -> int:
    """``getStartOrdinal``: ``spec.ordinals.start`` (0 by default)."""
    ordinals = spec(sts).get("ordinals")
    start = ordinals.get("start") if isinstance(ordinals, dict) else None
    return start if isinstance(start, int) else 0


def pod_name(sts: Mapping[str, Any], ordinal: int) -> str:
    """``getPodName``: ``<set>-<ordinal>``."""
    return f"{name_of(sts)}-{ordinal}"


def parent_and_ordinal(pod: Mapping[str, Any]) -> tuple[str, int]:
    """``getParentNameAndOrdinal``: ("", -1) for a name that is not ``<parent>-<n>``."""
    match = _ORDINAL_RE.match(name_of(pod))
    if match is None:
        return "", -1
    return match.group(1), int(match.group(2))


def is_member_of(sts: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """``isMemberOf``: the pod's name says it belongs to this set."""
    return parent_and_ordinal(pod)[0] == name_of(sts)


def identity_matches(sts: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """``identityMatches``: name, namespace and the identity labels are the ordinal's."""
    parent, ordinal = parent_and_ordinal(pod)
    labels = meta(pod).get("labels") or {}
    return (
        ordinal >= 0
        and parent == name_of(sts)
        and meta(pod).get("namespace") == meta(sts).get("namespace")
        and labels.get(POD_NAME_LABEL) == name_of(pod)
        and labels.get(POD_INDEX_LABEL) == str(ordinal)
    )


def revision_template(revision: Mapping[str, Any]) -> Object:
    """``ApplyRevision`` for the template: the revision's ``data`` replaces ``spec.template``."""
    template: Object = deep_copy(((revision.get("data") or {}).get("spec") or {}).get("template") or {})
    template.pop("$patch", None)
    return template


def claim_name(template_name: str, sts: Mapping[str, Any], ordinal: int) -> str:
    """``getPersistentVolumeClaimName``: ``<template>-<set>-<ordinal>``."""
    return f"{template_name}-{name_of(sts)}-{ordinal}"


def persistent_volume_claims(sts: Mapping[str, Any], ordinal: int) -> dict[str, Object]:
    """``getPersistentVolumeClaims``: the claims of one ordinal, by template name, labelled with the
    selector's ``matchLabels``."""
    match_labels = (spec(sts).get("selector") or {}).get("matchLabels") or {}
    claims: dict[str, Object] = {}
    for template in spec(sts).get("volumeClaimTemplates") or []:
        if not isinstance(template, dict):
            continue
        claim: Object = deep_copy(template)
        claim_meta = claim.setdefault("metadata", {})
        template_name = str(claim_meta.get("name") or "")
        claim_meta["name"] = claim_name(template_name, sts, ordinal)
        claim_meta["namespace"] = meta(sts).get("namespace")
        claim_meta["labels"] = {**(claim_meta.get("labels") or {}), **match_labels}
        claim.pop("status", None)
        claim["apiVersion"], claim["kind"] = "v1", "PersistentVolumeClaim"
        claims[template_name] = claim
    return claims


def update_storage(sts: Mapping[str, Any], pod: Object, ordinal: int) -> None:
    """``updateStorage``: a volume per claim template (replacing a template volume of that name)."""
    claims = persistent_volume_claims(sts, ordinal)
    if not claims:
        return
    volumes: list[Object] = [
        {"name": name, "persistentVolumeClaim": {"claimName": claim["metadata"]["name"]}}
        for name, claim in claims.items()
    ]
    volumes += [
        v for v in pod["spec"].get("volumes") or [] if isinstance(v, dict) and v.get("name") not in claims
    ]
    pod["spec"]["volumes"] = volumes


def new_stateful_set_pod(
    sts: Mapping[str, Any], template: Mapping[str, Any], ordinal: int, revision: str
) -> Object:
    """``newStatefulSetPod`` + ``setPodRevision``: the pod of ``ordinal`` from ``template``."""
    controller_ref = new_controller_ref(sts, api_version=STATEFULSETS.api_version, kind=STATEFULSETS.kind)
    pod = pod_from_template(template, sts, controller_ref)
    pod_meta = pod["metadata"]
    pod_meta.pop("generateName", None)
    pod_meta["name"] = pod_name(sts, ordinal)
    labels = pod_meta.setdefault("labels", {})
    labels[POD_NAME_LABEL] = pod_meta["name"]
    labels[POD_INDEX_LABEL] = str(ordinal)
    labels[REVISION_LABEL] = revision
    pod["spec"]["hostname"] = pod_meta["name"]
    service = spec(sts).get("serviceName")
    if service:
        pod["spec"]["subdomain"] = service
    update_storage(sts, pod, ordinal)
    return pod


def pod_revision(pod: Mapping[str, Any]) -> str:
    return str((meta(pod).get("labels") or {}).get(REVISION_LABEL) or "")


def is_created(pod: Mapping[str, Any]) -> bool:
    """``isCreated``: the API server gave it a phase (a new pod starts Pending)."""
    return bool(status(pod).get("phase"))


def is_terminating(pod: Mapping[str, Any]) -> bool:
    return bool(meta(pod).get("deletionTimestamp"))


def is_running_and_ready(pod: Mapping[str, Any]) -> bool:
    return status(pod).get("phase") == "Running" and is_pod_ready(pod)


def is_running_and_available(pod: Mapping[str, Any], min_ready_seconds: int, now: float) -> bool:
    return status(pod).get("phase") == "Running" and is_pod_available(pod, min_ready_seconds, now)


def is_healthy(pod: Mapping[str, Any]) -> bool:
    """``isHealthy``: Running, Ready and not being deleted."""
    return is_running_and_ready(pod) and not is_terminating(pod)


def min_ready_seconds(sts: Mapping[str, Any]) -> int:
    value = spec(sts).get("minReadySeconds")
    return value if isinstance(value, int) else 0


def hash_revision_data(data: Any, collision_count: int | None) -> str:
    """``HashControllerRevision``: FNV-32a of the data's JSON, then the collision count."""
    raw = json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()
    value = fnv32a(raw)
    if collision_count is not None:
        value = fnv32a((collision_count & 0xFFFFFFFF).to_bytes(4, "little"), value)
    return safe_encode_string(str(value))


def revision_number(revision: Mapping[str, Any]) -> int:
    value = revision.get("revision")
    return value if isinstance(value, int) else 0


def sort_revisions(revisions: Sequence[Object]) -> list[Object]:
    """``SortControllerRevisions``: by revision, then creation time, then name."""
    return sorted(
        revisions, key=lambda r: (revision_number(r), str(meta(r).get("creationTimestamp") or ""), name_of(r))
    )


def new_revision(sts: Mapping[str, Any], revision: int, collision_count: int) -> Object:
    """``newRevision`` / ``history.NewControllerRevision``: the revision of the set's current template."""
    data = revision_patch(sts)
    hash_ = hash_revision_data(data, collision_count)
    labels = dict(((spec(sts).get("template") or {}).get("metadata") or {}).get("labels") or {})
    labels[REVISION_LABEL] = hash_
    revision_meta: Object = {
        "name": f"{name_of(sts)[:223]}-{hash_}",
        "namespace": meta(sts).get("namespace"),
        "labels": labels,
        "ownerReferences": [
            new_controller_ref(sts, api_version=STATEFULSETS.api_version, kind=STATEFULSETS.kind)
        ],
    }
    if meta(sts).get("annotations"):
        revision_meta["annotations"] = dict(meta(sts)["annotations"])
    return {
        "apiVersion": CONTROLLER_REVISIONS.api_version,
        "kind": CONTROLLER_REVISIONS.kind,
        "metadata": revision_meta,
        "data": data,
        "revision": revision,
    }


def max_unavailable(sts: Mapping[str, Any]) -> int:
    """``getStatefulSetMaxUnavailable``: of ``replicas``, rounded up, at least 1."""
    rolling = (spec(sts).get("updateStrategy") or {}).get("rollingUpdate")
    value = rolling.get("maxUnavailable") if isinstance(rolling, dict) else None
    try:
        count = scaled_value(value if value is not None else 1, replicas_of(sts), round_up=True)
    except ValueError:
        count = 1
    return max(count, 1)


def partition(sts: Mapping[str, Any]) -> int:
    rolling = (spec(sts).get("updateStrategy") or {}).get("rollingUpdate")
    value = rolling.get("partition") if isinstance(rolling, dict) else None
    return value if isinstance(value, int) else 0


def compute_status(
    sts: Mapping[str, Any],
    pods: Sequence[Object],
    current_revision: str,
    update_revision: str,
    collision_count: int,
    now: float,
) -> Object:
    """``computeReplicaStatus`` + ``completeRollingUpdate``: the status to write."""
    replicas = ready = available = current = updated = 0
    min_ready = min_ready_seconds(sts)
    for pod in pods:
        if is_created(pod):
            replicas += 1
        if is_running_and_ready(pod):
            ready += 1
            if is_running_and_available(pod, min_ready, now):
                available += 1
        if is_created(pod) and not is_terminating(pod):
            if pod_revision(pod) == current_revision:
                current += 1
            if pod_revision(pod) == update_revision:
                updated += 1
    is_rolling = (spec(sts).get("updateStrategy") or {}).get("type") == ROLLING_UPDATE
    if is_rolling and updated == replicas and ready == replicas:
        current, current_revision = updated, update_revision
    new_status: Object = {
        "observedGeneration": meta(sts).get("generation") or 0,
        "replicas": replicas,
        "readyReplicas": ready,
        "currentReplicas": current,
        "updatedReplicas": updated,
        "currentRevision": current_revision,
        "updateRevision": update_revision,
        "collisionCount": collision_count,
        "availableReplicas": available,
    }
    # Go's omitempty: zero counts other than replicas and availableReplicas are left out.
    for key in ("observedGeneration", "readyReplicas", "currentReplicas", "updatedReplicas"):
        if not new_status[key]:
            del new_status[key]
    conditions = status(sts).get("conditions")
    if conditions:
        new_status["conditions"] = conditions
    return new_status


class ClaimBeingDeleted(Exception):
    """A pod's PersistentVolumeClaim is being deleted: the pod waits (the sync is retried)."""


# -- the reconciler ----------------------------------------------------------------------------------


class StatefulSetReconciler:
    """One StatefulSet per reconcile (``syncStatefulSet``)."""

    def __init__(
        self,
        client: RESTClient,
        *,
        statefulsets: Indexer,
        pods: Indexer,
        revisions: Indexer,
        claims: Indexer,
        recorder: EventRecorder,
        clock: Clock,
    ) -> None:
        self.client = client
        self.statefulsets = statefulsets
        self.pods = pods
        self.revisions = revisions
        self.claims = claims
        self.recorder = recorder
        self.clock = clock

    def _client(self, kind: Kind, namespace: str) -> ResourceClient:
        return self.client.resource(kind.group, kind.version, kind.plural, namespace)

    async def reconcile(self, request: Request) -> Result:
        cached = self.statefulsets.get_by_key(request.key)
        if cached is None:
            return Result()
        sts = deep_copy(cached)
        selector = selector_of(sts)
        if selector is None:
            logger.error("%s: invalid selector %r", request.key, spec(sts).get("selector"))
            return Result()
        pods = await self._claim(
            sts,
            selector,
            PODS,
            self.pods.by_index(NAMESPACE_INDEX, request.namespace),
            member=lambda pod: is_member_of(sts, pod),
        )
        revisions = await self._claim(
            sts, selector, CONTROLLER_REVISIONS, self.revisions.by_index(NAMESPACE_INDEX, request.namespace)
        )
        revisions = sort_revisions(revisions)
        current, update, collision_count = await self.get_revisions(sts, revisions)
        new_status = await self.update_stateful_set(sts, current, update, collision_count, pods)
        await self.update_status(sts, new_status)
        await self.truncate_history(sts, pods, revisions, current, update)
        min_ready = min_ready_seconds(sts)
        if min_ready > 0 and new_status.get("availableReplicas", 0) != replicas_of(sts):
            return Result(requeue_after=float(min_ready))
        return Result()

    async def _claim(
        self,
        sts: Object,
        selector: LabelSelector,
        kind: Kind,
        candidates: Sequence[Object],
        *,
        member: Callable[[Object], bool] | None = None,
    ) -> list[Object]:
        """The controller ref manager for pods and revisions (adopt orphans, release strays). A pod
        must also be a ``member`` (named ``<set>-<n>``) to be adopted or kept (``ClaimPods``' filter)."""
        namespace = str(meta(sts).get("namespace") or "")
        plan = plan_claims(sts, selector, candidates)
        if member is not None:
            plan.adopt = [obj for obj in plan.adopt if member(obj)]
            plan.release += [obj for obj in plan.claimed if not member(obj)]
            plan.claimed = [obj for obj in plan.claimed if member(obj)]
        plan.claimed = [deep_copy(obj) for obj in plan.claimed]
        return await claim_dependents(
            sts,
            plan,
            self._client(kind, namespace),
            owner_kind=STATEFULSETS,
            may_adopt=lambda: owner_still_there(self._client(STATEFULSETS, namespace), sts),
        )

    # -- revisions -------------------------------------------------------------------------------------

    async def get_revisions(self, sts: Object, revisions: list[Object]) -> tuple[Object, Object, int]:
        """``getStatefulSetRevisions``: (current revision, update revision, collision count)."""
        namespace = str(meta(sts).get("namespace") or "")
        client = self._client(CONTROLLER_REVISIONS, namespace)
        count = status(sts).get("collisionCount")
        collision_count = count if isinstance(count, int) else 0
        next_number = (revision_number(revisions[-1]) + 1) if revisions else 1
        wanted = new_revision(sts, next_number, collision_count)
        equal = [r for r in revisions if r.get("data") == wanted["data"]]
        if equal and name_of(equal[-1]) == name_of(revisions[-1]):
            update = revisions[-1]  # the template has not changed since the latest revision
        elif equal:
            # A rollback: the old revision is renumbered as the newest.
            renumbered = deep_copy(equal[-1])
            renumbered["revision"] = next_number
            update = await client.update(renumbered)
            revisions[:] = [update if name_of(r) == name_of(update) else r for r in revisions]
        else:
            update, collision_count = await self._create_revision(sts, wanted, collision_count, client)
            revisions.append(update)
        current = next((r for r in revisions if name_of(r) == status(sts).get("currentRevision")), update)
        return current, update, collision_count

    async def _create_revision(
        self, sts: Object, revision: Object, collision_count: int, client: ResourceClient
    ) -> tuple[Object, int]:
        """``CreateControllerRevision``: a name taken by other data bumps the collision count.
        Returns the revision and the collision count it ended with."""
        while True:
            hash_ = hash_revision_data(revision["data"], collision_count)
            revision["metadata"]["name"] = f"{name_of(sts)[:223]}-{hash_}"
            try:
                return await client.create(revision), collision_count
            except AlreadyExists:
                existing = await client.get(revision["metadata"]["name"])
                if existing.get("data") == revision["data"]:
                    return existing, collision_count
                collision_count += 1

    async def truncate_history(
        self,
        sts: Object,
        pods: Sequence[Object],
        revisions: Sequence[Object],
        current: Object,
        update: Object,
    ) -> None:
        """``truncateHistory``: keep ``revisionHistoryLimit`` revisions besides the live ones."""
        live = {name_of(current), name_of(update)} | {pod_revision(pod) for pod in pods}
        history = [r for r in sort_revisions(list(revisions)) if name_of(r) not in live]
        limit = spec(sts).get("revisionHistoryLimit")
        excess = len(history) - (limit if isinstance(limit, int) else 10)
        if excess <= 0:
            return
        client = self._client(CONTROLLER_REVISIONS, str(meta(sts).get("namespace") or ""))
        for revision in history[:excess]:
            with contextlib.suppress(NotFound):
                await client.delete(name_of(revision))

    # -- pods ------------------------------------------------------------------------------------------

    def _event(self, sts: Object, verb: str, pod_name_: str, error: BaseException | None) -> None:
        """``recordPodEvent``: ``SuccessfulCreate`` "create Pod web-0 in StatefulSet web successful"."""
        if error is None:
            self.recorder.eventf(
                sts,
                EVENT_TYPE_NORMAL,
                f"Successful{verb.title()}",
                "%s Pod %s in StatefulSet %s successful",
                verb,
                pod_name_,
                name_of(sts),
            )
        else:
            self.recorder.eventf(
                sts,
                EVENT_TYPE_WARNING,
                f"Failed{verb.title()}",
                "%s Pod %s in StatefulSet %s failed error: %s",
                verb,
                pod_name_,
                name_of(sts),
                error_text(error),
            )

    async def create_missing_claims(self, sts: Object, pod: Object) -> None:
        """``createPersistentVolumeClaims``: the pod's claims that do not exist yet; a claim being
        deleted blocks the pod until it is gone (its data must not be mounted on its way out)."""
        namespace = str(meta(sts).get("namespace") or "")
        client = self._client(PERSISTENT_VOLUME_CLAIMS, namespace)
        for claim in persistent_volume_claims(sts, parent_and_ordinal(pod)[1]).values():
            name = claim["metadata"]["name"]
            existing = self.claims.get_by_key(f"{namespace}/{name}")
            if existing is not None:
                if meta(existing).get("deletionTimestamp"):
                    raise ClaimBeingDeleted(f"pvc {name} is being deleted")
                continue
            try:
                await client.create(claim)
            except AlreadyExists:
                continue
            except (APIError, TransportError) as error:
                self.recorder.eventf(
                    sts,
                    EVENT_TYPE_WARNING,
                    "FailedCreate",
                    "create Claim %s for Pod %s in StatefulSet %s failed error: %s",
                    name,
                    name_of(pod),
                    name_of(sts),
                    error_text(error),
                )
                raise
            self.recorder.eventf(
                sts,
                EVENT_TYPE_NORMAL,
                "SuccessfulCreate",
                "create Claim %s Pod %s in StatefulSet %s success",
                name,
                name_of(pod),
                name_of(sts),
            )

    async def _create_pod(self, sts: Object, pod: Object) -> None:
        await self.create_missing_claims(sts, pod)
        try:
            await self._client(PODS, str(meta(sts).get("namespace") or "")).create(pod)
        except (APIError, TransportError) as error:
            if not isinstance(error, AlreadyExists):
                self._event(sts, "create", name_of(pod), error)
            raise
        self._event(sts, "create", name_of(pod), None)

    async def _delete_pod(self, sts: Object, pod: Object) -> None:
        try:
            await self._client(PODS, str(meta(sts).get("namespace") or "")).delete(name_of(pod))
        except NotFound:
            return
        except (APIError, TransportError) as error:
            self._event(sts, "delete", name_of(pod), error)
            raise
        self._event(sts, "delete", name_of(pod), None)

    async def update_stateful_set(
        self, sts: Object, current: Object, update: Object, collision_count: int, pods: Sequence[Object]
    ) -> Object:
        """``updateStatefulSet``: replicas in order, condemned pods down, then one rollout step."""
        now = self.clock.now()
        current_template, update_template = revision_template(current), revision_template(update)
        current_name, update_name = name_of(current), name_of(update)
        start, count = start_ordinal(sts), replicas_of(sts)
        replicas: list[Object | None] = [None] * count
        condemned: list[Object] = []
        for pod in pods:
            ordinal = parent_and_ordinal(pod)[1]
            if start <= ordinal < start + count:
                replicas[ordinal - start] = pod
            elif ordinal >= 0:
                condemned.append(pod)
        condemned.sort(key=lambda p: parent_and_ordinal(p)[1], reverse=True)
        is_rolling = (spec(sts).get("updateStrategy") or {}).get("type") == ROLLING_UPDATE
        current_replicas = status(sts).get("currentReplicas") or 0

        def versioned_pod(ordinal: int) -> Object:
            """``newVersionedStatefulSetPod``: ordinals below the partition stay at the current revision."""
            rolling = (spec(sts).get("updateStrategy") or {}).get("rollingUpdate")
            below = (
                ordinal < start + partition(sts)
                if isinstance(rolling, dict)
                else ordinal < start + current_replicas
            )
            if is_rolling and below:
                return new_stateful_set_pod(sts, current_template, ordinal, current_name)
            return new_stateful_set_pod(sts, update_template, ordinal, update_name)

        for i in range(count):
            if replicas[i] is None:
                replicas[i] = versioned_pod(start + i)
        live: list[Object] = [pod for pod in replicas if pod is not None]
        first_unhealthy = next((p for p in live if not is_healthy(p)), None)
        if first_unhealthy is None:
            first_unhealthy = next((p for p in reversed(condemned) if not is_healthy(p)), None)

        def result() -> Object:
            return compute_status(
                sts,
                [p for p in live if is_created(p)] + condemned,
                current_name,
                update_name,
                collision_count,
                now,
            )

        if meta(sts).get("deletionTimestamp"):
            return result()
        monotonic = spec(sts).get("podManagementPolicy") != PARALLEL
        min_ready = min_ready_seconds(sts)

        async def process_replica(i: int) -> bool:
            """``processReplica``: True to stop here (monotonic: wait for this pod)."""
            pod = live[i]
            if status(pod).get("phase") in ("Failed", "Succeeded"):
                failed = status(pod).get("phase") == "Failed"
                self.recorder.eventf(
                    sts,
                    EVENT_TYPE_WARNING if failed else EVENT_TYPE_NORMAL,
                    "RecreatingFailedPod" if failed else "RecreatingTerminatedPod",
                    "StatefulSet %s/%s is recreating %s Pod %s",
                    meta(sts).get("namespace"),
                    name_of(sts),
                    "failed" if failed else "terminated",
                    name_of(pod),
                )
                await self._delete_pod(sts, pod)
                live[i] = pod = versioned_pod(start + i)
            if not is_created(pod):
                await self._create_pod(sts, pod)
                return monotonic
            if status(pod).get("phase") == "Pending":
                await self.create_missing_claims(sts, pod)  # a claim deleted under a waiting pod
            if is_terminating(pod) and monotonic:
                return True
            if not is_running_and_ready(pod) and monotonic:
                return True
            if not is_running_and_available(pod, min_ready, now) and monotonic:
                return True
            if not identity_matches(sts, pod):
                fixed = deep_copy(pod)
                labels = meta(fixed).setdefault("labels", {})
                labels[POD_NAME_LABEL] = name_of(fixed)
                labels[POD_INDEX_LABEL] = str(parent_and_ordinal(fixed)[1])
                await self._client(PODS, str(meta(sts).get("namespace") or "")).update(fixed)
            return False

        async def process_condemned(i: int) -> bool:
            """``processCondemned``: delete from the top; monotonic waits for the ones before."""
            pod = condemned[i]
            if is_terminating(pod):
                return monotonic
            if monotonic and pod is not first_unhealthy and not is_running_and_available(pod, min_ready, now):
                return True
            await self._delete_pod(sts, pod)
            return True

        if await self._run_for_all(len(live), process_replica, monotonic):
            return result()
        if await self._run_for_all(len(condemned), process_condemned, monotonic):
            return result()
        new_status = result()
        if not is_rolling:
            return new_status
        # updateStatefulSetAfterInvariantEstablished (MaxUnavailableStatefulSet).
        allowed = max_unavailable(sts) - sum(1 for pod in live if not is_healthy(pod))
        for target in range(len(live) - 1, partition(sts) - 1, -1):
            if allowed <= 0:
                break
            pod = live[target]
            if pod_revision(pod) != update_name and not is_terminating(pod):
                await self._delete_pod(sts, pod)
                allowed -= 1
                if new_status.get("currentReplicas"):
                    new_status["currentReplicas"] -= 1
        return new_status

    @staticmethod
    async def _run_for_all(count: int, fn: Callable[[int], Any], monotonic: bool) -> bool:
        """``runForAll``: in order, stopping when asked (monotonic); or all at once."""
        if monotonic:
            for i in range(count):
                if await fn(i):
                    return True
            return False
        results = await asyncio.gather(*(fn(i) for i in range(count)), return_exceptions=True)
        for outcome in results:
            if isinstance(outcome, BaseException):
                raise outcome
        return False

    async def update_status(self, sts: Object, new_status: Object) -> None:
        """``updateStatefulSetStatus``: written only when it differs (one retry after a fresh read)."""
        if new_status == status(sts):
            return
        client = self._client(STATEFULSETS, str(meta(sts).get("namespace") or ""))
        body = {**sts, "status": new_status}
        for attempt in range(2):
            try:
                await client.update_status(body)
                return
            except NotFound:
                return
            except (APIError, TransportError):
                if attempt:
                    raise
                body = {**(await client.get(name_of(sts))), "status": new_status}

    # -- waking StatefulSets ---------------------------------------------------------------------------

    def _request(self, sts: Mapping[str, Any]) -> Request:
        return Request(str(meta(sts).get("namespace") or ""), name_of(sts))

    def _resolve(self, namespace: str, ref: Mapping[str, Any]) -> Object | None:
        if (
            ref.get("kind") != STATEFULSETS.kind
            or str(ref.get("apiVersion", "")).rpartition("/")[0] != "apps"
        ):
            return None
        sts = self.statefulsets.get_by_key(f"{namespace}/{ref.get('name')}")
        return sts if sts is not None and uid_of(sts) == ref.get("uid") else None

    def requests_for(self, obj: Mapping[str, Any]) -> list[Request]:
        """A pod or revision wakes its StatefulSet; an orphan, every set whose selector matches it."""
        namespace = str(meta(obj).get("namespace") or "")
        ref = controller_ref_of(obj)
        if ref is not None:
            sts = self._resolve(namespace, ref)
            return [] if sts is None else [self._request(sts)]
        labels = meta(obj).get("labels") or {}
        found = []
        for sts in self.statefulsets.by_index(NAMESPACE_INDEX, namespace):
            selector = selector_of(sts)
            if selector is not None and not selector.empty and selector.matches(labels):
                found.append(self._request(sts))
        return found

    def pod_event_handler(
        self, enqueue: Callable[[Request], None], enqueue_after: Callable[[Request, float], None]
    ) -> ResourceEventHandlerFuncs:
        """``addPod``/``updatePod``/``deletePod`` (a pod that became ready with ``minReadySeconds`` is
        looked at again once it counts as available)."""

        def on_add(pod: Object) -> None:
            for request in self.requests_for(pod):
                enqueue(request)

        def on_update(old: Object, cur: Object) -> None:
            if meta(old).get("resourceVersion") == meta(cur).get("resourceVersion"):
                return
            requests = self.requests_for(cur)
            if (controller_ref_of(old) or {}).get("uid") != (controller_ref_of(cur) or {}).get("uid"):
                requests += self.requests_for(old)
            for request in requests:
                enqueue(request)
                sts = self.statefulsets.get_by_key(request.key)
                min_ready = min_ready_seconds(sts) if sts is not None else 0
                if min_ready > 0 and not is_pod_ready(old) and is_pod_ready(cur):
                    enqueue_after(request, float(min_ready) + 1.0)

        def on_delete(obj: Object | DeletedFinalStateUnknown) -> None:
            pod = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
            if pod is None:
                return
            for request in self.requests_for(pod):
                enqueue(request)

        return ResourceEventHandlerFuncs(on_add, on_update, on_delete)


def add_to_manager(manager: Manager, *, workers: int = 1) -> Controller:
    """Build the StatefulSet controller on ``manager``: for StatefulSets, woken by their pods and
    ControllerRevisions."""
    reconciler = StatefulSetReconciler(
        manager.client,
        statefulsets=manager.cache(STATEFULSETS),
        pods=manager.cache(PODS),
        revisions=manager.cache(CONTROLLER_REVISIONS),
        claims=manager.cache(PERSISTENT_VOLUME_CLAIMS),
        recorder=manager.event_recorder(COMPONENT),
        clock=manager.clock,
    )
    controller = manager.new_controller("statefulset", reconciler, for_=STATEFULSETS, workers=workers)

    def enqueue_after(request: Request, delay: float) -> None:
        controller.queue.add_after(request, delay)

    manager.informer_for(PODS).add_event_handler(
        reconciler.pod_event_handler(controller.enqueue, enqueue_after)
    )
    controller.watch(manager.informer_for(CONTROLLER_REVISIONS), reconciler.requests_for)
    return controller


__all__ = ["COMPONENT", "StatefulSetReconciler", "add_to_manager", "compute_status", "new_stateful_set_pod"]
