"""DefaultStorageClass: a claim that names no StorageClass gets the cluster's default one.

``kubectl apply`` of a PersistentVolumeClaim with no ``storageClassName`` is the common case: the user
wants storage and does not care how it is made. This plugin fills ``spec.storageClassName`` on a new
claim with the class annotated ``storageclass.kubernetes.io/is-default-class: "true"`` (the newest one
if several are; by name if they were created at the same instant), so the provisioner of that class
creates a volume for it. A claim that names a class keeps it, and so does one that says
``storageClassName: ""``: the empty class means "only a pre-provisioned volume without a class", and
is how a user opts out of dynamic provisioning. Without a default class the claim is left alone.

Only creates are defaulted; a claim created while no class was default stays without one (upstream's
PV controller may assign one later, retroactively; Kubelab's does not).

Upstream: ``plugin/pkg/admission/storage/storageclass/setdefault/admission.go`` and
``GetDefaultClass`` in ``pkg/volume/util/storageclass.go``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from controlplane.api.meta import parse_time
from controlplane.api.strategies.storage import BETA_STORAGE_CLASS_ANNOTATION, is_default_class
from controlplane.apiserver.admission.attributes import CREATE, Attributes, Object, PatchOp, section
from controlplane.apiserver.admission.chain import ClusterView, Plugin, Scope

PLUGIN_NAME: Final = "DefaultStorageClass"


def default_class(classes: Sequence[Object]) -> Object | None:
    """``GetDefaultClass``: the newest default class, ties broken by name."""
    defaults = [c for c in classes if is_default_class(c)]
    if not defaults:
        return None

    def order(storage_class: Object) -> tuple[float, str]:
        created = parse_time((storage_class.get("metadata") or {}).get("creationTimestamp"))
        return (-(created.timestamp() if created else 0.0), str(storage_class["metadata"].get("name", "")))

    return sorted(defaults, key=order)[0]


def has_class(claim: Object) -> bool:
    """``PersistentVolumeClaimHasClass``: a ``storageClassName`` (even ``""``) or the beta annotation."""
    annotations = section(claim, "metadata", "annotations")
    if isinstance(annotations, dict) and BETA_STORAGE_CLASS_ANNOTATION in annotations:
        return True
    spec = claim.get("spec")
    return isinstance(spec, dict) and spec.get("storageClassName") is not None


def default_class_patch(claim: Object, classes: Sequence[Object]) -> list[PatchOp]:
    """The patch that names the default class on a claim without one (pure)."""
    if has_class(claim) or not isinstance(claim.get("spec"), dict):
        return []
    chosen = default_class(classes)
    if chosen is None:
        return []
    return [{"op": "add", "path": "/spec/storageClassName", "value": chosen["metadata"]["name"]}]


class DefaultStorageClass(Plugin):
    name = PLUGIN_NAME
    mutating = True

    def handles(self, a: Attributes) -> bool:
        return (
            a.group == ""
            and a.resource == "persistentvolumeclaims"
            and not a.subresource
            and a.operation == CREATE
            and a.object is not None
        )

    async def admit(self, a: Attributes, cluster: ClusterView, scope: Scope) -> list[PatchOp]:
        assert a.object is not None
        if has_class(a.object):
            return []
        return default_class_patch(a.object, cluster.cached_list("storage.k8s.io", "storageclasses", None))


__all__ = ["PLUGIN_NAME", "DefaultStorageClass", "default_class", "default_class_patch", "has_class"]
