"""Pod status as upstream's kubelet writes it (getPhase, generate.go conditions, container statuses)."""

from __future__ import annotations

from typing import Any

from controlplane.components.kubelet.lifecycle import PodLifecycle
from controlplane.components.kubelet.simulation import PullTiming
from controlplane.components.kubelet.status import generate_pod_status
from tests.controlplane.components.kubelet.conftest import make_pod

T0 = 1_700_000_000.0


def status_at(pod: dict[str, Any], lc: PodLifecycle, now: float) -> dict[str, Any]:
    lc.advance(now)
    status = generate_pod_status(pod, lc.snapshot(), now=now, host_ip="10.0.0.2", pod_ips=["10.244.1.5"])
    pod["status"] = status
    return status


def conditions(status: dict[str, Any]) -> dict[str, tuple[str, str | None]]:
    return {c["type"]: (c["status"], c.get("reason")) for c in status["conditions"]}


def test_pending_while_pulling_then_running_and_ready() -> None:
    pod = make_pod({"name": "web", "image": "nginx:1.25"})
    lc = PodLifecycle(pod, now=T0, timing=PullTiming(default=5))
    s = status_at(pod, lc, T0)
    assert s["phase"] == "Pending"
    assert [c["type"] for c in s["conditions"]] == [
        "PodReadyToStartContainers",
        "Initialized",
        "Ready",
        "ContainersReady",
        "PodScheduled",
    ]
    assert conditions(s)["Ready"] == ("False", "ContainersNotReady")
    ready = next(c for c in s["conditions"] if c["type"] == "Ready")
    assert ready["message"] == "containers with unready status: [web]"
    cs = s["containerStatuses"][0]
    assert cs["state"] == {"waiting": {"reason": "ContainerCreating"}} and cs["lastState"] == {}
    assert cs["ready"] is False and cs["started"] is False and "containerID" not in cs
    assert s["podIP"] == "10.244.1.5" and s["podIPs"] == [{"ip": "10.244.1.5"}] and s["hostIP"] == "10.0.0.2"
    assert s["qosClass"] == "BestEffort"
    initialized_at = s["conditions"][1]["lastTransitionTime"]

    s = status_at(pod, lc, T0 + 5)
    assert s["phase"] == "Running"
    assert conditions(s)["Ready"] == ("True", None) and conditions(s)["ContainersReady"] == ("True", None)
    assert s["conditions"][1]["lastTransitionTime"] == initialized_at  # unchanged status, unchanged time
    assert s["conditions"][2]["lastTransitionTime"] == "2023-11-14T22:13:25Z"
    cs = s["containerStatuses"][0]
    assert cs["state"] == {"running": {"startedAt": "2023-11-14T22:13:25Z"}}
    assert cs["image"] == "docker.io/library/nginx:1.25" and cs["imageID"].startswith(
        "docker.io/library/nginx@sha256:"
    )
    assert cs["containerID"].startswith("containerd://") and cs["ready"] and cs["started"]
    assert s["startTime"] == "2023-11-14T22:13:20Z"


def test_succeeded_and_failed_phases() -> None:
    ok = make_pod(
        {"name": "job", "image": "busybox", "command": ["sh", "-c", "echo done"]}, restart_policy="Never"
    )
    s = status_at(ok, PodLifecycle(ok, now=T0), T0 + 1)
    assert s["phase"] == "Succeeded"
    assert conditions(s)["Ready"] == ("False", "PodCompleted")
    assert s["containerStatuses"][0]["state"]["terminated"]["reason"] == "Completed"
    bad = make_pod(
        {"name": "job", "image": "busybox", "command": ["sh", "-c", "exit 2"]}, restart_policy="Never"
    )
    s = status_at(bad, PodLifecycle(bad, now=T0), T0 + 1)
    assert s["phase"] == "Failed" and s["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 2


def test_crash_loop_is_running_phase_with_last_state() -> None:
    pod = make_pod({"name": "c", "image": "busybox", "command": ["false"]})
    lc = PodLifecycle(pod, now=T0)
    s = status_at(pod, lc, T0 + 5)
    assert s["phase"] == "Running"  # restartPolicy Always: "in the process of restarting"
    cs = s["containerStatuses"][0]
    assert cs["state"]["waiting"]["reason"] == "CrashLoopBackOff" and cs["restartCount"] == 1
    assert (
        cs["lastState"]["terminated"]["exitCode"] == 1 and cs["lastState"]["terminated"]["reason"] == "Error"
    )


def test_init_container_pending_and_failed_with_never() -> None:
    pod = make_pod(
        {"name": "app", "image": "nginx:1.25"},
        restart_policy="Never",
        initContainers=[{"name": "setup", "image": "busybox", "command": ["sh", "-c", "sleep 2; exit 1"]}],
    )
    lc = PodLifecycle(pod, now=T0)
    s = status_at(pod, lc, T0)
    assert s["phase"] == "Pending"
    init = next(c for c in s["conditions"] if c["type"] == "Initialized")
    assert (
        init["reason"] == "ContainersNotInitialized"
        and init["message"] == "containers with incomplete status: [setup]"
    )
    assert s["containerStatuses"][0]["state"] == {"waiting": {"reason": "PodInitializing"}}
    s = status_at(pod, lc, T0 + 2)
    assert s["phase"] == "Failed"


def test_the_status_and_the_kubelets_conditions_observe_the_pods_generation() -> None:
    pod = make_pod({"name": "web", "image": "nginx:1.25"})
    lc = PodLifecycle(pod, now=T0, timing=PullTiming(default=5))
    unversioned = status_at(pod, lc, T0)
    assert "observedGeneration" not in unversioned, "a pod without a generation has none to observe"
    pod["metadata"]["generation"] = 3
    s = status_at(pod, lc, T0 + 1)
    assert s["observedGeneration"] == 3
    observed = {c["type"]: c.get("observedGeneration") for c in s["conditions"]}
    # the kubelet's own conditions; PodScheduled is the scheduler's and stays as it was
    assert observed == {
        "PodReadyToStartContainers": 3,
        "Initialized": 3,
        "Ready": 3,
        "ContainersReady": 3,
        "PodScheduled": None,
    }
