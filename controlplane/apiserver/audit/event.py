"""Audit events: one request at one stage, in upstream's ``audit.k8s.io/v1`` ``Event`` shape.

A line of the audit log looks like this (``kubectl create configmap web`` at level ``Metadata``)::

    {"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata",
     "auditID":"5d9c...","stage":"ResponseComplete",
     "requestURI":"/api/v1/namespaces/default/configmaps?fieldManager=kubectl-create",
     "verb":"create","user":{"username":"alice","groups":["students","system:authenticated"]},
     "sourceIPs":["127.0.0.1"],"userAgent":"kubectl/v1.37.0 (linux/amd64)",
     "objectRef":{"resource":"configmaps","namespace":"default","name":"web","apiVersion":"v1"},
     "responseStatus":{"metadata":{},"code":201},
     "requestReceivedTimestamp":"2026-11-30T13:41:44.123456Z",
     "stageTimestamp":"2026-11-30T13:41:44.127311Z",
     "annotations":{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":"..."}}

``auditID`` is the request's Audit-ID: the ``Audit-Id`` response header, and the ``id`` of every
trace event of the request, so the trace and the log point at each other. ``impersonatedUser``
appears when the request was made as another user (``kubectl --as``); ``responseStatus`` carries the
Status of a failure (its reason and message); ``requestObject`` and ``responseObject`` appear at the
levels that record bodies (``Request``, ``RequestResponse``).

Building an event is cheap and happens while the request is served (``new_event``, as plain dicts
whose parts are never changed afterwards, so one stage's event can be taken while the next is
built). Its bodies stay bytes, and its timestamps seconds, in a ``PendingEvent`` until the log's
writer thread ``encode``s it: formatting the times, decoding the bodies, dropping ``managedFields``
when the policy says so, and hiding the values of any Secret.

Upstream: ``k8s.io/apiserver/pkg/apis/audit/v1/types.go`` (the shape), ``pkg/audit/request.go``
(``LogRequestMetadata``, ``LogRequestObject``, ``LogResponseObject``, ``maybeTruncateUserAgent``).
"""

from __future__ import annotations

import contextlib
import json
import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import yaml

from controlplane.api import serializer
from controlplane.api.meta import Object
from controlplane.apiserver import protobuf
from controlplane.apiserver.http import YAML_BODIES
from controlplane.identity import UserInfo
from controlplane.trace.redaction import redact

API_VERSION = "audit.k8s.io/v1"

#: Annotations the authorizer adds (``authorization.k8s.io/decision`` is ``allow`` or ``forbid``).
DECISION_ANNOTATION = "authorization.k8s.io/decision"
REASON_ANNOTATION = "authorization.k8s.io/reason"

#: Request bodies that are JSON (a create or update, or a JSON, merge or strategic merge patch).
JSON_BODIES = frozenset(
    {
        "application/json",
        "application/merge-patch+json",
        "application/strategic-merge-patch+json",
        "application/json-patch+json",
    }
)

#: Upstream truncates longer User-Agents.
MAX_USER_AGENT = 1024
USER_AGENT_TRUNCATED = "...TRUNCATED"


#: The last whole second ``timestamp`` formatted, and its text: events come many to a second.
_last_second: tuple[int, str] = (-1, "")


def timestamp(seconds: float) -> str:
    """A ``metav1.MicroTime``: RFC 3339 with microseconds, in UTC.

    The microseconds are rounded as ``datetime.fromtimestamp`` rounds them; the date and time of day
    are formatted once per second.
    """
    global _last_second
    fraction, whole = math.modf(seconds)
    micros = round(fraction * 1e6)
    if micros >= 1_000_000 or micros < 0:  # rounded up into the next second, or before 1970
        return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    second, text = _last_second
    if second != whole:
        second = int(whole)
        text = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S")
        _last_second = (second, text)
    return f"{text}.{micros:06d}Z"


def user_agent(value: str) -> str:
    if len(value) > MAX_USER_AGENT:
        return value[:MAX_USER_AGENT] + USER_AGENT_TRUNCATED
    return value


def user_json(user: UserInfo) -> Object:
    """An ``authentication/v1`` ``UserInfo``."""
    return user.to_json()


