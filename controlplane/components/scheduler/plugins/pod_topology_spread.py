"""PodTopologySpread: keep a group of pods evenly spread over zones, nodes or any other domain.

A constraint names a ``topologyKey`` (a node label, e.g. ``topology.kubernetes.io/zone``: all nodes
with the same value form one *domain*), a ``labelSelector`` (which pods count: usually the pod's own
group) and ``maxSkew``. The *skew* of placing the pod in a domain is

    (matching pods in that domain + 1 if the pod matches its own selector) - (fewest in any domain)

and with ``whenUnsatisfiable: DoNotSchedule`` a node whose domain would exceed ``maxSkew`` is ruled out.
Domains are those of the nodes that pass the pod's nodeSelector/affinity and carry every key of its
constraints; a node lacking a key is ruled out for good ("(missing required label)"). With
``minDomains`` and fewer domains than that, the fewest counts as 0, so pods stop piling up.
``ScheduleAnyway`` constraints only score (not modelled yet), as do matchLabelKeys, node inclusion
policies other than the defaults, and cluster-level default constraints.

Upstream: pkg/scheduler/framework/plugins/podtopologyspread/filtering.go.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from controlplane.api.selectors import LabelSelector, SelectorError, label_selector_from_object
from controlplane.components.scheduler.framework import (
    SUCCESS,
    CycleState,
    NodeInfo,
    Obj,
    Status,
    labels_of,
    unschedulable,
)
from controlplane.components.scheduler.plugins.node_affinity import pod_matches_node_selector_and_affinity

NAME = "PodTopologySpread"
#: ``ErrReasonConstraintsNotMatch`` / ``ErrReasonNodeLabelNotMatch`` (podtopologyspread/filtering.go).
ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"


@dataclass(frozen=True)
class _Constraint:
    max_skew: int
    topology_key: str
    selector: LabelSelector
    min_domains: int


@dataclass
class _State:
    constraints: list[_Constraint]
    #: (topology key, value) -> matching pods in that domain
    counts: dict[tuple[str, str], int]


def _constraints(pod: Obj) -> list[_Constraint]:
    result = []
    for c in (pod.get("spec") or {}).get("topologySpreadConstraints") or []:
        if c.get("whenUnsatisfiable", "DoNotSchedule") != "DoNotSchedule":
            continue
        try:
            selector = label_selector_from_object(c.get("labelSelector"))
        except SelectorError:
            selector = LabelSelector.nothing()
        result.append(
            _Constraint(
                int(c.get("maxSkew") or 1),
                str(c.get("topologyKey") or ""),
                selector,
                int(c.get("minDomains") or 1),
            )
        )
    return result


def _pre_filter(state: CycleState, pod: Obj) -> _State:
    cached: Any = state.data.get(NAME)
    if isinstance(cached, _State):
        return cached
    constraints = _constraints(pod)
    namespace = (pod.get("metadata") or {}).get("namespace") or "default"
    counts: dict[tuple[str, str], int] = {}
    for node in state.snapshot.node_infos:
        if not constraints or not pod_matches_node_selector_and_affinity(pod, node):
            continue
        if any(c.topology_key not in node.labels for c in constraints):
            continue
        for c in constraints:
            pair = (c.topology_key, node.labels[c.topology_key])
            matching = sum(
                1
                for p in node.pods
                if ((p.get("metadata") or {}).get("namespace") or "default") == namespace
                and not (p.get("metadata") or {}).get("deletionTimestamp")
                and c.selector.matches(labels_of(p))
            )
            counts[pair] = counts.get(pair, 0) + matching
    result = _State(constraints, counts)
    state.data[NAME] = result
    return result


class PodTopologySpread:
    name = NAME

    def pre_filter_skip(self, state: CycleState, pod: Obj) -> bool:
        """PreFilter's ``Skip`` (podtopologyspread/filtering.go): no DoNotSchedule constraints."""
        return not _pre_filter(state, pod).constraints

    def filter(self, state: CycleState, pod: Obj, node: NodeInfo) -> Status:
        pre = _pre_filter(state, pod)
        if not pre.constraints:
            return SUCCESS
        own_labels = labels_of(pod)
        for c in pre.constraints:
            value = node.labels.get(c.topology_key)
            if value is None:
                return unschedulable(NAME, ERR_REASON_NODE_LABEL_NOT_MATCH, unresolvable=True)
            domains = [n for (key, _), n in pre.counts.items() if key == c.topology_key]
            min_match = min(domains, default=0)
            if len(domains) < c.min_domains:
                min_match = 0
            self_match = 1 if c.selector.matches(own_labels) else 0
            skew = pre.counts.get((c.topology_key, value), 0) + self_match - min_match
            if skew > c.max_skew:
                return unschedulable(NAME, ERR_REASON_CONSTRAINTS_NOT_MATCH)
        return SUCCESS
