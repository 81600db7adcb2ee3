"""The PersistentVolume binder: pair each claim with a volume, and deal with volumes whose claim went.

A PersistentVolumeClaim asks for storage; a PersistentVolume is storage. This controller (upstream
``pkg/controller/volume/persistentvolume/pv_controller.go``, run by kube-controller-manager as
``persistentvolume-binder-controller``) binds them, with two queues as upstream's:

**claims** (``syncClaim``). An unbound claim (no ``spec.volumeName``) gets the smallest volume that
satisfies it: not bound to another claim, same class, every access mode it asks for, at least the
requested ``storage``, the same volume mode, labels matching its ``selector``; a volume pre-bound to
the claim (its ``claimRef`` names it) is taken first. Binding is four writes, in this order, each one
safe to repeat if the next fails: the volume's ``spec.claimRef`` (with
``pv.kubernetes.io/bound-by-controller: "yes"``), its ``status.phase: Bound``, the claim's
``spec.volumeName`` (with ``pv.kubernetes.io/bind-completed: "yes"``), the claim's status (``Bound``,
the volume's ``capacity`` and ``accessModes``). When nothing matches and the claim's StorageClass has
a provisioner, the claim is annotated ``volume.kubernetes.io/storage-provisioner: <provisioner>``
and an ``ExternalProvisioning`` Event says it waits for that provisioner: the provisioner creates a
volume pre-bound to the claim, which wakes this queue again. A class with
``volumeBindingMode: WaitForFirstConsumer`` waits until a pod using the claim is scheduled
(``volume.kubernetes.io/selected-node``). A bound claim whose volume disappeared is ``Lost``.

**volumes** (``syncVolume``). A volume without a claim is ``Available``. A volume whose claim was
deleted is ``Released`` and then reclaimed by its ``persistentVolumeReclaimPolicy``: ``Retain``
keeps it (with its data, for an administrator to deal with); ``Delete`` deletes it: a dynamically
provisioned volume (``pv.kubernetes.io/provisioned-by``) is deleted by its provisioner, any other one
here (upstream asks the volume plugin to delete the storage asset first); ``Recycle`` (deprecated)
scrubs it and makes it ``Available`` again.

Everything is driven by informer events (a new volume wakes the pending claims, a claim's change wakes
its volume): no periodic resync.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any, Final

from controlplane.api.deepcopy import deep_copy
from controlplane.api.meta import Object
from controlplane.api.quantity import Quantity, QuantityError, parse_json_quantity
from controlplane.api.selectors import SelectorError, label_selector_from_object
from controlplane.api.strategies.storage import claim_class, volume_class
from controlplane.client.cache import Indexer
from controlplane.client.errors import NotFound
from controlplane.client.manager import Manager
from controlplane.client.reconciler import Controller, Request, Result
from controlplane.client.record import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING, EventRecorder
from controlplane.client.rest import RESTClient
from controlplane.components.controllers.deploymentutil import meta, name_of, spec, status, uid_of
from controlplane.components.controllers.kinds import (
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    STORAGE_CLASSES,
)

logger = logging.getLogger(__name__)

COMPONENT: Final = "persistentvolume-controller"
ANN_BIND_COMPLETED: Final = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER: Final = "pv.kubernetes.io/bound-by-controller"
ANN_STORAGE_PROVISIONER: Final = "volume.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_PROVISIONER: Final = "volume.beta.kubernetes.io/storage-provisioner"
ANN_SELECTED_NODE: Final = "volume.kubernetes.io/selected-node"
ANN_DYNAMICALLY_PROVISIONED: Final = "pv.kubernetes.io/provisioned-by"

PENDING, AVAILABLE, BOUND, RELEASED, LOST = "Pending", "Available", "Bound", "Released", "Lost"


# -- pure: matching ----------------------------------------------------------------------------------


def _quantity(value: Any) -> Quantity | None:
    try:
        return parse_json_quantity(value)
    except QuantityError:
        return None


def claim_request(claim: Mapping[str, Any]) -> Quantity | None:
    return _quantity(((spec(claim).get("resources") or {}).get("requests") or {}).get("storage"))


def volume_capacity(volume: Mapping[str, Any]) -> Quantity | None:
    return _quantity((spec(volume).get("capacity") or {}).get("storage"))


def claim_key(claim: Mapping[str, Any]) -> str:
    return f"{meta(claim).get('namespace')}/{name_of(claim)}"


def ref_key(ref: Mapping[str, Any]) -> str:
    return f"{ref.get('namespace')}/{ref.get('name')}"


def is_pre_bound_to(volume: Mapping[str, Any], claim: Mapping[str, Any]) -> bool:
    """The volume's ``claimRef`` names this claim (by name, and by uid when it has one)."""
    ref = spec(volume).get("claimRef")
    if not isinstance(ref, Mapping) or ref_key(ref) != claim_key(claim):
        return False
    return not ref.get("uid") or ref.get("uid") == uid_of(claim)