def new_event(
    *,
    audit_id: str,
    level: str,
    request_uri: str,
    verb: str,
    user: UserInfo | None,
    source_ips: list[str],
    agent: str,
    object_ref: Object | None,
    received_at: float,
    user_document: Object | None = None,
) -> Object:
    """The event of a request just received (``NewEventFromRequest`` + ``LogRequestMetadata``).

    ``user_document``: ``user_json(user)`` when the caller already has it (the auditor keeps one per
    user), so that it is not made again for every request.
    """
    if user_document is None:
        user_document = user_json(user) if user is not None else {}
    event: Object = {
        "kind": "Event",
        "apiVersion": API_VERSION,
        "level": level,
        "auditID": audit_id,
        "stage": "",
        "requestURI": request_uri,
        "verb": verb,
        "user": user_document,
        "sourceIPs": source_ips,
    }
    if agent:
        event["userAgent"] = user_agent(agent)
    if object_ref:
        event["objectRef"] = object_ref
    event["requestReceivedTimestamp"] = received_at  # seconds until ``encode`` formats it
    return event


def object_ref(
    *, resource: str, namespace: str, name: str, api_group: str, api_version: str, subresource: str
) -> Object:
    """An ``ObjectReference`` with its empty fields left out, as upstream serializes it."""
    ref: Object = {"resource": resource}
    for key, value in (
        ("namespace", namespace),
        ("name", name),
        ("apiGroup", api_group),
        ("apiVersion", api_version),
        ("subresource", subresource),
    ):
        if value:
            ref[key] = value
    return ref


def success_status(code: int) -> Object:
    """The ``responseStatus`` of an answer that is not a failure."""
    return {"metadata": {}, "code": code}


def failure_status(code: int, status: object) -> Object:
    """The ``responseStatus`` of a failure, from the Status body the client got (if it is one)."""
    result: Object = {"metadata": {}}
    if isinstance(status, dict):
        for key in ("status", "message", "reason", "details"):
            if key in status:
                result[key] = status[key]
    result["code"] = code
    return result


@dataclass(frozen=True, slots=True)
class PendingEvent:
    """An event whose bodies are still the bytes of the request and the response."""

    event: Object
    #: The request's body and content type, when it had one and the event needs it: recorded as
    #: ``requestObject`` if ``record_request`` (levels Request and up), else only read for the name
    #: of the object a create made (``objectRef.name``), as upstream reads it from the decoded object.
    request_body: bytes | None = None
    request_content_type: str = ""
    record_request: bool = False
    #: The response's JSON body (level RequestResponse).
    response_body: bytes | None = None
    #: The Status body of a failed request (for ``responseStatus``), whatever the level.
    status_body: bytes | None = None
    omit_managed_fields: bool = False
    #: Whether the server accepted the request (a 2xx or 3xx answer): its JSON body then is valid JSON.
    request_accepted: bool = False


def decode_request_body(body: bytes, content_type: str) -> Any:
    """A request body (JSON, YAML or protobuf) as an object; ValueError if it does not decode."""
    if content_type == protobuf.MEDIA_TYPE:
        try:
            return protobuf.decode(body)[2]
        except protobuf.ProtobufError as error:
            raise ValueError(str(error)) from None
    if content_type in YAML_BODIES:
        if body.lstrip()[:1] == b"{":
            # A JSON object (what kubectl and the manifest form send as an apply) is YAML read
            # the same way; the JSON decoder reads it some thirty times faster than PyYAML's.
            with contextlib.suppress(ValueError):
                return json.loads(body)
        return yaml.safe_load(body)
    return json.loads(body)


def without_managed_fields(obj: Any) -> Any:
    """A copy of ``obj`` (an object, a list or a Table) without ``metadata.managedFields``."""
    if not isinstance(obj, dict):
        return obj
    out = dict(obj)
    metadata = out.get("metadata")
    if isinstance(metadata, dict) and "managedFields" in metadata:
        out["metadata"] = {k: v for k, v in metadata.items() if k != "managedFields"}
    for key in ("items", "rows"):
        items = out.get(key)
        if isinstance(items, list):
            if key == "rows":
                out[key] = [
                    {**row, "object": without_managed_fields(row["object"])}
                    if isinstance(row, dict) and "object" in row
                    else row
                    for row in items
                ]
            else:
                out[key] = [without_managed_fields(item) for item in items]
    return out


def _recordable(obj: Any, omit_managed_fields: bool) -> Any:
    if omit_managed_fields:
        obj = without_managed_fields(obj)
    return redact({"object": obj})["object"]  # any Secret inside keeps its keys, never its values


