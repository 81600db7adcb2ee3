"""NodeName: a pod that names its node (``spec.nodeName``) may only go there.

Normally the scheduler *writes* ``spec.nodeName``; a pod created with it already set skips the
scheduler entirely. The plugin matters for pods that ask for a node some other way in the same spec
(upstream pkg/scheduler/framework/plugins/nodename/node_name.go): a node with another name is ruled out,
and preempting pods would not change its name, so the verdict is UnschedulableAndUnresolvable.
"""

from __future__ import annotations

from controlplane.components.scheduler.framework import (
    SUCCESS,
    CycleState,
    NodeInfo,
    Obj,
    Status,
    unschedulable,
)

NAME = "NodeName"
#: ``ErrReason`` (nodename/node_name.go).
ERR_REASON = "node(s) didn't match the requested node name"


class NodeName:
    name = NAME

    def filter(self, state: CycleState, pod: Obj, node: NodeInfo) -> Status:
        wanted = (pod.get("spec") or {}).get("nodeName")
        if not wanted or wanted == node.name:
            return SUCCESS
        return unschedulable(NAME, ERR_REASON, unresolvable=True)
