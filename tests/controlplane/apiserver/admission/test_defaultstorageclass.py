"""DefaultStorageClass: a new claim without a class gets the (newest) default StorageClass; a claim
naming a class, even ``""``, keeps it (``plugin/pkg/admission/storage/storageclass/setdefault``)."""

from __future__ import annotations

from typing import Any

from controlplane.apiserver.admission.defaultstorageclass import default_class, default_class_patch, has_class
from controlplane.apiserver.admission.setup import DEFAULT_PLUGINS, ORDER

DEFAULT = {"storageclass.kubernetes.io/is-default-class": "true"}


def storage_class(name: str, created: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "creationTimestamp": created, "annotations": annotations or {}}}


def claim(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"], **spec}}


def test_the_newest_default_class_wins_and_names_break_ties() -> None:
    old = storage_class("old", "2026-01-01T00:00:00Z", DEFAULT)
    new = storage_class("new", "2026-02-01T00:00:00Z", DEFAULT)
    twin = storage_class("another", "2026-02-01T00:00:00Z", DEFAULT)
    plain = storage_class("plain", "2026-03-01T00:00:00Z")
    beta = storage_class(
        "beta", "2025-01-01T00:00:00Z", {"storageclass.beta.kubernetes.io/is-default-class": "true"}
    )
    assert default_class([old, plain, new]) is new
    assert default_class([new, twin]) is twin
    assert default_class([plain]) is None
    assert default_class([plain, beta]) is beta


def test_only_claims_without_a_class_are_defaulted() -> None:
    classes = [storage_class("standard", "2026-01-01T00:00:00Z", DEFAULT)]
    assert default_class_patch(claim(), classes) == [
        {"op": "add", "path": "/spec/storageClassName", "value": "standard"}
    ]
    assert default_class_patch(claim(storageClassName="fast"), classes) == []
    assert default_class_patch(claim(storageClassName=""), classes) == [], (
        '"" opts out of dynamic provisioning'
    )
    beta = {"metadata": {"annotations": {"volume.beta.kubernetes.io/storage-class": "x"}}, "spec": {}}
    assert has_class(beta) and default_class_patch(beta, classes) == []
    assert default_class_patch(claim(), []) == []


def test_the_plugin_is_on_by_default_after_default_toleration_seconds() -> None:
    assert "DefaultStorageClass" in DEFAULT_PLUGINS
    assert ORDER.index("DefaultStorageClass") == ORDER.index("DefaultTolerationSeconds") + 1
