"""What each fault kind does to a running cluster: thin adapters on the seams the lab already has.

Each kind has one ``Effect``: ``apply`` makes it happen, ``clear`` undoes it (for a kind that lasts),
``stopping`` undoes what would outlive the cluster when it is about to stop anyway (it hibernates or
is made anew: its components all start again on its next start, so a stopped kubelet needs nothing).
None of them reaches into a component; they use what an operator has:

- ``compact-store``: the store's own ``compact`` at its current revision, what kube-apiserver asks
  etcd for every ``--etcd-compaction-interval`` (``controlplane/store/compaction.py``);
- ``restart-apiserver``: ``Lab.restart_apiserver``, a new API server on the same store
  (``Cluster.restart_apiserver`` says what its clients see);
- ``stop-kubelet``: the component supervisor, ``Cluster.stop_component`` and ``start_component``, as
  ``systemctl stop kubelet`` and ``systemctl start kubelet`` on the node;
- ``hot-loop-client``: a client of the cluster like any other (``hotloop.py``).
"""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING, Protocol

from controlplane.faults.book import Fault
from controlplane.faults.hotloop import HotLoop
from controlplane.store.errors import Compacted
from controlplane.trace import nodes

if TYPE_CHECKING:
    from controlplane.runtime import Cluster, Lab

logger = logging.getLogger(__name__)


class Effect(Protocol):
    """What one kind does (see the module's docstring)."""

    async def apply(self, lab: Lab, cluster: Cluster, fault: Fault) -> None: ...

    async def clear(self, lab: Lab, cluster: Cluster, fault: Fault) -> None: ...

    async def stopping(self, cluster: Cluster, fault: Fault) -> None: ...


class CompactStore:
    """Compact the store at its current revision."""

    async def apply(self, lab: Lab, cluster: Cluster, fault: Fault) -> None:
        revision = await cluster.store.current_revision()
        # Compacted: compacted at this revision already, nothing older is left to discard.
        with contextlib.suppress(Compacted):
            await cluster.store.compact(revision)

    async def clear(self, lab: Lab, cluster: Cluster, fault: Fault) -> None:
        return None

    async def stopping(self, cluster: Cluster, fault: Fault) -> None:
        return None


class RestartAPIServer:
    """Restart the API server (a transition of the cluster, see ``Lab.restart_apiserver``)."""

    async def apply(self, lab: Lab, cluster: Cluster, fault: Fault) -> None:
        await lab.restart_apiserver(cluster.name)

    async def clear(self, lab: Lab, cluster: Cluster, fault: Fault) -> None:
        return None

    async def stopping(self, cluster: Cluster, fault: Fault) -> None:
        return None


class StopKubelet:
    """Stop the kubelet of the fault's node; clearing starts it again."""

    @staticmethod
    def _component(fault: Fault) -> str:
        return nodes.kubelet(str(fault.spec.parameters()["node"]))

    async def apply(self, lab: Lab, cluster: Cluster, fault: Fault) -> None:
        await cluster.stop_component(self._component(fault))

    async def clear(self, lab: Lab, cluster: Cluster, fault: Fault) -> None:
        await cluster.start_component(self._component(fault))

    async def stopping(self, cluster: Cluster, fault: Fault) -> None:
        return None  # the cluster's next start starts every kubelet of its plan


class HotLoopClient:
    """Run a ``HotLoop`` in the cluster while the fault is in force."""

    def __init__(self) -> None:
        self._loops: dict[str, HotLoop] = {}

    async def apply(self, lab: Lab, cluster: Cluster, fault: Fault) -> None:
        loop = HotLoop(cluster)
        self._loops[fault.id] = loop
        try:
            await loop.start()
        except BaseException:
            self._loops.pop(fault.id, None)
            await loop.stop()
            raise

    async def clear(self, lab: Lab, cluster: Cluster, fault: Fault) -> None:
        await self._end(fault)

    async def stopping(self, cluster: Cluster, fault: Fault) -> None:
        await self._end(fault)  # its objects go too: the cluster still serves while its stop hooks run

    async def _end(self, fault: Fault) -> None:
        loop = self._loops.pop(fault.id, None)
        if loop is not None:
            await loop.stop()

    def loop(self, fault_id: str) -> HotLoop | None:
        """The loop a fault runs (tests and the console look at its counts)."""
        return self._loops.get(fault_id)


def effects() -> dict[str, Effect]:
    """A fresh effect for every kind of the catalogue, by kind (a service holds one set)."""
    return {
        "compact-store": CompactStore(),
        "restart-apiserver": RestartAPIServer(),
        "stop-kubelet": StopKubelet(),
        "hot-loop-client": HotLoopClient(),
    }


__all__ = ["CompactStore", "Effect", "HotLoopClient", "RestartAPIServer", "StopKubelet", "effects"]
