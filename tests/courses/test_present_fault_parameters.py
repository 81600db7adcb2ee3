"""The presenter's fault panel offers values for the network and store kinds' parameters."""

from __future__ import annotations

from controlplane.faults import catalogue
from courses.lab.presenter import parameter_values, read_fault


def test_a_number_of_milliseconds_is_offered_from_its_suggestions() -> None:
    assert parameter_values(catalogue.STORE_DELAY, nodes=3) == ("100", "200", "500", "1000", "2000")
    assert parameter_values(catalogue.LINK_JITTER, nodes=3)[0] == "0"
    assert parameter_values(catalogue.STORE_DELAY, nodes=None) == ()


def test_a_linked_component_is_any_of_the_clusters_components() -> None:
    assert parameter_values(catalogue.LINKED_COMPONENT, nodes=2) == (
        "scheduler",
        "controller-manager",
        "kubelet:node-1",
        "kubelet:node-2",
        "kube-proxy:node-1",
        "kube-proxy:node-2",
    )


def test_a_form_picking_them_reads_as_the_fault() -> None:
    form = {"kind": "link-latency", "component": "kubelet:node-1", "ms": "200", "jitter": "50"}
    spec = read_fault(form, cluster="demo", nodes=2)
    assert spec.parameters() == {"component": "kubelet:node-1", "ms": 200, "jitter": 50}
    assert read_fault({"kind": "slow-store", "delay": "500"}, cluster="demo", nodes=2).target == "etcd"
