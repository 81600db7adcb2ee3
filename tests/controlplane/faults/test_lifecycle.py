"""No fault outlives the cluster it was for: a cluster that hibernates or is made anew loses its faults.

Its components all stop with it and all start again when it wakes, so a stopped kubelet runs again;
what the lab ran inside it (a hot loop) stops, and the objects made for it are deleted first.
"""

from __future__ import annotations

import pytest

from controlplane.client.config import Config
from controlplane.client.errors import NotFound
from controlplane.client.rest import RESTClient
from controlplane.faults import hotloop
from controlplane.identity import SYSTEM_MASTERS
from controlplane.runtime import ClusterState
from tests.controlplane.faults.conftest import NAME, Running
from tests.support.inprocess import wait_for


async def test_hibernation_clears_the_faults_and_waking_brings_every_kubelet_back(running: Running) -> None:
    lab, cluster, trace = running.lab, running.cluster, running.trace
    await wait_for(running.admin.resource("", "v1", "nodes"), lambda items: len(items) == 4)
    await running.faults.apply(NAME, "stop-kubelet", {"node": "node-1"})
    await running.faults.apply(NAME, "hot-loop-client", {})
    start = len(trace.events)

    assert await lab.hibernate(NAME)

    assert cluster.state is ClusterState.HIBERNATED
    assert running.faults.in_force() == [] and cluster.faults_in_force == []
    cleared = [e for e in trace.events[start:] if e["type"] == "fault.cleared"]
    assert sorted(e["fault"] for e in cleared) == ["hot-loop-client", "stop-kubelet"]
    assert {e["reason"] for e in cleared} == {"the cluster stops"}

    await lab.wake(NAME)
    await lab.settled(NAME)  # its components too, not only its API server
    assert cluster.components_stopped == set() and "kubelet:node-1" in cluster.components_running
    with pytest.raises(NotFound):
        await running.admin.resource("flowcontrol.apiserver.k8s.io", "v1", "flowschemas").get(hotloop.NAME)


async def test_a_cluster_made_anew_has_no_faults(running: Running) -> None:
    lab = running.lab
    await running.faults.apply(NAME, "stop-kubelet", {"node": "node-2"})

    remade = await lab.recreate_cluster(NAME)

    assert remade is not running.cluster and remade.faults_in_force == []
    assert running.faults.in_force() == []
    token = remade.tokens.issue("admin", [SYSTEM_MASTERS])
    async with RESTClient(
        Config.for_in_process(
            remade.endpoint, NAME, mount_prefix=f"/clusters/{NAME}", bearer_token=token, qps=-1
        )
    ) as admin:
        await wait_for(admin.resource("", "v1", "nodes"), lambda items: len(items) == 4)
    assert "kubelet:node-2" in remade.components_running
