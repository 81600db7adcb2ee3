"""Encoding audit events: bodies decoded in the writer, managed fields dropped, Secret values hidden."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from controlplane.apiserver.audit.event import (
    PendingEvent,
    decode_request_body,
    encode,
    failure_status,
    new_event,
    object_ref,
    success_status,
    timestamp,
    user_agent,
    with_status,
)
from controlplane.identity import UserInfo

ALICE = UserInfo.create("alice", uid="u-1", groups=["students", "system:authenticated"])


def event(**overrides: Any) -> dict[str, Any]:
    base = new_event(
        audit_id="id-1",
        level="RequestResponse",
        request_uri="/api/v1/namespaces/default/configmaps",
        verb="create",
        user=ALICE,
        source_ips=["10.0.0.1"],
        agent="kubectl/v1.37.0",
        object_ref=object_ref(
            resource="configmaps",
            namespace="default",
            name="",
            api_group="",
            api_version="v1",
            subresource="",
        ),
        received_at=1_700_000_000.25,
    )
    return with_status({**base, "stage": "ResponseComplete", **overrides}, success_status(201))


def decoded(pending: PendingEvent) -> dict[str, Any]:
    line = encode(pending)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    result: dict[str, Any] = json.loads(line)
    return result


def test_an_event_has_upstreams_shape() -> None:
    e = decoded(PendingEvent(event()))
    assert (e["kind"], e["apiVersion"], e["level"], e["auditID"]) == (
        "Event",
        "audit.k8s.io/v1",
        "RequestResponse",
        "id-1",
    )
    assert e["user"] == {"username": "alice", "uid": "u-1", "groups": ["students", "system:authenticated"]}
    assert e["objectRef"] == {"resource": "configmaps", "namespace": "default", "apiVersion": "v1"}
    assert e["responseStatus"] == {"metadata": {}, "code": 201}
    assert e["requestReceivedTimestamp"] == "2023-11-14T22:13:20.250000Z"
    keys = list(e)
    assert keys.index("responseStatus") < keys.index("requestReceivedTimestamp")


def test_the_request_and_response_bodies_are_recorded_and_name_the_object() -> None:
    request = json.dumps({"kind": "ConfigMap", "metadata": {"name": "web"}, "data": {"a": "1"}}).encode()
    response = json.dumps(
        {"kind": "ConfigMap", "metadata": {"name": "web", "uid": "x"}}, separators=(",", ":")
    )
    e = decoded(
        PendingEvent(
            event(),
            request_body=request,
            request_content_type="application/json",
            record_request=True,
            response_body=response.encode(),
        )
    )
    assert e["requestObject"]["data"] == {"a": "1"}
    assert e["responseObject"]["metadata"]["uid"] == "x"
    assert e["objectRef"]["name"] == "web"


def test_a_body_read_only_for_the_name_is_not_recorded() -> None:
    request = b"kind: ConfigMap\nmetadata: {name: from-yaml}\ndata: {secret-ish: value}\n"
    e = decoded(
        PendingEvent(event(level="Metadata"), request_body=request, request_content_type="application/yaml")
    )
    assert e["objectRef"]["name"] == "from-yaml"
    assert "requestObject" not in e and "secret-ish" not in json.dumps(e)


def test_managed_fields_are_left_out_when_the_policy_says_so() -> None:
    managed = [{"manager": "kubectl", "operation": "Apply"}]
    obj = {"kind": "ConfigMap", "metadata": {"name": "web", "managedFields": managed}}
    listed = {"kind": "ConfigMapList", "items": [obj], "metadata": {}}
    e = decoded(
        PendingEvent(
            event(),
            request_body=json.dumps(obj).encode(),
            request_content_type="application/json",
            record_request=True,
            response_body=json.dumps(listed).encode(),
            omit_managed_fields=True,
        )
    )
    assert e["requestObject"]["metadata"] == {"name": "web"}
    assert e["responseObject"]["items"][0]["metadata"] == {"name": "web"}
    kept = decoded(PendingEvent(event(), response_body=json.dumps(obj).encode()))
    assert kept["responseObject"]["metadata"]["managedFields"] == managed


def test_a_secret_in_any_body_keeps_its_keys_never_its_values() -> None:
    secret = {
        "kind": "Secret",
        "metadata": {"name": "db"},
        "data": {"password": base64.b64encode(b"hunter2").decode()},
    }
    listed = {"kind": "SecretList", "items": [secret]}
    line = encode(
        PendingEvent(
            event(),
            request_body=json.dumps(secret).encode(),
            request_content_type="application/json",
            record_request=True,
            response_body=json.dumps(listed, separators=(",", ":")).encode(),
        )
    )
    assert b"hunter2" not in line and base64.b64encode(b"hunter2") not in line
    e = json.loads(line)
    assert e["requestObject"]["data"]["password"].startswith("<redacted")
    assert e["responseObject"]["items"][0]["data"]["password"].startswith("<redacted")


def test_a_failure_records_the_status_the_client_got() -> None:
    status = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'configmaps "web" not found',
        "reason": "NotFound",
        "details": {"name": "web", "kind": "configmaps"},
        "code": 404,
    }
    e = decoded(
        PendingEvent(with_status(event(), failure_status(404, None)), status_body=json.dumps(status).encode())
    )
    assert e["responseStatus"] == {
        "metadata": {},
        "status": "Failure",
        "message": 'configmaps "web" not found',
        "reason": "NotFound",
        "details": {"name": "web", "kind": "configmaps"},
        "code": 404,
    }


def test_an_undecodable_request_body_is_left_out() -> None:
    e = decoded(
        PendingEvent(
            event(), request_body=b"{not json", request_content_type="application/json", record_request=True
        )
    )
    assert "requestObject" not in e


def test_helpers() -> None:
    assert timestamp(0) == "1970-01-01T00:00:00.000000Z"
    assert user_agent("a" * 2000) == "a" * 1024 + "...TRUNCATED"
    assert failure_status(500, "not a status") == {"metadata": {}, "code": 500}


def test_accepted_one_line_json_bodies_are_copied_as_they_are() -> None:
    named = event()
    named["objectRef"] = {**named["objectRef"], "name": "web"}
    request = b'{"kind":"ConfigMap","metadata":{"name":"web"},"data":{"a":"1"}}'
    response = b'{"kind":"ConfigMap","metadata":{"name":"web","uid":"x"}}'
    line = encode(
        PendingEvent(
            named,
            request_body=request,
            request_content_type="application/merge-patch+json",
            record_request=True,
            response_body=response,
            request_accepted=True,
        )
    )
    assert line.endswith(b',"requestObject":' + request + b',"responseObject":' + response + b"}\n")
    e = json.loads(line)
    assert e["requestObject"]["data"] == {"a": "1"} and e["responseObject"]["metadata"]["uid"] == "x"
    # ... but never a Secret, which is decoded and hidden, nor a body on several lines.
    secret = b'{"kind":"Secret","metadata":{"name":"web"},"data":{"password":"aHVudGVyMg=="}}'
    hidden = encode(
        PendingEvent(
            named,
            request_body=secret,
            request_content_type="application/json",
            record_request=True,
            request_accepted=True,
        )
    )
    assert b"aHVudGVyMg==" not in hidden
    spread = encode(
        PendingEvent(
            named,
            request_body=b'{\n "kind": "ConfigMap"\n}',
            request_content_type="application/json",
            record_request=True,
            request_accepted=True,
        )
    )
    assert spread.count(b"\n") == 1 and json.loads(spread)["requestObject"] == {"kind": "ConfigMap"}


@given(
    st.floats(min_value=0, max_value=4e9, allow_nan=False)
    | st.integers(1_700_000_000, 1_700_000_009).map(lambda s: s + 0.9999995)
)
def test_a_timestamp_reads_as_datetime_formats_it(seconds: float) -> None:
    """``timestamp`` formats each second once and adds the microseconds: the text must not differ from
    datetime's, rounding included (a fraction that rounds up to the next second)."""
    expected = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    assert timestamp(seconds) == expected
    assert timestamp(seconds) == expected  # from the cached second too


def test_an_apply_body_is_recorded_as_the_object_it_holds_json_or_yaml() -> None:
    apply = "application/apply-patch+yaml"
    as_json = b'{"kind":"ConfigMap","data":{"a":"1","n":"2"}}'
    as_yaml = b"kind: ConfigMap\ndata:\n  a: '1'\n  n: '2'\n"
    as_flow = b"{kind: ConfigMap, data: {a: '1', n: '2'}}"  # YAML's flow style: not JSON
    expected = {"kind": "ConfigMap", "data": {"a": "1", "n": "2"}}
    assert decode_request_body(as_json, apply) == expected
    assert decode_request_body(as_yaml, apply) == expected
    assert decode_request_body(as_flow, apply) == expected
