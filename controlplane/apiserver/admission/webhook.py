"""Dynamic admission webhooks: which webhooks a request goes to, what they are sent, what they answer.

Built-in plugins are compiled into the API server. **Webhooks** let anyone add admission logic of
their own without touching it: an HTTPS server that receives an ``AdmissionReview`` and answers
allowed or not (validating), or allowed with a JSON patch (mutating). The API server learns about
them from two kinds of objects (admissionregistration.k8s.io/v1)::

    kind: ValidatingWebhookConfiguration
    webhooks:
    - name: no-latest.kubelab.example           # unique, a domain name
      clientConfig: {url: "https://127.0.0.1:9443/validate", caBundle: <base64 PEM>}
      rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [pods]}]
      failurePolicy: Fail                       # or Ignore: what a call that fails means
      sideEffects: None                         # the webhook changes nothing elsewhere
      admissionReviewVersions: [v1]
      timeoutSeconds: 10                        # 1 to 30
      namespaceSelector: {matchLabels: {lab: webhooks}}
      objectSelector: {}

This module is the pure part (upstream: apiserver ``pkg/admission/plugin/webhook``): reading the
configurations into ``Webhook`` values, an index by resource so that a request for a resource no
webhook mentions costs one dictionary lookup, matching a request against ``rules``,
``namespaceSelector`` and ``objectSelector``, building the ``AdmissionReview`` request, checking the
answer, and the errors in upstream's words. ``webhookclient.py`` makes the HTTPS calls;
``mutatingwebhook.py`` and ``validatingwebhook.py`` run the two phases.

Kubelab calls a webhook at ``clientConfig.url`` only. A ``clientConfig.service`` reference would need
the API server to reach a Service's pods, which are simulated here and serve nothing; such a webhook
fails to be called (and ``failurePolicy`` decides what that means). ``matchPolicy: Equivalent`` is
the same as ``Exact`` here, because Kubelab serves each resource in one version only.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from controlplane.api import selectors
from controlplane.apiserver import errors
from controlplane.apiserver.admission.attributes import Attributes, Object, labels_of
from controlplane.trace import nodes

DEFAULT_TIMEOUT: Final = 10
MAX_TIMEOUT: Final = 30
FAIL: Final = "Fail"
IGNORE: Final = "Ignore"
NEVER: Final = "Never"
IF_NEEDED: Final = "IfNeeded"
#: ``sideEffects`` values that make a webhook safe to call on a dry run.
DRY_RUN_SAFE: Final = frozenset({"None", "NoneOnDryRun"})
REVIEW_API_VERSION: Final = "admission.k8s.io/v1"


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in _list(value))


@dataclass(frozen=True, slots=True)
class Rule:
    """One ``RuleWithOperations``."""

    operations: tuple[str, ...]
    api_groups: tuple[str, ...]
    api_versions: tuple[str, ...]
    resources: tuple[str, ...]
    scope: str = "*"

    def matches(self, a: Attributes) -> bool:
        """``rules.Matcher``: operation, group, version, resource (with subresource) and scope."""
        if "*" not in self.operations and a.operation not in self.operations:
            return False
        if "*" not in self.api_groups and a.group not in self.api_groups:
            return False
        if "*" not in self.api_versions and a.version not in self.api_versions:
            return False
        if not self._resource(a.resource, a.subresource):
            return False
        if self.scope == "Cluster":
            return not a.namespaced
        if self.scope == "Namespaced":
            return a.namespaced
        return True

    def _resource(self, resource: str, subresource: str) -> bool:
        for pattern in self.resources:
            if pattern == "*/*":
                return True
            base, slash, sub = pattern.partition("/")
            if base not in ("*", resource):
                continue
            if not slash:  # "pods" or "*": the resource itself, no subresource
                if not subresource:
                    return True
            elif subresource and sub in ("*", subresource):  # "pods/status", "pods/*", "*/status"
                return True
        return False


@dataclass(frozen=True, slots=True)
class Webhook:
    """One webhook of a configuration, with upstream's defaults filled in."""

    name: str
    configuration: str
    mutating: bool
    url: str | None
    ca_bundle: bytes | None
    rules: tuple[Rule, ...]
    failure_policy: str = FAIL
    side_effects: str = "None"
    timeout_seconds: int = DEFAULT_TIMEOUT
    reinvocation_policy: str = NEVER
    namespace_selector: selectors.LabelSelector = field(default_factory=selectors.LabelSelector.everything)
    object_selector: selectors.LabelSelector = field(default_factory=selectors.LabelSelector.everything)
    #: Why the configuration cannot be used as it stands (a bad selector, bad caBundle): every call
    #: of the webhook then fails, and ``failurePolicy`` decides.
    broken: str = ""

    @property
    def node(self) -> str:
        """The trace diagram's node for the webhook server."""
        return nodes.webhook(self.name)

    @property
    def fails_open(self) -> bool:
        return self.failure_policy == IGNORE


