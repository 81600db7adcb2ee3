"""StatefulSets: pods with a stable name and ordinal, started and stopped in order.

A StatefulSet (``apps/v1``) runs ``replicas`` pods named ``<set>-0``, ``<set>-1``... Unlike a
ReplicaSet's, its pods are not interchangeable: each keeps its name (and hostname, under the governing
Service ``serviceName``) across restarts and reschedules, so a database member stays member 2.

- ``podManagementPolicy``: ``OrderedReady`` (the default) creates pod *n* only once pods 0..*n-1* are
  Running and Ready, and removes the highest ordinal first; ``Parallel`` creates and deletes at once.
- ``updateStrategy``: ``RollingUpdate`` (the default) replaces pods from the highest ordinal down, one
  at a time (``maxUnavailable``, default 1), but only those with an ordinal at or above
  ``partition`` (default 0: all of them; a higher partition is a canary); ``OnDelete`` replaces a pod
  only when someone deletes it.
- Only ``replicas``, ``ordinals``, ``template``, ``updateStrategy``, ``revisionHistoryLimit``,
  ``persistentVolumeClaimRetentionPolicy`` and ``minReadySeconds`` may change after creation: the
  selector, ``serviceName`` and ``volumeClaimTemplates`` are the set's identity.

The template must say ``restartPolicy: Always``, have no ``activeDeadlineSeconds`` and labels matching
a non-empty selector; its pod spec is *not* validated here (its ``volumeMounts`` may name volumes that
only the ``volumeClaimTemplates`` provide), so a bad one shows up as ``FailedCreate`` events.

Upstream: ``SetDefaults_StatefulSet`` (``pkg/apis/apps/v1/defaults.go``), ``ValidateStatefulSet*``
(``pkg/apis/apps/validation/validation.go``), ``pkg/registry/apps/statefulset/strategy.go``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from controlplane.api.meta import Object
from controlplane.api.strategies.common import (
    CoreKindStrategy,
    as_dict,
    child,
    go_int_or_string,
    go_json,
    go_label_selector,
    go_string_map,
    invalid_go,
    is_int,
    nonnegative,
    selector_is_empty,
    selector_matches,
    semantic,
    spec_of,
    validate_label_selector,
)
from controlplane.api.strategies.pods import validate_pod_template_meta
from controlplane.api.strategies.workloads import (
    _int_or_percent_value,
    _not_more_than_100_percent,
    default_template,
    validate_meta_update,
    validate_positive_int_or_percent,
)
from controlplane.api.validation import (
    FieldError,
    forbidden,
    invalid,
    is_dns1123_label,
    not_supported,
    required,
    validate_object_meta_update,
)

ORDERED_READY: Final = "OrderedReady"
PARALLEL: Final = "Parallel"
ROLLING_UPDATE: Final = "RollingUpdate"
ON_DELETE: Final = "OnDelete"
RETAIN: Final = "Retain"

#: What ``ValidateStatefulSetUpdate`` lets change; anything else is forbidden.
MUTABLE_SPEC_FIELDS: Final = (
    "replicas",
    "ordinals",
    "template",
    "updateStrategy",
    "revisionHistoryLimit",
    "persistentVolumeClaimRetentionPolicy",
    "minReadySeconds",
)
FORBIDDEN_UPDATE: Final = (
    "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
    "'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and "
    "'minReadySeconds' are forbidden"
)


def _go_rolling(rolling: Any) -> Any:
    """The internal ``apps.RollingUpdateStatefulSetStrategy`` as JSON (Go field names), or None."""
    if not isinstance(rolling, dict):
        return None
    return {"Partition": rolling.get("partition", 0), "MaxUnavailable": rolling.get("maxUnavailable")}


def _go_update_strategy(strategy: Mapping[str, Any]) -> str:
    """The internal ``apps.StatefulSetUpdateStrategy`` as a field error prints it."""
    return go_json(
        {"Type": strategy.get("type") or "", "RollingUpdate": _go_rolling(strategy.get("rollingUpdate"))}
    )


def validate_update_strategy(strategy: Any, path: str) -> list[FieldError]:
    """The ``updateStrategy`` part of ``ValidateStatefulSetSpec`` and ``validateRollingUpdateStatefulSet``."""
    strategy = as_dict(strategy)
    kind = strategy.get("type")
    rolling = strategy.get("rollingUpdate")
    ru_path = child(path, "rollingUpdate")
    if not kind:
        return [required(path)]
    if kind == ON_DELETE:
        if rolling is not None:
            return [
                invalid_go(
                    ru_path,
                    go_json(_go_rolling(rolling)),
                    f"only allowed for updateStrategy '{ROLLING_UPDATE}'",
                    rolling,
                )
            ]
        return []
    if kind == ROLLING_UPDATE:
        if rolling is None:
            return []
        rolling = as_dict(rolling)
        errors = nonnegative(rolling.get("partition"), child(ru_path, "partition"))
        unavailable = rolling.get("maxUnavailable")
        if unavailable is not None:
            unavailable_path = child(ru_path, "maxUnavailable")
            errors += validate_positive_int_or_percent(unavailable, unavailable_path)
            if _int_or_percent_value(unavailable) == 0:
                errors.append(
                    invalid_go(unavailable_path, go_int_or_string(unavailable), "cannot be 0", unavailable)
                )
            errors += _not_more_than_100_percent(unavailable, unavailable_path)
        return errors
    return [
        invalid_go(
            path,
            _go_update_strategy(strategy),
            f"must be '{ROLLING_UPDATE}' or '{ON_DELETE}'",
            strategy,
        )
    ]


def validate_stateful_set_spec(spec: Mapping[str, Any], path: str) -> list[FieldError]:
    """``ValidateStatefulSetSpec``, in upstream's order."""
    errors: list[FieldError] = []
    policy = spec.get("podManagementPolicy")
    if not policy:
        errors.append(required(child(path, "podManagementPolicy")))
    elif policy not in (ORDERED_READY, PARALLEL):
        errors.append(
            invalid(child(path, "podManagementPolicy"), policy, f"must be '{ORDERED_READY}' or '{PARALLEL}'")
        )
    errors += validate_update_strategy(spec.get("updateStrategy"), child(path, "updateStrategy"))
    errors += nonnegative(spec.get("replicas"), child(path, "replicas"))
    ordinals = spec.get("ordinals")
    if isinstance(ordinals, dict):
        errors += nonnegative(ordinals.get("start"), child(child(path, "ordinals"), "start"))
    errors += nonnegative(spec.get("minReadySeconds"), child(path, "minReadySeconds"))
    selector = spec.get("selector")
    selector_path = child(path, "selector")
    convertible = True
    if selector is None:
        errors.append(required(selector_path))
    else:
        selector_errors = validate_label_selector(selector, selector_path)
        convertible = not selector_errors
        errors += selector_errors
        if selector_is_empty(as_dict(selector)):
            errors.append(
                invalid_go(
                    selector_path, go_label_selector(selector), "empty selector is invalid for statefulset"
                )
            )
    template = as_dict(spec.get("template"))
    template_path = child(path, "template")
    pod_spec = as_dict(template.get("spec"))
    if not convertible:
        errors.append(invalid_go(selector_path, go_label_selector(selector), ""))
    else:
        # ValidatePodTemplateSpecForStatefulSet: a missing (or empty) selector is not matched against.
        labels = as_dict(template.get("metadata")).get("labels")
        if (
            selector is not None
            and not selector_is_empty(as_dict(selector))
            and not selector_matches(as_dict(selector), as_dict(labels))
        ):
            errors.append(
                invalid_go(
                    child(child(template_path, "metadata"), "labels"),
                    go_string_map(labels),
                    "`selector` does not match template `labels`",
                    labels,
                )
            )
        # Upstream validates only the template's labels and annotations, not its pod spec: the pod
        # spec's volumeMounts name volumes that volumeClaimTemplates only add to each pod (the TODO in
        # ValidatePodTemplateSpecForStatefulSet). A bad pod spec is refused when a pod is created.
        errors += validate_pod_template_meta(template, template_path)
    restart = pod_spec.get("restartPolicy")
    if restart != "Always":
        errors.append(not_supported(child(template_path, "spec.restartPolicy"), restart, ["Always"]))
    if pod_spec.get("activeDeadlineSeconds") is not None:
        errors.append(
            forbidden(
                child(template_path, "spec.activeDeadlineSeconds"),
                "activeDeadlineSeconds in StatefulSet is not Supported",
            )
        )
    if spec.get("revisionHistoryLimit") is not None:
        errors += nonnegative(spec.get("revisionHistoryLimit"), child(path, "revisionHistoryLimit"))
    return errors


