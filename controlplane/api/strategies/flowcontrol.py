"""FlowSchemas and PriorityLevelConfigurations: the configuration of API Priority and Fairness.

The API server shares its seats (how many requests it works on at once) among **priority levels**.
A **PriorityLevelConfiguration** is one level: ``type: Exempt`` (never queued, never refused: only
the mandatory ``exempt`` level) or ``type: Limited``, with a share of the seats
(``limited.nominalConcurrencyShares``, ``lendablePercent``, ``borrowingLimitPercent``) and what
happens to a request that finds no seat free (``limitResponse``): ``Reject`` answers 429 at once,
``Queue`` waits in one of ``queues`` queues, a flow being dealt ``handSize`` of them by shuffle
sharding, each holding at most ``queueLengthLimit`` requests. A **FlowSchema** says which requests go
to which level: ``rules`` on the user, group or ServiceAccount and on the verb and resource or URL,
tried in order of ``matchingPrecedence`` (1 to 10000, lowest first; 1 is the ``exempt`` FlowSchema's
alone), with a ``distinguisherMethod`` (``ByUser``, ``ByNamespace``) splitting its requests into flows.
The API server reads them on every request (``controlplane/apiserver/flowcontrol``).

The rules keep every object usable by that machinery, so a mistake is refused when it is written
instead of breaking request handling later:

- the fields of a union agree with its discriminator: a ``Limited`` level has ``limited`` and no
  ``exempt``; a ``Reject`` response has no ``queuing``, a ``Queue`` response has one (so a merge patch
  that turns ``type`` to ``Reject`` must also set ``queuing`` to null); a subject of ``kind: User``
  has ``user`` and neither ``group`` nor ``serviceAccount``;
- ``"*"`` in verbs, API groups, resources, namespaces or URLs means "all" and must stand alone;
- the queues can be dealt: ``handSize`` at most ``queues``, and a deal needs at most 60 bits of hash
  (``handSize x log2(queues)``);
- the mandatory objects keep the spec the API server made them with (the ``exempt`` level's
  ``spec.exempt`` excepted, which an administrator may tune): without ``exempt`` and ``catch-all``,
  system:masters could be throttled and some requests would match nothing.

Defaults are the ``v1`` ones: ``matchingPrecedence`` 1000; a ``Limited`` level's
``nominalConcurrencyShares`` 30 only when it is absent (an explicit 0 is kept: since 1.29 a level
may have no seats of its own and live on borrowed ones) and ``lendablePercent`` 0; queuing 64
queues, hand size 8, queue length 50 (each when absent or 0); an ``exempt`` section's shares and
lendable percent 0. Both kinds have a ``status`` subresource (``Dangling`` and ``ConcurrencyShared``
conditions, written by the API server), and ``metadata.generation`` counts changes to their spec.

Upstream: ``pkg/apis/flowcontrol/validation/validation.go``, ``pkg/apis/flowcontrol/v1/defaults.go``,
``pkg/registry/flowcontrol/flowschema/strategy.go``,
``pkg/registry/flowcontrol/prioritylevelconfiguration/strategy.go``, the mandatory objects of
``k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap/default.go`` (as ``pkg/apis/flowcontrol/internalbootstrap``
hands them to validation).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping
from typing import Any, Final

from controlplane.api.meta import Object
from controlplane.api.strategies.common import (
    CoreKindStrategy,
    as_dict,
    as_list,
    as_str,
    child,
    go_json,
    go_string_slice,
    index,
    invalid_go,
    is_int,
    not_supported_go,
    spec_of,
)
from controlplane.api.validation import (
    FieldError,
    duplicate,
    forbidden,
    invalid,
    is_dns1123_label,
    is_dns1123_subdomain,
    required,
    validate_object_meta_update,
)
from controlplane.identity import AUTHENTICATED, SYSTEM_MASTERS, UNAUTHENTICATED

# -- the values upstream knows -----------------------------------------------------------------------

EXEMPT: Final = "exempt"
CATCH_ALL: Final = "catch-all"
#: ``SetDefaults_FlowSchemaSpec`` and ``SetDefaults_*PriorityLevelConfiguration`` (``v1/defaults.go``).
DEFAULT_MATCHING_PRECEDENCE: Final = 1000
DEFAULT_NOMINAL_CONCURRENCY_SHARES: Final = 30
DEFAULT_QUEUES: Final = 64
DEFAULT_HAND_SIZE: Final = 8
DEFAULT_QUEUE_LENGTH_LIMIT: Final = 50
#: ``flowcontrol.FlowSchemaMaxMatchingPrecedence`` and ``priorityLevelConfigurationQueuingMaxQueues``.
MAX_MATCHING_PRECEDENCE: Final = 10000
MAX_QUEUES: Final = 10 * 1000 * 1000
#: ``shufflesharding.MaxHashBits``: the hash a deal of a hand may use.
MAX_HASH_BITS: Final = 60
#: The annotation that only ``v1beta3`` clients used (to keep a share of 0); never on a stored object.
PRESERVE_ZERO_CONCURRENCY_SHARES_KEY: Final = "flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares"

# ``sets.NewString(...).List()``: upstream lists the supported values sorted.
SUPPORTED_VERBS: Final = sorted(
    ["get", "list", "create", "update", "delete", "deletecollection", "patch", "watch", "proxy"]
)
SUBJECT_KINDS: Final = ["Group", "ServiceAccount", "User"]
DISTINGUISHER_METHODS: Final = ["ByNamespace", "ByUser"]
PRIORITY_LEVEL_TYPES: Final = ["Exempt", "Limited"]
LIMIT_RESPONSE_TYPES: Final = ["Queue", "Reject"]

_NS_ERR_INTRO: Final = "each member of this list must be '*' or a DNS-1123 label; "
_ALL: Final = "*"

# -- the mandatory objects ---------------------------------------------------------------------------
# The API server creates these at start and restores them when they change
# (``controlplane/apiserver/flowcontrol/bootstrap.py`` builds its objects from these specs); validation
# compares against them, as upstream's against ``internalbootstrap``.

_EVERY_RESOURCE: Final[Object] = {
    "verbs": [_ALL],
    "apiGroups": [_ALL],
    "resources": [_ALL],
    "clusterScope": True,
    "namespaces": [_ALL],
}
_EVERY_URL: Final[Object] = {"verbs": [_ALL], "nonResourceURLs": [_ALL]}


def _everything(*groups: str) -> list[Object]:
    return [
        {
            "subjects": [{"kind": "Group", "group": {"name": name}} for name in groups],
            "resourceRules": [copy.deepcopy(_EVERY_RESOURCE)],
            "nonResourceRules": [copy.deepcopy(_EVERY_URL)],
        }
    ]


#: The mandatory levels' specs, by name: ``exempt`` (never queued) and ``catch-all`` (a few seats,
#: Reject), as ``v1`` defaulting leaves them.
MANDATORY_PRIORITY_LEVEL_SPECS: Final[Mapping[str, Object]] = {
    EXEMPT: {"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}},
    CATCH_ALL: {
        "type": "Limited",
        "limited": {
            "nominalConcurrencyShares": 5,
            "lendablePercent": 0,
            "limitResponse": {"type": "Reject"},
        },
    },
}

#: The mandatory FlowSchemas' specs, by name: ``exempt`` (system:masters, matched first) and
#: ``catch-all`` (everyone, matched last).
MANDATORY_FLOW_SCHEMA_SPECS: Final[Mapping[str, Object]] = {
    EXEMPT: {
        "priorityLevelConfiguration": {"name": EXEMPT},
        "matchingPrecedence": 1,
        "rules": _everything(SYSTEM_MASTERS),
    },
    CATCH_ALL: {
        "priorityLevelConfiguration": {"name": CATCH_ALL},
        "matchingPrecedence": MAX_MATCHING_PRECEDENCE,
        "distinguisherMethod": {"type": "ByUser"},
        "rules": _everything(UNAUTHENTICATED, AUTHENTICATED),
    },
}

# -- defaults (v1/defaults.go, as zz_generated.defaults.go calls them) ------------------------------


def _unset(value: Any) -> bool:
    """An ``int32`` field Go decodes to 0: absent, null or 0."""
    return value is None or (is_int(value) and value == 0)


def default_flow_schema_spec(spec: dict[str, Any]) -> None:
    """``SetDefaults_FlowSchemaSpec``."""
    if _unset(spec.get("matchingPrecedence")):
        spec["matchingPrecedence"] = DEFAULT_MATCHING_PRECEDENCE


def default_priority_level_spec(spec: dict[str, Any]) -> None:
    """``SetObjectDefaults_PriorityLevelConfiguration``: each section only when it is present.

    ``nominalConcurrencyShares`` is a pointer in ``v1``: absent means 30, and an explicit 0 stays 0.
    """
    limited = spec.get("limited")
    if isinstance(limited, dict):
        if limited.get("nominalConcurrencyShares") is None:
            limited["nominalConcurrencyShares"] = DEFAULT_NOMINAL_CONCURRENCY_SHARES
        if limited.get("lendablePercent") is None:
            limited["lendablePercent"] = 0
        queuing = as_dict(limited.get("limitResponse")).get("queuing")
        if isinstance(queuing, dict):
            for name, value in (
                ("handSize", DEFAULT_HAND_SIZE),
                ("queues", DEFAULT_QUEUES),
                ("queueLengthLimit", DEFAULT_QUEUE_LENGTH_LIMIT),
            ):
                if _unset(queuing.get(name)):
                    queuing[name] = value
    exempt = spec.get("exempt")
    if isinstance(exempt, dict):
        for name in ("nominalConcurrencyShares", "lendablePercent"):
            if exempt.get(name) is None:
                exempt[name] = 0


# -- the internal types, as upstream compares and prints them --------------------------------------
# Upstream validates the *internal* types (``pkg/apis/flowcontrol/types.go``): Go structs without JSON
# tags. A mandatory object's spec is compared with ``apiequality.Semantic.DeepEqual`` (a missing field
# is its zero value, a nil pointer is not a pointer to 0, a nil slice equals an empty one), and a field
# error whose value is a struct prints it as JSON with the Go field names. So specs are turned into
# that form: every field present, in the structs' order, None for a nil pointer or slice.


def _int32(value: Any) -> int:
    return value if is_int(value) else 0


def _pointer(value: Any) -> int | None:
    return value if is_int(value) else None


def _strings(value: Any) -> list[str] | None:
    return [as_str(v) for v in value] if isinstance(value, list) else None


def _structs(value: Any, convert: Callable[[Any], dict[str, Any]]) -> list[dict[str, Any]] | None:
    return [convert(v) for v in value] if isinstance(value, list) else None


def _named(value: Any) -> dict[str, Any] | None:
    return None if value is None else {"Name": as_str(as_dict(value).get("name"))}


def _go_subject(subject: Any) -> dict[str, Any]:
    subject = as_dict(subject)
    account = subject.get("serviceAccount")
    return {
        "Kind": as_str(subject.get("kind")),
        "User": _named(subject.get("user")),
        "Group": _named(subject.get("group")),
        "ServiceAccount": None
        if account is None
        else {
            "Namespace": as_str(as_dict(account).get("namespace")),
            "Name": as_str(as_dict(account).get("name")),
        },
    }


def _go_resource_rule(rule: Any) -> dict[str, Any]:
    rule = as_dict(rule)
    return {
        "Verbs": _strings(rule.get("verbs")),
        "APIGroups": _strings(rule.get("apiGroups")),
        "Resources": _strings(rule.get("resources")),
        "ClusterScope": rule.get("clusterScope") is True,
        "Namespaces": _strings(rule.get("namespaces")),
    }


def _go_non_resource_rule(rule: Any) -> dict[str, Any]:
    rule = as_dict(rule)
    return {"Verbs": _strings(rule.get("verbs")), "NonResourceURLs": _strings(rule.get("nonResourceURLs"))}


def _go_rule(rule: Any) -> dict[str, Any]:
    rule = as_dict(rule)
    return {
        "Subjects": _structs(rule.get("subjects"), _go_subject),
        "ResourceRules": _structs(rule.get("resourceRules"), _go_resource_rule),
        "NonResourceRules": _structs(rule.get("nonResourceRules"), _go_non_resource_rule),
    }


def go_flow_schema_spec(spec: Any) -> dict[str, Any]:
    """``flowcontrol.FlowSchemaSpec``."""
    spec = as_dict(spec)
    method = spec.get("distinguisherMethod")
    return {
        "PriorityLevelConfiguration": {
            "Name": as_str(as_dict(spec.get("priorityLevelConfiguration")).get("name"))
        },
        "MatchingPrecedence": _int32(spec.get("matchingPrecedence")),
        "DistinguisherMethod": None if method is None else {"Type": as_str(as_dict(method).get("type"))},
        "Rules": _structs(spec.get("rules"), _go_rule),
    }


def go_priority_level_spec(spec: Any) -> dict[str, Any]:
    """``flowcontrol.PriorityLevelConfigurationSpec``."""
    spec = as_dict(spec)
    limited, exempt = spec.get("limited"), spec.get("exempt")
    go_limited: dict[str, Any] | None = None
    if limited is not None:
        limited = as_dict(limited)
        response = as_dict(limited.get("limitResponse"))
        queuing = response.get("queuing")
        go_limited = {
            "NominalConcurrencyShares": _int32(limited.get("nominalConcurrencyShares")),
            "LimitResponse": {
                "Type": as_str(response.get("type")),
                "Queuing": None
                if queuing is None
                else {
                    "Queues": _int32(as_dict(queuing).get("queues")),
                    "HandSize": _int32(as_dict(queuing).get("handSize")),
                    "QueueLengthLimit": _int32(as_dict(queuing).get("queueLengthLimit")),
                },
            },
            "LendablePercent": _pointer(limited.get("lendablePercent")),
            "BorrowingLimitPercent": _pointer(limited.get("borrowingLimitPercent")),
        }
    return {
        "Type": as_str(spec.get("type")),
        "Limited": go_limited,
        "Exempt": None
        if exempt is None
        else {
            "NominalConcurrencyShares": _pointer(as_dict(exempt).get("nominalConcurrencyShares")),
            "LendablePercent": _pointer(as_dict(exempt).get("lendablePercent")),
        },
    }


def _nil_empty(value: Any) -> Any:
    """``Semantic.DeepEqual``'s view: an empty slice is the nil one."""
    if isinstance(value, dict):
        return {k: _nil_empty(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_nil_empty(v) for v in value] if value else None
    return value


def semantically_equal(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Two internal-form specs compared as ``apiequality.Semantic.DeepEqual`` does."""
    return bool(_nil_empty(a) == _nil_empty(b))


def _defaulted(spec: Object, default: Callable[[dict[str, Any]], None]) -> Object:
    spec = copy.deepcopy(spec)
    default(spec)
    return spec


#: The mandatory specs in internal form (``internalbootstrap``: the ``v1`` objects, defaulted).
_MANDATORY_FLOW_SCHEMAS: Final = {
    name: go_flow_schema_spec(_defaulted(spec, default_flow_schema_spec))
    for name, spec in MANDATORY_FLOW_SCHEMA_SPECS.items()
}
_MANDATORY_PRIORITY_LEVELS: Final = {
    name: go_priority_level_spec(_defaulted(spec, default_priority_level_spec))
    for name, spec in MANDATORY_PRIORITY_LEVEL_SPECS.items()
}

# -- FlowSchemas -------------------------------------------------------------------------------------


def validate_flow_schema_spec(name: str, spec: Any, path: str = "spec") -> list[FieldError]:
    """``ValidateFlowSchemaSpec``."""
    spec = as_dict(spec)
    errors: list[FieldError] = []
    precedence_path = child(path, "matchingPrecedence")
    precedence = _int32(spec.get("matchingPrecedence"))
    if precedence <= 0:
        errors.append(invalid(precedence_path, precedence, "must be a positive value"))
    if precedence > MAX_MATCHING_PRECEDENCE:
        errors.append(
            invalid(precedence_path, precedence, f"must not be greater than {MAX_MATCHING_PRECEDENCE}")
        )
    if precedence == 1 and name != EXEMPT:
        errors.append(
            invalid(
                precedence_path, precedence, "only the schema named 'exempt' may have matchingPrecedence 1"
            )
        )
    method = spec.get("distinguisherMethod")
    if method is not None and as_dict(method).get("type") not in DISTINGUISHER_METHODS:
        # Upstream passes the whole FlowDistinguisherMethod as the value: it prints {"Type":"..."}.
        errors.append(
            not_supported_go(
                child(child(path, "distinguisherMethod"), "type"),
                go_json({"Type": as_str(as_dict(method).get("type"))}),
                DISTINGUISHER_METHODS,
                method,
            )
        )
    level_path = child(child(path, "priorityLevelConfiguration"), "name")
    level = as_str(as_dict(spec.get("priorityLevelConfiguration")).get("name"))
    if level:
        errors += [invalid(level_path, level, msg) for msg in is_dns1123_subdomain(level)]
    else:
        errors.append(required(level_path, "must reference a priority level"))
    for i, rule in enumerate(as_list(spec.get("rules"))):
        errors += validate_policy_rules_with_subjects(rule, index(child(path, "rules"), i))
    return errors


def validate_policy_rules_with_subjects(rule: Any, path: str) -> list[FieldError]:
    """``ValidateFlowSchemaPolicyRulesWithSubjects``."""
    rule = as_dict(rule)
    errors: list[FieldError] = []
    subjects = as_list(rule.get("subjects"))
    if subjects:
        for i, subject in enumerate(subjects):
            errors += validate_subject(subject, index(child(path, "subjects"), i))
    else:
        errors.append(required(child(path, "subjects"), "subjects must contain at least one value"))
    resource_rules = as_list(rule.get("resourceRules"))
    non_resource_rules = as_list(rule.get("nonResourceRules"))
    if not resource_rules and not non_resource_rules:
        errors.append(
            required(path, "at least one of resourceRules and nonResourceRules has to be non-empty")
        )
    for i, resource_rule in enumerate(resource_rules):
        errors += validate_resource_policy_rule(resource_rule, index(child(path, "resourceRules"), i))
    for i, non_resource_rule in enumerate(non_resource_rules):
        errors += validate_non_resource_policy_rule(
            non_resource_rule, index(child(path, "nonResourceRules"), i)
        )
    return errors


def _forbidden_members(subject: Mapping[str, Any], path: str, allowed: str) -> list[FieldError]:
    """The members of the Subject union other than ``allowed``, in upstream's order for each kind."""
    messages = {
        "user": "user is forbidden when subject kind is not 'User'",
        "group": "group is forbidden when subject kind is not 'Group'",
        "serviceAccount": "serviceAccount is forbidden when subject kind is not 'ServiceAccount'",
    }
    order = {
        "serviceAccount": ("user", "group"),
        "user": ("serviceAccount", "group"),
        "group": ("serviceAccount", "user"),
    }[allowed]
    return [forbidden(child(path, m), messages[m]) for m in order if subject.get(m) is not None]


def validate_subject(subject: Any, path: str) -> list[FieldError]:
    """``ValidateFlowSchemaSubject``: the member named by ``kind`` is required, the others forbidden."""
    subject = as_dict(subject)
    kind = subject.get("kind")
    errors: list[FieldError] = []
    if kind == "ServiceAccount":
        errors += _validate_service_account_subject(
            subject.get("serviceAccount"), child(path, "serviceAccount")
        )
        errors += _forbidden_members(subject, path, "serviceAccount")
    elif kind == "User":
        errors += _validate_named_subject(subject.get("user"), child(path, "user"), "user", "User")
        errors += _forbidden_members(subject, path, "user")
    elif kind == "Group":
        errors += _validate_named_subject(subject.get("group"), child(path, "group"), "group", "Group")
        errors += _forbidden_members(subject, path, "group")
    else:
        kind = as_str(kind)
        errors.append(not_supported_go(child(path, "kind"), go_json(kind), SUBJECT_KINDS, kind))
    return errors


def _validate_service_account_subject(account: Any, path: str) -> list[FieldError]:
    """``ValidateServiceAccountSubject``: ``name`` may be ``*`` (every ServiceAccount of the namespace)."""
    if account is None:
        return [required(path, "serviceAccount is required when subject kind is 'ServiceAccount'")]
    account = as_dict(account)
    errors: list[FieldError] = []
    name = as_str(account.get("name"))
    if not name:
        errors.append(required(child(path, "name")))
    elif name != _ALL:
        errors += [invalid(child(path, "name"), name, msg) for msg in is_dns1123_subdomain(name)]
    namespace = as_str(account.get("namespace"))
    if namespace:
        errors += [invalid(child(path, "namespace"), namespace, msg) for msg in is_dns1123_label(namespace)]
    else:
        errors.append(required(child(path, "namespace"), "must specify namespace for service account"))
    return errors


def _validate_named_subject(member: Any, path: str, field: str, kind: str) -> list[FieldError]:
    """``ValidateUserSubject`` and ``ValidateGroupSubject``: any non-empty name (``*``: all)."""
    if member is None:
        return [required(path, f"{field} is required when subject kind is '{kind}'")]
    if not as_str(as_dict(member).get("name")):
        return [required(child(path, "name"))]
    return []


def _validate_verbs(verbs: list[Any], path: str) -> list[FieldError]:
    if not verbs:
        return [required(path, "verbs must contain at least one value")]
    if _ALL in verbs:
        if len(verbs) > 1:
            return [
                invalid_go(
                    path, go_string_slice(verbs), "if '*' is present, must not specify other verbs", verbs
                )
            ]
        return []
    if not {as_str(v) for v in verbs} <= set(SUPPORTED_VERBS):
        return [not_supported_go(path, go_string_slice(verbs), SUPPORTED_VERBS, verbs)]
    return []


def _alone(values: list[Any], path: str, what: str) -> list[FieldError]:
    """``"*"`` among other values."""
    if len(values) > 1 and _ALL in values:
        return [
            invalid_go(
                path, go_string_slice(values), f"if '*' is present, must not specify other {what}", values
            )
        ]
    return []


def validate_resource_policy_rule(rule: Any, path: str) -> list[FieldError]:
    """``ValidateFlowSchemaResourcePolicyRule``."""
    rule = as_dict(rule)
    errors = _validate_verbs(as_list(rule.get("verbs")), child(path, "verbs"))
    groups = as_list(rule.get("apiGroups"))
    if not groups:
        errors.append(required(child(path, "apiGroups"), "resource rules must supply at least one api group"))
    else:
        errors += _alone(groups, child(path, "apiGroups"), "api groups")
    resources = as_list(rule.get("resources"))
    if not resources:
        errors.append(required(child(path, "resources"), "resource rules must supply at least one resource"))
    else:
        errors += _alone(resources, child(path, "resources"), "resources")
    namespaces = as_list(rule.get("namespaces"))
    namespaces_path = child(path, "namespaces")
    if not namespaces and rule.get("clusterScope") is not True:
        errors.append(
            required(
                namespaces_path,
                "resource rules that are not cluster scoped must supply at least one namespace",
            )
        )
    elif _ALL in namespaces:
        errors += _alone(namespaces, namespaces_path, "namespaces")
    else:
        for i, namespace in enumerate(namespaces):
            name = as_str(namespace)
            errors += [
                invalid(index(namespaces_path, i), name, _NS_ERR_INTRO + msg)
                for msg in is_dns1123_label(name)
            ]
    return errors


def validate_non_resource_policy_rule(rule: Any, path: str) -> list[FieldError]:
    """``ValidateFlowSchemaNonResourcePolicyRule``."""
    rule = as_dict(rule)
    errors = _validate_verbs(as_list(rule.get("verbs")), child(path, "verbs"))
    urls = as_list(rule.get("nonResourceURLs"))
    urls_path = child(path, "nonResourceURLs")
    if not urls:
        errors.append(required(urls_path, "nonResourceURLs must contain at least one value"))
    elif _ALL in urls:
        errors += _alone(urls, urls_path, "non-resource URLs")
    else:
        for i, url in enumerate(urls):
            problem = validate_non_resource_url_path(as_str(url))
            if problem:
                errors.append(invalid(index(urls_path, i), as_str(url), problem))
    return errors


def validate_non_resource_url_path(path: str) -> str | None:
    """``ValidateNonResourceURLPath``: an absolute path; a ``*`` only as the last segment (``/healthz/*``)."""
    if not path:
        return "must not be empty"
    if path == "/":
        return None
    if not path.startswith("/"):
        return "must start with slash"
    if " " in path:
        return "must not contain white-space"
    if "//" in path:
        return "must not contain double slash"
    wildcards = path.count(_ALL)
    if wildcards > 1 or (wildcards == 1 and path[-2:] != "/*"):
        return "wildcard can only do suffix matching"
    return None


def _validate_conditions(status: Any, path: str = "status") -> list[FieldError]:
    """``ValidateFlowSchemaStatus`` and ``ValidatePriorityLevelConfigurationStatus`` (the same rules)."""
    errors: list[FieldError] = []
    seen: set[str] = set()
    for i, condition in enumerate(as_list(as_dict(status).get("conditions"))):
        condition_path = index(child(path, "conditions"), i)
        kind = as_str(as_dict(condition).get("type"))
        if kind in seen:
            errors.append(duplicate(child(condition_path, "type"), kind))
        seen.add(kind)
        if not kind:
            errors.append(required(child(condition_path, "type"), "must not be empty"))
    return errors


def _validate_mandatory_flow_schema(name: str, spec: Any) -> list[FieldError]:
    """``ValidateFlowSchema``'s check of ``exempt`` and ``catch-all``."""
    mandatory = _MANDATORY_FLOW_SCHEMAS.get(name)
    have = go_flow_schema_spec(spec)
    if mandatory is None or semantically_equal(have, mandatory):
        return []
    return [invalid_go("spec", go_json(have), f"spec of '{name}' must equal the fixed value", spec)]


class _FlowControlStrategy(CoreKindStrategy):
    """What both kinds' strategies share: a status subresource, a generation that counts spec changes
    (compared as Go values, so a defaulted field written out is no change), and a status write that
    keeps the whole old metadata (``*StatusStrategy.PrepareForUpdate`` of both upstream strategies)."""

    status_subresource = True
    tracks_generation = True
    status_resets_metadata = ("labels", "annotations", "finalizers", "ownerReferences")
    #: The kind's spec defaulting, and its spec as the Go value upstream compares.
    default_spec: staticmethod[[dict[str, Any]], None]
    go_spec: staticmethod[[Any], Any]

    def default(self, obj: Object) -> None:
        self.default_spec(spec_of(obj))

    def spec_changed(self, obj: Object, old: Object) -> bool:
        return not semantically_equal(self.go_spec(obj.get("spec")), self.go_spec(old.get("spec")))

    def validate_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidateFlowSchemaUpdate`` and ``ValidatePriorityLevelConfigurationUpdate`` are the
        create rules; then the metadata rules."""
        return self.validate(obj, namespaced=namespaced) + validate_object_meta_update(
            obj["metadata"], old["metadata"]
        )

    def validate_status_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidateFlowSchemaStatusUpdate``, ``ValidatePriorityLevelConfigurationStatusUpdate``."""
        return validate_object_meta_update(obj["metadata"], old["metadata"]) + _validate_conditions(
            obj.get("status")
        )


class FlowSchemaStrategy(_FlowControlStrategy):
    """FlowSchemas (``pkg/registry/flowcontrol/flowschema/strategy.go``)."""

    default_spec = staticmethod(default_flow_schema_spec)
    go_spec = staticmethod(go_flow_schema_spec)

    def validate(self, obj: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidateFlowSchema``: metadata, spec, the mandatory objects' spec, status."""
        name = as_str(obj["metadata"].get("name"))
        errors = self.validate_meta(obj, namespaced=namespaced)
        errors += validate_flow_schema_spec(name, obj.get("spec"))
        errors += _validate_mandatory_flow_schema(name, obj.get("spec"))
        return errors + _validate_conditions(obj.get("status"))


# -- PriorityLevelConfigurations ---------------------------------------------------------------------


def validate_priority_level_spec(name: str, spec: Any, path: str = "spec") -> list[FieldError]:
    """``ValidatePriorityLevelConfigurationSpec``: ``type`` says which of ``limited``/``exempt`` is set."""
    spec = as_dict(spec)
    errors: list[FieldError] = []
    kind = as_str(spec.get("type"))
    type_path = child(path, "type")
    if (name == EXEMPT) != (kind == "Exempt"):
        errors.append(
            invalid_go(type_path, go_json(kind), "must be 'Exempt' if and only if `name` is 'exempt'", kind)
        )
    limited, exempt = spec.get("limited"), spec.get("exempt")
    if kind == "Exempt":
        if limited is not None:
            errors.append(forbidden(child(path, "limited"), "must be nil if the type is not Limited"))
        if exempt is not None:
            errors += _validate_exempt(as_dict(exempt), child(path, "exempt"))
    elif kind == "Limited":
        if exempt is not None:
            errors.append(forbidden(child(path, "exempt"), "must be nil if the type is Limited"))
        if limited is None:
            errors.append(required(child(path, "limited"), "must not be empty when type is Limited"))
        else:
            errors += _validate_limited(as_dict(limited), child(path, "limited"))
    else:
        errors.append(not_supported_go(type_path, go_json(kind), PRIORITY_LEVEL_TYPES, kind))
    return errors


def _percent(value: Any, path: str) -> list[FieldError]:
    if is_int(value) and not 0 <= value <= 100:
        return [invalid(path, value, "must be between 0 and 100, inclusive")]
    return []


def _validate_limited(limited: Mapping[str, Any], path: str) -> list[FieldError]:
    """``ValidateLimitedPriorityLevelConfiguration``: 0 shares are allowed (a level of borrowed seats)."""
    errors: list[FieldError] = []
    shares = _int32(limited.get("nominalConcurrencyShares"))
    if shares < 0:
        errors.append(
            invalid(child(path, "nominalConcurrencyShares"), shares, "must be a non-negative integer")
        )
    errors += _validate_limit_response(as_dict(limited.get("limitResponse")), child(path, "limitResponse"))
    errors += _percent(limited.get("lendablePercent"), child(path, "lendablePercent"))
    borrowing = limited.get("borrowingLimitPercent")
    if is_int(borrowing) and borrowing < 0:
        errors.append(
            invalid(
                child(path, "borrowingLimitPercent"),
                borrowing,
                "if specified, must be a non-negative integer",
            )
        )
    return errors


def _validate_exempt(exempt: Mapping[str, Any], path: str) -> list[FieldError]:
    """``ValidateExemptPriorityLevelConfiguration``."""
    errors: list[FieldError] = []
    shares = exempt.get("nominalConcurrencyShares")
    if is_int(shares) and shares < 0:
        errors.append(
            invalid(child(path, "nominalConcurrencyShares"), shares, "must be a non-negative integer")
        )
    return errors + _percent(exempt.get("lendablePercent"), child(path, "lendablePercent"))


def _validate_limit_response(response: Mapping[str, Any], path: str) -> list[FieldError]:
    """``ValidateLimitResponse``. (Its messages say "Limited" where they mean "Queue": upstream's words.)"""
    kind = as_str(response.get("type"))
    queuing = response.get("queuing")
    if kind == "Reject":
        if queuing is not None:
            return [
                forbidden(child(path, "queuing"), "must be nil if limited.limitResponse.type is not Limited")
            ]
        return []
    if kind == "Queue":
        if queuing is None:
            return [
                required(child(path, "queuing"), "must not be empty if limited.limitResponse.type is Limited")
            ]
        return _validate_queuing(as_dict(queuing), child(path, "queuing"))
    return [not_supported_go(child(path, "type"), go_json(kind), LIMIT_RESPONSE_TYPES, kind)]


def required_entropy_bits(deck_size: int, hand_size: int) -> int:
    """``shufflesharding.RequiredEntropyBits``: bits of hash a deal of ``hand_size`` of ``deck_size`` uses."""
    return math.ceil(math.log2(deck_size) * hand_size)


def _validate_queuing(queuing: Mapping[str, Any], path: str) -> list[FieldError]:
    """``ValidatePriorityLevelQueuingConfiguration``: the queues must be dealable by shuffle sharding."""
    errors: list[FieldError] = []
    length = _int32(queuing.get("queueLengthLimit"))
    if length <= 0:
        errors.append(invalid(child(path, "queueLengthLimit"), length, "must be positive"))
    queues = _int32(queuing.get("queues"))
    if queues <= 0:
        errors.append(invalid(child(path, "queues"), queues, "must be positive"))
    elif queues > MAX_QUEUES:
        errors.append(invalid(child(path, "queues"), queues, f"must not be greater than {MAX_QUEUES}"))
    hand = _int32(queuing.get("handSize"))
    hand_path = child(path, "handSize")
    if hand <= 0:
        errors.append(invalid(hand_path, hand, "must be positive"))
    elif hand > queues:
        errors.append(invalid(hand_path, hand, f"should not be greater than queues ({queues})"))
    elif required_entropy_bits(queues, hand) > MAX_HASH_BITS:
        errors.append(
            invalid(
                hand_path,
                hand,
                f"required entropy bits of deckSize {queues} and handSize {hand} should not be greater "
                f"than {MAX_HASH_BITS}",
            )
        )
    return errors


def _validate_mandatory_priority_level(name: str, spec: Any) -> list[FieldError]:
    """``ValidateIfMandatoryPriorityLevelConfigurationObject``: the ``exempt`` level's ``spec.exempt``
    (its shares and lendable percent) is the administrator's to tune, nothing else of either is."""
    mandatory = _MANDATORY_PRIORITY_LEVELS.get(name)
    if mandatory is None:
        return []
    have = go_priority_level_spec(spec)
    if name == EXEMPT:
        if not semantically_equal(dict(have, Exempt=mandatory["Exempt"]), mandatory):
            detail = f"spec of '{name}' except the 'spec.exempt' field must equal the fixed value"
            return [invalid_go("spec", go_json(have), detail, spec)]
        return []
    if not semantically_equal(have, mandatory):
        return [invalid_go("spec", go_json(have), f"spec of '{name}' must equal the fixed value", spec)]
    return []


class PriorityLevelConfigurationStrategy(_FlowControlStrategy):
    """PriorityLevelConfigurations (``pkg/registry/flowcontrol/prioritylevelconfiguration/strategy.go``)."""

    default_spec = staticmethod(default_priority_level_spec)
    go_spec = staticmethod(go_priority_level_spec)

    def validate(self, obj: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidatePriorityLevelConfiguration``: metadata, spec, the mandatory levels' spec, status."""
        meta = obj["metadata"]
        name = as_str(meta.get("name"))
        errors = self.validate_meta(obj, namespaced=namespaced)
        # The v1beta3 round-trip annotation is its conversion's business; a stored object never has it.
        if PRESERVE_ZERO_CONCURRENCY_SHARES_KEY in as_dict(meta.get("annotations")):
            errors.append(
                forbidden(
                    "metadata.annotations",
                    f"annotation '{PRESERVE_ZERO_CONCURRENCY_SHARES_KEY}' is forbidden",
                )
            )
        errors += validate_priority_level_spec(name, obj.get("spec"))
        errors += _validate_mandatory_priority_level(name, obj.get("spec"))
        return errors + _validate_conditions(obj.get("status"))


__all__ = [
    "CATCH_ALL",
    "EXEMPT",
    "MANDATORY_FLOW_SCHEMA_SPECS",
    "MANDATORY_PRIORITY_LEVEL_SPECS",
    "FlowSchemaStrategy",
    "PriorityLevelConfigurationStrategy",
    "default_flow_schema_spec",
    "default_priority_level_spec",
    "go_flow_schema_spec",
    "go_priority_level_spec",
    "required_entropy_bits",
    "semantically_equal",
    "validate_flow_schema_spec",
    "validate_non_resource_policy_rule",
    "validate_non_resource_url_path",
    "validate_policy_rules_with_subjects",
    "validate_priority_level_spec",
    "validate_resource_policy_rule",
    "validate_subject",
]
