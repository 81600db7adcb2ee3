"""Test doubles and helpers for the ReplicaSet and Deployment controller tests.

There is no kubelet in these tests. ``FakeKubelet`` plays its two parts that the workload controllers
depend on: it reports pods Running and Ready (through ``pods/status``, as a kubelet does), either
every pod as soon as it appears (``async with kubelet.running():``) or one pod when the test says
(``await kubelet.ready(pod)``); and it finishes deleting pods that are being deleted (a kubelet's
final delete with grace period 0).

``PodObserver`` records a measure of the whole set of pods after *every* watch event, so a test can
assert an invariant at each moment the API server went through, not only at the end. ``until`` waits
for a condition over several resources at once, watching instead of sleeping.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, Generic, TypeVar

from controlplane.api.meta import Object, format_time
from controlplane.client.errors import NotFound
from controlplane.client.manager import Manager
from controlplane.client.rest import PatchType, ResourceClient
from controlplane.clock import Clock
from controlplane.components.controllers import deployment, replicaset
from controlplane.components.controllers.podcontrol import controller_ref_of, is_pod_ready
from tests.support.inprocess import WAIT_TIMEOUT, InProcessCluster

T = TypeVar("T")


def container_statuses(pod: Object, ready: bool) -> list[Object]:
    return [
        {
            "name": c["name"],
            "ready": ready,
            "started": True,
            "restartCount": 0,
            "image": c.get("image", ""),
            "imageID": "",
            "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}},
        }
        for c in pod["spec"]["containers"]
    ]


class FakeKubelet:
    """Makes pods Running and Ready, and completes the deletion of terminating pods."""

    def __init__(self, pods: ResourceClient, clock: Clock, *, only_scheduled: bool = False) -> None:
        self.pods = pods
        self.clock = clock
        self.only_scheduled = only_scheduled
        self.readied: list[str] = []

    async def ready(self, pod: Object) -> Object:
        """Report ``pod`` Running with every container ready (a merge patch of ``pods/status``)."""
        now = format_time(self.clock.now())
        conditions = [
            {"type": kind, "status": "True", "lastProbeTime": None, "lastTransitionTime": now}
            for kind in (
                "PodReadyToStartContainers",
                "Initialized",
                "ContainersReady",
                "Ready",
                "PodScheduled",
            )
        ]
        patch = {
            "status": {
                "phase": "Running",
                "conditions": conditions,
                "containerStatuses": container_statuses(pod, True),
                "startTime": now,
            }
        }
        written = await self.pods.patch(
            pod["metadata"]["name"], patch, patch_type=PatchType.MERGE, subresource="status"
        )
        self.readied.append(pod["metadata"]["name"])
        return written

    async def finish(self, pod: Object) -> None:
        """The kubelet's final delete of a terminating pod."""
        with contextlib.suppress(NotFound):
            await self.pods.delete(pod["metadata"]["name"], grace_period_seconds=0)

    async def finish_terminating(self) -> int:
        finished = 0
        for pod in (await self.pods.list())["items"]:
            if pod["metadata"].get("deletionTimestamp"):
                await self.finish(pod)
                finished += 1
        return finished

    async def _handle(self, pod: Object) -> None:
        if pod["metadata"].get("deletionTimestamp"):
            await self.finish(pod)
        elif not is_pod_ready(pod) and (pod["spec"].get("nodeName") or not self.only_scheduled):
            with contextlib.suppress(NotFound):
                await self.ready(pod)

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
    async def running(self) -> AsyncIterator[FakeKubelet]:
        """Ready every pod as it appears, finish every deletion, until the block ends."""
        task = asyncio.create_task(self._run(), name="fake kubelet")
        try:
            yield self
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


class PodObserver(Generic[T]):
    """Applies ``measure`` to the set of pods after every watch event, from ``start()`` on."""

    def __init__(self, pods: ResourceClient, measure: Callable[[list[Object]], T]) -> None:
        self.pods = pods
        self.measure = measure
        self.observations: list[T] = []
        self._state: dict[str, Object] = {}
        self._task: asyncio.Task[None] | None = None

    async def _run(self, rv: str) -> None:
        async with self.pods.watch(resource_version=rv) as events:
            async for event in events:
                name = event.object["metadata"]["name"]
                if event.type.value == "DELETED":
                    self._state.pop(name, None)
                elif event.type.value in ("ADDED", "MODIFIED"):
                    self._state[name] = event.object
                else:
                    continue
                self.observations.append(self.measure(list(self._state.values())))

    @asynccontextmanager
    async def watching(self) -> AsyncIterator[PodObserver[T]]:
        listed = await self.pods.list()
        self._state = {p["metadata"]["name"]: p for p in listed["items"]}
        self.observations.append(self.measure(list(self._state.values())))
        self._task = asyncio.create_task(
            self._run(listed["metadata"]["resourceVersion"]), name="pod observer"
        )
        try:
            yield self
        finally:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


