"""ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding: admission rules written as objects.

A policy says **what** must hold, as CEL expressions (``controlplane/api/cel.py``), and for which
requests (``matchConstraints``); a binding says **where** and **what happens** when it does not:
which policy, optionally narrowed to some namespaces or objects (``matchResources``), and the
``validationActions``: ``Deny`` (the request is refused), ``Warn`` (the client gets a warning) or
``Audit`` (the audit event records it). Neither does anything alone: a policy without a binding is
never evaluated. The API server runs them in its own process (``ValidatingAdmissionPolicy`` plugin,
``controlplane/apiserver/admission/validatingadmissionpolicy.py``), with no webhook to call.

This module defaults and validates the two kinds as upstream does
(``pkg/apis/admissionregistration/v1/defaults.go``, ``validation/validation.go``): every expression
must compile, the rules must name operations, groups, versions and resources, ``Deny`` and ``Warn``
exclude each other. Kubelab simplification: parameter resources (``paramKind``, ``paramRef``) are
refused with a clear message, as are ``auditAnnotations``.
"""

from __future__ import annotations

import re
from typing import Any, Final

from controlplane.api import cel, selectors
from controlplane.api.meta import Object
from controlplane.api.strategies.common import KindStrategy, as_dict, as_str
from controlplane.api.validation import FieldError, duplicate, forbidden, invalid, not_supported, required

FAILURE_POLICIES: Final = ["Fail", "Ignore"]
OPERATIONS: Final = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"]
SCOPES: Final = ["*", "Cluster", "Namespaced"]
#: ``Validation.reason``: the Status reason (and so the HTTP code) of a refusal.
REASONS: Final = ["Forbidden", "Invalid", "RequestEntityTooLarge", "Unauthorized"]
ACTIONS: Final = ["Audit", "Deny", "Warn"]
MATCH_POLICIES: Final = ["Equivalent", "Exact"]
_NOT_SUPPORTED = "parameter resources are not supported by Kubelab's API server"
#: ``isCELIdentifier``: a variable's name is what expressions call it (``variables.<name>``).
_CEL_IDENTIFIER = re.compile(r"^[_a-zA-Z][_a-zA-Z0-9]*$")
_CEL_RESERVED = frozenset(
    [
        "true",
        "false",
        "null",
        "in",
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    ]
)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _compiles(path: str, expression: Any, *, missing: str = "") -> list[FieldError]:
    if not isinstance(expression, str) or not expression.strip():
        return [required(path, missing)]
    try:
        cel.compile(expression)
    except cel.CompileError as error:
        return [invalid(path, expression, f"compilation failed: {error}")]
    return []


def default_match_resources(match: dict[str, Any]) -> None:
    """``SetDefaults_MatchResources``: ``matchPolicy: Equivalent``, empty selectors, rule scope ``*``."""
    match.setdefault("matchPolicy", "Equivalent")
    match.setdefault("namespaceSelector", {})
    match.setdefault("objectSelector", {})
    for field in ("resourceRules", "excludeResourceRules"):
        for rule in _list(match.get(field)):
            if isinstance(rule, dict):
                rule.setdefault("scope", "*")


def validate_rules(path: str, rules: Any, *, needed: bool) -> list[FieldError]:
    """``validateNamedRuleWithOperations``: each rule names operations, groups, versions and resources."""
    errors: list[FieldError] = []
    if needed and not _list(rules):
        return [required(path, "")]
    for i, raw in enumerate(_list(rules)):
        rule = as_dict(raw)
        at = f"{path}[{i}]"
        for field in ("operations", "apiGroups", "apiVersions", "resources"):
            if not _list(rule.get(field)):
                errors.append(required(f"{at}.{field}", ""))
        for j, operation in enumerate(_list(rule.get("operations"))):
            if operation not in OPERATIONS:
                errors.append(not_supported(f"{at}.operations[{j}]", operation, OPERATIONS))
        scope = rule.get("scope", "*")
        if scope not in SCOPES:
            errors.append(not_supported(f"{at}.scope", scope, SCOPES))
    return errors


def validate_match_resources(path: str, match: Any, *, needed: bool) -> list[FieldError]:
    if match is None:
        return [required(path, "")] if needed else []
    match = as_dict(match)
    errors = validate_rules(f"{path}.resourceRules", match.get("resourceRules"), needed=needed)
    errors += validate_rules(f"{path}.excludeResourceRules", match.get("excludeResourceRules"), needed=False)
    policy = match.get("matchPolicy")
    if policy is not None and policy not in MATCH_POLICIES:
        errors.append(not_supported(f"{path}.matchPolicy", policy, MATCH_POLICIES))
    for field in ("namespaceSelector", "objectSelector"):
        try:
            selectors.label_selector_from_object(as_dict(match.get(field)))
        except selectors.SelectorError as error:
            errors.append(invalid(f"{path}.{field}", match.get(field), str(error)))
    return errors


