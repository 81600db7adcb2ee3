"""Leases: ``pkg/apis/coordination/validation/validation_test.go`` ``TestValidateLeaseSpec``."""

from __future__ import annotations

import copy
from typing import Any

from controlplane.api.strategies import LeaseStrategy
from tests.controlplane.api.strategies import create, stored, update

STRATEGY = LeaseStrategy()


def lease(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "kube-scheduler"},
        "spec": spec,
    }


def test_a_leader_election_lease_is_valid_and_renewable() -> None:
    old = stored(STRATEGY, lease(holderIdentity="a", leaseDurationSeconds=15, leaseTransitions=0))
    renewed = copy.deepcopy(old)
    renewed["spec"]["renewTime"] = "2025-01-01T00:00:10.000000Z"
    assert update(STRATEGY, renewed, old)[1] == []


def test_spec_ranges() -> None:
    assert create(STRATEGY, lease(leaseDurationSeconds=0, leaseTransitions=-1))[1] == [
        "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0",
        "spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0",
    ]


def test_coordinated_strategy_fields() -> None:
    assert create(STRATEGY, lease(strategy="Youngest"))[1] == [
        'spec.strategy.strategy: Unsupported value: "Youngest": supported values: "OldestEmulationVersion"'
    ]
    assert create(STRATEGY, lease(preferredHolder="b"))[1] == [
        "spec.preferredHolder: Forbidden: may only be specified if `strategy` is defined"
    ]
    assert create(STRATEGY, lease(strategy="example.com/fair", preferredHolder="b"))[1] == []
