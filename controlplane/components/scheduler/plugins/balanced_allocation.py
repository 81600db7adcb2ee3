"""NodeResourcesBalancedAllocation: prefer nodes whose CPU and memory stay equally used.

A node with 90% of its CPU requested but 10% of its memory is hard to use: the memory left is stranded
because no CPU goes with it. For each node the plugin computes, after adding this pod, the fraction of
allocatable requested for CPU and for memory (each capped at 1), and scores
``(1 - |cpuFraction - memoryFraction| / 2) * 100`` (the standard deviation of two numbers is half their
difference). Equal fractions score 100, whatever their level; LeastAllocated is what prefers empty nodes.

It counts real requests (``useRequested``), not scoring's defaults, and a pod that requests neither CPU
nor memory is not scored by it (PreScore returns Skip): every node gets 0 here.

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
RESOURCES = ("cpu", "memory")


class BalancedAllocation:
    name = NAME

    def score(self, state: CycleState, pod: Obj, node: NodeInfo) -> int:
        request = state.pod_requests(pod)
        if all(request.get(r) == 0 for r in RESOURCES):
            return 0
        fractions: list[float] = []
        for resource in RESOURCES:
            allocatable = node.allocatable.get(resource)
            if allocatable == 0:
                continue
            requested = node.requested.get(resource) + request.get(resource)
            fractions.append(min(requested / allocatable, 1.0))
        std = abs(fractions[0] - fractions[1]) / 2 if len(fractions) == 2 else 0.0
        return int((1 - std) * MAX_NODE_SCORE)

    def normalize(self, scores: dict[str, int]) -> dict[str, int]:
        return scores  # already 0..100
