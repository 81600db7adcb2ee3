"""The table columns of ReplicationControllers, PodTemplates, PersistentVolumes, PersistentVolumeClaims,
StorageClasses, Ingresses, IngressClasses and NetworkPolicies (``pkg/printers/internalversion/
printers.go``): what ``kubectl get`` shows for them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from controlplane.api.printers import access_modes_text, printer_for

NOW = datetime(2026, 1, 1, 0, 10, tzinfo=UTC)
CREATED = "2026-01-01T00:00:00Z"


def names(group: str, resource: str) -> list[str]:
    return [c["name"] for c in printer_for(group, resource).column_definitions()]


def row(group: str, resource: str, obj: dict[str, Any]) -> list[Any]:
    return printer_for(group, resource).row(obj, NOW)


def test_replication_controller_columns_and_row() -> None:
    assert names("", "replicationcontrollers") == [
        "Name",
        "Desired",
        "Current",
        "Ready",
        "Age",
        "Containers",
        "Images",
        "Selector",
    ]
    rc = {
        "metadata": {"name": "web", "creationTimestamp": CREATED},
        "spec": {
            "replicas": 3,
            "selector": {"app": "web", "tier": "front"},
            "template": {
                "spec": {"containers": [{"name": "a", "image": "nginx"}, {"name": "b", "image": "redis"}]}
            },
        },
        "status": {"replicas": 2, "readyReplicas": 1},
    }
    assert row("", "replicationcontrollers", rc) == [
        "web",
        3,
        2,
        1,
        "10m",
        "a,b",
        "nginx,redis",
        "app=web,tier=front",
    ]


def test_pod_template_row_has_no_age() -> None:
    assert names("", "podtemplates") == ["Name", "Containers", "Images", "Pod Labels"]
    template = {
        "metadata": {"name": "base", "creationTimestamp": CREATED},
        "template": {
            "metadata": {"labels": {"app": "x"}},
            "spec": {"containers": [{"name": "m", "image": "b"}]},
        },
    }
    assert row("", "podtemplates", template) == ["base", "m", "b", "app=x"]


@pytest.mark.parametrize(
    ("modes", "text"),
    [
        (["ReadWriteMany", "ReadWriteOnce"], "RWO,RWX"),
        (["ReadOnlyMany", "ReadOnlyMany"], "ROX"),
        (["ReadWriteOncePod"], "RWOP"),
        ([], ""),
    ],
)
def test_access_modes_print_short_in_a_fixed_order(modes: list[str], text: str) -> None:
    assert access_modes_text(modes) == text


def test_persistent_volume_row() -> None:
    assert names("", "persistentvolumes") == [
        "Name",
        "Capacity",
        "Access Modes",
        "Reclaim Policy",
        "Status",
        "Claim",
        "StorageClass",
        "VolumeAttributesClass",
        "Reason",
        "Age",
        "VolumeMode",
    ]
    pv: dict[str, Any] = {
        "metadata": {"name": "pv1", "creationTimestamp": CREATED},
        "spec": {
            "capacity": {"storage": "5Gi"},
            "accessModes": ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Retain",
            "claimRef": {"namespace": "shop", "name": "data"},
            "storageClassName": "standard",
            "volumeMode": "Filesystem",
        },
        "status": {"phase": "Bound"},
    }
    assert row("", "persistentvolumes", pv) == [
        "pv1",
        "5Gi",
        "RWO",
        "Retain",
        "Bound",
        "shop/data",
        "standard",
        "<unset>",
        "",
        "10m",
        "Filesystem",
    ]
    pv["metadata"]["deletionTimestamp"] = CREATED
    pv["metadata"]["annotations"] = {"volume.beta.kubernetes.io/storage-class": "old"}
    cells = row("", "persistentvolumes", pv)
    assert (cells[4], cells[6]) == ("Terminating", "old")


def test_persistent_volume_claim_shows_capacity_only_once_bound() -> None:
    assert names("", "persistentvolumeclaims") == [
        "Name",
        "Status",
        "Volume",
        "Capacity",
        "Access Modes",
        "StorageClass",
        "VolumeAttributesClass",
        "Age",
        "VolumeMode",
    ]
    pvc: dict[str, Any] = {
        "metadata": {"name": "data", "creationTimestamp": CREATED},
        "spec": {"storageClassName": "standard", "resources": {"requests": {"storage": "1Gi"}}},
        "status": {"phase": "Pending"},
    }
    assert row("", "persistentvolumeclaims", pvc) == [
        "data",
        "Pending",
        "",
        "",
        "",
        "standard",
        "<unset>",
        "10m",
        "<unset>",
    ]
    pvc["spec"]["volumeName"] = "pvc-1"
    pvc["status"] = {"phase": "Bound", "capacity": {"storage": "2Gi"}, "accessModes": ["ReadWriteOnce"]}
    assert row("", "persistentvolumeclaims", pvc)[:5] == ["data", "Bound", "pvc-1", "2Gi", "RWO"]


def test_storage_class_marks_the_default() -> None:
    assert names("storage.k8s.io", "storageclasses") == [
        "Name",
        "Provisioner",
        "ReclaimPolicy",
        "VolumeBindingMode",
        "AllowVolumeExpansion",
        "Age",
    ]
    sc: dict[str, Any] = {
        "metadata": {
            "name": "standard",
            "creationTimestamp": CREATED,
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
        },
        "provisioner": "kubelab.io/simulated",
    }
    assert row("storage.k8s.io", "storageclasses", sc) == [
        "standard (default)",
        "kubelab.io/simulated",
        "Delete",
        "Immediate",
        False,
        "10m",
    ]
    sc["metadata"]["annotations"] = {"storageclass.kubernetes.io/is-default-class": "false"}
    sc.update(reclaimPolicy="Retain", volumeBindingMode="WaitForFirstConsumer", allowVolumeExpansion=True)
    assert row("storage.k8s.io", "storageclasses", sc)[:5] == [
        "standard",
        "kubelab.io/simulated",
        "Retain",
        "WaitForFirstConsumer",
        True,
    ]


def test_ingress_hosts_address_and_ports() -> None:
    assert names("networking.k8s.io", "ingresses") == ["Name", "Class", "Hosts", "Address", "Ports", "Age"]
    ingress: dict[str, Any] = {
        "metadata": {"name": "shop", "creationTimestamp": CREATED},
        "spec": {"rules": [{"host": f"h{i}.example.com"} for i in range(5)], "tls": [{"hosts": ["x"]}]},
        "status": {"loadBalancer": {"ingress": [{"ip": "10.0.0.2"}, {"hostname": "lb.example.com"}]}},
    }
    assert row("networking.k8s.io", "ingresses", ingress) == [
        "shop",
        "<none>",
        "h0.example.com,h1.example.com,h2.example.com + 2 more...",
        "10.0.0.2,lb.example.com",
        "80, 443",
        "10m",
    ]
    bare = {"metadata": {"name": "all", "creationTimestamp": CREATED}, "spec": {"ingressClassName": "nginx"}}
    assert row("networking.k8s.io", "ingresses", bare) == ["all", "nginx", "*", "", "80", "10m"]


def test_ingress_class_parameters() -> None:
    assert names("networking.k8s.io", "ingressclasses") == ["Name", "Controller", "Parameters", "Age"]
    ingress_class = {
        "metadata": {"name": "nginx", "creationTimestamp": CREATED},
        "spec": {
            "controller": "k8s.io/ingress-nginx",
            "parameters": {"apiGroup": "k8s.example.com", "kind": "IngressParameters", "name": "external-lb"},
        },
    }
    assert row("networking.k8s.io", "ingressclasses", ingress_class) == [
        "nginx",
        "k8s.io/ingress-nginx",
        "IngressParameters.k8s.example.com/external-lb",
        "10m",
    ]


def test_network_policy_pod_selector() -> None:
    assert names("networking.k8s.io", "networkpolicies") == ["Name", "Pod-Selector", "Age"]
    policy: dict[str, Any] = {
        "metadata": {"name": "deny", "creationTimestamp": CREATED},
        "spec": {"podSelector": {}},
    }
    assert row("networking.k8s.io", "networkpolicies", policy) == ["deny", "<none>", "10m"]
    policy["spec"] = {"podSelector": {"matchLabels": {"app": "db"}}}
    assert row("networking.k8s.io", "networkpolicies", policy)[1] == "app=db"


def test_resource_quota_columns_and_row() -> None:
    assert names("", "resourcequotas") == ["Name", "Age", "Request", "Limit"]
    quota = {
        "metadata": {"name": "q", "creationTimestamp": "2026-01-01T00:09:55Z"},
        "status": {
            "hard": {"pods": "10", "requests.cpu": "2000m", "limits.memory": "1Gi", "limits.cpu": "4"},
            "used": {"pods": "3", "requests.cpu": "750m", "limits.memory": "0", "limits.cpu": "1"},
        },
    }
    # printResourceQuota: sorted by name, "used/hard" as Quantity.String(), limits.* in their column
    assert row("", "resourcequotas", quota) == [
        "q",
        "5s",
        "pods: 3/10, requests.cpu: 750m/2",
        "limits.cpu: 1/4, limits.memory: 0/1Gi",
    ]
    assert row("", "resourcequotas", {"metadata": {"name": "new"}}) == ["new", "<unknown>", "", ""]
