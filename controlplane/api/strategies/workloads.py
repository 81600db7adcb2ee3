"""Deployments and ReplicaSets: a pod template, a replica count, and a selector that ties them together.

A ReplicaSet keeps ``replicas`` pods running from its ``template``. It does not keep a list of its
pods: it counts the pods whose labels match its ``selector``. So the selector **must match the
template's labels** (``spec.template.metadata.labels: Invalid value: {"app":"web"}:
`selector` does not match template `labels```): otherwise every pod it creates would be invisible to
it and it would create pods forever. And the selector is **immutable** (``spec.selector: ... field is
immutable``): changing it would orphan every existing pod and adopt unrelated ones. A Deployment owns
ReplicaSets the same way and rolls from one template to the next with its ``strategy``
(``RollingUpdate`` with ``maxSurge``/``maxUnavailable``, both defaulting to 25%, never both 0 or the
rollout could make no progress; or ``Recreate``).

``metadata.generation`` counts changes to the **spec** only (for a Deployment, also to its
annotations, which it copies to its ReplicaSets): a controller writes the generation it has acted on
into ``status.observedGeneration``, and ``kubectl rollout status`` waits until the two agree. A
status write, a label change or a scale-to-the-same-number does not bump it, so it means "the desired
state changed", nothing else.

The template is validated exactly like a pod's spec (paths under ``spec.template.spec``), with two
template rules: ``restartPolicy`` must be ``Always`` (a ReplicaSet replaces pods, it does not wait for
them to finish) and ``activeDeadlineSeconds`` is not allowed. Defaults: ``replicas: 1``,
``revisionHistoryLimit: 10``, ``progressDeadlineSeconds: 600`` and the pod-spec defaults in the
template (``pkg/apis/apps/v1/defaults.go``). Validation: ``pkg/apis/apps/validation/validation.go``;
strategies: ``pkg/registry/apps/{deployment,replicaset}/strategy.go``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from controlplane.api.meta import Object
from controlplane.api.strategies.common import (
    FIELD_IMMUTABLE,
    CoreKindStrategy,
    as_dict,
    as_list,
    as_str,
    child,
    go_int_or_string,
    go_json,
    go_label_selector,
    go_string_map,
    invalid_go,
    is_int,
    nonnegative,
    not_supported_go,
    selector_is_empty,
    selector_matches,
    semantic,
    spec_of,
    validate_label_selector,
)
from controlplane.api.strategies.pods import default_pod_spec, validate_pod_spec, validate_pod_template_meta
from controlplane.api.validation import (
    FieldError,
    forbidden,
    invalid,
    not_supported,
    required,
    validate_annotations,
    validate_labels,
    validate_object_meta_update,
)

DEFAULT_MAX_SURGE: Final = "25%"
DEFAULT_MAX_UNAVAILABLE: Final = "25%"
_PERCENT_RE_TEXT: Final = "[0-9]+%"
PERCENT_ERROR: Final = (
    "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', "
    f"regex used for validation is '{_PERCENT_RE_TEXT}')"
)


def default_template(spec: dict[str, Any]) -> None:
    """The pod-spec defaults, applied to ``spec.template.spec`` (``SetDefaults_PodSpec`` and below)."""
    template = spec.get("template")
    if not isinstance(template, dict):
        template = spec["template"] = {}
    pod_spec = template.get("spec")
    if not isinstance(pod_spec, dict):
        pod_spec = template["spec"] = {}
    default_pod_spec(pod_spec)


def validate_meta_update(obj: Object, old: Object) -> list[FieldError]:
    """apimachinery's ``ValidateObjectMetaUpdate``: identity fields, and labels/annotations again."""
    meta = obj["metadata"]
    return (
        validate_object_meta_update(meta, old["metadata"])
        + validate_labels(meta.get("labels"), "metadata.labels")
        + validate_annotations(meta.get("annotations"), "metadata.annotations")
    )


# -- int-or-percent (maxSurge / maxUnavailable) ----------------------------------------------------


def _percent(value: Any) -> int | None:
    if isinstance(value, str) and value.endswith("%") and value[:-1].isdigit() and value[:-1].isascii():
        return int(value[:-1])
    return None