def parse_selector(value: Any) -> tuple[selectors.LabelSelector, str]:
    """A stored label selector (absent: everything), and what is wrong with it ("" if nothing)."""
    if value is None:
        return selectors.LabelSelector.everything(), ""
    try:
        return selectors.label_selector_from_object(_dict(value)), ""
    except selectors.SelectorError as error:
        return selectors.LabelSelector.nothing(), f"invalid label selector: {error}"


def parse_rules(raw: Any) -> tuple[Rule, ...]:
    """A list of ``RuleWithOperations`` (webhooks' ``rules``, policies' ``resourceRules``)."""
    return tuple(
        Rule(
            operations=_strings(r.get("operations")),
            api_groups=_strings(r.get("apiGroups")),
            api_versions=_strings(r.get("apiVersions")),
            resources=_strings(r.get("resources")),
            scope=str(r.get("scope") or "*"),
        )
        for r in (_dict(x) for x in _list(raw))
    )


def parse_webhook(raw: Mapping[str, Any], configuration: str, *, mutating: bool) -> Webhook:
    """A webhook of a stored configuration, defaulted as upstream's ``SetDefaults_*Webhook``."""
    problems: list[str] = []
    client = _dict(raw.get("clientConfig"))
    url = client.get("url") if isinstance(client.get("url"), str) else None
    ca: bytes | None = None
    if client.get("caBundle"):
        try:
            ca = base64.b64decode(str(client["caBundle"]), validate=True)
        except (binascii.Error, ValueError):
            problems.append("clientConfig.caBundle is not valid base64")
    if url is None:
        problems.append(
            "Kubelab calls webhooks at clientConfig.url only (clientConfig.service is not supported)"
        )
    rules = parse_rules(raw.get("rules"))
    timeout = raw.get("timeoutSeconds")
    if not isinstance(timeout, int) or isinstance(timeout, bool) or not 1 <= timeout <= MAX_TIMEOUT:
        timeout = DEFAULT_TIMEOUT
    namespace_selector, bad_ns = parse_selector(raw.get("namespaceSelector"))
    object_selector, bad_obj = parse_selector(raw.get("objectSelector"))
    problems += [p for p in (bad_ns, bad_obj) if p]
    return Webhook(
        name=str(raw.get("name") or ""),
        configuration=configuration,
        mutating=mutating,
        url=url,
        ca_bundle=ca,
        rules=rules,
        failure_policy=IGNORE if raw.get("failurePolicy") == IGNORE else FAIL,
        side_effects=str(raw.get("sideEffects") or "Unknown"),
        timeout_seconds=timeout,
        reinvocation_policy=IF_NEEDED if raw.get("reinvocationPolicy") == IF_NEEDED else NEVER,
        namespace_selector=namespace_selector,
        object_selector=object_selector,
        broken="; ".join(problems),
    )


def parse_configurations(configurations: Iterable[Object], *, mutating: bool) -> list[Webhook]:
    """Every webhook, configurations sorted by name (upstream's order), webhooks in their order."""
    ordered = sorted(configurations, key=lambda c: str(_dict(c.get("metadata")).get("name") or ""))
    return [
        parse_webhook(_dict(raw), str(_dict(c.get("metadata")).get("name") or ""), mutating=mutating)
        for c in ordered
        for raw in _list(c.get("webhooks"))
    ]