def volume_satisfies(volume: Mapping[str, Any], claim: Mapping[str, Any]) -> bool:
    """Whether ``volume`` could serve ``claim`` (``checkVolumeSatisfyClaim`` and ``FindMatchingVolume``'s
    filters): class, access modes, size, volume mode, selector; free or pre-bound to this claim."""
    if meta(volume).get("deletionTimestamp"):
        return False
    ref = spec(volume).get("claimRef")
    if ref is not None and not is_pre_bound_to(volume, claim):
        return False
    if status(volume).get("phase") in (RELEASED, "Failed"):
        return False
    if volume_class(volume) != claim_class(claim):
        return False
    wanted = set(spec(claim).get("accessModes") or [])
    if not wanted <= set(spec(volume).get("accessModes") or []):
        return False
    request, capacity = claim_request(claim), volume_capacity(volume)
    if request is None or capacity is None or capacity < request:
        return False
    if (spec(volume).get("volumeMode") or "Filesystem") != (spec(claim).get("volumeMode") or "Filesystem"):
        return False
    selector = spec(claim).get("selector")
    if selector is not None:
        try:
            parsed = label_selector_from_object(selector)
        except SelectorError:
            return False
        if not parsed.matches(meta(volume).get("labels") or {}):
            return False
    return True


def find_matching_volume(claim: Mapping[str, Any], volumes: Iterable[Object]) -> Object | None:
    """``FindMatchingVolume``: a volume pre-bound to the claim first, else the smallest that fits."""
    candidates = [volume for volume in volumes if volume_satisfies(volume, claim)]
    for volume in candidates:
        if spec(volume).get("claimRef") is not None:
            return volume
    if not candidates:
        return None
    return min(candidates, key=lambda v: (volume_capacity(v) or Quantity(0), name_of(v)))


def claim_ref(claim: Mapping[str, Any]) -> dict[str, Any]:
    """The ``ObjectReference`` a bound volume keeps to its claim."""
    return {
        "kind": "PersistentVolumeClaim",
        "namespace": meta(claim).get("namespace"),
        "name": name_of(claim),
        "uid": uid_of(claim),
        "apiVersion": "v1",
        "resourceVersion": meta(claim).get("resourceVersion"),
    }


# -- the controller ---------------------------------------------------------------------------------