async def _next_event(resource: ResourceClient, rv: str) -> None:
    async with resource.watch(resource_version=rv) as events:
        async for _ in events:
            return


async def until(
    resources: Sequence[ResourceClient],
    done: Callable[[list[list[Object]]], bool],
    *,
    seconds: float = WAIT_TIMEOUT,
) -> list[list[Object]]:
    """List every resource until ``done(lists)``; between tries, wait for a change to any of them."""
    async with asyncio.timeout(seconds):
        while True:
            listed = [await r.list() for r in resources]
            items = [page["items"] for page in listed]
            if done(items):
                return items
            waiters = [
                asyncio.create_task(_next_event(r, page["metadata"]["resourceVersion"]))
                for r, page in zip(resources, listed, strict=True)
            ]
            try:
                await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for waiter in waiters:
                    waiter.cancel()
                await asyncio.gather(*waiters, return_exceptions=True)


def owned_by(obj: Object, owner: Object) -> bool:
    ref = controller_ref_of(obj)
    return ref is not None and ref.get("uid") == owner["metadata"]["uid"]


@asynccontextmanager
async def controller_manager(
    cluster: InProcessCluster, *, clock: Clock | None = None, seed: int = 7, deployments: bool = True
) -> AsyncIterator[Manager]:
    """A kube-controller-manager running the ReplicaSet (and Deployment) controllers."""
    manager = Manager(cluster.client, name="kube-controller-manager", clock=clock, rng=random.Random(seed))
    replicaset.add_to_manager(manager)
    if deployments:
        deployment.add_to_manager(manager)
    async with manager:
        yield manager


def pod_template(app: str, image: str = "nginx:1.27") -> Object:
    return {
        "metadata": {"labels": {"app": app}},
        "spec": {"containers": [{"name": "web", "image": image}]},
    }


def deployment_manifest(name: str, replicas: int, *, strategy: Object | None = None, **spec: Any) -> Object:
    body: Object = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": pod_template(name),
            **spec,
        },
    }
    if strategy is not None:
        body["spec"]["strategy"] = strategy
    return body


def replicaset_manifest(name: str, replicas: int, template: Object | None = None) -> Object:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": template or pod_template(name),
        },
    }


def rollout_status(d: Object) -> tuple[str, bool]:
    """kubectl's ``DeploymentStatusViewer.Status`` (``k8s.io/kubectl/pkg/polymorphichelpers/
    rollout_status.go``), line for line: what ``kubectl rollout status`` prints for ``d``, and whether
    it stops. A ``ProgressDeadlineExceeded`` condition is its error."""
    name = d["metadata"]["name"]
    status = d.get("status") or {}
    if (d["metadata"].get("generation") or 0) <= (status.get("observedGeneration") or 0):
        progressing = next((c for c in status.get("conditions") or [] if c["type"] == "Progressing"), None)
        if progressing is not None and progressing.get("reason") == "ProgressDeadlineExceeded":
            return f'error: deployment "{name}" exceeded its progress deadline', True
        replicas = d["spec"].get("replicas")
        updated = status.get("updatedReplicas") or 0
        if replicas is not None and updated < replicas:
            return (
                f'Waiting for deployment "{name}" rollout to finish: '
                f"{updated} out of {replicas} new replicas have been updated...",
                False,
            )
        total = status.get("replicas") or 0
        if total > updated:
            return (
                f'Waiting for deployment "{name}" rollout to finish: '
                f"{total - updated} old replicas are pending termination...",
                False,
            )
        available = status.get("availableReplicas") or 0
        if available < updated:
            return (
                f'Waiting for deployment "{name}" rollout to finish: '
                f"{available} of {updated} updated replicas are available...",
                False,
            )
        return f'deployment "{name}" successfully rolled out', True
    return "Waiting for deployment spec update to be observed...", False
