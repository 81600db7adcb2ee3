"""The schema: every type documented with an example that fits, and validation that says what is wrong."""

from __future__ import annotations

import pytest

from controlplane.apiserver import pipeline
from controlplane.trace import schema
from controlplane.trace.schema import EVENT_TYPES, SchemaError, check, example, validate

#: The types docs/architecture.md's trace contract needs, plus those the code already emits.
CONTRACT_TYPES = {
    "request.received",
    "request.stage",
    "request.completed",
    "rbac.decision",
    "admission.step",
    "store.txn",
    "watch.opened",
    "watch.event",
    "watch.closed",
    "component.state",
    "reconcile",
    "scheduler.decision",
    "fault.applied",
    "fault.cleared",
}
EMITTED_TYPES = {"store.compact", "proxy.sync", "flowcontrol.decision"}


def test_every_type_of_the_design_and_of_the_emitters_is_in_the_schema() -> None:
    assert set(EVENT_TYPES) == CONTRACT_TYPES | EMITTED_TYPES


@pytest.mark.parametrize("type_name", sorted(EVENT_TYPES))
def test_each_example_fits_its_type_strictly(type_name: str) -> None:
    event = example(type_name, seq=7)
    assert validate(event, strict=True) == []
    assert event["type"] == type_name and event["v"] == schema.SCHEMA_VERSION


def test_the_pipeline_stages_are_the_api_servers() -> None:
    assert schema.PIPELINE_STAGES is pipeline.STAGES


def test_every_request_event_may_name_what_its_request_is_about() -> None:
    identity = {"user", "verb", "resource", "subresource", "namespace", "name"}
    for type_name in ("request.received", "request.stage", "request.completed"):
        assert identity <= set(EVENT_TYPES[type_name].optional), type_name


def test_a_storage_stage_names_its_write_and_its_operation() -> None:
    event = example("request.stage")
    assert (event["stage"], event["key"], event["revision"], event["op"]) == (
        "storage",
        "/registry/pods/default/web",
        17,
        "create",
    )
    for op in ("create", "update", "delete", "terminate"):
        assert validate(event | {"op": op}, strict=True) == []
    assert validate(event | {"op": "put", "revision": "17"}) == [
        "request.stage.revision: expected integer, got str",
        "request.stage.op: 'put' is not one of 'create', 'update', 'delete', 'terminate'",
    ]


def test_a_missing_envelope_field_is_named() -> None:
    event = example("store.compact")
    del event["seq"]
    assert validate(event) == ["seq: missing"]


def test_a_missing_required_field_is_named_with_its_type() -> None:
    event = example("request.completed")
    del event["code"]
    assert validate(event) == ["request.completed.code: missing"]


def test_wrong_types_are_reported_and_a_boolean_is_not_an_integer() -> None:
    event = example("store.txn") | {"revision": True, "ops": "put"}
    problems = validate(event)
    assert "store.txn.revision: expected integer, got a boolean" in problems
    assert "store.txn.ops: expected array, got str" in problems


def test_choices_are_enforced() -> None:
    event = example("request.stage") | {"stage": "teleport", "outcome": "maybe"}
    problems = validate(event)
    assert any(p.startswith("request.stage.stage: 'teleport' is not one of") for p in problems)
    assert any(p.startswith("request.stage.outcome: 'maybe' is not one of") for p in problems)


def test_an_unknown_type_and_a_bad_seq_are_reported() -> None:
    event = example("store.compact") | {"type": "store.teleport", "seq": 0}
    assert validate(event) == ["seq: must be 1 or more, got 0", "type: unknown event type 'store.teleport'"]


def test_unknown_fields_only_count_when_strict() -> None:
    event = example("store.txn") | {"request_id": "abc"}
    assert validate(event) == []
    assert validate(event, strict=True) == ["store.txn.request_id: not in the schema"]


def test_a_payload_can_be_checked_before_the_bus_stamps_it() -> None:
    payload = {"type": "component.state", "component": "kubelet", "state": "running"}
    assert validate(payload, envelope=False, strict=True) == []
    assert validate({"component": "kubelet"}, envelope=False) == ["type: missing"]


def test_check_raises_with_every_problem() -> None:
    event = example("reconcile")
    del event["controller"]
    event["result"] = "fine"
    with pytest.raises(SchemaError) as raised:
        check(event)
    assert raised.value.problems[0] == "reconcile.controller: missing"
    assert len(raised.value.problems) == 2