class PersistentVolumeBinder:
    """Both queues' reconcilers over the shared caches of volumes, claims and classes."""

    def __init__(
        self,
        client: RESTClient,
        *,
        volumes: Indexer,
        claims: Indexer,
        classes: Indexer,
        recorder: EventRecorder,
    ) -> None:
        self.client = client
        self.volumes = volumes
        self.claims = claims
        self.classes = classes
        self.recorder = recorder

    def _volumes_client(self) -> Any:
        return self.client.resource("", "v1", PERSISTENT_VOLUMES.plural)

    def _claims_client(self, namespace: str) -> Any:
        return self.client.resource("", "v1", PERSISTENT_VOLUME_CLAIMS.plural, namespace)

    # -- claims ----------------------------------------------------------------------------------------

    async def sync_claim(self, request: Request) -> Result:
        """``syncClaim``: bind an unbound claim, or check a bound one still has its volume."""
        cached = self.claims.get_by_key(request.key)
        if cached is None or meta(cached).get("deletionTimestamp"):
            return Result()
        claim = deep_copy(cached)
        volume_name = spec(claim).get("volumeName")
        if not volume_name:
            await self._sync_unbound_claim(claim)
            return Result()
        volume = self.volumes.get_by_key(str(volume_name))
        annotations = meta(claim).get("annotations") or {}
        if volume is None:
            if annotations.get(ANN_BIND_COMPLETED):
                if status(claim).get("phase") != LOST:
                    self.recorder.event(
                        claim,
                        EVENT_TYPE_WARNING,
                        "ClaimLost",
                        "Bound claim has lost its PersistentVolume. Data on the volume is lost!",
                    )
                await self._set_claim_phase(claim, LOST)
            else:
                await self._set_claim_phase(claim, PENDING)
            return Result()
        ref = spec(volume).get("claimRef")
        if ref is None or is_pre_bound_to(volume, claim):
            # The user named the volume on the claim, or our binding is half done: finish it.
            await self.bind(deep_copy(volume), claim)
        elif annotations.get(ANN_BIND_COMPLETED):
            if status(claim).get("phase") != LOST:
                self.recorder.event(
                    claim,
                    EVENT_TYPE_WARNING,
                    "ClaimMisbound",
                    "Two claims are bound to the same volume, this one is bound incorrectly",
                )
            await self._set_claim_phase(claim, LOST)
        return Result()

    async def _sync_unbound_claim(self, claim: Object) -> None:
        class_name = claim_class(claim)
        storage_class = self.classes.get_by_key(class_name) if class_name else None
        waits_for_consumer = (
            storage_class is not None
            and storage_class.get("volumeBindingMode") == "WaitForFirstConsumer"
            and ANN_SELECTED_NODE not in (meta(claim).get("annotations") or {})
        )
        volume = None if waits_for_consumer else find_matching_volume(claim, self.volumes.list())
        if volume is not None:
            await self.bind(deep_copy(volume), claim)
            return
        if waits_for_consumer:
            self.recorder.event(
                claim,
                EVENT_TYPE_NORMAL,
                "WaitForFirstConsumer",
                "waiting for first consumer to be created before binding",
            )
        elif not class_name:
            self.recorder.event(
                claim,
                EVENT_TYPE_NORMAL,
                "FailedBinding",
                "no persistent volumes available for this claim and no storage class is set",
            )
        elif storage_class is None:
            self.recorder.event(
                claim,
                EVENT_TYPE_WARNING,
                "ProvisioningFailed",
                f'storageclass.storage.k8s.io "{class_name}" not found',
            )
        else:
            claim = await self._ask_provisioner(claim, str(storage_class.get("provisioner") or ""))
        await self._set_claim_phase(claim, PENDING)

    async def _ask_provisioner(self, claim: Object, provisioner: str) -> Object:
        """``provisionClaimOperationExternal``: name the provisioner on the claim, and say so."""
        annotations = meta(claim).setdefault("annotations", {})
        if annotations.get(ANN_STORAGE_PROVISIONER) != provisioner:
            annotations[ANN_STORAGE_PROVISIONER] = provisioner
            annotations[ANN_BETA_STORAGE_PROVISIONER] = provisioner
            claim = await self._claims_client(str(meta(claim).get("namespace"))).update(claim)
            self.recorder.event(
                claim,
                EVENT_TYPE_NORMAL,
                "ExternalProvisioning",
                f"Waiting for a volume to be created either by the external provisioner '{provisioner}' "
                "or manually by the system administrator. If volume creation is delayed, please verify "
                "that the provisioner is running and correctly registered.",
            )
        return claim

    async def bind(self, volume: Object, claim: Object) -> None:
        """``bind``: volume claimRef, volume phase, claim volumeName, claim status; each only if needed."""
        volumes = self._volumes_client()
        ref = spec(volume).get("claimRef")
        if not isinstance(ref, Mapping) or ref.get("uid") != uid_of(claim):
            volume["spec"] = {**spec(volume), "claimRef": claim_ref(claim)}
            if not isinstance(ref, Mapping):
                annotations = {**(meta(volume).get("annotations") or {}), ANN_BOUND_BY_CONTROLLER: "yes"}
                volume["metadata"] = {**meta(volume), "annotations": annotations}
            volume = await volumes.update(volume)
        if status(volume).get("phase") != BOUND:
            volume = await volumes.update_status({**volume, "status": {**status(volume), "phase": BOUND}})
        claims = self._claims_client(str(meta(claim).get("namespace")))
        annotations = meta(claim).get("annotations") or {}
        if spec(claim).get("volumeName") != name_of(volume) or not annotations.get(ANN_BIND_COMPLETED):
            new_annotations = {**annotations, ANN_BIND_COMPLETED: "yes"}
            if spec(claim).get("volumeName") != name_of(volume):
                new_annotations[ANN_BOUND_BY_CONTROLLER] = "yes"
            claim = {
                **claim,
                "metadata": {**meta(claim), "annotations": new_annotations},
                "spec": {**spec(claim), "volumeName": name_of(volume)},
            }
            claim = await claims.update(claim)
        wanted = {
            **status(claim),
            "phase": BOUND,
            "accessModes": list(spec(volume).get("accessModes") or []),
            "capacity": dict(spec(volume).get("capacity") or {}),
        }
        if status(claim) != wanted:
            await claims.update_status({**claim, "status": wanted})

    async def _set_claim_phase(self, claim: Object, phase: str) -> None:
        if status(claim).get("phase") == phase:
            return
        claims = self._claims_client(str(meta(claim).get("namespace")))
        await claims.update_status({**claim, "status": {**status(claim), "phase": phase}})

    # -- volumes ---------------------------------------------------------------------------------------

    async def sync_volume(self, request: Request) -> Result:
        """``syncVolume``: Available without a claim, Bound with one, Released (then reclaimed) after."""
        cached = self.volumes.get_by_key(request.key)
        if cached is None or meta(cached).get("deletionTimestamp"):
            return Result()
        volume = deep_copy(cached)
        ref = spec(volume).get("claimRef")
        if not isinstance(ref, Mapping) or not ref.get("uid"):
            # Free, or pre-bound by a user to a claim that may not exist yet: ready to be bound.
            await self._set_volume_phase(volume, AVAILABLE)
            return Result()
        claim = self.claims.get_by_key(ref_key(ref))
        if claim is None:
            # The cache may be behind: make sure the claim is really gone (upstream does the same).
            try:
                claim = await self._claims_client(str(ref.get("namespace"))).get(str(ref.get("name")))
            except NotFound:
                claim = None
        if claim is None or uid_of(claim) != ref.get("uid"):
            await self._release(volume)
            return Result()
        bound_to = spec(claim).get("volumeName")
        if not bound_to:
            return Result()  # the claim's queue completes the binding
        if bound_to == name_of(volume):
            await self._set_volume_phase(volume, BOUND)
        elif (meta(volume).get("annotations") or {}).get(ANN_BOUND_BY_CONTROLLER):
            await self._unbind(volume)  # we bound it, but the claim took another volume
        return Result()

    async def _release(self, volume: Object) -> None:
        """The claim is gone: ``Released``, then the reclaim policy (``reclaimVolume``)."""
        if status(volume).get("phase") not in (RELEASED, "Failed"):
            volume = await self._volumes_client().update_status(
                {**volume, "status": {**status(volume), "phase": RELEASED}}
            )
        policy = spec(volume).get("persistentVolumeReclaimPolicy")
        if policy == "Delete":  # Retain: the volume stays Released, for an administrator
            if (meta(volume).get("annotations") or {}).get(ANN_DYNAMICALLY_PROVISIONED):
                return  # its provisioner deletes it (and the storage behind it)
            try:
                await self._volumes_client().delete(name_of(volume), preconditions={"uid": uid_of(volume)})
            except NotFound:
                return
        elif policy == "Recycle":
            self.recorder.event(
                volume, EVENT_TYPE_NORMAL, "RecyclerPod", "Recycler pod: scrubbing the volume"
            )
            await self._unbind(volume)

    async def _unbind(self, volume: Object) -> None:
        """``unbindVolume``: drop the claimRef (and our annotation); the volume is Available again."""
        volume["spec"] = {k: v for k, v in spec(volume).items() if k != "claimRef"}
        annotations = {k: v for k, v in (meta(volume).get("annotations") or {}).items()}
        annotations.pop(ANN_BOUND_BY_CONTROLLER, None)
        volume["metadata"] = {**meta(volume), "annotations": annotations}
        volume = await self._volumes_client().update(volume)
        await self._set_volume_phase(volume, AVAILABLE)

    async def _set_volume_phase(self, volume: Object, phase: str) -> None:
        if status(volume).get("phase") == phase:
            return
        await self._volumes_client().update_status({**volume, "status": {**status(volume), "phase": phase}})

    # -- what wakes which queue ------------------------------------------------------------------------

    def claims_for_volume(self, volume: Mapping[str, Any]) -> list[Request]:
        """A volume changed: its claim, or, if it is free, every claim still waiting for one."""
        ref = spec(volume).get("claimRef")
        if isinstance(ref, Mapping):
            return [Request(str(ref.get("namespace") or ""), str(ref.get("name") or ""))]
        return [
            Request(str(meta(claim).get("namespace") or ""), name_of(claim))
            for claim in self.claims.list()
            if not spec(claim).get("volumeName")
        ]

    def volumes_for_claim(self, claim: Mapping[str, Any]) -> list[Request]:
        """A claim changed: its volume, and any volume whose claimRef names it."""
        names = {str(spec(claim).get("volumeName") or "")} - {""}
        key = claim_key(claim)
        for volume in self.volumes.list():
            ref = spec(volume).get("claimRef")
            if isinstance(ref, Mapping) and ref_key(ref) == key:
                names.add(name_of(volume))
        return [Request("", name) for name in sorted(names)]

    def claims_for_class(self, storage_class: Mapping[str, Any]) -> list[Request]:
        """A class appeared or changed: the unbound claims of that class."""
        return [
            Request(str(meta(claim).get("namespace") or ""), name_of(claim))
            for claim in self.claims.list()
            if not spec(claim).get("volumeName") and claim_class(claim) == name_of(storage_class)
        ]


