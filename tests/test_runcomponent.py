"""``manage.py runcomponent``: components as processes of their own, over HTTPS, as upstream runs them.

The lab runs without an in-process scheduler (``KUBELAB_COMPONENTS``); two schedulers run as separate
processes with leader election. Only the leader schedules; killed with SIGKILL (no chance to release
its Lease), it is replaced once the Lease expires (3 s under the classroom profile) and the other
process schedules the next pod. A kubelet started the same way registers its node over HTTPS.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from config.settings import BASE_DIR
from tests.support.lab import LiveLab


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveLab]:
    live = LiveLab(
        Path(tmp_path_factory.mktemp("runcomponent")),
        KUBELAB_COMPONENTS="controller-manager,kubelet,kube-proxy",
        KUBELAB_NODES="2",
    )
    try:
        yield live
    finally:
        live.stop()


def runcomponent(lab: LiveLab, *args: str) -> subprocess.Popen[str]:
    command = [
        sys.executable, "manage.py", "runcomponent", *args, "--cluster", "demo",
        "--server", f"https://127.0.0.1:{lab.api}", "--data-dir", str(lab.data_dir),
    ]  # fmt: skip
    return subprocess.Popen(
        command, cwd=BASE_DIR, env=lab.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def lease_holder(lab: LiveLab) -> str:
    found = lab.kubectl("get", "lease", "kube-scheduler", "-n", "kube-system", "-o", "json", check=False)
    return str(json.loads(found.stdout)["spec"].get("holderIdentity") or "") if found.returncode == 0 else ""


def node_of(lab: LiveLab, pod: str) -> str:
    return str(lab.kubectl_json("get", "pod", pod)["spec"].get("nodeName") or "")


def stop(process: subprocess.Popen[str]) -> str:
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return process.stdout.read() if process.stdout else ""


def test_a_killed_scheduler_leader_is_replaced_by_its_standby(lab: LiveLab) -> None:
    first = runcomponent(lab, "scheduler", "--leader-elect")
    second: subprocess.Popen[str] | None = None
    try:
        leader = lab.eventually(lambda: lease_holder(lab), "the first scheduler to take the Lease")
        second = runcomponent(lab, "scheduler", "--leader-elect")
        lab.kubectl("run", "before", "--image=nginx")
        assert lab.eventually(lambda: node_of(lab, "before"), "the leader to schedule a pod")

        first.send_signal(signal.SIGKILL)  # no release: the standby must wait for the Lease to expire
        first.wait(10)
        lab.kubectl("run", "after", "--image=nginx")
        new_leader = lab.eventually(
            lambda: (h := lease_holder(lab)) != leader and h, "the standby to take the Lease"
        )
        assert new_leader != leader
        assert lab.eventually(lambda: node_of(lab, "after"), "the new leader to schedule the pod")
        lease = lab.kubectl_json("get", "lease", "kube-scheduler", "-n", "kube-system")
        assert lease["spec"]["leaseTransitions"] >= 1
    finally:
        stop(first)
        if second is not None:
            output = stop(second)
            assert "stopped" in output, output


def test_a_kubelet_as_a_process_registers_its_node_over_https(lab: LiveLab) -> None:
    kubelet = runcomponent(lab, "kubelet", "--node", "node-9")
    try:

        def ready() -> bool:
            found = lab.kubectl("get", "node", "node-9", "-o", "json", check=False)
            if found.returncode != 0:
                return False
            conditions = json.loads(found.stdout)["status"].get("conditions") or []
            return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

        assert lab.eventually(ready, "node-9 to register and be Ready")
        lease = lab.kubectl_json("get", "lease", "node-9", "-n", "kube-node-lease")
        assert lease["spec"]["holderIdentity"] == "node-9"
    finally:
        output = stop(kubelet)
    assert "kubelet on node-9 of cluster 'demo'" in output
    assert "as system:node:node-9" in output
