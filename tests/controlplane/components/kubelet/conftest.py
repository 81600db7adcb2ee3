from __future__ import annotations

import random
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from controlplane.clock import ManualClock
from controlplane.components.kubelet.kubelet import Kubelet
from controlplane.identity import NODES, UserInfo, node_user
from controlplane.trace import ListSink
from tests.support.inprocess import CLUSTER, InProcessCluster, in_process_cluster

NODE = "node-1"
StartKubelet = Callable[..., Awaitable[Kubelet]]


def make_pod(*containers: dict[str, Any], restart_policy: str = "Always", **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "web", "namespace": "default", "uid": "uid-1"},
        "spec": {"containers": list(containers), "restartPolicy": restart_policy, **spec},
        "status": {
            "phase": "Pending",
            "qosClass": "BestEffort",
            "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": "x"}],
        },
    }


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def trace() -> ListSink:
    return ListSink()


@pytest.fixture
async def cluster(tmp_path: Path, clock: ManualClock) -> AsyncIterator[InProcessCluster]:
    async with in_process_cluster(tmp_path, clock=clock) as running:
        yield running


@pytest.fixture
async def start_kubelet(
    cluster: InProcessCluster, clock: ManualClock, trace: ListSink
) -> AsyncIterator[StartKubelet]:
    started: list[Kubelet] = []

    async def start(**options: Any) -> Kubelet:
        user = UserInfo.create(node_user(NODE), groups=[NODES])
        kubelet = Kubelet(
            cluster.client_for(user),
            NODE,
            clock=clock,
            rng=random.Random(1),
            trace=trace,
            cluster=CLUSTER,
            internal_ip="10.0.0.11",
            pod_cidr="10.244.1.0/24",
            **options,
        )
        await kubelet.start()
        started.append(kubelet)
        return kubelet

    try:
        yield start
    finally:
        for kubelet in started:
            await kubelet.stop()
