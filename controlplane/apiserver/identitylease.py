"""The API server's identity Lease: each kube-apiserver says "I am here" in ``kube-system``.

Next to the scheduler's and the controller manager's leader Leases, ``kubectl get leases -n
kube-system`` on a real cluster lists one Lease per API server::

    NAME                                   HOLDER                                                      AGE
    apiserver-zgyxt4bmc2xtuc3yr6y7hblhzq   apiserver-zgyxt4bmc2xtuc3yr6y7hblhzq_5f0b7c7e-...           3m

It is not a lock: nobody competes for it. Each API server keeps its own Lease renewed (every 10 s, for
an hour's duration), so any client can count the API servers that run and tell when one went away
(KEP-1965, "kube-apiserver identity"; the ``APIServerIdentity`` feature, on by default since 1.26).
Upstream (``pkg/controlplane/apiserver/server.go``, the ``start-kube-apiserver-identity-lease-
controller`` post-start hook, with component-helpers' lease controller):

- the name is the server's ID, ``apiserver-`` and the base32 (lowercase, no padding) of the first 16
  bytes of the SHA-256 of its host name and ``kube-apiserver``, each prefixed with its length
  (``k8s.io/apiserver/pkg/server/config.go``): a restarted server finds its own Lease again;
- the holder is that ID, ``_`` and a UUID new at each start: a restart is visible;
- the labels ``apiserver.kubernetes.io/identity: kube-apiserver`` and ``kubernetes.io/hostname``.

Kubelab runs one API server per cluster, on the control-plane node ``control-plane``; it writes the
Lease through the registry, as its other own objects (``kubernetesservice.py``), and renews it on
upstream's 10 s whatever the cluster's timing profile: the Lease says who runs, its timers teach no
failure. Upstream's garbage collector of expired identity Leases (hourly) has nothing to collect
here, since a restarted server renews the same Lease, and is not modelled.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import logging
import uuid
from typing import Final

from controlplane.api.meta import Object, format_micro_time
from controlplane.apiserver import errors
from controlplane.apiserver.registry import Registry
from controlplane.apiserver.requestscope import RequestScope
from controlplane.clock import Clock
from controlplane.store import StoreError
from controlplane.tasks import cancel_and_wait

logger = logging.getLogger(__name__)

NAMESPACE: Final = "kube-system"
#: ``IdentityLeaseComponentLabelKey`` and the value kube-apiserver gives it.
IDENTITY_LABEL: Final = "apiserver.kubernetes.io/identity"
KUBE_APISERVER: Final = "kube-apiserver"
HOSTNAME_LABEL: Final = "kubernetes.io/hostname"
#: ``IdentityLeaseDurationSeconds`` and ``IdentityLeaseRenewIntervalPeriod``.
LEASE_DURATION_SECONDS: Final = 3600
RENEW_INTERVAL: Final = 10.0
#: The host the lab's API servers run on: kubeadm's control-plane node.
DEFAULT_HOSTNAME: Final = "control-plane"

SCOPE: Final = RequestScope.unadmitted(reason="start-kube-apiserver-identity-lease-controller")


def apiserver_id(hostname: str) -> str:
    """The API server's ID and its Lease's name (``NewConfig`` in k8s.io/apiserver/pkg/server/config.go)."""
    data = b""
    for part in (hostname.encode(), KUBE_APISERVER.encode()):
        data += len(part).to_bytes(2, "big") + part  # cryptobyte's AddUint16LengthPrefixed
    digest = hashlib.sha256(data).digest()[:16]
    return "apiserver-" + base64.b32encode(digest).decode().rstrip("=").lower()


def lease(name: str, holder: str, hostname: str, now: float) -> Object:
    """The Lease as the lease controller writes it (``newLease`` with ``labelAPIServerHeartbeatFunc``)."""
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "labels": {IDENTITY_LABEL: KUBE_APISERVER, HOSTNAME_LABEL: hostname},
        },
        "spec": {
            "holderIdentity": holder,
            "leaseDurationSeconds": LEASE_DURATION_SECONDS,
            "renewTime": format_micro_time(now),
        },
    }


class IdentityLeaseController:
    """Create the Lease, then renew it every ``RENEW_INTERVAL`` until stopped."""

    def __init__(self, leases: Registry, clock: Clock, hostname: str = DEFAULT_HOSTNAME) -> None:
        self.leases = leases
        self.clock = clock
        self.hostname = hostname
        self.name = apiserver_id(hostname)
        self.holder = f"{self.name}_{uuid.uuid4()}"
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """The first turn now (so a started server has its Lease), then one every interval."""
        await self._turn()
        self._task = asyncio.create_task(self._run(), name="kube-apiserver-identity-lease")

    async def stop(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)

    async def _run(self) -> None:
        while True:
            await self.clock.sleep(RENEW_INTERVAL)
            await self._turn()

    async def _turn(self) -> None:
        try:
            await self.renew()
        except (errors.StatusError, StoreError) as error:  # logged; the next turn tries again
            logger.warning("failed to update identity lease %s: %s", self.name, error)

    async def renew(self) -> None:
        """One turn: create the Lease if it is missing, else take it as this server's and renew it."""
        desired = lease(self.name, self.holder, self.hostname, self.clock.now())
        try:
            await self.leases.create(desired, NAMESPACE, scope=SCOPE)
            return
        except errors.StatusError as error:
            if error.code != 409:
                raise

        def renewed(current: Object) -> Object:
            labels = {**(current.get("metadata", {}).get("labels") or {}), **desired["metadata"]["labels"]}
            return {
                **current,
                "metadata": {**current.get("metadata", {}), "labels": labels},
                "spec": {**(current.get("spec") or {}), **desired["spec"]},
            }

        await self.leases.update(NAMESPACE, self.name, renewed, scope=SCOPE)


__all__ = [
    "IDENTITY_LABEL",
    "LEASE_DURATION_SECONDS",
    "RENEW_INTERVAL",
    "IdentityLeaseController",
    "apiserver_id",
    "lease",
]
