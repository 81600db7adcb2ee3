"""slow-store and store-unavailable: etcd on a slow disk, and etcd out of the API server's reach.

A slow disk makes every etcd commit wait for its write-ahead log's fsync, and every write request of
kube-apiserver with it; reads served from the watch cache are not slowed. An unreachable etcd fails
every request that needs it with the etcd client's own error, which kube-apiserver answers as 500
with no reason (``convertStorageErrorOrNot`` in endpoints/handlers/responsewriters/status.go:
``Error from server: etcdserver: request timed out`` in kubectl), and its readyz check of etcd
fails. Both end when cleared, and nothing acknowledged is lost.
"""

from __future__ import annotations

import time

import pytest

from controlplane.client.errors import APIError
from controlplane.store.conditions import REQUEST_TIMED_OUT
from tests.controlplane.faults.conftest import Running


def configmap(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": name}}


def _admin_create(event: dict[str, object]) -> bool:
    """The API server's ``request.completed`` of a ConfigMap the test's admin created."""
    return event["type"] == "request.completed" and (
        event.get("user"),
        event.get("verb"),
        event.get("resource"),
    ) == (
        "admin",
        "create",
        "configmaps",
    )


async def test_a_slow_store_slows_every_write_down_until_cleared(running: Running) -> None:
    cluster, trace = running.cluster, running.trace
    configmaps = running.admin.resource("", "v1", "configmaps", "default")
    first = len(trace.events)
    await configmaps.create(configmap("before"))
    start = len(trace.events)

    await running.faults.apply(cluster.name, "slow-store", {"delay": 300})

    on = await trace.until(lambda e: e["type"] == "fault.applied", after=start)
    assert (on["target"], on["params"]) == ("etcd", {"delay": 300})
    assert cluster.store.conditions is not None and cluster.store.conditions.commit_delay == 0.3
    began = time.perf_counter()
    created = await configmaps.create(configmap("slow"))
    assert time.perf_counter() - began >= 0.3
    # The API server's own account of the request: its latency holds the commit's wait.
    completed = await trace.nth(_admin_create, 2, after=first)
    assert completed["code"] == 201 and completed["duration"] >= 0.3
    start = len(trace.events)

    await running.faults.clear(cluster.name, "slow-store", {"delay": 300})

    assert cluster.store.conditions is None
    await trace.until(lambda e: e["type"] == "fault.cleared", after=start)
    await configmaps.create(configmap("fast"))
    completed = await trace.nth(_admin_create, 3, after=first)
    assert completed["code"] == 201 and completed["duration"] < 0.3
    names = {c["metadata"]["name"] for c in (await configmaps.list())["items"]}
    assert {"before", "slow", "fast"} <= names
    assert (await configmaps.get("slow"))["metadata"]["uid"] == created["metadata"]["uid"]


async def test_an_unreachable_store_fails_writes_and_readyz_until_cleared(running: Running) -> None:
    cluster, trace = running.cluster, running.trace
    configmaps = running.admin.resource("", "v1", "configmaps", "default")
    first = len(trace.events)
    kept = await configmaps.create(configmap("kept"))
    start = len(trace.events)

    await running.faults.apply(cluster.name, "store-unavailable", {})

    on = await trace.until(lambda e: e["type"] == "fault.applied", after=start)
    assert (on["fault"], on["target"]) == ("store-unavailable", "etcd")
    with pytest.raises(APIError) as refused:
        await configmaps.create(configmap("refused"))
    assert refused.value.code == 500
    assert refused.value.message == REQUEST_TIMED_OUT
    assert refused.value.status.get("reason") in ("", None)
    failed = await trace.nth(_admin_create, 2, after=first)
    assert failed["code"] == 500
    with pytest.raises(APIError) as unready:
        await running.admin.request("GET", "/readyz", params={"verbose": ""})
    assert unready.value.code == 500
    readyz = await running.admin.request("GET", "/readyz", params={"verbose": "", "exclude": "etcd"})
    assert "[+]etcd excluded: ok" in readyz.text
    # A read the watch cache serves (resourceVersion=0) needs no store.
    cached = await configmaps.list(resource_version="0")
    assert "kept" in {c["metadata"]["name"] for c in cached["items"]}
    start = len(trace.events)

    await running.faults.clear(cluster.name, "store-unavailable")

    assert cluster.store.conditions is None
    await trace.until(lambda e: e["type"] == "fault.cleared", after=start)
    readyz = await running.admin.request("GET", "/readyz", params={"verbose": ""})
    assert "[+]etcd ok" in readyz.text
    await configmaps.create(configmap("after"))
    names = {c["metadata"]["name"] for c in (await configmaps.list())["items"]}
    assert {"kept", "after"} <= names and "refused" not in names
    assert (await configmaps.get("kept"))["metadata"]["uid"] == kept["metadata"]["uid"]