def _int_or_percent_value(value: Any) -> int:
    """``getIntOrPercentValue``: the percentage, or the integer (a non-numeric string counts as 0)."""
    percent = _percent(value)
    if percent is not None:
        return percent
    if is_int(value):
        return value
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return 0
    return 0


def validate_positive_int_or_percent(value: Any, path: str) -> list[FieldError]:
    """``ValidatePositiveIntOrPercent``."""
    if isinstance(value, str):
        if _percent(value) is None:
            return [invalid_go(path, go_int_or_string(value), PERCENT_ERROR, value)]
        return []
    if is_int(value):
        return nonnegative(value, path)
    return [invalid_go(path, go_int_or_string(value), "must be an integer or percentage (e.g '5%%')", value)]


def _not_more_than_100_percent(value: Any, path: str) -> list[FieldError]:
    percent = _percent(value)
    if percent is not None and percent > 100:
        return [invalid_go(path, go_int_or_string(value), "must not be greater than 100%", value)]
    return []


def validate_deployment_strategy(strategy: Any, path: str) -> list[FieldError]:
    """``ValidateDeploymentStrategy`` / ``ValidateRollingUpdateDeployment``."""
    strategy = as_dict(strategy)
    kind = strategy.get("type")
    rolling = strategy.get("rollingUpdate")
    if kind == "Recreate":
        if rolling is not None:
            return [
                forbidden(
                    child(path, "rollingUpdate"), "may not be specified when strategy `type` is 'Recreate'"
                )
            ]
        return []
    if kind == "RollingUpdate":
        if rolling is None:
            return [required(child(path, "rollingUpdate"), "this should be defaulted and never be nil")]
        rolling = as_dict(rolling)
        ru_path = child(path, "rollingUpdate")
        unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
        errors = validate_positive_int_or_percent(unavailable, child(ru_path, "maxUnavailable"))
        errors += validate_positive_int_or_percent(surge, child(ru_path, "maxSurge"))
        if _int_or_percent_value(unavailable) == 0 and _int_or_percent_value(surge) == 0:
            errors.append(
                invalid_go(
                    child(ru_path, "maxUnavailable"),
                    go_int_or_string(unavailable),
                    "may not be 0 when `maxSurge` is 0",
                    unavailable,
                )
            )
        return errors + _not_more_than_100_percent(unavailable, child(ru_path, "maxUnavailable"))
    # The internal apps.DeploymentStrategy as JSON (Go field names; IntOrStrings marshal as 0 or "25%").
    rendered_rolling = None
    if rolling is not None:
        rendered_rolling = {
            "MaxUnavailable": as_dict(rolling).get("maxUnavailable") or 0,
            "MaxSurge": as_dict(rolling).get("maxSurge") or 0,
        }
    rendered = go_json({"Type": as_str(kind), "RollingUpdate": rendered_rolling})
    return [not_supported_go(path, rendered, ["Recreate", "RollingUpdate"], strategy)]


# -- selector and template -------------------------------------------------------------------------


def validate_selector_and_template(spec: Mapping[str, Any], path: str, *, kind: str) -> list[FieldError]:
    """The selector (required, valid, not empty) and the template it must match.

    ``ValidateDeploymentSpec``/``ValidateReplicaSetSpec`` + ``ValidatePodTemplateSpecForReplicaSet``.
    A missing selector matches nothing, so a Deployment without one is told both that the selector is
    required *and* that it does not match the template's labels, as upstream does.
    """
    errors: list[FieldError] = []
    selector = spec.get("selector")
    selector_path = child(path, "selector")
    convertible = True
    if selector is None:
        errors.append(required(selector_path))
    else:
        selector_errors = validate_label_selector(selector, selector_path)
        errors += selector_errors
        convertible = not selector_errors
        if selector_is_empty(as_dict(selector)):
            # ReplicaSets say "deployment" too: upstream's message is shared.
            errors.append(
                invalid_go(
                    selector_path, go_label_selector(selector), "empty selector is invalid for deployment"
                )
            )
    if not convertible:
        errors.append(invalid_go(selector_path, go_label_selector(selector), "invalid label selector"))
        return errors
    template = as_dict(spec.get("template"))
    template_path = child(path, "template")
    labels = as_dict(template.get("metadata")).get("labels")
    # A missing selector matches nothing; an empty one ({}) matches everything.
    matches = selector is not None and (
        selector_is_empty(as_dict(selector)) or selector_matches(as_dict(selector), as_dict(labels))
    )
    if not matches:
        errors.append(
            invalid_go(
                child(child(template_path, "metadata"), "labels"),
                go_string_map(labels),
                "`selector` does not match template `labels`",
                labels,
            )
        )
    errors += validate_pod_template_meta(template, template_path)
    pod_spec = as_dict(template.get("spec"))
    errors += validate_pod_spec(pod_spec, child(template_path, "spec"), is_pod=False)
    if as_list(pod_spec.get("ephemeralContainers")):
        errors.append(
            forbidden(
                child(template_path, "spec.ephemeralContainers"),
                "ephemeral containers not allowed in pod template",
            )
        )
    restart = pod_spec.get("restartPolicy")
    if restart != "Always":
        errors.append(not_supported(child(template_path, "spec.restartPolicy"), restart, ["Always"]))
    if pod_spec.get("activeDeadlineSeconds") is not None:
        errors.append(
            forbidden(
                child(template_path, "spec.activeDeadlineSeconds"),
                "activeDeadlineSeconds in ReplicaSet is not Supported",
            )
        )
    return errors


