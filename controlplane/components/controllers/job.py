"""The Job controller: run pods until enough of them succeed, or give up after too many failures.

A Job (``batch/v1``) wants ``completions`` pods to exit 0, with at most ``parallelism`` running at a
time. On each sync the controller (upstream ``pkg/controller/job/job_controller.go``, ``syncJob``):

1. **claims** the pods that match the Job's selector (the generated
   ``batch.kubernetes.io/controller-uid=<uid>``), as the ReplicaSet controller does;
2. **counts**. A Job keeps no list of its pods, and its pods may be deleted at any time (by a user,
   by the garbage collector, by a node going away), so a finished pod must be counted *before* it can
   disappear. Every pod it creates carries the finalizer ``batch.kubernetes.io/job-tracking``, which
   keeps the pod in the API until the controller lets go. Counting a finished pod is three steps,
   each one written before the next, so that a crash between two of them neither loses nor doubles
   a count: (a) put the pod's uid in ``status.uncountedTerminatedPods`` (a status write), (b) remove
   the pod's finalizer, (c) move the uid from the uncounted list into ``status.succeeded`` or
   ``status.failed`` (another status write). A pod that failed, or that is being deleted before it
   succeeded, counts as failed;
3. **decides**. More failures than ``backoffLimit`` (6 by default; with ``restartPolicy: OnFailure``,
   the containers' restarts count instead), or longer than ``activeDeadlineSeconds`` since
   ``status.startTime``: the Job fails. ``completions`` successes (or, without ``completions``, one
   success and nothing left running): it succeeds. Either way it first writes an *interim* condition
   (``FailureTarget`` with reason ``BackoffLimitExceeded`` or ``DeadlineExceeded``, or
   ``SuccessCriteriaMet`` with ``CompletionsReached``), deletes the pods still running, and only when
   every pod has been counted and none is terminating writes the *terminal* one, ``Failed`` or
   ``Complete`` (with ``status.completionTime``), and an Event (``Completed``/``BackoffLimitExceeded``);
4. otherwise **manages pods**: it wants ``min(parallelism, completions - succeeded)`` active pods and
   creates the missing ones in slow-start batches (``SuccessfulCreate`` "Created pod: j1-x"), after
   waiting out an exponential **backoff** when pods failed recently (10 s, then 20 s, 40 s ... up to
   6 minutes), or deletes the extra ones. A suspended Job (``spec.suspend: true``) has its pods
   deleted and a ``Suspended`` condition.

``status.active``, ``ready`` and ``terminating`` are written on every change; ``startTime`` when the
Job first runs. As the ReplicaSet controller does, it keeps **expectations** (creations and deletions
it has asked for but not yet seen in its cache), and also the finalizer removals it has asked for,
so that a stale cache never makes it count a pod twice.

Pods whose Job is gone or finished (an orphan with the tracking finalizer: the Job was deleted while
its pods ran) would stay forever: a second queue (``OrphanPodReconciler``) removes their finalizer.

Left out from upstream: Indexed completion mode (``completionMode: Indexed`` Jobs are not acted on),
pod failure policies and success policies (their fields are stored and validated, not acted on).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from controlplane.api.deepcopy import deep_copy
from controlplane.api.meta import Object, format_time, object_key, parse_timestamp
from controlplane.api.selectors import LabelSelector
from controlplane.api.strategies.batch import JOB_TRACKING_FINALIZER
from controlplane.client.cache import NAMESPACE_INDEX, DeletedFinalStateUnknown, Indexer
from controlplane.client.errors import APIError, NotFound, TransportError
from controlplane.client.informer import ResourceEventHandlerFuncs
from controlplane.client.manager import Kind, Manager
from controlplane.client.reconciler import Controller, Request, Result
from controlplane.client.record import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING, EventRecorder
from controlplane.client.rest import PatchType, RESTClient
from controlplane.clock import Clock
from controlplane.components.controllers.deploymentutil import meta, name_of, spec, status, uid_of
from controlplane.components.controllers.kinds import JOBS, PODS
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
    is_pod_active,
    is_pod_ready,
    is_pod_terminating,
    new_controller_ref,
    owner_still_there,
    plan_claims,
    pod_from_template,
    release_patch,
    resolve_controller_ref,
    selector_of,
    slow_start_batch,
)

logger = logging.getLogger(__name__)

#: The component name on its Events (upstream's ``job-controller``).
COMPONENT: Final = "job-controller"
#: The value of ``spec.managedBy`` that means this controller (unset means it too).
MANAGED_BY: Final = "kubernetes.io/job-controller"
#: The first wait after a pod failure, doubled per further failure up to the maximum.
DEFAULT_POD_FAILURE_BACKOFF: Final = 10.0
MAX_POD_FAILURE_BACKOFF: Final = 6 * 60.0
#: At most this many uids in ``uncountedTerminatedPods`` per sync (``MaxUncountedPods``).
MAX_UNCOUNTED_PODS: Final = 500
#: At most this many pods created or deleted per sync (``MaxPodCreateDeletePerSync``).
MAX_POD_CREATE_DELETE_PER_SYNC: Final = 500

# Condition types and reasons (k8s.io/api/batch/v1 types.go).
COMPLETE: Final = "Complete"
FAILED: Final = "Failed"
SUSPENDED: Final = "Suspended"
FAILURE_TARGET: Final = "FailureTarget"
SUCCESS_CRITERIA_MET: Final = "SuccessCriteriaMet"
REASON_BACKOFF_LIMIT_EXCEEDED: Final = "BackoffLimitExceeded"
REASON_DEADLINE_EXCEEDED: Final = "DeadlineExceeded"
REASON_COMPLETIONS_REACHED: Final = "CompletionsReached"
MESSAGE_BACKOFF_LIMIT: Final = "Job has reached the specified backoff limit"
MESSAGE_DEADLINE: Final = "Job was active longer than specified deadline"
MESSAGE_COMPLETIONS: Final = "Reached expected number of succeeded pods"


# -- pure helpers ------------------------------------------------------------------------------------


def has_tracking_finalizer(pod: Mapping[str, Any]) -> bool:
    return JOB_TRACKING_FINALIZER in (meta(pod).get("finalizers") or [])


def find_condition(job: Mapping[str, Any], condition_type: str) -> Object | None:
    for condition in status(job).get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == condition_type:
            return condition
    return None


def condition_true(job: Mapping[str, Any], condition_type: str) -> bool:
    condition = find_condition(job, condition_type)
    return condition is not None and condition.get("status") == "True"


def is_job_finished(job: Mapping[str, Any]) -> bool:
    """``IsJobFinished``: a ``Complete`` or ``Failed`` condition that is True."""
    return condition_true(job, COMPLETE) or condition_true(job, FAILED)


def finished_condition(job: Mapping[str, Any]) -> Object | None:
    """The True ``Complete`` or ``Failed`` condition, if the Job has finished."""
    for condition in status(job).get("conditions") or []:
        if condition.get("type") in (COMPLETE, FAILED) and condition.get("status") == "True":
            return dict(condition)
    return None


def new_condition(
    condition_type: str, condition_status: str, reason: str, message: str, now: float
) -> Object:
    """``newCondition``: probe and transition times both now; reason and message left out when empty."""
    stamp = format_time(now)
    condition: Object = {
        "type": condition_type,
        "status": condition_status,
        "lastProbeTime": stamp,
        "lastTransitionTime": stamp,
    }
    if reason:
        condition["reason"] = reason
    if message:
        condition["message"] = message
    return condition


def ensure_condition(
    conditions: list[Object],
    condition_type: str,
    condition_status: str,
    reason: str,
    message: str,
    now: float,
) -> bool:
    """``ensureJobConditionStatus``: set the condition (a new False one is not added); True if changed."""
    for i, condition in enumerate(conditions):
        if condition.get("type") == condition_type:
            if (
                condition.get("status") != condition_status
                or condition.get("reason", "") != reason
                or condition.get("message", "") != message
            ):
                conditions[i] = new_condition(condition_type, condition_status, reason, message, now)
                return True
            return False
    if condition_status != "False":
        conditions.append(new_condition(condition_type, condition_status, reason, message, now))
        return True
    return False


def is_suspended(job: Mapping[str, Any]) -> bool:
    return spec(job).get("suspend") is True


def only_replace_failed_pods(job: Mapping[str, Any]) -> bool:
    """``onlyReplaceFailedPods``: replacements wait for a pod to be Failed, not merely terminating."""
    return spec(job).get("podReplacementPolicy") == "Failed" or spec(job).get("podFailurePolicy") is not None


def is_pod_failed(pod: Mapping[str, Any], job: Mapping[str, Any]) -> bool:
    """``isPodFailed``: Failed, or (unless only failed pods are replaced) deleted before it succeeded."""
    phase = status(pod).get("phase")
    if phase == "Failed":
        return True
    if only_replace_failed_pods(job):
        return False
    return bool(meta(pod).get("deletionTimestamp")) and phase != "Succeeded"


def finished_time(pod: Mapping[str, Any]) -> float:
    """``getFinishedTime``: the last container's end, else the deletion or the creation time."""
    ends = [
        parse_timestamp(((cs.get("state") or {}).get("terminated") or {}).get("finishedAt"))
        for cs in status(pod).get("containerStatuses") or []
    ]
    known = [end for end in ends if end is not None]
    if known:
        return max(known)
    deleted = parse_timestamp(meta(pod).get("deletionTimestamp"))
    if deleted is not None:
        return deleted
    return parse_timestamp(meta(pod).get("creationTimestamp")) or 0.0


