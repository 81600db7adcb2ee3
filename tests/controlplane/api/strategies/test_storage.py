"""PersistentVolumes, PersistentVolumeClaims and StorageClasses: ``TestValidatePersistentVolumes``,
``TestValidatePersistentVolumeClaim`` and ``TestValidateStorageClass`` of upstream's validation tests,
the defaults of ``pkg/apis/core/v1/defaults.go`` and ``pkg/apis/storage/v1/defaults.go``."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.api.strategies import (
    PersistentVolumeClaimStrategy,
    PersistentVolumeStrategy,
    StorageClassStrategy,
)
from controlplane.api.strategies.common import UndecodableObject
from tests.controlplane.api.strategies import create, stored, update

PVS = PersistentVolumeStrategy()
PVCS = PersistentVolumeClaimStrategy()
CLASSES = StorageClassStrategy()


def pv(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "capacity": {"storage": "10Gi"},
        "accessModes": ["ReadWriteOnce"],
        "hostPath": {"path": "/data"},
    }
    body.update(spec)
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv1"}, "spec": body}


def pvc(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    body.update(spec)
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"}, "spec": body}


def volume_errors(**spec: Any) -> list[str]:
    return create(PVS, pv(**spec), namespaced=False)[1]


def test_volume_defaults() -> None:
    obj = stored(PVS, pv(capacity={"storage": "1024Mi"}), namespaced=False)
    assert obj["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    assert obj["spec"]["volumeMode"] == "Filesystem"
    assert obj["status"] == {"phase": "Pending"}
    assert obj["spec"]["capacity"] == {"storage": "1Gi"}


@pytest.mark.parametrize(
    ("spec", "messages"),
    [
        ({"accessModes": []}, ["spec.accessModes: Required value"]),
        (
            {"accessModes": ["fakemode"]},
            [
                'spec.accessModes: Unsupported value: "fakemode": supported values: "ReadOnlyMany", '
                '"ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"'
            ],
        ),
        (
            {"accessModes": ["ReadWriteOncePod", "ReadWriteMany"]},
            ["spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes"],
        ),
        (
            {"capacity": {}},
            [
                "spec.capacity: Required value",
                'spec.capacity: Unsupported value: {}: supported values: "storage"',
            ],
        ),
        (
            {"capacity": {"storage": "0"}},
            ['spec.capacity[storage]: Invalid value: "0": must be greater than zero'],
        ),
        (
            {"persistentVolumeReclaimPolicy": "fakeReclaimPolicy"},
            [
                'spec.persistentVolumeReclaimPolicy: Unsupported value: "fakeReclaimPolicy": '
                'supported values: "Delete", "Recycle", "Retain"'
            ],
        ),
        ({"hostPath": None}, ["spec: Required value: must specify a volume type"]),
        (
            {"nfs": {"server": "nfs", "path": "/x"}},
            ["spec.nfs: Forbidden: may not specify more than 1 volume type"],
        ),
        (
            {"storageClassName": "-invalid-"},
            [
                'spec.storageClassName: Invalid value: "-invalid-": a lowercase RFC 1123 subdomain '
                "must consist of lower case alphanumeric characters, '-' or '.', and must start and end "
                "with an alphanumeric character (e.g. 'example.com', regex used for validation is "
                "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            ],
        ),
    ],
)
def test_volume_validation(spec: dict[str, Any], messages: list[str]) -> None:
    assert volume_errors(**spec) == messages


def test_a_bad_quantity_is_a_decode_error() -> None:
    with pytest.raises(UndecodableObject):
        create(PVS, pv(capacity={"storage": "ten"}), namespaced=False)


def test_a_volume_source_is_immutable() -> None:
    old = stored(PVS, pv(), namespaced=False)
    assert update(PVS, pv(hostPath={"path": "/other"}), old, namespaced=False)[1] == [
        "spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation"
    ]
    # The claimRef and reclaim policy may change (the PV controller and administrators do that).
    changed = pv(persistentVolumeReclaimPolicy="Delete", claimRef={"namespace": "a", "name": "b"})
    assert update(PVS, changed, old, namespaced=False)[1] == []


def test_claim_defaults_and_validation() -> None:
    obj = stored(PVCS, pvc())
    assert obj["spec"]["volumeMode"] == "Filesystem"
    assert obj["status"] == {"phase": "Pending"}
    assert create(PVCS, pvc(accessModes=[]))[1] == [
        "spec.accessModes: Required value: at least 1 access mode is required"
    ]
    assert create(PVCS, pvc(resources={}))[1] == ["spec.resources[storage]: Required value"]
    assert create(PVCS, pvc(resources={"requests": {"storage": "0"}}))[1] == [
        'spec.resources[storage]: Invalid value: "0": must be greater than zero'
    ]
    assert create(PVCS, pvc(volumeMode="Raw"))[1] == [
        'spec.volumeMode: Unsupported value: "Raw": supported values: "Block", "Filesystem"'
    ]


def test_a_claim_spec_is_immutable_except_binding_and_growth() -> None:
    old = stored(PVCS, pvc())
    bound, errors = update(PVCS, pvc(volumeName="pv1", storageClassName="standard"), old)
    assert errors == [], "volumeName once, and a class where there was none"
    assert update(PVCS, pvc(accessModes=["ReadWriteMany"]), old)[1] == [
        "spec: Forbidden: spec is immutable after creation except resources.requests and "
        "volumeAttributesClassName for bound claims"
    ]
    bound_old = {**bound, "status": {"phase": "Bound"}}
    grown = {**pvc(volumeName="pv1", storageClassName="standard", resources={"requests": {"storage": "2Gi"}})}
    grown_stored, errors = update(PVCS, grown, bound_old)
    assert errors == []
    shrunk = pvc(volumeName="pv1", storageClassName="standard", resources={"requests": {"storage": "512Mi"}})
    assert update(PVCS, shrunk, grown_stored)[1] == [
        "spec.resources.requests.storage: Forbidden: field can not be less than previous value"
    ]


def storage_class(**fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": "fast"},
        "provisioner": "kubernetes.io/foo-provisioner",
        **fields,
    }


def test_storage_class_defaults_and_validation() -> None:
    obj = stored(CLASSES, storage_class(), namespaced=False)
    assert (obj["reclaimPolicy"], obj["volumeBindingMode"]) == ("Delete", "Immediate")
    assert create(CLASSES, storage_class(provisioner=""), namespaced=False)[1] == [
        "provisioner: Required value"
    ]
    assert create(CLASSES, storage_class(reclaimPolicy="Recycle"), namespaced=False)[1] == [
        'reclaimPolicy: Unsupported value: "Recycle": supported values: "Delete", "Retain"'
    ]
    assert create(CLASSES, storage_class(volumeBindingMode="Later"), namespaced=False)[1] == [
        'volumeBindingMode: Unsupported value: "Later": supported values: "Immediate", "WaitForFirstConsumer"'
    ]
    assert create(CLASSES, storage_class(provisioner="a/b/c"), namespaced=False)[1][0].startswith(
        'provisioner: Invalid value: "a/b/c": a qualified name must consist of'
    )


def test_storage_class_update_rules() -> None:
    old = stored(CLASSES, storage_class(parameters={"type": "ssd"}), namespaced=False)
    new = storage_class(
        provisioner="other.io/p",
        parameters={"type": "hdd"},
        reclaimPolicy="Retain",
        volumeBindingMode="Immediate",
    )
    assert update(CLASSES, new, old, namespaced=False)[1] == [
        "parameters: Forbidden: updates to parameters are forbidden.",
        "provisioner: Forbidden: updates to provisioner are forbidden.",
        "reclaimPolicy: Forbidden: updates to reclaimPolicy are forbidden.",
    ]
    annotated = storage_class(parameters={"type": "ssd"})
    annotated["metadata"]["annotations"] = {"storageclass.kubernetes.io/is-default-class": "true"}
    assert update(CLASSES, annotated, old, namespaced=False)[1] == []
