"""DaemonSets: one pod per eligible node, and ControllerRevisions, the history of their templates.

A DaemonSet has no ``replicas``: the nodes decide how many pods it runs. Like a ReplicaSet it finds its
pods by ``selector``, so the selector **must match the template's labels** (``spec.template.metadata.
labels: Invalid value: {"app":"x"}: `selector` does not match template `labels```), must not be empty
(``empty selector is invalid for daemonset``) and is **immutable**. Its template follows the same
rules as a Deployment's: validated as a pod spec, ``restartPolicy: Always``, no
``activeDeadlineSeconds``.

**Update strategy.** ``RollingUpdate`` (the default) replaces pods node by node: at most
``maxUnavailable`` nodes (default 1) without an available pod at a time, or, with ``maxSurge``, a new
pod is started beside the old one first. Exactly one of the two may be non-zero
(``may not be set when maxUnavailable is non-zero`` / ``cannot be 0 when maxSurge is 0``).
``OnDelete`` replaces a pod only when someone deletes it. ``revisionHistoryLimit`` defaults to 10.

**Template generation.** Besides ``metadata.generation`` (bumped by any spec change), the API server
counts changes to the *template* alone in the annotation ``deprecated.daemonset.template.generation``
(internally ``spec.templateGeneration``; apps/v1 carries it as an annotation, see
``pkg/apis/apps/v1/conversion.go``). The controller labels each pod ``pod-template-generation`` with
it; a client cannot set it, the server does.

A **ControllerRevision** (``apps/v1``) is an immutable snapshot: ``data`` holds what a controller
needs to go back to a revision (for a DaemonSet, a strategic merge patch that replaces its template),
``revision`` its number. ``kubectl rollout history`` lists them; ``kubectl rollout undo`` applies one.
``data`` is required and may not change; ``revision`` is not negative.

Upstream: ``pkg/apis/apps/v1/defaults.go`` (``SetDefaults_DaemonSet``),
``pkg/apis/apps/validation/validation.go`` (``ValidateDaemonSet*``, ``ValidateControllerRevision*``),
``pkg/registry/apps/daemonset/strategy.go``, ``pkg/registry/apps/controllerrevision/strategy.go``.
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
from controlplane.api.strategies.pods import validate_pod_spec, validate_pod_template_meta
from controlplane.api.strategies.workloads import (
    _int_or_percent_value,
    _not_more_than_100_percent,
    _selector_immutable,
    default_template,
    validate_meta_update,
    validate_positive_int_or_percent,
)
from controlplane.api.validation import (
    FieldError,
    forbidden,
    invalid,
    not_supported,
    required,
    validate_object_meta_update,
)

#: ``appsv1.DeprecatedTemplateGeneration``: where apps/v1 keeps ``spec.templateGeneration``.
TEMPLATE_GENERATION_ANNOTATION: Final = "deprecated.daemonset.template.generation"
ROLLING_UPDATE: Final = "RollingUpdate"
ON_DELETE: Final = "OnDelete"


def template_generation(obj: Mapping[str, Any]) -> int:
    """The DaemonSet's template generation (0 when the annotation is missing or not a number)."""
    annotations = as_dict(as_dict(obj.get("metadata")).get("annotations"))
    value = annotations.get(TEMPLATE_GENERATION_ANNOTATION)
    try:
        return int(value) if isinstance(value, str) else 0
    except ValueError:
        return 0


def _set_template_generation(obj: Object, generation: int) -> None:
    """``Convert_apps_DaemonSet_To_v1_DaemonSet`` always writes the annotation."""
    meta = obj["metadata"]
    annotations = meta.get("annotations")
    if not isinstance(annotations, dict):
        annotations = meta["annotations"] = {}
    annotations[TEMPLATE_GENERATION_ANNOTATION] = str(generation)


