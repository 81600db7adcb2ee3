"""What each fault kind does to a running cluster: thin adapters on the seams the lab already has.

Each kind has one ``Effect``: ``apply`` makes it happen, ``clear`` undoes it (for a kind that lasts),
``stopping`` undoes what would outlive the cluster when it is about to stop anyway (it hibernates or
is made anew: its components all start again on its next start, so a stopped kubelet needs nothing).
None of them reaches into a component; they use what an operator has:

- ``compact-store``: the store's own ``compact`` at its current revision, what kube-apiserver asks
  etcd for every ``--etcd-compaction-interval`` (``controlplane/store/compaction.py``);
- ``restart-apiserver``: ``Lab.restart_apiserver``, a new API server on the same store
  (``Cluster.restart_apiserver`` says what its clients see);
- ``stop-kubelet``, ``stop-kube-proxy``, ``stop-scheduler``, ``stop-controller-manager``: the
  component supervisor, ``Cluster.stop_component`` and ``start_component``, as ``systemctl stop
  kubelet`` on the node, or a static pod's manifest moved out of ``/etc/kubernetes/manifests`` and
  back (``supervisor.py`` keeps which faults hold which component stopped);
- ``crash-loop``: the same supervisor, stopping the component as a crash does and starting it again
  after the kubelet's CrashLoopBackOff (``supervisor.py``, ``crashloop.py``);
- ``kill-node``: the same supervisor, holding a node's kubelet and kube-proxy stopped (``killnode.py``);
- ``revoke-component-certificate``: the cluster's revocation list, then a restart with a new
  certificate through the supervisor (``certificates.py``);
- ``clock-skew``: the node's own clock, ``Cluster.node_clock`` (``clockskew.py``);
- ``rotate-encryption-key``: the cluster's EncryptionConfiguration, its reload, and every Secret
  replaced through the API server (``encryptionkey.py``);
- ``hot-loop-client``: a client of the cluster like any other (``hotloop.py``);
- ``partition-component``, ``link-latency``: the component's link to the API server's address
  (``controlplane/endpoint.py`` ``ComponentLink``), cut or slowed (``network.py``, ``links.py``);
- ``slow-store``, ``store-unavailable``: the store's conditions (``controlplane/store/conditions.py``),
  slow commits or no store (``storefaults.py``);
- ``webhook-down``, ``webhook-slow``: the API server's calls to admission webhooks
  (``WebhookClient.network``), refused or delayed (``webhooknetwork.py``, ``webhooklinks.py``).
"""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING, Protocol

from controlplane.faults.book import Fault
from controlplane.faults.certificates import RevokeComponentCertificate
from controlplane.faults.clockskew import ClockSkew
from controlplane.faults.crashloop import CrashLoopTiming
from controlplane.faults.encryptionkey import RotateEncryptionKey
from controlplane.faults.hotloop import HotLoop
from controlplane.faults.killnode import KillNode
from controlplane.faults.network import LinkLatency, Links, PartitionComponent
from controlplane.faults.storefaults import SlowStore, StoreFaults, StoreUnavailable
from controlplane.faults.supervisor import Supervisor
from controlplane.faults.webhooknetwork import WebhookDown, WebhookLinks, WebhookSlow
from controlplane.store.errors import Compacted

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


class StopComponent:
    """Stop one component of the cluster (the fault's target) and hold it stopped; clearing starts it
    again, unless another fault still holds it.

    ``release_lease``: whether a leader gives its Lease up as it stops, as upstream's component does
    on ``systemctl stop`` (SIGTERM): kube-scheduler does (``ReleaseOnCancel: true``,
    cmd/kube-scheduler/app/options/options.go), kube-controller-manager does not (no
    ``ReleaseOnCancel`` in cmd/kube-controller-manager/app/controllermanager.go), so the one started
    when the fault is cleared waits for the old Lease to expire.
    """

    def __init__(self, supervisor: Supervisor, *, release_lease: bool = True) -> None:
        self.supervisor = supervisor
        self.release_lease = release_lease

    async def apply(self, lab: Lab, cluster: Cluster, fault: Fault) -> None:
        await self.supervisor.hold(
            cluster, fault.target, fault.id, release_lease=self.release_lease, reason=f"fault {fault.kind}"
        )

    async def clear(self, lab: Lab, cluster: Cluster, fault: Fault) -> None:
        await self.supervisor.let_go(cluster, fault.target, fault.id, reason=f"fault {fault.kind} cleared")

    async def stopping(self, cluster: Cluster, fault: Fault) -> None:
        # Nothing to start: the cluster's next start starts every component of its plan.
        self.supervisor.drop(cluster, fault.target, fault.id)


class CrashLoopComponent:
    """Make the fault's component crash-loop (``supervisor.CrashLoop``); clearing lets it run.

    ``timing`` is upstream's (10 s doubling to 5 min, a crash 5 s after each start); a test sets a
    scaled one (``CrashLoopTiming.scaled``) to see several restarts in seconds.
    """

    def __init__(self, supervisor: Supervisor, timing: CrashLoopTiming | None = None) -> None:
        self.supervisor = supervisor
        self.timing = timing if timing is not None else CrashLoopTiming()

    async def apply(self, lab: Lab, cluster: Cluster, fault: Fault) -> None:
        await self.supervisor.crash_loop(cluster, fault.target, fault.id, self.timing)

    async def clear(self, lab: Lab, cluster: Cluster, fault: Fault) -> None:
        await self.supervisor.end_crash_loop(fault.id, start=True)

    async def stopping(self, cluster: Cluster, fault: Fault) -> None:
        await self.supervisor.end_crash_loop(fault.id, start=False)


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
    """A fresh effect for every kind of the catalogue, by kind (a service holds one set; the kinds
    that stop or crash components share one ``Supervisor``, so they know of each other)."""
    supervisor = Supervisor()
    links = Links()
    webhook_links = WebhookLinks()
    store_faults = StoreFaults()
    return {
        "compact-store": CompactStore(),
        "restart-apiserver": RestartAPIServer(),
        "stop-kubelet": StopComponent(supervisor),
        "stop-kube-proxy": StopComponent(supervisor),
        "stop-scheduler": StopComponent(supervisor),
        "stop-controller-manager": StopComponent(supervisor, release_lease=False),
        "crash-loop": CrashLoopComponent(supervisor),
        "hot-loop-client": HotLoopClient(),
        "revoke-component-certificate": RevokeComponentCertificate(supervisor),
        "clock-skew": ClockSkew(),
        "kill-node": KillNode(supervisor),
        "rotate-encryption-key": RotateEncryptionKey(),
        "partition-component": PartitionComponent(links),
        "slow-store": SlowStore(store_faults),
        "store-unavailable": StoreUnavailable(store_faults),
        "link-latency": LinkLatency(links),
        "webhook-down": WebhookDown(webhook_links),
        "webhook-slow": WebhookSlow(webhook_links),
    }


__all__ = [
    "CompactStore",
    "CrashLoopComponent",
    "Effect",
    "HotLoopClient",
    "RestartAPIServer",
    "StopComponent",
    "effects",
]
