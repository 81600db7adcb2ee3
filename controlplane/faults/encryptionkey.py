"""``rotate-encryption-key``: a new key for Secrets at rest, and every Secret written again with it.

Upstream's procedure ("Encrypting Confidential Data at Rest", *Rotate a decryption key*), for a
cluster with one API server, done at once:

1. a new key goes **first** in the provider's list of the EncryptionConfiguration, so it encrypts
   every write from now on, while the old key, still listed, decrypts what it wrote
   (``rotation.add_key`` and ``promote_key``; with several API servers, upstream adds it second first
   and promotes it once every server has it);
2. the API server loads the new configuration (``--encryption-provider-config-automatic-reload``, or
   a restart): ``Cluster.reload_encryption``, which the lab would also do by itself within a second;
3. every Secret is replaced unchanged, as ``kubectl get secrets -A -o json | kubectl replace -f -``
   does: each PUT carries the object as it was read, and the API server still writes it, because its
   stored value is *stale* (encrypted with a key that no longer writes; k8s.io/apiserver
   ``pkg/storage/etcd3/store.go`` ``GuaranteedUpdate``), so it lands in the store with the new key's
   prefix ``k8s:enc:<provider>:v1:<new key>:`` and a new resourceVersion. A Secret written by someone
   else in between (409 Conflict) was written with the new key already; one deleted in between is gone.

The old key is not removed: that is the procedure's last step, once nothing uses it
(``manage.py encryption remove-key``). The requests go through the API server as the lab's own user
in ``system:masters``, so they are on the trace as any client's.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from controlplane.apiserver.encryption import config as encryption_config
from controlplane.apiserver.encryption import rotation
from controlplane.apiserver.encryption.config import EncryptionConfiguration
from controlplane.client.errors import Conflict, NotFound
from controlplane.client.rest import RESTClient
from controlplane.faults.book import Fault
from controlplane.identity import SYSTEM_MASTERS

if TYPE_CHECKING:
    from controlplane.runtime import Cluster, Lab

logger = logging.getLogger(__name__)

#: Who replaces the Secrets (in ``system:masters``), as the other faults' own requests are made.
LAB_USER: Final = "kubelab:faults"
USER_AGENT: Final = "kubelab-faults/1.0"
#: Secrets listed per page, as kubectl's ``--chunk-size`` default.
PAGE: Final = 500


class NotServing(RuntimeError):
    """The cluster's API server does not run: there is nothing to reload."""


@dataclass(frozen=True)
class Rotation:
    """What one rotation did: the key that now writes Secrets, and the Secrets replaced."""

    key: str
    replaced: int
    #: Written by someone else in between (already with the new key), or deleted in between.
    skipped: int


def rotate(configuration: EncryptionConfiguration) -> EncryptionConfiguration:
    """Step 1 of the procedure: a new key of the provider that writes Secrets, first of its list.

    ``rotation.NoEncryptingProvider`` if Secrets are stored in plaintext: there is no key to rotate.
    """
    try:
        added, key = rotation.add_key(configuration, resource="secrets")
    except rotation.NoEncryptingProvider:
        raise rotation.NoEncryptingProvider(
            "Secrets are stored in plaintext (identity): there is no key to rotate"
        ) from None
    return rotation.promote_key(added, key.name, resource="secrets")


class RotateEncryptionKey:
    """Rotate the key of Secrets (see the module's docstring); it happens at once."""

    def __init__(self) -> None:
        #: The last rotation of each cluster (the console and the tests read it).
        self.last: dict[str, Rotation] = {}

    async def apply(self, lab: Lab, cluster: Cluster, fault: Fault) -> None:
        apiserver = cluster.apiserver
        if apiserver is None:
            raise NotServing(f"cluster {cluster.name!r} has no API server running")
        # The file is shared with ``manage.py encryption``: edited under its lock, off the event loop.
        edited = await asyncio.to_thread(cluster.encryption_file.update, rotate)
        if not await cluster.reload_encryption():
            # The cluster's own reload got to the file first: load it here all the same, so the
            # new key writes before the first Secret is replaced.
            apiserver.set_encryption(encryption_config.build(edited))
        key = rotation.writing_key(edited, "secrets")
        logger.info("cluster %r: Secrets are now encrypted with %s", cluster.name, key)
        replaced, skipped = await self._replace_secrets(cluster)
        self.last[cluster.name] = Rotation(key, replaced, skipped)

    async def _replace_secrets(self, cluster: Cluster) -> tuple[int, int]:
        """``kubectl get secrets -A -o json | kubectl replace -f -``: (replaced, skipped)."""
        config = cluster.client_config(LAB_USER, (SYSTEM_MASTERS,), user_agent=USER_AGENT, qps=-1, burst=0)
        replaced = skipped = 0
        async with RESTClient(config) as client:
            secrets = client.resource("", "v1", "secrets")
            token: str | None = None
            while True:
                page = await secrets.list(limit=PAGE, continue_=token)
                for item in page.get("items") or []:
                    try:
                        await secrets.update({**item, "apiVersion": "v1", "kind": "Secret"})
                        replaced += 1
                    except (Conflict, NotFound):
                        skipped += 1
                token = (page.get("metadata") or {}).get("continue") or None
                if token is None:
                    return replaced, skipped

    async def clear(self, lab: Lab, cluster: Cluster, fault: Fault) -> None:
        return None

    async def stopping(self, cluster: Cluster, fault: Fault) -> None:
        return None


__all__ = ["LAB_USER", "NotServing", "RotateEncryptionKey", "Rotation", "rotate"]
