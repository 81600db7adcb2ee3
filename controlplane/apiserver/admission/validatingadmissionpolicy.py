"""ValidatingAdmissionPolicy: admission rules as objects, checked by the API server itself.

A webhook is a server of your own that the API server must call for every matching request; a
**ValidatingAdmissionPolicy** is the same kind of rule written as CEL expressions
(``controlplane/api/cel.py``) in an object, which the API server evaluates in its own process
(KEP-3488). For each ``ValidatingAdmissionPolicyBinding`` (``controlplane/api/strategies/
admissionpolicies.py`` describes both kinds), in name order:

1. the binding's policy must exist, and the request must match the policy's ``matchConstraints``
   and the binding's ``matchResources`` (rules, ``excludeResourceRules``, namespace and object
   selectors: the same matching as webhooks, ``webhook.py``);
2. every ``matchConditions`` expression must be true, or the binding does not apply;
3. the ``variables`` are computed, then each ``validations`` expression. One that is false fails
   with its ``messageExpression``'s value, else its ``message``, else ``failed expression: <it>``;
   one that cannot be evaluated (a missing field) fails too, unless the policy's ``failurePolicy`` is
   ``Ignore``;
4. a failure does what the binding's ``validationActions`` say: ``Deny`` refuses the request with the
   validation's ``reason`` (default ``Invalid``, 422) and ``<resource> "<name>" is forbidden:
   ValidatingAdmissionPolicy '<policy>' with binding '<binding>' denied request: <message>``;
   ``Warn`` adds a warning for the client; ``Audit`` an annotation on the request's audit event.

Expressions see ``object`` (null on a delete), ``oldObject`` (null on a create), ``request`` (the
admission request: kind, resource, name, namespace, operation, userInfo, dryRun), ``namespaceObject``
(the object's Namespace, null for a cluster-scoped object), ``variables`` and ``params`` (always
null: parameter resources are not supported here). The policies' and bindings' own kinds are never
checked, so a policy cannot lock out the way to fix it.

Upstream: apiserver ``pkg/admission/plugin/policy/validating`` (``dispatcher.go``, ``validator.go``,
``plugin.go``) and ``pkg/admission/plugin/policy/matching``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from controlplane.api import cel, selectors
from controlplane.apiserver import errors
from controlplane.apiserver.admission.attributes import Attributes, Object, labels_of
from controlplane.apiserver.admission.chain import ClusterView, Plugin, Scope
from controlplane.apiserver.admission.webhook import (
    Rule,
    parse_rules,
    parse_selector,
    review_request,
    selectors_match,
)

PLUGIN: Final = "ValidatingAdmissionPolicy"
GROUP: Final = "admissionregistration.k8s.io"
#: ``Validation.reason`` to HTTP code (``validating/dispatcher.go`` ``reasonToCode``).
CODES: Final = {"Unauthorized": 401, "Forbidden": 403, "RequestEntityTooLarge": 413, "Invalid": 422}
#: The audit annotation of failures under the ``Audit`` action.
AUDIT_KEY: Final = "validation.policy.admission.k8s.io/validation_failure"


# -- the policies, read ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Match:
    """``MatchResources``: which requests a policy, or a binding, is about."""

    rules: tuple[Rule, ...]
    exclude: tuple[Rule, ...]
    namespace_selector: selectors.LabelSelector
    object_selector: selectors.LabelSelector

    def matches(self, a: Attributes, namespace_labels: Mapping[str, str] | None) -> bool:
        if self.rules and not any(rule.matches(a) for rule in self.rules):
            return False
        if any(rule.matches(a) for rule in self.exclude):
            return False
        return selectors_match(self.namespace_selector, self.object_selector, a, namespace_labels)


def parse_match(raw: Any) -> Match:
    match = raw if isinstance(raw, dict) else {}
    namespaces, _ = parse_selector(match.get("namespaceSelector"))
    objects, _ = parse_selector(match.get("objectSelector"))
    return Match(
        parse_rules(match.get("resourceRules")),
        parse_rules(match.get("excludeResourceRules")),
        namespaces,
        objects,
    )


@dataclass(frozen=True, slots=True)
class Validation:
    program: cel.Program
    message: str
    message_program: cel.Program | None
    reason: str


@dataclass(frozen=True, slots=True)
class Policy:
    """A stored ``ValidatingAdmissionPolicy``, its expressions compiled."""

    name: str
    match: Match
    fail_open: bool
    conditions: tuple[tuple[str, cel.Program], ...]
    variables: tuple[tuple[str, cel.Program], ...]
    validations: tuple[Validation, ...]


@dataclass(frozen=True, slots=True)
class Binding:
    name: str
    policy: str
    match: Match | None
    actions: frozenset[str]


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _named(raw: Any) -> tuple[tuple[str, cel.Program], ...]:
    return tuple(
        (str(item.get("name") or ""), cel.compile(str(item.get("expression") or "")))
        for item in _list(raw)
        if isinstance(item, dict)
    )


def parse_policy(obj: Object) -> Policy:
    """A stored policy (validated when written, so its expressions compile)."""
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    validations = []
    for raw in _list(spec.get("validations")):
        item = raw if isinstance(raw, dict) else {}
        message_expression = item.get("messageExpression")
        validations.append(
            Validation(
                cel.compile(str(item.get("expression") or "")),
                str(item.get("message") or ""),
                cel.compile(message_expression) if isinstance(message_expression, str) else None,
                str(item.get("reason") or "Invalid"),
            )
        )
    return Policy(
        name=str(obj["metadata"]["name"]),
        match=parse_match(spec.get("matchConstraints")),
        fail_open=spec.get("failurePolicy") == "Ignore",
        conditions=_named(spec.get("matchConditions")),
        variables=_named(spec.get("variables")),
        validations=tuple(validations),
    )


def parse_binding(obj: Object) -> Binding:
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    match = spec.get("matchResources")
    return Binding(
        name=str(obj["metadata"]["name"]),
        policy=str(spec.get("policyName") or ""),
        match=parse_match(match) if isinstance(match, dict) else None,
        actions=frozenset(str(a) for a in _list(spec.get("validationActions"))),
    )


class Policies:
    """The policies and bindings of the watch cache, parsed again only when they change (as
    ``webhookclient.Configurations``: a cluster without bindings pays one ``len`` per request)."""

    def __init__(
        self, policies: Callable[[], Mapping[str, Any]], bindings: Callable[[], Mapping[str, Any]]
    ) -> None:
        self._policies = policies
        self._bindings = bindings
        self._signature: tuple[int, int, int, int] = (0, 0, 0, 0)
        self._pairs: list[tuple[Binding, Policy]] = []

    def any_bound(self) -> bool:
        return bool(self._bindings())

    def pairs(self) -> list[tuple[Binding, Policy]]:
        """Each binding whose policy exists, with it, bindings in name order."""
        policies, bindings = self._policies(), self._bindings()
        signature = (
            len(policies),
            max((c.revision for c in policies.values()), default=0),
            len(bindings),
            max((c.revision for c in bindings.values()), default=0),
        )
        if signature != self._signature:
            parsed: dict[str, Policy] = {}
            for cached in policies.values():
                try:
                    policy = parse_policy(cached.obj)
                except cel.CompileError:
                    continue  # written before validation compiled it: never evaluated
                parsed[policy.name] = policy
            chosen = sorted((parse_binding(c.obj) for c in bindings.values()), key=lambda b: b.name)
            self._pairs = [(b, parsed[b.policy]) for b in chosen if b.policy in parsed]
            self._signature = signature
        return self._pairs


# -- evaluation (pure) ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Failure:
    """A validation that did not pass: what the actions report."""

    message: str
    reason: str


def request_of(a: Attributes) -> Object:
    """The ``request`` variable: the admission request a webhook would receive (``review_request``),
    with the strings it leaves out when empty present, as CEL's typed request has them."""
    request = review_request(a, "")["request"]
    assert isinstance(request, dict)
    return {**request, "namespace": a.namespace, "subResource": a.subresource}


