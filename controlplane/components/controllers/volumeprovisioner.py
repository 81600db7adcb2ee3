"""A simulated external provisioner: volumes made on demand for claims of the ``standard`` class.

Dynamic provisioning is not done by Kubernetes itself but by a **provisioner** for each kind of
storage (a CSI driver's ``external-provisioner`` sidecar, kind's local-path-provisioner...). It
watches claims, and for each unbound claim that the PV controller annotated
``volume.kubernetes.io/storage-provisioner: <its name>`` (because the claim's StorageClass names it
and no existing volume fits) it creates the storage and a PersistentVolume describing it:

- named ``pvc-<claim uid>``, so that creating it twice is harmless (AlreadyExists);
- **pre-bound** to the claim (``spec.claimRef`` with the claim's uid), so that no other claim can
  take it and the PV controller binds the two at once;
- with the claim's size, access modes and volume mode, the class's name and ``reclaimPolicy``, and
  ``pv.kubernetes.io/provisioned-by: <its name>``.

A class with ``volumeBindingMode: WaitForFirstConsumer`` is provisioned only once the scheduler has
picked a node for a pod using the claim (``volume.kubernetes.io/selected-node``). When such a volume is
``Released`` (its claim deleted) and its reclaim policy is ``Delete``, the provisioner deletes the
storage and then the PersistentVolume.

Kubelab's provisioner (``kubelab.io/simulated``) has no storage behind it: its volumes are a CSI
source naming the driver and a handle, and it runs inside the controller manager. Events come from
the provisioner's name: ``Provisioning`` and ``ProvisioningSucceeded`` on the claim.

Upstream: ``sigs.k8s.io/sig-storage-lib-external-provisioner/controller/controller.go``
(``shouldProvision``, ``provisionClaimOperation``, ``shouldDelete``, ``deleteVolumeOperation``) and
``kubernetes-csi/external-provisioner``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any, Final

from controlplane.api.meta import Object
from controlplane.api.strategies.storage import SIMULATED_PROVISIONER, claim_class
from controlplane.client.cache import Indexer
from controlplane.client.errors import AlreadyExists, NotFound
from controlplane.client.manager import Manager
from controlplane.client.reconciler import Controller, Request, Result
from controlplane.client.record import EVENT_TYPE_NORMAL, EventRecorder
from controlplane.client.rest import RESTClient
from controlplane.components.controllers.deploymentutil import meta, name_of, spec, status, uid_of
from controlplane.components.controllers.kinds import (
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    STORAGE_CLASSES,
)
from controlplane.components.controllers.persistentvolume import (
    ANN_DYNAMICALLY_PROVISIONED,
    ANN_SELECTED_NODE,
    ANN_STORAGE_PROVISIONER,
    claim_ref,
)

#: Every provisioned volume is named after its claim's uid.
VOLUME_PREFIX: Final = "pvc-"


def volume_name(claim: Mapping[str, Any]) -> str:
    """``pvc-<claim uid>``: one name per claim, so a repeated create is harmless."""
    return VOLUME_PREFIX + uid_of(claim)


def should_provision(
    claim: Mapping[str, Any], storage_class: Mapping[str, Any] | None, provisioner: str
) -> bool:
    """``shouldProvision``: unbound, annotated for us, of a class of ours, its consumer known if needed."""
    if spec(claim).get("volumeName") or meta(claim).get("deletionTimestamp"):
        return False
    annotations = meta(claim).get("annotations") or {}
    if annotations.get(ANN_STORAGE_PROVISIONER) != provisioner:
        return False
    if storage_class is None or storage_class.get("provisioner") != provisioner:
        return False
    if storage_class.get("volumeBindingMode") == "WaitForFirstConsumer":
        return ANN_SELECTED_NODE in annotations
    return True


def provisioned_volume(
    claim: Mapping[str, Any], storage_class: Mapping[str, Any], provisioner: str
) -> Object:
    """The PersistentVolume made for ``claim``: its size and modes, the class's policy, pre-bound."""
    name = volume_name(claim)
    requests = (spec(claim).get("resources") or {}).get("requests") or {}
    volume_spec: dict[str, Any] = {
        "capacity": {"storage": requests.get("storage")},
        "accessModes": list(spec(claim).get("accessModes") or []),
        "persistentVolumeReclaimPolicy": storage_class.get("reclaimPolicy") or "Delete",
        "storageClassName": name_of(storage_class),
        "volumeMode": spec(claim).get("volumeMode") or "Filesystem",
        "claimRef": claim_ref(claim),
        "csi": {"driver": provisioner, "volumeHandle": name},
    }
    mount_options = storage_class.get("mountOptions")
    if mount_options:
        volume_spec["mountOptions"] = list(mount_options)
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "annotations": {ANN_DYNAMICALLY_PROVISIONED: provisioner}},
        "spec": volume_spec,
    }


