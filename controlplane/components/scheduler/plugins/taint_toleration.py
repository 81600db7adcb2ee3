"""TaintToleration: a node's taints repel pods, unless a pod tolerates them.

A taint is ``key=value:effect`` on a node (``node-role.kubernetes.io/control-plane:NoSchedule`` keeps
ordinary pods off the control plane). A toleration in the pod matches a taint when the effects agree
(or the toleration names none), the keys agree (or it names none, with ``Exists``), and with operator
``Equal`` (the default) the values agree too (``Toleration.ToleratesTaint``, core/v1/toleration.go).

- **Filter**: the first ``NoSchedule`` or ``NoExecute`` taint no toleration matches rules the node out,
  "node(s) had untolerated taint {key: value}"; unresolvable, since evicting pods removes no taint.
- **Score**: ``PreferNoSchedule`` is a soft taint: count those the pod does not tolerate (using only
  its tolerations with effect PreferNoSchedule or none) and normalize *reversed*, so fewer is better.

Upstream: pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go.
"""

from __future__ import annotations

from collections.abc import Iterable

from controlplane.components.scheduler.framework import (
    SUCCESS,
    CycleState,
    NodeInfo,
    Obj,
    Status,
    default_normalize_score,
    unschedulable,
)

NAME = "TaintToleration"


def tolerates_taint(toleration: Obj, taint: Obj) -> bool:
    """``Toleration.ToleratesTaint`` (staging/src/k8s.io/api/core/v1/toleration.go)."""
    effect = toleration.get("effect") or ""
    if effect and effect != (taint.get("effect") or ""):
        return False
    key = toleration.get("key") or ""
    if key and key != (taint.get("key") or ""):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Equal":
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return operator == "Exists"


def find_untolerated_taint(taints: Iterable[Obj], tolerations: list[Obj], effects: set[str]) -> Obj | None:
    """``FindMatchingUntoleratedTaint``: the first taint with one of ``effects`` that nothing tolerates."""
    for taint in taints:
        if (taint.get("effect") or "") not in effects:
            continue
        if not any(tolerates_taint(t, taint) for t in tolerations):
            return taint
    return None


#: ``preScoreStateKey``: where Score finds what PreScore worked out once for the attempt.
PRE_SCORE_STATE_KEY = "PreScore" + NAME


def _tolerations_prefer_no_schedule(state: CycleState, pod: Obj) -> list[Obj]:
    """PreScore's ``getAllTolerationPreferNoSchedule``: the pod's tolerations with effect
    PreferNoSchedule or none, picked out once per attempt rather than once per node."""
    tolerations: list[Obj] | None = state.data.get(PRE_SCORE_STATE_KEY)
    if tolerations is None:
        tolerations = state.data[PRE_SCORE_STATE_KEY] = [
            t
            for t in (pod.get("spec") or {}).get("tolerations") or []
            if (t.get("effect") or "") in ("", "PreferNoSchedule")
        ]
    return tolerations


class TaintToleration:
    name = NAME

    def filter(self, state: CycleState, pod: Obj, node: NodeInfo) -> Status:
        if not node.taints:
            return SUCCESS  # nothing to tolerate
        tolerations = list((pod.get("spec") or {}).get("tolerations") or [])
        taint = find_untolerated_taint(node.taints, tolerations, {"NoSchedule", "NoExecute"})
        if taint is None:
            return SUCCESS
        reason = f"node(s) had untolerated taint {{{taint.get('key') or ''}: {taint.get('value') or ''}}}"
        return unschedulable(NAME, reason, unresolvable=True)

    def score(self, state: CycleState, pod: Obj, node: NodeInfo) -> int:
        if not node.taints:
            return 0  # countIntolerableTaintsPreferNoSchedule of no taints
        tolerations = _tolerations_prefer_no_schedule(state, pod)
        return sum(
            1
            for taint in node.taints
            if taint.get("effect") == "PreferNoSchedule"
            and not any(tolerates_taint(t, taint) for t in tolerations)
        )

    def normalize(self, scores: dict[str, int]) -> dict[str, int]:
        return default_normalize_score(scores, reverse=True)
