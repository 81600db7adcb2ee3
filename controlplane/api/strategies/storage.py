"""PersistentVolumes, PersistentVolumeClaims and StorageClasses: storage that outlives a pod.

A pod's ``emptyDir`` dies with the pod. Storage that must survive it is split in two objects:

- a **PersistentVolume** (cluster-scoped, like a Node) is a piece of storage that exists: its
  ``capacity`` (``storage: 10Gi``), its ``accessModes`` (``ReadWriteOnce``: one node mounts it
  read-write; ``ReadOnlyMany``, ``ReadWriteMany``, ``ReadWriteOncePod``), where it is (exactly one
  volume source: ``hostPath``, ``nfs``, ``csi``, ``local``...) and what happens to it when its claim
  goes (``persistentVolumeReclaimPolicy``: ``Retain`` keeps it, ``Delete`` deletes it);
- a **PersistentVolumeClaim** (namespaced) is a request for storage, what a pod names in its volumes:
  "at least 1Gi, ReadWriteOnce, of class ``standard``". The PV controller **binds** a claim to a
  volume that satisfies it (``spec.volumeName`` on the claim, ``spec.claimRef`` on the volume); both
  are then ``Bound``. A claim is ``Pending`` until then, and so is any pod using it.

A **StorageClass** (``storage.k8s.io/v1``) says how to make volumes on demand: a claim of a class
whose ``provisioner`` is running gets a volume created for it (dynamic provisioning) with the class's
``reclaimPolicy`` (default ``Delete``); ``volumeBindingMode: WaitForFirstConsumer`` delays that until
a pod uses the claim. The class annotated ``storageclass.kubernetes.io/is-default-class: "true"`` is
given to claims that name none (the DefaultStorageClass admission plugin).

What the API server checks here: every claim and volume has at least one access mode, a volume has a
``capacity`` of ``storage`` only and one volume source, a claim asks for ``resources.requests.storage``;
a claim's spec is **immutable** once created except what binding and expansion change
(``volumeName`` once, ``storageClassName`` from unset, a larger ``storage`` request); a class's
``provisioner``, ``parameters`` and ``reclaimPolicy`` never change.

Upstream: ``pkg/apis/core/validation/validation.go`` (``ValidatePersistentVolume``,
``ValidatePersistentVolumeClaim`` and their updates), ``pkg/apis/core/v1/defaults.go``,
``pkg/apis/storage/validation/validation.go``, ``pkg/apis/storage/v1/defaults.go``,
``pkg/registry/core/persistentvolume{,claim}/strategy.go``, ``pkg/registry/storage/storageclass/
strategy.go``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from controlplane.api.meta import Object
from controlplane.api.quantity import QuantityError, parse_json_quantity
from controlplane.api.strategies.common import (
    CoreKindStrategy,
    KindStrategy,
    as_dict,
    as_list,
    as_str,
    child,
    immutable,
    key,
    semantic,
    spec_of,
    validate_label_selector,
)
from controlplane.api.strategies.pods.defaults import default_resource_list
from controlplane.api.strategies.workloads import validate_meta_update
from controlplane.api.validation import (
    FieldError,
    forbidden,
    invalid,
    is_dns1123_subdomain,
    is_qualified_name,
    not_supported,
    required,
    too_long,
    validate_object_meta_update,
)

#: ``metadata.annotations`` key of the class claims get by default (``storageutil.IsDefaultAnnotation``).
DEFAULT_CLASS_ANNOTATION: Final = "storageclass.kubernetes.io/is-default-class"
#: The beta spelling still honoured by upstream.
BETA_DEFAULT_CLASS_ANNOTATION: Final = "storageclass.beta.kubernetes.io/is-default-class"
#: The class before ``storageClassName`` existed (``v1.BetaStorageClassAnnotation``): still read first.
BETA_STORAGE_CLASS_ANNOTATION: Final = "volume.beta.kubernetes.io/storage-class"

#: The class every Kubelab cluster starts with, and the provisioner that serves it (a simulated
#: external provisioner run by the controller manager: ``controllers/persistentvolume.py``).
DEFAULT_STORAGE_CLASS: Final = "standard"
SIMULATED_PROVISIONER: Final = "kubelab.io/simulated"

ACCESS_MODES: Final = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")  # sorted
PV_RECLAIM_POLICIES: Final = ("Delete", "Recycle", "Retain")
CLASS_RECLAIM_POLICIES: Final = ("Delete", "Retain")
VOLUME_MODES: Final = ("Block", "Filesystem")
BINDING_MODES: Final = ("Immediate", "WaitForFirstConsumer")
#: ``PersistentVolumeSource``'s members (one of them, exactly, per volume).
PV_SOURCES: Final = (
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "hostPath",
    "glusterfs",
    "nfs",
    "rbd",
    "iscsi",
    "cinder",
    "cephfs",
    "fc",
    "flocker",
    "flexVolume",
    "azureFile",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "portworxVolume",
    "scaleIO",
    "local",
    "storageos",
    "csi",
)
NOT_POSITIVE: Final = "must be greater than zero"
MAX_PARAMETERS: Final = 512
MAX_PARAMETERS_SIZE: Final = 256 * (1 << 10)


def is_default_class(storage_class: Mapping[str, Any]) -> bool:
    """``storageutil.IsDefaultAnnotation``: the GA or the beta annotation, exactly ``"true"``."""
    annotations = as_dict(as_dict(storage_class.get("metadata")).get("annotations"))
    return (
        annotations.get(DEFAULT_CLASS_ANNOTATION) == "true"
        or annotations.get(BETA_DEFAULT_CLASS_ANNOTATION) == "true"
    )


def claim_class(claim: Mapping[str, Any]) -> str:
    """``GetPersistentVolumeClaimClass``: the beta annotation, else ``spec.storageClassName``, else ""."""
    annotations = as_dict(as_dict(claim.get("metadata")).get("annotations"))
    if BETA_STORAGE_CLASS_ANNOTATION in annotations:
        return as_str(annotations[BETA_STORAGE_CLASS_ANNOTATION])
    return as_str(as_dict(claim.get("spec")).get("storageClassName"))


def volume_class(volume: Mapping[str, Any]) -> str:
    """``GetPersistentVolumeClass``: the beta annotation, else ``spec.storageClassName``."""
    return claim_class(volume)


def _quantity(value: Any) -> Any:
    try:
        return parse_json_quantity(value)
    except QuantityError:
        return None


def _validate_class_name(value: Any, path: str) -> list[FieldError]:
    """``ValidateClassName`` (a DNS subdomain) on a non-empty ``storageClassName``."""
    name = as_str(value)
    if not name:
        return []
    return [invalid(path, name, msg) for msg in is_dns1123_subdomain(name)]


def _validate_access_modes(modes: Any, path: str, *, claim: bool) -> list[FieldError]:
    errors: list[FieldError] = []
    modes = as_list(modes)
    if not modes:
        errors.append(required(path, "at least 1 access mode is required" if claim else ""))
    once_pod = other = False
    for mode in modes:
        if mode not in ACCESS_MODES:
            errors.append(not_supported(path, mode, list(ACCESS_MODES)))
        elif mode == "ReadWriteOncePod":
            once_pod = True
        else:
            other = True
    if once_pod and other:
        errors.append(forbidden(path, "may not use ReadWriteOncePod with other access modes"))
    return errors


def _validate_positive_quantity(value: Any, path: str) -> list[FieldError]:
    """``ValidatePositiveQuantityValue``."""
    quantity = _quantity(value)
    if quantity is None or quantity.sign() <= 0:
        return [invalid(path, str(quantity) if quantity is not None else as_str(value), NOT_POSITIVE)]
    return []


def _validate_volume_mode(mode: Any, path: str) -> list[FieldError]:
    if mode is not None and mode not in VOLUME_MODES:
        return [not_supported(path, mode, list(VOLUME_MODES))]
    return []


# -- PersistentVolume ------------------------------------------------------------------------------


def validate_persistent_volume_spec(spec: Mapping[str, Any], path: str) -> list[FieldError]:
    """``ValidatePersistentVolumeSpec`` (not inline): modes, capacity, class, one volume source."""
    errors = _validate_access_modes(spec.get("accessModes"), child(path, "accessModes"), claim=False)
    capacity = as_dict(spec.get("capacity"))
    capacity_path = child(path, "capacity")
    if not capacity:
        errors.append(required(capacity_path))
    if "storage" not in capacity or len(capacity) > 1:
        errors.append(not_supported(capacity_path, capacity, ["storage"]))
    for name, value in capacity.items():
        errors += _validate_positive_quantity(value, key(capacity_path, name))
    errors += _validate_class_name(spec.get("storageClassName"), child(path, "storageClassName"))
    errors += _validate_volume_mode(spec.get("volumeMode"), child(path, "volumeMode"))
    policy = spec.get("persistentVolumeReclaimPolicy")
    if policy and policy not in PV_RECLAIM_POLICIES:
        errors.append(
            not_supported(child(path, "persistentVolumeReclaimPolicy"), policy, list(PV_RECLAIM_POLICIES))
        )
    sources = [name for name in PV_SOURCES if spec.get(name) is not None]
    if not sources:
        errors.append(required(path, "must specify a volume type"))
    for extra in sources[1:]:
        errors.append(forbidden(child(path, extra), "may not specify more than 1 volume type"))
    if "hostPath" in sources and not as_str(as_dict(spec.get("hostPath")).get("path")):
        errors.append(required(child(path, "hostPath.path")))
    if "csi" in sources:
        csi = as_dict(spec.get("csi"))
        if not as_str(csi.get("driver")):
            errors.append(required(child(path, "csi.driver")))
        if not as_str(csi.get("volumeHandle")):
            errors.append(required(child(path, "csi.volumeHandle")))
    if "nfs" in sources:
        nfs = as_dict(spec.get("nfs"))
        if not as_str(nfs.get("server")):
            errors.append(required(child(path, "nfs.server")))
        nfs_path = as_str(nfs.get("path"))
        if not nfs_path:
            errors.append(required(child(path, "nfs.path")))
        elif not nfs_path.startswith("/"):
            errors.append(invalid(child(path, "nfs.path"), nfs_path, "must be an absolute path"))
    if "local" in sources and not as_str(as_dict(spec.get("local")).get("path")):
        errors.append(required(child(path, "local.path")))
    return errors


def _source_of(spec: Mapping[str, Any]) -> dict[str, Any]:
    return {name: spec[name] for name in PV_SOURCES if spec.get(name) is not None}


class PersistentVolumeStrategy(CoreKindStrategy):
    """``pkg/registry/core/persistentvolume/strategy.go``: a new volume is ``Pending``; the phase is the
    PV controller's, written through ``/status``."""

    status_subresource = True

    def reset_status(self, obj: Object) -> None:
        obj["status"] = {"phase": "Pending"}

    def default(self, obj: Object) -> None:
        """``SetDefaults_PersistentVolume``: Retain, Filesystem; quantities in their canonical form."""
        spec = spec_of(obj)
        if not spec.get("persistentVolumeReclaimPolicy"):
            spec["persistentVolumeReclaimPolicy"] = "Retain"
        if spec.get("volumeMode") is None:
            spec["volumeMode"] = "Filesystem"
        default_resource_list(spec.get("capacity"))
        status = obj.get("status")
        if isinstance(status, dict) and not status.get("phase"):
            status["phase"] = "Pending"

    def validate(self, obj: Object, *, namespaced: bool) -> list[FieldError]:
        return self.validate_meta(obj, namespaced=namespaced) + validate_persistent_volume_spec(
            as_dict(obj.get("spec")), "spec"
        )

    def validate_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidatePersistentVolumeUpdate``: the volume source and mode never change."""
        spec, old_spec = as_dict(obj.get("spec")), as_dict(old.get("spec"))
        errors = validate_meta_update(obj, old) + validate_persistent_volume_spec(spec, "spec")
        if semantic(_source_of(spec)) != semantic(_source_of(old_spec)):
            errors.append(
                forbidden(
                    "spec.persistentvolumesource", "spec.persistentvolumesource is immutable after creation"
                )
            )
        return errors + immutable(spec.get("volumeMode"), old_spec.get("volumeMode"), "volumeMode")


# -- PersistentVolumeClaim -------------------------------------------------------------------------


def validate_claim_spec(spec: Mapping[str, Any], path: str) -> list[FieldError]:
    """``ValidatePersistentVolumeClaimSpec``."""
    errors = _validate_access_modes(spec.get("accessModes"), child(path, "accessModes"), claim=True)
    if spec.get("selector") is not None:
        errors += validate_label_selector(spec.get("selector"), child(path, "selector"))
    requests = as_dict(as_dict(spec.get("resources")).get("requests"))
    storage_path = key(child(path, "resources"), "storage")
    if "storage" not in requests:
        errors.append(required(storage_path))
    else:
        errors += _validate_positive_quantity(requests["storage"], storage_path)
    errors += _validate_class_name(spec.get("storageClassName"), child(path, "storageClassName"))
    return errors + _validate_volume_mode(spec.get("volumeMode"), child(path, "volumeMode"))


def _storage_request(claim: Mapping[str, Any]) -> Any:
    return _quantity(
        as_dict(as_dict(as_dict(claim.get("spec")).get("resources")).get("requests")).get("storage")
    )


def validate_claim_update(obj: Object, old: Object) -> list[FieldError]:
    """``ValidatePersistentVolumeClaimUpdate``: the spec is immutable except what binding (volumeName
    once, storageClassName from unset) and expansion (a larger storage request of a bound claim) change."""
    spec, old_spec = dict(as_dict(obj.get("spec"))), dict(as_dict(old.get("spec")))
    if not old_spec.get("volumeName"):
        old_spec["volumeName"] = spec.get("volumeName")
    if old_spec.get("storageClassName") is None and spec.get("storageClassName") is not None:
        old_spec["storageClassName"] = spec.get("storageClassName")
    if as_dict(obj.get("status")).get("phase") == "Bound":
        for compared in (spec, old_spec):
            resources = dict(as_dict(compared.get("resources")))
            requests = dict(as_dict(resources.get("requests")))
            requests.pop("storage", None)
            resources["requests"] = requests
            compared["resources"] = resources
    errors: list[FieldError] = []
    if semantic(spec) != semantic(old_spec):
        errors.append(
            forbidden(
                "spec",
                "spec is immutable after creation except resources.requests and volumeAttributesClassName "
                "for bound claims",
            )
        )
    new_size, old_size = _storage_request(obj), _storage_request(old)
    if new_size is not None and old_size is not None and new_size < old_size:
        errors.append(
            forbidden("spec.resources.requests.storage", "field can not be less than previous value")
        )
    return errors


class PersistentVolumeClaimStrategy(CoreKindStrategy):
    """``pkg/registry/core/persistentvolumeclaim/strategy.go``: a new claim is ``Pending``."""

    status_subresource = True

    def reset_status(self, obj: Object) -> None:
        obj["status"] = {"phase": "Pending"}

    def default(self, obj: Object) -> None:
        """``SetDefaults_PersistentVolumeClaim{,Spec}``: Filesystem; quantities canonical."""
        spec = spec_of(obj)
        if spec.get("volumeMode") is None:
            spec["volumeMode"] = "Filesystem"
        resources = spec.get("resources")
        if isinstance(resources, dict):
            default_resource_list(resources.get("requests"))
            default_resource_list(resources.get("limits"))
        status = obj.get("status")
        if isinstance(status, dict):
            if not status.get("phase"):
                status["phase"] = "Pending"
            default_resource_list(status.get("capacity"))

    def validate(self, obj: Object, *, namespaced: bool) -> list[FieldError]:
        return self.validate_meta(obj, namespaced=namespaced) + validate_claim_spec(
            as_dict(obj.get("spec")), "spec"
        )

    def validate_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        return (
            validate_meta_update(obj, old)
            + validate_claim_spec(as_dict(obj.get("spec")), "spec")
            + validate_claim_update(obj, old)
        )


# -- StorageClass ----------------------------------------------------------------------------------


def _validate_provisioner(provisioner: Any, path: str) -> list[FieldError]:
    """``validateProvisioner``: required, and a qualified name once lower-cased."""
    text = as_str(provisioner)
    if not text:
        return [required(path)]
    return [invalid(path, text.lower(), msg) for msg in is_qualified_name(text.lower())]


def _validate_parameters(parameters: Any, path: str) -> list[FieldError]:
    """``validateParameters`` (empty allowed)."""
    parameters = as_dict(parameters)
    if len(parameters) > MAX_PARAMETERS:
        return [too_long(path, MAX_PARAMETERS)]
    errors: list[FieldError] = []
    size = 0
    for name, value in parameters.items():
        if not name:
            errors.append(invalid(path, name, "field can not be empty."))
        size += len(name) + len(as_str(value))
    if size > MAX_PARAMETERS_SIZE:
        errors.append(too_long(path, MAX_PARAMETERS_SIZE))
    return errors


class StorageClassStrategy(KindStrategy):
    """``pkg/registry/storage/storageclass/strategy.go``."""

    def default(self, obj: Object) -> None:
        """``SetDefaults_StorageClass``: reclaim ``Delete``, bind ``Immediate``."""
        if not obj.get("reclaimPolicy"):
            obj["reclaimPolicy"] = "Delete"
        if not obj.get("volumeBindingMode"):
            obj["volumeBindingMode"] = "Immediate"

    def validate(self, obj: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidateStorageClass``."""
        errors = self.validate_meta(obj, namespaced=namespaced)
        errors += _validate_provisioner(obj.get("provisioner"), "provisioner")
        errors += _validate_parameters(obj.get("parameters"), "parameters")
        policy = obj.get("reclaimPolicy")
        if policy and policy not in CLASS_RECLAIM_POLICIES:
            errors.append(not_supported("reclaimPolicy", policy, list(CLASS_RECLAIM_POLICIES)))
        mode = obj.get("volumeBindingMode")
        if mode is None:
            errors.append(required("volumeBindingMode"))
        elif mode not in BINDING_MODES:
            errors.append(not_supported("volumeBindingMode", mode, list(BINDING_MODES)))
        return errors

    def validate_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidateStorageClassUpdate``: provisioner, parameters, reclaim policy, binding mode fixed."""
        errors = self.validate(obj, namespaced=namespaced) + validate_object_meta_update(
            obj["metadata"], old["metadata"]
        )
        if semantic(obj.get("parameters")) != semantic(old.get("parameters")):
            errors.append(forbidden("parameters", "updates to parameters are forbidden."))
        if obj.get("provisioner") != old.get("provisioner"):
            errors.append(forbidden("provisioner", "updates to provisioner are forbidden."))
        if obj.get("reclaimPolicy") != old.get("reclaimPolicy"):
            errors.append(forbidden("reclaimPolicy", "updates to reclaimPolicy are forbidden."))
        return errors + immutable(
            obj.get("volumeBindingMode"), old.get("volumeBindingMode"), "volumeBindingMode"
        )


def default_storage_class() -> dict[str, Any]:
    """The ``standard`` class a cluster starts with: default, immediate binding, volumes deleted with
    their claims (what kind's ``standard`` class is, with Kubelab's simulated provisioner)."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {
            "name": DEFAULT_STORAGE_CLASS,
            "annotations": {DEFAULT_CLASS_ANNOTATION: "true"},
            "labels": {"addonmanager.kubernetes.io/mode": "EnsureExists"},
        },
        "provisioner": SIMULATED_PROVISIONER,
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "Immediate",
    }


__all__ = [
    "ACCESS_MODES",
    "BETA_STORAGE_CLASS_ANNOTATION",
    "DEFAULT_CLASS_ANNOTATION",
    "DEFAULT_STORAGE_CLASS",
    "SIMULATED_PROVISIONER",
    "PersistentVolumeClaimStrategy",
    "PersistentVolumeStrategy",
    "StorageClassStrategy",
    "claim_class",
    "default_storage_class",
    "is_default_class",
    "validate_claim_spec",
    "validate_claim_update",
    "validate_persistent_volume_spec",
    "volume_class",
]