def validate_daemon_set_update_strategy(strategy: Any, path: str) -> list[FieldError]:
    """``ValidateDaemonSetUpdateStrategy`` and ``ValidateRollingUpdateDaemonSet``."""
    strategy = as_dict(strategy)
    kind = strategy.get("type")
    rolling = strategy.get("rollingUpdate")
    if kind == ON_DELETE:
        return []
    if kind == ROLLING_UPDATE:
        ru_path = child(path, "rollingUpdate")
        if rolling is None:
            return [required(ru_path)]
        rolling = as_dict(rolling)
        unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
        unavailable_path, surge_path = child(ru_path, "maxUnavailable"), child(ru_path, "maxSurge")
        errors = validate_positive_int_or_percent(unavailable, unavailable_path)
        errors += validate_positive_int_or_percent(surge, surge_path)
        errors += _not_more_than_100_percent(unavailable, unavailable_path)
        errors += _not_more_than_100_percent(surge, surge_path)
        has_unavailable = _int_or_percent_value(unavailable) != 0
        has_surge = _int_or_percent_value(surge) != 0
        if has_unavailable and has_surge:
            errors.append(
                invalid_go(
                    surge_path,
                    go_int_or_string(surge),
                    "may not be set when maxUnavailable is non-zero",
                    surge,
                )
            )
        elif not has_unavailable and not has_surge:
            errors.append(required(unavailable_path, "cannot be 0 when maxSurge is 0"))
        return errors
    # The internal apps.DaemonSetUpdateStrategy as JSON (Go field names).
    rendered_rolling = None
    if rolling is not None:
        rendered_rolling = {
            "MaxUnavailable": as_dict(rolling).get("maxUnavailable") or 0,
            "MaxSurge": as_dict(rolling).get("maxSurge") or 0,
        }
    rendered = go_json({"Type": as_str(kind), "RollingUpdate": rendered_rolling})
    return [not_supported_go(path, rendered, [ROLLING_UPDATE, ON_DELETE], strategy)]


def validate_daemon_set_spec(spec: Mapping[str, Any], generation: int, path: str) -> list[FieldError]:
    """``ValidateDaemonSetSpec``: in upstream's order."""
    selector = spec.get("selector")
    selector_path = child(path, "selector")
    errors = validate_label_selector(selector, selector_path)
    template = as_dict(spec.get("template"))
    template_path = child(path, "template")
    labels = as_dict(template.get("metadata")).get("labels")
    if not errors:
        # LabelSelectorAsSelector: a missing selector matches nothing, an empty one everything.
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
    if selector is not None and selector_is_empty(as_dict(selector)):
        errors.append(
            invalid_go(selector_path, go_label_selector(selector), "empty selector is invalid for daemonset")
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
                "activeDeadlineSeconds in DaemonSet is not Supported",
            )
        )
    errors += nonnegative(spec.get("minReadySeconds"), child(path, "minReadySeconds"))
    errors += nonnegative(generation, child(path, "templateGeneration"))
    errors += validate_daemon_set_update_strategy(spec.get("updateStrategy"), child(path, "updateStrategy"))
    if spec.get("revisionHistoryLimit") is not None:
        errors += nonnegative(spec.get("revisionHistoryLimit"), child(path, "revisionHistoryLimit"))
    return errors


_STATUS_COUNTS: Final = (
    "currentNumberScheduled",
    "numberMisscheduled",
    "desiredNumberScheduled",
    "numberReady",
    "observedGeneration",
    "updatedNumberScheduled",
    "numberAvailable",
    "numberUnavailable",
    "collisionCount",
)


