"""link-latency: every request of one component waits before it reaches the API server."""

from __future__ import annotations

import time

from controlplane.client.config import Config
from controlplane.client.rest import RESTClient
from controlplane.identity import SYSTEM_MASTERS
from tests.controlplane.faults.conftest import NAME, Running
from tests.support.inprocess import wait_for


def _over_link(running: Running, component: str) -> RESTClient:
    """An admin client over ``component``'s link, as that component reaches the API server."""
    token = running.cluster.tokens.issue("admin-link", [SYSTEM_MASTERS])
    return RESTClient(
        Config.for_in_process(
            running.cluster.endpoint.link(component),
            NAME,
            mount_prefix=f"/clusters/{NAME}",
            bearer_token=token,
            qps=-1,
        )
    )


async def _timed_get(client: RESTClient) -> float:
    began = time.perf_counter()
    await client.resource("", "v1", "namespaces").get("default")
    return time.perf_counter() - began


async def test_a_slow_link_delays_that_components_requests_only_until_cleared(running: Running) -> None:
    cluster, trace = running.cluster, running.trace
    slowed, other = _over_link(running, "scheduler"), _over_link(running, "controller-manager")
    start = len(trace.events)
    values = {"component": "scheduler", "ms": 300, "jitter": 50}

    await running.faults.apply(cluster.name, "link-latency", values)

    on = await trace.until(lambda e: e["type"] == "fault.applied", after=start)
    assert (on["target"], on["to"], on["params"]) == ("scheduler", "apiserver", values)
    assert await _timed_get(slowed) >= 0.25
    assert await _timed_get(other) < 0.25
    # The scheduler works on, only later: a new pod is still bound.
    pods = running.admin.resource("", "v1", "pods", "default")
    await pods.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "late"},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        }
    )
    await wait_for(pods, lambda items: bool(items and items[0]["spec"].get("nodeName")), seconds=30)

    await running.faults.clear(cluster.name, "link-latency", values)

    assert cluster.endpoint.links is None
    assert await _timed_get(slowed) < 0.25
    await slowed.aclose()
    await other.aclose()
