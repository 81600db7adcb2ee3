"""Namespaces: the folders objects live in, and the finalizer that empties them before they go.

A namespace's name becomes part of DNS names (``web.shop.svc.cluster.local``), so it must be a DNS
**label** (no dots). On create the API server sets ``status.phase: Active``, labels the namespace
``kubernetes.io/metadata.name: <name>`` (so a NetworkPolicy can select a namespace by name) and puts
the ``kubernetes`` finalizer in ``spec.finalizers``.

That finalizer is why deleting a namespace is not instant: the namespace is marked ``Terminating``,
the namespace controller deletes everything in it, and only then removes ``kubernetes`` from
``spec.finalizers`` through the ``namespaces/<name>/finalize`` subresource; an ordinary update may not
change ``spec.finalizers`` (it would let anyone skip the cleanup). ``status.phase`` follows the
deletion: ``Active`` while ``deletionTimestamp`` is unset, ``Terminating`` after.

Upstream: ``pkg/registry/core/namespace/strategy.go``, ``ValidateNamespace*`` in
``pkg/apis/core/validation/validation.go``.
"""

from __future__ import annotations

import copy
from typing import Any

from controlplane.api.meta import Object
from controlplane.api.strategies.common import (
    CoreKindStrategy,
    as_dict,
    as_list,
    as_str,
    index,
    spec_of,
    validate_kube_finalizers,
)
from controlplane.api.strategies.workloads import validate_meta_update
from controlplane.api.validation import FieldError, invalid, is_dns1123_label, is_qualified_name

NAME_LABEL = "kubernetes.io/metadata.name"
FINALIZER = "kubernetes"


def _validate_finalizer_names(finalizers: Any, path: str, *, indexed: bool) -> list[FieldError]:
    """``validateFinalizerName``: a qualified name, and Kubernetes' own when it has no prefix."""
    errors: list[FieldError] = []
    for i, name in enumerate(as_list(finalizers)):
        field = index(path, i) if indexed else path
        errors += [invalid(field, name, msg) for msg in is_qualified_name(as_str(name))]
        errors += [
            FieldError(e.type, e.reason, field, e.detail, e.value, e.has_value)
            for e in validate_kube_finalizers([name], path)
        ]
    return errors


class NamespaceStrategy(CoreKindStrategy):
    """Namespaces: DNS-label names, the ``kubernetes`` finalizer, phase in status."""

    status_subresource = True
    name_validator = staticmethod(is_dns1123_label)
    #: Whether a plain update may change ``spec.finalizers`` (upstream: no; only
    #: ``namespaces/<n>/finalize``, with ``NamespaceFinalizeStrategy``).
    finalize_through_update = False

    def default(self, obj: Object) -> None:
        """``SetDefaults_Namespace`` (and ``Canonicalize`` on update): the name label."""
        meta = obj["metadata"]
        name = meta.get("name")
        if name:
            labels = meta.get("labels")
            if not isinstance(labels, dict):
                labels = meta["labels"] = {}
            labels[NAME_LABEL] = name

    def reset_status(self, obj: Object) -> None:
        obj["status"] = {"phase": "Active"}
        spec = spec_of(obj)
        finalizers = as_list(spec.get("finalizers"))
        if FINALIZER not in finalizers:
            spec["finalizers"] = [*finalizers, FINALIZER]

    def prepare_for_update(self, obj: Object, old: Object) -> None:
        super().prepare_for_update(obj, old)
        if not self.finalize_through_update:
            spec = spec_of(obj)
            old_finalizers = as_dict(old.get("spec")).get("finalizers")
            if old_finalizers is None:
                spec.pop("finalizers", None)
            else:
                spec["finalizers"] = copy.deepcopy(old_finalizers)

    def validate(self, obj: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidateNamespace`` (upstream's spec.finalizers errors carry no index)."""
        errors = self.validate_meta(obj, namespaced=namespaced)
        return errors + _validate_finalizer_names(
            as_dict(obj.get("spec")).get("finalizers"), "spec.finalizers", indexed=False
        )

    def validate_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidateNamespaceUpdate``: the metadata rules only."""
        errors = validate_meta_update(obj, old)
        if self.finalize_through_update:
            errors += _validate_finalizer_names(
                as_dict(obj.get("spec")).get("finalizers"), "spec.finalizers", indexed=True
            )
        return errors

    def validate_status_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidateNamespaceStatusUpdate`` (sic ``status.Phase``: upstream's path is capitalised)."""
        errors = validate_meta_update(obj, old)
        phase = as_dict(obj.get("status")).get("phase")
        if not obj["metadata"].get("deletionTimestamp"):
            if phase != "Active":
                errors.append(
                    invalid("status.Phase", phase, "may only be 'Active' if `deletionTimestamp` is empty")
                )
        elif phase != "Terminating":
            errors.append(
                invalid(
                    "status.Phase", phase, "may only be 'Terminating' if `deletionTimestamp` is not empty"
                )
            )
        return errors


class NamespaceFinalizeStrategy(NamespaceStrategy):
    """``namespaces/<name>/finalize``: only ``spec.finalizers`` changes (``finalizeStrategy``)."""

    def prepare_for_update(self, obj: Object, old: Object) -> None:
        finalizers = as_dict(obj.get("spec")).get("finalizers")
        obj.clear()
        obj.update(copy.deepcopy(old))
        spec = spec_of(obj)
        if finalizers is None:
            spec.pop("finalizers", None)
        else:
            spec["finalizers"] = finalizers

    def validate_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidateNamespaceFinalizeUpdate``."""
        return validate_meta_update(obj, old) + _validate_finalizer_names(
            as_dict(obj.get("spec")).get("finalizers"), "spec.finalizers", indexed=True
        )


__all__ = ["NAME_LABEL", "NamespaceFinalizeStrategy", "NamespaceStrategy"]
