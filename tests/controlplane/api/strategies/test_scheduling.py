"""PriorityClasses: the cases of upstream's ``pkg/apis/scheduling/validation/validation_test.go``
(``TestValidatePriorityClass``, ``TestValidatePriorityClassUpdate``) and ``SetDefaults_PriorityClass``."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.api.strategies import PriorityClassStrategy
from controlplane.api.strategies.common import UndecodableObject
from controlplane.api.strategies.scheduling import SYSTEM_PRIORITY_CLASSES, system_priority_class
from tests.controlplane.api.strategies import create, stored, update

STRATEGY = PriorityClassStrategy()
RESERVED = (
    "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only."
)


def priority_class(name: str = "tier1", **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
    }
    body.update(fields)
    return body


def errors_of(obj: dict[str, Any]) -> list[str]:
    return create(STRATEGY, obj, namespaced=False)[1]


def test_defaults_give_preempt_lower_priority_and_a_zero_value() -> None:
    obj = stored(STRATEGY, priority_class(value=100, description="Used for tier1 pods"), namespaced=False)
    assert obj["preemptionPolicy"] == "PreemptLowerPriority"
    assert "namespace" not in obj["metadata"]
    assert stored(STRATEGY, priority_class(), namespaced=False)["value"] == 0
    never = stored(STRATEGY, priority_class(value=5, preemptionPolicy="Never"), namespaced=False)
    assert never["preemptionPolicy"] == "Never"


def test_the_built_in_classes_are_valid_with_their_own_values() -> None:
    for name, value, description in SYSTEM_PRIORITY_CLASSES:
        obj = stored(STRATEGY, system_priority_class(name, value, description), namespaced=False)
        assert obj["value"] == value
    assert [name for name, _, _ in SYSTEM_PRIORITY_CLASSES] == [
        "system-node-critical",
        "system-cluster-critical",
    ]
    assert [value for _, value, _ in SYSTEM_PRIORITY_CLASSES] == [2000001000, 2000000000]


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        (
            priority_class("system-something", value=100),
            f"{RESERVED} error: system-something is not a known system priority class",
        ),
        (
            priority_class("system-node-critical", value=100),
            f"{RESERVED} error: value of system-node-critical PriorityClass must be 2000001000",
        ),
        (
            priority_class("system-cluster-critical", value=2000000000, globalDefault=True),
            f"{RESERVED} error: globalDefault of system-cluster-critical PriorityClass must be false",
        ),
        (
            priority_class(value=1000000001),
            "value: Forbidden: maximum allowed value of a user defined priority is 1000000000",
        ),
        (
            priority_class("tier&1", value=100),
            'metadata.name: Invalid value: "tier&1": a lowercase RFC 1123 subdomain must consist of lower '
            "case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric "
            "character (e.g. 'example.com', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        ),
        (
            priority_class(value=100, preemptionPolicy="Sometimes"),
            'preemptionPolicy: Unsupported value: "Sometimes": '
            'supported values: "PreemptLowerPriority", "Never"',
        ),
        (
            priority_class(value=100, preemptionPolicy=""),
            "preemptionPolicy: Required value",
        ),
    ],
)
def test_invalid_classes_get_upstreams_messages(obj: dict[str, Any], message: str) -> None:
    assert errors_of(obj) == [message]


def test_the_user_maximum_and_negative_values_are_allowed() -> None:
    assert errors_of(priority_class(value=1000000000)) == []
    assert errors_of(priority_class(value=-2147483648)) == []


@pytest.mark.parametrize(
    ("value", "shown"),
    [("high", "string"), (2**31, "number 2147483648"), (1.5, "number 1.5"), (True, "bool")],
)
def test_a_value_that_is_not_an_int32_does_not_decode(value: object, shown: str) -> None:
    with pytest.raises(UndecodableObject) as raised:
        errors_of(priority_class(value=value))
    assert raised.value.reason == (
        f"json: cannot unmarshal {shown} into Go struct field PriorityClass.value of type int32"
    )


def test_value_and_preemption_policy_are_immutable_but_the_description_is_not() -> None:
    old = stored(STRATEGY, priority_class(value=100), namespaced=False)
    _, errors = update(STRATEGY, priority_class(value=200), old, namespaced=False)
    assert errors == ["value: Forbidden: may not be changed in an update."]
    _, errors = update(STRATEGY, priority_class(value=100, preemptionPolicy="Never"), old, namespaced=False)
    assert errors == ['preemptionPolicy: Invalid value: "Never": field is immutable']
    changed, errors = update(
        STRATEGY, priority_class(value=100, description="now described"), old, namespaced=False
    )
    assert errors == [] and changed["description"] == "now described"
    # Left out, the policy defaults to the same value again: not a change.
    assert update(STRATEGY, priority_class(value=100, globalDefault=True), old, namespaced=False)[1] == []


def test_only_the_built_in_classes_refuse_deletion() -> None:
    refusal = "this is a system priority class and cannot be deleted"
    assert STRATEGY.delete_refusal("system-node-critical") == refusal
    assert STRATEGY.delete_refusal("system-cluster-critical") == refusal
    assert STRATEGY.delete_refusal("tier1") is None
