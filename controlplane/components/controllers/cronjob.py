"""The CronJob controller: create a Job from the template at every time the schedule names.

A CronJob (``batch/v1``) holds a ``jobTemplate`` and a cron ``schedule`` (``*/5 * * * *``), read on
the cluster clock in ``spec.timeZone`` (UTC here by default). On each sync the controller (upstream
``pkg/controller/cronjob/cronjob_controllerv2.go``, ``syncCronJob``):

1. **reconciles its Jobs** (those whose controller reference names it): a Job in
   ``status.active`` that has finished leaves the list (``SawCompletedJob`` "Saw completed job:
   hello-29467201, condition: Complete"), a successful one updates ``status.lastSuccessfulTime``, an
   active Job that no longer exists leaves it too (``MissingJob``), and an unfinished Job it does not
   know of is reported (``UnexpectedJob``);
2. **cleans up history**: finished Jobs beyond ``successfulJobsHistoryLimit`` (3) and
   ``failedJobsHistoryLimit`` (1) are deleted, oldest first (``SuccessfulDelete`` "Deleted job ...");
3. unless the CronJob is ``suspend``-ed, works out the **most recent scheduled time** since
   ``status.lastScheduleTime`` (or its creation) that has come: none, it sleeps until the next one;
   one, it starts it, unless it is more than ``startingDeadlineSeconds`` late (``MissSchedule``);
4. applies the **concurrency policy** when an earlier Job still runs: ``Allow`` starts another,
   ``Forbid`` skips this time (``JobAlreadyActive``), ``Replace`` deletes the running Jobs first;
5. **creates the Job**, named ``<cronjob>-<scheduled time in minutes since the epoch>``. The name is
   a lock: were the controller to crash after creating the Job and before writing the status, the
   next try would find the name taken instead of starting the run twice. The Job carries the
   template's labels and annotations, the annotation ``batch.kubernetes.io/cronjob-scheduled-timestamp``
   (the scheduled time, RFC 3339 in the schedule's zone) and a controller reference to the CronJob.
   Then it adds the Job to ``status.active`` and sets ``status.lastScheduleTime``
   (``SuccessfulCreate`` "Created job hello-29467201") and asks to be woken at the next scheduled time.

Only the most recent missed time is started: a controller that was down for three runs starts one
Job, not three (more than 100 missed times is reported as ``TooManyMissedTimes``).
``kubectl create job manual --from=cronjob/hello`` is kubectl's own: it copies the job template into
a new Job owned by the CronJob, with the annotation ``cronjob.kubernetes.io/instantiate: manual``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from controlplane.api import cron
from controlplane.api.deepcopy import deep_copy
from controlplane.api.meta import Object, format_time, parse_timestamp
from controlplane.api.strategies.batch import CRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION
from controlplane.client.cache import NAMESPACE_INDEX, Indexer
from controlplane.client.errors import AlreadyExists, APIError, NotFound
from controlplane.client.manager import Manager
from controlplane.client.reconciler import Controller, Request, Result
from controlplane.client.record import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING, EventRecorder
from controlplane.client.rest import RESTClient
from controlplane.clock import Clock
from controlplane.components.controllers.deploymentutil import meta, name_of, spec, status, uid_of
from controlplane.components.controllers.job import COMPLETE, finished_condition, is_job_finished
from controlplane.components.controllers.kinds import CRONJOBS, JOBS
from controlplane.components.controllers.podcontrol import controller_ref_of, new_controller_ref

logger = logging.getLogger(__name__)

COMPONENT: Final = "cronjob-controller"
#: The controller wakes this long after a scheduled time, so clock skew never makes it early
#: (``nextScheduleDelta``).
NEXT_SCHEDULE_DELTA: Final = 0.1
#: More missed times than this is worth a warning (``nextScheduleTime``).
TOO_MANY_MISSED: Final = 100


def job_name(cronjob: Mapping[str, Any], scheduled: float) -> str:
    """``getJobName``: ``<cronjob>-<scheduled time in minutes since the epoch>``."""
    return f"{name_of(cronjob)}-{int(scheduled) // 60}"


def most_recent_schedule_time(
    cronjob: Mapping[str, Any], now: float, schedule: cron.Schedule, *, include_deadline: bool
) -> tuple[float, float | None, int]:
    """``mostRecentScheduleTime``: (the earliest time considered, the latest scheduled time that has
    come since then or None, how many have come)."""
    earliest = parse_timestamp(status(cronjob).get("lastScheduleTime"))
    if earliest is None:
        earliest = parse_timestamp(meta(cronjob).get("creationTimestamp")) or now
    deadline = spec(cronjob).get("startingDeadlineSeconds")
    if include_deadline and deadline is not None:
        # Nothing earlier than this will be started anyway.
        earliest = max(earliest, now - float(deadline))
    first = schedule.next(earliest)
    if now < first:
        return earliest, None, 0
    second = schedule.next(first)
    if now < second:
        return earliest, first, 1
    interval = round(second - first)
    missed = int(now - first) // max(interval, 1) + 1
    # Start near the end rather than walking every missed time (upstream's estimate, then exact).
    latest = first
    t = schedule.next(first + max(0, missed - 2) * interval - 1)
    while t <= now:
        latest = t
        t = schedule.next(t)
    return earliest, latest, missed


def next_schedule_delay(cronjob: Mapping[str, Any], now: float, schedule: cron.Schedule) -> float:
    """``nextScheduleTimeDuration``: seconds until the next scheduled time after the latest that came."""
    earliest, latest, _ = most_recent_schedule_time(cronjob, now, schedule, include_deadline=False)
    base = latest if latest is not None else earliest
    return schedule.next(base) + NEXT_SCHEDULE_DELTA - now


def job_from_template(cronjob: Mapping[str, Any], scheduled: float, zone: Any) -> Object:
    """``getJobFromTemplate2``: the Job for the run at ``scheduled``."""
    template = spec(cronjob).get("jobTemplate") or {}
    template_meta = template.get("metadata") or {}
    annotations = dict(template_meta.get("annotations") or {})
    annotations[CRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION] = cron.format_rfc3339_in(scheduled, zone)
    job_meta: Object = {
        "name": job_name(cronjob, scheduled),
        "namespace": meta(cronjob).get("namespace"),
        "annotations": annotations,
        "ownerReferences": [
            new_controller_ref(cronjob, api_version=CRONJOBS.api_version, kind=CRONJOBS.kind)
        ],
    }
    if template_meta.get("labels"):
        job_meta["labels"] = dict(template_meta["labels"])
    return {
        "apiVersion": JOBS.api_version,
        "kind": JOBS.kind,
        "metadata": job_meta,
        "spec": deep_copy(template.get("spec") or {}),
    }


def job_reference(job: Mapping[str, Any]) -> Object:
    """``getRef``: the ObjectReference ``status.active`` holds."""
    return {
        "kind": JOBS.kind,
        "namespace": meta(job).get("namespace"),
        "name": name_of(job),
        "uid": uid_of(job),
        "apiVersion": JOBS.api_version,
        "resourceVersion": meta(job).get("resourceVersion"),
    }


def _start_key(job: Mapping[str, Any]) -> tuple[int, float, str]:
    """``byJobStartTime``: Jobs that started first, those that never started last, then by name."""
    started = parse_timestamp(status(job).get("startTime"))
    return (0 if started is not None else 1, started or 0.0, name_of(job))


class CronJobReconciler:
    """One CronJob per reconcile: reconcile its Jobs, clean up history, start the run that is due."""

    def __init__(
        self, client: RESTClient, *, cronjobs: Indexer, jobs: Indexer, recorder: EventRecorder, clock: Clock
    ) -> None:
        self.client = client
        self.cronjobs = cronjobs
        self.jobs = jobs
        self.recorder = recorder
        self.clock = clock

    def _jobs_client(self, namespace: str) -> Any:
        return self.client.resource(JOBS.group, JOBS.version, JOBS.plural, namespace)

    def _cronjobs_client(self, namespace: str) -> Any:
        return self.client.resource(CRONJOBS.group, CRONJOBS.version, CRONJOBS.plural, namespace)

    async def reconcile(self, request: Request) -> Result:
        """``sync``: the Jobs, the history, the schedule; one status write for all of it."""
        cached = self.cronjobs.get_by_key(request.key)
        if cached is None:
            return Result()
        cronjob = deep_copy(cached)
        cronjob.setdefault("status", {})
        jobs = [
            job
            for job in self.jobs.by_index(NAMESPACE_INDEX, request.namespace)
            if (ref := controller_ref_of(job)) is not None and ref.get("name") == name_of(cronjob)
        ]
        cleaned = await self.cleanup_finished_jobs(cronjob, jobs)
        requeue_after, updated, error = await self.sync_cronjob(cronjob, jobs)
        if cleaned or updated:
            if not status(cronjob).get("active"):
                cronjob["status"].pop("active", None)
            await self._cronjobs_client(request.namespace).update_status(cronjob)
        if error is not None:
            raise error
        return Result(requeue_after=requeue_after)

    async def sync_cronjob(
        self, cronjob: Object, jobs: Sequence[Object]
    ) -> tuple[float | None, bool, BaseException | None]:
        """``syncCronJob``: (seconds until the next look, whether the status changed, error)."""
        now = self.clock.now()
        cj_status = cronjob["status"]
        updated = False
        children = {uid_of(job) for job in jobs}
        for job in jobs:
            active_uids = {ref.get("uid") for ref in cj_status.get("active") or []}
            found = uid_of(job) in active_uids
            if not found and not is_job_finished(job):
                fresh = await self._fresh(cronjob)
                if fresh is not None and uid_of(job) in {
                    r.get("uid") for r in status(fresh).get("active") or []
                }:
                    cronjob.clear()
                    cronjob.update(fresh)
                    cronjob.setdefault("status", {})
                    cj_status = cronjob["status"]
                    continue
                self.recorder.eventf(
                    cronjob,
                    EVENT_TYPE_WARNING,
                    "UnexpectedJob",
                    "Saw a job that the controller did not create or forgot: %s",
                    name_of(job),
                )
            elif found and is_job_finished(job):
                seen = finished_condition(job) or {}
                self._remove_active(cronjob, uid_of(job))
                self.recorder.eventf(
                    cronjob,
                    EVENT_TYPE_NORMAL,
                    "SawCompletedJob",
                    "Saw completed job: %s, condition: %s",
                    name_of(job),
                    seen.get("type"),
                )
                updated = True
            if (condition := finished_condition(job)) is not None and condition.get("type") == COMPLETE:
                completed = status(job).get("completionTime")
                last = parse_timestamp(cj_status.get("lastSuccessfulTime"))
                when = parse_timestamp(completed)
                if completed and (last is None or (when is not None and when > last)):
                    cj_status["lastSuccessfulTime"] = completed
                    updated = True
        for ref in list(cj_status.get("active") or []):
            if ref.get("uid") in children:
                continue
            # The cache may lag: ask the API server before declaring the Job gone.
            try:
                await self._jobs_client(str(ref.get("namespace") or "")).get(str(ref.get("name")))
            except NotFound:
                self.recorder.eventf(
                    cronjob, EVENT_TYPE_NORMAL, "MissingJob", "Active job went missing: %s", ref.get("name")
                )
                self._remove_active(cronjob, str(ref.get("uid")))
                updated = True
            except APIError as error:
                return None, updated, error
        if meta(cronjob).get("deletionTimestamp"):
            return None, updated, None
        time_zone = spec(cronjob).get("timeZone")
        if time_zone is not None:
            try:
                ZoneInfo(str(time_zone))
            except (ZoneInfoNotFoundError, ValueError):
                self.recorder.eventf(
                    cronjob,
                    EVENT_TYPE_WARNING,
                    "UnknownTimeZone",
                    'invalid timeZone: "%s": unknown time zone %s',
                    time_zone,
                    time_zone,
                )
                return None, updated, None
        if spec(cronjob).get("suspend") is True:
            return None, updated, None
        schedule_text = str(spec(cronjob).get("schedule") or "")
        try:
            schedule = cron.Schedule.parse(schedule_text, time_zone)
        except cron.ScheduleError as error:
            self.recorder.eventf(
                cronjob,
                EVENT_TYPE_WARNING,
                "UnparseableSchedule",
                'unparseable schedule: "%s" : %s',
                schedule_text,
                error,
            )
            return None, updated, None
        _, scheduled, missed = most_recent_schedule_time(cronjob, now, schedule, include_deadline=True)
        if scheduled is None:
            return next_schedule_delay(cronjob, now, schedule), updated, None
        if missed > TOO_MANY_MISSED:
            self.recorder.eventf(
                cronjob,
                EVENT_TYPE_WARNING,
                "TooManyMissedTimes",
                "too many missed start times: %d. Set or decrease .spec.startingDeadlineSeconds or check "
                "clock skew",
                missed,
            )
        deadline = spec(cronjob).get("startingDeadlineSeconds")
        if deadline is not None and scheduled + float(deadline) < now:
            self.recorder.eventf(
                cronjob,
                EVENT_TYPE_WARNING,
                "MissSchedule",
                "Missed scheduled time to start a job: %s",
                format_rfc1123z(scheduled),
            )
            return next_schedule_delay(cronjob, now, schedule), updated, None
        name = job_name(cronjob, scheduled)
        active = cj_status.get("active") or []
        if any(ref.get("name") == name for ref in active) or parse_timestamp(
            cj_status.get("lastScheduleTime")
        ) == float(int(scheduled)):
            return next_schedule_delay(cronjob, now, schedule), updated, None
        policy = spec(cronjob).get("concurrencyPolicy")
        if policy == "Forbid" and active:
            self.recorder.event(
                cronjob,
                EVENT_TYPE_NORMAL,
                "JobAlreadyActive",
                "Not starting job because prior execution is running and concurrency policy is Forbid",
            )
            return next_schedule_delay(cronjob, now, schedule), updated, None
        if policy == "Replace":
            for ref in list(active):
                try:
                    job = await self._jobs_client(str(ref.get("namespace") or "")).get(str(ref.get("name")))
                except APIError as error:
                    self.recorder.eventf(
                        cronjob, EVENT_TYPE_WARNING, "FailedGet", "Get job: %s", error.message
                    )
                    return None, updated, error
                if not await self.delete_job(cronjob, job):
                    return None, updated, RuntimeError(f"could not replace job {ref.get('namespace')}/{name}")
                updated = True
        job = job_from_template(cronjob, scheduled, schedule.zone)
        jobs_client = self._jobs_client(str(meta(cronjob).get("namespace") or ""))
        try:
            created = await jobs_client.create(job)
            self.recorder.eventf(
                cronjob, EVENT_TYPE_NORMAL, "SuccessfulCreate", "Created job %s", name_of(created)
            )
        except AlreadyExists:
            # Someone (this controller, before a crash) already made this run's Job.
            created = await jobs_client.get(name)
            ref = controller_ref_of(created)
            if ref is None or ref.get("uid") != uid_of(cronjob):
                return None, updated, None
            if uid_of(created) in {r.get("uid") for r in active}:
                return None, updated, None
        except APIError as error:
            if any(cause.type == "NamespaceTerminating" for cause in error.causes):
                return None, updated, error
            self.recorder.eventf(
                cronjob, EVENT_TYPE_WARNING, "FailedCreate", "Error creating job: %s", error.message
            )
            return None, updated, error
        cj_status.setdefault("active", []).append(job_reference(created))
        cj_status["lastScheduleTime"] = format_time(scheduled)
        return next_schedule_delay(cronjob, now, schedule), True, None

    async def _fresh(self, cronjob: Object) -> Object | None:
        try:
            fresh: Object = await self._cronjobs_client(str(meta(cronjob).get("namespace") or "")).get(
                name_of(cronjob)
            )
        except NotFound:
            return None
        return fresh

    @staticmethod
    def _remove_active(cronjob: Object, uid: str) -> None:
        cj_status = cronjob["status"]
        cj_status["active"] = [ref for ref in cj_status.get("active") or [] if ref.get("uid") != uid]

    async def cleanup_finished_jobs(self, cronjob: Object, jobs: Sequence[Object]) -> bool:
        """``cleanupFinishedJobs``: keep only the newest finished Jobs the history limits allow."""
        succeeded = sorted(
            (j for j in jobs if (c := finished_condition(j)) is not None and c.get("type") == COMPLETE),
            key=_start_key,
        )
        failed = sorted(
            (j for j in jobs if (c := finished_condition(j)) is not None and c.get("type") != COMPLETE),
            key=_start_key,
        )
        updated = False
        for finished, limit_name in (
            (succeeded, "successfulJobsHistoryLimit"),
            (failed, "failedJobsHistoryLimit"),
        ):
            limit = spec(cronjob).get(limit_name)
            if limit is None:
                continue
            for job in finished[: max(0, len(finished) - int(limit))]:
                if await self.delete_job(cronjob, job):
                    updated = True
        return updated

    async def delete_job(self, cronjob: Object, job: Mapping[str, Any]) -> bool:
        """``deleteJob``: the Job in the background (the garbage collector takes its pods), and its
        reference from the active list."""
        try:
            await self._jobs_client(str(meta(job).get("namespace") or "")).delete(
                name_of(job), propagation_policy="Background"
            )
        except NotFound:
            pass
        except APIError as error:
            self.recorder.eventf(
                cronjob, EVENT_TYPE_WARNING, "FailedDelete", "Deleted job: %s", error.message
            )
            return False
        self._remove_active(cronjob, uid_of(job))
        self.recorder.eventf(cronjob, EVENT_TYPE_NORMAL, "SuccessfulDelete", "Deleted job %s", name_of(job))
        return True


def format_rfc1123z(when: float) -> str:
    """Go's ``time.RFC1123Z`` in UTC: ``Mon, 02 Jan 2006 15:04:05 +0000``."""
    return datetime.fromtimestamp(int(when), UTC).strftime("%a, %d %b %Y %H:%M:%S +0000")


def add_to_manager(manager: Manager) -> Controller:
    """Build the CronJob controller on ``manager``: for CronJobs, woken by the Jobs they own."""
    reconciler = CronJobReconciler(
        manager.client,
        cronjobs=manager.cache(CRONJOBS),
        jobs=manager.cache(JOBS),
        recorder=manager.event_recorder(COMPONENT),
        clock=manager.clock,
    )
    return manager.new_controller("cronjob", reconciler, for_=CRONJOBS, owns=[JOBS])


__all__ = [
    "COMPONENT",
    "CronJobReconciler",
    "add_to_manager",
    "job_from_template",
    "job_name",
    "most_recent_schedule_time",
    "next_schedule_delay",
]