class DaemonSetStrategy(CoreKindStrategy):
    """``pkg/registry/apps/daemonset/strategy.go``."""

    status_subresource = True
    tracks_generation = True

    def reset_status(self, obj: Object) -> None:
        # DaemonSetStatus's four counts have no omitempty: they are always there.
        obj["status"] = {
            "currentNumberScheduled": 0,
            "numberMisscheduled": 0,
            "desiredNumberScheduled": 0,
            "numberReady": 0,
        }

    def default(self, obj: Object) -> None:
        """``SetDefaults_DaemonSet`` and the template's pod-spec defaults."""
        spec = spec_of(obj)
        strategy = spec.get("updateStrategy")
        if not isinstance(strategy, dict):
            strategy = spec["updateStrategy"] = {}
        if not strategy.get("type"):
            strategy["type"] = ROLLING_UPDATE
        if strategy["type"] == ROLLING_UPDATE:
            rolling = strategy.get("rollingUpdate")
            if not isinstance(rolling, dict):
                rolling = strategy["rollingUpdate"] = {}
            if rolling.get("maxUnavailable") is None:
                rolling["maxUnavailable"] = 1
            if rolling.get("maxSurge") is None:
                rolling["maxSurge"] = 0
        if spec.get("revisionHistoryLimit") is None:
            spec["revisionHistoryLimit"] = 10
        default_template(spec)

    def prepare_for_create(self, obj: Object) -> None:
        """``PrepareForCreate``: status cleared, generation 1, template generation at least 1."""
        super().prepare_for_create(obj)
        _set_template_generation(obj, max(template_generation(obj), 1))

    def prepare_for_update(self, obj: Object, old: Object) -> None:
        """``PrepareForUpdate``: the template generation is the server's; a template change bumps it."""
        super().prepare_for_update(obj, old)
        generation = template_generation(old)
        if semantic(as_dict(obj.get("spec")).get("template")) != semantic(
            as_dict(old.get("spec")).get("template")
        ):
            generation += 1
        _set_template_generation(obj, generation)

    def prepare_for_status_update(self, obj: Object, old: Object) -> None:
        super().prepare_for_status_update(obj, old)
        _set_template_generation(obj, template_generation(old))

    def validate(self, obj: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidateDaemonSet``."""
        return self.validate_meta(obj, namespaced=namespaced) + validate_daemon_set_spec(
            as_dict(obj.get("spec")), template_generation(obj), "spec"
        )

    def validate_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidateDaemonSet`` + ``ValidateDaemonSetUpdate`` + the immutable selector (apps/v1)."""
        spec_errors = validate_daemon_set_spec(as_dict(obj.get("spec")), template_generation(obj), "spec")
        return validate_meta_update(obj, old) + spec_errors + _selector_immutable(obj, old)

    def validate_status_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidateDaemonSetStatusUpdate``."""
        status = as_dict(obj.get("status"))
        errors = validate_object_meta_update(obj["metadata"], old["metadata"])
        for field in _STATUS_COUNTS:
            errors += nonnegative(status.get(field), child("status", field))
        new_count = status.get("collisionCount")
        old_count = as_dict(old.get("status")).get("collisionCount")
        if is_int(old_count) and (new_count is None or (is_int(new_count) and new_count < old_count)):
            errors.append(invalid("status.collisionCount", new_count or 0, "cannot be decremented"))
        return errors


class ControllerRevisionStrategy(CoreKindStrategy):
    """``pkg/registry/apps/controllerrevision/strategy.go``: no status, no generation."""

    def default(self, obj: Object) -> None:
        # ``revision`` is an int64 without omitempty: a revision sent without one is revision 0.
        if obj.get("revision") is None:
            obj["revision"] = 0

    def validate(self, obj: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidateControllerRevisionCreate``."""
        errors = self.validate_meta(obj, namespaced=namespaced)
        if obj.get("data") is None:
            errors.append(required("data", "data is mandatory"))
        return errors + nonnegative(obj.get("revision"), "revision")

    def validate_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidateControllerRevisionUpdate``: ``data`` is immutable."""
        errors = validate_meta_update(obj, old) + self.validate(obj, namespaced=namespaced)
        if semantic(obj.get("data")) != semantic(old.get("data")):
            errors.append(invalid_go("data", go_json(obj.get("data")), FIELD_IMMUTABLE, obj.get("data")))
        return errors


__all__ = [
    "ON_DELETE",
    "ROLLING_UPDATE",
    "TEMPLATE_GENERATION_ANNOTATION",
    "ControllerRevisionStrategy",
    "DaemonSetStrategy",
    "template_generation",
    "validate_daemon_set_spec",
    "validate_daemon_set_update_strategy",
]
