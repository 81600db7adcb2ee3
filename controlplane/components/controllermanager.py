"""kube-controller-manager: many controllers in one process, sharing informers and one leader election.

Each controller (``controllers/``) is a small control loop of its own: the ReplicaSet controller keeps
the right number of pods, the Deployment controller rolls ReplicaSets, the node lifecycle controller
notices silent nodes, the garbage collector deletes what lost its owner ... Upstream runs them all in
one binary so that they share one set of informers (one watch per resource however many controllers
read it), one event broadcaster and one leader election: with two replicas, one runs every controller
and the other waits with warm caches. ``ControllerManager`` is that binary, built on the client's
``Manager``; ``CONTROLLERS`` lists what it runs, by upstream's ``--controllers`` names.

Each controller is added with a ``ControllerContext`` (upstream's name): the cluster's timing profile,
whose timers say how old a node Lease may get and how leader election runs, and the CA bundle the
root CA certificate publisher puts in every namespace (``root_ca``: upstream's ``--root-ca-file``,
else the CA the controller manager's own client trusts, as upstream falls back to its kubeconfig's).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from controlplane.client.informer import SharedInformerFactory, strip_managed_fields
from controlplane.client.manager import Manager
from controlplane.client.rest import ClientLease, ClientOrFactory, RESTClient
from controlplane.clock import Clock
from controlplane.components.controllers import (
    bootstrapsigner,
    cronjob,
    csrapproving,
    csrcleaner,
    csrsigning,
    daemonset,
    deployment,
    disruption,
    endpoints,
    endpointslice,
    garbagecollector,
    horizontalpodautoscaler,
    job,
    namespace,
    nodelifecycle,
    persistentvolume,
    replicaset,
    replicationcontroller,
    resourcequota,
    rootcacertpublisher,
    serviceaccount_controller,
    statefulset,
    tainteviction,
    ttlafterfinished,
    volumeprovisioner,
)
from controlplane.pki import CertificateAuthority
from controlplane.timing import CLASSROOM, TimingProfile
from controlplane.trace import NULL_SINK, TraceSink, nodes

#: kube-controller-manager's Lease, in ``kube-system`` (``--leader-elect-resource-name``).
LEASE_NAME = "kube-controller-manager"


@dataclass(frozen=True)
class ControllerContext:
    """What the controllers are built with, besides the manager (upstream's ``ControllerContext``)."""

    timing: TimingProfile = CLASSROOM
    #: The PEM CA bundle that verifies the API server, published as ``kube-root-ca.crt``.
    root_ca: bytes = b""
    #: The CA the CSR signing controller signs with (``--cluster-signing-cert-file``/``-key-file``):
    #: the cluster's client CA. None: no signing controller, as upstream without those files.
    signing_ca: CertificateAuthority | None = None


#: Adds one controller to a manager.
Adder = Callable[[Manager, ControllerContext], Any]

#: Every controller this controller manager runs, by upstream's name, in start order.
CONTROLLERS: dict[str, Adder] = {
    "replicaset-controller": lambda m, c: replicaset.add_to_manager(m),
    "deployment-controller": lambda m, c: deployment.add_to_manager(m),
    "replicationcontroller-controller": lambda m, c: replicationcontroller.add_to_manager(m),
    "persistentvolume-binder-controller": lambda m, c: persistentvolume.add_to_manager(m),
    # Not a kube-controller-manager controller: the cluster's (simulated) external provisioner,
    # run here for the default StorageClass (controllers/volumeprovisioner.py).
    "simulated-volume-provisioner": lambda m, c: volumeprovisioner.add_to_manager(m),
    "daemonset-controller": lambda m, c: daemonset.add_to_manager(m),
    "statefulset-controller": lambda m, c: statefulset.add_to_manager(m),
    "job-controller": lambda m, c: job.add_to_manager(m),
    "cronjob-controller": lambda m, c: cronjob.add_to_manager(m),
    "ttl-after-finished-controller": lambda m, c: ttlafterfinished.add_to_manager(m),
    "disruption-controller": lambda m, c: disruption.add_to_manager(m),
    "horizontal-pod-autoscaler-controller": lambda m, c: horizontalpodautoscaler.add_to_manager(
        m, sync_period=c.timing.horizontal_pod_autoscaler_sync_period
    ),
    "node-lifecycle-controller": lambda m, c: nodelifecycle.add_to_manager(
        m,
        node_monitor_period=c.timing.node_monitor_period,
        node_monitor_grace_period=c.timing.node_monitor_grace_period,
        node_startup_grace_period=c.timing.node_startup_grace_period,
    ),
    "taint-eviction-controller": lambda m, c: tainteviction.add_to_manager(m),
    "endpoints-controller": lambda m, c: endpoints.add_to_manager(m),
    "endpointslice-controller": lambda m, c: endpointslice.add_to_manager(m),
    "garbage-collector-controller": lambda m, c: garbagecollector.add_to_manager(m),
    "namespace-controller": lambda m, c: namespace.add_to_manager(m),
    "resourcequota-controller": lambda m, c: resourcequota.add_to_manager(m),
    "serviceaccount-controller": lambda m, c: serviceaccount_controller.add_to_manager(m),
    # Upstream's name; its alias (the --controllers name before 1.30) is ``root-ca-cert-publisher``.
    "root-ca-certificate-publisher-controller": lambda m, c: rootcacertpublisher.add_to_manager(
        m, root_ca=c.root_ca.decode()
    ),
    # Off upstream unless named (kubeadm's --controllers=*,bootstrapsigner,tokencleaner): cluster-info's JWS.
    "bootstrap-signer-controller": lambda m, c: bootstrapsigner.add_to_manager(m),
    # The CertificateSigningRequest controllers (controllers/csr*.py).
    "certificatesigningrequest-signing-controller": lambda m, c: (
        csrsigning.add_to_manager(m, ca=c.signing_ca) if c.signing_ca is not None else None
    ),
    "certificatesigningrequest-approving-controller": lambda m, c: csrapproving.add_to_manager(m),
    "certificatesigningrequest-cleaner-controller": lambda m, c: csrcleaner.add_to_manager(m),
}


class ControllerManager:
    """The controllers of one cluster on one ``Manager`` (informers, events, leader election)."""

    def __init__(
        self,
        client: ClientOrFactory,
        *,
        cluster: str = "",
        clock: Clock | None = None,
        timing: TimingProfile = CLASSROOM,
        trace: TraceSink = NULL_SINK,
        rng: random.Random | None = None,
        leader_election: bool = False,
        identity: str = "",
        controllers: Sequence[str] | None = None,
        root_ca: bytes | None = None,
        signing_ca: CertificateAuthority | None = None,
    ) -> None:
        unknown = [name for name in controllers or () if name not in CONTROLLERS]
        if unknown:
            raise ValueError(f"unknown controllers {unknown}: choose from {', '.join(CONTROLLERS)}")
        self._lease = ClientLease(client)
        self.cluster = cluster
        self.clock = clock
        self.timing = timing
        self.trace = trace
        self.rng = rng if rng is not None else random.Random()
        self.leader_election = leader_election
        self.identity = identity
        self.controllers = tuple(controllers) if controllers is not None else tuple(CONTROLLERS)
        #: The CA bundle to publish (``--root-ca-file``); None: the CA this process's client trusts.
        self.root_ca = root_ca
        #: The CA approved CSRs are signed with (``--cluster-signing-*-file``); None signs none.
        self.signing_ca = signing_ca
        self.manager: Manager | None = None
        self._client: RESTClient | None = None

    async def start(self) -> None:
        """Build the manager and every controller, then start: caches synced, controllers (or election)."""
        if self.manager is not None:
            return
        self._client = self._lease.open()
        timing = self.timing
        rng = random.Random(self.rng.getrandbits(64))
        manager = Manager(
            self._client,
            name=nodes.CONTROLLER_MANAGER,  # its events' node on the trace; the Lease keeps upstream's name
            # As kube-controller-manager's shared informers do: no managedFields in the caches.
            informers=SharedInformerFactory(
                self._client,
                clock=self.clock,
                rng=random.Random(rng.getrandbits(64)),
                transform=strip_managed_fields,
            ),
            clock=self.clock,
            leader_election=self.leader_election,
            lease_name=LEASE_NAME,
            identity=self.identity or None,
            lease_duration=timing.leader_lease_duration,
            renew_deadline=timing.leader_renew_deadline,
            retry_period=timing.leader_retry_period,
            cluster=self.cluster or None,
            trace=self.trace,
            rng=rng,
        )
        root_ca = self.root_ca if self.root_ca is not None else self._client.config.ca_data
        context = ControllerContext(timing=timing, root_ca=root_ca or b"", signing_ca=self.signing_ca)
        for name in self.controllers:
            CONTROLLERS[name](manager, context)
        self.manager = manager
        try:
            await manager.start()
        except BaseException:
            await self.stop()
            raise

    async def stop(self, *, release_lease: bool = True) -> None:
        """Stop the controllers (releasing the lease), the informers, and the client if made here.

        Upstream's kube-controller-manager never releases its Lease: ``leaderElectAndRun``
        (cmd/kube-controller-manager/app/controllermanager.go) sets no ``ReleaseOnCancel``, so a new
        one waits for the old Lease to expire (``leaseDurationSeconds``, 15 s). The lab's releases it
        on a clean stop, so a sandbox that wakes from hibernation has its controllers at once;
        ``release_lease=False`` stops it as upstream's stops (or as a crash does).
        """
        manager, self.manager = self.manager, None
        try:
            if manager is not None:
                await manager.stop(release_lease=release_lease)
        finally:
            await self._lease.close()
            self._client = None

    def is_leader(self) -> bool:
        return self.manager is not None and self.manager.is_leader()

    @property
    def leading(self) -> asyncio.Event:
        """Set while the controllers run: at once without leader election, else while leading."""
        if self.manager is None:
            raise RuntimeError("the controller manager is not started")
        return self.manager.leading


__all__ = ["CONTROLLERS", "LEASE_NAME", "ControllerContext", "ControllerManager"]
