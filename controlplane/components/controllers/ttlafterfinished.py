"""The TTL-after-finished controller: delete a finished Job once ``ttlSecondsAfterFinished`` has passed.

A Job that has finished (its ``Complete`` or ``Failed`` condition is True) stays, with its pods and
their logs, until someone deletes it. ``spec.ttlSecondsAfterFinished: N`` asks for it to go N seconds
after it finished (0: at once). This controller (upstream ``pkg/controller/ttlafterfinished/
ttlafterfinished_controller.go``) looks at every Job with a TTL: not finished yet, nothing to do (the
Job controller's status write will wake it again); finished, but the TTL not yet over, it looks again
when it will be; over, it reads the Job afresh from the API server (the TTL may have been changed in
the meantime) and deletes it, in the foreground (its pods first) and only if it is still the same
Job (a uid precondition: a new Job of the same name is not deleted by mistake).

The time a Job finished is its finished condition's ``lastTransitionTime``.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Final

from controlplane.api.meta import Object, parse_timestamp
from controlplane.client.cache import Indexer
from controlplane.client.errors import NotFound
from controlplane.client.manager import Manager
from controlplane.client.reconciler import Controller, Request, Result
from controlplane.client.rest import RESTClient
from controlplane.clock import Clock
from controlplane.components.controllers.deploymentutil import meta, spec, uid_of
from controlplane.components.controllers.job import finished_condition
from controlplane.components.controllers.kinds import JOBS

logger = logging.getLogger(__name__)

COMPONENT: Final = "ttl-after-finished-controller"


def time_left(job: Object, now: float) -> float | None:
    """Seconds until ``job`` expires (<= 0: it has), or None when it has no TTL, is not finished or is
    already being deleted (``needsCleanup`` and ``timeLeft``)."""
    ttl = spec(job).get("ttlSecondsAfterFinished")
    if ttl is None or meta(job).get("deletionTimestamp"):
        return None
    condition = finished_condition(job)
    if condition is None:
        return None
    finished_at = parse_timestamp(condition.get("lastTransitionTime"))
    if finished_at is None:
        return None
    return finished_at + float(ttl) - now


class TTLAfterFinishedReconciler:
    """One Job per reconcile: wait for its TTL, then delete it."""

    def __init__(self, client: RESTClient, *, jobs: Indexer, clock: Clock) -> None:
        self.client = client
        self.jobs = jobs
        self.clock = clock

    async def reconcile(self, request: Request) -> Result:
        """``processJob``."""
        cached = self.jobs.get_by_key(request.key)
        if cached is None:
            return Result()
        left = time_left(cached, self.clock.now())
        if left is None:
            return Result()
        if left > 0:
            return Result(requeue_after=left)
        jobs = self.client.resource(JOBS.group, JOBS.version, JOBS.plural, request.namespace)
        try:
            fresh = await jobs.get(request.name)
        except NotFound:
            return Result()
        left = time_left(fresh, self.clock.now())
        if left is None:
            return Result()
        if left > 0:
            return Result(requeue_after=left)
        logger.info("cleaning up job %s: finished %gs past its TTL", request.key, -left)
        with contextlib.suppress(NotFound):
            await jobs.delete(
                request.name, propagation_policy="Foreground", preconditions={"uid": uid_of(fresh)}
            )
        return Result()


def add_to_manager(manager: Manager) -> Controller:
    """Build the controller on ``manager``, for Jobs."""
    reconciler = TTLAfterFinishedReconciler(manager.client, jobs=manager.cache(JOBS), clock=manager.clock)
    return manager.new_controller("ttlafterfinished", reconciler, for_=JOBS)


__all__ = ["COMPONENT", "TTLAfterFinishedReconciler", "add_to_manager", "time_left"]
