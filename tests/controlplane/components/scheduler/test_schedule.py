"""A whole scheduling attempt over three nodes: filters, scores, tie-breaking and FailedScheduling."""

from __future__ import annotations

import random
from typing import Any

import pytest

from controlplane.api.meta import object_key
from controlplane.components.scheduler.framework import (
    NodeInfo,
    Snapshot,
    num_feasible_nodes_to_find,
    schedule,
)
from controlplane.components.scheduler.plugins import default_profile
from controlplane.components.scheduler.scheduler import Scheduler
from tests.controlplane.components.scheduler.fixtures import node, pod

CONTROL_PLANE_TAINT = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}


def cluster() -> Snapshot:
    return Snapshot(
        [
            node("control-plane", taints=[CONTROL_PLANE_TAINT]),
            node("worker-1", cpu="1"),
            node("worker-2", cpu="4", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]),
        ]
    )


def test_pod_that_fits_no_node_gets_upstream_failed_scheduling_message() -> None:
    decision = schedule(pod("big", cpu="2"), cluster(), default_profile(), rng=random.Random(0))
    assert decision.chosen is None
    assert decision.feasible == []
    assert decision.message() == (
        "0/3 nodes are available: 1 Insufficient cpu, "
        "1 node(s) had untolerated taint {dedicated: gpu}, "
        "1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }."
    )
    trace = decision.to_trace()
    assert trace["pod"] == "default/big"
    assert trace["nodes"]["worker-1"]["filters"]["NodeResourcesFit"] == {
        "code": "Unschedulable",
        "reasons": ["Insufficient cpu"],
    }
    # filters stop at the first rejection, as RunFilterPlugins does
    assert "NodeResourcesFit" not in trace["nodes"]["control-plane"]["filters"]


def test_scores_pick_the_emptier_node_and_trace_them() -> None:
    snapshot = Snapshot(
        [node("a"), node("b"), node("c", taints=[CONTROL_PLANE_TAINT])], [pod("x", cpu="2", node_name="a")]
    )
    decision = schedule(pod("p", cpu="1", memory="1Gi"), snapshot, default_profile(), rng=random.Random(0))
    assert decision.feasible == ["a", "b"]
    assert decision.chosen == "b"
    assert decision.totals["b"] > decision.totals["a"]
    fit = decision.scores["b"]["NodeResourcesFit"]
    assert fit.weighted == fit.normalized * 1
    assert decision.scores["a"]["TaintToleration"].weighted == 300
    trace = decision.to_trace()
    assert trace["chosen"] == "b" and trace["message"] is None
    assert trace["nodes"]["b"]["total"] == decision.totals["b"]


def test_tie_break_is_random_but_seeded() -> None:
    snapshot = Snapshot([node(f"n{i}") for i in range(4)])
    choices = [
        schedule(pod("p"), snapshot, default_profile(), rng=random.Random(seed)).chosen for seed in range(20)
    ]
    again = [
        schedule(pod("p"), snapshot, default_profile(), rng=random.Random(seed)).chosen for seed in range(20)
    ]
    assert choices == again
    assert len(set(choices)) > 1


def test_single_feasible_node_skips_scoring() -> None:
    snapshot = Snapshot([node("a"), node("b", cpu="100m")])
    decision = schedule(pod("p", cpu="1"), snapshot, default_profile(), rng=random.Random(0))
    assert decision.chosen == "a"
    assert decision.scores == {}


def test_a_cluster_without_nodes_says_so_as_upstream() -> None:
    from controlplane.components.scheduler.messages import fit_error_message

    assert fit_error_message(0, {}) == "no nodes available to schedule pods"


