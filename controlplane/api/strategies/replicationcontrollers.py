"""ReplicationControllers and PodTemplates: the core/v1 ancestors of ReplicaSets.

A **ReplicationController** (``kubectl get rc``) is what a ReplicaSet was before the apps group existed:
``replicas`` pods from a ``template``, counted through a ``selector``. Two differences remain:

- its selector is a plain **label map** (``{"app": "web"}``: every key must equal its value), not a
  ``LabelSelector`` with ``matchLabels``/``matchExpressions``; and it is **mutable**;
- it is **defaulted from the template**: an RC without a selector selects its template's labels, an RC
  without labels gets them too (``SetDefaults_ReplicationController``), so ``replicas: 3`` and a
  labelled template are a complete RC.

The selector must still match the template's labels (``spec.template.metadata.labels: Invalid value:
... `selector` does not match template `labels```), must not be empty (``spec.selector: Required
value``), and the template's ``restartPolicy`` must be ``Always``.

A **PodTemplate** is a pod template stored as an object of its own (``template`` at the top level, no
spec, no status): nothing in Kubernetes creates pods from it, but it is validated like any template
and its ``metadata.generation`` counts changes to the template.

Upstream: ``pkg/apis/core/v1/defaults.go`` (``SetDefaults_ReplicationController``),
``pkg/apis/core/validation/validation.go`` (``ValidateReplicationController``,
``ValidatePodTemplateSpecForRC``, ``ValidatePodTemplate``), ``pkg/registry/core/replicationcontroller/
strategy.go`` and ``pkg/registry/core/podtemplate/strategy.go``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controlplane.api.meta import Object
from controlplane.api.strategies.common import (
    CoreKindStrategy,
    as_dict,
    as_list,
    child,
    go_string_map,
    invalid_go,
    is_int,
    nonnegative,
    semantic,
    spec_of,
)
from controlplane.api.strategies.pods import default_pod_spec, validate_pod_spec, validate_pod_template_meta
from controlplane.api.strategies.workloads import validate_meta_update
from controlplane.api.validation import (
    FieldError,
    forbidden,
    invalid,
    not_supported,
    required,
    validate_object_meta_update,
)


def _default_template_spec(template: Any) -> None:
    if isinstance(template, dict):
        pod_spec = template.get("spec")
        if not isinstance(pod_spec, dict):
            pod_spec = template["spec"] = {}
        default_pod_spec(pod_spec)


def _selector_matches(selector: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    """``labels.Set(selector).AsSelector().Matches(labels)``: every selector pair is among the labels."""
    return all(k in labels and labels[k] == v for k, v in selector.items())


def validate_template_spec(template: Any, path: str, *, owner: str) -> list[FieldError]:
    """``ValidatePodTemplateSpec`` plus the rules of a replicated template (``restartPolicy: Always``,
    no ``activeDeadlineSeconds``); ``owner`` names the kind in upstream's message."""
    template = as_dict(template)
    errors = validate_pod_template_meta(template, path)
    pod_spec = as_dict(template.get("spec"))
    errors += validate_pod_spec(pod_spec, child(path, "spec"), is_pod=False)
    if as_list(pod_spec.get("ephemeralContainers")):
        errors.append(
            forbidden(
                child(path, "spec.ephemeralContainers"), "ephemeral containers not allowed in pod template"
            )
        )
    if not owner:
        return errors
    restart = pod_spec.get("restartPolicy")
    if restart != "Always":
        errors.append(not_supported(child(path, "spec.restartPolicy"), restart, ["Always"]))
    if pod_spec.get("activeDeadlineSeconds") is not None:
        errors.append(
            forbidden(
                child(path, "spec.activeDeadlineSeconds"),
                f"activeDeadlineSeconds in {owner} is not Supported",
            )
        )
    return errors