def evaluate(policy: Policy, a: Attributes, namespace: Object | None) -> list[Failure] | None:
    """The failures of ``policy`` for ``a``; None if a match condition says it does not apply."""
    context: dict[str, Any] = {
        "object": a.object,
        "oldObject": a.old_object,
        "request": request_of(a),
        "namespaceObject": namespace,
        "params": None,
        "variables": {},
    }
    failures: list[Failure] = []
    for name, program in policy.conditions:
        try:
            if program.evaluate(context) is not True:
                return None
        except cel.EvalError as error:
            if not policy.fail_open:
                failures.append(Failure(f"failed to evaluate match condition '{name}': {error}", "Invalid"))
            return failures or None
    variables: dict[str, Any] = {}
    for name, program in policy.variables:
        try:
            variables[name] = program.evaluate({**context, "variables": variables})
        except cel.EvalError:
            continue  # an expression that uses it fails in its turn
    context["variables"] = variables
    for validation in policy.validations:
        try:
            passed = validation.program.evaluate(context)
        except cel.EvalError as error:
            if not policy.fail_open:
                expression = validation.program.expression
                failures.append(
                    Failure(f"expression '{expression}' resulted in error: {error}", validation.reason)
                )
            continue
        if passed is True:
            continue
        failures.append(Failure(_message(validation, context), validation.reason))
    return failures


