"""VolumeBinding: a pod whose PersistentVolumeClaim is missing or not bound yet waits.

A pod that mounts a claim (``volumes[].persistentVolumeClaim.claimName``) can only run once the claim
exists and, for a claim whose class binds ``Immediate``ly, once the PV controller has bound it to a
volume: until then no node is any better than another, so the pod stays ``Pending`` with
``persistentvolumeclaim "data" not found`` or ``pod has unbound immediate PersistentVolumeClaims``.
Both are UnschedulableAndUnresolvable (preempting pods would not help); a claim added or changed
moves the waiting pods back to the queue. A claim of a ``WaitForFirstConsumer`` class does not hold
the pod back: it is the pod's scheduling that lets such a claim be provisioned. Once the pod has a
node, ``pre_bind`` (upstream's PreBind) annotates each such claim
``volume.kubernetes.io/selected-node: <node>``, which tells the PV controller and the provisioner to
go ahead; upstream then waits for the claims to be bound before binding the pod, Kubelab binds the
pod at once (its kubelet mounts nothing).

Upstream: ``pkg/scheduler/framework/plugins/volumebinding/volume_binding.go`` (its PreFilter:
``podHasPVCs``, ``ErrReasonNotEnoughSpace``...). Kubelab checks the claims only: volumes' node
affinity and capacity on nodes are not modelled.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from controlplane.client.errors import NotFound
from controlplane.components.scheduler.framework import (
    SUCCESS,
    CycleState,
    NodeInfo,
    Obj,
    Status,
    unschedulable,
)

if TYPE_CHECKING:
    from controlplane.client.cache import Indexer
    from controlplane.client.rest import RESTClient

NAME: Final = "VolumeBinding"
#: The cluster events that may let a waiting pod in (framework/events.go: PersistentVolumeClaim Add/Update).
PVC_ADD: Final = "PersistentVolumeClaimAdd"
PVC_UPDATE: Final = "PersistentVolumeClaimUpdate"
ERR_UNBOUND_IMMEDIATE: Final = "pod has unbound immediate PersistentVolumeClaims"
ANN_SELECTED_NODE: Final = "volume.kubernetes.io/selected-node"


def claim_names(pod: Obj) -> list[str]:
    """The claims the pod's volumes name, in order."""
    names = []
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        source = volume.get("persistentVolumeClaim") if isinstance(volume, dict) else None
        if isinstance(source, dict) and source.get("claimName"):
            names.append(str(source["claimName"]))
    return names


class VolumeBinding:
    """The filter; ``claims`` and ``classes`` are the scheduler's informer caches (set at start)."""

    name = NAME

    def __init__(self) -> None:
        self.claims: Indexer | None = None
        self.classes: Indexer | None = None

    def check(self, pod: Obj) -> Status:
        """The verdict for the pod, the same on every node (upstream's PreFilter)."""
        names = claim_names(pod)
        if not names or self.claims is None:
            return SUCCESS
        namespace = (pod.get("metadata") or {}).get("namespace") or ""
        for claim_name in names:
            claim = self.claims.get_by_key(f"{namespace}/{claim_name}")
            if claim is None:
                return unschedulable(
                    NAME, f'persistentvolumeclaim "{claim_name}" not found', unresolvable=True
                )
            if (claim.get("metadata") or {}).get("deletionTimestamp"):
                return unschedulable(
                    NAME, f'persistentvolumeclaim "{claim_name}" is being deleted', unresolvable=True
                )
            spec = claim.get("spec") or {}
            if spec.get("volumeName"):
                continue
            class_name = spec.get("storageClassName") or ""
            storage_class = self.classes.get_by_key(class_name) if self.classes and class_name else None
            if storage_class is None or storage_class.get("volumeBindingMode") != "WaitForFirstConsumer":
                return unschedulable(NAME, ERR_UNBOUND_IMMEDIATE, unresolvable=True)
        return SUCCESS

    def filter(self, state: CycleState, pod: Obj, node: NodeInfo) -> Status:
        verdict = state.data.get(NAME)
        if not isinstance(verdict, Status):
            verdict = state.data[NAME] = self.check(pod)
        return verdict

    def claims_to_select(self, pod: Obj) -> list[str]:
        """The pod's unbound claims of a WaitForFirstConsumer class that have no selected node yet."""
        if self.claims is None or self.classes is None:
            return []
        namespace = (pod.get("metadata") or {}).get("namespace") or ""
        wanted = []
        for claim_name in claim_names(pod):
            claim = self.claims.get_by_key(f"{namespace}/{claim_name}")
            if claim is None or (claim.get("spec") or {}).get("volumeName"):
                continue
            if ANN_SELECTED_NODE in ((claim.get("metadata") or {}).get("annotations") or {}):
                continue
            storage_class = self.classes.get_by_key((claim.get("spec") or {}).get("storageClassName") or "")
            if storage_class is not None and storage_class.get("volumeBindingMode") == "WaitForFirstConsumer":
                wanted.append(claim_name)
        return wanted


async def pre_bind(client: RESTClient, filters: Sequence[Any], pod: Obj, node: str) -> None:
    """``PreBind``: name the chosen node on the pod's WaitForFirstConsumer claims."""
    namespace = (pod.get("metadata") or {}).get("namespace") or "default"
    claims = client.resource("", "v1", "persistentvolumeclaims", namespace)
    for plugin in filters:
        if not isinstance(plugin, VolumeBinding):
            continue
        for claim_name in plugin.claims_to_select(pod):
            with contextlib.suppress(NotFound):  # a claim deleted meanwhile: nothing to provision
                await claims.patch(claim_name, {"metadata": {"annotations": {ANN_SELECTED_NODE: node}}})


__all__ = ["ANN_SELECTED_NODE", "NAME", "PVC_ADD", "PVC_UPDATE", "VolumeBinding", "claim_names", "pre_bind"]
