"""Flow control: ``pkg/apis/flowcontrol/validation/validation_test.go``, ``v1/defaults.go``, the strategies.

The tables are upstream's ``TestFlowSchemaValidation`` and ``TestPriorityLevelConfigurationValidation``
cases (their names kept), run through the strategy the way the registry runs a create: ``v1``
defaults first, so a value upstream's internal-type test leaves nil (``lendablePercent``) prints as
the defaulted value a real API server shows. Then the same rules through a running API server.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from controlplane.api.strategies import FlowSchemaStrategy, PriorityLevelConfigurationStrategy
from controlplane.api.strategies.flowcontrol import (
    MANDATORY_FLOW_SCHEMA_SPECS,
    MANDATORY_PRIORITY_LEVEL_SPECS,
    validate_non_resource_url_path,
)
from controlplane.apiserver.flowcontrol import bootstrap
from controlplane.faults import hotloop
from controlplane.store.sqlite import SqliteStore
from courses.sandboxes.bootstrap import student_objects
from tests.controlplane.api.strategies import create, status_update, stored, update
from tests.support.apiserver import admin_api

FLOW_SCHEMAS = FlowSchemaStrategy()
LEVELS = PriorityLevelConfigurationStrategy()
API_VERSION = "flowcontrol.apiserver.k8s.io/v1"

RFC1123_SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
    "must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
RFC1123_LABEL = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
    "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
VERBS = '"create", "delete", "deletecollection", "get", "list", "patch", "proxy", "update", "watch"'


def flow_schema(name: str = "system-foo", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"priorityLevelConfiguration": {"name": "system-bar"}, "matchingPrecedence": 50}
    body.update(spec)
    return {"apiVersion": API_VERSION, "kind": "FlowSchema", "metadata": {"name": name}, "spec": body}


def rules(
    *subjects: dict[str, Any],
    resources: list[dict[str, Any]] | None = None,
    urls: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    rule: dict[str, Any] = {"subjects": list(subjects)}
    if resources is not None:
        rule["resourceRules"] = resources
    if urls is not None:
        rule["nonResourceRules"] = urls
    return [rule]


NOXU = {"kind": "User", "user": {"name": "noxu"}}
EVERY_RESOURCE = {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "namespaces": ["*"]}
EVERY_URL = {"verbs": ["*"], "nonResourceURLs": ["*"]}
SUBJECT = "spec.rules[0].subjects[0]"
RESOURCE_RULE = "spec.rules[0].resourceRules[0]"
URLS = "spec.rules[0].nonResourceRules[0].nonResourceURLs"


def everything_but_root(groups: list[str]) -> list[dict[str, Any]]:
    """Upstream's ``badExempt``/``badCatchAll`` rules: the mandatory ones with URL ``/`` for ``*``."""
    return rules(
        *({"kind": "Group", "group": {"name": g}} for g in groups),
        resources=[dict(EVERY_RESOURCE, clusterScope=True)],
        urls=[{"verbs": ["*"], "nonResourceURLs": ["/"]}],
    )


def go_rules(groups: list[str]) -> str:
    """``everything_but_root`` as upstream prints the internal ``[]PolicyRulesWithSubjects``."""
    subjects = ",".join(
        f'{{"Kind":"Group","User":null,"Group":{{"Name":"{g}"}},"ServiceAccount":null}}' for g in groups
    )
    return (
        f'[{{"Subjects":[{subjects}],"ResourceRules":[{{"Verbs":["*"],"APIGroups":["*"],"Resources":["*"],'
        '"ClusterScope":true,"Namespaces":["*"]}],"NonResourceRules":[{"Verbs":["*"],"NonResourceURLs":["/"]}]}]'
    )


