"""VolumeBinding: a pod whose PersistentVolumeClaim is missing or not bound yet waits.

A pod that mounts a claim (``volumes[].persistentVolumeClaim.claimName``) can only run once the claim
exists and, for a claim whose class binds ``Immediate``ly, once the PV controller has bound it to a
volume. Until then no node is any better than another, so the plugin's **PreFilter** rejects the pod
as a whole, before any node is filtered, and the pod stays ``Pending`` with

    0/4 nodes are available: persistentvolumeclaim "data" not found. preemption: 0/4 nodes are
    available: 4 Preemption is not helpful for scheduling.

(one line in reality): the PreFilter's message alone, no count per node, since no node was looked
at; every node gets that UnschedulableAndUnresolvable status, so preemption helps nowhere. The
PreFilter checks, in this order (``podHasPVCs``, then ``GetPodVolumeClaims``):

- every claim the pod names exists (``persistentvolumeclaim "data" not found``), is not ``Lost``
  (``persistentvolumeclaim "data" bound to non-existent persistentvolume "pv-1"``) and is not being
  deleted (``persistentvolumeclaim "data" is being deleted``);
- no claim is unbound but ``Immediate`` (``pod has unbound immediate PersistentVolumeClaims``): a claim
  counts as bound once it names its volume *and* carries ``pv.kubernetes.io/bind-completed`` (a claim
  pre-bound by hand waits for the PV controller); its class is ``Immediate`` unless the class exists
  and says ``WaitForFirstConsumer``.

A pod without claims gets ``Skip``: the Filter does not run for it. The **Filter** then checks, node by
node, what depends on the node: each bound claim's volume exists (``node(s) unavailable due to one or
more pvc(s) bound to non-existent pv(s)``) and its ``spec.nodeAffinity`` admits the node's labels
(``node(s) had volume node affinity conflict``: a local volume lives on one node); an unbound claim of
a ``WaitForFirstConsumer`` class whose ``volume.kubernetes.io/selected-node`` names another node
rules this one out (``node(s) didn't find available persistent volumes to bind``). A claim added or
changed, a volume added or changed, or a class added or changed moves the waiting pods back to the
queue.

Such a ``WaitForFirstConsumer`` claim does not hold the pod back: it is the pod's scheduling that lets
it be provisioned. Once the pod has a node, ``pre_bind`` (upstream's PreBind) annotates each such
claim ``volume.kubernetes.io/selected-node: <node>``, which tells the PV controller and the
provisioner to go ahead; upstream then waits for the claims to be bound before binding the pod,
Kubelab binds the pod at once (its kubelet mounts nothing).

Upstream: ``pkg/scheduler/framework/plugins/volumebinding/volume_binding.go`` (``PreFilter``,
``podHasPVCs``, ``Filter``) and ``binder.go`` (``GetPodVolumeClaims``, ``FindPodVolumes``,
``checkBoundClaims``, the ``ErrReason...`` strings). Not modelled: generic ephemeral volumes, and for
``WaitForFirstConsumer`` claims the search for a matching existing volume per node, the class's
provisioner and ``allowedTopologies``, and storage capacity (``node(s) did not have enough free
storage``); scoring.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from controlplane.api.strategies.storage import claim_class
from controlplane.client.errors import NotFound
from controlplane.components.scheduler.framework import (
    SKIP,
    SUCCESS,
    CycleState,
    NodeInfo,
    Obj,
    Status,
    unschedulable,
)
from controlplane.components.scheduler.plugins.node_affinity import term_matches_labels

if TYPE_CHECKING:
    from controlplane.client.cache import Indexer
    from controlplane.client.rest import RESTClient

NAME: Final = "VolumeBinding"
#: The cluster events that may let a waiting pod in (``EventsToRegister``: PersistentVolumeClaim,
#: PersistentVolume and StorageClass, each Add and Update).
PVC_ADD: Final = "PersistentVolumeClaimAdd"
PVC_UPDATE: Final = "PersistentVolumeClaimUpdate"
PV_ADD: Final = "PersistentVolumeAdd"
PV_UPDATE: Final = "PersistentVolumeUpdate"
STORAGE_CLASS_ADD: Final = "StorageClassAdd"
STORAGE_CLASS_UPDATE: Final = "StorageClassUpdate"
#: PreFilter's reason when an Immediate claim is not bound yet.
ERR_UNBOUND_IMMEDIATE: Final = "pod has unbound immediate PersistentVolumeClaims"
#: Filter's reasons (``ConflictReason``s, binder.go), in the order upstream appends them.
ERR_REASON_NODE_CONFLICT: Final = "node(s) had volume node affinity conflict"
ERR_REASON_BIND_CONFLICT: Final = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_PV_NOT_EXIST: Final = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
ANN_SELECTED_NODE: Final = "volume.kubernetes.io/selected-node"
#: Set by the PV controller once it has bound the claim (``AnnBindCompleted``).
ANN_BIND_COMPLETED: Final = "pv.kubernetes.io/bind-completed"
CLAIM_LOST: Final = "Lost"
WAIT_FOR_FIRST_CONSUMER: Final = "WaitForFirstConsumer"


def claim_names(pod: Obj) -> list[str]:
    """The claims the pod's volumes name, in order."""
    names = []
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        source = volume.get("persistentVolumeClaim") if isinstance(volume, dict) else None
        if isinstance(source, dict) and source.get("claimName"):
            names.append(str(source["claimName"]))
    return names