class ValidatingAdmissionPolicyStrategy(KindStrategy):
    """``pkg/registry/admissionregistration/validatingadmissionpolicy/strategy.go``."""

    tracks_generation = True
    status_subresource = True

    def default(self, obj: Object) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        spec.setdefault("failurePolicy", "Fail")
        if isinstance(spec.get("matchConstraints"), dict):
            default_match_resources(spec["matchConstraints"])

    def validate(self, obj: Object, *, namespaced: bool) -> list[FieldError]:
        errors = self.validate_meta(obj, namespaced=namespaced)
        spec = as_dict(obj.get("spec"))
        if spec.get("paramKind") is not None:
            errors.append(forbidden("spec.paramKind", _NOT_SUPPORTED))
        if spec.get("auditAnnotations"):
            errors.append(
                forbidden("spec.auditAnnotations", "audit annotations are not supported by Kubelab")
            )
        failure = spec.get("failurePolicy")
        if failure not in FAILURE_POLICIES:
            errors.append(not_supported("spec.failurePolicy", failure, FAILURE_POLICIES))
        errors += validate_match_resources("spec.matchConstraints", spec.get("matchConstraints"), needed=True)
        names: set[str] = set()
        for i, raw in enumerate(_list(spec.get("matchConditions"))):
            item, at = as_dict(raw), f"spec.matchConditions[{i}]"
            errors += _compiles(f"{at}.expression", item.get("expression"))
            name = as_str(item.get("name"))
            if not name:
                errors.append(required(f"{at}.name", ""))
            elif name in names:
                errors.append(duplicate(f"{at}.name", name))
            names.add(name)
        for i, raw in enumerate(_list(spec.get("variables"))):
            item, at = as_dict(raw), f"spec.variables[{i}]"
            name = as_str(item.get("name"))
            if not name.strip():
                errors.append(required(f"{at}.name", "name is not specified"))
            elif not _CEL_IDENTIFIER.match(name) or name in _CEL_RESERVED:
                errors.append(invalid(f"{at}.name", name, "name is not a valid CEL identifier"))
            errors += _compiles(
                f"{at}.expression", item.get("expression"), missing="expression is not specified"
            )
        validations = _list(spec.get("validations"))
        if not validations:
            why = "validations or auditAnnotations must contain at least one item"
            errors += [required("spec.validations", why), required("spec.auditAnnotations", why)]
        for i, raw in enumerate(validations):
            validation, at = as_dict(raw), f"spec.validations[{i}]"
            errors += _compiles(
                f"{at}.expression", validation.get("expression"), missing="expression is not specified"
            )
            message_expression = validation.get("messageExpression")
            if isinstance(message_expression, str) and message_expression and not message_expression.strip():
                errors.append(
                    invalid(f"{at}.messageExpression", message_expression, "must be non-empty if specified")
                )
            elif message_expression:
                errors += _compiles(f"{at}.messageExpression", message_expression)
            message = validation.get("message")
            if isinstance(message, str) and message and not message.strip():
                errors.append(invalid(f"{at}.message", message, "message must be non-empty if specified"))
            elif isinstance(message, str) and ("\n" in message.strip() or "\r" in message.strip()):
                errors.append(invalid(f"{at}.message", message, "message must not contain line breaks"))
            reason = validation.get("reason")
            if reason is not None and reason not in REASONS:
                errors.append(not_supported(f"{at}.reason", reason, REASONS))
        return errors


class ValidatingAdmissionPolicyBindingStrategy(KindStrategy):
    """``pkg/registry/admissionregistration/validatingadmissionpolicybinding/strategy.go``."""

    tracks_generation = True

    def default(self, obj: Object) -> None:
        spec = obj.get("spec")
        if isinstance(spec, dict) and isinstance(spec.get("matchResources"), dict):
            default_match_resources(spec["matchResources"])

    def validate(self, obj: Object, *, namespaced: bool) -> list[FieldError]:
        errors = self.validate_meta(obj, namespaced=namespaced)
        spec = as_dict(obj.get("spec"))
        if not as_str(spec.get("policyName")):
            errors.append(required("spec.policyName", ""))
        if spec.get("paramRef") is not None:
            errors.append(forbidden("spec.paramRef", _NOT_SUPPORTED))
        errors += validate_match_resources("spec.matchResources", spec.get("matchResources"), needed=False)
        actions = _list(spec.get("validationActions"))
        for i, action in enumerate(actions):
            if action not in ACTIONS:
                errors.append(not_supported(f"spec.validationActions[{i}]", action, ACTIONS))
            if action in actions[:i]:
                errors.append(duplicate(f"spec.validationActions[{i}]", action))
        if "Deny" in actions and "Warn" in actions:
            errors.append(
                invalid(
                    "spec.validationActions",
                    actions,
                    "must not contain both Deny and Warn (repeating the same validation failure information"
                    " in the API response and headers serves no purpose)",
                )
            )
        if not actions:
            errors.append(required("spec.validationActions", "at least one validation action is required"))
        return errors


__all__ = ["ValidatingAdmissionPolicyBindingStrategy", "ValidatingAdmissionPolicyStrategy"]
