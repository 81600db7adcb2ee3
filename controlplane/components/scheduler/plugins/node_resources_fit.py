"""NodeResourcesFit: does the node have room for what the pod *requests*?

Every node reports ``status.allocatable`` (its capacity minus what the system keeps back). The
scheduler adds up the requests of the pods already bound to the node and checks that the new pod's
requests fit into what is left, resource by resource. Usage does not matter, only requests: a node
running idle pods that requested all its CPU is full. Limits do not matter either.

- **Filter** (``fitsRequest``): "Too many pods" when the node already holds ``allocatable.pods`` pods,
  then "Insufficient cpu", "Insufficient memory", "Insufficient ephemeral-storage" and "Insufficient
  <extended resource>" for each resource that does not fit. Unschedulable (not unresolvable): evicting
  pods could make room.
- **Score** (``LeastAllocated``, the default strategy): prefer the emptiest node. For CPU and memory,
  ``(allocatable - requested) * 100 / allocatable`` after adding this pod, averaged with weight 1 each.
  Scoring counts best-effort containers as 100m CPU / 200Mi memory so they spread out too.

Upstream: pkg/scheduler/framework/plugins/noderesources/fit.go and least_allocated.go.
"""

from __future__ import annotations

from controlplane.components.scheduler.framework import (
    MAX_NODE_SCORE,
    SUCCESS,
    CycleState,
    NodeInfo,
    Obj,
    Resource,
    Status,
    pod_requests,
    unschedulable,
)

NAME = "NodeResourcesFit"
#: ``NodeResourcesFitArgs.ScoringStrategy`` default: LeastAllocated over cpu and memory, weight 1 each.
CPU_WEIGHT = 1
MEMORY_WEIGHT = 1


def insufficient_resources(pod: Obj, node: NodeInfo, request: Resource | None = None) -> list[str]:
    """``fitsRequest``: the reasons, in upstream's order, why the pod's requests do not fit."""
    reasons: list[str] = []
    allocatable, requested = node.allocatable, node.requested
    if len(node.pods) + 1 > allocatable.allowed_pod_number:
        reasons.append("Too many pods")
    if request is None:
        request = pod_requests(pod)
    if request.is_zero():
        return reasons
    if request.milli_cpu > 0 and request.milli_cpu > allocatable.milli_cpu - requested.milli_cpu:
        reasons.append("Insufficient cpu")
    if request.memory > 0 and request.memory > allocatable.memory - requested.memory:
        reasons.append("Insufficient memory")
    storage = request.ephemeral_storage
    if storage > 0 and storage > allocatable.ephemeral_storage - requested.ephemeral_storage:
        reasons.append("Insufficient ephemeral-storage")
    if request.scalar:
        for name in sorted(request.scalar):
            amount = request.scalar[name]
            if amount > 0 and amount > allocatable.get(name) - requested.get(name):
                reasons.append(f"Insufficient {name}")
    return reasons


def least_requested_score(requested: int, capacity: int) -> int:
    """``leastRequestedScore``: 0 when full or over, 100 when empty, integer division as upstream."""
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


class NodeResourcesFit:
    name = NAME

    def filter(self, state: CycleState, pod: Obj, node: NodeInfo) -> Status:
        reasons = insufficient_resources(pod, node, state.pod_requests(pod))
        if not reasons:
            return SUCCESS
        return unschedulable(NAME, *reasons)

    def score(self, state: CycleState, pod: Obj, node: NodeInfo) -> int:
        request = state.pod_requests(pod, non_zero=True)
        allocatable, requested = node.allocatable, node.non_zero_requested
        cpu = least_requested_score(requested.milli_cpu + request.milli_cpu, allocatable.milli_cpu)
        memory = least_requested_score(requested.memory + request.memory, allocatable.memory)
        return (cpu * CPU_WEIGHT + memory * MEMORY_WEIGHT) // (CPU_WEIGHT + MEMORY_WEIGHT)

    def normalize(self, scores: dict[str, int]) -> dict[str, int]:
        return scores  # already 0..100: LeastAllocated has no ScoreExtensions