def add_to_manager(manager: Manager, *, workers: int = 1) -> tuple[Controller, Controller]:
    """The binder's two queues on ``manager``: claims and volumes, each woken by the other kind."""
    binder = PersistentVolumeBinder(
        manager.client,
        volumes=manager.cache(PERSISTENT_VOLUMES),
        claims=manager.cache(PERSISTENT_VOLUME_CLAIMS),
        classes=manager.cache(STORAGE_CLASSES),
        recorder=manager.event_recorder(COMPONENT),
    )

    class _Claims:
        async def reconcile(self, request: Request) -> Result:
            return await binder.sync_claim(request)

    class _Volumes:
        async def reconcile(self, request: Request) -> Result:
            return await binder.sync_volume(request)

    claims = manager.new_controller("claims", _Claims(), for_=PERSISTENT_VOLUME_CLAIMS, workers=workers)
    claims.watch(manager.informer_for(PERSISTENT_VOLUMES), binder.claims_for_volume)
    claims.watch(manager.informer_for(STORAGE_CLASSES), binder.claims_for_class)
    volumes = manager.new_controller("volumes", _Volumes(), for_=PERSISTENT_VOLUMES, workers=workers)
    volumes.watch(manager.informer_for(PERSISTENT_VOLUME_CLAIMS), binder.volumes_for_claim)
    return claims, volumes


__all__ = [
    "ANN_BIND_COMPLETED",
    "ANN_BOUND_BY_CONTROLLER",
    "ANN_DYNAMICALLY_PROVISIONED",
    "ANN_SELECTED_NODE",
    "ANN_STORAGE_PROVISIONER",
    "PersistentVolumeBinder",
    "add_to_manager",
    "claim_ref",
    "find_matching_volume",
    "volume_satisfies",
]