def should_delete(volume: Mapping[str, Any], provisioner: str) -> bool:
    """``shouldDelete``: one of ours, Released, with the Delete policy."""
    return (
        (meta(volume).get("annotations") or {}).get(ANN_DYNAMICALLY_PROVISIONED) == provisioner
        and status(volume).get("phase") == "Released"
        and spec(volume).get("persistentVolumeReclaimPolicy") == "Delete"
        and not meta(volume).get("deletionTimestamp")
    )


class VolumeProvisioner:
    """Provision for claims, delete released volumes."""

    def __init__(
        self,
        client: RESTClient,
        *,
        volumes: Indexer,
        claims: Indexer,
        classes: Indexer,
        recorder: EventRecorder,
        provisioner: str = SIMULATED_PROVISIONER,
    ) -> None:
        self.client = client
        self.volumes = volumes
        self.claims = claims
        self.classes = classes
        self.recorder = recorder
        self.provisioner = provisioner

    async def provision(self, request: Request) -> Result:
        """``provisionClaimOperation`` for one claim."""
        claim = self.claims.get_by_key(request.key)
        if claim is None:
            return Result()
        storage_class = self.classes.get_by_key(claim_class(claim)) if claim_class(claim) else None
        if not should_provision(claim, storage_class, self.provisioner) or storage_class is None:
            return Result()
        if self.volumes.get_by_key(volume_name(claim)) is not None:
            return Result()  # made already; the PV controller binds it
        self.recorder.event(
            claim,
            EVENT_TYPE_NORMAL,
            "Provisioning",
            f'External provisioner is provisioning volume for claim "{request.key}"',
        )
        volume = provisioned_volume(claim, storage_class, self.provisioner)
        try:
            await self.client.resource("", "v1", PERSISTENT_VOLUMES.plural).create(volume)
        except AlreadyExists:
            return Result()
        self.recorder.event(
            claim,
            EVENT_TYPE_NORMAL,
            "ProvisioningSucceeded",
            f"Successfully provisioned volume {volume_name(claim)}",
        )
        return Result()

    async def delete(self, request: Request) -> Result:
        """``deleteVolumeOperation``: the storage (nothing, here), then the PersistentVolume."""
        volume = self.volumes.get_by_key(request.key)
        if volume is None or not should_delete(volume, self.provisioner):
            return Result()
        with contextlib.suppress(NotFound):
            await self.client.resource("", "v1", PERSISTENT_VOLUMES.plural).delete(
                name_of(volume), preconditions={"uid": uid_of(volume)}
            )
        return Result()

    def claims_of_class(self, storage_class: Mapping[str, Any]) -> list[Request]:
        """A class appeared: its claims that wait for a volume."""
        return [
            Request(str(meta(claim).get("namespace") or ""), name_of(claim))
            for claim in self.claims.list()
            if not spec(claim).get("volumeName") and claim_class(claim) == name_of(storage_class)
        ]


def add_to_manager(
    manager: Manager, *, provisioner: str = SIMULATED_PROVISIONER, workers: int = 1
) -> tuple[Controller, Controller]:
    """The provisioner's two queues: claims to provision and volumes to delete."""
    reconciler = VolumeProvisioner(
        manager.client,
        volumes=manager.cache(PERSISTENT_VOLUMES),
        claims=manager.cache(PERSISTENT_VOLUME_CLAIMS),
        classes=manager.cache(STORAGE_CLASSES),
        recorder=manager.event_recorder(provisioner),
        provisioner=provisioner,
    )

    class _Claims:
        async def reconcile(self, request: Request) -> Result:
            return await reconciler.provision(request)

    class _Volumes:
        async def reconcile(self, request: Request) -> Result:
            return await reconciler.delete(request)

    claims = manager.new_controller(
        "provisioner-claims", _Claims(), for_=PERSISTENT_VOLUME_CLAIMS, workers=workers
    )
    claims.watch(manager.informer_for(STORAGE_CLASSES), reconciler.claims_of_class)
    volumes = manager.new_controller(
        "provisioner-volumes", _Volumes(), for_=PERSISTENT_VOLUMES, workers=workers
    )
    return claims, volumes


__all__ = [
    "VolumeProvisioner",
    "add_to_manager",
    "provisioned_volume",
    "should_delete",
    "should_provision",
    "volume_name",
]