def _selector_immutable(obj: Object, old: Object) -> list[FieldError]:
    """Upstream checks this in the strategies (apps/v1 only): ``ValidateImmutableField`` on the selector."""
    new_selector = as_dict(obj.get("spec")).get("selector")
    old_selector = as_dict(old.get("spec")).get("selector")
    if semantic(new_selector) != semantic(old_selector):
        return [invalid_go("spec.selector", go_label_selector(new_selector), FIELD_IMMUTABLE, new_selector)]
    return []


def _validate_status_counts(status: Mapping[str, Any], fields: tuple[str, ...]) -> list[FieldError]:
    errors: list[FieldError] = []
    for field in fields:
        errors += nonnegative(status.get(field), child("status", field))
    return errors


def _cross_check(status: Mapping[str, Any], fields: tuple[str, ...]) -> list[FieldError]:
    errors: list[FieldError] = []
    replicas = status.get("replicas", 0)
    for field in fields:
        value = status.get(field, 0)
        if is_int(value) and is_int(replicas) and value > replicas:
            errors.append(invalid(child("status", field), value, "cannot be greater than status.replicas"))
    available, ready = status.get("availableReplicas", 0), status.get("readyReplicas", 0)
    if is_int(available) and is_int(ready) and available > ready:
        errors.append(invalid("status.availableReplicas", available, "cannot be greater than readyReplicas"))
    return errors


def _collision_count_decremented(obj: Object, old: Object) -> list[FieldError]:
    new_count = as_dict(obj.get("status")).get("collisionCount")
    old_count = as_dict(old.get("status")).get("collisionCount")
    if is_int(old_count) and (new_count is None or (is_int(new_count) and new_count < old_count)):
        return [invalid("status.collisionCount", new_count or 0, "cannot be decremented")]
    return []


# -- the strategies --------------------------------------------------------------------------------


class WorkloadStrategy(CoreKindStrategy):
    """What Deployments and ReplicaSets share: status subresource, spec generation, template defaults."""

    status_subresource = True
    tracks_generation = True

    def reset_status(self, obj: Object) -> None:
        obj["status"] = {}

    def validate_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        return validate_meta_update(obj, old) + self.validate_spec(obj) + _selector_immutable(obj, old)

    def validate(self, obj: Object, *, namespaced: bool) -> list[FieldError]:
        return self.validate_meta(obj, namespaced=namespaced) + self.validate_spec(obj)

    def validate_spec(self, obj: Object) -> list[FieldError]:
        raise NotImplementedError


