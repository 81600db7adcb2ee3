"""DefaultPreemption's pure core: who may preempt, which pods must go on a node, and which node wins."""

from __future__ import annotations

import random
from typing import Any

from controlplane.api.meta import object_key
from controlplane.client.cache import Indexer
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
    filter_pods_with_pdb_violation,
    more_important_first,
    pick_one_node_for_preemption,
    select_victims_on_node,
)
from tests.controlplane.components.scheduler.fixtures import node, pod

NOW = 1_800_000_000.0
PROFILE = default_profile()


def placed(
    name: str,
    node_name: str,
    *,
    priority: int,
    cpu: str = "1",
    started: str | None = None,
    labels: dict[str, str] | None = None,
) -> Any:
    p = pod(name, cpu=cpu, node_name=node_name, priority=priority, labels=labels)
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
    victims, violations, status = select_victims_on_node(
        pod("web", cpu="2", priority=100), info, snapshot, PROFILE.filters, now=NOW
    )
    assert status.is_success and violations == 0
    # The most important lower-priority pods are given back first: mid, then low-a (started earlier);
    # two CPUs must be freed, so low-a cannot stay once mid did, and low-b goes too.
    assert victims is not None and names(victims) == ["low-a", "low-b"]
    assert len(info.pods) == 4, "the search works on a copy: the snapshot keeps every pod"


def test_a_node_without_lower_priority_pods_or_too_small_anyway_is_no_candidate() -> None:
    equal = NodeInfo(node("n1", cpu="2"), [placed("peer", "n1", priority=100, cpu="2")])
    victims, _, status = select_victims_on_node(
        pod("web", cpu="1", priority=100), equal, Snapshot.of([equal]), PROFILE.filters, now=NOW
    )
    assert victims is None and status.reasons == (NO_VICTIMS,)
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    small = NodeInfo(node("n2", cpu="2"), [placed("low", "n2", priority=0, cpu="2")])
    victims, _, status = select_victims_on_node(
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


# -- PodDisruptionBudgets ----------------------------------------------------------------------------


def budget(
    name: str, app: str | None, allowed: int, *, disrupted: tuple[str, ...] = (), namespace: str = "default"
) -> Any:
    selector = {"matchLabels": {"app": app}} if app is not None else {}
    return {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": selector},
        "status": {
            "disruptionsAllowed": allowed,
            "disruptedPods": {p: "2030-01-01T00:00:00Z" for p in disrupted},
        },
    }


def test_pods_beyond_a_budgets_allowed_disruptions_are_the_violating_ones() -> None:
    pods = [placed(f"db-{i}", "n", priority=0, labels={"app": "db"}) for i in range(3)]
    pods.append(placed("bare", "n", priority=0))
    violating, non_violating = filter_pods_with_pdb_violation(pods, [budget("db", "db", 1)])
    # Counted in the order given (most important first): the first may go, the next two may not.
    assert names(violating) == ["db-1", "db-2"] and names(non_violating) == ["db-0", "bare"]


def test_pods_already_being_evicted_other_namespaces_and_empty_selectors_do_not_count() -> None:
    pods = [placed(f"db-{i}", "n", priority=0, labels={"app": "db"}) for i in range(2)]
    budgets = [
        budget("db", "db", 0, disrupted=("db-0",)),  # db-0 is already counted by the API's eviction
        budget("elsewhere", "db", 0, namespace="other"),
        budget("everything", None, 0),  # an empty selector matches nothing in policy/v1
    ]
    violating, non_violating = filter_pods_with_pdb_violation(pods, budgets)
    assert names(violating) == ["db-1"] and names(non_violating) == ["db-0"]


def test_a_victim_that_breaks_no_budget_is_taken_before_a_more_expendable_one_that_does() -> None:
    info = NodeInfo(
        node("n1", cpu="3"),
        [
            placed("guarded", "n1", priority=1, started="2030-01-02T00:00:00Z", labels={"app": "db"}),
            placed("free", "n1", priority=1, started="2030-01-01T00:00:00Z"),
            placed("peer", "n1", priority=100),
        ],
    )
    web = pod("web", cpu="1", priority=100)
    snapshot = Snapshot.of([info])
    # Without budgets the pod that ran least goes (it is the less important of two equals).
    victims, violations, _ = select_victims_on_node(web, info, snapshot, PROFILE.filters, now=NOW)
    assert victims is not None and names(victims) == ["guarded"] and violations == 0
    # With a budget that allows no disruption, it is given back first and the other pod goes.
    guarded = [budget("db", "db", 0)]
    victims, violations, _ = select_victims_on_node(
        web, info, snapshot, PROFILE.filters, now=NOW, pdbs=guarded
    )
    assert victims is not None and names(victims) == ["free"] and violations == 0
    # If both must go, the budget is broken, and said so.
    big = pod("big", cpu="2", priority=100)
    victims, violations, _ = select_victims_on_node(
        big, info, snapshot, PROFILE.filters, now=NOW, pdbs=guarded
    )
    assert victims is not None and names(victims) == ["free", "guarded"] and violations == 1


def test_the_plugin_prefers_the_node_where_no_budget_breaks() -> None:
    # n1's victim has the lower priority, but it is guarded by a budget that allows no disruption.
    snapshot = Snapshot.of(
        [
            NodeInfo(node("n1", cpu="1"), [placed("guarded", "n1", priority=1, labels={"app": "db"})]),
            NodeInfo(node("n2", cpu="1"), [placed("free", "n2", priority=5)]),
        ]
    )
    plugin = DefaultPreemption()
    plugin.pdbs = Indexer()
    plugin.pdbs.add(budget("db", "db", 0))
    web = pod("web", cpu="1", priority=100)
    decision = schedule(web, snapshot, PROFILE, rng=random.Random(0))
    result = plugin.post_filter(web, snapshot, PROFILE.filters, decision.statuses, now=NOW)
    assert result.nominated_node == "n2" and names(result.victims) == ["free"]
    assert {c.node: c.pdb_violations for c in result.candidates} == {"n1": 1, "n2": 0}
    # Without the budget cache, n1's cheaper victim wins, as before budgets counted.
    assert preempt(web, snapshot).nominated_node == "n1"


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
