"""PodDisruptionBudgets: the rules of ``pkg/apis/policy/validation/validation_test.go``
(``TestValidatePodDisruptionBudgetSpec``, ``TestValidateMinAvailablePodDisruptionBudgetSpec``,
``TestValidatePodDisruptionBudgetStatus``, the unhealthy pod eviction policies) and the create/update
behaviour of ``pkg/registry/policy/poddisruptionbudget/strategy_test.go``."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.api.strategies import PodDisruptionBudgetStrategy
from tests.controlplane.api.strategies import create, stored, update
from tests.controlplane.api.strategies import status_update as put_status

PDBS = PodDisruptionBudgetStrategy()


def pdb(name: str = "web", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"selector": {"matchLabels": {"app": "web"}}}
    body.update(spec)
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name},
        "spec": body,
    }


def errors_of(**spec: Any) -> list[str]:
    return create(PDBS, pdb(**spec))[1]


def test_a_new_budget_has_an_empty_status_and_generation_1() -> None:
    obj = pdb(minAvailable=2)
    obj["status"] = {"disruptionsAllowed": 5, "currentHealthy": 9}
    created = stored(PDBS, obj)
    assert created["status"] == {
        "disruptionsAllowed": 0,
        "currentHealthy": 0,
        "desiredHealthy": 0,
        "expectedPods": 0,
    }
    assert created["metadata"]["generation"] == 1
    assert stored(PDBS, {"metadata": {"name": "bare"}})["spec"] == {}


@pytest.mark.parametrize(
    "spec",
    [
        {"minAvailable": 0},
        {"minAvailable": 10},
        {"minAvailable": "0%"},
        {"minAvailable": "100%"},
        {"maxUnavailable": 2},
        {"maxUnavailable": "50%"},
        {"unhealthyPodEvictionPolicy": "IfHealthyBudget"},
        {"unhealthyPodEvictionPolicy": "AlwaysAllow", "minAvailable": 1},
        {"selector": {}},
    ],
)
def test_valid_specs(spec: dict[str, Any]) -> None:
    assert errors_of(**spec) == []


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"minAvailable": -1}, "spec.minAvailable: Invalid value: -1: must be greater than or equal to 0"),
        (
            {"minAvailable": "10"},
            "spec.minAvailable: Invalid value: 10: a valid percent string must be a numeric string "
            "followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
        ),
        ({"minAvailable": "101%"}, "spec.minAvailable: Invalid value: 101%: must not be greater than 100%"),
        (
            {"maxUnavailable": -1},
            "spec.maxUnavailable: Invalid value: -1: must be greater than or equal to 0",
        ),
        (
            {"maxUnavailable": "200%"},
            "spec.maxUnavailable: Invalid value: 200%: must not be greater than 100%",
        ),
        (
            {"unhealthyPodEvictionPolicy": "Invalid"},
            'spec.unhealthyPodEvictionPolicy: Unsupported value: "Invalid": supported values: '
            '"AlwaysAllow", "IfHealthyBudget"',
        ),
    ],
)
def test_invalid_bounds_and_policies(spec: dict[str, Any], expected: str) -> None:
    assert errors_of(**spec) == [expected]


def test_min_available_and_max_unavailable_cannot_both_be_set() -> None:
    messages = errors_of(minAvailable=1, maxUnavailable=1)
    assert len(messages) == 1
    assert messages[0].startswith("spec: Invalid value: policy.PodDisruptionBudgetSpec{MinAvailable:")
    assert messages[0].endswith(": minAvailable and maxUnavailable cannot be both set")


def test_the_selector_is_a_label_selector() -> None:
    messages = errors_of(selector={"matchLabels": {"app": "-bad-"}})
    assert len(messages) == 1
    assert messages[0].startswith('spec.selector.matchLabels: Invalid value: "-bad-": a valid label must be')


def test_names_are_only_url_path_segments_and_are_checked_after_the_spec() -> None:
    assert create(PDBS, pdb("Web_Budget", minAvailable=1))[1] == []
    assert create(PDBS, pdb("a/b", minAvailable=1))[1] == [
        "metadata.name: Invalid value: \"a/b\": may not contain '/'"
    ]
    # The spec's errors come alone: metadata is checked only once the spec passed.
    assert create(PDBS, pdb("a/b", minAvailable=-1))[1] == [
        "spec.minAvailable: Invalid value: -1: must be greater than or equal to 0"
    ]


def test_the_spec_may_change_and_bumps_the_generation_the_status_may_not() -> None:
    old = stored(PDBS, pdb(minAvailable=1))
    old["status"]["currentHealthy"] = 3
    new = pdb(maxUnavailable="25%")
    new["status"] = {"currentHealthy": 100}
    updated, messages = update(PDBS, new, old)
    assert messages == []
    assert updated["metadata"]["generation"] == 2
    assert updated["status"]["currentHealthy"] == 3
    same, _ = update(PDBS, pdb(minAvailable=1), old)
    assert same["metadata"]["generation"] == 1


def test_a_status_write_keeps_the_spec_and_its_counters_may_not_be_negative() -> None:
    old = stored(PDBS, pdb(minAvailable=1))
    new = pdb(minAvailable=5)
    new["metadata"] = dict(old["metadata"])
    new["status"] = {
        "disruptionsAllowed": -1,
        "currentHealthy": -2,
        "desiredHealthy": 0,
        "expectedPods": -3,
        "conditions": [
            {"type": "DisruptionAllowed", "status": "Maybe", "reason": "", "message": ""},
            {
                "type": "DisruptionAllowed",
                "status": "True",
                "reason": "bad reason",
                "message": "",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            },
        ],
    }
    written, messages = put_status(PDBS, new, old)
    assert written["spec"] == {"selector": {"matchLabels": {"app": "web"}}, "minAvailable": 1}
    assert messages == [
        'status.conditions[0].status: Unsupported value: "Maybe": supported values: "False", "True", '
        '"Unknown"',
        "status.conditions[0].lastTransitionTime: Required value: must be set",
        "status.conditions[0].reason: Required value: must be set",
        'status.conditions[1].type: Duplicate value: "DisruptionAllowed"',
        'status.conditions[1].reason: Invalid value: "bad reason": a condition reason must start with '
        "alphabetic character, optionally followed by a string of alphanumeric characters or '_,:', and "
        "must end with an alphanumeric character or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName',  or "
        "'ReasonA,ReasonB',  or 'ReasonA:ReasonB', regex used for validation is "
        "'[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')",
        "status.disruptionsAllowed: Invalid value: -1: must be greater than or equal to 0",
        "status.currentHealthy: Invalid value: -2: must be greater than or equal to 0",
        "status.expectedPods: Invalid value: -3: must be greater than or equal to 0",
    ]
