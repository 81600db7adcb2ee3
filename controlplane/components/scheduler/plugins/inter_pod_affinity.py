"""InterPodAffinity: place a pod near (affinity) or away from (anti-affinity) other pods.

A term says: "in the same *topology domain* (nodes sharing the value of ``topologyKey``, e.g. the same
node with ``kubernetes.io/hostname``, the same zone) as pods matching ``labelSelector`` in
``namespaces`` (default: the pod's own namespace; or those a ``namespaceSelector`` picks)".

The filter checks the *required* terms (``requiredDuringSchedulingIgnoredDuringExecution``), in
upstream's order (pkg/scheduler/framework/plugins/interpodaffinity/filtering.go):

1. pod affinity: the node must carry every term's topology key, and each term's domain must already
   hold a pod matching *all* terms; except for the first pod of a group that matches its own terms
   when no such pod exists anywhere ("node(s) didn't match pod affinity rules", unresolvable);
2. pod anti-affinity: no domain of the node may hold a pod matching any term
   ("node(s) didn't match pod anti-affinity rules");
3. existing pods' anti-affinity: pods already running may refuse this pod as a neighbour
   ("node(s) didn't satisfy existing pods anti-affinity rules"). Anti-affinity is symmetric.

Preferred terms score upstream (weight 2); that is not modelled yet.
"""

from __future__ import annotations

from collections.abc import Mapping
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

NAME = "InterPodAffinity"
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"
ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't satisfy existing pods anti-affinity rules"


def _selector(obj: Obj | None) -> LabelSelector:
    try:
        return label_selector_from_object(obj)
    except SelectorError:
        return LabelSelector.nothing()


@dataclass(frozen=True)
class AffinityTerm:
    """``framework.AffinityTerm``: a parsed PodAffinityTerm."""

    namespaces: frozenset[str]
    selector: LabelSelector
    topology_key: str
    namespace_selector: LabelSelector

    def matches(self, pod: Obj, namespace_labels: Mapping[str, Mapping[str, str]]) -> bool:
        namespace = (pod.get("metadata") or {}).get("namespace") or "default"
        if namespace in self.namespaces or self.namespace_selector.matches(
            namespace_labels.get(namespace, {})
        ):
            return self.selector.matches(labels_of(pod))
        return False


def affinity_terms(pod: Obj, kind: str) -> list[AffinityTerm]:
    """``GetAffinityTerms``: the required terms of ``podAffinity`` or ``podAntiAffinity``."""
    section = ((pod.get("spec") or {}).get("affinity") or {}).get(kind) or {}
    own_namespace = (pod.get("metadata") or {}).get("namespace") or "default"
    terms = []
    for term in section.get("requiredDuringSchedulingIgnoredDuringExecution") or []:
        namespaces = list(term.get("namespaces") or [])
        ns_selector_obj = term.get("namespaceSelector")
        if not namespaces and ns_selector_obj is None:
            namespaces = [own_namespace]
        terms.append(
            AffinityTerm(
                frozenset(namespaces),
                _selector(term.get("labelSelector")),
                str(term.get("topologyKey") or ""),
                _selector(ns_selector_obj),
            )
        )
    return terms


def existing_anti_affinity_terms(pod: Obj) -> tuple[AffinityTerm, ...]:
    """The required anti-affinity terms of a pod already placed, parsed once per version of the pod.

    Upstream parses them when the pod enters the scheduler's cache (``PodInfo``'s
    ``RequiredAntiAffinityTerms``), not in every attempt; here they are kept by (uid,
    resourceVersion), which names one version of one pod.
    """
    meta: Obj = pod.get("metadata") or {}
    key = (str(meta.get("uid") or ""), str(meta.get("resourceVersion") or ""))
    if not key[0]:
        return tuple(affinity_terms(pod, "podAntiAffinity"))
    terms = _ANTI_AFFINITY_TERMS.get(key)
    if terms is None:
        if len(_ANTI_AFFINITY_TERMS) >= _ANTI_AFFINITY_TERMS_LIMIT:
            _ANTI_AFFINITY_TERMS.clear()
        terms = _ANTI_AFFINITY_TERMS[key] = tuple(affinity_terms(pod, "podAntiAffinity"))
    return terms