def past_backoff_limit_on_failure(job: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]) -> bool:
    """``pastBackoffLimitOnFailure``: with ``OnFailure`` the kubelet restarts containers in place, so
    the restarts of the running pods' containers are what count against ``backoffLimit``."""
    template_spec = (spec(job).get("template") or {}).get("spec") or {}
    if template_spec.get("restartPolicy") != "OnFailure":
        return False
    restarts = 0
    for pod in pods:
        if status(pod).get("phase") in ("Running", "Pending"):
            for field_name in ("initContainerStatuses", "containerStatuses"):
                restarts += sum(int(cs.get("restartCount") or 0) for cs in status(pod).get(field_name) or [])
    limit = int(spec(job).get("backoffLimit") or 0)
    return restarts > 0 if limit == 0 else restarts >= limit


def remove_finalizer_patch(pod: Mapping[str, Any]) -> Object | None:
    """``removeTrackingFinalizerPatch``: a strategic merge patch, guarded by the pod's uid."""
    if not has_tracking_finalizer(pod):
        return None
    return {
        "metadata": {
            "$deleteFromPrimitiveList/finalizers": [JOB_TRACKING_FINALIZER],
            "uid": uid_of(pod),
        }
    }


# -- backoff -----------------------------------------------------------------------------------------


@dataclass
class BackoffRecord:
    """``backoffRecord``: failures since the last success, and when the last of them happened."""

    failures_after_last_success: int = 0
    last_failure_time: float | None = None

    def remaining(self, now: float) -> float:
        """``getRemainingTime``: 10 s after one failure, doubled per further failure, at most 6 min."""
        if self.failures_after_last_success == 0 or self.last_failure_time is None:
            return 0.0
        delay = DEFAULT_POD_FAILURE_BACKOFF
        for _ in range(1, self.failures_after_last_success):
            delay *= 2
            if delay >= MAX_POD_FAILURE_BACKOFF:
                delay = MAX_POD_FAILURE_BACKOFF
                break
        elapsed = now - self.last_failure_time
        return 0.0 if delay < elapsed else delay - elapsed