class WebhookIndex:
    """Webhooks by the (group, resource) their rules name; wildcard rules in every lookup."""

    def __init__(self, webhooks: list[Webhook]) -> None:
        self.webhooks = webhooks
        self._by_resource: dict[tuple[str, str], list[int]] = {}
        self._wildcard: list[int] = []
        for position, hook in enumerate(webhooks):
            keys: set[tuple[str, str]] = set()
            wildcard = False
            for rule in hook.rules:
                for group in rule.api_groups:
                    for resource in rule.resources:
                        base = resource.partition("/")[0]
                        if group == "*" or base == "*":
                            wildcard = True
                        else:
                            keys.add((group, base))
            if wildcard:
                self._wildcard.append(position)
            for key in keys:
                self._by_resource.setdefault(key, []).append(position)

    def candidates(self, group: str, resource: str) -> list[Webhook]:
        """The webhooks that may match a request for ``group``/``resource``, in order."""
        positions = self._by_resource.get((group, resource))
        if not positions and not self._wildcard:
            return []
        merged = sorted({*(positions or ()), *self._wildcard})
        return [self.webhooks[i] for i in merged]


def matches(hook: Webhook, a: Attributes, namespace_labels: Mapping[str, str] | None) -> bool:
    """Whether ``hook`` is called for ``a`` (``namespace_labels``: the namespace's, None if unknown).

    ``namespaceSelector`` looks at the labels of the object's namespace, or of the Namespace itself when
    the object is one; cluster-scoped objects always pass it. ``objectSelector`` passes if the new or
    the old object matches (upstream's ``object/matcher.go``).
    """
    if not any(rule.matches(a) for rule in hook.rules):
        return False
    return selectors_match(hook.namespace_selector, hook.object_selector, a, namespace_labels)


def selectors_match(
    namespace_selector: selectors.LabelSelector,
    object_selector: selectors.LabelSelector,
    a: Attributes,
    namespace_labels: Mapping[str, str] | None,
) -> bool:
    """A ``namespaceSelector`` and an ``objectSelector`` (of a webhook, a policy or a binding) for ``a``."""
    if a.group == "" and a.resource == "namespaces":
        if not namespace_selector.matches(labels_of(a.object or a.old_object)):
            return False
    elif a.namespaced and not namespace_selector.matches(namespace_labels or {}):
        return False
    if a.object is None and a.old_object is None:
        return True
    return any(object_selector.matches(labels_of(obj)) for obj in (a.object, a.old_object) if obj is not None)


# -- AdmissionReview ------------------------------------------------------------------------------

OPTIONS_KINDS: Final = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}


def review_request(a: Attributes, uid: str) -> Object:
    """The AdmissionReview sent for ``a`` (``request/admissionreview.go``, ``CreateV1AdmissionReview``)."""
    kind = {"group": a.kind_group, "version": a.kind_version, "kind": a.kind}
    resource = {"group": a.group, "version": a.version, "resource": a.resource}
    request: Object = {
        "uid": uid,
        "kind": kind,
        "resource": resource,
        "requestKind": kind,
        "requestResource": resource,
        "name": a.object_name(),
        "operation": a.operation,
        "userInfo": a.user.to_json(),
        "object": a.object,
        "oldObject": a.old_object,
        "dryRun": a.dry_run,
    }
    if a.subresource:
        request["subResource"] = a.subresource
        request["requestSubResource"] = a.subresource
    if a.namespace:
        request["namespace"] = a.namespace
    options_kind = OPTIONS_KINDS.get(a.operation)
    if options_kind is not None:
        request["options"] = {"kind": options_kind, "apiVersion": "meta.k8s.io/v1", **a.options}
    return {"kind": "AdmissionReview", "apiVersion": REVIEW_API_VERSION, "request": request}


class InvalidResponse(ValueError):
    """The webhook answered, but not with a usable AdmissionReview (``VerifyAdmissionResponse``)."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """A webhook's checked answer."""

    allowed: bool
    result: Object
    patch: list[Any] | None = None
    warnings: tuple[str, ...] = ()


