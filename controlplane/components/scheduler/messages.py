"""FailedScheduling: the sentence ``kubectl describe pod`` shows when a pod fits no node.

When every node is ruled out, upstream builds a ``FitError`` whose ``Error()``
(pkg/scheduler/framework/types.go) counts each filter reason over all nodes and prints the counts,
sorted as *strings* (so "1 Insufficient cpu" comes before "2 node(s) had untolerated taint ..."):

    0/3 nodes are available: 1 Insufficient cpu,
        2 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }.

(one line in reality).

Each node contributes the reasons of the first filter that rejected it, so a node is counted once per
reason that filter gave (NodeResourcesFit may give both "Insufficient cpu" and "Insufficient memory").

When a PreFilter rejected the pod before any node was filtered (VolumeBinding: a missing claim), the
message is that status's message alone (``Diagnosis.PreFilterMsg``), without counts, although every
node carries the status: ``0/4 nodes are available: persistentvolumeclaim "data" not found.``

The scheduler then appends what the PostFilter plugin (DefaultPreemption) found, e.g.
`` preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.``. ``FitError.Error``
adds that part only when ``Diagnosis.PostFilterMsg`` is non-empty: it stays empty when preemption
succeeded (a node was nominated) and when no PostFilter plugin is configured.

The Event's ``note`` is at most 1024 characters (``NoteLengthLimit``): a longer message is cut and
ends in `` ...`` on the Event (``truncateMessage``), while the pod's ``PodScheduled`` condition keeps
it whole.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from controlplane.components.scheduler.framework import Status

#: ``NoNodeAvailableMsg`` (pkg/scheduler/framework/types.go).
NO_NODE_AVAILABLE_MSG = "0/{} nodes are available"
#: ``ErrNoNodesAvailable`` (pkg/scheduler/schedule_one.go): a cluster without any node.
NO_NODES = "no nodes available to schedule pods"
#: ``NoteLengthLimit`` (pkg/apis/core/validation/events.go): the longest note an Event may have.
NOTE_LENGTH_LIMIT = 1024


def fit_error_message(num_all_nodes: int, statuses: Mapping[str, Status], *, pre_filter_msg: str = "") -> str:
    """``FitError.Error()``: ``0/N nodes are available: <PreFilterMsg>. <sorted reason counts>.``"""
    if num_all_nodes == 0:
        return NO_NODES
    message = NO_NODE_AVAILABLE_MSG.format(num_all_nodes) + ":"
    if pre_filter_msg:
        message += f" {pre_filter_msg}."
    else:
        reasons: Counter[str] = Counter()
        for status in statuses.values():
            for reason in status.reasons:
                reasons[reason] += 1
        histogram = sorted(f"{count} {reason}" for reason, count in reasons.items())
        if histogram:
            message += f" {', '.join(histogram)}."
    return message


def truncate_message(message: str) -> str:
    """``truncateMessage`` (pkg/scheduler/schedule_one.go): fit ``message`` in an Event's note.

    Upstream counts bytes; the lab's API server counts characters, and so does this.
    """
    if len(message) <= NOTE_LENGTH_LIMIT:
        return message
    suffix = " ..."
    return message[: NOTE_LENGTH_LIMIT - len(suffix)] + suffix
