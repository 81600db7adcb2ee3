"""The horizontal-pod-autoscaler controller against an in-process API server, without metrics.

The lab serves no metrics API, so the controller can read a target's ``/scale`` and enforce the
replica bounds, but never compute a count from a metric: the conditions and events must then be
upstream's (``pkg/controller/podautoscaler/horizontal.go``). The sync period runs on a
``ManualClock`` shared with the API server, so the tests move time instead of sleeping.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from controlplane.api.meta import Object
from controlplane.client.manager import Manager
from controlplane.client.rest import ResourceClient
from controlplane.clock import ManualClock
from controlplane.components.controllers import horizontalpodautoscaler
from tests.support.inprocess import InProcessCluster, condition, in_process_cluster, wait_for

START = 1_767_225_630.0
SYNC = 3.0
NO_METRICS = (
    "failed to get cpu utilization: unable to get metrics for resource cpu: "
    "no metrics returned from resource metrics API"
)


@asynccontextmanager
async def hpa_controller(cluster: InProcessCluster, clock: ManualClock) -> AsyncIterator[Manager]:
    manager = Manager(cluster.client, name="kube-controller-manager", clock=clock, rng=random.Random(7))
    horizontalpodautoscaler.add_to_manager(manager, sync_period=SYNC)
    async with manager:
        yield manager


def deployment(replicas: int) -> Object:
    labels = {"app": "web"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }


def hpa(target: str = "web", min_replicas: int = 2, max_replicas: int = 5) -> Object:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
            "minReplicas": min_replicas,
            "maxReplicas": max_replicas,
        },
    }


def resources(cluster: InProcessCluster) -> tuple[ResourceClient, ResourceClient, ResourceClient]:
    return (
        cluster.resource("autoscaling", "v2", "horizontalpodautoscalers", "default"),
        cluster.resource("apps", "v1", "deployments", "default"),
        cluster.resource("", "v1", "events", "default"),
    )


def reason_of(hpa: Object, kind: str) -> str | None:
    found = condition(hpa, kind)
    return None if found is None else str(found["reason"])


def reasons(events: list[Object]) -> dict[str, Any]:
    return {e["reason"]: e for e in events}


async def test_a_missing_target_cannot_be_scaled(tmp_path: Path) -> None:
    clock = ManualClock(START)
    async with in_process_cluster(tmp_path, clock=clock) as cluster, hpa_controller(cluster, clock):
        hpas, _, events = resources(cluster)
        await hpas.create(hpa(target="ghost"))
        [found] = await wait_for(hpas, lambda items: reason_of(items[0], "AbleToScale") == "FailedGetScale")
        seen = await wait_for(events, lambda evs: "FailedGetScale" in reasons(evs))
    able = condition(found, "AbleToScale")
    assert able is not None
    assert (able["status"], able["message"]) == (
        "False",
        "the HPA controller was unable to get the target's current scale: "
        'deployments.apps "ghost" not found',
    )
    assert condition(found, "ScalingActive") is None
    event = reasons(seen)["FailedGetScale"]
    assert (event["type"], event["message"], event["source"]["component"]) == (
        "Warning",
        'deployments.apps "ghost" not found',
        "horizontal-pod-autoscaler",
    )


async def test_below_min_it_scales_up_then_reports_that_metrics_are_missing(tmp_path: Path) -> None:
    clock = ManualClock(START)
    async with in_process_cluster(tmp_path, clock=clock) as cluster, hpa_controller(cluster, clock):
        hpas, deployments, events = resources(cluster)
        await deployments.create(deployment(replicas=1))
        await hpas.create(hpa())
        await wait_for(deployments, lambda items: items[0]["spec"]["replicas"] == 2)
        [rescaled] = await wait_for(
            hpas, lambda items: reason_of(items[0], "AbleToScale") == "SucceededRescale"
        )
        assert rescaled["status"]["currentReplicas"] == 1 and rescaled["status"]["desiredReplicas"] == 2
        assert "lastScaleTime" in rescaled["status"]
        # The next look comes with the sync period, not with the controller's own status write.
        assert reason_of(rescaled, "ScalingActive") is None
        await clock.advance(SYNC)
        [found] = await wait_for(
            hpas, lambda items: reason_of(items[0], "ScalingActive") == "FailedGetResourceMetric"
        )
        seen = await wait_for(events, lambda evs: "FailedComputeMetricsReplicas" in reasons(evs))
    able, active = condition(found, "AbleToScale"), condition(found, "ScalingActive")
    assert able is not None and active is not None
    assert (able["status"], able["reason"]) == ("True", "SucceededGetScale")
    assert (active["status"], active["message"]) == (
        "False",
        f"the HPA was unable to compute the replica count: {NO_METRICS}",
    )
    status = found["status"]
    assert (status["currentReplicas"], status["desiredReplicas"]) == (2, 2)
    assert status["currentMetrics"] == [{"type": ""}]  # Go's zero MetricStatus, as upstream writes it
    by_reason = reasons(seen)
    assert by_reason["SuccessfulRescale"]["message"] == (
        "New size: 2; reason: Current number of replicas below Spec.MinReplicas"
    )
    assert by_reason["FailedGetResourceMetric"]["message"] == NO_METRICS
    assert by_reason["FailedComputeMetricsReplicas"]["message"] == (
        "invalid metrics (1 invalid out of 1), first error is: "
        f"failed to get cpu resource metric value: {NO_METRICS}"
    )


async def test_above_max_it_scales_down_and_at_zero_scaling_is_disabled(tmp_path: Path) -> None:
    clock = ManualClock(START)
    async with in_process_cluster(tmp_path, clock=clock) as cluster, hpa_controller(cluster, clock):
        hpas, deployments, _ = resources(cluster)
        await deployments.create(deployment(replicas=9))
        await hpas.create(hpa(max_replicas=4))
        await wait_for(deployments, lambda items: items[0]["spec"]["replicas"] == 4)
        current = await deployments.get("web")
        current["spec"]["replicas"] = 0
        await deployments.update(current)
        await clock.advance(SYNC)
        [found] = await wait_for(
            hpas, lambda items: reason_of(items[0], "ScalingActive") == "ScalingDisabled"
        )
        assert (await deployments.get("web"))["spec"]["replicas"] == 0  # left alone
    active = condition(found, "ScalingActive")
    assert active is not None and active["message"] == (
        "scaling is disabled since the replica count of the target is zero"
    )
    assert (found["status"]["currentReplicas"], found["status"]["desiredReplicas"]) == (0, 0)
