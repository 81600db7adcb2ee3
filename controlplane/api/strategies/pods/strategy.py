"""The pod strategies: the registry's hooks for creating, updating, deleting and binding pods.

``PodStrategy`` is upstream's ``podStrategy`` and ``podStatusStrategy``
(``pkg/registry/core/pod/strategy.go``); the generic registry calls it for every pod request (the
hooks are described on the base class, ``controlplane.api.strategies.base``). It wires the other modules of
this package together:

- ``default`` runs the defaulters (``defaults``); ``reset_status`` starts a new pod ``Pending`` with
  its QoS class (``qos``);
- ``validate`` is ``ValidatePodCreate`` (``spec``, plus what only a new pod may not have:
  ephemeral containers, a ``nodeName`` while scheduling gates remain); ``validate_update`` is
  ``ValidatePodUpdate`` (``updates``); ``validate_status_update`` checks ``pods/status`` (``status``);
- ``deletion_grace_period`` is ``CheckGracefulDelete``: a pod on a node is deleted *gracefully* (the
  kubelet gets ``terminationGracePeriodSeconds`` to stop it); a pod no kubelet runs goes at once.

``PodBindingStrategy`` is ``pods/binding`` (``pkg/registry/core/pod/storage/storage.go`` ``assignPod``):
the scheduler's way to set ``spec.nodeName``, the one spec field a plain update may never set.
"""

from __future__ import annotations

from controlplane.api.deepcopy import deep_copy
from controlplane.api.meta import Object
from controlplane.api.strategies.common import (
    CoreKindStrategy,
    as_dict,
    as_list,
    as_str,
    spec_of,
)
from controlplane.api.strategies.pods.defaults import default_pod_only, default_pod_spec
from controlplane.api.strategies.pods.qos import pod_qos_class
from controlplane.api.strategies.pods.spec import validate_pod_spec
from controlplane.api.strategies.pods.status import validate_pod_status_update
from controlplane.api.strategies.pods.updates import validate_pod_update
from controlplane.api.validation import (
    FieldError,
    forbidden,
    invalid,
    is_dns1123_subdomain,
    required,
    validate_object_meta_update,
)


class PodStrategy(CoreKindStrategy):
    """Pods (``pkg/registry/core/pod/strategy.go``): status from the kubelet, graceful deletion,
    ``metadata.generation`` counting spec changes (PodObservedGenerationTracking), QoS at creation."""

    status_subresource = True
    tracks_generation = True
    graceful_deletion = True
    #: Whether a plain update may set ``spec.nodeName`` (upstream: never; only ``pods/binding`` may,
    #: and the registry applies a binding without this strategy).
    binding_through_update = False
    #: ``podStatusStrategy.PrepareForUpdate``: old kubelets corrupted ownerReferences through
    #: ``pods/status``, which broke garbage collection, so the endpoint may not touch them.
    status_resets_metadata = ("ownerReferences",)

    def default(self, obj: Object) -> None:
        spec = spec_of(obj)
        default_pod_spec(spec)
        default_pod_only(spec)

    def reset_status(self, obj: Object) -> None:
        obj["status"] = {"phase": "Pending", "qosClass": pod_qos_class(spec_of(obj))}

    def deletion_grace_period(self, obj: Object, requested: int | None) -> int:
        """``CheckGracefulDelete``: a pod no kubelet runs (not scheduled, or already finished) has
        nobody to wait for and goes at once (``pkg/registry/core/pod/strategy.go``)."""
        period = super().deletion_grace_period(obj, requested)
        if not spec_of(obj).get("nodeName"):
            return 0
        if (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return 0
        return period

    def validate(self, obj: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidatePodCreate``: the pod, then what only a *new* pod may not have."""
        errors = self._validate_metadata_and_spec(obj, namespaced=namespaced)
        spec = as_dict(obj.get("spec"))
        if as_list(spec.get("ephemeralContainers")):
            errors.append(forbidden("spec.ephemeralContainers", "cannot be set on create"))
        if spec.get("nodeName") and as_list(spec.get("schedulingGates")):
            errors.append(
                forbidden("spec.nodeName", "cannot be set until all schedulingGates have been cleared")
            )
        return errors

    def _validate_metadata_and_spec(self, obj: Object, *, namespaced: bool) -> list[FieldError]:
        """``validatePodMetadataAndSpec``: what a pod must satisfy on create and on every update."""
        errors = self.validate_meta(obj, namespaced=namespaced)
        spec = as_dict(obj.get("spec"))
        errors += validate_pod_spec(spec, "spec", is_pod=True)
        if not as_str(spec.get("serviceAccountName")):
            for vi, volume in enumerate(as_list(spec.get("volumes"))):
                for si, source in enumerate(
                    as_list(as_dict(as_dict(volume).get("projected")).get("sources"))
                ):
                    if as_dict(source).get("serviceAccountToken") is not None:
                        errors.append(
                            forbidden(
                                f"spec.volumes[{vi}].projected.sources[{si}].serviceAccountToken",
                                "must not be specified when serviceAccountName is not set",
                            )
                        )
        for field in ("containers", "initContainers"):
            for i, container in enumerate(as_list(spec.get(field))):
                image = as_str(as_dict(container).get("image"))
                if image != image.strip():
                    errors.append(
                        invalid(
                            f"spec.{field}[{i}].image", image, "must not have leading or trailing whitespace"
                        )
                    )
        return errors

    def validate_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidatePodUpdate``: metadata, the whole pod again, then what may not change."""
        errors = validate_object_meta_update(obj["metadata"], old["metadata"])
        errors += self._validate_metadata_and_spec(obj, namespaced=namespaced)
        return errors + validate_pod_update(obj, old, allow_binding=self.binding_through_update)

    def prepare_for_status_update(self, obj: Object, old: Object) -> None:
        status = as_dict(obj.get("status"))
        super().prepare_for_status_update(obj, old)
        old_status = as_dict(old.get("status"))
        if not status.get("qosClass") and old_status.get("qosClass"):
            status["qosClass"] = old_status["qosClass"]  # old kubelets dropped it: keep it immutable
        if not status.get("observedGeneration") and old_status.get("observedGeneration"):
            status["observedGeneration"] = old_status["observedGeneration"]

    def validate_status_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        return super().validate_status_update(obj, old, namespaced=namespaced) + validate_pod_status_update(
            obj, old
        )


class PodBindingStrategy(PodStrategy):
    """``pods/binding`` (``pkg/registry/core/pod/storage/storage.go`` ``assignPod``): only ``spec.nodeName``
    (and the PodScheduled condition) change; the rest of the pod is the stored one."""

    binding_through_update = True

    def prepare_for_update(self, obj: Object, old: Object) -> None:
        node_name = as_dict(obj.get("spec")).get("nodeName")
        conditions = as_dict(obj.get("status")).get("conditions")
        obj.clear()
        obj.update(deep_copy(old))
        spec_of(obj)["nodeName"] = node_name
        if conditions is not None:
            obj.setdefault("status", {})["conditions"] = conditions
        if old.get("spec") != obj.get("spec"):
            obj["metadata"]["generation"] = old["metadata"].get("generation", 1) + 1

    def validate_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        node_name = as_str(as_dict(obj.get("spec")).get("nodeName"))
        if not node_name:
            return [required("target.name")]
        return [invalid("target.name", node_name, m) for m in is_dns1123_subdomain(node_name)]