FLOW_SCHEMA_CASES: list[tuple[str, dict[str, Any], list[str]]] = [
    (
        "missing both resource and non-resource policy-rule should fail",
        flow_schema(rules=rules(NOXU)),
        [
            "spec.rules[0]: Required value: at least one of resourceRules and nonResourceRules has to be "
            "non-empty"
        ],
    ),
    (
        "normal flow-schema w/ * verbs/apiGroups/resources should work",
        flow_schema(rules=rules({"kind": "Group", "group": {"name": "noxu"}}, resources=[EVERY_RESOURCE])),
        [],
    ),
    (
        "malformed Subject union in ServiceAccount case",
        flow_schema(
            rules=rules(
                {"kind": "ServiceAccount", "user": {"name": "fred"}, "group": {"name": "fred"}},
                urls=[EVERY_URL],
            )
        ),
        [
            f"{SUBJECT}.serviceAccount: Required value: serviceAccount is required when subject kind is "
            "'ServiceAccount'",
            f"{SUBJECT}.user: Forbidden: user is forbidden when subject kind is not 'User'",
            f"{SUBJECT}.group: Forbidden: group is forbidden when subject kind is not 'Group'",
        ],
    ),
    (
        "Subject union malformed in User case",
        flow_schema(
            rules=rules(
                {
                    "kind": "User",
                    "group": {"name": "fred"},
                    "serviceAccount": {"namespace": "s", "name": "n"},
                },
                urls=[EVERY_URL],
            )
        ),
        [
            f"{SUBJECT}.user: Required value: user is required when subject kind is 'User'",
            f"{SUBJECT}.serviceAccount: Forbidden: serviceAccount is forbidden when subject kind is not "
            "'ServiceAccount'",
            f"{SUBJECT}.group: Forbidden: group is forbidden when subject kind is not 'Group'",
        ],
    ),
    (
        "malformed Subject union in Group case",
        flow_schema(
            rules=rules(
                {
                    "kind": "Group",
                    "user": {"name": "fred"},
                    "serviceAccount": {"namespace": "s", "name": "n"},
                },
                urls=[EVERY_URL],
            )
        ),
        [
            f"{SUBJECT}.group: Required value: group is required when subject kind is 'Group'",
            f"{SUBJECT}.serviceAccount: Forbidden: serviceAccount is forbidden when subject kind is not "
            "'ServiceAccount'",
            f"{SUBJECT}.user: Forbidden: user is forbidden when subject kind is not 'User'",
        ],
    ),
    (
        "exempt flow-schema should work",
        flow_schema("exempt", **copy.deepcopy(MANDATORY_FLOW_SCHEMA_SPECS["exempt"])),
        [],
    ),
    (
        "bad exempt flow-schema should fail",
        flow_schema(
            "exempt",
            priorityLevelConfiguration={"name": "exempt"},
            matchingPrecedence=1,
            rules=everything_but_root(["system:masters"]),
        ),
        [
            'spec: Invalid value: {"PriorityLevelConfiguration":{"Name":"exempt"},"MatchingPrecedence":1,'
            f'"DistinguisherMethod":null,"Rules":{go_rules(["system:masters"])}}}: spec of \'exempt\' must '
            "equal the fixed value"
        ],
    ),
    (
        "bad catch-all flow-schema should fail",
        flow_schema(
            "catch-all",
            priorityLevelConfiguration={"name": "catch-all"},
            matchingPrecedence=10000,
            distinguisherMethod={"type": "ByUser"},
            rules=everything_but_root(["system:unauthenticated", "system:authenticated"]),
        ),
        [
            'spec: Invalid value: {"PriorityLevelConfiguration":{"Name":"catch-all"},"MatchingPrecedence":'
            '10000,"DistinguisherMethod":{"Type":"ByUser"},"Rules":'
            f"{go_rules(['system:unauthenticated', 'system:authenticated'])}}}: spec of 'catch-all' must "
            "equal the fixed value"
        ],
    ),
    (
        "catch-all flow-schema should work",
        flow_schema("catch-all", **copy.deepcopy(MANDATORY_FLOW_SCHEMA_SPECS["catch-all"])),
        [],
    ),
    (
        "non-exempt flow-schema with matchingPrecedence==1 should fail",
        flow_schema(
            "fred",
            priorityLevelConfiguration={"name": "exempt"},
            matchingPrecedence=1,
            rules=rules({"kind": "Group", "group": {"name": "gorp"}}, urls=[EVERY_URL]),
        ),
        [
            "spec.matchingPrecedence: Invalid value: 1: only the schema named 'exempt' may have "
            "matchingPrecedence 1"
        ],
    ),
    (
        "flow-schema mixes * verbs/apiGroups/resources should fail",
        flow_schema(
            rules=rules(
                NOXU,
                resources=[
                    {
                        "verbs": ["*", "create"],
                        "apiGroups": ["*", "tak"],
                        "resources": ["*", "tok"],
                        "namespaces": ["*"],
                    }
                ],
            )
        ),
        [
            f'{RESOURCE_RULE}.verbs: Invalid value: ["*","create"]: if \'*\' is present, must not specify '
            "other verbs",
            f'{RESOURCE_RULE}.apiGroups: Invalid value: ["*","tak"]: if \'*\' is present, must not specify '
            "other api groups",
            f'{RESOURCE_RULE}.resources: Invalid value: ["*","tok"]: if \'*\' is present, must not specify '
            "other resources",
        ],
    ),
    (
        "flow-schema has both resource rules and non-resource rules should work",
        flow_schema(
            rules=rules(
                NOXU, resources=[EVERY_RESOURCE], urls=[{"verbs": ["*"], "nonResourceURLs": ["/apis/*"]}]
            )
        ),
        [],
    ),
    (
        "flow-schema mixes * non-resource URLs should fail",
        flow_schema(rules=rules(NOXU, urls=[{"verbs": ["*"], "nonResourceURLs": ["*", "tik"]}])),
        [
            'spec.rules[0].nonResourceRules[0].nonResourceURLs: Invalid value: ["*","tik"]: if \'*\' is '
            "present, must not specify other non-resource URLs"
        ],
    ),
    (
        "invalid subject kind should fail",
        flow_schema(rules=rules({"kind": "FooKind"}, urls=[EVERY_URL])),
        [
            f'{SUBJECT}.kind: Unsupported value: "FooKind": supported values: "Group", "ServiceAccount", '
            '"User"'
        ],
    ),
    (
        "flow-schema w/ invalid verb should fail",
        flow_schema(rules=rules(NOXU, resources=[dict(EVERY_RESOURCE, verbs=["feed"])])),
        [f'{RESOURCE_RULE}.verbs: Unsupported value: ["feed"]: supported values: {VERBS}'],
    ),
    (
        "flow-schema w/ invalid priority level configuration name should fail",
        flow_schema(
            priorityLevelConfiguration={"name": "system+++$$"}, rules=rules(NOXU, resources=[EVERY_RESOURCE])
        ),
        [f'spec.priorityLevelConfiguration.name: Invalid value: "system+++$$": {RFC1123_SUBDOMAIN}'],
    ),
    (
        "flow-schema w/ service-account kind missing namespace should fail",
        flow_schema(
            rules=rules(
                {"kind": "ServiceAccount", "serviceAccount": {"name": "noxu"}}, resources=[EVERY_RESOURCE]
            )
        ),
        [f"{SUBJECT}.serviceAccount.namespace: Required value: must specify namespace for service account"],
    ),
    (
        "flow-schema missing kind should fail",
        flow_schema(rules=rules({"kind": ""}, resources=[EVERY_RESOURCE])),
        [f'{SUBJECT}.kind: Unsupported value: "": supported values: "Group", "ServiceAccount", "User"'],
    ),
    (
        "Omitted ResourceRule.Namespaces should fail",
        flow_schema(rules=rules(NOXU, resources=[{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}])),
        [
            f"{RESOURCE_RULE}.namespaces: Required value: resource rules that are not cluster scoped must "
            "supply at least one namespace"
        ],
    ),
    (
        "ClusterScope is allowed, with no Namespaces",
        flow_schema(
            rules=rules(
                NOXU,
                resources=[{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "clusterScope": True}],
            )
        ),
        [],
    ),
    (
        "ClusterScope is allowed with NamespaceEvery",
        flow_schema(rules=rules(NOXU, resources=[dict(EVERY_RESOURCE, clusterScope=True)])),
        [],
    ),
    (
        "NamespaceEvery may not be combined with particulars",
        flow_schema(rules=rules(NOXU, resources=[dict(EVERY_RESOURCE, namespaces=["foo", "*"])])),
        [
            f'{RESOURCE_RULE}.namespaces: Invalid value: ["foo","*"]: if \'*\' is present, must not specify '
            "other namespaces"
        ],
    ),
    (
        "ResourceRule.Namespaces must be well formed",
        flow_schema(rules=rules(NOXU, resources=[dict(EVERY_RESOURCE, namespaces=["-foo"])])),
        [
            f"{RESOURCE_RULE}.namespaces[0]: Invalid value: \"-foo\": each member of this list must be '*' "
            f"or a DNS-1123 label; {RFC1123_LABEL}"
        ],
    ),
    (
        "MatchingPrecedence must not be greater than 10000",
        flow_schema(matchingPrecedence=10001, rules=rules(NOXU, resources=[EVERY_RESOURCE])),
        ["spec.matchingPrecedence: Invalid value: 10001: must not be greater than 10000"],
    ),
    # Rules of validation.go that upstream's table does not exercise.
    (
        "a negative matchingPrecedence (0 is defaulted to 1000)",
        flow_schema(matchingPrecedence=-1, rules=rules(NOXU, resources=[EVERY_RESOURCE])),
        ["spec.matchingPrecedence: Invalid value: -1: must be a positive value"],
    ),
    (
        "an unknown distinguisher method prints the whole FlowDistinguisherMethod",
        flow_schema(distinguisherMethod={"type": "ByFoo"}, rules=rules(NOXU, resources=[EVERY_RESOURCE])),
        [
            'spec.distinguisherMethod.type: Unsupported value: {"Type":"ByFoo"}: supported values: '
            '"ByNamespace", "ByUser"'
        ],
    ),
    (
        "the priority level is required",
        flow_schema(priorityLevelConfiguration={}),
        ["spec.priorityLevelConfiguration.name: Required value: must reference a priority level"],
    ),
    (
        "a rule needs subjects and its rules their lists",
        flow_schema(rules=rules(resources=[{"clusterScope": True}], urls=[{}])),
        [
            "spec.rules[0].subjects: Required value: subjects must contain at least one value",
            f"{RESOURCE_RULE}.verbs: Required value: verbs must contain at least one value",
            f"{RESOURCE_RULE}.apiGroups: Required value: resource rules must supply at least one api group",
            f"{RESOURCE_RULE}.resources: Required value: resource rules must supply at least one resource",
            "spec.rules[0].nonResourceRules[0].verbs: Required value: verbs must contain at least one value",
            "spec.rules[0].nonResourceRules[0].nonResourceURLs: Required value: nonResourceURLs must contain "
            "at least one value",
        ],
    ),
    (
        "subjects need names; a ServiceAccount's may be *, not anything else",
        flow_schema(
            rules=rules(
                {"kind": "User", "user": {}},
                {"kind": "Group", "group": {"name": ""}},
                {"kind": "ServiceAccount", "serviceAccount": {"namespace": "kube-system", "name": "*"}},
                {
                    "kind": "ServiceAccount",
                    "serviceAccount": {"namespace": "Kube_System", "name": "Bad_Name"},
                },
                resources=[EVERY_RESOURCE],
            )
        ),
        [
            "spec.rules[0].subjects[0].user.name: Required value",
            "spec.rules[0].subjects[1].group.name: Required value",
            f'spec.rules[0].subjects[3].serviceAccount.name: Invalid value: "Bad_Name": {RFC1123_SUBDOMAIN}',
            f'spec.rules[0].subjects[3].serviceAccount.namespace: Invalid value: "Kube_System": '
            f"{RFC1123_LABEL}",
        ],
    ),
    (
        "non-resource URLs are absolute paths with a * only at the end",
        flow_schema(
            rules=rules(
                NOXU, urls=[{"verbs": ["get"], "nonResourceURLs": ["/healthz", "healthz", "/health*"]}]
            )
        ),
        [
            f'{URLS}[1]: Invalid value: "healthz": must start with slash',
            f'{URLS}[2]: Invalid value: "/health*": wildcard can only do suffix matching',
        ],
    ),
]


