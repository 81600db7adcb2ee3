"""The Job, CronJob and TTL-after-finished controllers against an in-process API server.

``BatchKubelet`` plays the kubelet: a pod whose command is ``false`` ends Failed (exit 1), ``serve``
runs (Ready) until deleted, anything else ends Succeeded (exit 0); a pod being deleted is finished
off. Timers (the pod failure backoff, ``activeDeadlineSeconds``, schedules, TTLs) run on a
``ManualClock`` shared by the API server and the controllers, so the tests move time instead of
sleeping.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from controlplane.api.meta import Object, format_time
from controlplane.client.errors import NotFound
from controlplane.client.manager import Manager
from controlplane.client.rest import PatchType, ResourceClient
from controlplane.clock import Clock, ManualClock
from controlplane.components.controllers import cronjob, garbagecollector, job, ttlafterfinished
from controlplane.components.controllers.job import BackoffRecord, next_backoff
from tests.support.inprocess import InProcessCluster, condition, in_process_cluster, wait_for

FINALIZER = "batch.kubernetes.io/job-tracking"
#: 2026-01-01T00:00:30Z
START = 1_767_225_630.0


class BatchKubelet:
    """Runs pods to their end as their command says, and finishes deletions."""

    def __init__(self, pods: ResourceClient, clock: Clock) -> None:
        self.pods = pods
        self.clock = clock

    async def _handle(self, pod: Object) -> None:
        name = pod["metadata"]["name"]
        phase = (pod.get("status") or {}).get("phase")
        with contextlib.suppress(NotFound):
            if pod["metadata"].get("deletionTimestamp"):
                await self.pods.delete(name, grace_period_seconds=0)
                return
            if phase in ("Succeeded", "Failed", "Running"):
                return
            command = " ".join(pod["spec"]["containers"][0].get("command") or [])
            now = format_time(self.clock.now())
            if "serve" in command:
                state: Object = {"running": {"startedAt": now}}
                status: Object = {
                    "phase": "Running",
                    "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now}],
                }
            else:
                code = 1 if "false" in command else 0
                state = {"terminated": {"exitCode": code, "startedAt": now, "finishedAt": now}}
                status = {"phase": "Failed" if code else "Succeeded"}
            status["containerStatuses"] = [
                {"name": c["name"], "ready": "serve" in command, "restartCount": 0, "image": c["image"],
                 "imageID": "", "state": state}
                for c in pod["spec"]["containers"]
            ]  # fmt: skip
            await self.pods.patch(name, {"status": status}, patch_type=PatchType.MERGE, subresource="status")

    async def _run(self) -> None:
        while True:
            listed = await self.pods.list()
            for pod in listed["items"]:
                await self._handle(pod)
            async with self.pods.watch(resource_version=listed["metadata"]["resourceVersion"]) as events:
                async for event in events:
                    if event.type.value in ("ADDED", "MODIFIED"):
                        await self._handle(event.object)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[BatchKubelet]:
        task = asyncio.create_task(self._run(), name="batch kubelet")
        try:
            yield self
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


@asynccontextmanager
async def batch_controllers(
    cluster: InProcessCluster, clock: Clock, *, gc: bool = False
) -> AsyncIterator[Manager]:
    manager = Manager(cluster.client, name="kube-controller-manager", clock=clock, rng=random.Random(7))
    job.add_to_manager(manager)
    cronjob.add_to_manager(manager)
    ttlafterfinished.add_to_manager(manager)
    if gc:
        garbagecollector.add_to_manager(manager)
    async with manager:
        yield manager


def job_manifest(name: str, command: str = "echo hi", **spec: Any) -> Object:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "main", "image": "busybox", "command": command.split()}],
                }
            },
            **spec,
        },
    }


def is_true(obj: Object, kind: str) -> bool:
    found = condition(obj, kind)
    return found is not None and found["status"] == "True"


def resources(cluster: InProcessCluster) -> tuple[ResourceClient, ResourceClient, ResourceClient]:
    return (
        cluster.resource("batch", "v1", "jobs", "default"),
        cluster.resource("", "v1", "pods", "default"),
        cluster.resource("", "v1", "events", "default"),
    )


async def test_a_job_runs_its_completions_and_completes(tmp_path: Path) -> None:
    clock = ManualClock(START)
    async with in_process_cluster(tmp_path, clock=clock) as cluster, batch_controllers(cluster, clock):
        jobs, pods, events = resources(cluster)
        async with BatchKubelet(pods, clock).running():
            created = await jobs.create(job_manifest("work", completions=3, parallelism=2))
            [done] = await wait_for(jobs, lambda items: is_true(items[0], "Complete"))
        status = done["status"]
        assert status["succeeded"] == 3 and "failed" not in status and "active" not in status
        assert (status["ready"], status["terminating"], status["uncountedTerminatedPods"]) == (0, 0, {})
        met, complete = condition(done, "SuccessCriteriaMet"), condition(done, "Complete")
        assert met is not None and complete is not None
        for found in (met, complete):
            assert (found["reason"], found["message"]) == (
                "CompletionsReached",
                "Reached expected number of succeeded pods",
            )
        assert status["completionTime"] == complete["lastTransitionTime"]
        assert status["startTime"] == format_time(START)
        finished = (await pods.list())["items"]
        assert len(finished) == 3
        for pod in finished:
            assert FINALIZER not in (pod["metadata"].get("finalizers") or []), "counted, then let go"
            assert pod["metadata"]["ownerReferences"] == [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": "work",
                    "uid": created["metadata"]["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ]
            assert pod["metadata"]["labels"]["batch.kubernetes.io/job-name"] == "work"
        wanted = {f"Created pod: {p['metadata']['name']}" for p in finished} | {"Job completed"}
        found_events = await wait_for(events, lambda evs: wanted <= {e["message"] for e in evs})
        assert {e["source"]["component"] for e in found_events} == {"job-controller"}


async def test_failures_beyond_the_backoff_limit_fail_the_job_after_the_backoff(tmp_path: Path) -> None:
    clock = ManualClock(START)
    async with in_process_cluster(tmp_path, clock=clock) as cluster, batch_controllers(cluster, clock):
        jobs, pods, events = resources(cluster)
        async with BatchKubelet(pods, clock).running():
            await jobs.create(job_manifest("bad", "false", backoffLimit=1))
            await wait_for(jobs, lambda items: items[0]["status"].get("failed") == 1)
            # The replacement waits out the 10 s backoff on the cluster clock.
            assert len((await pods.list())["items"]) == 1
            await clock.advance(10)
            [failed] = await wait_for(jobs, lambda items: is_true(items[0], "Failed"))
        assert failed["status"]["failed"] == 2 and "completionTime" not in failed["status"]
        target, final = condition(failed, "FailureTarget"), condition(failed, "Failed")
        assert target is not None and final is not None
        assert (final["reason"], final["message"]) == (
            "BackoffLimitExceeded",
            "Job has reached the specified backoff limit",
        )
        assert (target["reason"], target["message"]) == (final["reason"], final["message"])
        found = await wait_for(events, lambda evs: any(e["reason"] == "BackoffLimitExceeded" for e in evs))
        assert next(e for e in found if e["reason"] == "BackoffLimitExceeded")["type"] == "Warning"


def test_the_backoff_doubles_and_a_success_resets_it() -> None:
    def finished(at: float) -> Object:
        return {
            "metadata": {},
            "status": {"containerStatuses": [{"state": {"terminated": {"finishedAt": format_time(at)}}}]},
        }

    record = next_backoff(BackoffRecord(), [], [finished(START)])
    assert record.remaining(START) == 10.0
    record = next_backoff(record, [], [finished(START + 10)])
    assert record.remaining(START + 10) == 20.0
    many = BackoffRecord(9, START)
    assert many.remaining(START) == 360.0, "at most 6 minutes"
    assert next_backoff(record, [finished(START + 20)], []).remaining(START + 20) == 0.0


async def test_the_active_deadline_fails_a_running_job(tmp_path: Path) -> None:
    clock = ManualClock(START)
    async with in_process_cluster(tmp_path, clock=clock) as cluster, batch_controllers(cluster, clock):
        jobs, pods, _ = resources(cluster)
        async with BatchKubelet(pods, clock).running():
            await jobs.create(job_manifest("slow", "serve", activeDeadlineSeconds=30))
            await wait_for(jobs, lambda items: items[0]["status"].get("ready") == 1)
            await clock.advance(31)
            [failed] = await wait_for(jobs, lambda items: is_true(items[0], "Failed"))
            await wait_for(pods, lambda items: not items)
        final = condition(failed, "Failed")
        assert final is not None and final["reason"] == "DeadlineExceeded"
        assert final["message"] == "Job was active longer than specified deadline"
        assert failed["status"]["failed"] == 1, "the pod it deleted counts as failed"


async def test_a_deleted_jobs_pods_lose_their_finalizer(tmp_path: Path) -> None:
    clock = ManualClock(START)
    async with in_process_cluster(tmp_path, clock=clock) as cluster, batch_controllers(cluster, clock):
        jobs, pods, _ = resources(cluster)
        await jobs.create(job_manifest("gone", "serve"))
        [pod] = await wait_for(pods, lambda items: len(items) == 1)
        assert FINALIZER in pod["metadata"]["finalizers"]
        # No garbage collector here: the pod stays, pointing at a Job that is gone.
        await jobs.delete("gone", propagation_policy="Background")
        await wait_for(pods, lambda items: FINALIZER not in (items[0]["metadata"].get("finalizers") or []))


async def test_a_finished_job_goes_after_its_ttl(tmp_path: Path) -> None:
    clock = ManualClock(START)
    async with (
        in_process_cluster(tmp_path, clock=clock) as cluster,
        batch_controllers(cluster, clock, gc=True),
    ):
        jobs, pods, _ = resources(cluster)
        async with BatchKubelet(pods, clock).running():
            await jobs.create(job_manifest("brief", ttlSecondsAfterFinished=60))
            await wait_for(jobs, lambda items: is_true(items[0], "Complete"))
            await clock.advance(59)
            assert [j["metadata"]["name"] for j in (await jobs.list())["items"]] == ["brief"]
            await clock.advance(2)
            await wait_for(jobs, lambda items: not items)
            await wait_for(pods, lambda items: not items)


def cronjob_manifest(
    name: str, schedule: str = "*/1 * * * *", command: str = "echo hi", **spec: Any
) -> Object:
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name},
        "spec": {
            "schedule": schedule,
            "jobTemplate": {
                "metadata": {"labels": {"team": "ops"}},
                "spec": {
                    "template": {
                        "spec": {
                            "restartPolicy": "OnFailure",
                            "containers": [{"name": "main", "image": "busybox", "command": command.split()}],
                        }
                    }
                },
            },
            **spec,
        },
    }


async def test_a_cronjob_starts_a_job_at_each_scheduled_minute_and_keeps_its_history(tmp_path: Path) -> None:
    clock = ManualClock(START)
    async with (
        in_process_cluster(tmp_path, clock=clock) as cluster,
        batch_controllers(cluster, clock, gc=True),
    ):
        jobs, pods, events = resources(cluster)
        cronjobs = cluster.resource("batch", "v1", "cronjobs", "default")
        async with BatchKubelet(pods, clock).running():
            created = await cronjobs.create(cronjob_manifest("tick", successfulJobsHistoryLimit=1))
            await clock.advance(29)
            assert (await jobs.list())["items"] == [], "not before the minute"
            # The controller looks 0.1 s after the scheduled time, so clock skew never makes it early.
            await clock.advance(2)
            minute = int(START + 30) // 60
            [first] = await wait_for(jobs, lambda items: len(items) == 1)
            assert first["metadata"]["name"] == f"tick-{minute}"
            assert first["metadata"]["annotations"] == {
                "batch.kubernetes.io/cronjob-scheduled-timestamp": "2026-01-01T00:01:00Z"
            }
            assert first["metadata"]["labels"] == {"team": "ops"}
            ref = first["metadata"]["ownerReferences"][0]
            assert (ref["kind"], ref["uid"], ref["controller"]) == (
                "CronJob",
                created["metadata"]["uid"],
                True,
            )
            [cj] = await wait_for(
                cronjobs, lambda items: items[0]["status"].get("lastSuccessfulTime") is not None
            )
            assert cj["status"]["lastScheduleTime"] == "2026-01-01T00:01:00Z"
            assert "active" not in cj["status"], "the finished Job left the active list"
            await clock.advance(60)
            await wait_for(
                jobs, lambda items: [j["metadata"]["name"] for j in items] == [f"tick-{minute + 1}"]
            )
        wanted = {
            f"Created job tick-{minute}",
            f"Saw completed job: tick-{minute}, condition: Complete",
            f"Deleted job tick-{minute}",
        }
        # Events are written in the background: wait for them rather than list once.
        await wait_for(events, lambda evs: wanted <= {e["message"] for e in evs})


async def test_forbid_skips_a_run_while_the_last_one_runs(tmp_path: Path) -> None:
    clock = ManualClock(START)
    async with in_process_cluster(tmp_path, clock=clock) as cluster, batch_controllers(cluster, clock):
        jobs, pods, events = resources(cluster)
        cronjobs = cluster.resource("batch", "v1", "cronjobs", "default")
        async with BatchKubelet(pods, clock).running():
            await cronjobs.create(cronjob_manifest("long", command="serve", concurrencyPolicy="Forbid"))
            await clock.advance(31)
            await wait_for(cronjobs, lambda items: len(items[0]["status"].get("active") or []) == 1)
            await clock.advance(60)
            await wait_for(events, lambda evs: any(e["reason"] == "JobAlreadyActive" for e in evs))
        assert len((await jobs.list())["items"]) == 1
