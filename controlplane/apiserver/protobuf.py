"""The one protobuf request kubectl sends: ``kubectl auth can-i``'s SelfSubjectAccessReview.

Since client-go 1.32, ``kubectl auth can-i`` POSTs its review as ``application/vnd.kubernetes.protobuf``
and does not retry as JSON. Kubernetes' protobuf envelope is the magic ``k8s\\x00`` followed by a
``runtime.Unknown`` message (apimachinery ``pkg/runtime/types_proto.go``):
``{1: typeMeta {1: apiVersion, 2: kind}, 2: raw}``; ``raw`` is the object's own message. This module
decodes just enough of the wire format (varints and length-delimited fields) to read that review; the
answer goes back as JSON, which kubectl accepts.
"""

from __future__ import annotations

from typing import Any

from controlplane.api.resources import ResourceType
from controlplane.apiserver import errors

MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def fields(data: bytes) -> dict[int, list[bytes | int]]:
    """Field number to values; length-delimited values as bytes, varints as ints."""
    out: dict[int, list[bytes | int]] = {}
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            out.setdefault(number, []).append(value)
        elif wire == 2:
            length, pos = _varint(data, pos)
            if pos + length > len(data):
                raise ValueError("truncated field")
            out.setdefault(number, []).append(data[pos : pos + length])
            pos += length
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
    return out


def _string(values: dict[int, list[bytes | int]], number: int) -> str:
    found = values.get(number)
    if not found or not isinstance(found[0], bytes):
        return ""
    return found[0].decode()


def _message(values: dict[int, list[bytes | int]], number: int) -> dict[int, list[bytes | int]] | None:
    found = values.get(number)
    if not found or not isinstance(found[0], bytes):
        return None
    return fields(found[0])


def decode_review(body: bytes, rtype: ResourceType) -> dict[str, Any]:
    """The JSON form of a protobuf-encoded (Self)SubjectAccessReview; 415 for anything else."""
    if rtype.kind not in ("SelfSubjectAccessReview", "SubjectAccessReview"):
        raise errors.unsupported_media_type()
    try:
        if not body.startswith(MAGIC):
            raise ValueError("missing the k8s protobuf magic")
        unknown = fields(body[len(MAGIC) :])
        raw = unknown.get(2)
        if not raw or not isinstance(raw[0], bytes):
            raise ValueError("no object in the envelope")
        review = fields(raw[0])
        spec = _message(review, 2) or {}
        result: dict[str, Any] = {"spec": {}}
        resource = _message(spec, 1)
        if resource is not None:
            names = ["namespace", "verb", "group", "version", "resource", "subresource", "name"]
            attrs = {n: _string(resource, i + 1) for i, n in enumerate(names)}
            result["spec"]["resourceAttributes"] = {k: v for k, v in attrs.items() if v}
        non_resource = _message(spec, 2)
        if non_resource is not None:
            result["spec"]["nonResourceAttributes"] = {
                "path": _string(non_resource, 1),
                "verb": _string(non_resource, 2),
            }
        if rtype.kind == "SubjectAccessReview":
            result["spec"]["user"] = _string(spec, 3)
            result["spec"]["groups"] = [v.decode() for v in spec.get(4, []) if isinstance(v, bytes)]
        return result
    except (ValueError, UnicodeDecodeError) as error:
        raise errors.bad_request(f"unable to decode protobuf body: {error}") from None
