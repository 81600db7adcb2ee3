"""The horizontal-pod-autoscaler controller: keep a workload's replica count where its metrics want it.

Every ``--horizontal-pod-autoscaler-sync-period`` (15 s upstream, a fifth of that in the classroom
profile) the controller looks at each HorizontalPodAutoscaler (upstream
``pkg/controller/podautoscaler/horizontal.go``, ``reconcileAutoscaler``):

1. It reads the target's ``/scale`` subresource (found by kind through discovery, as upstream's
   REST mapper does). If it cannot, the HPA is ``AbleToScale=False`` (``FailedGetScale``) with a
   ``FailedGetScale`` Warning event, and nothing else happens. Otherwise ``AbleToScale=True``
   (``SucceededGetScale``) and the scale's ``spec.replicas`` is the current replica count.
2. A target at 0 replicas (with ``minReplicas`` above 0) has autoscaling switched off:
   ``ScalingActive=False`` (``ScalingDisabled``). A target above ``maxReplicas`` is scaled down to it,
   one below ``minReplicas`` up to it: those need no metrics.
3. Otherwise each metric proposes a replica count. For a ``Resource`` metric that means asking the
   resource metrics API (``metrics.k8s.io``, served by metrics-server) for the pods' usage. **The lab
   runs no metrics-server**: no pod has metrics, so every Resource metric fails exactly as upstream's
   does then: ``ScalingActive=False`` with reason ``FailedGetResourceMetric`` and the message
   ``the HPA was unable to compute the replica count: failed to get cpu utilization: unable to get
   metrics for resource cpu: no metrics returned from resource metrics API``, Warning events
   ``FailedGetResourceMetric`` and ``FailedComputeMetricsReplicas``, and no rescale. The status still
   gets ``currentReplicas`` (``desiredReplicas`` keeps its old value). Other metric types (Pods,
   Object, External, ContainerResource) need the custom or external metrics APIs, which the lab does
   not serve either; they fail the same way with their own reasons.
4. A rescale writes the target's ``/scale`` (``SucceededRescale``, a ``SuccessfulRescale`` event with
   the reason) and stamps ``status.lastScaleTime``.

The status is written only when it changed (``updateStatusIfNeeded``).

Timing: upstream queues every HPA with a fixed ``resyncPeriod`` delay, also on informer events, so a
new HPA waits up to 15 s for its first look. Here an HPA is looked at as soon as it is created or its
spec changes, then every sync period; other informer events (the controller's own status writes)
do not bring its next look forward. Not ported: the selector-overlap check (``AmbiguousSelector``),
the recommendation stabilization and behavior rate limits (they only matter once metrics exist),
and ``ScalingLimited``, which is set only after a metrics-based computation.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from controlplane.api.meta import Object, format_time
from controlplane.client.cache import Indexer
from controlplane.client.errors import APIError, NotFound
from controlplane.client.manager import Manager
from controlplane.client.reconciler import Controller, Request, Result
from controlplane.client.record import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING, EventRecorder
from controlplane.client.rest import RESTClient, resource_path
from controlplane.clock import Clock
from controlplane.components.controllers.kinds import HORIZONTAL_POD_AUTOSCALERS

logger = logging.getLogger(__name__)

#: The events' source component (``horizontal-pod-autoscaler`` in upstream's recorder).
COMPONENT: Final = "horizontal-pod-autoscaler"
#: ``--horizontal-pod-autoscaler-sync-period`` default.
DEFAULT_SYNC_PERIOD: Final = 15.0

ABLE_TO_SCALE: Final = "AbleToScale"
SCALING_ACTIVE: Final = "ScalingActive"

#: What the resource metrics client answers when no pod has metrics (pkg/controller/podautoscaler/
#: metrics/client.go ``GetResourceMetric``): the lab serves no metrics.k8s.io.
NO_RESOURCE_METRICS: Final = "no metrics returned from resource metrics API"
#: A 404's message: the custom and external metrics APIs are not served either.
NOT_SERVED: Final = "the server could not find the requested resource"


class ScaleTargetError(Exception):
    """The target's scale could not be read (its message is upstream's error text)."""


@dataclass(frozen=True, slots=True)
class MetricFailure:
    """Why one metric proposed no replica count: the condition it sets and the error it returns."""

    reason: str
    error: str


def set_condition(hpa: Object, kind: str, status: str, reason: str, message: str, now: float) -> None:
    """``setCondition``/``setConditionInList``: update in place; a status change stamps the time."""
    conditions: list[dict[str, Any]] = hpa.setdefault("status", {}).setdefault("conditions", [])
    existing = next((c for c in conditions if c.get("type") == kind), None)
    if existing is None:
        existing = {"type": kind}
        conditions.append(existing)
    if existing.get("status") != status:
        existing["lastTransitionTime"] = format_time(now)
    existing["status"] = status
    existing["reason"] = reason
    existing["message"] = message
    # Field order as Go serializes HorizontalPodAutoscalerCondition.
    fields: tuple[str, ...] = ("type", "status", "lastTransitionTime", "reason", "message")
    ordered: dict[str, Any] = {f: existing[f] for f in fields if f in existing}
    existing.clear()
    existing.update(ordered)


def _spec(obj: Mapping[str, Any]) -> dict[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


class HorizontalPodAutoscalerReconciler:
    """One HPA per reconcile, then again after the sync period."""

    def __init__(
        self,
        client: RESTClient,
        *,
        hpas: Indexer,
        recorder: EventRecorder,
        clock: Clock,
        sync_period: float = DEFAULT_SYNC_PERIOD,
    ) -> None:
        self.client = client
        self.hpas = hpas
        self.recorder = recorder
        self.clock = clock
        self.sync_period = sync_period
        #: Per HPA key: when it was last synced, and the spec it had then.
        self._synced: dict[str, tuple[float, Any]] = {}
        #: (group, version) -> kind -> plural, from discovery (upstream's cached REST mapper).
        self._plurals: dict[tuple[str, str], dict[str, str]] = {}

    async def reconcile(self, request: Request) -> Result:
        cached = self.hpas.get_by_key(request.key)
        if cached is None:
            self._synced.pop(request.key, None)
            return Result()
        now = self.clock.now()
        last = self._synced.get(request.key)
        if last is not None and last[1] == cached.get("spec") and now - last[0] < self.sync_period:
            return Result(requeue_after=self.sync_period - (now - last[0]))
        await self.reconcile_autoscaler(cached)  # a failure (a 409) is retried with backoff, ungated
        self._synced[request.key] = (now, copy.deepcopy(cached.get("spec")))
        return Result(requeue_after=self.sync_period)

    # -- the target's scale -------------------------------------------------------------------------

    async def _plural(self, group: str, version: str, kind: str) -> str:
        kinds = self._plurals.get((group, version))
        if kinds is None or kind not in kinds:  # a miss asks again: a CRD may have come since
            path = f"/apis/{group}/{version}" if group else f"/api/{version}"
            try:
                listed = await self.client.request_json("GET", path)
            except NotFound:
                listed = {}
            kinds = {
                str(r.get("kind")): str(r.get("name"))
                for r in listed.get("resources") or []
                if isinstance(r, Mapping) and "/" not in str(r.get("name"))
            }
            if kinds:
                self._plurals[(group, version)] = kinds
        plural = kinds.get(kind)
        if plural is None:
            # meta.NoKindMatchError
            raise ScaleTargetError(f'no matches for kind "{kind}" in group "{group}"')
        return plural

    async def _scale_path(self, hpa: Object) -> str:
        ref = _spec(hpa).get("scaleTargetRef") or {}
        api_version = str(ref.get("apiVersion") or "")
        group, _, version = api_version.rpartition("/")
        if api_version.count("/") > 1:
            raise ScaleTargetError(f"unexpected GroupVersion string: {api_version}")
        plural = await self._plural(group, version or "v1", str(ref.get("kind") or ""))
        namespace = str(hpa["metadata"].get("namespace") or "")
        return resource_path(
            group,
            version or "v1",
            plural,
            namespace=namespace,
            name=str(ref.get("name")),
            subresource="scale",
        )

    # -- reconcileAutoscaler ------------------------------------------------------------------------

    async def reconcile_autoscaler(self, shared: Object) -> None:
        hpa = copy.deepcopy(shared)
        original = copy.deepcopy(hpa.get("status") or {})
        hpa.setdefault("status", {})
        now = self.clock.now()
        try:
            path = await self._scale_path(hpa)
            scale = await self.client.request_json("GET", path)
        except (ScaleTargetError, APIError) as error:
            message = error.message if isinstance(error, APIError) else str(error)
            self.recorder.event(hpa, EVENT_TYPE_WARNING, "FailedGetScale", message)
            set_condition(
                hpa,
                ABLE_TO_SCALE,
                "False",
                "FailedGetScale",
                f"the HPA controller was unable to get the target's current scale: {message}",
                now,
            )
            await self._update_status_if_needed(original, hpa)
            return
        set_condition(
            hpa,
            ABLE_TO_SCALE,
            "True",
            "SucceededGetScale",
            "the HPA controller was able to get the target's current scale",
            now,
        )
        spec = _spec(hpa)
        current = int(_spec(scale).get("replicas") or 0)
        min_replicas = spec.get("minReplicas")
        min_replicas = 1 if min_replicas is None else int(min_replicas)
        max_replicas = int(spec.get("maxReplicas") or 0)
        metric_statuses: list[dict[str, Any]] = []
        rescale = True
        reason = ""
        if current == 0 and min_replicas != 0:
            desired = 0
            rescale = False
            set_condition(
                hpa,
                SCALING_ACTIVE,
                "False",
                "ScalingDisabled",
                "scaling is disabled since the replica count of the target is zero",
                now,
            )
        elif current > max_replicas:
            reason, desired = "Current number of replicas above Spec.MaxReplicas", max_replicas
        elif current < min_replicas:
            reason, desired = "Current number of replicas below Spec.MinReplicas", min_replicas
        else:
            failure, metric_statuses = self.compute_replicas_for_metrics(hpa, scale, now)
            # Every metric failed: record what is known and stop (no rescale without a proposal).
            self._set_status(
                hpa, current, hpa["status"].get("desiredReplicas", 0), metric_statuses, False, now
            )
            await self._update_status_if_needed(original, hpa)
            self.recorder.event(hpa, EVENT_TYPE_WARNING, failure.reason, failure.error)
            return
        if rescale:
            scale = {**scale, "spec": {**_spec(scale), "replicas": desired}}
            try:
                await self.client.request_json("PUT", path, body=scale)
            except APIError as error:
                self.recorder.event(
                    hpa,
                    EVENT_TYPE_WARNING,
                    "FailedRescale",
                    f"New size: {desired}; reason: {reason}; error: {error.message}",
                )
                set_condition(
                    hpa,
                    ABLE_TO_SCALE,
                    "False",
                    "FailedUpdateScale",
                    f"the HPA controller was unable to update the target scale: {error.message}",
                    now,
                )
                self._set_status(
                    hpa, current, hpa["status"].get("desiredReplicas", 0), metric_statuses, False, now
                )
                await self._update_status_if_needed(original, hpa)
                return
            set_condition(
                hpa,
                ABLE_TO_SCALE,
                "True",
                "SucceededRescale",
                f"the HPA controller was able to update the target scale to {desired}",
                now,
            )
            self.recorder.event(
                hpa, EVENT_TYPE_NORMAL, "SuccessfulRescale", f"New size: {desired}; reason: {reason}"
            )
            logger.info(
                "rescaled %s from %d to %d: %s", hpa["metadata"].get("name"), current, desired, reason
            )
        else:
            desired = current
        self._set_status(hpa, current, desired, metric_statuses, rescale, now)
        await self._update_status_if_needed(original, hpa)

    def compute_replicas_for_metrics(
        self, hpa: Object, scale: Object, now: float
    ) -> tuple[MetricFailure, list[dict[str, Any]]]:
        """``computeReplicasForMetrics`` without a metrics API: every metric fails.

        Returns the event that ``reconcileAutoscaler`` records (``FailedComputeMetricsReplicas``) and
        the metric statuses, and sets the condition of the first failing metric; the per-metric events
        are recorded here (``getUnableComputeReplicaCountCondition``). Upstream allocates one status per
        metric before asking and returns them even when all fail: each stays Go's zero value, which
        serializes as ``{"type": ""}`` (so does a real cluster's HPA without metrics-server).
        """
        selector = (scale.get("status") or {}).get("selector")
        if not selector:  # validateAndParseSelector
            self.recorder.event(hpa, EVENT_TYPE_WARNING, "SelectorRequired", "selector is required")
            set_condition(
                hpa,
                SCALING_ACTIVE,
                "False",
                "InvalidSelector",
                "the HPA target's scale is missing a selector",
                now,
            )
            return MetricFailure("FailedComputeMetricsReplicas", "selector is required"), []
        metrics = [m for m in _spec(hpa).get("metrics") or [] if isinstance(m, dict)]
        first: MetricFailure | None = None
        for metric in metrics:
            failure = self._metric_failure(hpa, metric)
            if first is None:
                first = failure
        statuses: list[dict[str, Any]] = [{"type": ""} for _ in metrics]
        if first is None:  # no metrics at all (defaulting always gives one): nothing proposed a count
            return MetricFailure("FailedComputeMetricsReplicas", "no metrics"), statuses
        set_condition(
            hpa,
            SCALING_ACTIVE,
            "False",
            first.reason,
            f"the HPA was unable to compute the replica count: {first.error}",
            now,
        )
        event = MetricFailure(
            "FailedComputeMetricsReplicas",
            f"invalid metrics ({len(metrics)} invalid out of {len(metrics)}), first error is: "
            f"{self._wrapped(metric=metrics[0], error=first.error)}",
        )
        return event, statuses

    @staticmethod
    def _wrapped(*, metric: Mapping[str, Any], error: str) -> str:
        """``computeReplicasForMetric``'s wrapping of a metric's error."""
        kind = metric.get("type")
        if kind == "Resource":
            return (
                f"failed to get {(metric.get('resource') or {}).get('name')} resource metric value: {error}"
            )
        if kind == "ContainerResource":
            source = metric.get("containerResource") or {}
            return f"failed to get {source.get('name')} container metric value: {error}"
        if kind == "Pods":
            return f"failed to get pods metric value: {error}"
        if kind == "Object":
            return f"failed to get object metric value: {error}"
        if kind == "External":
            return f"failed to get external metric value: {error}"
        return error

    def _metric_failure(self, hpa: Object, metric: Mapping[str, Any]) -> MetricFailure:
        """One metric's failure, its event recorded (``getUnableComputeReplicaCountCondition``).

        Resource metrics fail with upstream's exact chain (``computeStatusForResourceMetricGeneric``,
        ``GetResourceReplicas``, ``GetResourceMetric``). The custom and external metrics APIs are
        not served at all; their messages follow the same wrapping, ending in a 404's text.
        """
        kind = metric.get("type")
        if kind in ("Resource", "ContainerResource"):
            source = metric.get("resource" if kind == "Resource" else "containerResource") or {}
            name = source.get("name")
            what = "usage" if (source.get("target") or {}).get("averageValue") is not None else "utilization"
            error = (
                f"failed to get {name} {what}: unable to get metrics for resource {name}: "
                f"{NO_RESOURCE_METRICS}"
            )
            reason = "FailedGetResourceMetric" if kind == "Resource" else "FailedGetContainerResourceMetric"
        elif kind in ("Pods", "Object"):
            name = ((metric.get(str(kind).lower()) or {}).get("metric") or {}).get("name")
            error = (
                f"unable to get metric {name}: unable to fetch metrics from custom metrics API: {NOT_SERVED}"
            )
            reason = f"FailedGet{kind}Metric"
        elif kind == "External":
            name = ((metric.get("external") or {}).get("metric") or {}).get("name")
            error = (
                f"unable to get external metric {name}: unable to fetch metrics from external metrics API: "
                f"{NOT_SERVED}"
            )
            reason = "FailedGetExternalMetric"
        else:
            error, reason = f"unknown metric source type {kind!r}", "InvalidMetricSourceType"
        self.recorder.event(hpa, EVENT_TYPE_WARNING, reason, error)
        return MetricFailure(reason, error)

    def _set_status(
        self,
        hpa: Object,
        current: int,
        desired: int,
        metric_statuses: list[dict[str, Any]],
        rescale: bool,
        now: float,
    ) -> None:
        """``setStatus``: replicas, the metric statuses and conditions; a rescale stamps its time."""
        old = hpa.get("status") or {}
        status: dict[str, Any] = {}
        if old.get("observedGeneration") is not None:
            status["observedGeneration"] = old["observedGeneration"]
        last_scale = format_time(now) if rescale else old.get("lastScaleTime")
        if last_scale is not None:
            status["lastScaleTime"] = last_scale
        status["currentReplicas"] = current
        status["desiredReplicas"] = desired
        if metric_statuses:
            status["currentMetrics"] = metric_statuses
        if old.get("conditions"):
            status["conditions"] = old["conditions"]
        hpa["status"] = status

    async def _update_status_if_needed(self, original: Mapping[str, Any], hpa: Object) -> None:
        """``updateStatusIfNeeded``: PUT ``/status`` only when it changed."""
        if original == hpa.get("status"):
            return
        namespace = str(hpa["metadata"].get("namespace") or "")
        client = self.client.resource(
            HORIZONTAL_POD_AUTOSCALERS.group,
            HORIZONTAL_POD_AUTOSCALERS.version,
            HORIZONTAL_POD_AUTOSCALERS.plural,
            namespace,
        )
        try:
            await client.update_status(hpa)
        except NotFound:
            return
        except APIError as error:
            self.recorder.event(hpa, EVENT_TYPE_WARNING, "FailedUpdateStatus", error.message)
            raise


def add_to_manager(manager: Manager, *, sync_period: float = DEFAULT_SYNC_PERIOD) -> Controller:
    """Build the controller on ``manager``, for HorizontalPodAutoscalers."""
    reconciler = HorizontalPodAutoscalerReconciler(
        manager.client,
        hpas=manager.cache(HORIZONTAL_POD_AUTOSCALERS),
        recorder=manager.event_recorder(COMPONENT),
        clock=manager.clock,
        sync_period=sync_period,
    )
    return manager.new_controller("horizontal-pod-autoscaler", reconciler, for_=HORIZONTAL_POD_AUTOSCALERS)


__all__ = [
    "ABLE_TO_SCALE",
    "COMPONENT",
    "DEFAULT_SYNC_PERIOD",
    "NO_RESOURCE_METRICS",
    "SCALING_ACTIVE",
    "HorizontalPodAutoscalerReconciler",
    "add_to_manager",
    "set_condition",
]
