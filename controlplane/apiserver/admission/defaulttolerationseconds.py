"""DefaultTolerationSeconds: how long a pod stays on a node that stopped answering.

When a node stops reporting, the node lifecycle controller taints it ``node.kubernetes.io/not-ready``
or ``node.kubernetes.io/unreachable`` with effect ``NoExecute``: pods that do not tolerate the taint
are evicted at once. Evicting every pod the moment a node misses a heartbeat would be too eager (a
network blip would reschedule a whole node), so this plugin gives every pod that does not already
say otherwise a toleration of both taints for **300 seconds**: five minutes of grace, after which the
taint eviction controller deletes the pod and its ReplicaSet makes a new one elsewhere.

A pod that tolerates the taint already (same key, or an empty key that matches every taint; effect
``NoExecute`` or empty) keeps its own toleration: a DaemonSet's pods tolerate them forever.

Upstream: ``plugin/pkg/admission/defaulttolerationseconds/admission.go`` (flags
``--default-not-ready-toleration-seconds`` and ``--default-unreachable-toleration-seconds``).
"""

from __future__ import annotations

from typing import Any, Final

from controlplane.apiserver.admission.attributes import DELETE, Attributes, Object, PatchOp, section
from controlplane.apiserver.admission.chain import ClusterView, Plugin, Scope

NOT_READY: Final = "node.kubernetes.io/not-ready"
UNREACHABLE: Final = "node.kubernetes.io/unreachable"
DEFAULT_SECONDS: Final = 300


def tolerates(tolerations: list[Any], key: str) -> bool:
    """Whether a toleration already covers the ``NoExecute`` taint ``key``."""
    for toleration in tolerations:
        if not isinstance(toleration, dict):
            continue
        if toleration.get("key") in (key, "", None) and toleration.get("effect") in ("NoExecute", "", None):
            return True
    return False


def default_tolerations(
    pod: Object, *, not_ready_seconds: int = DEFAULT_SECONDS, unreachable_seconds: int = DEFAULT_SECONDS
) -> list[PatchOp]:
    """The patch that adds the missing tolerations (pure)."""
    current = section(pod, "spec", "tolerations")
    tolerations = current if isinstance(current, list) else []
    missing = [
        {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": seconds}
        for key, seconds in ((NOT_READY, not_ready_seconds), (UNREACHABLE, unreachable_seconds))
        if not tolerates(tolerations, key)
    ]
    if not missing or not isinstance(pod.get("spec"), dict):
        return []
    if not isinstance(current, list):
        return [{"op": "add", "path": "/spec/tolerations", "value": missing}]
    return [{"op": "add", "path": "/spec/tolerations/-", "value": t} for t in missing]


class DefaultTolerationSeconds(Plugin):
    name = "DefaultTolerationSeconds"
    mutating = True

    def __init__(self, not_ready_seconds: int = DEFAULT_SECONDS, unreachable_seconds: int = DEFAULT_SECONDS):
        self.not_ready_seconds = not_ready_seconds
        self.unreachable_seconds = unreachable_seconds

    def handles(self, a: Attributes) -> bool:
        return a.is_pod() and not a.subresource and a.operation != DELETE and a.object is not None

    async def admit(self, a: Attributes, cluster: ClusterView, scope: Scope) -> list[PatchOp]:
        assert a.object is not None
        return default_tolerations(
            a.object, not_ready_seconds=self.not_ready_seconds, unreachable_seconds=self.unreachable_seconds
        )


__all__ = ["DEFAULT_SECONDS", "NOT_READY", "UNREACHABLE", "DefaultTolerationSeconds", "default_tolerations"]
