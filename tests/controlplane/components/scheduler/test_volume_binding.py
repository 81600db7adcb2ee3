"""VolumeBinding: its PreFilter rejects a pod whose claim is missing, lost, being deleted or unbound
(Immediate) before any node is filtered, so the FailedScheduling message is that reason alone, as
upstream's; its Filter rules out, node by node, the nodes a bound claim's volume cannot reach.

Upstream: pkg/scheduler/framework/plugins/volumebinding/volume_binding.go (PreFilter, podHasPVCs,
Filter), binder.go (GetPodVolumeClaims, FindPodVolumes, checkBoundClaims), and the FitError's
message (pkg/scheduler/framework/types.go, ``Diagnosis.PreFilterMsg``).
"""

from __future__ import annotations

import random
from typing import Any

from controlplane.client.cache import Indexer
from controlplane.components.scheduler.framework import (
    SKIP,
    Code,
    CycleState,
    NodeInfo,
    Profile,
    Snapshot,
    Status,
    schedule,
)
from controlplane.components.scheduler.plugins import DefaultPreemption, VolumeBinding, default_profile
from controlplane.components.scheduler.plugins.volume_binding import (
    ANN_BIND_COMPLETED,
    ANN_SELECTED_NODE,
    claim_names,
)
from tests.controlplane.components.scheduler.fixtures import node, pod

CONTROL_PLANE_TAINT = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}
NOT_HELPFUL = "preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling."
IMMEDIATE = {"metadata": {"name": "standard"}, "volumeBindingMode": "Immediate"}
LATER = {"metadata": {"name": "later"}, "volumeBindingMode": "WaitForFirstConsumer"}


def with_claim(name: str = "data", *more: str) -> dict[str, Any]:
    p = pod("p")
    p["spec"]["volumes"] = [
        {"name": "cache", "emptyDir": {}},
        *({"name": n, "persistentVolumeClaim": {"claimName": n}} for n in (name, *more)),
    ]
    return p


def plugin(
    *claims: dict[str, Any],
    classes: tuple[dict[str, Any], ...] = (IMMEDIATE, LATER),
    volumes: tuple[dict[str, Any], ...] = (),
) -> VolumeBinding:
    binding = VolumeBinding()
    binding.claims, binding.classes, binding.volumes = Indexer(), Indexer(), Indexer()
    for claim in claims:
        binding.claims.add(claim)
    for storage_class in classes:
        binding.classes.add(storage_class)
    for volume in volumes:
        binding.volumes.add(volume)
    return binding


def claim(name: str, *, annotations: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"namespace": "default", "name": name}
    if annotations:
        meta["annotations"] = annotations
    return {"metadata": meta, "spec": spec}


def bound(name: str, volume: str) -> dict[str, Any]:
    """A claim the PV controller has bound: its volume named, ``bind-completed`` set."""
    return claim(
        name, annotations={ANN_BIND_COMPLETED: "yes"}, volumeName=volume, storageClassName="standard"
    )


def local_volume(name: str, host: str) -> dict[str, Any]:
    """A local volume: it lives on the node whose hostname label is ``host``."""
    term = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [host]}]}
    return {"metadata": {"name": name}, "spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": [term]}}}}


def pre_filter(binding: VolumeBinding, p: dict[str, Any]) -> Status:
    return binding.pre_filter(CycleState(Snapshot([node("n1")])), p)


def filter_on(binding: VolumeBinding, p: dict[str, Any], name: str = "n1") -> Status:
    snapshot = Snapshot([node(name)])
    state = CycleState(snapshot)
    assert binding.pre_filter(state, p).is_success
    info: NodeInfo = snapshot.node_infos[0]
    return binding.filter(state, p, info)


def cluster() -> Snapshot:
    """Four nodes as the lab's clusters have: a tainted control plane and three workers."""
    return Snapshot(
        [node("control-plane", taints=[CONTROL_PLANE_TAINT]), node("node-1"), node("node-2"), node("node-3")]
    )


def profile_with(binding: VolumeBinding) -> Profile:
    base = default_profile()
    filters = [binding if isinstance(f, VolumeBinding) else f for f in base.filters]
    return Profile(filters, base.scores, post_filters=base.post_filters)


