"""Pods that stand for a process of the lab: a simulated container whose readiness is a real component's.

A Kubelab node runs no containers; its kubelet plays each container's behaviour on the cluster clock
(``simulation.py``, ``lifecycle.py``). A few of the lab's own components, though, do run on a node:
the in-process kube-proxy of ``node-1`` *is* what the pod ``kube-system/kube-proxy-xxxxx`` bound to
``node-1`` stands for (the kube-proxy DaemonSet of ``apiserver/kubesystemaddons.py``). On a real node
that pod's container is the kube-proxy process; stop the process and the container is no longer
running, so the kubelet reports the pod not Ready (``pkg/kubelet/status/status_manager.go`` sets the
``Ready`` condition from the containers' readiness).

``HostProcesses`` is the seam: the kubelet asks it, for each pod it writes a status for, whether the
process the pod stands for runs (None: the pod stands for nothing, it is an ordinary simulated pod).
While the process is stopped the pod's containers are reported running but not ready, with the
``Ready`` and ``ContainersReady`` conditions False ("containers with unready status: [kube-proxy]");
once it runs again they are ready again. Whoever runs the processes (the lab's ``Cluster``) tells the
kubelet when one starts or stops (``Kubelet.host_processes_changed``), so nothing polls.

Simplification: a real kube-proxy container that dies is restarted by its kubelet (restart count,
CrashLoopBackOff); here the process is the lab's, started and stopped by faults, and the container
only follows its readiness.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, Final, Protocol

from controlplane.components.kubelet.lifecycle import PodSnapshot

#: Where the kube-proxy DaemonSet's pods live, and the label they carry (kubeadm's manifest).
KUBE_PROXY_NAMESPACE: Final = "kube-system"
KUBE_PROXY_SELECTOR: Final = ("k8s-app", "kube-proxy")


class HostProcesses(Protocol):
    """What a kubelet asks about the node's own processes."""

    def runs(self, pod: Mapping[str, Any]) -> bool | None:
        """Whether the process ``pod`` stands for runs; None when the pod stands for no process."""
        ...


class KubeProxyPods:
    """``HostProcesses`` for the kube-proxy DaemonSet: its pod on a node stands for that node's
    kube-proxy. ``runs_on(node)`` says whether the kube-proxy of ``node`` runs (None: there is none
    to stand for, the pod is an ordinary simulated one)."""

    def __init__(self, runs_on: Callable[[str], bool | None]) -> None:
        self.runs_on = runs_on

    def runs(self, pod: Mapping[str, Any]) -> bool | None:
        meta: Mapping[str, Any] = pod.get("metadata") or {}
        labels: Mapping[str, Any] = meta.get("labels") or {}
        key, value = KUBE_PROXY_SELECTOR
        if meta.get("namespace") != KUBE_PROXY_NAMESPACE or labels.get(key) != value:
            return None
        node = (pod.get("spec") or {}).get("nodeName")
        return self.runs_on(node) if isinstance(node, str) and node else None


def with_process(snapshot: PodSnapshot, runs: bool | None) -> PodSnapshot:
    """``snapshot`` as the pod's status should show it when its process runs (or not, or is none):
    a stopped process makes every container unready; otherwise the snapshot is as the lifecycle says."""
    if runs is None or runs:
        return snapshot
    return dataclasses.replace(
        snapshot, containers=tuple(dataclasses.replace(c, ready=False) for c in snapshot.containers)
    )


__all__ = ["HostProcesses", "KubeProxyPods", "with_process"]
