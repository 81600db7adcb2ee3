"""The PersistentVolume binder and the simulated provisioner against an in-process API server (which
creates the default ``standard`` StorageClass and runs the DefaultStorageClass admission plugin)."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from controlplane.api.meta import Object
from controlplane.client.errors import NotFound
from controlplane.client.manager import Manager
from controlplane.components.controllers import persistentvolume, volumeprovisioner
from controlplane.components.controllers.persistentvolume import find_matching_volume, volume_satisfies
from tests.support.inprocess import InProcessCluster, in_process_cluster, wait_for


@asynccontextmanager
async def storage_controllers(
    cluster: InProcessCluster, *, provisioner: bool = True
) -> AsyncIterator[Manager]:
    manager = Manager(cluster.client, name="kube-controller-manager", rng=random.Random(5))
    persistentvolume.add_to_manager(manager)
    if provisioner:
        volumeprovisioner.add_to_manager(manager)
    async with manager:
        yield manager


def volume(name: str, size: str, *modes: str, policy: str = "Retain", **spec: Any) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": size},
            "accessModes": list(modes),
            "persistentVolumeReclaimPolicy": policy,
            "hostPath": {"path": f"/data/{name}"},
            **spec,
        },
    }


def claim(name: str, size: str, *modes: str, **spec: Any) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name},
        "spec": {"accessModes": list(modes), "resources": {"requests": {"storage": size}}, **spec},
    }


def phase(obj: Object) -> str:
    return str((obj.get("status") or {}).get("phase"))


def test_the_smallest_fitting_volume_matches() -> None:
    wanted = {
        "metadata": {"namespace": "default", "name": "data", "uid": "u1"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "2Gi"}}},
    }
    small = {
        "metadata": {"name": "small"},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]},
    }
    big = {
        "metadata": {"name": "big"},
        "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"]},
    }
    fits = {
        "metadata": {"name": "fits"},
        "spec": {"capacity": {"storage": "3Gi"}, "accessModes": ["ReadWriteOnce"]},
    }
    read_only = {
        "metadata": {"name": "ro"},
        "spec": {"capacity": {"storage": "3Gi"}, "accessModes": ["ReadOnlyMany"]},
    }
    other_class = {
        "metadata": {"name": "fast"},
        "spec": {
            "capacity": {"storage": "3Gi"},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "fast",
        },
    }
    taken = {
        "metadata": {"name": "taken"},
        "spec": {
            "capacity": {"storage": "2Gi"},
            "accessModes": ["ReadWriteOnce"],
            "claimRef": {"namespace": "default", "name": "other", "uid": "u2"},
        },
    }
    assert not volume_satisfies(small, wanted) and not volume_satisfies(read_only, wanted)
    assert not volume_satisfies(other_class, wanted) and not volume_satisfies(taken, wanted)
    assert find_matching_volume(wanted, [big, small, fits, read_only, other_class, taken]) is fits
    pre_bound = {
        "metadata": {"name": "mine"},
        "spec": {
            "capacity": {"storage": "10Gi"},
            "accessModes": ["ReadWriteOnce", "ReadOnlyMany"],
            "claimRef": {"namespace": "default", "name": "data"},
        },
    }
    assert find_matching_volume(wanted, [fits, pre_bound]) is pre_bound, (
        "a volume pre-bound to it comes first"
    )


async def test_a_claim_without_a_class_binds_to_a_matching_volume_and_releases_it(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster, storage_controllers(cluster, provisioner=False):
        volumes = cluster.resource("", "v1", "persistentvolumes")
        claims = cluster.resource("", "v1", "persistentvolumeclaims", "default")
        await volumes.create(volume("pv-small", "1Gi", "ReadWriteOnce"))
        await volumes.create(volume("pv-big", "5Gi", "ReadWriteOnce", "ReadOnlyMany"))
        await wait_for(volumes, lambda items: all(phase(v) == "Available" for v in items))
        # storageClassName "" opts out of the default class: only pre-made volumes without a class.
        created = await claims.create(claim("data", "2Gi", "ReadWriteOnce", storageClassName=""))
        [bound] = await wait_for(claims, lambda items: phase(items[0]) == "Bound")
        assert bound["spec"]["volumeName"] == "pv-big"
        assert bound["status"]["capacity"] == {"storage": "5Gi"}
        assert bound["status"]["accessModes"] == ["ReadWriteOnce", "ReadOnlyMany"]
        assert bound["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"] == "yes"
        big = await volumes.get("pv-big")
        assert phase(big) == "Bound"
        assert big["spec"]["claimRef"]["uid"] == created["metadata"]["uid"]
        assert big["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
        assert phase(await volumes.get("pv-small")) == "Available"

        await claims.delete("data")
        released = await wait_for(
            volumes,
            lambda items: any(v["metadata"]["name"] == "pv-big" and phase(v) == "Released" for v in items),
        )
        assert released, "Retain keeps the volume, Released, with its claimRef"


async def test_a_claim_with_no_volume_and_no_class_waits(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster, storage_controllers(cluster, provisioner=False):
        claims = cluster.resource("", "v1", "persistentvolumeclaims", "default")
        events = cluster.resource("", "v1", "events", "default")
        await claims.create(claim("lonely", "1Gi", "ReadWriteOnce", storageClassName=""))
        found = await wait_for(events, lambda evs: any(e["reason"] == "FailedBinding" for e in evs))
        assert next(e for e in found if e["reason"] == "FailedBinding")["message"] == (
            "no persistent volumes available for this claim and no storage class is set"
        )
        assert phase(await claims.get("lonely")) == "Pending"


async def test_the_default_class_provisions_a_volume_that_goes_with_its_claim(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster, storage_controllers(cluster):
        volumes = cluster.resource("", "v1", "persistentvolumes")
        claims = cluster.resource("", "v1", "persistentvolumeclaims", "default")
        events = cluster.resource("", "v1", "events", "default")
        standard = await cluster.resource("storage.k8s.io", "v1", "storageclasses").get("standard")
        assert standard["metadata"]["annotations"]["storageclass.kubernetes.io/is-default-class"] == "true"
        created = await claims.create(claim("data", "1Gi", "ReadWriteOnce"))
        assert created["spec"]["storageClassName"] == "standard", "DefaultStorageClass admission"
        [bound] = await wait_for(claims, lambda items: phase(items[0]) == "Bound")
        name = f"pvc-{created['metadata']['uid']}"
        assert bound["spec"]["volumeName"] == name
        assert (
            bound["metadata"]["annotations"]["volume.kubernetes.io/storage-provisioner"]
            == "kubelab.io/simulated"
        )
        provisioned = await volumes.get(name)
        assert provisioned["spec"]["storageClassName"] == "standard"
        assert provisioned["spec"]["persistentVolumeReclaimPolicy"] == "Delete"
        assert provisioned["spec"]["capacity"] == {"storage": "1Gi"}
        assert (
            provisioned["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"]
            == "kubelab.io/simulated"
        )
        found = await wait_for(events, lambda evs: any(e["reason"] == "ProvisioningSucceeded" for e in evs))
        reasons = {e["reason"] for e in found}
        assert {"ExternalProvisioning", "Provisioning", "ProvisioningSucceeded"} <= reasons

        await claims.delete("data")
        await wait_for(volumes, lambda items: not items)
        with pytest.raises(NotFound):
            await volumes.get(name)


async def test_a_wait_for_first_consumer_class_provisions_once_a_node_is_selected(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster, storage_controllers(cluster):
        classes = cluster.resource("storage.k8s.io", "v1", "storageclasses")
        claims = cluster.resource("", "v1", "persistentvolumeclaims", "default")
        events = cluster.resource("", "v1", "events", "default")
        await classes.create(
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "StorageClass",
                "metadata": {"name": "later"},
                "provisioner": "kubelab.io/simulated",
                "volumeBindingMode": "WaitForFirstConsumer",
            }
        )
        await claims.create(claim("data", "1Gi", "ReadWriteOnce", storageClassName="later"))
        await wait_for(events, lambda evs: any(e["reason"] == "WaitForFirstConsumer" for e in evs))
        assert phase(await claims.get("data")) == "Pending"
        assert (await cluster.resource("", "v1", "persistentvolumes").list())["items"] == []
        # What the scheduler's VolumeBinding PreBind does once a pod using the claim has a node.
        await claims.patch(
            "data", {"metadata": {"annotations": {"volume.kubernetes.io/selected-node": "node-1"}}}
        )
        [bound] = await wait_for(claims, lambda items: phase(items[0]) == "Bound")
        assert bound["spec"]["volumeName"].startswith("pvc-")