def next_backoff(old: BackoffRecord, succeeded: Sequence[Object], failed: Sequence[Object]) -> BackoffRecord:
    """``newBackoffRecord``: a success resets the count; failures after the last success add to it."""
    record = BackoffRecord(old.failures_after_last_success, old.last_failure_time)
    failed_times = sorted(finished_time(p) for p in failed)
    if not succeeded:
        if failed_times:
            record.failures_after_last_success += len(failed_times)
            record.last_failure_time = failed_times[-1]
        return record
    record = BackoffRecord()
    last_success = max(finished_time(p) for p in succeeded)
    for failed_at in reversed(failed_times):
        if failed_at <= last_success:
            break
        if record.last_failure_time is None:
            record.last_failure_time = failed_at
        record.failures_after_last_success += 1
    return record


# -- finalizer expectations --------------------------------------------------------------------------


class FinalizerExpectations:
    """``uidTrackingExpectations``: pods whose finalizer removal was asked for and not yet seen.

    Until the cache shows a pod without its finalizer, a sync would take it for a pod still to be
    counted; these uids are skipped.
    """

    def __init__(self) -> None:
        self._store: dict[str, set[str]] = {}

    def expected(self, key: str) -> frozenset[str]:
        return frozenset(self._store.get(key, ()))

    def expect_removed(self, key: str, uids: Iterable[str]) -> None:
        self._store.setdefault(key, set()).update(uids)

    def observed(self, key: str, uid: str) -> None:
        pending = self._store.get(key)
        if pending is not None:
            pending.discard(uid)
            if not pending:
                del self._store[key]

    def delete(self, key: str) -> None:
        self._store.pop(key, None)


# -- one sync ----------------------------------------------------------------------------------------


@dataclass
class SyncContext:
    """``syncJobCtx``: what one sync knows about the Job and its pods."""

    job: Object
    pods: list[Object]
    active_pods: list[Object]
    ready: int
    terminating: int
    uncounted_succeeded: set[str]
    uncounted_failed: set[str]
    expected_removals: frozenset[str]
    succeeded: int = 0
    failed: int = 0
    finished: Object | None = None
    backoff: BackoffRecord = field(default_factory=BackoffRecord)


def _uncounted(job: Object) -> Object:
    current = status(job).get("uncountedTerminatedPods")
    if not isinstance(current, dict):
        current = job.setdefault("status", {})["uncountedTerminatedPods"] = {}
    return current


def _set_count(job_status: Object, name: str, value: int) -> None:
    """An ``omitempty`` counter: left out when zero, as Go writes it."""
    if value:
        job_status[name] = value
    else:
        job_status.pop(name, None)


