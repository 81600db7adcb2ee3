"""``clock-skew``: a node's clock stepped off the rest of the cluster's.

Every node reads the time from its own clock, kept close to the others' by NTP. The kubelet stamps
its Lease's ``renewTime`` and its Ready condition's ``lastHeartbeatTime`` with it
(pkg/kubelet/nodelease, pkg/kubelet/kubelet_node_status.go). The node lifecycle controller is built
not to trust those stamps against its own clock: it notes *its own* time whenever the Lease's
``renewTime`` moves past the last one it saw, or the heartbeat changes, and judges the node by that
(``tryUpdateNodeHealth`` in pkg/controller/nodelifecycle/node_lifecycle_controller.go;
``controllers/nodehealth.py``). So a clock that is merely off changes nothing; a clock **stepped
back** does: the kubelet's next renewTimes are older than the last one seen, they count as no
renewal at all, and once that lasts longer than the grace period the node is ``Unknown`` (and tainted
unreachable) while its kubelet runs and renews, until its clock passes its last renewTime again. The
kubelet, seeing Unknown on its Node, reports Ready at its next status update; the controller takes
that changed heartbeat as a sign of life for one more grace period, so the node flaps. A clock
stepped forward goes unnoticed, until it is set right, which steps it back.

The lab's kubelets read their node's ``SkewedClock`` (``Cluster.node_clock``); the fault sets its
skew and clearing sets it back to 0: both step the clock at once, as ``date -s`` or an NTP step does.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from controlplane.faults.book import Fault

if TYPE_CHECKING:
    from controlplane.runtime import Cluster, Lab

logger = logging.getLogger(__name__)


class ClockSkew:
    """Step the clock of the fault's node by its ``seconds``; clearing steps it back in step.

    Two skews of one node do not add up: the one applied last is the clock's, and clearing any sets
    the clock right (a machine has one clock).
    """

    async def apply(self, lab: Lab, cluster: Cluster, fault: Fault) -> None:
        parameters = fault.spec.parameters()
        node, seconds = str(parameters["node"]), float(parameters["seconds"])
        cluster.node_clock(node).skew = seconds
        logger.info("cluster %r: the clock of %s is now off by %+g s", cluster.name, node, seconds)

    async def clear(self, lab: Lab, cluster: Cluster, fault: Fault) -> None:
        self._set_right(cluster, fault)

    async def stopping(self, cluster: Cluster, fault: Fault) -> None:
        self._set_right(cluster, fault)  # the fault ends with the cluster: its next start is in step

    @staticmethod
    def _set_right(cluster: Cluster, fault: Fault) -> None:
        cluster.node_clock(str(fault.spec.parameters()["node"])).skew = 0.0


__all__ = ["ClockSkew"]