def _meta(obj: Obj) -> Obj:
    meta: Obj = obj.get("metadata") or {}
    return meta


def _spec(obj: Obj) -> Obj:
    spec: Obj = obj.get("spec") or {}
    return spec


def fully_bound(claim: Obj) -> bool:
    """``isPVCFullyBound``: the claim names its volume and the PV controller finished binding it."""
    annotations: Mapping[str, Any] = _meta(claim).get("annotations") or {}
    return bool(_spec(claim).get("volumeName")) and ANN_BIND_COMPLETED in annotations


def volume_node_affinity_matches(volume: Obj, labels: Mapping[str, str]) -> bool:
    """``CheckNodeAffinity`` (component-helpers/storage/volume): the volume's required node selector
    terms (any one of them) match a node made of these labels. Upstream builds that node from the
    labels alone, so a ``matchFields`` term on ``metadata.name`` matches no node; so here too."""
    affinity: Obj = _spec(volume).get("nodeAffinity") or {}
    required: Obj | None = affinity.get("required")
    if required is None:
        return True
    return any(term_matches_labels(term, labels, "") for term in required.get("nodeSelectorTerms") or [])


@dataclass(frozen=True)
class PodVolumeClaims:
    """What PreFilter leaves for Filter (upstream's ``stateData.podVolumeClaims``): the pod's bound
    claims, and its unbound claims of a ``WaitForFirstConsumer`` class."""

    bound: tuple[Obj, ...] = ()
    delay_binding: tuple[Obj, ...] = ()