@pytest.mark.parametrize(
    ("body", "expected"), [(b, e) for _, b, e in FLOW_SCHEMA_CASES], ids=[n for n, _, _ in FLOW_SCHEMA_CASES]
)
def test_flow_schema_validation(body: dict[str, Any], expected: list[str]) -> None:
    assert create(FLOW_SCHEMAS, body, namespaced=False)[1] == expected


def level(name: str = "system-foo", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "PriorityLevelConfiguration",
        "metadata": {"name": name},
        "spec": spec,
    }


def limited(shares: int = 100, queuing: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    response: dict[str, Any] = (
        {"type": "Reject"} if queuing is None else {"type": "Queue", "queuing": queuing}
    )
    return {
        "type": "Limited",
        "limited": {"nominalConcurrencyShares": shares, "limitResponse": response, **fields},
    }


#: Upstream's ``badSpec``, as a Limited level of 42 shares prints once defaulted.
BAD_SPEC = limited(42)
GO_BAD_SPEC = (
    '{"Type":"Limited","Limited":{"NominalConcurrencyShares":42,"LimitResponse":{"Type":"Reject","Queuing":null},'
    '"LendablePercent":0,"BorrowingLimitPercent":null},"Exempt":null}'
)
QUEUING = "spec.limited.limitResponse.queuing"
NOT_EXEMPT = "spec.type: Invalid value: \"Limited\": must be 'Exempt' if and only if `name` is 'exempt'"

LEVEL_CASES: list[tuple[str, dict[str, Any], list[str]]] = [
    (
        "exempt should work",
        level("exempt", type="Exempt", exempt={"nominalConcurrencyShares": 0, "lendablePercent": 0}),
        [],
    ),
    (
        "wrong exempt spec should fail",
        level("exempt", **BAD_SPEC),
        [
            NOT_EXEMPT,
            f"spec: Invalid value: {GO_BAD_SPEC}: spec of 'exempt' except the 'spec.exempt' field must equal "
            "the fixed value",
        ],
    ),
    (
        "exempt priority level should have appropriate values for Exempt field",
        level("exempt", type="Exempt", exempt={"nominalConcurrencyShares": -1, "lendablePercent": 101}),
        [
            "spec.exempt.nominalConcurrencyShares: Invalid value: -1: must be a non-negative integer",
            "spec.exempt.lendablePercent: Invalid value: 101: must be between 0 and 100, inclusive",
        ],
    ),
    (
        "exempt priority level should have appropriate values for Exempt field (both negative)",
        level("exempt", type="Exempt", exempt={"nominalConcurrencyShares": -1, "lendablePercent": -1}),
        [
            "spec.exempt.nominalConcurrencyShares: Invalid value: -1: must be a non-negative integer",
            "spec.exempt.lendablePercent: Invalid value: -1: must be between 0 and 100, inclusive",
        ],
    ),
    (
        "admins are not allowed to repurpose the 'exempt' pl to a limited type",
        level("exempt", exempt={}, **BAD_SPEC),
        [
            NOT_EXEMPT,
            "spec.exempt: Forbidden: must be nil if the type is Limited",
            'spec: Invalid value: {"Type":"Limited","Limited":{"NominalConcurrencyShares":42,"LimitResponse":'
            '{"Type":"Reject","Queuing":null},"LendablePercent":0,"BorrowingLimitPercent":null},"Exempt":'
            '{"NominalConcurrencyShares":0,"LendablePercent":0}}: '
            "spec of 'exempt' except the 'spec.exempt' field must equal the fixed value",
        ],
    ),
    (
        "admins are not allowed to change any field of the 'exempt' pl except 'Exempt'",
        level("exempt", type="Exempt", exempt={}, limited=BAD_SPEC["limited"]),
        [
            "spec.limited: Forbidden: must be nil if the type is not Limited",
            'spec: Invalid value: {"Type":"Exempt","Limited":{"NominalConcurrencyShares":42,"LimitResponse":'
            '{"Type":"Reject","Queuing":null},"LendablePercent":0,"BorrowingLimitPercent":null},"Exempt":'
            '{"NominalConcurrencyShares":0,"LendablePercent":0}}: '
            "spec of 'exempt' except the 'spec.exempt' field must equal the fixed value",
        ],
    ),
    (
        "admins are allowed to change the Exempt field of the 'exempt' pl",
        level("exempt", type="Exempt", exempt={"nominalConcurrencyShares": 10, "lendablePercent": 10}),
        [],
    ),
    (
        "limited must not set exempt priority level configuration for borrowing",
        level("broken-limited", type="Limited", exempt={}),
        [
            "spec.exempt: Forbidden: must be nil if the type is Limited",
            "spec.limited: Required value: must not be empty when type is Limited",
        ],
    ),
    (
        "limited requires more details",
        level("broken-limited", type="Limited"),
        ["spec.limited: Required value: must not be empty when type is Limited"],
    ),
    ("max-in-flight should work", level("max-in-flight", **limited(42)), []),
    (
        "forbid queuing details when not queuing",
        level(
            type="Limited",
            limited={
                "nominalConcurrencyShares": 100,
                "limitResponse": {
                    "type": "Reject",
                    "queuing": {"queues": 512, "handSize": 4, "queueLengthLimit": 100},
                },
            },
        ),
        [f"{QUEUING}: Forbidden: must be nil if limited.limitResponse.type is not Limited"],
    ),
    (
        "wrong backstop spec should fail",
        level("catch-all", **BAD_SPEC),
        [f"spec: Invalid value: {GO_BAD_SPEC}: spec of 'catch-all' must equal the fixed value"],
    ),
    (
        "backstop should work",
        level("catch-all", **copy.deepcopy(MANDATORY_PRIORITY_LEVEL_SPECS["catch-all"])),
        [],
    ),
    (
        "broken queuing level should fail",
        level(type="Limited", limited={"nominalConcurrencyShares": 100, "limitResponse": {"type": "Queue"}}),
        [f"{QUEUING}: Required value: must not be empty if limited.limitResponse.type is Limited"],
    ),
    (
        "normal customized priority level should work",
        level(**limited(queuing={"queues": 512, "handSize": 4, "queueLengthLimit": 100})),
        [],
    ),
    (
        "customized priority level w/ overflowing handSize/queues should fail 1",
        level(**limited(queuing={"queueLengthLimit": 100, "queues": 512, "handSize": 8})),
        [
            f"{QUEUING}.handSize: Invalid value: 8: required entropy bits of deckSize 512 and handSize 8 "
            "should not be greater than 60"
        ],
    ),
    (
        "customized priority level w/ overflowing handSize/queues should fail 2",
        level(**limited(queuing={"queueLengthLimit": 100, "queues": 128, "handSize": 10})),
        [
            f"{QUEUING}.handSize: Invalid value: 10: required entropy bits of deckSize 128 and handSize 10 "
            "should not be greater than 60"
        ],
    ),
    (
        "customized priority level w/ overflowing handSize/queues should fail 3",
        level(**limited(queuing={"queueLengthLimit": 100, "queues": 2**31 - 1, "handSize": 3})),
        [
            f"{QUEUING}.queues: Invalid value: 2147483647: must not be greater than 10000000",
            f"{QUEUING}.handSize: Invalid value: 3: required entropy bits of deckSize 2147483647 and "
            "handSize 3 should not be greater than 60",
        ],
    ),
    (
        "customized priority level w/ handSize=2 and queues=10^7 should work",
        level(**limited(queuing={"queueLengthLimit": 100, "queues": 10**7, "handSize": 2})),
        [],
    ),
    (
        "customized priority level w/ handSize greater than queues should fail",
        level(**limited(queuing={"queueLengthLimit": 100, "queues": 7, "handSize": 8})),
        [f"{QUEUING}.handSize: Invalid value: 8: should not be greater than queues (7)"],
    ),
    (
        "the roundtrip annotation is forbidden",
        dict(
            level("with-forbidden-annotation", **limited(42)),
            metadata={
                "name": "with-forbidden-annotation",
                "annotations": {"flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares": ""},
            },
        ),
        [
            "metadata.annotations: Forbidden: annotation "
            "'flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares' is forbidden"
        ],
    ),
    # TestValidateLimitedPriorityLevelConfiguration(WithBorrowing), and rules no table exercises.
    ("zero nominal concurrency shares are allowed", level(**limited(0)), []),
    (
        "negative nominal concurrency shares are not",
        level(**limited(-1)),
        ["spec.limited.nominalConcurrencyShares: Invalid value: -1: must be a non-negative integer"],
    ),
    (
        "lendable 100 and borrowing 0 are in range",
        level(**limited(lendablePercent=100, borrowingLimitPercent=0)),
        [],
    ),
    (
        "lendable and borrowing percents out of range",
        level(**limited(lendablePercent=101, borrowingLimitPercent=-1)),
        [
            "spec.limited.lendablePercent: Invalid value: 101: must be between 0 and 100, inclusive",
            "spec.limited.borrowingLimitPercent: Invalid value: -1: if specified, must be a non-negative "
            "integer",
        ],
    ),
    (
        "an Exempt type needs the name exempt",
        level("free", type="Exempt", exempt={}),
        ["spec.type: Invalid value: \"Exempt\": must be 'Exempt' if and only if `name` is 'exempt'"],
    ),
    (
        "unknown types",
        level("odd", type="Unlimited"),
        ['spec.type: Unsupported value: "Unlimited": supported values: "Exempt", "Limited"'],
    ),
    (
        "unknown limit responses",
        level(type="Limited", limited={"limitResponse": {"type": "Drop"}}),
        ['spec.limited.limitResponse.type: Unsupported value: "Drop": supported values: "Queue", "Reject"'],
    ),
    (
        "negative queuing numbers (0 is defaulted)",
        level(**limited(queuing={"queueLengthLimit": -1, "queues": -1, "handSize": -1})),
        [
            f"{QUEUING}.queueLengthLimit: Invalid value: -1: must be positive",
            f"{QUEUING}.queues: Invalid value: -1: must be positive",
            f"{QUEUING}.handSize: Invalid value: -1: must be positive",
        ],
    ),
]


@pytest.mark.parametrize(
    ("body", "expected"), [(b, e) for _, b, e in LEVEL_CASES], ids=[n for n, _, _ in LEVEL_CASES]
)
def test_priority_level_configuration_validation(body: dict[str, Any], expected: list[str]) -> None:
    assert create(LEVELS, body, namespaced=False)[1] == expected


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("", "must not be empty"),
        ("foo", "must start with slash"),
        ("/", None),
        ("//", "must not contain double slash"),
        ("/foo", None),
        ("/////", "must not contain double slash"),
        ("/apis/", None),
        ("/healthz/*", None),
        ("/healthz/*/foo", "wildcard can only do suffix matching"),
        ("/healthz/foo bar", "must not contain white-space"),
        ("/health*", "wildcard can only do suffix matching"),
        ("/health*/foo", "wildcard can only do suffix matching"),
        ("/*/*", "wildcard can only do suffix matching"),
    ],
)
def test_validate_non_resource_url_path(path: str, problem: str | None) -> None:
    """``TestValidateNonResourceURLPath`` (which checks only that there is an error)."""
    assert validate_non_resource_url_path(path) == problem


