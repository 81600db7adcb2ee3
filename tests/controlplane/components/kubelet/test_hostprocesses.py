"""The seam between a simulated pod and a process of the lab: kube-proxy's pod follows its process."""

from __future__ import annotations

from typing import Any

from controlplane.components.kubelet.hostprocesses import KubeProxyPods, with_process
from controlplane.components.kubelet.lifecycle import ContainerSnapshot, PodSnapshot, Running


def pod(namespace: str, app: str, node: str = "node-2") -> dict[str, Any]:
    return {
        "metadata": {"namespace": namespace, "name": "p", "labels": {"k8s-app": app}},
        "spec": {"nodeName": node},
    }


def snapshot() -> PodSnapshot:
    container = ContainerSnapshot(
        "kube-proxy",
        "img",
        "id",
        "containerd://1",
        Running(0.0),
        None,
        ready=True,
        started=True,
        restart_count=0,
    )
    return PodSnapshot((), (container,), sandbox_ready=True, terminal=False, has_init_containers=False)


def test_only_kube_systems_kube_proxy_pods_stand_for_their_nodes_process() -> None:
    asked: list[str] = []

    def runs_on(node: str) -> bool | None:
        asked.append(node)
        return node == "node-1"

    pods = KubeProxyPods(runs_on)
    assert pods.runs(pod("kube-system", "kube-proxy", "node-1")) is True
    assert pods.runs(pod("kube-system", "kube-proxy", "node-2")) is False
    assert pods.runs(pod("default", "kube-proxy")) is None, "a student's look-alike is an ordinary pod"
    assert pods.runs(pod("kube-system", "kube-dns")) is None
    assert pods.runs(pod("kube-system", "kube-proxy", "")) is None, "not bound yet"
    assert asked == ["node-1", "node-2"]


def test_a_stopped_process_makes_the_containers_unready_and_nothing_else() -> None:
    base = snapshot()
    assert with_process(base, None) is base and with_process(base, True) is base
    stopped = with_process(base, False)
    [container] = stopped.containers
    assert not container.ready
    assert container.state == Running(0.0) and container.started, "the container still runs"
