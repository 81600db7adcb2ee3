"""Events: short-lived notes about what happened to an object ("Scheduled", "Pulled", "BackOff").

Components report what they did as Events that point at the object concerned (``involvedObject``,
called ``regarding`` in ``events.k8s.io/v1``); ``kubectl describe`` lists the Events of an object, and
``kubectl get events`` the namespace's. They are the cluster's log for humans, so they are kept only
for an hour, and validation is deliberately **lenient** for the old API: an Event written through
``v1`` only has to be in the namespace of the object it is about (``involvedObject.namespace: Invalid
value: ...: does not match event.namespace``), because every client that ever wrote Events must keep
working.

Events written through **events.k8s.io/v1** (the newer recorder, with ``eventTime``, ``series`` and a
``reportingController``) are checked strictly: a DNS-subdomain name, ``eventTime``, ``type`` Normal or
Warning, ``reportingController``/``reportingInstance``/``action``/``reason`` present and short, and the
legacy fields (``deprecated*``) unset; once written they may only change in their ``series``. Both APIs
store the same object, and upstream validates the internal form, so even events.k8s.io errors use the
core field names (``involvedObject``, ``message``, ``reportingController``).

Upstream: ``pkg/apis/core/validation/events.go``, ``pkg/registry/core/event/strategy.go``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from controlplane.api.meta import Object
from controlplane.api.strategies.common import (
    FIELD_IMMUTABLE,
    KindStrategy,
    as_dict,
    as_str,
    is_valid_path_segment_name,
    semantic,
)
from controlplane.api.validation import (
    FieldError,
    invalid,
    is_dns1123_subdomain,
    is_qualified_name,
    required,
    validate_object_meta,
    validate_object_meta_update,
)

LIMITS: Final = {"reportingInstance": 128, "action": 128, "reason": 128, "message": 1024}

#: events.k8s.io/v1 field -> internal (core) field.
_FROM_EVENTS_V1: Final = {
    "regarding": "involvedObject",
    "note": "message",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
}
#: core/v1 JSON name -> internal name, where they differ.
_FROM_CORE_V1: Final = {"reportingComponent": "reportingController"}


def internal_event(obj: Mapping[str, Any], *, events_api: bool) -> dict[str, Any]:
    """The event under upstream's internal field names (what validation and its paths use)."""
    renames = _FROM_EVENTS_V1 if events_api else _FROM_CORE_V1
    return {renames.get(k, k): v for k, v in obj.items()}


def legacy_validate(event: Mapping[str, Any]) -> list[FieldError]:
    """``legacyValidateEvent``: what every Event, old or new, must satisfy."""
    errors: list[FieldError] = []
    namespace = as_str(as_dict(event.get("metadata")).get("namespace"))
    involved_namespace = as_str(as_dict(event.get("involvedObject")).get("namespace"))
    mismatch = invalid("involvedObject.namespace", involved_namespace, "does not match event.namespace")
    if not event.get("eventTime"):
        if not involved_namespace:
            if namespace not in ("", "default"):
                errors.append(mismatch)
        elif namespace != involved_namespace:
            errors.append(mismatch)
    else:
        if not involved_namespace and namespace not in ("default", "kube-system"):
            errors.append(mismatch)
        controller = as_str(event.get("reportingController"))
        if not controller:
            errors.append(required("reportingController"))
        errors += [invalid("reportingController", controller, m) for m in is_qualified_name(controller)]
        for field in ("reportingInstance", "action", "reason"):
            value = as_str(event.get(field))
            if not value:
                errors.append(required(field))
            if len(value) > LIMITS[field]:
                errors.append(invalid(field, "", f"can have at most {LIMITS[field]} characters"))
        if len(as_str(event.get("message"))) > LIMITS["message"]:
            errors.append(invalid("message", "", f"can have at most {LIMITS['message']} characters"))
    errors += [invalid("namespace", namespace, m) for m in is_dns1123_subdomain(namespace)]
    return errors


def _validate_series(event: Mapping[str, Any]) -> list[FieldError]:
    series = event.get("series")
    if series is None:
        return []
    series = as_dict(series)
    errors: list[FieldError] = []
    count = series.get("count", 0)
    if not isinstance(count, int) or count < 2:
        errors.append(invalid("series.count", "", "should be at least 2"))
    if not series.get("lastObservedTime"):
        errors.append(required("series.lastObservedTime"))
    return errors


class EventStrategy(KindStrategy):
    """``v1`` Events: legacy validation only; names need only be URL path segments."""

    name_validator = staticmethod(is_valid_path_segment_name)
    events_api = False

    def validate(self, obj: Object, *, namespaced: bool) -> list[FieldError]:
        errors = legacy_validate(internal_event(obj, events_api=self.events_api))
        # The generic registry's own metadata check (path-segment names) runs after the strategy's.
        return errors or self.validate_meta(obj, namespaced=namespaced)

    def validate_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        errors = legacy_validate(internal_event(obj, events_api=self.events_api))
        return errors or validate_object_meta_update(obj["metadata"], old["metadata"])


class EventsV1EventStrategy(EventStrategy):
    """``events.k8s.io/v1`` Events: ``ValidateEventCreate``/``Update`` strict mode."""

    events_api = True

    def validate(self, obj: Object, *, namespaced: bool) -> list[FieldError]:
        event = internal_event(obj, events_api=True)
        errors = legacy_validate(event)
        errors += validate_object_meta(
            obj["metadata"], namespaced=namespaced, name_validator=is_dns1123_subdomain
        )
        errors += _validate_series(event)
        if not event.get("eventTime"):
            errors.append(required("eventTime"))
        if event.get("type") not in ("Normal", "Warning"):
            errors.append(invalid("type", "", f"has invalid value: {as_str(event.get('type'))}"))
        for field in ("firstTimestamp", "lastTimestamp", "count"):
            if event.get(field):
                errors.append(invalid(field, "", "needs to be unset"))
        source = as_dict(event.get("source"))
        if source.get("component") or source.get("host"):
            errors.append(invalid("source", "", "needs to be unset"))
        return errors

    def validate_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        event, old_event = internal_event(obj, events_api=True), internal_event(old, events_api=True)
        errors = legacy_validate(event)
        errors += validate_object_meta_update(obj["metadata"], old["metadata"])
        if semantic(event.get("series")) != semantic(old_event.get("series")):
            errors += _validate_series(event)
        for field in (
            "involvedObject",
            "reason",
            "message",
            "source",
            "firstTimestamp",
            "lastTimestamp",
            "count",
            "reason",
            "type",
            "eventTime",
            "action",
            "related",
            "reportingController",
            "reportingInstance",
        ):
            if semantic(event.get(field)) != semantic(old_event.get(field)):
                errors.append(invalid(field, event.get(field), FIELD_IMMUTABLE))
        return errors


__all__ = ["EventStrategy", "EventsV1EventStrategy", "internal_event", "legacy_validate"]