def test_without_explain_the_choice_is_the_same_and_only_failures_are_kept() -> None:
    """``explain=False`` (nobody reads the trace): the same node, totals, message and random draws;
    no per-node scores, and verdicts only for the nodes that failed (what the message counts)."""
    snapshot = Snapshot(
        [
            node("a"),
            node("b", cpu="500m"),
            node("c", taints=[CONTROL_PLANE_TAINT]),
            node("d", taints=[{"key": "soft", "effect": "PreferNoSchedule"}]),
            node("e"),
        ],
        [pod("x", cpu="1", node_name="a")],
    )
    pods = [pod("p", cpu="1", memory="1Gi"), pod("big", cpu="8"), pod("best-effort"), pod("tiny", cpu="1m")]
    for p in pods:
        for seed in range(5):
            full_rng, lean_rng = random.Random(seed), random.Random(seed)
            full = schedule(p, snapshot, default_profile(), rng=full_rng, start=seed)
            lean = schedule(p, snapshot, default_profile(), rng=lean_rng, start=seed, explain=False)
            assert (lean.chosen, lean.feasible, lean.totals, lean.processed, lean.message()) == (
                full.chosen,
                full.feasible,
                full.totals,
                full.processed,
                full.message(),
            )
            assert lean.statuses == full.statuses
            assert full_rng.random() == lean_rng.random()  # as many tie-breaking draws
            assert lean.scores == {}
            assert set(lean.filters) == set(full.statuses)
    assert schedule(pods[1], snapshot, default_profile(), rng=random.Random(0), explain=False).message() == (
        "0/5 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, "
        "4 Insufficient cpu."
    )


def test_the_schedulers_incremental_snapshot_equals_one_built_afresh() -> None:
    def view(snapshot: Snapshot) -> list[tuple[Any, ...]]:
        return [
            (
                i.name,
                i.requested.milli_cpu,
                i.non_zero_requested.memory,
                sorted(object_key(p) for p in i.pods),
                i.allocatable,
                dict(i.labels),
                i.taints,
                i.unschedulable,
            )
            for i in snapshot.node_infos
        ]

    def fresh(sched: Scheduler) -> Snapshot:
        pods = list(sched.pods.values()) + [p for k, p in sched.assumed.items() if k not in sched.pods]
        return Snapshot(sched.nodes.values(), pods)

    sched = Scheduler(lambda: pytest.fail("no client is needed"))
    sched.nodes.update({"a": node("a"), "b": node("b")})
    sched.pods.update({f"default/p{i}": pod(f"p{i}", cpu="100m", node_name="ab"[i % 2]) for i in range(6)})
    assert view(sched.snapshot()) == view(fresh(sched))

    # Only pods change: the snapshot applies just those keys.
    sched.assumed["default/q"] = pod("q", cpu="200m", node_name="b")
    sched.pods["default/p2"] = pod("p2", cpu="500m", node_name="b")  # moved from a to b
    sched.pods.pop("default/p3")
    sched.nodes["a"] = node("a", cpu="2")  # the node object is replaced (allocatable changes)
    assert view(sched.snapshot()) == view(fresh(sched))
    info_a = sched.snapshot().get("a")
    assert info_a is not None and info_a.allocatable.milli_cpu == 2000

    sched.assumed["default/new"] = pod("new", cpu="1", node_name="a")  # reserved by a cycle
    del sched.pods["default/p0"]  # deleted
    sched.pods["default/p1"] = pod("p1", cpu="300m", node_name="a")  # a new object, another node
    sched.nodes["c"] = node("c", cpu="8")  # a node joins ...
    del sched.nodes["b"]  # ... and one leaves with its pods
    assert view(sched.snapshot()) == view(fresh(sched))

    sched.pods["default/new"] = sched.assumed.pop("default/new")  # the binding is confirmed
    sched.nodes["b"] = node("b")  # the node comes back: its pods take room again
    assert view(sched.snapshot()) == view(fresh(sched))


def test_the_scheduler_keeps_its_snapshot_up_to_date_until_a_node_comes_or_goes() -> None:
    """The snapshot (node infos in name order) is kept between cycles: assuming and forgetting a pod,
    a pod's new version and a node's new object update it in place; a new node makes a new one."""
    sched = Scheduler(lambda: pytest.fail("no client is needed"))
    sched.nodes.update({"a": node("a"), "b": node("b")})
    snapshot = sched.snapshot()

    def info(name: str) -> NodeInfo:
        found = sched.snapshot().get(name)
        assert found is not None
        return found

    sched.assumed["default/p"] = pod("p", cpu="1", memory="1Gi", node_name="a")  # assume
    assert info("a").requested.milli_cpu == 1000 and sched.snapshot() is snapshot
    sched.pods["default/p"] = pod("p", cpu="1", memory="1Gi", node_name="a")  # the binding shows up
    del sched.assumed["default/p"]
    a = info("a")
    assert (a.requested.milli_cpu, a.requested.memory, len(a.pods)) == (1000, 2**30, 1)
    sched.assumed["default/q"] = pod("q", cpu="2", node_name="b")
    assert info("b").requested.milli_cpu == 2000
    del sched.assumed["default/q"]  # forget: the binding failed
    b = info("b")
    assert (b.requested.milli_cpu, b.non_zero_requested.milli_cpu, b.pods) == (0, 0, [])

    soft = {"key": "soft", "value": "x", "effect": "PreferNoSchedule"}
    sched.nodes["b"] = node("b", cpu="2", labels={"zone": "z"}, taints=[soft], unschedulable=True)
    b = info("b")
    assert (b.allocatable.milli_cpu, b.labels["zone"], b.taints, b.unschedulable) == (
        2000,
        "z",
        (soft,),
        True,
    )
    assert sched.snapshot() is snapshot
    decision = schedule(pod("r", cpu="1"), sched.snapshot(), default_profile(), rng=random.Random(0))
    assert decision.chosen == "a"  # b is cordoned now
    sched.nodes["b"] = node("b")
    assert (info("b").taints, info("b").unschedulable, info("b").allocatable.milli_cpu) == ((), False, 4000)

    sched.nodes["c"] = node("c")  # a node joins: a new snapshot, in name order
    assert sched.snapshot() is not snapshot
    assert [i.name for i in sched.snapshot().node_infos] == ["a", "b", "c"]
    assert info("a").requested.milli_cpu == 1000