class JobReconciler:
    """One Job per reconcile: claim and count its pods, create or delete some, write its status."""

    def __init__(
        self,
        client: RESTClient,
        *,
        jobs: Indexer,
        pods: Indexer,
        recorder: EventRecorder,
        clock: Clock,
        expectations: ControllerExpectations | None = None,
        kind: Kind = JOBS,
    ) -> None:
        self.client = client
        self.jobs = jobs
        self.pods = pods
        self.recorder = recorder
        self.clock = clock
        self.expectations = expectations if expectations is not None else ControllerExpectations(clock)
        self.finalizer_expectations = FinalizerExpectations()
        self.backoff: dict[str, BackoffRecord] = {}
        self.kind = kind

    # -- clients -----------------------------------------------------------------------------------------

    def _pods_client(self, namespace: str) -> Any:
        return self.client.resource(PODS.group, PODS.version, PODS.plural, namespace)

    def _jobs_client(self, namespace: str) -> Any:
        return self.client.resource(self.kind.group, self.kind.version, self.kind.plural, namespace)

    # -- reconcile ---------------------------------------------------------------------------------------

    async def reconcile(self, request: Request) -> Result:
        """``syncJob``."""
        key = request.key
        cached = self.jobs.get_by_key(key)
        if cached is None:
            self.expectations.delete(key)
            self.finalizer_expectations.delete(key)
            self.backoff.pop(key, None)
            return Result()
        if spec(cached).get("managedBy") not in (None, MANAGED_BY):
            return Result()  # another controller manages this Job
        job = deep_copy(cached)
        if is_job_finished(job):
            self.backoff.pop(key, None)
            return Result()
        if spec(job).get("completionMode", "NonIndexed") != "NonIndexed":
            return Result()  # Indexed Jobs are not simulated
        selector = selector_of(job)
        if selector is None:
            logger.error("%s: invalid selector %r", key, spec(job).get("selector"))
            return Result()
        now = self.clock.now()
        job_status = job.setdefault("status", {})
        uncounted = _uncounted(job)
        # Expectations first: a pod that shows up after this check waits for the next sync.
        satisfied = self.expectations.satisfied(key)
        pods = await self.claim_pods(job, selector)
        active_pods = [p for p in pods if is_pod_active(p)]
        ctx = SyncContext(
            job=job,
            pods=pods,
            active_pods=active_pods,
            ready=sum(1 for p in active_pods if is_pod_ready(p)),
            terminating=sum(1 for p in pods if is_pod_terminating(p)),
            uncounted_succeeded=set(uncounted.get("succeeded") or []),
            uncounted_failed=set(uncounted.get("failed") or []),
            expected_removals=self.finalizer_expectations.expected(key),
        )
        active = len(active_pods)
        new_succeeded, new_failed = self.new_finished_pods(ctx)
        ctx.succeeded = (
            int(job_status.get("succeeded") or 0) + len(new_succeeded) + len(ctx.uncounted_succeeded)
        )
        ctx.failed = int(job_status.get("failed") or 0) + len(new_failed) + len(ctx.uncounted_failed)
        if job_status.get("startTime") is None and not is_suspended(job):
            job_status["startTime"] = format_time(now)
        ctx.backoff = next_backoff(self.backoff.get(key, BackoffRecord()), new_succeeded, new_failed)

        requeue_after: float | None = None
        backoff_limit = int(spec(job).get("backoffLimit") or 0)
        success = find_condition(job, SUCCESS_CRITERIA_MET)
        if success is not None and success.get("status") == "True":
            ctx.finished = dict(success)
        else:
            target = find_condition(job, FAILURE_TARGET)
            if target is not None and target.get("status") == "True":
                ctx.finished = new_condition(
                    FAILED, "True", str(target.get("reason") or ""), str(target.get("message") or ""), now
                )
        if ctx.finished is None:
            if ctx.failed > backoff_limit or past_backoff_limit_on_failure(job, pods):
                ctx.finished = new_condition(
                    FAILURE_TARGET, "True", REASON_BACKOFF_LIMIT_EXCEEDED, MESSAGE_BACKOFF_LIMIT, now
                )
            elif self.past_active_deadline(job):
                ctx.finished = new_condition(
                    FAILURE_TARGET, "True", REASON_DEADLINE_EXCEEDED, MESSAGE_DEADLINE, now
                )
            elif spec(job).get("activeDeadlineSeconds") is not None and not is_suspended(job):
                started = parse_timestamp(job_status.get("startTime")) or now
                requeue_after = float(spec(job)["activeDeadlineSeconds"]) - (now - started)

        manage_error: BaseException | None = None
        suspend_changed = False
        if ctx.finished is not None:
            deleted_ready, deleted, manage_error = await self.delete_active_pods(job, ctx.active_pods)
            if deleted != active or not satisfied:
                # Not finished yet: pods remain, or pods may exist that the cache does not show yet.
                ctx.finished = None
            active -= deleted
            ctx.terminating += deleted
            ctx.ready -= deleted_ready
        else:
            manage_called = False
            if satisfied and not meta(job).get("deletionTimestamp"):
                active, wait, manage_error = await self.manage_job(job, ctx)
                manage_called = True
                if wait is not None:
                    requeue_after = wait if requeue_after is None else min(requeue_after, wait)
            completions = spec(job).get("completions")
            if completions is None:
                # Any success means the work is done, once nothing runs any more.
                complete = ctx.succeeded > 0 and active == 0
            else:
                complete = ctx.succeeded >= int(completions) and active == 0
            if complete:
                ctx.finished = new_condition(
                    SUCCESS_CRITERIA_MET, "True", REASON_COMPLETIONS_REACHED, MESSAGE_COMPLETIONS, now
                )
            elif manage_called:
                conditions = job_status.setdefault("conditions", [])
                if is_suspended(job):
                    if ensure_condition(conditions, SUSPENDED, "True", "JobSuspended", "Job suspended", now):
                        suspend_changed = True
                        self.recorder.event(job, EVENT_TYPE_NORMAL, "Suspended", "Job suspended")
                elif ensure_condition(conditions, SUSPENDED, "False", "JobResumed", "Job resumed", now):
                    suspend_changed = True
                    self.recorder.event(job, EVENT_TYPE_NORMAL, "Resumed", "Job resumed")
                    # The deadline counts the time a Job runs without a pause.
                    job_status["startTime"] = format_time(now)
                if not conditions:
                    job_status.pop("conditions", None)

        needs_update = (
            suspend_changed
            or active != int(job_status.get("active") or 0)
            or job_status.get("ready") != ctx.ready
            or job_status.get("terminating") != ctx.terminating
            or cached.get("status", {}).get("startTime") != job_status.get("startTime")
        )
        _set_count(job_status, "active", active)
        job_status["ready"] = ctx.ready
        job_status["terminating"] = ctx.terminating
        await self.track_status_and_remove_finalizers(ctx, needs_update)
        if manage_error is not None:
            raise manage_error
        if requeue_after is not None and requeue_after <= 0:
            requeue_after = 0.001
        return Result(requeue_after=requeue_after)

    def past_active_deadline(self, job: Object) -> bool:
        """``pastActiveDeadline``: running (not suspended) for ``activeDeadlineSeconds`` or more."""
        deadline = spec(job).get("activeDeadlineSeconds")
        started = parse_timestamp(status(job).get("startTime"))
        if deadline is None or started is None or is_suspended(job):
            return False
        return self.clock.now() - started >= float(deadline)

    def new_finished_pods(self, ctx: SyncContext) -> tuple[list[Object], list[Object]]:
        """``getNewFinishedPods``: finished pods still carrying the finalizer and not yet uncounted."""
        succeeded, failed = [], []
        for pod in ctx.pods:
            uid = uid_of(pod)
            if not has_tracking_finalizer(pod) or uid in ctx.expected_removals:
                continue
            if status(pod).get("phase") == "Succeeded" and uid not in ctx.uncounted_succeeded:
                succeeded.append(pod)
            elif is_pod_failed(pod, ctx.job) and uid not in ctx.uncounted_failed:
                failed.append(pod)
        return succeeded, failed

    # -- pods ----------------------------------------------------------------------------------------------

    async def claim_pods(self, job: Object, selector: LabelSelector) -> list[Object]:
        """``getPodsForJob``: adopt matching orphans (with the finalizer), release ours that no longer
        match (taking the finalizer off)."""
        namespace = str(meta(job).get("namespace") or "")

        def adopting(pod: Object) -> Object:
            ref = new_controller_ref(job, api_version=self.kind.api_version, kind=self.kind.kind)
            return {
                "metadata": {
                    "ownerReferences": [ref],
                    "finalizers": [JOB_TRACKING_FINALIZER],
                    "uid": uid_of(pod),
                }
            }

        def releasing(pod: Object) -> Object:
            patch = release_patch(job, pod)
            if has_tracking_finalizer(pod):
                patch["metadata"]["$deleteFromPrimitiveList/finalizers"] = [JOB_TRACKING_FINALIZER]
            return patch

        return await claim_dependents(
            job,
            plan_claims(job, selector, self.pods.by_index(NAMESPACE_INDEX, namespace)),
            self._pods_client(namespace),
            owner_kind=self.kind,
            may_adopt=lambda: owner_still_there(self._jobs_client(namespace), job),
            adopting=adopting,
            releasing=releasing,
        )

    async def manage_job(
        self, job: Object, ctx: SyncContext
    ) -> tuple[int, float | None, BaseException | None]:
        """``manageJob``: (active pods, seconds to wait for the backoff or None, error)."""
        key = f"{meta(job).get('namespace')}/{name_of(job)}"
        active = len(ctx.active_pods)
        parallelism = int(spec(job).get("parallelism") or 0)
        if is_suspended(job):
            victims = ctx.active_pods
            if victims:
                self.expectations.expect_deletions(key, [object_key(p) for p in victims])
            removed_ready, removed, error = await self.delete_job_pods(job, key, victims)
            ctx.terminating += removed
            ctx.ready -= removed_ready
            return active - removed, None, error
        completions = spec(job).get("completions")
        if completions is None:
            # Without completions, one success ends the Job: let what runs run, start nothing new.
            want = active if ctx.succeeded > 0 else parallelism
        else:
            want = max(0, min(int(completions) - ctx.succeeded, parallelism))
        excess = max(0, active - want)
        if excess:
            victims = self.pods_for_removal(ctx.active_pods, excess)[:MAX_POD_CREATE_DELETE_PER_SYNC]
            self.expectations.expect_deletions(key, [object_key(p) for p in victims])
            removed_ready, removed, error = await self.delete_job_pods(job, key, victims)
            ctx.terminating += removed
            ctx.ready -= removed_ready
            return active - removed, None, error
        terminating = ctx.terminating if only_replace_failed_pods(job) else 0
        diff = want - terminating - active
        if diff <= 0:
            return active, None, None
        wait = ctx.backoff.remaining(self.clock.now())
        if wait > 0:
            return active, wait, None
        diff = min(diff, MAX_POD_CREATE_DELETE_PER_SYNC)
        self.expectations.expect_creations(key, diff)
        template = deep_copy(spec(job).get("template") or {})
        template_meta = template.setdefault("metadata", {})
        finalizers = list(template_meta.get("finalizers") or [])
        if JOB_TRACKING_FINALIZER not in finalizers:
            finalizers.append(JOB_TRACKING_FINALIZER)
        template_meta["finalizers"] = finalizers
        controller_ref = new_controller_ref(job, api_version=self.kind.api_version, kind=self.kind.kind)
        pods_client = self._pods_client(str(meta(job).get("namespace") or ""))

        async def create_one() -> None:
            try:
                created = await pods_client.create(pod_from_template(template, job, controller_ref))
            except APIError as error:
                if any(cause.type == "NamespaceTerminating" for cause in error.causes):
                    return  # every later create would fail too: the namespace is going away
                self.recorder.eventf(
                    job, EVENT_TYPE_WARNING, FAILED_CREATE_POD_REASON, "Error creating: %s", error.message
                )
                raise
            self.recorder.eventf(
                job, EVENT_TYPE_NORMAL, SUCCESSFUL_CREATE_POD_REASON, "Created pod: %s", name_of(created)
            )

        successes, error = await slow_start_batch(diff, SLOW_START_INITIAL_BATCH_SIZE, create_one)
        for _ in range(diff - successes):
            self.expectations.creation_observed(key)  # never to be seen
        return active + successes, None, error

    @staticmethod
    def pods_for_removal(active_pods: Sequence[Object], count: int) -> list[Object]:
        """``activePodsForRemoval``: the least advanced first (unscheduled, pending, not ready, newest)."""

        def rank(pod: Object) -> tuple[int, int, int, float]:
            phase_rank = {"Pending": 0, "Unknown": 1, "Running": 2}.get(str(status(pod).get("phase")), 0)
            created = parse_timestamp(meta(pod).get("creationTimestamp")) or 0.0
            return (
                1 if spec(pod).get("nodeName") else 0,
                phase_rank,
                1 if is_pod_ready(pod) else 0,
                -created,
            )

        return sorted(active_pods, key=rank)[:count]

    async def delete_job_pods(
        self, job: Object, key: str, pods: Sequence[Object]
    ) -> tuple[int, int, BaseException | None]:
        """``deleteJobPods``: pods the Job no longer wants. Their finalizer goes first: they are not
        failures, so they are not counted. Returns (ready ones deleted, deleted, first error)."""
        pods_client = self._pods_client(str(meta(job).get("namespace") or ""))

        async def delete_one(pod: Object) -> bool:
            try:
                patch = remove_finalizer_patch(pod)
                if patch is not None:
                    await pods_client.patch(name_of(pod), patch, patch_type=PatchType.STRATEGIC_MERGE)
                await pods_client.delete(name_of(pod))
            except NotFound:
                self.expectations.deletion_observed(key, object_key(pod))
                return True
            except (APIError, TransportError) as error:
                self.expectations.deletion_observed(key, object_key(pod))
                self.recorder.eventf(
                    job,
                    EVENT_TYPE_WARNING,
                    FAILED_DELETE_POD_REASON,
                    "Error deleting: %s",
                    error_text(error),
                )
                raise
            self.recorder.eventf(
                job, EVENT_TYPE_NORMAL, SUCCESSFUL_DELETE_POD_REASON, "Deleted pod: %s", name_of(pod)
            )
            return True

        return await self._delete_all(pods, delete_one)

    async def delete_active_pods(
        self, job: Object, pods: Sequence[Object]
    ) -> tuple[int, int, BaseException | None]:
        """``deleteActivePods``: a finished Job's running pods. Their finalizer stays: the next sync
        counts them as failed and lets them go."""
        pods_client = self._pods_client(str(meta(job).get("namespace") or ""))

        async def delete_one(pod: Object) -> bool:
            try:
                await pods_client.delete(name_of(pod))
            except NotFound:
                return True
            self.recorder.eventf(
                job, EVENT_TYPE_NORMAL, SUCCESSFUL_DELETE_POD_REASON, "Deleted pod: %s", name_of(pod)
            )
            return True

        return await self._delete_all(pods, delete_one)

    @staticmethod
    async def _delete_all(
        pods: Sequence[Object], delete_one: Callable[[Object], Any]
    ) -> tuple[int, int, BaseException | None]:
        results = await asyncio.gather(*(delete_one(pod) for pod in pods), return_exceptions=True)
        deleted = ready = 0
        error: BaseException | None = None
        for pod, result in zip(pods, results, strict=True):
            if isinstance(result, asyncio.CancelledError):
                raise result
            if isinstance(result, BaseException):
                error = error or result
                continue
            deleted += 1
            if is_pod_ready(pod):
                ready += 1
        return ready, deleted, error

    # -- counting ------------------------------------------------------------------------------------------

    async def track_status_and_remove_finalizers(self, ctx: SyncContext, needs_flush: bool) -> None:
        """``trackJobStatusAndRemoveFinalizers``: uncount finished pods, let them go, count them."""
        job = ctx.job
        key = f"{meta(job).get('namespace')}/{name_of(job)}"
        with_finalizer = {uid_of(p) for p in ctx.pods if has_tracking_finalizer(p)}
        if self._count_uncounted_without_finalizers(job, with_finalizer):
            needs_flush = True
        uncounted = _uncounted(job)
        to_release: list[Object] = []
        reached_max = False
        failing = ctx.finished is not None and ctx.finished.get("type") != SUCCESS_CRITERIA_MET
        for pod in ctx.pods:
            uid = uid_of(pod)
            if not has_tracking_finalizer(pod) or uid in ctx.expected_removals:
                continue  # counted in an earlier sync
            considered_failed = is_pod_failed(pod, job)
            if not (
                meta(pod).get("deletionTimestamp")
                or ctx.finished is not None
                or status(pod).get("phase") == "Succeeded"
                or considered_failed
            ):
                continue  # still running: its finalizer stays
            to_release.append(pod)
            if status(pod).get("phase") == "Succeeded" and uid not in ctx.uncounted_failed:
                if uid not in ctx.uncounted_succeeded:
                    needs_flush = True
                    ctx.uncounted_succeeded.add(uid)
                    uncounted.setdefault("succeeded", []).append(uid)
            elif (considered_failed or failing) and uid not in ctx.uncounted_failed:
                # When the Job has failed, every pod not yet finished counts as failed.
                needs_flush = True
                ctx.uncounted_failed.add(uid)
                uncounted.setdefault("failed", []).append(uid)
            if (
                len(uncounted.get("succeeded") or []) + len(uncounted.get("failed") or [])
                >= MAX_UNCOUNTED_PODS
            ):
                reached_max = True
                break
        job_status = job["status"]
        conditions = job_status.setdefault("conditions", [])
        now = self.clock.now()
        if ctx.finished is not None and ctx.finished.get("type") == FAILURE_TARGET:
            # The interim condition goes out before the finalizers do: it says why the pods are going.
            conditions.append(ctx.finished)
            needs_flush = True
            ctx.finished = new_condition(
                FAILED,
                "True",
                str(ctx.finished.get("reason") or ""),
                str(ctx.finished.get("message") or ""),
                now,
            )
        if ctx.finished is not None and ctx.finished.get("type") == SUCCESS_CRITERIA_MET:
            if find_condition(job, SUCCESS_CRITERIA_MET) is None:
                conditions.append(ctx.finished)
                needs_flush = True
            ctx.finished = new_condition(
                COMPLETE,
                "True",
                str(ctx.finished.get("reason") or ""),
                str(ctx.finished.get("message") or ""),
                now,
            )
        if not conditions:
            job_status.pop("conditions", None)
        job, needs_flush = await self._flush_and_release(ctx, to_release, with_finalizer, needs_flush)
        ctx.job = job
        finished = not reached_max and self._enact_finished(ctx)
        if finished:
            needs_flush = True
        if needs_flush:
            ctx.job = await self._update_status(ctx.job)
            if finished and ctx.finished is not None:
                self._record_finished(ctx.job, ctx.finished)
        self.backoff[key] = ctx.backoff

    async def _flush_and_release(
        self, ctx: SyncContext, to_release: Sequence[Object], with_finalizer: set[str], needs_flush: bool
    ) -> tuple[Object, bool]:
        """``flushUncountedAndRemoveFinalizers``: write the uncounted uids, then drop the finalizers."""
        job = ctx.job
        key = f"{meta(job).get('namespace')}/{name_of(job)}"
        if needs_flush:
            job = await self._update_status(job)
            self.backoff[key] = ctx.backoff
            needs_flush = False
        if to_release:
            removed, error = await self._remove_finalizers(key, to_release)
            with_finalizer -= removed
            if self._count_uncounted_without_finalizers(job, with_finalizer):
                needs_flush = True
            if error is not None:
                if needs_flush:
                    await self._update_status(job)  # keep the partial progress
                raise error
        elif self._count_uncounted_without_finalizers(job, with_finalizer):
            needs_flush = True
        return job, needs_flush

    async def _remove_finalizers(
        self, key: str, pods: Sequence[Object]
    ) -> tuple[set[str], BaseException | None]:
        """``removeTrackingFinalizerFromPods``: the uids whose finalizer is gone, and the first error."""
        self.finalizer_expectations.expect_removed(key, [uid_of(p) for p in pods])

        async def remove(pod: Object) -> str:
            patch = remove_finalizer_patch(pod)
            if patch is not None:
                try:
                    await self._pods_client(str(meta(pod).get("namespace") or "")).patch(
                        name_of(pod), patch, patch_type=PatchType.STRATEGIC_MERGE
                    )
                except NotFound:
                    self.finalizer_expectations.observed(key, uid_of(pod))
                except (APIError, TransportError):
                    self.finalizer_expectations.observed(key, uid_of(pod))
                    raise
            return uid_of(pod)

        results = await asyncio.gather(*(remove(pod) for pod in pods), return_exceptions=True)
        removed: set[str] = set()
        error: BaseException | None = None
        for result in results:
            if isinstance(result, asyncio.CancelledError):
                raise result
            if isinstance(result, BaseException):
                error = error or result
            else:
                removed.add(result)
        return removed, error

    @staticmethod
    def _count_uncounted_without_finalizers(job: Object, with_finalizer: set[str]) -> bool:
        """``cleanUncountedPodsWithoutFinalizers``: uncounted pods whose finalizer is gone are counted."""
        uncounted = _uncounted(job)
        job_status = job["status"]
        changed = False
        for field_name, counter in (("succeeded", "succeeded"), ("failed", "failed")):
            uids = list(uncounted.get(field_name) or [])
            kept = [uid for uid in uids if uid in with_finalizer]
            if len(kept) != len(uids):
                changed = True
                _set_count(job_status, counter, int(job_status.get(counter) or 0) + len(uids) - len(kept))
                if kept:
                    uncounted[field_name] = kept
                else:
                    uncounted.pop(field_name, None)
        return changed

    def _enact_finished(self, ctx: SyncContext) -> bool:
        """``enactJobFinished``: the terminal condition, once every pod is counted and none terminates."""
        if ctx.finished is None:
            return False
        uncounted = _uncounted(ctx.job)
        if uncounted.get("succeeded") or uncounted.get("failed"):
            return False
        if ctx.terminating > 0:
            return False
        job_status = ctx.job["status"]
        conditions = job_status.setdefault("conditions", [])
        finished = ctx.finished
        now = self.clock.now()
        ensure_condition(
            conditions,
            str(finished["type"]),
            str(finished["status"]),
            str(finished.get("reason") or ""),
            str(finished.get("message") or ""),
            now,
        )
        if finished["type"] == COMPLETE:
            job_status["completionTime"] = finished["lastTransitionTime"]
        return True

    def _record_finished(self, job: Object, finished: Mapping[str, Any]) -> None:
        """``recordJobFinished``: ``Completed``, or the failure's reason, as an Event."""
        if finished.get("type") == COMPLETE:
            completions = spec(job).get("completions")
            if completions is not None and int(status(job).get("succeeded") or 0) > int(completions):
                self.recorder.event(
                    job,
                    EVENT_TYPE_WARNING,
                    "TooManySucceededPods",
                    "Too many succeeded pods running after completion count reached",
                )
            self.recorder.event(job, EVENT_TYPE_NORMAL, "Completed", "Job completed")
        else:
            self.recorder.event(
                job, EVENT_TYPE_WARNING, str(finished.get("reason") or ""), str(finished.get("message") or "")
            )

    async def _update_status(self, job: Object) -> Object:
        """PUT ``jobs/status``; the answer carries the new resourceVersion for the next write."""
        written: Object = await self._jobs_client(str(meta(job).get("namespace") or "")).update_status(job)
        return written

    # -- pod events (addPod / updatePod / deletePod) -----------------------------------------------------

    def resolve_controller_ref(self, namespace: str, ref: Mapping[str, Any]) -> Object | None:
        return resolve_controller_ref(self.jobs, self.kind, namespace, ref)

    def pod_jobs(self, pod: Mapping[str, Any]) -> list[Object]:
        """``getPodJobs``: the Jobs whose selector matches an orphan pod."""
        labels = meta(pod).get("labels") or {}
        found = []
        for job in self.jobs.by_index(NAMESPACE_INDEX, str(meta(pod).get("namespace") or "")):
            selector = selector_of(job)
            if selector is not None and not selector.empty and selector.matches(labels):
                found.append(job)
        return found

    def pod_event_handler(
        self, enqueue: Callable[[Request], None], enqueue_orphan: Callable[[Request], None]
    ) -> ResourceEventHandlerFuncs:
        """The pod informer's handler: observe expectations, wake the Job, hand orphans over."""

        def request_for(obj: Mapping[str, Any]) -> Request:
            return Request(str(meta(obj).get("namespace") or ""), name_of(obj))

        def deleted(pod: Object, final: bool) -> None:
            ref = controller_ref_of(pod)
            if ref is None:
                if has_tracking_finalizer(pod):
                    enqueue_orphan(request_for(pod))
                return
            job = self.resolve_controller_ref(str(meta(pod).get("namespace") or ""), ref)
            if job is None or is_job_finished(job):
                if has_tracking_finalizer(pod):
                    enqueue_orphan(request_for(pod))
                return
            request = request_for(job)
            self.expectations.deletion_observed(request.key, object_key(pod))
            if final or not has_tracking_finalizer(pod):
                self.finalizer_expectations.observed(request.key, uid_of(pod))
            enqueue(request)

        def on_add(pod: Object) -> None:
            if meta(pod).get("deletionTimestamp"):
                deleted(pod, False)
                return
            ref = controller_ref_of(pod)
            if ref is not None:
                job = self.resolve_controller_ref(str(meta(pod).get("namespace") or ""), ref)
                if job is None:
                    if has_tracking_finalizer(pod):
                        enqueue_orphan(request_for(pod))
                    return
                request = request_for(job)
                self.expectations.creation_observed(request.key)
                enqueue(request)
                return
            if has_tracking_finalizer(pod):
                enqueue_orphan(request_for(pod))
            for job in self.pod_jobs(pod):
                enqueue(request_for(job))

        def on_update(old: Object, cur: Object) -> None:
            if meta(old).get("resourceVersion") == meta(cur).get("resourceVersion"):
                return
            if meta(cur).get("deletionTimestamp"):
                deleted(cur, False)
                return
            namespace = str(meta(cur).get("namespace") or "")
            finalizer_removed = not has_tracking_finalizer(cur)
            cur_ref, old_ref = controller_ref_of(cur), controller_ref_of(old)
            ref_changed = (cur_ref or {}).get("uid") != (old_ref or {}).get("uid")
            if ref_changed and old_ref is not None:
                old_job = self.resolve_controller_ref(namespace, old_ref)
                if old_job is not None:
                    if finalizer_removed:
                        self.finalizer_expectations.observed(request_for(old_job).key, uid_of(cur))
                    enqueue(request_for(old_job))
            if cur_ref is not None:
                job = self.resolve_controller_ref(namespace, cur_ref)
                if job is None:
                    if has_tracking_finalizer(cur):
                        enqueue_orphan(request_for(cur))
                    return
                if finalizer_removed:
                    self.finalizer_expectations.observed(request_for(job).key, uid_of(cur))
                enqueue(request_for(job))
                return
            if has_tracking_finalizer(cur):
                enqueue_orphan(request_for(cur))
            if (meta(old).get("labels") or {}) != (meta(cur).get("labels") or {}) or ref_changed:
                for job in self.pod_jobs(cur):
                    enqueue(request_for(job))

        def on_delete(obj: Object | DeletedFinalStateUnknown) -> None:
            pod = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
            if pod is not None:
                deleted(pod, True)

        return ResourceEventHandlerFuncs(on_add, on_update, on_delete)

    def job_event_handler(self, enqueue_orphan: Callable[[Request], None]) -> ResourceEventHandlerFuncs:
        """``deleteJob``'s ``cleanupPodFinalizers``: a deleted Job's pods lose their finalizer."""

        def on_delete(obj: Object | DeletedFinalStateUnknown) -> None:
            job = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
            if job is None:
                return
            namespace = str(meta(job).get("namespace") or "")
            for pod in self.pods.by_index(NAMESPACE_INDEX, namespace):
                ref = controller_ref_of(pod)
                if ref is not None and ref.get("uid") == uid_of(job) and has_tracking_finalizer(pod):
                    enqueue_orphan(Request(namespace, name_of(pod)))

        return ResourceEventHandlerFuncs(delete_func=on_delete)


