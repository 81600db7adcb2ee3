"""DefaultPreemption's pure core: who may preempt, which pods must go on a node, and which node wins."""

from __future__ import annotations

import random
from typing import Any

from controlplane.api.meta import object_key
from controlplane.components.scheduler.framework import (
    Candidate,
    Code,
    NodeInfo,
    Snapshot,
    Status,
    pod_priority,
    schedule,
)
from controlplane.components.scheduler.plugins import default_profile
from controlplane.components.scheduler.plugins.default_preemption import (
    NO_VICTIMS,
    NOT_ELIGIBLE_NEVER,
    NOT_ELIGIBLE_TERMINATING,
    NOT_HELPFUL,
    DefaultPreemption,
    eligible_to_preempt,
    more_important_first,
    pick_one_node_for_preemption,
    select_victims_on_node,
)
from tests.controlplane.components.scheduler.fixtures import node, pod

NOW = 1_800_000_000.0
PROFILE = default_profile()


def placed(name: str, node_name: str, *, priority: int, cpu: str = "1", started: str | None = None) -> Any:
    p = pod(name, cpu=cpu, node_name=node_name, priority=priority)
    p["metadata"]["uid"] = f"uid-{name}"
    if started is not None:
        p["status"] = {"startTime": started}
    return p


def names(pods: Any) -> list[str]:
    return [object_key(p).split("/")[1] for p in pods]


def preempt(preemptor: Any, snapshot: Snapshot) -> Any:
    decision = schedule(preemptor, snapshot, PROFILE, rng=random.Random(0))
    assert decision.chosen is None, "preemption only runs when no node fits"
    return DefaultPreemption().post_filter(preemptor, snapshot, PROFILE.filters, decision.statuses, now=NOW)


# -- the victims on one node -------------------------------------------------------------------------


def test_only_the_lower_priority_pods_that_must_go_are_victims() -> None:
    info = NodeInfo(
        node("n1", cpu="4"),
        [
            placed("low-a", "n1", priority=1, started="2030-01-01T00:00:00Z"),
            placed("low-b", "n1", priority=1, started="2030-01-01T00:05:00Z"),
            placed("mid", "n1", priority=50),
            placed("peer", "n1", priority=100),
        ],
    )
    snapshot = Snapshot.of([info])
    victims, status = select_victims_on_node(
        pod("web", cpu="2", priority=100), info, snapshot, PROFILE.filters, now=NOW
    )
    assert status.is_success
    # The most important lower-priority pods are given back first: mid, then low-a (started earlier);
    # two CPUs must be freed, so low-a cannot stay once mid did, and low-b goes too.
    assert victims is not None and names(victims) == ["low-a", "low-b"]
    assert len(info.pods) == 4, "the search works on a copy: the snapshot keeps every pod"


def test_a_node_without_lower_priority_pods_or_too_small_anyway_is_no_candidate() -> None:
    equal = NodeInfo(node("n1", cpu="2"), [placed("peer", "n1", priority=100, cpu="2")])
    victims, status = select_victims_on_node(
        pod("web", cpu="1", priority=100), equal, Snapshot.of([equal]), PROFILE.filters, now=NOW
    )
    assert victims is None and status.reasons == (NO_VICTIMS,)
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    small = NodeInfo(node("n2", cpu="2"), [placed("low", "n2", priority=0, cpu="2")])
    victims, status = select_victims_on_node(
        pod("huge", cpu="3", priority=100), small, Snapshot.of([small]), PROFILE.filters, now=NOW
    )
    assert victims is None and status.reasons == ("Insufficient cpu",)


def test_importance_is_priority_then_the_longest_running() -> None:
    pods = [
        placed("new", "n", priority=5, started="2030-01-02T00:00:00Z"),
        placed("old", "n", priority=5, started="2030-01-01T00:00:00Z"),
        placed("high", "n", priority=9),
    ]
    assert names(more_important_first(pods, NOW)) == ["high", "old", "new"]
    assert pod_priority(pod("x")) == 0 and pod_priority(pod("y", priority=-3)) == -3


# -- which node ---------------------------------------------------------------------------------------


def candidate(node_name: str, *priorities: int, started: str = "2030-01-01T00:00:00Z") -> Candidate:
    victims = [
        placed(f"{node_name}-{i}", node_name, priority=p, started=started) for i, p in enumerate(priorities)
    ]
    return Candidate(node_name, tuple(more_important_first(victims, NOW)))


def test_the_node_with_the_lowest_highest_priority_victim_wins() -> None:
    chosen = pick_one_node_for_preemption([candidate("a", 10), candidate("b", 5, 5, 5)], now=NOW)
    assert chosen is not None and chosen.node == "b"


