"""SandboxGuardrails: Kubelab's own admission plugin, the limits of a student's sandbox cluster.

Every student administers a cluster of their own: RBAC makes them ``cluster-admin``. RBAC can only
grant, it has no rule that says "no" (``pkg/apis/rbac``: a request is allowed if any rule allows it),
so an administrator may do everything RBAC governs. A "no" for a request RBAC allows is admission's
job, as upstream's NodeRestriction refuses kubelets what RBAC lets every node do, and ResourceQuota
refuses a create that RBAC allows but the namespace has no room for. This plugin keeps four limits:

- **how much a sandbox may hold**: at most ``max_objects`` objects of every kind together
  (``KUBELAB_SANDBOX_MAX_OBJECTS``). A create past it is refused with 403 Forbidden, whoever makes it:
  the student's ``kubectl create`` in a loop as much as the ReplicaSet controller creating the pods
  of a Deployment with 100 000 replicas. The count comes from the API server's watch caches, which
  hold every current object of each resource: a create adds up some forty dictionary sizes instead of
  listing anything. A cache learns of a write when its watch event arrives, a moment after the
  store, so creates made in the same instant may pass the limit by the few still on their way;
  upstream's ResourceQuota closes that gap by writing its usage with optimistic concurrency, a store
  write per create, which a guardrail against runaway loops does not need.
- **the nodes are the chapter's**: only a node itself (registering its own Node, which
  NodeRestriction checks) may create a Node, and nobody may delete one. An extra Node would have no
  kubelet behind it, and a deleted one would take its kubelet's pods with it. Cordoning, draining,
  labels and taints are updates, and stay the student's to make.
- **the guardrails' own objects stay**: objects labelled ``kubelab.dev/guardrail`` (the student's
  own admin binding, the checker's read-only role, the FlowSchema and priority level that throttle
  the student) may be neither changed nor deleted. Without the binding the student would lock
  themselves out; without the others a chapter's checks or the lab's fairness would go.
- **flow control stays in force**: the student may create, change and delete FlowSchemas and
  PriorityLevelConfigurations (a chapter teaches it), except what would take their own requests out
  of their throttle. The mandatory ``exempt`` and ``catch-all`` objects, which upstream's API server
  restores whatever is done to them, may be neither changed nor deleted; nothing may be made exempt
  (no FlowSchema may send requests to an ``Exempt`` level, no level may become one); and a
  FlowSchema the student creates, or whose spec they change, must have a ``matchingPrecedence``
  greater than every guardrail FlowSchema's, so that the student's own FlowSchema still matches
  their requests first. (A level's share of the seats is still the student's to change: it moves
  seats between levels, but never past the server's total concurrency limit.)

``system:masters`` passes all four, as it passes RBAC: the lab's own sandbox manager and a staff
member's admin kubeconfig (``manage.py kubeconfig --user admin``) may still do anything.

The plugin is validating (it changes nothing) and refuses as upstream's plugins do, with
``admission.NewForbidden``'s message: ``configmaps "x" is forbidden: <why>``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from controlplane.apiserver.admission.attributes import (
    CREATE,
    DELETE,
    UPDATE,
    Attributes,
    forbidden,
    labels_of,
    section,
)
from controlplane.apiserver.admission.chain import ClusterView, Plugin, Scope
from controlplane.apiserver.flowcontrol import bootstrap
from controlplane.identity import NODE_USER_PREFIX, NODES, SYSTEM_MASTERS

#: The label that marks an object the lab made to keep the sandbox's guardrails.
GUARDRAIL_LABEL = "kubelab.dev/guardrail"
#: The lab's default object limit per sandbox.
DEFAULT_MAX_OBJECTS = 2000
FIXED_NODES = "the nodes of a sandbox are fixed"
FLOWCONTROL_GROUP = "flowcontrol.apiserver.k8s.io"


@dataclass(frozen=True, slots=True)
class GuardrailsConfig:
    """The limits of one sandbox cluster."""

    #: Objects of every kind the cluster may hold; a create past it is refused.
    max_objects: int = DEFAULT_MAX_OBJECTS

    def __post_init__(self) -> None:
        if self.max_objects < 1:
            raise ValueError(f"max_objects must be at least 1, not {self.max_objects}")


def object_limit_message(*, held: int, limit: int) -> str:
    """Why a create past the object limit is refused, in words a student can act on."""
    return (
        f"this sandbox already holds {held} objects, its limit is {limit} "
        "(KUBELAB_SANDBOX_MAX_OBJECTS): delete some, or reset the sandbox, before creating more"
    )


class SandboxGuardrails(Plugin):
    name = "SandboxGuardrails"
    validating = True

    def __init__(self, config: GuardrailsConfig, *, count_objects: Callable[[], int]) -> None:
        self.config = config
        #: How many objects the cluster holds now (the API server's watch caches, see the docstring).
        self.count_objects = count_objects

    def handles(self, a: Attributes) -> bool:
        # A subresource write stores no new object (pods/binding, pods/eviction, */status, */scale).
        if a.subresource or SYSTEM_MASTERS in a.user.groups:
            return False
        if _is_flow_control(a):
            return True
        if a.operation == CREATE:
            return True
        if a.operation == DELETE and _is_node(a):
            return True
        return a.operation in (UPDATE, DELETE) and GUARDRAIL_LABEL in labels_of(a.old_object)

    async def validate(self, a: Attributes, cluster: ClusterView, scope: Scope) -> None:
        if _is_flow_control(a) and GUARDRAIL_LABEL not in labels_of(a.old_object):
            # The sandbox's flow control is what keeps one student's runaway loop from slowing the
            # lab: the student may configure it, but not step out of their own throttle.
            why = _flow_control_refusal(a, cluster)
            if why is not None:
                raise forbidden(a, f"{why} (SandboxGuardrails)")
            if a.operation == CREATE:
                self._check_object_limit(a)
            return
        if a.operation == DELETE and _is_node(a):
            raise forbidden(a, f"{FIXED_NODES}: a Node cannot be deleted (SandboxGuardrails)")
        if a.operation in (UPDATE, DELETE):
            verb = "changed" if a.operation == UPDATE else "deleted"
            raise forbidden(
                a,
                f"it keeps this sandbox's guardrails (label {GUARDRAIL_LABEL}) and cannot be {verb} "
                "(SandboxGuardrails)",
            )
        if _is_node(a) and not _is_node_itself(a):
            raise forbidden(a, f"{FIXED_NODES}: only a node registers its own Node (SandboxGuardrails)")
        self._check_object_limit(a)

    def _check_object_limit(self, a: Attributes) -> None:
        held = self.count_objects()
        if held >= self.config.max_objects:
            raise forbidden(a, object_limit_message(held=held, limit=self.config.max_objects))


def _is_flow_control(a: Attributes) -> bool:
    return a.group == FLOWCONTROL_GROUP and a.operation in (CREATE, UPDATE, DELETE)


def _flow_control_refusal(a: Attributes, cluster: ClusterView) -> str | None:
    """Why a student's write of a FlowSchema or priority level would let them out of their throttle
    (None: it would not). Guardrail-labelled objects are refused before, like every labelled one."""
    name = a.object_name()
    if name in bootstrap.MANDATORY and a.operation in (UPDATE, DELETE):
        verb = "changed" if a.operation == UPDATE else "deleted"
        return (
            f"{name} is a mandatory flow-control object, which the API server keeps as it made it, "
            f"and it cannot be {verb} here"
        )
    if a.operation == DELETE:
        return None
    spec = section(a.object, "spec")
    if a.operation == UPDATE and spec == section(a.old_object, "spec"):
        return None  # labels, annotations: the matching and the limits stay as they are
    if a.resource == "prioritylevelconfigurations":
        if section(spec, "type") == "Exempt":
            return "a priority level of this sandbox cannot be of type Exempt"
        return None
    level = section(spec, "priorityLevelConfiguration", "name")
    if isinstance(level, str) and _is_exempt_level(level, cluster):
        return f"a FlowSchema of this sandbox cannot send requests to the Exempt priority level {level}"
    floor = _guardrail_precedence(cluster)
    precedence = section(spec, "matchingPrecedence")
    if floor is not None and (not isinstance(precedence, int) or precedence <= floor):
        return (
            f"a FlowSchema of this sandbox needs a matchingPrecedence greater than {floor}, so that "
            "the sandbox's own FlowSchemas still match first"
        )
    return None


def _is_exempt_level(name: str, cluster: ClusterView) -> bool:
    if name == bootstrap.EXEMPT:
        return True
    level = cluster.cached(FLOWCONTROL_GROUP, "prioritylevelconfigurations", "", name)
    return bool(section(level, "spec", "type") == "Exempt")


def _guardrail_precedence(cluster: ClusterView) -> int | None:
    """The highest matchingPrecedence of the guardrail FlowSchemas (None: there are none)."""
    precedences = [
        value
        for schema in cluster.cached_list(FLOWCONTROL_GROUP, "flowschemas", None)
        if GUARDRAIL_LABEL in labels_of(schema)
        and isinstance(value := section(schema, "spec", "matchingPrecedence"), int)
    ]
    return max(precedences, default=None)


def _is_node(a: Attributes) -> bool:
    return a.group == "" and a.resource == "nodes"


def _is_node_itself(a: Attributes) -> bool:
    """Whether a kubelet registers its own Node (``system:node:<name>`` in ``system:nodes``)."""
    return NODES in a.user.groups and a.user.username == f"{NODE_USER_PREFIX}{a.object_name()}"


__all__ = [
    "DEFAULT_MAX_OBJECTS",
    "GUARDRAIL_LABEL",
    "GuardrailsConfig",
    "SandboxGuardrails",
    "object_limit_message",
]
