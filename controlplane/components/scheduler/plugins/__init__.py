"""The scheduler's plugins, one module per upstream plugin (pkg/scheduler/framework/plugins/...).

``default_profile`` puts them in the order and with the weights of upstream's default profile
(pkg/scheduler/apis/config/v1/default_plugins.go): filters NodeUnschedulable, NodeName, TaintToleration,
NodeAffinity, NodeResourcesFit, VolumeBinding, PodTopologySpread, InterPodAffinity; scores TaintToleration 3,
NodeAffinity 2, NodeResourcesFit 1, NodeResourcesBalancedAllocation 1 (PodTopologySpread 2 and
InterPodAffinity 2 score upstream too; the lab does not score them yet); the PostFilter
DefaultPreemption. Sorting the queue is the QueueSort plugin PrioritySort, built into ``queue``.
"""

from __future__ import annotations

from controlplane.components.scheduler.framework import Profile
from controlplane.components.scheduler.plugins.balanced_allocation import BalancedAllocation
from controlplane.components.scheduler.plugins.default_preemption import DefaultPreemption
from controlplane.components.scheduler.plugins.inter_pod_affinity import InterPodAffinity
from controlplane.components.scheduler.plugins.node_affinity import NodeAffinity
from controlplane.components.scheduler.plugins.node_name import NodeName
from controlplane.components.scheduler.plugins.node_resources_fit import NodeResourcesFit
from controlplane.components.scheduler.plugins.node_unschedulable import NodeUnschedulable
from controlplane.components.scheduler.plugins.pod_topology_spread import PodTopologySpread
from controlplane.components.scheduler.plugins.taint_toleration import TaintToleration
from controlplane.components.scheduler.plugins.volume_binding import VolumeBinding


def default_profile() -> Profile:
    """Upstream's default profile, restricted to the plugins the lab implements."""
    taints, affinity, fit = TaintToleration(), NodeAffinity(), NodeResourcesFit()
    return Profile(
        filters=[
            NodeUnschedulable(),
            NodeName(),
            taints,
            affinity,
            fit,
            VolumeBinding(),
            PodTopologySpread(),
            InterPodAffinity(),
        ],
        scores=[(taints, 3), (affinity, 2), (fit, 1), (BalancedAllocation(), 1)],
        post_filters=[DefaultPreemption()],
    )


__all__ = [
    "BalancedAllocation",
    "DefaultPreemption",
    "InterPodAffinity",
    "NodeAffinity",
    "NodeName",
    "NodeResourcesFit",
    "NodeUnschedulable",
    "PodTopologySpread",
    "TaintToleration",
    "VolumeBinding",
    "default_profile",
]