class DeploymentStrategy(WorkloadStrategy):
    """``pkg/registry/apps/deployment/strategy.go``."""

    #: ``deploymentStatusStrategy.PrepareForUpdate``: status writes keep the spec and the labels (the
    #: controller's revision annotation does come through ``/status``).
    status_resets_metadata = ("labels",)

    def default(self, obj: Object) -> None:
        """``SetDefaults_Deployment``."""
        spec = spec_of(obj)
        if spec.get("replicas") is None:
            spec["replicas"] = 1
        strategy = spec.get("strategy")
        if not isinstance(strategy, dict):
            strategy = spec["strategy"] = {}
        if not strategy.get("type"):
            strategy["type"] = "RollingUpdate"
        if strategy["type"] == "RollingUpdate":
            rolling = strategy.get("rollingUpdate")
            if not isinstance(rolling, dict):
                rolling = strategy["rollingUpdate"] = {}
            if rolling.get("maxUnavailable") is None:
                rolling["maxUnavailable"] = DEFAULT_MAX_UNAVAILABLE
            if rolling.get("maxSurge") is None:
                rolling["maxSurge"] = DEFAULT_MAX_SURGE
        if spec.get("revisionHistoryLimit") is None:
            spec["revisionHistoryLimit"] = 10
        if spec.get("progressDeadlineSeconds") is None:
            spec["progressDeadlineSeconds"] = 600
        default_template(spec)

    def spec_changed(self, obj: Object, old: Object) -> bool:
        # Annotations bump the generation too: the Deployment copies them to its ReplicaSets.
        return super().spec_changed(obj, old) or semantic(obj["metadata"].get("annotations")) != semantic(
            old["metadata"].get("annotations")
        )

    def validate_spec(self, obj: Object) -> list[FieldError]:
        """``ValidateDeploymentSpec``."""
        spec = as_dict(obj.get("spec"))
        errors = nonnegative(spec.get("replicas"), "spec.replicas")
        errors += validate_selector_and_template(spec, "spec", kind="Deployment")
        errors += validate_deployment_strategy(spec.get("strategy"), "spec.strategy")
        errors += nonnegative(spec.get("minReadySeconds"), "spec.minReadySeconds")
        if spec.get("revisionHistoryLimit") is not None:
            errors += nonnegative(spec.get("revisionHistoryLimit"), "spec.revisionHistoryLimit")
        deadline = spec.get("progressDeadlineSeconds")
        if deadline is not None:
            errors += nonnegative(deadline, "spec.progressDeadlineSeconds")
            min_ready = spec.get("minReadySeconds", 0)
            if is_int(deadline) and is_int(min_ready) and deadline <= min_ready:
                errors.append(
                    invalid("spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds")
                )
        return errors

    def validate_status_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidateDeploymentStatusUpdate``."""
        status = as_dict(obj.get("status"))
        errors = validate_object_meta_update(obj["metadata"], old["metadata"])
        errors += _validate_status_counts(
            status,
            (
                "observedGeneration",
                "replicas",
                "updatedReplicas",
                "readyReplicas",
                "availableReplicas",
                "unavailableReplicas",
                "collisionCount",
            ),
        )
        errors += _cross_check(status, ("updatedReplicas", "readyReplicas", "availableReplicas"))
        return errors + _collision_count_decremented(obj, old)


class ReplicaSetStrategy(WorkloadStrategy):
    """``pkg/registry/apps/replicaset/strategy.go``."""

    def reset_status(self, obj: Object) -> None:
        # ReplicaSetStatus.replicas has no omitempty (staging/src/k8s.io/api/apps/v1/types.go).
        obj["status"] = {"replicas": 0}

    def default(self, obj: Object) -> None:
        """``SetDefaults_ReplicaSet``."""
        spec = spec_of(obj)
        if spec.get("replicas") is None:
            spec["replicas"] = 1
        default_template(spec)

    def validate_spec(self, obj: Object) -> list[FieldError]:
        """``ValidateReplicaSetSpec``."""
        spec = as_dict(obj.get("spec"))
        errors = nonnegative(spec.get("replicas"), "spec.replicas")
        errors += nonnegative(spec.get("minReadySeconds"), "spec.minReadySeconds")
        return errors + validate_selector_and_template(spec, "spec", kind="ReplicaSet")

    def validate_status_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidateReplicaSetStatusUpdate``."""
        status = as_dict(obj.get("status"))
        errors = validate_object_meta_update(obj["metadata"], old["metadata"])
        errors += _validate_status_counts(
            status,
            ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas", "observedGeneration"),
        )
        return errors + _cross_check(status, ("fullyLabeledReplicas", "readyReplicas", "availableReplicas"))


__all__ = [
    "DeploymentStrategy",
    "ReplicaSetStrategy",
    "default_template",
    "validate_deployment_strategy",
    "validate_meta_update",
    "validate_positive_int_or_percent",
    "validate_selector_and_template",
]