class VolumeBinding:
    """PreFilter and Filter over the scheduler's informer caches of claims, volumes and classes (set
    at start; without ``claims`` the plugin says ``Skip``)."""

    name = NAME

    def __init__(self) -> None:
        self.claims: Indexer | None = None
        self.classes: Indexer | None = None
        self.volumes: Indexer | None = None

    def pre_filter(self, state: CycleState, pod: Obj) -> Status:
        """``PreFilter``: reject the pod whatever the node, or note its claims for Filter, or Skip."""
        names = claim_names(pod)
        if not names or self.claims is None:
            state.data[NAME] = PodVolumeClaims()
            return SKIP
        namespace = _meta(pod).get("namespace") or ""
        claims: list[Obj] = []
        for claim_name in names:  # podHasPVCs
            claim = self.claims.get_by_key(f"{namespace}/{claim_name}")
            if claim is None:
                return unschedulable(
                    NAME, f'persistentvolumeclaim "{claim_name}" not found', unresolvable=True
                )
            if (claim.get("status") or {}).get("phase") == CLAIM_LOST:
                volume = _spec(claim).get("volumeName") or ""
                return unschedulable(
                    NAME,
                    f'persistentvolumeclaim "{claim_name}" bound to non-existent persistentvolume "{volume}"',
                    unresolvable=True,
                )
            if _meta(claim).get("deletionTimestamp"):
                return unschedulable(
                    NAME, f'persistentvolumeclaim "{claim_name}" is being deleted', unresolvable=True
                )
            claims.append(claim)
        bound: list[Obj] = []
        delay_binding: list[Obj] = []
        for found in claims:  # GetPodVolumeClaims
            if fully_bound(found):
                bound.append(found)
            elif self._delay_binding(found) and not _spec(found).get("volumeName"):
                delay_binding.append(found)
            else:  # Immediate, or pre-bound (named volume, binding not completed)
                return unschedulable(NAME, ERR_UNBOUND_IMMEDIATE, unresolvable=True)
        state.data[NAME] = PodVolumeClaims(tuple(bound), tuple(delay_binding))
        return SUCCESS

    def _delay_binding(self, claim: Obj) -> bool:
        """``IsDelayBindingMode``: the claim's class exists and binds ``WaitForFirstConsumer``."""
        class_name = claim_class(claim)
        if not class_name or self.classes is None:
            return False
        storage_class = self.classes.get_by_key(class_name)
        return storage_class is not None and storage_class.get("volumeBindingMode") == WAIT_FOR_FIRST_CONSUMER

    def filter(self, state: CycleState, pod: Obj, node: NodeInfo) -> Status:
        """``Filter`` (``FindPodVolumes``): what the pod's claims say of this node."""
        claims = state.data.get(NAME)
        if not isinstance(claims, PodVolumeClaims):  # a state PreFilter did not see (a direct call)
            verdict = self.pre_filter(state, pod)
            if not verdict.is_success:
                return verdict if verdict.is_rejected else SUCCESS
            claims = state.data[NAME]
        bound_satisfied = volumes_found = unbound_satisfied = True
        if claims.bound and self.volumes is not None:  # checkBoundClaims
            for claim in claims.bound:
                volume = self.volumes.get_by_key(str(_spec(claim).get("volumeName")))
                if volume is None:
                    volumes_found = False
                    break
                if not volume_node_affinity_matches(volume, node.labels):
                    bound_satisfied = False
                    break
        for claim in claims.delay_binding:
            selected = (_meta(claim).get("annotations") or {}).get(ANN_SELECTED_NODE)
            if selected is not None and selected != node.name:
                unbound_satisfied = False  # provisioning was asked for on another node
                break
        reasons = []
        if not bound_satisfied:
            reasons.append(ERR_REASON_NODE_CONFLICT)
        if not unbound_satisfied:
            reasons.append(ERR_REASON_BIND_CONFLICT)
        if not volumes_found:
            reasons.append(ERR_REASON_PV_NOT_EXIST)
        return unschedulable(NAME, *reasons, unresolvable=True) if reasons else SUCCESS

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
            if self._delay_binding(claim):
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


__all__ = [
    "ANN_BIND_COMPLETED",
    "ANN_SELECTED_NODE",
    "ERR_REASON_BIND_CONFLICT",
    "ERR_REASON_NODE_CONFLICT",
    "ERR_REASON_PV_NOT_EXIST",
    "ERR_UNBOUND_IMMEDIATE",
    "NAME",
    "PVC_ADD",
    "PVC_UPDATE",
    "PV_ADD",
    "PV_UPDATE",
    "STORAGE_CLASS_ADD",
    "STORAGE_CLASS_UPDATE",
    "PodVolumeClaims",
    "VolumeBinding",
    "claim_names",
    "fully_bound",
    "pre_bind",
    "volume_node_affinity_matches",
]