def test_every_object_the_lab_makes_is_valid_and_already_defaulted() -> None:
    """The API server's bootstrap objects, a sandbox's guardrails and the hot-loop fault's objects."""
    flow_control = {"FlowSchema": FLOW_SCHEMAS, "PriorityLevelConfiguration": LEVELS}
    made = [
        *bootstrap.priority_levels(),
        *bootstrap.flow_schemas(),
        *student_objects(student="student:alice"),
        *hotloop.objects(),
    ]
    checked = 0
    for obj in made:
        strategy = flow_control.get(obj["kind"])
        if strategy is not None:
            assert stored(strategy, obj, namespaced=False)["spec"] == obj["spec"], obj["metadata"]["name"]
            checked += 1
    assert checked == len(bootstrap.priority_levels()) + len(bootstrap.flow_schemas()) + 4


def test_v1_defaults() -> None:
    """``v1/defaults.go``: a nil ``nominalConcurrencyShares`` is 30, an explicit 0 stays 0."""
    schema = create(FLOW_SCHEMAS, flow_schema(matchingPrecedence=0), namespaced=False)[0]
    assert schema["spec"]["matchingPrecedence"] == 1000
    defaulted = create(
        LEVELS,
        level(type="Limited", limited={"limitResponse": {"type": "Queue", "queuing": {}}}),
        namespaced=False,
    )
    assert defaulted[0]["spec"]["limited"] == {
        "limitResponse": {"type": "Queue", "queuing": {"handSize": 8, "queues": 64, "queueLengthLimit": 50}},
        "nominalConcurrencyShares": 30,
        "lendablePercent": 0,
    }
    assert (
        create(LEVELS, level(**limited(0)), namespaced=False)[0]["spec"]["limited"][
            "nominalConcurrencyShares"
        ]
        == 0
    )
    exempt = create(LEVELS, level("exempt", type="Exempt", exempt={}), namespaced=False)[0]
    assert exempt["spec"] == {
        "type": "Exempt",
        "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0},
    }
    assert "limited" not in create(LEVELS, level(type="Limited"), namespaced=False)[0]["spec"]