_ANTI_AFFINITY_TERMS: dict[tuple[str, str], tuple[AffinityTerm, ...]] = {}
_ANTI_AFFINITY_TERMS_LIMIT = 10_000


@dataclass
class _State:
    affinity: list[AffinityTerm]
    anti_affinity: list[AffinityTerm]
    affinity_counts: dict[tuple[str, str], int]
    anti_affinity_counts: dict[tuple[str, str], int]
    existing_anti_affinity_counts: dict[tuple[str, str], int]


def _add(counts: dict[tuple[str, str], int], node: NodeInfo, key: str) -> None:
    if key in node.labels:
        pair = (key, node.labels[key])
        counts[pair] = counts.get(pair, 0) + 1


def _pre_filter(state: CycleState, pod: Obj) -> _State:
    cached: Any = state.data.get(NAME)
    if isinstance(cached, _State):
        return cached
    ns_labels = state.snapshot.namespace_labels
    result = _State(affinity_terms(pod, "podAffinity"), affinity_terms(pod, "podAntiAffinity"), {}, {}, {})
    for node in state.snapshot.node_infos:
        if result.affinity or result.anti_affinity:
            for existing in node.pods:
                if result.affinity and all(t.matches(existing, ns_labels) for t in result.affinity):
                    for t in result.affinity:
                        _add(result.affinity_counts, node, t.topology_key)
                for t in result.anti_affinity:
                    if t.matches(existing, ns_labels):
                        _add(result.anti_affinity_counts, node, t.topology_key)
        # Only pods with required anti-affinity can refuse this one (the node keeps that list).
        for existing in node.pods_with_required_anti_affinity:
            for t in existing_anti_affinity_terms(existing):
                if t.matches(pod, ns_labels):
                    _add(result.existing_anti_affinity_counts, node, t.topology_key)
    state.data[NAME] = result
    return result


def _in_counted_domain(counts: Mapping[tuple[str, str], int], node: NodeInfo) -> bool:
    """Whether a domain of the node holds a counted pod (``satisfyPodAntiAffinity`` and
    ``satisfyExistingPodsAntiAffinity`` look at the node's labels only when something was counted)."""
    if not counts:
        return False
    return any(counts.get((key, value), 0) > 0 for key, value in node.labels.items())


class InterPodAffinity:
    name = NAME

    def pre_filter_skip(self, state: CycleState, pod: Obj) -> bool:
        """PreFilter's ``Skip`` (interpodaffinity/filtering.go): the pod has no required affinity or
        anti-affinity terms and no placed pod's required anti-affinity matches it."""
        pre = _pre_filter(state, pod)
        return not (pre.affinity or pre.anti_affinity or pre.existing_anti_affinity_counts)

    def filter(self, state: CycleState, pod: Obj, node: NodeInfo) -> Status:
        pre = _pre_filter(state, pod)
        if not self._satisfies_affinity(pre, pod, node, state):
            return unschedulable(NAME, ERR_REASON_AFFINITY_RULES_NOT_MATCH, unresolvable=True)
        if _in_counted_domain(pre.anti_affinity_counts, node):
            return unschedulable(NAME, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
        if _in_counted_domain(pre.existing_anti_affinity_counts, node):
            return unschedulable(NAME, ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)
        return SUCCESS

    @staticmethod
    def _satisfies_affinity(pre: _State, pod: Obj, node: NodeInfo, state: CycleState) -> bool:
        """``satisfyPodAffinity``, including its first-pod-of-a-group exception."""
        pods_exist = True
        for term in pre.affinity:
            value = node.labels.get(term.topology_key)
            if value is None:
                return False  # all topology labels must exist on the node
            if pre.affinity_counts.get((term.topology_key, value), 0) <= 0:
                pods_exist = False
        if pods_exist:
            return True
        ns_labels = state.snapshot.namespace_labels
        return not pre.affinity_counts and all(t.matches(pod, ns_labels) for t in pre.affinity)
