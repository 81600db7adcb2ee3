"""The authorizer's question and answer: request *attributes* in, a *decision* out.

An authorizer never sees HTTP. It is asked about **attributes** (upstream ``authorizer.Attributes``):
the user, the verb, and either a resource (API group, resource, subresource, namespace, name) or a
non-resource path. ``GET /api/v1/namespaces/default/pods`` by alice is "may alice *list* *pods* in API
group "" in namespace *default*?"; ``GET /version`` is "may alice *get* the path */version*?".

Its answer is a **decision**: *allow*, *deny* or *no opinion*, and a reason. RBAC and the Node
authorizer never deny: they allow or have no opinion, and the chain (:class:`Chain`, upstream's
``union`` authorizer) asks the next one. A request nobody allows is refused with 403, whose message
says what was asked (``forbidden_message``, upstream ``responsewriters.forbiddenMessage``) followed
by the authorizers' reasons, if they gave any::

    pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default"

Kubelab's decisions also carry an explanation for students (which binding, role and rule allowed it,
or why none did), which goes on the trace as ``rbac.decision``.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from controlplane.identity import UserInfo


@dataclass(frozen=True, slots=True)
class Attributes:
    """What is asked: upstream's ``authorizer.AttributesRecord``."""

    user: UserInfo
    verb: str
    resource_request: bool = True
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    #: The request path (what a non-resource rule matches).
    path: str = ""
    #: The request's raw ``fieldSelector`` (the Node authorizer reads ``spec.nodeName=<node>``).
    field_selector: str = ""

    @property
    def combined_resource(self) -> str:
        """``pods`` or ``pods/status``: what a rule's ``resources`` entry must name."""
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource

    def describe(self) -> str:
        """The request in words, for explanations: ``list pods in namespace "default"``."""
        if not self.resource_request:
            return f'{self.verb} path "{self.path}"'
        what = self.combined_resource + (f".{self.api_group}" if self.api_group else "")
        named = f' "{self.name}"' if self.name else ""
        where = f' in namespace "{self.namespace}"' if self.namespace else " cluster-wide"
        return f"{self.verb} {what}{named}{where}"


def forbidden_message(attrs: Attributes) -> str:
    """Upstream's ``forbiddenMessage`` (apiserver ``endpoints/handlers/responsewriters/errors.go``)."""
    user = attrs.user.username
    if not attrs.resource_request:
        return f'User "{user}" cannot {attrs.verb} path "{attrs.path}"'
    resource = attrs.combined_resource
    if attrs.namespace:
        return (
            f'User "{user}" cannot {attrs.verb} resource "{resource}" in API group "{attrs.api_group}" '
            f'in the namespace "{attrs.namespace}"'
        )
    return (
        f'User "{user}" cannot {attrs.verb} resource "{resource}" in API group "{attrs.api_group}" '
        "at the cluster scope"
    )


class Verdict(enum.Enum):
    """upstream ``authorizer.Decision``."""

    ALLOW = "Allow"
    DENY = "Deny"
    NO_OPINION = "NoOpinion"


@dataclass(frozen=True, slots=True)
class Decision:
    """An authorizer's answer, with the explanation Kubelab shows students.

    ``reason`` is upstream's: what a SubjectAccessReview's ``status.reason`` says and what follows the
    403 message (``RBAC: allowed by ClusterRoleBinding "x" of ClusterRole "y" to User "z"``; empty for
    an RBAC refusal). The other fields are the explanation: the authorizer that decided, and for RBAC
    the binding, role and rule that allowed it, or ``considered``: each binding that names the user or
    one of its groups, and why none of its rules fit.
    """

    verdict: Verdict
    reason: str = ""
    authorizer: str = ""
    #: The decision in words for students (the trace's ``reason``): upstream's reason when it has one.
    explanation: str = ""
    binding: str | None = None
    role: str | None = None
    rule: Mapping[str, Any] | None = None
    considered: Sequence[Mapping[str, str]] = field(default_factory=tuple)
    #: Errors met while resolving rules (a binding to a role that does not exist): upstream's
    #: ``evaluationError`` of a SubjectAccessReview.
    errors: Sequence[str] = field(default_factory=tuple)

    @property
    def allowed(self) -> bool:
        return self.verdict is Verdict.ALLOW


class Authorizer(Protocol):
    """Anything that can answer: the Node authorizer, RBAC, the chain of both."""

    def authorize(self, attrs: Attributes) -> Decision: ...


class Chain:
    """Upstream's ``union`` authorizer: ask each in turn; the first *allow* or *deny* decides.

    If every one has no opinion, their reasons are joined (upstream joins them with newlines) and the
    last explanation that considered any binding is kept, so that a refusal still says why.
    """

    def __init__(self, *authorizers: Authorizer) -> None:
        self.authorizers = authorizers

    def authorize(self, attrs: Attributes) -> Decision:
        reasons: list[str] = []
        explanations: list[str] = []
        considered: list[Mapping[str, str]] = []
        errors: list[str] = []
        deciders: list[str] = []
        for authorizer in self.authorizers:
            decision = authorizer.authorize(attrs)
            if decision.verdict is not Verdict.NO_OPINION:
                return decision
            if decision.reason:
                reasons.append(decision.reason)
            if decision.explanation:
                explanations.append(decision.explanation)
            considered.extend(decision.considered)
            errors.extend(decision.errors)
            if decision.authorizer:
                deciders.append(decision.authorizer)
        return Decision(
            Verdict.NO_OPINION,
            "\n".join(reasons),
            ",".join(deciders),
            "; ".join(explanations),
            considered=tuple(considered),
            errors=tuple(errors),
        )


__all__ = ["Attributes", "Authorizer", "Chain", "Decision", "Verdict", "forbidden_message"]