_STATUS_COUNTS: Final = (
    "replicas",
    "readyReplicas",
    "currentReplicas",
    "updatedReplicas",
    "availableReplicas",
    "observedGeneration",
    "collisionCount",
)


class StatefulSetStrategy(CoreKindStrategy):
    """``pkg/registry/apps/statefulset/strategy.go``."""

    status_subresource = True
    tracks_generation = True
    #: ``ValidateStatefulSetName``: a DNS label, since every pod's hostname is ``<name>-<ordinal>``.
    name_validator = staticmethod(is_dns1123_label)

    def reset_status(self, obj: Object) -> None:
        # StatefulSetStatus.replicas has no omitempty.
        obj["status"] = {"replicas": 0, "availableReplicas": 0}

    def default(self, obj: Object) -> None:
        """``SetDefaults_StatefulSet`` (with ``MaxUnavailableStatefulSet``, beta and on since 1.35)."""
        spec = spec_of(obj)
        if not spec.get("podManagementPolicy"):
            spec["podManagementPolicy"] = ORDERED_READY
        strategy = spec.get("updateStrategy")
        if not isinstance(strategy, dict):
            strategy = spec["updateStrategy"] = {}
        if not strategy.get("type"):
            strategy["type"] = ROLLING_UPDATE
            if not isinstance(strategy.get("rollingUpdate"), dict):
                strategy["rollingUpdate"] = {}
        rolling = strategy.get("rollingUpdate")
        if strategy["type"] == ROLLING_UPDATE and isinstance(rolling, dict):
            if rolling.get("partition") is None:
                rolling["partition"] = 0
            if rolling.get("maxUnavailable") is None:
                rolling["maxUnavailable"] = 1
        retention = spec.get("persistentVolumeClaimRetentionPolicy")
        if not isinstance(retention, dict):
            retention = spec["persistentVolumeClaimRetentionPolicy"] = {}
        for field in ("whenDeleted", "whenScaled"):
            if not retention.get(field):
                retention[field] = RETAIN
        if spec.get("replicas") is None:
            spec["replicas"] = 1
        if spec.get("revisionHistoryLimit") is None:
            spec["revisionHistoryLimit"] = 10
        default_template(spec)

    def validate(self, obj: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidateStatefulSet``."""
        return self.validate_meta(obj, namespaced=namespaced) + validate_stateful_set_spec(
            as_dict(obj.get("spec")), "spec"
        )

    def validate_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidateStatefulSetUpdate``: the spec again, and nothing but the mutable fields changed."""
        errors = validate_meta_update(obj, old) + validate_stateful_set_spec(as_dict(obj.get("spec")), "spec")
        new_spec = {k: v for k, v in as_dict(obj.get("spec")).items() if k not in MUTABLE_SPEC_FIELDS}
        old_spec = {k: v for k, v in as_dict(old.get("spec")).items() if k not in MUTABLE_SPEC_FIELDS}
        if semantic(new_spec) != semantic(old_spec):
            errors.append(forbidden("spec", FORBIDDEN_UPDATE))
        return errors

    def validate_status_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidateStatefulSetStatusUpdate``."""
        status = as_dict(obj.get("status"))
        errors = validate_object_meta_update(obj["metadata"], old["metadata"])
        for field in _STATUS_COUNTS:
            errors += nonnegative(status.get(field), child("status", field))
        replicas = status.get("replicas", 0)
        for field in ("readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas"):
            value = status.get(field, 0)
            if is_int(value) and is_int(replicas) and value > replicas:
                errors.append(
                    invalid(child("status", field), value, "cannot be greater than status.replicas")
                )
        available, ready = status.get("availableReplicas", 0), status.get("readyReplicas", 0)
        if is_int(available) and is_int(ready) and available > ready:
            errors.append(
                invalid("status.availableReplicas", available, "cannot be greater than status.readyReplicas")
            )
        new_count = status.get("collisionCount")
        old_count = as_dict(old.get("status")).get("collisionCount")
        if is_int(old_count) and (new_count is None or (is_int(new_count) and new_count < old_count)):
            errors.append(invalid("status.collisionCount", new_count or 0, "cannot be decremented"))
        return errors


__all__ = [
    "FORBIDDEN_UPDATE",
    "ORDERED_READY",
    "PARALLEL",
    "StatefulSetStrategy",
    "validate_stateful_set_spec",
    "validate_update_strategy",
]
