"""What a new sandbox is given before its student sees it: their rights, the checker's, their share.

The objects below are applied to the sandbox through its API server by the lab's own identity
(``gateway.apply_as_lab``), never written to the store: they are authenticated, admitted, audited
and traced like anything else, and ``kubectl get clusterrolebindings`` shows them. Each carries the
guardrail label, so the sandbox's admission plugin refuses to let anyone but ``system:masters``
change or delete them (``controlplane/apiserver/admission/sandboxguardrails.py``).

- **The student is the administrator.** A ClusterRoleBinding of the ClusterRole ``cluster-admin`` to
  the User ``student:<username>``: RBAC's answers name it (``allowed by ClusterRoleBinding
  "kubelab:sandbox-owner" of ClusterRole "cluster-admin" to User "student:alice"``).
- **The checker reads and never writes.** A ClusterRole granting ``get``, ``list`` and ``watch`` on
  every resource of every group (and ``get`` on every non-resource URL), bound to ``kubelab:checker``.
- **A runaway loop throttles only its author.** API Priority and Fairness
  (``controlplane/apiserver/flowcontrol``) classifies each request by the first FlowSchema that
  matches it. The student's own FlowSchema matches their user before the bootstrap ``global-default``
  does and sends their requests to a priority level of their own with a small share of the API
  server's seats (10 shares of the lab's 60 seats, among the bootstrap levels' 245 shares: 3 seats)
  and one short queue. A loop of theirs that keeps more requests in flight than that waits in the
  queue, and once the queue is full is answered 429 with ``Retry-After``, while the components,
  whose FlowSchemas match first and whose levels are their own, go on as before.
"""

from __future__ import annotations

from typing import Any

from courses import gateway
from courses.sandboxes.identities import CHECKER

RBAC = "rbac.authorization.k8s.io/v1"
FLOWCONTROL = "flowcontrol.apiserver.k8s.io/v1"
#: The student's ClusterRoleBinding, and the name of their FlowSchema and priority level.
OWNER_BINDING = "kubelab:sandbox-owner"
STUDENT_FLOW = "kubelab-sandbox-student"
#: Upstream's rule: a FlowSchema matching before ``global-default`` (9900) and the ``service-accounts``
#: (9000) one, after the system's own (the kube-system ones are at most 900).
STUDENT_PRECEDENCE = 1000
#: The student's share of the API server's seats, and their queue: one queue (a single flow, theirs)
#: holding this many requests before the next is refused.
STUDENT_SHARES = 10
STUDENT_QUEUE_LENGTH = 20


def _metadata(name: str) -> dict[str, Any]:
    return {"name": name, "labels": {gateway.SANDBOX_GUARDRAIL_LABEL: "true"}}


def _user(name: str) -> dict[str, str]:
    return {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": name}


def checker_objects() -> list[dict[str, Any]]:
    """The checker's read-only ClusterRole and its binding to ``kubelab:checker``."""
    role = {
        "apiVersion": RBAC,
        "kind": "ClusterRole",
        "metadata": _metadata(CHECKER),
        "rules": [
            {"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list", "watch"]},
            {"nonResourceURLs": ["*"], "verbs": ["get"]},
        ],
    }
    binding = {
        "apiVersion": RBAC,
        "kind": "ClusterRoleBinding",
        "metadata": _metadata(CHECKER),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": CHECKER},
        "subjects": [_user(CHECKER)],
    }
    return [role, binding]


def student_objects(*, student: str) -> list[dict[str, Any]]:
    """The student's admin binding, and their FlowSchema with its priority level."""
    binding = {
        "apiVersion": RBAC,
        "kind": "ClusterRoleBinding",
        "metadata": _metadata(OWNER_BINDING),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [_user(student)],
    }
    level = {
        "apiVersion": FLOWCONTROL,
        "kind": "PriorityLevelConfiguration",
        "metadata": _metadata(STUDENT_FLOW),
        "spec": {
            "type": "Limited",
            "limited": {
                "nominalConcurrencyShares": STUDENT_SHARES,
                "lendablePercent": 0,
                "limitResponse": {
                    "type": "Queue",
                    "queuing": {"queues": 1, "handSize": 1, "queueLengthLimit": STUDENT_QUEUE_LENGTH},
                },
            },
        },
    }
    everything = {
        "verbs": ["*"],
        "apiGroups": ["*"],
        "resources": ["*"],
        "namespaces": ["*"],
        "clusterScope": True,
    }
    schema = {
        "apiVersion": FLOWCONTROL,
        "kind": "FlowSchema",
        "metadata": _metadata(STUDENT_FLOW),
        "spec": {
            "priorityLevelConfiguration": {"name": STUDENT_FLOW},
            "matchingPrecedence": STUDENT_PRECEDENCE,
            "distinguisherMethod": {"type": "ByUser"},
            "rules": [
                {
                    "subjects": [{"kind": "User", "user": {"name": student}}],
                    "resourceRules": [everything],
                    "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                }
            ],
        },
    }
    return [binding, level, schema]


def sandbox_objects(*, student: str) -> list[dict[str, Any]]:
    """Everything a sandbox of ``student`` (``student:<username>``) is given, in the order applied."""
    return [*checker_objects(), *student_objects(student=student)]


__all__ = [
    "OWNER_BINDING",
    "STUDENT_FLOW",
    "checker_objects",
    "sandbox_objects",
    "student_objects",
]