def test_status_is_the_status_subresources_and_generation_counts_spec_changes() -> None:
    """``PrepareForCreate``/``PrepareForUpdate`` of both strategies, and their status strategies."""
    body = level("web", **limited(10, queuing={"queues": 16, "handSize": 4, "queueLengthLimit": 50}))
    body["status"] = {"conditions": [{"type": "ConcurrencyShared", "status": "True"}]}
    old = stored(LEVELS, body, namespaced=False)
    assert "status" not in old and old["metadata"]["generation"] == 1
    old["status"] = {"conditions": [{"type": "ConcurrencyShared", "status": "False"}]}
    labelled = copy.deepcopy(old)
    labelled["metadata"]["labels"] = {"team": "web"}
    labelled["status"] = {}
    same, errors = update(LEVELS, labelled, old, namespaced=False)
    assert errors == [] and same["metadata"]["generation"] == 1 and same["status"] == old["status"]
    # Leaving out a field that defaults to its stored value is no change either.
    del labelled["spec"]["limited"]["lendablePercent"]
    assert update(LEVELS, labelled, old, namespaced=False)[0]["metadata"]["generation"] == 1
    rejecting = copy.deepcopy(old)
    rejecting["spec"]["limited"]["limitResponse"] = {"type": "Reject"}
    changed, errors = update(LEVELS, rejecting, old, namespaced=False)
    assert errors == [] and changed["metadata"]["generation"] == 2
    # A status write changes the status only: spec and metadata stay the stored ones.
    written = copy.deepcopy(old)
    written["spec"]["limited"]["nominalConcurrencyShares"] = 99
    written["metadata"]["annotations"] = {"note": "x"}
    written["status"] = {"conditions": [{"type": "ConcurrencyShared", "status": "True"}]}
    result, errors = status_update(LEVELS, written, old, namespaced=False)
    assert errors == [] and result["spec"] == old["spec"] and "annotations" not in result["metadata"]
    assert result["status"] == written["status"]


