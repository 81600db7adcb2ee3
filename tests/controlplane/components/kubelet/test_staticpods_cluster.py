"""The control-plane node of a running cluster: its kubelet keeps the control plane's mirror pods.

A whole cluster in-process, as ``runtime.Cluster`` runs it: the ``control-plane`` node registered by its
own kubelet (tainted, marked by kubeadm), the four mirror pods in kube-system, their status following the
lab's real programs (a stopped scheduler's pod goes not Ready and back), a deleted mirror pod made
again, and ``kubectl logs`` of one reaching the kubelet.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from controlplane.api.meta import Object
from controlplane.client.config import Config
from controlplane.client.rest import RESTClient
from controlplane.faults.crashloop import crashed
from controlplane.identity import SYSTEM_MASTERS
from controlplane.runtime import Cluster, ClusterConfig
from controlplane.store.sqlite import SqliteStore
from tests.support.inprocess import condition, wait_for

MIRRORS = {
    "etcd-control-plane": "etcd",
    "kube-apiserver-control-plane": "kube-apiserver",
    "kube-controller-manager-control-plane": "kube-controller-manager",
    "kube-scheduler-control-plane": "kube-scheduler",
}


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[tuple[Cluster, RESTClient]]:
    store = SqliteStore("cp", path=tmp_path / "store.sqlite3")
    cluster = Cluster("cp", ClusterConfig(nodes=1), data_dir=tmp_path, store=store)
    await cluster.start()
    assert cluster.apiserver is not None
    token = cluster.tokens.issue("admin", [SYSTEM_MASTERS])
    client = RESTClient(
        Config.for_in_process(
            cluster.apiserver, "cp", mount_prefix="/clusters/cp", bearer_token=token, qps=-1
        )
    )
    try:
        yield cluster, client
    finally:
        await client.aclose()
        await cluster.stop()


def ready(pod: Object) -> str | None:
    found = condition(pod, "Ready")
    return found["status"] if found is not None else None


def status_uid(items: list[Object], name: str) -> str:
    """The static pod's UID: its config hash (the mirror pod has a UID of its own)."""
    return str(mirrors(items)[name]["metadata"]["annotations"]["kubernetes.io/config.hash"])


def mirrors(items: list[Object]) -> dict[str, Object]:
    return {p["metadata"]["name"]: p for p in items if p["metadata"]["name"] in MIRRORS}


def all_ready(items: list[Object]) -> bool:
    found = mirrors(items)
    return len(found) == len(MIRRORS) and all(ready(p) == "True" for p in found.values())