def _message(validation: Validation, context: Mapping[str, Any]) -> str:
    if validation.message_program is not None:
        try:
            text = validation.message_program.evaluate(context)
        except cel.EvalError:
            text = None
        if isinstance(text, str) and text.strip() and "\n" not in text:
            return text
    return validation.message or f"failed expression: {validation.program.expression}"


# -- the plugin ------------------------------------------------------------------------------------------


class ValidatingAdmissionPolicy(Plugin):
    name = PLUGIN
    validating = True

    def __init__(self, policies: Policies) -> None:
        self.policies = policies

    def handles(self, a: Attributes) -> bool:
        return a.group != GROUP and self.policies.any_bound()

    async def validate(self, a: Attributes, cluster: ClusterView, scope: Scope) -> None:
        pairs = self.policies.pairs()
        if not pairs:
            return
        namespace = (
            cluster.cached("", "namespaces", "", a.namespace) if a.namespaced and a.namespace else None
        )
        labels = labels_of(namespace) if namespace is not None else None
        audits: list[dict[str, Any]] = []
        for binding, policy in pairs:
            if not policy.match.matches(a, labels):
                continue
            if binding.match is not None and not binding.match.matches(a, labels):
                continue
            for failure in evaluate(policy, a, namespace) or []:
                said = f"ValidatingAdmissionPolicy '{policy.name}' with binding '{binding.name}'"
                if "Deny" in binding.actions:
                    denied = errors.forbidden(
                        a.resource, a.group, a.object_name(), f"{said} denied request: {failure.message}"
                    )
                    raise errors.StatusError(
                        CODES.get(failure.reason, 422), failure.reason, denied.message, denied.details
                    )
                if "Warn" in binding.actions:
                    scope.warn(f"Validation failed for {said}: {failure.message}")
                if "Audit" in binding.actions:
                    audits.append(
                        {
                            "message": failure.message,
                            "policy": policy.name,
                            "binding": binding.name,
                            "validationActions": sorted(binding.actions),
                        }
                    )
        if audits:
            scope.annotations[AUDIT_KEY] = json.dumps(audits, separators=(",", ":"))


__all__ = ["PLUGIN", "Policies", "ValidatingAdmissionPolicy", "evaluate", "parse_binding", "parse_policy"]
