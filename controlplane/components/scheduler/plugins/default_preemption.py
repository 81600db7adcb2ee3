"""DefaultPreemption: when a pod fits nowhere, make room for it by evicting pods of lower priority.

Filtering answers "where can this pod run *now*?". When the answer is "nowhere", the scheduler runs
its **PostFilter** plugins; the default one, DefaultPreemption, asks instead "where *could* it run if
some less important pods were gone?". It works on the snapshot, without touching the cluster:

1. **Eligible?** A pod whose ``preemptionPolicy`` is ``Never`` waits its turn and evicts nobody. A pod
   that already preempted (it has ``status.nominatedNodeName``) and whose victims there are still
   terminating does not preempt again: it waits for the room it already asked for.
2. **Which nodes might help?** Only nodes a filter rejected as ``Unschedulable`` (too little CPU, too
   many pods). A node rejected as ``UnschedulableAndUnresolvable`` (a taint, a selector, a name)
   stays useless whoever leaves it: "Preemption is not helpful for scheduling".
3. **Victims per node** (``SelectVictimsOnNode``): take away *every* pod of lower priority; if the pod
   still does not fit, the node cannot help. Otherwise give pods back, keeping each that still leaves
   room: first the pods whose eviction would break a PodDisruptionBudget (``filter_pods_with_pdb_
   violation``: more of a budget's pods than its ``disruptionsAllowed``), then the others, each group
   most important first (higher priority, then the one running longest). The victims are only the pods
   that really must go, and a budget is broken only if nothing else makes room. Preemption does not
   *honour* budgets as an eviction does: it only prefers not to break them.
4. **Pick one node** (``pickOneNodeForPreemption``), by these rules in turn until one node is left:
   the fewest budget-breaking victims, the lowest highest-priority victim, the lowest sum of victim
   priorities, the fewest victims, and the latest start among the most important victims (evict what
   ran least); then the first.

The scheduler then acts on the choice (``schedule_one``): it writes the node into the preemptor's
``status.nominatedNodeName``, marks every victim with the condition ``DisruptionTarget`` (reason
``PreemptionByScheduler``) and deletes it. The preemptor goes back to the queue; when a victim is
gone, the freed room lets it fit, and meanwhile other pods of lower priority may not take that room.

Not modelled: extenders, the random
offset upstream uses to spread its search on large clusters (nodes are tried in name order), and
the asynchronous API calls of ``SchedulerAsyncPreemption``.

Upstream: pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go and
pkg/scheduler/framework/preemption/preemption.go.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Final

from controlplane.api.meta import parse_timestamp
from controlplane.api.selectors import LabelSelector, SelectorError, label_selector_from_object
from controlplane.client.cache import Indexer
from controlplane.components.scheduler.framework import (
    Candidate,
    Code,
    CycleState,
    FilterPlugin,
    NodeInfo,
    Obj,
    PostFilterResult,
    Snapshot,
    Status,
    pod_priority,
    pre_filter,
)
from controlplane.components.scheduler.messages import fit_error_message

NAME: Final = "DefaultPreemption"
#: ``v1.DisruptionTarget``, and the reason the scheduler gives it (``v1.PodReasonPreemptionByScheduler``).
DISRUPTION_TARGET: Final = "DisruptionTarget"
REASON_PREEMPTION_BY_SCHEDULER: Final = "PreemptionByScheduler"

NOT_ELIGIBLE_NEVER: Final = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING: Final = "not eligible due to a terminating pod on the nominated node."
NOT_HELPFUL: Final = "Preemption is not helpful for scheduling"
NO_VICTIMS: Final = "No preemption victims found for incoming pod"
#: ``math.MaxInt32 + 1``: added to every priority summed, so that all terms are positive.
_PRIORITY_OFFSET: Final = 2**31


def pod_start_time(pod: Obj, now: float) -> float:
    """``GetPodStartTime``: ``status.startTime``; a pod not started yet counts as starting now."""
    started = parse_timestamp((pod.get("status") or {}).get("startTime"))
    return started if started is not None else now


def more_important_first(pods: Sequence[Obj], now: float) -> list[Obj]:
    """Pods ordered by ``MoreImportantPod``: higher priority first, then the earlier started."""
    return sorted(pods, key=lambda p: (-pod_priority(p), pod_start_time(p, now)))


def terminating_by_preemption(pod: Obj) -> bool:
    """``podTerminatingByPreemption``: being deleted, with the scheduler's DisruptionTarget condition."""
    if not (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    return any(
        c.get("type") == DISRUPTION_TARGET
        and c.get("status") == "True"
        and c.get("reason") == REASON_PREEMPTION_BY_SCHEDULER
        for c in (pod.get("status") or {}).get("conditions") or []
    )


def _trial_state(snapshot: Snapshot, trial: NodeInfo) -> CycleState:
    """A cycle state over the snapshot with one node replaced by its trial copy: filters that look
    at every node (affinity, spreading) then see the pods taken away or given back."""
    view = Snapshot(())
    view.node_infos = [trial if info.name == trial.name else info for info in snapshot.node_infos]
    view.namespace_labels = snapshot.namespace_labels
    return CycleState(view)


def run_filters(filters: Sequence[FilterPlugin], snapshot: Snapshot, pod: Obj, trial: NodeInfo) -> Status:
    """``RunFilterPlugins`` on one trial node: the first rejection, or success.

    Each trial runs the PreFilters again on its own cycle state (upstream updates the attempt's state
    with ``RunPreFilterExtensionRemovePod``/``AddPod`` instead): a plugin that says ``Skip`` does not
    filter, and one that rejects the pod rejects the trial node too.
    """
    state = _trial_state(snapshot, trial)
    for plugin in filters:
        verdict = pre_filter(plugin, state, pod)
        if verdict.code is Code.SKIP:
            continue
        if not verdict.is_success:
            return verdict
        status = plugin.filter(state, pod, trial)
        if not status.is_success:
            return status
    return Status()


def filter_pods_with_pdb_violation(pods: Sequence[Obj], pdbs: Iterable[Obj]) -> tuple[list[Obj], list[Obj]]:
    """``filterPodsWithPDBViolation`` (pkg/scheduler/framework/preemption/preemption.go): split ``pods``
    (most important first) into those whose eviction, counted in that order, would take a matching
    budget below zero ``disruptionsAllowed``, and the rest. A pod the budget already lists in
    ``disruptedPods`` is being evicted through the API and is not counted again."""
    budgets = [(b, selector) for b in pdbs if (selector := _budget_selector(b)) is not None]
    allowed = [int((b.get("status") or {}).get("disruptionsAllowed") or 0) for b, _ in budgets]
    violating: list[Obj] = []
    non_violating: list[Obj] = []
    for pod in pods:
        meta: Obj = pod.get("metadata") or {}
        labels: Mapping[str, str] = meta.get("labels") or {}
        violated = False
        for i, (budget, selector) in enumerate(budgets) if labels else ():
            budget_meta: Obj = budget.get("metadata") or {}
            if budget_meta.get("namespace") != meta.get("namespace") or not selector.matches(labels):
                continue
            if meta.get("name") in ((budget.get("status") or {}).get("disruptedPods") or {}):
                continue
            allowed[i] -= 1
            if allowed[i] < 0:
                violated = True
        (violating if violated else non_violating).append(pod)
    return violating, non_violating


def _budget_selector(budget: Obj) -> LabelSelector | None:
    """A budget's selector; None for an invalid, nil or empty one, which matches no pod."""
    try:
        selector = label_selector_from_object((budget.get("spec") or {}).get("selector"))
    except SelectorError:
        return None
    return None if selector.empty else selector


def select_victims_on_node(
    pod: Obj,
    info: NodeInfo,
    snapshot: Snapshot,
    filters: Sequence[FilterPlugin],
    *,
    now: float,
    pdbs: Iterable[Obj] = (),
) -> tuple[list[Obj] | None, int, Status]:
    """``SelectVictimsOnNode``: the fewest lower-priority pods whose removal lets ``pod`` fit, most
    important first, and how many of them break a budget; or None and the reason this node cannot
    help."""
    priority = pod_priority(pod)
    potential = [p for p in info.pods if pod_priority(p) < priority]
    if not potential:
        return None, 0, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (NO_VICTIMS,), NAME)
    trial = NodeInfo(info.node, [p for p in info.pods if pod_priority(p) >= priority])
    status = run_filters(filters, snapshot, pod, trial)
    if not status.is_success:
        return None, 0, status  # even an empty node (of lower-priority pods) would not do
    violating, non_violating = filter_pods_with_pdb_violation(more_important_first(potential, now), pdbs)
    victims: list[Obj] = []

    def reprieve(candidate: Obj) -> bool:
        trial.add_pod(candidate)  # give it back, if the pod still fits
        if run_filters(filters, snapshot, pod, trial).is_success:
            return True
        trial.remove_pod(candidate)
        victims.append(candidate)
        return False

    violations = sum(not reprieve(candidate) for candidate in violating)
    for candidate in non_violating:
        reprieve(candidate)
    if violating and non_violating:
        victims = more_important_first(victims, now)
    return victims, violations, Status()