def failed_scheduling(binding: VolumeBinding, p: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """What the scheduler says when no node fits: the FitError's message with what preemption found
    appended (``schedule_one``), and the decision's trace."""
    snapshot = cluster()
    profile = profile_with(binding)
    decision = schedule(p, snapshot, profile, rng=random.Random(0))
    assert decision.chosen is None
    preemption = DefaultPreemption().post_filter(p, snapshot, profile.filters, decision.statuses, now=0.0)
    return f"{decision.message()} {preemption.message}", decision.to_trace()


# -- PreFilter --------------------------------------------------------------------------------------


def test_the_claims_of_a_pod() -> None:
    assert claim_names(with_claim()) == ["data"]
    assert claim_names(pod("p")) == []


def test_a_pod_without_claims_is_skipped() -> None:
    assert pre_filter(plugin(), pod("p")) == SKIP
    assert pre_filter(VolumeBinding(), with_claim()) == SKIP, "no caches: nothing to check against"


def test_a_missing_claim_is_unresolvable() -> None:
    status = pre_filter(plugin(), with_claim())
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == ('persistentvolumeclaim "data" not found',)
    assert status.plugin == "VolumeBinding"


def test_a_lost_claim_and_a_claim_being_deleted_are_unresolvable() -> None:
    lost = bound("data", "pv-1")
    lost["status"] = {"phase": "Lost"}
    status = pre_filter(plugin(lost), with_claim())
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == ('persistentvolumeclaim "data" bound to non-existent persistentvolume "pv-1"',)
    going = bound("data", "pv-1")
    going["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    assert pre_filter(plugin(going), with_claim()).reasons == (
        'persistentvolumeclaim "data" is being deleted',
    )


def test_every_claim_must_exist_before_any_counts_as_unbound() -> None:
    """podHasPVCs looks at all the claims before GetPodVolumeClaims sorts them: the missing one is
    what the pod is told about, even if an unbound one comes first."""
    status = pre_filter(plugin(claim("data", storageClassName="standard")), with_claim("data", "missing"))
    assert status.reasons == ('persistentvolumeclaim "missing" not found',)


def test_an_unbound_immediate_claim_waits_and_a_bound_one_passes() -> None:
    unbound = claim("data", storageClassName="standard")
    status = pre_filter(plugin(unbound), with_claim())
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == ("pod has unbound immediate PersistentVolumeClaims",)
    assert pre_filter(plugin(bound("data", "pv1")), with_claim()).is_success
    assert pre_filter(plugin(claim("data", storageClassName="later")), with_claim()).is_success
    # no class, or a class that does not exist, binds Immediately (IsDelayBindingMode)
    assert pre_filter(plugin(claim("data")), with_claim()).reasons == (status.reasons[0],)
    assert pre_filter(plugin(claim("data", storageClassName="gone")), with_claim()).reasons == (
        status.reasons[0],
    )


def test_a_claim_naming_its_volume_is_bound_only_once_the_controller_says_so() -> None:
    """isPVCFullyBound: ``volumeName`` and ``pv.kubernetes.io/bind-completed``; a claim pre-bound by
    hand counts as an unbound Immediate one, even of a WaitForFirstConsumer class."""
    for storage_class in ("standard", "later"):
        pre_bound = claim("data", volumeName="pv1", storageClassName=storage_class)
        assert pre_filter(plugin(pre_bound), with_claim()).reasons == (
            "pod has unbound immediate PersistentVolumeClaims",
        )


def test_the_default_profile_has_it() -> None:
    assert any(isinstance(f, VolumeBinding) for f in default_profile().filters)


# -- Filter -----------------------------------------------------------------------------------------


def test_a_bound_volume_must_reach_the_node() -> None:
    binding = plugin(bound("data", "pv-1"), volumes=(local_volume("pv-1", "n1"),))
    assert filter_on(binding, with_claim(), "n1").is_success
    status = filter_on(binding, with_claim(), "n2")
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == ("node(s) had volume node affinity conflict",)
    anywhere = {"metadata": {"name": "pv-1"}, "spec": {}}
    assert filter_on(plugin(bound("data", "pv-1"), volumes=(anywhere,)), with_claim(), "n2").is_success


def test_a_bound_volume_that_does_not_exist_rules_out_every_node() -> None:
    status = filter_on(plugin(bound("data", "pv-1")), with_claim())
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == ("node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)",)


def test_a_wait_for_first_consumer_claim_provisioned_for_another_node_rules_this_one_out() -> None:
    chosen = claim("data", storageClassName="later", annotations={ANN_SELECTED_NODE: "n1"})
    assert filter_on(plugin(chosen), with_claim(), "n1").is_success
    assert filter_on(plugin(chosen), with_claim(), "n2").reasons == (
        "node(s) didn't find available persistent volumes to bind",
    )


def test_only_unbound_wait_for_first_consumer_claims_get_the_selected_node() -> None:
    p = with_claim("data", "bound", "chosen", "immediate")
    chosen = claim("chosen", storageClassName="later", annotations={ANN_SELECTED_NODE: "n1"})
    binding = plugin(
        claim("data", storageClassName="later"),
        claim("bound", storageClassName="later", volumeName="pv1"),
        chosen,
        claim("immediate", storageClassName="standard"),
    )
    assert binding.claims_to_select(p) == ["data"]


# -- the whole attempt: the message, the trace, preemption ------------------------------------------


def test_a_missing_claim_fails_in_prefilter_with_upstreams_message() -> None:
    """The brief's report: ``claimName: missing`` on four nodes. Upstream's FitError prints the
    PreFilter's message alone (no node was filtered, so no taint is counted), and preemption finds
    every node UnschedulableAndUnresolvable."""
    message, trace = failed_scheduling(plugin(), with_claim("missing"))
    assert message == ('0/4 nodes are available: persistentvolumeclaim "missing" not found. ' + NOT_HELPFUL)
    assert trace["message"] == '0/4 nodes are available: persistentvolumeclaim "missing" not found.'
    # No Filter ran on any node; each node shows the PreFilter's status, marked as such.
    assert (trace["evaluated"], trace["of"], trace["feasible"], trace["chosen"]) == (0, 4, [], None)
    assert set(trace["nodes"]) == {"control-plane", "node-1", "node-2", "node-3"}
    for verdict in trace["nodes"].values():
        assert verdict == {
            "filters": {
                "VolumeBinding": {
                    "code": "UnschedulableAndUnresolvable",
                    "reasons": ['persistentvolumeclaim "missing" not found'],
                    "extensionPoint": "PreFilter",
                }
            },
            "scores": {},
            "total": None,
            "feasible": False,
        }
    # The PreFilters before it ran (NodeAffinity said Skip), the ones after it did not.
    assert trace["skipped"]["filters"] == ["NodeAffinity"]


def test_an_unbound_immediate_claim_fails_in_prefilter_with_upstreams_message() -> None:
    """A StatefulSet's claim before the PV controller binds it."""
    message, trace = failed_scheduling(plugin(claim("data", storageClassName="standard")), with_claim())
    assert message == (
        "0/4 nodes are available: pod has unbound immediate PersistentVolumeClaims. " + NOT_HELPFUL
    )
    assert trace["evaluated"] == 0


def test_a_bound_volume_on_a_node_the_pod_cannot_reach_gives_counts_per_node() -> None:
    """Volume node affinity is a Filter matter: every node is filtered, and the message counts the
    reasons over the nodes as usual."""
    binding = plugin(bound("data", "pv-1"), volumes=(local_volume("pv-1", "elsewhere"),))
    message, trace = failed_scheduling(binding, with_claim())
    assert message == (
        "0/4 nodes are available: "
        "1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, "
        "3 node(s) had volume node affinity conflict. " + NOT_HELPFUL
    )
    assert trace["evaluated"] == 4
    assert trace["nodes"]["node-1"]["filters"]["VolumeBinding"] == {
        "code": "UnschedulableAndUnresolvable",
        "reasons": ["node(s) had volume node affinity conflict"],
    }
    assert "VolumeBinding" not in trace["nodes"]["control-plane"]["filters"]

    # On the node it lives on, the pod fits.
    reachable = plugin(bound("data", "pv-1"), volumes=(local_volume("pv-1", "node-2"),))
    decision = schedule(with_claim(), cluster(), profile_with(reachable), rng=random.Random(0))
    assert decision.chosen == "node-2"


def test_a_prefilter_rejection_keeps_the_round_robin_start_and_the_lean_decision_agrees() -> None:
    """findNodesThatFitPod returns before filtering: no node was processed (the next attempt starts
    where this one would have), and without ``explain`` the message and statuses are the same."""
    p, profile = with_claim("missing"), profile_with(plugin())
    full = schedule(p, cluster(), profile, rng=random.Random(0), start=2)
    lean = schedule(p, cluster(), profile, rng=random.Random(0), start=2, explain=False)
    assert full.processed == lean.processed == 0
    assert full.message() == lean.message()
    assert full.statuses == lean.statuses
    assert set(full.statuses) == {"control-plane", "node-1", "node-2", "node-3"}