class OrphanPodReconciler:
    """``syncOrphanPod``: remove the tracking finalizer of a pod no running Job will count."""

    def __init__(self, client: RESTClient, *, pods: Indexer, jobs: Indexer, kind: Kind = JOBS) -> None:
        self.client = client
        self.pods = pods
        self.jobs = jobs
        self.kind = kind

    async def reconcile(self, request: Request) -> Result:
        pod = self.pods.get_by_key(request.key)
        if pod is None or not has_tracking_finalizer(pod):
            return Result()
        ref = controller_ref_of(pod)
        if ref is not None:
            if ref.get("kind") != self.kind.kind or ref.get("apiVersion") != self.kind.api_version:
                return Result()  # some other controller's pod: not ours to touch
            job = self.jobs.get_by_key(f"{request.namespace}/{ref.get('name')}")
            if job is not None and uid_of(job) == ref.get("uid"):
                if spec(job).get("managedBy") not in (None, MANAGED_BY):
                    return Result()
                if not is_job_finished(job):
                    return Result()  # its Job still counts it
        patch = remove_finalizer_patch(pod)
        if patch is not None:
            with contextlib.suppress(NotFound):
                await self.client.resource(PODS.group, PODS.version, PODS.plural, request.namespace).patch(
                    request.name, patch, patch_type=PatchType.STRATEGIC_MERGE
                )
        return Result()


