"""What the diagram draws of a stored object: a few facts, never its contents."""

from __future__ import annotations

import json

from controlplane.trace.objects import facts, kind_of


def test_pods_nodes_and_leader_leases_have_facts_and_nothing_else_does() -> None:
    assert kind_of("/registry/pods/default/web") == "pod"
    assert kind_of("/registry/minions/node-1") == "node"
    assert kind_of("/registry/leases/kube-system/kube-scheduler") == "lease"
    # A node's heartbeat Lease is not a leader's; a Secret is never decoded.
    assert kind_of("/registry/leases/kube-node-lease/node-1") is None
    assert facts("/registry/secrets/default/db", b'{"data": {"password": "aGk="}}') is None


def test_a_node_s_ready_condition_and_cordon() -> None:
    node = {
        "metadata": {"name": "node-1"},
        "spec": {"unschedulable": True},
        "status": {
            "conditions": [
                {"type": "MemoryPressure", "status": "False"},
                {"type": "Ready", "status": "Unknown"},
            ]
        },
    }
    assert facts("/registry/minions/node-1", json.dumps(node).encode()) == (
        "node",
        {"name": "node-1", "ready": "Unknown", "unschedulable": True},
    )


def test_a_leader_lease_names_its_holder() -> None:
    lease = {"metadata": {"name": "kube-scheduler"}, "spec": {"holderIdentity": "sched-1"}}
    assert facts("/registry/leases/kube-system/kube-scheduler", json.dumps(lease).encode()) == (
        "lease",
        {"name": "kube-scheduler", "holder": "sched-1"},
    )


def test_a_value_that_is_not_a_json_object_has_no_facts() -> None:
    assert facts("/registry/pods/default/web", b"[1, 2]") is None
    assert facts("/registry/pods/default/web", b"{not json") is None
    assert facts("/registry/pods/default/web", b"k8s:enc:aescbc:v1:key1:...") is None