@pytest.mark.parametrize("strategy", [FLOW_SCHEMAS, LEVELS], ids=["FlowSchema", "PriorityLevelConfiguration"])
def test_status_conditions_have_distinct_nonempty_types(strategy: Any) -> None:
    """``TestValidateFlowSchemaStatus`` and ``TestValidatePriorityLevelConfigurationStatus``."""
    body = (
        flow_schema(rules=rules(NOXU, resources=[EVERY_RESOURCE]))
        if strategy is FLOW_SCHEMAS
        else level(**limited())
    )
    old = stored(strategy, body, namespaced=False)
    duplicated = dict(old, status={"conditions": [{"type": "1"}, {"type": "1"}]})
    assert status_update(strategy, duplicated, old, namespaced=False)[1] == [
        'status.conditions[1].type: Duplicate value: "1"'
    ]
    empty = dict(old, status={"conditions": [{"type": ""}]})
    assert status_update(strategy, empty, old, namespaced=False)[1] == [
        "status.conditions[0].type: Required value: must not be empty"
    ]


# -- through the API server ----------------------------------------------------------------------------

FC = f"/apis/{API_VERSION}"
MERGE = {"Content-Type": "application/merge-patch+json"}


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    store = SqliteStore("test", path=tmp_path / "store.sqlite3")
    await store.start()
    try:
        async with admin_api(store) as (_, client):
            yield client
    finally:
        await store.close()


