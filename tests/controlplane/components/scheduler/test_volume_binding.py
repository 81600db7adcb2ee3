"""VolumeBinding: a pod whose claim is missing or unbound (Immediate) fits no node; a bound claim, or an
unbound one of a WaitForFirstConsumer class, does not hold it back."""

from __future__ import annotations

from typing import Any

from controlplane.client.cache import Indexer
from controlplane.components.scheduler.framework import Code, CycleState, NodeInfo, Snapshot, Status
from controlplane.components.scheduler.plugins import VolumeBinding, default_profile
from controlplane.components.scheduler.plugins.volume_binding import claim_names
from tests.controlplane.components.scheduler.fixtures import node, pod


def with_claim(name: str = "data") -> dict[str, Any]:
    p = pod("p")
    p["metadata"]["namespace"] = "default"
    p["spec"]["volumes"] = [
        {"name": "cache", "emptyDir": {}},
        {"name": "data", "persistentVolumeClaim": {"claimName": name}},
    ]
    return p


def plugin(*claims: dict[str, Any], classes: tuple[dict[str, Any], ...] = ()) -> VolumeBinding:
    binding = VolumeBinding()
    binding.claims, binding.classes = Indexer(), Indexer()
    for claim in claims:
        binding.claims.add(claim)
    for storage_class in classes:
        binding.classes.add(storage_class)
    return binding


def claim(name: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"namespace": "default", "name": name}, "spec": spec}


def verdict(binding: VolumeBinding, p: dict[str, Any]) -> Status:
    snapshot = Snapshot([node("n1")], [])
    info: NodeInfo = snapshot.node_infos[0]
    return binding.filter(CycleState(snapshot), p, info)


def test_the_claims_of_a_pod() -> None:
    assert claim_names(with_claim()) == ["data"]
    assert claim_names(pod("p")) == []


def test_a_missing_claim_is_unresolvable() -> None:
    status = verdict(plugin(), with_claim())
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == ('persistentvolumeclaim "data" not found',)


def test_an_unbound_immediate_claim_waits_and_a_bound_one_passes() -> None:
    unbound = claim("data", storageClassName="standard")
    immediate = {"metadata": {"name": "standard"}, "volumeBindingMode": "Immediate"}
    status = verdict(plugin(unbound, classes=(immediate,)), with_claim())
    assert status.reasons == ("pod has unbound immediate PersistentVolumeClaims",)
    assert verdict(plugin(claim("data", volumeName="pv1")), with_claim()).is_success
    later = {"metadata": {"name": "standard"}, "volumeBindingMode": "WaitForFirstConsumer"}
    assert verdict(plugin(unbound, classes=(later,)), with_claim()).is_success


def test_the_default_profile_has_it() -> None:
    assert any(isinstance(f, VolumeBinding) for f in default_profile().filters)


def test_only_unbound_wait_for_first_consumer_claims_get_the_selected_node() -> None:
    later = {"metadata": {"name": "later"}, "volumeBindingMode": "WaitForFirstConsumer"}
    immediate = {"metadata": {"name": "now"}, "volumeBindingMode": "Immediate"}
    p = with_claim()
    p["spec"]["volumes"] += [
        {"name": "b", "persistentVolumeClaim": {"claimName": "bound"}},
        {"name": "c", "persistentVolumeClaim": {"claimName": "chosen"}},
        {"name": "d", "persistentVolumeClaim": {"claimName": "immediate"}},
    ]
    chosen = claim("chosen", storageClassName="later")
    chosen["metadata"]["annotations"] = {"volume.kubernetes.io/selected-node": "n1"}
    binding = plugin(
        claim("data", storageClassName="later"),
        claim("bound", storageClassName="later", volumeName="pv1"),
        chosen,
        claim("immediate", storageClassName="now"),
        classes=(later, immediate),
    )
    assert binding.claims_to_select(p) == ["data"]
