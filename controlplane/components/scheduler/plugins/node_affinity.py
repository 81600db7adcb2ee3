"""NodeAffinity: the pod says which nodes it wants, by their labels (and name).

Two ways to say it, both checked (upstream pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go
and component-helpers/scheduling/corev1/nodeaffinity):

- ``spec.nodeSelector``: a map of labels the node must all have (``disktype: ssd``);
- ``spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms``: a
  list of terms, any one of which must match (OR); inside a term every ``matchExpressions`` entry
  (operators In, NotIn, Exists, DoesNotExist, Gt, Lt on labels) and every ``matchFields`` entry (only
  ``metadata.name``, In/NotIn) must hold (AND). A term with neither matches nothing.

A node that fails is unresolvable (evicting pods does not relabel a node): "node(s) didn't match Pod's
node affinity/selector". "IgnoredDuringExecution" means a running pod stays if labels change later.

The **score** adds the ``weight`` of every ``preferredDuringSchedulingIgnoredDuringExecution`` term
the node matches, then normalizes so that the best node gets 100.
"""

from __future__ import annotations

from collections.abc import Mapping

from controlplane.api.selectors import (
    DOES_NOT_EXIST,
    EXISTS,
    GREATER_THAN,
    IN,
    LESS_THAN,
    NOT_IN,
    Requirement,
)
from controlplane.components.scheduler.framework import (
    SUCCESS,
    CycleState,
    NodeInfo,
    Obj,
    Status,
    default_normalize_score,
    unschedulable,
)

NAME = "NodeAffinity"
#: ``ErrReasonPod`` (nodeaffinity/node_affinity.go).
ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"

_OPERATORS = {
    "In": IN,
    "NotIn": NOT_IN,
    "Exists": EXISTS,
    "DoesNotExist": DOES_NOT_EXIST,
    "Gt": GREATER_THAN,
    "Lt": LESS_THAN,
}


def _requirement_matches(expression: Obj, values_by_key: Mapping[str, str]) -> bool:
    operator = _OPERATORS.get(str(expression.get("operator") or ""))
    if operator is None:
        return False  # nodeSelectorRequirementsAsSelector fails: the term matches nothing
    values = tuple(str(v) for v in expression.get("values") or [])
    return Requirement(str(expression.get("key") or ""), operator, values).matches(values_by_key)


def term_matches(term: Obj, node: NodeInfo) -> bool:
    """``nodeSelectorTerm`` semantics: all expressions and fields hold; an empty term matches nothing."""
    return term_matches_labels(term, node.labels, node.name)


def term_matches_labels(term: Obj, labels: Mapping[str, str], name: str) -> bool:
    """``term_matches`` on a node known by its labels and name only."""
    expressions = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not expressions and not fields:
        return False
    if not all(_requirement_matches(e, labels) for e in expressions):
        return False
    node_fields = {"metadata.name": name}
    for expression in fields:
        if expression.get("key") != "metadata.name" or expression.get("operator") not in ("In", "NotIn"):
            return False
        if not _requirement_matches(expression, node_fields):
            return False
    return True


def _node_affinity(pod: Obj) -> Obj:
    affinity: Obj = ((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}
    return affinity


def pod_matches_node_selector_and_affinity(pod: Obj, node: NodeInfo) -> bool:
    """``GetRequiredNodeAffinity(pod).Match(node)``: nodeSelector AND required terms."""
    selector: Mapping[str, str] = (pod.get("spec") or {}).get("nodeSelector") or {}
    if any(node.labels.get(key) != value for key, value in selector.items()):
        return False
    required = _node_affinity(pod).get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is not None:
        terms = required.get("nodeSelectorTerms") or []
        if not any(term_matches(term, node) for term in terms):
            return False
    return True


class NodeAffinity:
    name = NAME

    def pre_filter_skip(self, state: CycleState, pod: Obj) -> bool:
        """PreFilter's ``Skip`` (nodeaffinity/node_affinity.go): no nodeSelector and no required
        node affinity, so every node passes."""
        required = _node_affinity(pod).get("requiredDuringSchedulingIgnoredDuringExecution")
        return not (pod.get("spec") or {}).get("nodeSelector") and required is None

    def pre_score_skip(self, state: CycleState, pod: Obj) -> bool:
        """PreScore's ``Skip``: no preferred node affinity terms, so every node would score 0."""
        return not _node_affinity(pod).get("preferredDuringSchedulingIgnoredDuringExecution")

    def filter(self, state: CycleState, pod: Obj, node: NodeInfo) -> Status:
        if pod_matches_node_selector_and_affinity(pod, node):
            return SUCCESS
        return unschedulable(NAME, ERR_REASON_POD, unresolvable=True)

    def score(self, state: CycleState, pod: Obj, node: NodeInfo) -> int:
        total = 0
        for term in _node_affinity(pod).get("preferredDuringSchedulingIgnoredDuringExecution") or []:
            weight = int(term.get("weight") or 0)
            if weight and term_matches(term.get("preference") or {}, node):
                total += weight
        return total

    def normalize(self, scores: dict[str, int]) -> dict[str, int]:
        return default_normalize_score(scores)
