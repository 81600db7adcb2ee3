"""Export and import: a run saved as JSON lines loads back the same, and never holds a Secret's data."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from controlplane.trace.bus import TraceBus
from controlplane.trace.causality import CausalGraph
from controlplane.trace.export import (
    FORMAT,
    ExportError,
    dump,
    dumps,
    encode_event,
    load,
    load_recorder,
    loads,
)
from controlplane.trace.redaction import concerns_secret, redact
from controlplane.trace.schema import EVENT_TYPES, SCHEMA_VERSION, example


def recorded_run() -> TraceBus:
    bus = TraceBus("demo", now=lambda: 1700000000.5)
    bus.emit(
        "request.received",
        id="r1",
        method="POST",
        path="/api/v1/namespaces/default/pods",
        **{"from": "user:alice", "to": "apiserver"},
    )
    bus.emit(
        "store.txn",
        id="r1",
        op="txn",
        revision=7,
        succeeded=True,
        writes=[{"type": "PUT", "key": "/registry/pods/default/web"}],
        **{"from": "apiserver", "to": "etcd"},
    )
    bus.emit(
        "watch.event", source="store", watch=1, event="PUT", revision=7, key="/registry/pods/default/web"
    )
    bus.emit(
        "request.completed", id="r1", code=201, duration=0.002, **{"from": "user:alice", "to": "apiserver"}
    )
    return bus


def test_an_export_starts_with_its_header_and_lists_every_event() -> None:
    bus = recorded_run()
    lines = dumps(bus.recorder).splitlines()
    assert json.loads(lines[0]) == {
        "format": FORMAT,
        "version": 1,
        "v": SCHEMA_VERSION,
        "cluster": "demo",
        "first_seq": 1,
        "last_seq": 4,
        "count": 4,
    }
    assert [json.loads(line)["seq"] for line in lines[1:]] == [1, 2, 3, 4]


def test_events_are_encoded_stably_envelope_first_then_sorted() -> None:
    event = {
        "zeta": {"b": 1, "a": 2},
        "type": "x",
        "seq": 3,
        "v": 2,
        "from": "a",
        "ts": 1.0,
        "cluster": "c",
        "alpha": [{"y": 1, "x": 2}],
    }
    line = encode_event(event)
    assert line == (
        '{"v":2,"cluster":"c","seq":3,"ts":1.0,"type":"x","from":"a",'
        '"alpha":[{"x":2,"y":1}],"zeta":{"a":2,"b":1}}'
    )
    assert encode_event(dict(reversed(list(event.items())))) == line


def test_a_run_loads_back_the_same_and_answers_the_same_questions() -> None:
    bus = recorded_run()
    buffer = io.StringIO()
    assert dump(bus.recorder, buffer) == 4
    buffer.seek(0)
    recorder = load_recorder(buffer)
    assert list(recorder) == list(bus.recorder)
    assert recorder.cluster == "demo"
    assert [e["seq"] for e in recorder.for_request("r1")] == [1, 2, 4]
    assert [e["seq"] for e in CausalGraph(recorder).effects("r1")] == [2, 3, 4]
    # and exports again to the same bytes
    assert dumps(recorder) == dumps(bus.recorder)


def test_every_documented_example_survives_the_round_trip() -> None:
    events = [example(name, seq=i) for i, name in enumerate(sorted(EVENT_TYPES), start=1)]
    run = loads(dumps(events))
    assert run.events == events


def test_a_scrolled_recorder_exports_what_it_still_holds() -> None:
    bus = TraceBus("demo", capacity=2)
    for revision in range(5):
        bus.emit("store.compact", revision=revision)
    run = loads(dumps(bus.recorder))
    assert (run.header["first_seq"], run.header["count"]) == (4, 2)
    assert run.recorder().since(3) == run.events


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty file: no header"),
        ("[1]\n", "line 1: expected a JSON object, got list"),
        ('{"format":"other"}\n', "line 1: not a kubelab-trace file"),
        ('{"format":"kubelab-trace","version":2,"v":2}\n', "line 1: unsupported kubelab-trace version 2"),
        ('{"format":"kubelab-trace","version":1,"v":9}\n', "line 1: unsupported trace schema version 9"),
        ('{"format":"kubelab-trace","version":1,"v":1}\n', "line 1: unsupported trace schema version 1"),
        ('{"format":"kubelab-trace","version":1,"v":2}\n{"v":2}\n', "line 2: event without 'cluster'"),
        ('{"format":"kubelab-trace","version":1,"v":2}\nnot json\n', "line 2: not JSON"),
    ],
)
def test_a_bad_file_says_where_it_is_wrong(text: str, message: str) -> None:
    with pytest.raises(ExportError) as raised:
        loads(text)
    assert str(raised.value).startswith(message)


def test_a_gap_or_a_wrong_count_is_refused() -> None:
    lines = dumps(recorded_run().recorder).splitlines()
    with pytest.raises(ExportError, match="line 4: seq 4 does not follow seq 2"):
        load([lines[0], lines[1], lines[2], lines[4]])
    with pytest.raises(ExportError, match="announces 4 events, the file holds 3"):
        load(lines[:4])


SECRET = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {"name": "db", "namespace": "default"},
    "data": {"password": "aHVudGVyMg=="},
    "stringData": {"token": "s3cr3t-token"},
}


def exported(event: dict[str, Any]) -> str:
    full = {"v": SCHEMA_VERSION, "cluster": "demo", "seq": 1, "ts": 1.0, **event}
    return dumps([full])


def test_a_secret_object_anywhere_keeps_its_keys_and_loses_its_values() -> None:
    text = exported(
        {
            "type": "admission.step",
            "id": "r",
            "plugin": "p",
            "phase": "validating",
            "outcome": "pass",
            "detail": "x",
            "inspect": {"objects": [SECRET]},
        }
    )
    assert "aHVudGVyMg==" not in text and "s3cr3t-token" not in text
    event = loads(text).events[0]
    assert event["inspect"]["objects"][0]["data"] == {"password": "<redacted: 12 bytes>"}
    assert event["inspect"]["objects"][0]["metadata"]["name"] == "db"


def test_bodies_of_events_about_secrets_are_hidden_whole() -> None:
    patch = [{"op": "add", "path": "/data/password", "value": "aHVudGVyMg=="}]
    text = exported(
        {
            "type": "admission.step",
            "id": "r",
            "plugin": "p",
            "phase": "mutating",
            "outcome": "pass",
            "path": "/api/v1/namespaces/default/secrets/db",
            "patch": patch,
        }
    )
    assert "aHVudGVyMg==" not in text
    assert loads(text).events[0]["patch"] == {"redacted": True, "size": len(json.dumps(patch))}


def test_bytes_never_leave_as_they_are_and_clean_events_are_untouched() -> None:
    event = {
        "type": "store.txn",
        "key": "/registry/secrets/default/db",
        "value": b"k8s:enc:aescbc:v1:key:xyz",
    }
    assert redact(event) == {
        "type": "store.txn",
        "key": "/registry/secrets/default/db",
        "value": "<25 bytes>",
    }
    clean = example("store.txn")
    assert redact(clean) is clean


def test_what_counts_as_about_a_secret() -> None:
    assert concerns_secret({"key": "/registry/secrets/default/db"})
    assert concerns_secret({"path": "/api/v1/namespaces/default/secrets"})
    assert concerns_secret({"path": "/api/v1/secrets?watch=1"})
    assert concerns_secret({"resource": "secrets"})
    assert not concerns_secret({"key": "/registry/configmaps/default/secrets-list"})
    assert not concerns_secret({"path": "/api/v1/namespaces/secrets-team/pods"})
