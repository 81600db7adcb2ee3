"""The diagram node ids a chapter may name: in highlights, in edges and in ``diagram:`` links.

They are the ids the trace gives the boxes of the topology diagram (``controlplane/trace/nodes.py``):
``apiserver``, ``etcd``, ``scheduler``, ``controller-manager``, ``kubelet:<node>`` and
``kube-proxy:<node>`` for the chapter's nodes ``node-1`` ... ``node-N`` (its sandbox has ``nodes`` of
them), ``user:$student`` (the student's own box), ``user:<name>`` for anyone else and
``webhook:<name>`` for an admission webhook's server.
"""

from __future__ import annotations

import re

from controlplane.trace import nodes

#: The boxes every cluster has.
FIXED = frozenset({nodes.APISERVER, nodes.ETCD, nodes.SCHEDULER, nodes.CONTROLLER_MANAGER})
# A user or webhook name: what Kubernetes allows in a user name, minus spaces and control characters.
_NAME = re.compile(r"[A-Za-z0-9$][A-Za-z0-9:@._$-]{0,252}")
_NODE = re.compile(r"node-([1-9][0-9]?)")


def node_id_problem(value: str, *, nodes_in_chapter: int) -> str | None:
    """Why ``value`` names no box of a chapter whose sandbox has ``nodes_in_chapter`` nodes, or None."""
    if value in FIXED:
        return None
    kind, sep, name = value.partition(":")
    if not sep:
        return f"{value!r} is not a diagram node id ({_known(nodes_in_chapter)})"
    if kind in ("kubelet", "kube-proxy"):
        match = _NODE.fullmatch(name)
        if match is None or not 1 <= int(match.group(1)) <= nodes_in_chapter:
            names = ", ".join(f"node-{n}" for n in range(1, nodes_in_chapter + 1))
            return f"{value!r}: this chapter's nodes are {names}"
        return None
    if kind in ("user", "webhook"):
        return None if _NAME.fullmatch(name) else f"{value!r}: {name!r} is not a {kind} name"
    return f"{value!r} is not a diagram node id ({_known(nodes_in_chapter)})"


def _known(count: int) -> str:
    return (
        f"known: {', '.join(sorted(FIXED))}, kubelet:node-1..{count}, kube-proxy:node-1..{count}, "
        "user:$student, user:<name>, webhook:<name>"
    )


__all__ = ["FIXED", "node_id_problem"]