def parse_response(body: bytes, uid: str, *, mutating: bool) -> Verdict:
    """Decode and check a webhook's answer; ``InvalidResponse`` in upstream's words if unusable."""
    try:
        review = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise InvalidResponse(f"couldn't get version/kind; json parse error: {error}") from None
    if not isinstance(review, dict):
        raise InvalidResponse("couldn't get version/kind; json parse error: not a JSON object")
    response = review.get("response")
    if not isinstance(response, dict):
        raise InvalidResponse("webhook response was absent")
    if response.get("uid") != uid:
        raise InvalidResponse(f'expected response.uid="{uid}", got "{response.get("uid") or ""}"')
    if review.get("apiVersion") != REVIEW_API_VERSION or review.get("kind") != "AdmissionReview":
        raise InvalidResponse(
            f"expected webhook response of {REVIEW_API_VERSION}, Kind=AdmissionReview, got "
            f"{review.get('apiVersion') or ''}, Kind={review.get('kind') or ''}"
        )
    allowed = response.get("allowed")
    if not isinstance(allowed, bool):
        raise InvalidResponse("response.allowed must be a boolean")
    patch_text = response.get("patch")
    patch_type = response.get("patchType") or ""
    if mutating and patch_text and not patch_type:
        raise InvalidResponse("webhook returned response.patch but not response.patchType")
    if mutating and not patch_text and patch_type:
        raise InvalidResponse("webhook returned response.patchType but not response.patch")
    if not mutating and patch_text:
        raise InvalidResponse("validating webhook may not return response.patch")
    if not mutating and patch_type:
        raise InvalidResponse("validating webhook may not return response.patchType")
    patch: list[Any] | None = None
    if patch_text:
        if patch_type != "JSONPatch":
            raise InvalidResponse(f'unsupported patch type "{patch_type}"')
        try:
            decoded = json.loads(base64.b64decode(str(patch_text), validate=True))
        except (binascii.Error, ValueError) as error:
            raise InvalidResponse(f"response.patch is not a base64-encoded JSON patch: {error}") from None
        if not isinstance(decoded, list):
            raise InvalidResponse("response.patch is not a JSON patch (a list of operations)")
        patch = decoded
    warnings = tuple(str(w) for w in _list(response.get("warnings")) if isinstance(w, str))
    return Verdict(allowed, _dict(response.get("status")), patch, warnings)


# -- errors ---------------------------------------------------------------------------------------


def denied(name: str, result: Mapping[str, Any]) -> errors.StatusError:
    """``webhookerrors.ToStatusErr``: the webhook's own Status, its message prefixed."""
    prefix = f'admission webhook "{name}" denied the request'
    if result.get("message"):
        message = f"{prefix}: {result['message']}"
    elif result.get("reason"):
        message = f"{prefix}: {result['reason']}"
    else:
        message = f"{prefix} without explanation"
    code = result.get("code")
    if not isinstance(code, int) or isinstance(code, bool) or not 400 <= code <= 599:
        code = 403
    details = result.get("details") if isinstance(result.get("details"), dict) else None
    return errors.StatusError(code, str(result.get("reason") or ""), message, details)


class CallFailed(Exception):
    """``ErrCallingWebhook``: the webhook could not be called, or did not answer usably."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f'failed calling webhook "{name}": {reason}')
        self.name = name
        self.reason = reason


def failing_closed(failure: CallFailed) -> errors.StatusError:
    """What the client gets when a ``failurePolicy: Fail`` webhook could not be called (upstream 500)."""
    return errors.internal_error(str(failure))


def dry_run_unsupported(name: str) -> errors.StatusError:
    """``webhookerrors.NewDryRunUnsupportedErr``."""
    return errors.bad_request(f'admission webhook "{name}" does not support dry run')


__all__ = [
    "DEFAULT_TIMEOUT",
    "CallFailed",
    "InvalidResponse",
    "Rule",
    "Verdict",
    "Webhook",
    "WebhookIndex",
    "denied",
    "dry_run_unsupported",
    "failing_closed",
    "matches",
    "parse_configurations",
    "parse_response",
    "review_request",
]
