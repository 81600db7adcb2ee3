"""``revoke-component-certificate``: a component's client certificate is no longer trusted.

Every component proves who it is with a client certificate of the cluster's CA
(``controlplane/componentcerts.py``). The API server's x509 authenticator accepts a certificate its
CA signed, within its dates (k8s.io/apiserver ``pkg/authentication/request/x509/x509.go``); one it
does not trust gets no user, and a request with no user is answered **401 Unauthorized**. Upstream
has no revocation list (the way to withdraw a certificate is a new CA); the lab has one
(``controlplane/revocation.py``, ``manage.py revokecert``), and the fault adds the serial of the
certificate the component presents now: from its next request on, everything it sends is refused
with 401, as if its certificate were signed by a CA the API server does not trust. The component
keeps running, and failing: its informers cannot list or watch, a kubelet cannot renew its Lease, a
leader cannot renew its leader Lease.

Clearing it does what an operator does: issue a new certificate (``kubeadm certs renew``, or the
kubelet's certificate signed again) and restart the component so that it loads it (the static pod
restarted, ``systemctl restart kubelet``). The lab issues a new certificate at every start of a
component (``Cluster._start_component``), so the restart is the whole of it, done through the
supervisor, which knows whether another fault holds the component stopped. A joined node's kubelet
keeps its certificate across restarts (``components/kubelet/certificate.py``), so clearing first
deletes it, and the kubelet asks for a new one with the bootstrap token (a CSR, approved as
``nodeclient``). The old serial stays in
the list, as a revoked certificate stays revoked.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from controlplane.faults.book import Fault
from controlplane.faults.supervisor import Supervisor
from controlplane.revocation import format_serial

if TYPE_CHECKING:
    from controlplane.runtime import Cluster, Lab

logger = logging.getLogger(__name__)


class ComponentNotRunning(RuntimeError):
    """The component does not run, so it presents no certificate to revoke."""

    def __init__(self, component: str) -> None:
        super().__init__(f"{component} does not run: it presents no certificate to revoke")
        self.component = component


class RevokeComponentCertificate:
    """Revoke the certificate the fault's component presents; clearing restarts it with a new one."""

    def __init__(self, supervisor: Supervisor) -> None:
        self.supervisor = supervisor
        #: The serial revoked by each fault in force (the console and the tests read it).
        self.revoked: dict[str, int] = {}

    async def apply(self, lab: Lab, cluster: Cluster, fault: Fault) -> None:
        component = fault.target
        async with self.supervisor.lock((cluster.name, component)):
            certificate = cluster.component_certificates.get(component)
            if certificate is None:
                raise ComponentNotRunning(component)
            serial = certificate.serial
            # The list is a file shared with ``manage.py revokecert``: written off the event loop.
            await asyncio.to_thread(cluster.revocations.revoke, serial, certificate.user)
        self.revoked[fault.id] = serial
        logger.info(
            "cluster %r: revoked the certificate %s of %s", cluster.name, format_serial(serial), component
        )

    async def clear(self, lab: Lab, cluster: Cluster, fault: Fault) -> None:
        self.revoked.pop(fault.id, None)
        component = fault.target
        async with self.supervisor.lock((cluster.name, component)):
            # A joined node's kubelet keeps its certificate on the node's disk: the operator deletes it
            # (``rm /var/lib/kubelet/pki/kubelet-client-*``), so that it bootstraps again at its start.
            await cluster.forget_kubelet_certificate(component)
            if component not in cluster.components_running:
                return  # stopped or crashed: its next start gets a new certificate anyway
            # Its requests are refused, so it could not give up a leader Lease anyway: the new
            # process waits for it to expire, as after a kill.
            await cluster.stop_component(
                component, release_lease=False, reason="restarted to load its new certificate"
            )
            if not self.supervisor.held(cluster, component):
                await cluster.start_component(component, reason="started with a new certificate")

    async def stopping(self, cluster: Cluster, fault: Fault) -> None:
        # Every component gets a new certificate at the cluster's next start.
        self.revoked.pop(fault.id, None)


__all__ = ["ComponentNotRunning", "RevokeComponentCertificate"]
