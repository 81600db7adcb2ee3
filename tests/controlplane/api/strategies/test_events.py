"""Events: ``pkg/apis/core/validation/events_test.go`` (legacy and strict validation)."""

from __future__ import annotations

import copy
from typing import Any

from controlplane.api.strategies import EventStrategy, EventsV1EventStrategy
from tests.controlplane.api.strategies import create, stored, update

CORE = EventStrategy()
EVENTS = EventsV1EventStrategy()


def core_event(**fields: Any) -> dict[str, Any]:
    body = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "web.17a3b2c4d5e6f708"},
        "involvedObject": {"kind": "Pod", "name": "web", "namespace": "default"},
        "reason": "Scheduled",
        "message": "Successfully assigned default/web to node-1",
        "type": "Normal",
    }
    body.update(fields)
    return body


def events_event(**fields: Any) -> dict[str, Any]:
    body = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "web.17a3b2c4d5e6f708"},
        "regarding": {"kind": "Pod", "name": "web", "namespace": "default"},
        "eventTime": "2025-01-01T00:00:00.000000Z",
        "reportingController": "default-scheduler",
        "reportingInstance": "default-scheduler-node-1",
        "action": "Binding",
        "reason": "Scheduled",
        "note": "Successfully assigned default/web to node-1",
        "type": "Normal",
    }
    body.update(fields)
    return body


def test_v1_events_are_checked_leniently() -> None:
    assert create(CORE, core_event(type="Whatever", reason=""))[1] == []
    assert create(CORE, core_event(involvedObject={"kind": "Pod", "name": "web", "namespace": "other"}))[
        1
    ] == ['involvedObject.namespace: Invalid value: "other": does not match event.namespace']
    assert create(CORE, core_event(metadata={"name": "a/b"}))[1] == [
        "metadata.name: Invalid value: \"a/b\": may not contain '/'"
    ]


def test_events_api_events_are_checked_strictly_with_core_field_names() -> None:
    assert create(EVENTS, events_event())[1] == []
    body = events_event(reportingController="", action="", type="Info", deprecatedCount=3)
    del body["eventTime"]
    assert create(EVENTS, body)[1] == [
        "eventTime: Required value",
        'type: Invalid value: "": has invalid value: Info',
        'count: Invalid value: "": needs to be unset',
    ]
    timed = events_event(reportingController="", action="", note="x" * 1025)
    assert create(EVENTS, timed)[1] == [
        "reportingController: Required value",
        'reportingController: Invalid value: "": name part must be non-empty',
        "action: Required value",
        'message: Invalid value: "": can have at most 1024 characters',
    ]


def test_events_api_events_only_change_their_series() -> None:
    old = stored(EVENTS, events_event())
    seen_again = copy.deepcopy(old)
    seen_again["series"] = {"count": 2, "lastObservedTime": "2025-01-01T00:05:00.000000Z"}
    assert update(EVENTS, seen_again, old)[1] == []
    reworded = copy.deepcopy(old)
    reworded["note"] = "something else"
    assert update(EVENTS, reworded, old)[1] == [
        'message: Invalid value: "something else": field is immutable'
    ]
    bad_series = copy.deepcopy(old)
    bad_series["series"] = {"count": 1}
    assert update(EVENTS, bad_series, old)[1] == [
        'series.count: Invalid value: "": should be at least 2',
        "series.lastObservedTime: Required value",
    ]