def pick_one_node_for_preemption(candidates: Sequence[Candidate], *, now: float) -> Candidate | None:
    """``pickOneNodeForPreemption``: apply the rules in turn while several candidates tie."""
    if not candidates:
        return None
    for candidate in candidates:
        if not candidate.victims:
            return candidate  # the pod fits there already (the cluster changed): nothing to evict

    def fewest_violations(c: Candidate) -> int:
        return -c.pdb_violations

    def highest_victim(c: Candidate) -> int:
        return -pod_priority(c.victims[0])

    def priority_sum(c: Candidate) -> int:
        return -sum(pod_priority(v) + _PRIORITY_OFFSET for v in c.victims)

    def victim_count(c: Candidate) -> int:
        return -len(c.victims)

    def latest_start(c: Candidate) -> float:
        # ``GetEarliestPodStartTime``: the earliest start among the highest-priority victims.
        top = pod_priority(c.victims[0])
        return min(pod_start_time(v, now) for v in c.victims if pod_priority(v) == top)

    remaining = list(candidates)
    for score in (fewest_violations, highest_victim, priority_sum, victim_count, latest_start):
        best = max(score(c) for c in remaining)
        remaining = [c for c in remaining if score(c) == best]
        if len(remaining) == 1:
            break
    return remaining[0]