def validate_replication_controller_spec(spec: Mapping[str, Any], path: str) -> list[FieldError]:
    """``ValidateReplicationControllerSpec`` and ``ValidatePodTemplateSpecForRC``."""
    errors = nonnegative(spec.get("minReadySeconds"), child(path, "minReadySeconds"))
    selector = as_dict(spec.get("selector"))
    if not selector:  # ValidateNonEmptySelector
        errors.append(required(child(path, "selector")))
    errors += nonnegative(spec.get("replicas"), child(path, "replicas"))
    template_path = child(path, "template")
    template = spec.get("template")
    if template is None:
        errors.append(required(template_path))
        return errors
    labels = as_dict(as_dict(as_dict(template).get("metadata")).get("labels"))
    if selector and not _selector_matches(selector, labels):
        errors.append(
            invalid_go(
                child(child(template_path, "metadata"), "labels"),
                go_string_map(as_dict(as_dict(template).get("metadata")).get("labels")),
                "`selector` does not match template `labels`",
                labels,
            )
        )
    return errors + validate_template_spec(template, template_path, owner="ReplicationController")


def validate_replication_controller_status(status: Mapping[str, Any]) -> list[FieldError]:
    """``ValidateReplicationControllerStatus``: counts not negative, none above ``replicas``."""
    errors: list[FieldError] = []
    for field in (
        "replicas",
        "fullyLabeledReplicas",
        "readyReplicas",
        "availableReplicas",
        "observedGeneration",
    ):
        errors += nonnegative(status.get(field), child("status", field))
    replicas = status.get("replicas", 0)
    for field in ("fullyLabeledReplicas", "readyReplicas", "availableReplicas"):
        value = status.get(field, 0)
        if is_int(value) and is_int(replicas) and value > replicas:
            errors.append(invalid(child("status", field), value, "cannot be greater than status.replicas"))
    available, ready = status.get("availableReplicas", 0), status.get("readyReplicas", 0)
    if is_int(available) and is_int(ready) and available > ready:
        errors.append(invalid("status.availableReplicas", available, "cannot be greater than readyReplicas"))
    return errors


class ReplicationControllerStrategy(CoreKindStrategy):
    """``pkg/registry/core/replicationcontroller/strategy.go``."""

    status_subresource = True
    tracks_generation = True

    def reset_status(self, obj: Object) -> None:
        obj["status"] = {"replicas": 0}

    def default(self, obj: Object) -> None:
        """``SetDefaults_ReplicationController`` and the pod-spec defaults of its template."""
        spec = spec_of(obj)
        template = spec.get("template")
        labels = as_dict(template.get("metadata")).get("labels") if isinstance(template, dict) else None
        if isinstance(labels, dict):
            if not spec.get("selector"):
                spec["selector"] = dict(labels)
            meta = obj.setdefault("metadata", {})
            if not meta.get("labels"):
                meta["labels"] = dict(labels)
        if spec.get("replicas") is None:
            spec["replicas"] = 1
        _default_template_spec(template)

    def validate(self, obj: Object, *, namespaced: bool) -> list[FieldError]:
        return self.validate_meta(obj, namespaced=namespaced) + validate_replication_controller_spec(
            as_dict(obj.get("spec")), "spec"
        )

    def validate_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidateReplicationControllerUpdate``: the selector may change (unlike a ReplicaSet's)."""
        return validate_meta_update(obj, old) + validate_replication_controller_spec(
            as_dict(obj.get("spec")), "spec"
        )

    def validate_status_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidateReplicationControllerStatusUpdate``."""
        return validate_object_meta_update(
            obj["metadata"], old["metadata"]
        ) + validate_replication_controller_status(as_dict(obj.get("status")))


class PodTemplateStrategy(CoreKindStrategy):
    """``pkg/registry/core/podtemplate/strategy.go``: a template, validated; generation on change."""

    tracks_generation = True

    def default(self, obj: Object) -> None:
        template = obj.get("template")
        if not isinstance(template, dict):
            template = obj["template"] = {}
        _default_template_spec(template)

    def spec_changed(self, obj: Object, old: Object) -> bool:
        # A PodTemplate has no spec: any change to its template bumps the generation.
        return bool(semantic(obj.get("template")) != semantic(old.get("template")))

    def validate(self, obj: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidatePodTemplate``."""
        return self.validate_meta(obj, namespaced=namespaced) + validate_template_spec(
            obj.get("template"), "template", owner=""
        )

    def validate_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidatePodTemplateUpdate``."""
        return validate_meta_update(obj, old) + validate_template_spec(
            obj.get("template"), "template", owner=""
        )


__all__ = [
    "PodTemplateStrategy",
    "ReplicationControllerStrategy",
    "validate_replication_controller_spec",
    "validate_template_spec",
]