async def test_the_control_plane_node_and_its_mirror_pods(cluster: tuple[Cluster, RESTClient]) -> None:
    _, client = cluster
    nodes = await wait_for(
        client.resource("", "v1", "nodes"),
        lambda items: any(
            n["metadata"]["name"] == "control-plane"
            and "node-role.kubernetes.io/control-plane" in n["metadata"].get("labels", {})
            for n in items
        ),
    )
    assert sorted(n["metadata"]["name"] for n in nodes) == ["control-plane", "node-1"]
    node = next(n for n in nodes if n["metadata"]["name"] == "control-plane")
    labels = node["metadata"]["labels"]
    assert labels["kubernetes.io/hostname"] == "control-plane"
    assert labels["node.kubernetes.io/exclude-from-external-load-balancers"] == ""
    assert {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"} in node["spec"]["taints"]
    assert ready(node) == "True"

    pods = client.resource("", "v1", "pods", "kube-system")
    items = await wait_for(pods, all_ready)
    for name, program in MIRRORS.items():
        pod = mirrors(items)[name]
        meta, spec = pod["metadata"], pod["spec"]
        annotations = meta["annotations"]
        assert annotations["kubernetes.io/config.source"] == "file"
        assert annotations["kubernetes.io/config.mirror"] == annotations["kubernetes.io/config.hash"]
        assert annotations["kubernetes.io/config.seen"]
        assert meta["labels"] == {"component": program, "tier": "control-plane"}
        [owner] = meta["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["uid"]) == (
            "Node",
            "control-plane",
            node["metadata"]["uid"],
        )
        assert spec["nodeName"] == "control-plane" and spec["hostNetwork"] is True
        assert spec["priorityClassName"] == "system-node-critical"
        [container] = spec["containers"]
        assert container["name"] == program and container["command"][0] == program
        assert pod["status"]["phase"] == "Running"
        assert pod["status"]["podIP"] == node["status"]["addresses"][0]["address"]
    assert mirrors(items)["kube-scheduler-control-plane"]["spec"]["containers"][0]["image"] == (
        "registry.k8s.io/kube-scheduler:v1.37.0"
    )

    # kube-proxy's DaemonSet runs there too (it tolerates every taint); no ordinary pod does.
    await wait_for(
        pods,
        lambda items: any(
            p["metadata"]["labels"].get("k8s-app") == "kube-proxy"
            and p["spec"].get("nodeName") == "control-plane"
            for p in items
        ),
    )


async def test_a_stopped_scheduler_makes_its_mirror_pod_not_ready(
    cluster: tuple[Cluster, RESTClient],
) -> None:
    lab, client = cluster
    pods = client.resource("", "v1", "pods", "kube-system")
    await wait_for(pods, all_ready)
    name = "kube-scheduler-control-plane"

    assert await lab.stop_component("scheduler")
    items = await wait_for(pods, lambda items: ready(mirrors(items)[name]) == "False")
    [status] = mirrors(items)[name]["status"]["containerStatuses"]
    assert status["ready"] is False and "running" not in status["state"]
    assert status["state"]["terminated"]["reason"] == "Completed"

    assert await lab.start_component("scheduler")
    items = await wait_for(pods, lambda items: ready(mirrors(items)[name]) == "True")
    [status] = mirrors(items)[name]["status"]["containerStatuses"]
    assert status["restartCount"] == 1 and "running" in status["state"]

    # A crash (the process killed, its Lease left held) waits in CrashLoopBackOff.
    assert await lab.stop_component("scheduler", release_lease=False, reason=crashed("scheduler", 20.0))
    items = await wait_for(pods, lambda items: ready(mirrors(items)[name]) == "False")
    [status] = mirrors(items)[name]["status"]["containerStatuses"]
    assert status["state"]["waiting"] == {
        "reason": "CrashLoopBackOff",
        "message": "back-off 20s restarting failed container=kube-scheduler pod=kube-scheduler-control-plane"
        f"_kube-system({status_uid(items, name)})",
    }
    assert status["lastState"]["terminated"]["exitCode"] == 1
    answer = await pods.request("GET", name, "log", params={"previous": "true"})
    assert "simulated crash" in answer.content.decode()


async def test_a_deleted_mirror_pod_is_made_again(cluster: tuple[Cluster, RESTClient]) -> None:
    _, client = cluster
    pods = client.resource("", "v1", "pods", "kube-system")
    items = await wait_for(pods, all_ready)
    old = mirrors(items)["kube-controller-manager-control-plane"]
    await pods.delete(old["metadata"]["name"])

    def replaced(items: list[Object]) -> bool:
        pod = mirrors(items).get("kube-controller-manager-control-plane")
        return pod is not None and pod["metadata"]["uid"] != old["metadata"]["uid"] and ready(pod) == "True"

    items = await wait_for(pods, replaced)
    new = mirrors(items)["kube-controller-manager-control-plane"]
    assert (
        new["metadata"]["annotations"]["kubernetes.io/config.hash"]
        == (old["metadata"]["annotations"]["kubernetes.io/config.hash"])
    )
    # The static pod's containers ran on: the same container, started at the same time.
    assert new["status"]["containerStatuses"] == old["status"]["containerStatuses"]
    assert new["status"]["startTime"] == old["status"]["startTime"]


async def test_the_scheduler_mirror_pods_log_comes_from_the_kubelet(
    cluster: tuple[Cluster, RESTClient],
) -> None:
    _, client = cluster
    pods = client.resource("", "v1", "pods", "kube-system")
    await wait_for(pods, all_ready)
    answer = await pods.request("GET", "kube-scheduler-control-plane", "log")
    text = answer.content.decode()
    assert '"Starting Kubernetes Scheduler" version="v1.37.0"' in text
    # Then what the lab's scheduler logged itself, as klog prints it (its leader election's lines).
    assert re.search(
        r"^I\d{4} [0-9:.]+ +1 leaderelection\.py:\d+\] .*: attempting to acquire leader lease "
        r"kube-system/kube-scheduler$",
        text,
        re.MULTILINE,
    ), text
    assert "apiserver" not in text, "what the API server logs while serving its requests is not its"