def add_to_manager(manager: Manager, *, workers: int = 1) -> Controller:
    """Build the Job controller on ``manager``: for Jobs, woken by their pods, with an orphan-pod queue."""
    reconciler = JobReconciler(
        manager.client,
        jobs=manager.cache(JOBS),
        pods=manager.cache(PODS),
        recorder=manager.event_recorder(COMPONENT),
        clock=manager.clock,
    )
    controller = manager.new_controller("job", reconciler, for_=JOBS, workers=workers)
    orphans = Controller(
        "job-orphan-pod",
        OrphanPodReconciler(manager.client, pods=manager.cache(PODS), jobs=manager.cache(JOBS)),
        clock=manager.clock,
        trace=manager.trace,
        trace_fields={"from": manager.name},
    )
    manager.controllers.append(orphans)
    manager.informer_for(PODS).add_event_handler(
        reconciler.pod_event_handler(controller.enqueue, orphans.enqueue)
    )
    manager.informer_for(JOBS).add_event_handler(reconciler.job_event_handler(orphans.enqueue))
    return controller


__all__ = [
    "COMPONENT",
    "BackoffRecord",
    "FinalizerExpectations",
    "JobReconciler",
    "OrphanPodReconciler",
    "add_to_manager",
    "ensure_condition",
    "finished_condition",
    "is_job_finished",
    "new_condition",
    "next_backoff",
]