def test_large_clusters_filter_only_enough_nodes_round_robin() -> None:
    # pkg/scheduler/schedule_one.go numFeasibleNodesToFind, with upstream's test table's shape.
    assert [num_feasible_nodes_to_find(n) for n in (10, 99, 100, 1000, 5000, 6000)] == [
        10,
        99,
        100,
        420,
        500,
        300,
    ]

    nodes = [node(f"n{i:04d}") for i in range(1000)]
    decision = schedule(
        pod("p", cpu="100m"), Snapshot(nodes), default_profile(), rng=random.Random(1), start=990
    )
    assert decision.processed == 420
    assert len(decision.feasible) == 420
    assert decision.feasible[:10] == [f"n{i:04d}" for i in range(990, 1000)]  # starts where told, wraps
    assert decision.chosen in decision.feasible
    trace = decision.to_trace()
    assert (trace["evaluated"], trace["of"], len(trace["nodes"])) == (420, 1000, 420)


def test_plugins_whose_prefilter_says_skip_do_not_run_and_the_trace_says_so() -> None:
    """Upstream's PreFilter/PreScore ``Skip``: a pod without affinity, spread constraints or a
    nodeSelector is not checked by those plugins on any node; a pod with anti-affinity is."""
    snapshot = Snapshot([node("a"), node("b")])
    plain = schedule(pod("plain", cpu="1"), snapshot, default_profile(), rng=random.Random(0))
    # VolumeBinding too: a pod without claims (volume_binding.go PreFilter: no PVC, Skip).
    assert plain.skipped_filters == ["NodeAffinity", "VolumeBinding", "PodTopologySpread", "InterPodAffinity"]
    assert plain.skipped_scores == ["NodeAffinity"]
    assert "InterPodAffinity" not in plain.to_trace()["nodes"]["a"]["filters"]
    assert plain.to_trace()["skipped"]["filters"] == plain.skipped_filters

    term = {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}
    anti = pod(
        "anti",
        cpu="1",
        labels={"app": "x"},
        affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
    )
    decision = schedule(anti, snapshot, default_profile(), rng=random.Random(0))
    assert "InterPodAffinity" not in decision.skipped_filters
    assert decision.to_trace()["nodes"]["a"]["filters"]["InterPodAffinity"]["code"] == "Success"


def test_balanced_allocation_skips_best_effort_pods_as_upstream() -> None:
    """noderesources/balanced_allocation.go PreScore: a pod requesting neither CPU nor memory gets Skip."""
    snapshot = Snapshot([node("a"), node("b")], [pod("x", cpu="1", node_name="a")])
    best_effort = schedule(pod("be"), snapshot, default_profile(), rng=random.Random(0))
    assert best_effort.skipped_scores == ["NodeAffinity", "NodeResourcesBalancedAllocation"]
    assert "NodeResourcesBalancedAllocation" not in best_effort.to_trace()["nodes"]["a"]["scores"]
    assert best_effort.chosen == "b"  # LeastAllocated still spreads it (scoring's 100m default)
    memory_only = schedule(pod("m", memory="1Gi"), snapshot, default_profile(), rng=random.Random(0))
    assert "NodeResourcesBalancedAllocation" not in memory_only.skipped_scores