def test_then_the_lowest_sum_then_the_fewest_victims() -> None:
    by_sum = pick_one_node_for_preemption([candidate("a", 5, 5), candidate("b", 5, 1)], now=NOW)
    assert by_sum is not None and by_sum.node == "b"
    # Negative priorities: the sum counts each priority plus 2^31, so fewer victims still sum lower.
    by_sum_negative = pick_one_node_for_preemption([candidate("a", -5, -5), candidate("b", -5)], now=NOW)
    assert by_sum_negative is not None and by_sum_negative.node == "b"


def test_then_the_node_whose_most_important_victims_started_last() -> None:
    older = candidate("a", 5, started="2030-01-01T00:00:00Z")
    newer = candidate("b", 5, started="2030-01-03T00:00:00Z")
    chosen = pick_one_node_for_preemption([older, newer], now=NOW)
    assert chosen is not None and chosen.node == "b"
    tie = pick_one_node_for_preemption([candidate("x", 5), candidate("y", 5)], now=NOW)
    assert tie is not None and tie.node == "x", "a full tie keeps the first candidate"
    assert pick_one_node_for_preemption([], now=NOW) is None


# -- the whole PostFilter -----------------------------------------------------------------------------


def full_cluster() -> Snapshot:
    return Snapshot(
        [
            node("a", cpu="2"),
            node("b", cpu="2"),
            node("tainted", cpu="2", taints=[{"key": "k", "effect": "NoSchedule"}]),
        ],
        [
            placed("a-mid", "a", priority=50, cpu="2"),
            placed("b-low-1", "b", priority=10),
            placed("b-low-2", "b", priority=10),
            placed("t-low", "tainted", priority=0, cpu="2"),
        ],
    )


def test_a_high_priority_pod_preempts_on_the_node_with_the_least_important_victims() -> None:
    result = preempt(pod("urgent", cpu="1", priority=1000), full_cluster())
    assert result.nominated_node == "b" and result.message == ""
    # One CPU is enough: b-low-1, given back first (equal priority and start, first in place), stays.
    assert names(result.victims) == ["b-low-2"]
    assert sorted(c.node for c in result.candidates) == ["a", "b"]
    assert result.statuses["tainted"].reasons == (NOT_HELPFUL,), "evicting pods removes no taint"
    assert result.to_trace()["victims"] == ["default/b-low-2"]


def test_nothing_to_evict_leaves_the_upstream_message_and_clears_the_nomination() -> None:
    result = preempt(pod("equal", cpu="1", priority=0), full_cluster())
    assert result.nominated_node == "" and not result.victims
    assert result.message == (
        "preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, "
        "2 No preemption victims found for incoming pod."
    )


def test_preemption_policy_never_waits_instead() -> None:
    patient = pod("patient", cpu="1", priority=1000, preemptionPolicy="Never")
    result = preempt(patient, full_cluster())
    assert result.nominated_node is None and result.message == f"preemption: {NOT_ELIGIBLE_NEVER}"


def test_a_pod_whose_victims_are_still_terminating_does_not_preempt_again() -> None:
    victim = placed("b-low-1", "b", priority=10)
    victim["metadata"]["deletionTimestamp"] = "2030-01-01T00:00:00Z"
    victim["status"] = {
        "conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}]
    }
    snapshot = Snapshot([node("b", cpu="2")], [victim, placed("b-low-2", "b", priority=10)])
    waiting = pod("urgent", cpu="2", priority=1000)
    waiting["status"] = {"nominatedNodeName": "b"}
    insufficient = {"b": Status(Code.UNSCHEDULABLE, ("Insufficient cpu",))}
    assert eligible_to_preempt(waiting, snapshot, insufficient) == NOT_ELIGIBLE_TERMINATING
    # If its nominated node can no longer take it at all, it may look elsewhere.
    gone = {"b": Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) had untolerated taint {k: }",))}
    assert eligible_to_preempt(waiting, snapshot, gone) is None


def test_nominated_pods_hold_their_room_against_lower_priority_pods() -> None:
    snapshot = Snapshot([node("a", cpu="2")])
    waiting = {"a": [pod("urgent", cpu="2", priority=1000)]}
    low = schedule(
        pod("low", cpu="1", priority=0), snapshot, PROFILE, rng=random.Random(0), nominated=waiting
    )
    assert low.chosen is None and low.message() == "0/1 nodes are available: 1 Insufficient cpu."
    high = schedule(
        pod("peer", cpu="1", priority=2000), snapshot, PROFILE, rng=random.Random(0), nominated=waiting
    )
    assert high.chosen == "a", "a pod of higher priority than the nominated one does not wait for it"
    itself = schedule(
        pod("urgent", cpu="2", priority=1000), snapshot, PROFILE, rng=random.Random(0), nominated=waiting
    )
    assert itself.chosen == "a", "the nominated pod does not count against itself"
