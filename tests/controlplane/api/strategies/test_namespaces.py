"""Namespaces: ``pkg/registry/core/namespace/strategy_test.go`` and ``TestValidateNamespace*``."""

from __future__ import annotations

import copy

from controlplane.api.strategies import NamespaceFinalizeStrategy, NamespaceStrategy
from tests.controlplane.api.strategies import create, status_update, stored, update

STRATEGY = NamespaceStrategy()


def namespace(name: str = "shop", **spec: object) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}, "spec": dict(spec)}


def test_a_new_namespace_is_active_labelled_and_finalized() -> None:
    body = namespace(finalizers=["example.com/cleanup"])
    body["status"] = {"phase": "Terminating"}
    obj = stored(STRATEGY, body, namespaced=False)
    assert obj["status"] == {"phase": "Active"}
    assert obj["spec"]["finalizers"] == ["example.com/cleanup", "kubernetes"]
    assert obj["metadata"]["labels"] == {"kubernetes.io/metadata.name": "shop"}


def test_names_are_dns_labels_and_finalizers_qualified() -> None:
    _, messages = create(STRATEGY, namespace("my.shop", finalizers=["cleanup"]), namespaced=False)
    assert messages == [
        'metadata.name: Invalid value: "my.shop": a lowercase RFC 1123 label must consist of lower case '
        "alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. "
        "'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        'spec.finalizers: Invalid value: "cleanup": name is neither a standard finalizer name nor is it '
        "fully qualified",
    ]


def test_the_name_label_cannot_be_removed() -> None:
    old = stored(STRATEGY, namespace(), namespaced=False)
    new = copy.deepcopy(old)
    new["metadata"]["labels"] = {"team": "a"}
    result, messages = update(STRATEGY, new, old, namespaced=False)
    assert messages == []
    assert result["metadata"]["labels"] == {"team": "a", "kubernetes.io/metadata.name": "shop"}


def test_phase_follows_the_deletion_timestamp() -> None:
    old = stored(STRATEGY, namespace(), namespaced=False)
    new = copy.deepcopy(old)
    new["status"] = {"phase": "Terminating"}
    assert status_update(STRATEGY, new, old, namespaced=False)[1] == [
        "status.Phase: Invalid value: \"Terminating\": may only be 'Active' if `deletionTimestamp` is empty"
    ]
    deleting = copy.deepcopy(old)
    deleting["metadata"]["deletionTimestamp"] = "2025-01-01T00:01:00Z"
    assert status_update(STRATEGY, dict(deleting, status={"phase": "Active"}), deleting, namespaced=False)[
        1
    ] == [
        'status.Phase: Invalid value: "Active": '
        "may only be 'Terminating' if `deletionTimestamp` is not empty"
    ]


def test_finalize_changes_only_the_finalizers() -> None:
    old = stored(STRATEGY, namespace(), namespaced=False)
    request = copy.deepcopy(old)
    request["spec"]["finalizers"] = []
    request["metadata"]["labels"] = {"sneaky": "yes"}
    result, messages = update(NamespaceFinalizeStrategy(), request, old, namespaced=False)
    assert messages == []
    assert result["spec"]["finalizers"] == [] and result["metadata"]["labels"] == old["metadata"]["labels"]
    strict = NamespaceStrategy()
    strict.finalize_through_update = False  # once the registry routes finalize separately
    assert update(strict, request, old, namespaced=False)[0]["spec"]["finalizers"] == ["kubernetes"]
