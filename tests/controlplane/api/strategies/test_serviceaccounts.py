"""ServiceAccounts: ``TestValidateServiceAccount`` (``pkg/apis/core/validation/validation_test.go``)."""

from __future__ import annotations

import copy

from controlplane.api.strategies import ServiceAccountStrategy
from tests.controlplane.api.strategies import create, stored, update

STRATEGY = ServiceAccountStrategy()


def account(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}}


def test_names_are_dns_subdomains_and_nothing_is_defaulted() -> None:
    obj = stored(STRATEGY, account("builder.ci"))
    assert set(obj) == {"apiVersion", "kind", "metadata"}
    messages = create(STRATEGY, account("Builder"))[1]
    assert len(messages) == 1
    assert messages[0].startswith('metadata.name: Invalid value: "Builder": a lowercase RFC 1123 subdomain')


def test_metadata_rules_hold_on_update() -> None:
    old = stored(STRATEGY, account("builder"))
    new = copy.deepcopy(old)
    new["metadata"]["finalizers"] = ["cleanup"]
    new["automountServiceAccountToken"] = False
    assert update(STRATEGY, new, old)[1] == [
        'metadata.finalizers[0]: Invalid value: "cleanup": name is neither a standard finalizer name nor is '
        "it fully qualified"
    ]
