"""Pod status from container states, written the way upstream's kubelet writes it.

``generate_pod_status(pod, snapshot, ...)`` is the pure heart of the kubelet's status update: given
the pod (for its spec and its current status) and the lifecycle's snapshot, it returns the new
``status`` object. Upstream (kubernetes/kubernetes):

* pkg/kubelet/kubelet_pods.go ``getPhase``: Pending / Running / Succeeded / Failed from the containers.
* pkg/kubelet/kubelet_pods.go ``convertToAPIContainerStatuses``: state, lastState, ready, started,
  restartCount, image, imageID, containerID; containers not created yet wait in ``ContainerCreating``
  (``PodInitializing`` when the pod has init containers).
* pkg/kubelet/status/generate.go: the PodReadyToStartContainers, Initialized, ContainersReady and
  Ready conditions, with their reasons and "containers with unready status: [a b]" messages.
* pkg/kubelet/status/status_manager.go ``updateLastTransitionTime``: a condition's
  lastTransitionTime changes only when its status does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from controlplane.api.meta import format_time
from controlplane.components.kubelet.lifecycle import (
    ContainerSnapshot,
    PodSnapshot,
    Running,
    Terminated,
    Waiting,
)

KUBELET_CONDITIONS = ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady")


def _state(state: Waiting | Running | Terminated | None) -> dict[str, Any]:
    if isinstance(state, Waiting):
        waiting: dict[str, Any] = {"reason": state.reason}
        if state.message:
            waiting["message"] = state.message
        return {"waiting": waiting}
    if isinstance(state, Running):
        return {"running": {"startedAt": format_time(state.started_at)}}
    if isinstance(state, Terminated):
        terminated: dict[str, Any] = {
            "exitCode": state.exit_code,
            "reason": state.reason,
            "startedAt": format_time(state.started_at),
            "finishedAt": format_time(state.finished_at),
        }
        if state.message:
            terminated["message"] = state.message
        if state.container_id:
            terminated["containerID"] = state.container_id
        return {"terminated": terminated}
    return {}


def container_status(c: ContainerSnapshot) -> dict[str, Any]:
    """One entry of ``containerStatuses`` / ``initContainerStatuses``."""
    status: dict[str, Any] = {
        "name": c.name,
        "state": _state(c.state),
        "lastState": _state(c.last_state),
        "ready": c.ready,
        "restartCount": c.restart_count,
        "image": c.image,
        "imageID": c.image_id,
        "started": c.started,
    }
    if c.container_id:
        status["containerID"] = c.container_id
    return status


def get_phase(spec: Mapping[str, Any], snapshot: PodSnapshot) -> str:
    """kubelet_pods.go ``getPhase``."""
    restart_policy = spec.get("restartPolicy") or "Always"
    pending_init = failed_init = pending_sidecars = 0
    for c in snapshot.init_containers:
        if c.restartable_init:
            continue
        last_failed = c.last_state is not None and c.last_state.exit_code != 0
        if isinstance(c.state, Running):
            pending_init += 1
        elif isinstance(c.state, Terminated):
            failed_init += c.state.exit_code != 0
        elif c.last_state is not None:
            failed_init += last_failed
        else:
            pending_init += 1
    running = waiting = stopped = succeeded = 0
    for c in snapshot.init_containers:
        if not c.restartable_init:
            continue
        if isinstance(c.state, Running):
            pending_sidecars += not c.started
            running += 1
        elif isinstance(c.state, Waiting) and c.last_state is None:
            pending_sidecars += 1
    for c in snapshot.containers:
        if isinstance(c.state, Running):
            running += 1
        elif isinstance(c.state, Terminated):
            stopped += 1
            succeeded += c.state.exit_code == 0
        elif c.last_state is not None:
            stopped += 1
        else:
            waiting += 1
    if failed_init and restart_policy == "Never":
        return "Failed"
    if pending_init or pending_sidecars or waiting:
        return "Pending"
    if running:
        return "Running"
    if stopped:
        if snapshot.terminal:
            return "Succeeded" if stopped == succeeded else "Failed"
        if restart_policy == "Always":
            return "Running"
        if stopped == succeeded:
            return "Succeeded"
        return "Failed" if restart_policy == "Never" else "Running"
    return "Pending"


def _names(cs: Sequence[ContainerSnapshot]) -> str:
    return "[" + " ".join(c.name for c in cs) + "]"


def _conditions(spec: Mapping[str, Any], snapshot: PodSnapshot, phase: str) -> list[dict[str, Any]]:
    """generate.go, in the order the kubelet appends them."""
    out: list[dict[str, Any]] = [
        {"type": "PodReadyToStartContainers", "status": "True" if snapshot.sandbox_ready else "False"}
    ]
    incomplete = [
        c
        for c in snapshot.init_containers
        if not (
            c.started if c.restartable_init else (isinstance(c.state, Terminated) and c.state.exit_code == 0)
        )
    ]
    if not snapshot.init_containers or not incomplete or phase == "Succeeded":
        initialized: dict[str, Any] = {"type": "Initialized", "status": "True"}
        if snapshot.init_containers and phase == "Succeeded" and incomplete:
            initialized["reason"] = "PodCompleted"
    else:
        initialized = {
            "type": "Initialized",
            "status": "False",
            "reason": "ContainersNotInitialized",
            "message": f"containers with incomplete status: {_names(incomplete)}",
        }
    out.append(initialized)
    unready = [c for c in snapshot.init_containers if c.restartable_init and not c.ready]
    unready += [c for c in snapshot.containers if not c.ready]
    if phase == "Succeeded":
        containers_ready: dict[str, Any] = {
            "type": "ContainersReady",
            "status": "False",
            "reason": "PodCompleted",
        }
    elif unready:
        containers_ready = {
            "type": "ContainersReady",
            "status": "False",
            "reason": "ContainersNotReady",
            "message": f"containers with unready status: {_names(unready)}",
        }
    else:
        containers_ready = {"type": "ContainersReady", "status": "True"}
    ready = {**containers_ready, "type": "Ready"}
    return [*out, ready, containers_ready]


def generate_pod_status(
    pod: Mapping[str, Any],
    snapshot: PodSnapshot,
    *,
    now: float,
    host_ip: str,
    pod_ips: Sequence[str] = (),
) -> dict[str, Any]:
    """The pod's new ``status``; conditions keep their lastTransitionTime unless their status changed."""
    spec: Mapping[str, Any] = pod.get("spec") or {}
    old: Mapping[str, Any] = pod.get("status") or {}
    # PodObservedGenerationTracking (GA in 1.35): the status and each condition the kubelet sets say
    # which metadata.generation they were computed for (``CalculatePodStatusObservedGeneration``).
    generation = (pod.get("metadata") or {}).get("generation")
    observed = {"observedGeneration": generation} if isinstance(generation, int) and generation else {}
    phase = get_phase(spec, snapshot)
    old_conditions = {c.get("type"): c for c in old.get("conditions") or [] if isinstance(c, Mapping)}
    conditions: list[dict[str, Any]] = []
    for condition in _conditions(spec, snapshot, phase):
        previous = old_conditions.get(condition["type"])
        same = previous is not None and previous.get("status") == condition["status"]
        transition = previous.get("lastTransitionTime") if same and previous else None
        typed = {"type": condition["type"], **observed, **condition}
        conditions.append(
            {**typed, "lastProbeTime": None, "lastTransitionTime": transition or format_time(now)}
        )
    # Conditions the kubelet does not own (PodScheduled, readiness gates...) are kept as they are.
    conditions += [dict(c) for t, c in old_conditions.items() if t not in KUBELET_CONDITIONS]
    status: dict[str, Any] = {
        **observed,
        "phase": phase,
        "conditions": conditions,
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}] if host_ip else [],
        "startTime": old.get("startTime") or format_time(now),
        "containerStatuses": [container_status(c) for c in snapshot.containers],
    }
    if pod_ips:
        status["podIP"] = pod_ips[0]
        status["podIPs"] = [{"ip": ip} for ip in pod_ips]
    if snapshot.init_containers:
        status["initContainerStatuses"] = [container_status(c) for c in snapshot.init_containers]
    if "qosClass" in old:
        status["qosClass"] = old["qosClass"]
    return status
