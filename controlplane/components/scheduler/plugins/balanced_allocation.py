"""NodeResourcesBalancedAllocation: prefer nodes whose CPU and memory stay equally used.

A node with 90% of its CPU requested but 10% of its memory is hard to use: the memory left is stranded
because no CPU goes with it. For each node the plugin computes, after adding this pod, the fraction of
allocatable requested for CPU and for memory (each capped at 1), and scores
``(1 - |cpuFraction - memoryFraction| / 2) * 100`` (the standard deviation of two numbers is half their
difference). Equal fractions score 100, whatever their level; LeastAllocated is what prefers empty nodes.

It counts real requests (``useRequested``), not scoring's defaults, and a pod that requests neither CPU
nor memory is not scored by it: PreScore returns Skip (upstream issue #129138: scoring best-effort pods
piled them onto one node), so the plugin is not run for that pod and the trace lists it as skipped.

Upstream: pkg/scheduler/framework/plugins/noderesources/balanced_allocation.go.
"""

from __future__ import annotations

from controlplane.components.scheduler.framework import (
    MAX_NODE_SCORE,
    CycleState,
    NodeInfo,
    Obj,
)

NAME = "NodeResourcesBalancedAllocation"


class BalancedAllocation:
    name = NAME

    def pre_score_skip(self, state: CycleState, pod: Obj) -> bool:
        """PreScore's ``Skip`` for a best-effort pod (``isBestEffortPod``: no CPU, no memory request)."""
        request = state.pod_requests(pod)
        return request.milli_cpu == 0 and request.memory == 0

    def score(self, state: CycleState, pod: Obj, node: NodeInfo) -> int:
        # balancedResourceScorer over cpu and memory (noderesources/balanced_allocation.go).
        request = state.pod_requests(pod)
        if request.milli_cpu == 0 and request.memory == 0:
            return 0  # as upstream's Score when PreScore did not run
        allocatable, requested = node.allocatable, node.requested
        if allocatable.milli_cpu == 0 or allocatable.memory == 0:
            return MAX_NODE_SCORE  # fewer than two fractions to compare: std is 0
        cpu = min((requested.milli_cpu + request.milli_cpu) / allocatable.milli_cpu, 1.0)
        memory = min((requested.memory + request.memory) / allocatable.memory, 1.0)
        std = abs(cpu - memory) / 2
        return int((1 - std) * MAX_NODE_SCORE)

    def normalize(self, scores: dict[str, int]) -> dict[str, int]:
        return scores  # already 0..100