async def test_the_api_server_starts_with_every_bootstrap_object(api: httpx.AsyncClient) -> None:
    """The ensurer's creates pass validation (it would skip an invalid one without a word)."""
    for plural, wanted in (
        ("prioritylevelconfigurations", bootstrap.priority_levels()),
        ("flowschemas", bootstrap.flow_schemas()),
    ):
        items = (await api.get(f"{FC}/{plural}")).json()["items"]
        assert sorted(o["metadata"]["name"] for o in items) == sorted(o["metadata"]["name"] for o in wanted)
        assert all(o["metadata"]["generation"] == 1 for o in items)
    for obj in [*student_objects(student="student:alice"), *hotloop.objects()]:
        if obj["apiVersion"] == API_VERSION:
            plural = "flowschemas" if obj["kind"] == "FlowSchema" else "prioritylevelconfigurations"
            created = await api.post(f"{FC}/{plural}", json=obj)
            assert created.status_code == 201, created.text


async def test_a_merge_patch_to_reject_that_keeps_the_queuing_is_422(api: httpx.AsyncClient) -> None:
    body = level("hot-loop", **limited(1, queuing={"queues": 1, "handSize": 1, "queueLengthLimit": 4}))
    created = await api.post(f"{FC}/prioritylevelconfigurations", json=body)
    assert created.status_code == 201, created.text
    patched = await api.patch(
        f"{FC}/prioritylevelconfigurations/hot-loop",
        json={"spec": {"limited": {"limitResponse": {"type": "Reject"}}}},
        headers=MERGE,
    )
    assert patched.status_code == 422, patched.text
    status = patched.json()
    assert (status["reason"], status["message"]) == (
        "Invalid",
        'PriorityLevelConfiguration.flowcontrol.apiserver.k8s.io "hot-loop" is invalid: '
        "spec.limited.limitResponse.queuing: Forbidden: must be nil if limited.limitResponse.type is not "
        "Limited",
    )
    assert status["details"]["causes"] == [
        {
            "reason": "FieldValueForbidden",
            "message": "Forbidden: must be nil if limited.limitResponse.type is not Limited",
            "field": "spec.limited.limitResponse.queuing",
        }
    ]
    # The patch that also drops the queuing is the right one, and a spec change: generation 2.
    fixed = await api.patch(
        f"{FC}/prioritylevelconfigurations/hot-loop",
        json={"spec": {"limited": {"limitResponse": {"type": "Reject", "queuing": None}}}},
        headers=MERGE,
    )
    assert fixed.status_code == 200, fixed.text
    assert fixed.json()["spec"]["limited"]["limitResponse"] == {"type": "Reject"}
    assert fixed.json()["metadata"]["generation"] == 2


async def test_the_mandatory_objects_keep_their_spec(api: httpx.AsyncClient) -> None:
    widened = await api.patch(
        f"{FC}/prioritylevelconfigurations/catch-all",
        json={"spec": {"limited": {"nominalConcurrencyShares": 100}}},
        headers=MERGE,
    )
    assert widened.status_code == 422, widened.text
    assert widened.json()["message"].endswith("spec of 'catch-all' must equal the fixed value")
    tuned = await api.patch(
        f"{FC}/prioritylevelconfigurations/exempt",
        json={"spec": {"exempt": {"nominalConcurrencyShares": 10}}},
        headers=MERGE,
    )
    assert tuned.status_code == 200, tuned.text
    moved = await api.patch(
        f"{FC}/flowschemas/exempt", json={"spec": {"matchingPrecedence": 2}}, headers=MERGE
    )
    assert moved.status_code == 422, moved.text
    assert moved.json()["message"].endswith("spec of 'exempt' must equal the fixed value")