def encode(pending: PendingEvent) -> bytes:
    """The event's line in the audit log (JSON, ``\\n``-terminated). Runs in the writer thread.

    A body that is already one line of JSON the server accepted (or produced), with nothing to hide
    or drop, is copied into the line as it is, after the other fields: decoding and encoding it again
    would cost more than everything else.
    """
    event = _formatted_times(pending.event)
    if pending.status_body is not None:
        try:
            status = serializer.decode(pending.status_body)
        except ValueError:
            status = None
        event = with_status(event, failure_status(event["responseStatus"]["code"], status))
    raw: list[tuple[bytes, bytes]] = []  # (field, body) copied as they are
    request_body = pending.request_body
    if request_body:
        named = bool((event.get("objectRef") or {}).get("name"))
        if (
            pending.record_request
            and named
            and pending.request_accepted
            and pending.request_content_type in JSON_BODIES
            and _copyable(request_body, pending)
        ):
            raw.append((b"requestObject", request_body))
            request_body = None
        if request_body:
            try:
                request_object = decode_request_body(request_body, pending.request_content_type)
            except (ValueError, yaml.YAMLError):
                request_object = None  # refused with 400 by the handler: nothing to record
            event = _with_object_name(event, request_object)
            if request_object is not None and pending.record_request:
                event = _insert_before_timestamps(
                    event, "requestObject", _recordable(request_object, pending.omit_managed_fields)
                )
    body = pending.response_body
    if body is not None:
        if _copyable(body, pending):  # the server's own compact JSON
            raw.append((b"responseObject", body))
        else:
            try:
                response_object = _recordable(serializer.decode(body), pending.omit_managed_fields)
            except ValueError:
                response_object = None
            if response_object is not None:
                event = _insert_before_timestamps(event, "responseObject", response_object)
    try:
        line = serializer.encode(event)
    except serializer.UnencodableObject:
        line = json.dumps(event, separators=(",", ":")).encode()
    if not raw:
        return line + b"\n"
    return line[:-1] + b"".join(b',"' + name + b'":' + value for name, value in raw) + b"}\n"


def _copyable(body: bytes, pending: PendingEvent) -> bool:
    """Whether ``body`` can go into the line unchanged: one line, no Secret, nothing to drop."""
    return (
        not pending.omit_managed_fields
        and b"\n" not in body
        and b"\r" not in body
        and b'"Secret"' not in body
    )


def _formatted_times(event: Object) -> Object:
    """``event`` with its timestamps (kept as seconds until now) as ``MicroTime`` strings."""
    times = {
        k: event[k]
        for k in ("requestReceivedTimestamp", "stageTimestamp")
        if isinstance(event.get(k), float | int)
    }
    if not times:
        return event
    return {**event, **{k: timestamp(v) for k, v in times.items()}}


def _with_object_name(event: Object, request_object: Any) -> Object:
    """``objectRef`` completed with the name (and namespace) of the object in the request."""
    ref = event.get("objectRef")
    metadata = request_object.get("metadata") if isinstance(request_object, dict) else None
    if not isinstance(ref, dict) or not isinstance(metadata, dict) or ref.get("name"):
        return event
    name, namespace = metadata.get("name"), metadata.get("namespace")
    if not isinstance(name, str) or not name:
        return event
    ref = {**ref, "name": name}
    if isinstance(namespace, str) and namespace and not ref.get("namespace"):
        ref["namespace"] = namespace
    return {**event, "objectRef": ref}


def with_status(event: Object, status: Object) -> Object:
    """``event`` with its ``responseStatus``, where upstream puts it (before the bodies and times).

    (``_insert_before_timestamps`` of the event without its old status, in one pass: it runs for
    every audited request.)
    """
    later = _AFTER["responseStatus"]
    out: Object = {}
    placed = False
    for name, item in event.items():
        if name == "responseStatus":
            continue
        if not placed and name in later:
            out["responseStatus"] = status
            placed = True
        out[name] = item
    if not placed:
        out["responseStatus"] = status
    return out


def _insert_before_timestamps(event: Object, key: str, value: Any) -> Object:
    """``event`` with ``key`` where upstream puts the bodies: before the timestamps."""
    later = _AFTER[key]
    out: Object = {}
    for name, item in event.items():
        if name in later and key not in out:
            out[key] = value
        out[name] = item
    out.setdefault(key, value)
    return out


#: The fields each inserted field comes before (upstream's field order).
_AFTER = {
    "responseStatus": frozenset({"requestObject", "responseObject", "requestReceivedTimestamp"}),
    "requestObject": frozenset({"responseObject", "requestReceivedTimestamp"}),
    "responseObject": frozenset({"requestReceivedTimestamp"}),
}
