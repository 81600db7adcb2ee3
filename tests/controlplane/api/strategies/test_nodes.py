"""Nodes: ``TestValidateNode``, ``TestValidateNodeUpdate`` "
"(``pkg/apis/core/validation/validation_test.go``)."""

from __future__ import annotations

import copy
from typing import Any

from controlplane.api.strategies import NodeStrategy
from tests.controlplane.api.strategies import create, status_update, stored, update

STRATEGY = NodeStrategy()


def node(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "node-1"},
        "spec": dict(spec),
        "status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }


def test_a_kubelet_registers_its_node_with_a_status() -> None:
    obj = stored(STRATEGY, node(), namespaced=False)
    assert obj["status"]["capacity"] == {"cpu": "4", "memory": "8Gi", "pods": "110"}
    assert obj["status"]["allocatable"] == obj["status"]["capacity"]  # SetDefaults_NodeStatus


def test_taints_use_upstreams_metadata_path() -> None:
    taints = [
        {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
        {"key": "dedicated", "value": "other", "effect": "NoSchedule"},
        {"key": "zone", "effect": "Sometimes"},
        {"key": "x"},
    ]
    assert create(STRATEGY, node(taints=taints), namespaced=False)[1] == [
        'metadata.taints[1]: Duplicate value: {"Key":"dedicated","Value":"other","Effect":"NoSchedule",'
        '"TimeAdded":null}: taints must be unique by key and effect pair',
        'metadata.taints[2].effect: Unsupported value: "Sometimes": supported values: "NoSchedule", '
        '"PreferNoSchedule", "NoExecute"',
        "metadata.taints[3].effect: Required value",
    ]


def test_capacity_may_not_be_negative() -> None:
    body = node()
    body["status"]["capacity"]["cpu"] = "-1"
    assert create(STRATEGY, body, namespaced=False)[1] == [
        'status.capacity.cpu: Invalid value: "-1": must be greater than or equal to 0',
        'status.allocatable.cpu: Invalid value: "-1": must be greater than or equal to 0',
    ]


def test_updates_keep_status_and_pod_cidr_is_set_once() -> None:
    old = stored(STRATEGY, node(podCIDR="10.244.1.0/24", podCIDRs=["10.244.1.0/24"]), namespaced=False)
    cordoned = copy.deepcopy(old)
    cordoned["spec"]["unschedulable"] = True
    cordoned["status"] = {"capacity": {"cpu": "1"}}
    result, messages = update(STRATEGY, cordoned, old, namespaced=False)
    assert messages == [] and result["status"] == old["status"]
    moved = copy.deepcopy(old)
    moved["spec"]["podCIDRs"] = ["10.244.2.0/24"]
    assert update(STRATEGY, moved, old, namespaced=False)[1] == [
        'spec.podCIDRs: Forbidden: node updates may not change podCIDR except from "" to valid'
    ]


def test_status_updates_keep_the_spec() -> None:
    old = stored(STRATEGY, node(unschedulable=True), namespaced=False)
    heartbeat = copy.deepcopy(old)
    heartbeat["spec"] = {}
    heartbeat["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    result, messages = status_update(STRATEGY, heartbeat, old, namespaced=False)
    assert messages == [] and result["spec"] == {"unschedulable": True}
    assert result["status"]["conditions"][0]["type"] == "Ready"