def eligible_to_preempt(pod: Obj, snapshot: Snapshot, statuses: Mapping[str, Status]) -> str | None:
    """``PodEligibleToPreemptOthers``: None if the pod may preempt, else why not."""
    spec: Obj = pod.get("spec") or {}
    if spec.get("preemptionPolicy") == "Never":
        return NOT_ELIGIBLE_NEVER
    nominated = str((pod.get("status") or {}).get("nominatedNodeName") or "")
    if nominated:
        status = statuses.get(nominated)
        if status is not None and status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            return None  # its nominated node cannot take it any more: it may preempt elsewhere
        info = snapshot.get(nominated)
        if info is not None:
            priority = pod_priority(pod)
            for placed in info.pods:
                if pod_priority(placed) < priority and terminating_by_preemption(placed):
                    return NOT_ELIGIBLE_TERMINATING
    return None


class DefaultPreemption:
    """The PostFilter plugin: finds the node and the victims (pure: the scheduler does the evicting).

    ``pdbs`` is the scheduler's PodDisruptionBudget informer cache (set at start; upstream's
    ``pdbLister``); without it no victim counts as breaking a budget.
    """

    name = NAME

    def __init__(self) -> None:
        self.pdbs: Indexer | None = None

    def post_filter(
        self,
        pod: Obj,
        snapshot: Snapshot,
        filters: Sequence[FilterPlugin],
        statuses: Mapping[str, Status],
        *,
        now: float,
    ) -> PostFilterResult:
        """``PostFilter`` / ``Evaluator.Preempt`` over the failed attempt's per-node statuses."""
        why_not = eligible_to_preempt(pod, snapshot, statuses)
        if why_not is not None:
            return PostFilterResult(None, message=f"preemption: {why_not}")
        result = PostFilterResult("")
        pdbs = self.pdbs.list() if self.pdbs is not None else []
        for info in snapshot.node_infos:
            status = statuses.get(info.name)
            if status is not None and status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                result.statuses[info.name] = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (NOT_HELPFUL,), NAME)
                continue
            victims, violations, status = select_victims_on_node(
                pod, info, snapshot, filters, now=now, pdbs=pdbs
            )
            if victims is None:
                result.statuses[info.name] = status
            else:
                result.candidates.append(Candidate(info.name, tuple(victims), violations))
        chosen = pick_one_node_for_preemption(result.candidates, now=now)
        if chosen is None:
            # Upstream answers with a FitError over the victim search's statuses.
            result.message = "preemption: " + fit_error_message(len(snapshot), result.statuses)
            return result
        result.nominated_node = chosen.node
        result.victims = list(chosen.victims)
        return result


__all__ = [
    "DISRUPTION_TARGET",
    "NAME",
    "NOT_ELIGIBLE_NEVER",
    "NOT_ELIGIBLE_TERMINATING",
    "NOT_HELPFUL",
    "NO_VICTIMS",
    "REASON_PREEMPTION_BY_SCHEDULER",
    "DefaultPreemption",
    "eligible_to_preempt",
    "filter_pods_with_pdb_violation",
    "more_important_first",
    "pick_one_node_for_preemption",
    "pod_start_time",
    "select_victims_on_node",
    "terminating_by_preemption",
]
