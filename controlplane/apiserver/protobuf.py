"""Reading the protobuf request bodies Kubernetes' own clients send.

**Protobuf** (Protocol Buffers) is a binary encoding. A message is a sequence of fields, and each
field is written as a *key*, its field number and a wire type packed into one varint, then the value:

* wire type 0, a **varint**: an integer in 7-bit groups, low group first, the high bit of each byte
  saying "more follows" (``0x96 0x01`` is 150). Ints, bools and enums travel this way.
* wire type 2, **length-delimited**: a varint length, then that many bytes. Strings, ``bytes``,
  nested messages, map entries and packed lists travel this way.
* wire types 1 and 5 are fixed 8- and 4-byte values (Kubernetes' API types have none).

No field names, no braces, no quotes: a ConfigMap named ``x`` holding ``a=b`` is 38 bytes instead of
about 90 of JSON, and it is decoded without parsing text. That is why Kubernetes' own Go clients
(kubelets, controllers, and kubectl's typed commands since client-go 1.32: ``kubectl create``,
``run``, ``auth can-i``, ``create token``...) send ``application/vnd.kubernetes.protobuf`` and do
not fall back to JSON when a server answers 415. The price: the reader must know the schema, which
field number is which field. :mod:`protobuf_schema` holds those tables.

Every body starts with an **envelope** (apimachinery ``pkg/runtime/serializer/protobuf``): the magic
bytes ``k8s\\x00``, then a ``runtime.Unknown`` message ``{1: typeMeta {1: apiVersion, 2: kind}, 2:
raw, 3: contentEncoding, 4: contentType}``, where ``raw`` is the object's own message, e.g. a
``core.ConfigMap``. :func:`decode` opens the envelope, looks the kind up in ``KINDS`` (another group
version of it in ``OTHER_VERSIONS``: an autoscaling/v1 HorizontalPodAutoscaler) and turns the
object into exactly its JSON form, camelCase names and all; the handlers then treat it like any JSON
body, and the answer goes back as JSON (kubectl's ``Accept`` lists ``application/json`` too).

Unknown field numbers are skipped, as protobuf readers do, so a newer client's extra fields do not
break an older server. Malformed bytes raise :class:`ProtobufError`; a kind the tables do not know
raises :class:`UnsupportedKind`.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from controlplane.apiserver.protobuf_schema import KINDS, MESSAGES, OTHER_VERSIONS

MEDIA_TYPE: Final = "application/vnd.kubernetes.protobuf"
MAGIC: Final = b"k8s\x00"

#: Deeper nesting than any API type has: a body nested further is an attack or garbage.
MAX_DEPTH: Final = 64

VARINT, I64, LEN, I32 = 0, 1, 2, 5
SCALARS: Final = frozenset({"string", "int", "bool", "bytes"})
ZERO: Final[dict[str, Any]] = {"string": "", "int": 0, "bool": False, "bytes": ""}


class ProtobufError(ValueError):
    """The body is not a well-formed Kubernetes protobuf message."""


class UnsupportedKind(ProtobufError):
    """A well-formed envelope around a kind this server cannot decode from protobuf."""

    def __init__(self, api_version: str, kind: str) -> None:
        super().__init__(f"no protobuf schema for {kind} ({api_version or 'no apiVersion'})")
        self.api_version = api_version
        self.kind = kind


def decode(body: bytes) -> tuple[str, str, dict[str, Any]]:
    """``(apiVersion, kind, object)`` from an enveloped protobuf body; the object in its JSON form."""
    if not body.startswith(MAGIC):
        raise ProtobufError(
            f"provided data does not appear to be a protobuf message, expected prefix {list(MAGIC)}"
        )
    envelope = _message(body[len(MAGIC) :], "runtime.Unknown", "", 0)
    type_meta = envelope.get("typeMeta") or {}
    api_version: str = type_meta.get("apiVersion", "")
    kind: str = type_meta.get("kind", "")
    if envelope.get("contentEncoding"):
        raise ProtobufError(f"unsupported content encoding {envelope['contentEncoding']!r}")
    if envelope.get("contentType", MEDIA_TYPE) != MEDIA_TYPE:
        raise ProtobufError(f"unsupported content type {envelope['contentType']!r} in the envelope")
    if not kind:
        raise ProtobufError("Object 'Kind' is missing in the protobuf envelope")
    message = OTHER_VERSIONS.get((api_version, kind), "")
    expected_version: str | None = api_version
    if not message:
        expected_version, message = KINDS.get(kind, (None, ""))
        if not message or (expected_version is not None and api_version not in ("", expected_version)):
            raise UnsupportedKind(api_version, kind)
    api_version = api_version or expected_version or ""
    obj = _message(envelope.get("raw", b""), message, "", 0)
    head: dict[str, Any] = {"apiVersion": api_version, "kind": kind} if api_version else {"kind": kind}
    return api_version, kind, head | obj


# -- the wire format --------------------------------------------------------------------------------


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ProtobufError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result & 0xFFFF_FFFF_FFFF_FFFF, pos
        shift += 7
        if shift >= 70:
            raise ProtobufError("varint longer than 10 bytes")


def _scan(data: bytes, where: str) -> Iterator[tuple[int, int, int | bytes]]:
    """Each field of a message as ``(number, wire type, value)``: varints as ints, the rest as bytes."""
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise ProtobufError(f"{where or 'body'}: field number 0 is invalid")
        if wire == VARINT:
            value, pos = _varint(data, pos)
            yield number, wire, value
            continue
        if wire == LEN:
            size, pos = _varint(data, pos)
        elif wire in (I64, I32):
            size = 8 if wire == I64 else 4
        else:
            raise ProtobufError(f"{where or 'body'}: unsupported wire type {wire} for field {number}")
        if pos + size > len(data):
            raise ProtobufError(f"{where or 'body'}: field {number} runs past the end of its message")
        yield number, wire, data[pos : pos + size]
        pos += size


# -- from wire values to JSON -----------------------------------------------------------------------


def _message(data: bytes, name: str, where: str, depth: int) -> Any:
    """A message's JSON form: a dict of its fields, or its own form (see :data:`JSON_FORMS`)."""
    if depth > MAX_DEPTH:
        raise ProtobufError(f"{where}: messages nested more than {MAX_DEPTH} deep")
    table = MESSAGES[name]
    form = JSON_FORMS.get(name)
    raw = form is not None  # a message with a form of its own gets its bytes fields as bytes
    obj: dict[str, Any] = {}
    for number, wire, value in _scan(data, where):
        field = table.get(number)
        if field is None:
            continue  # a field this server does not know (a newer client): skip it
        json_name, type_ = field
        path = f"{where}.{json_name}" if where and json_name else (json_name or where)
        if type_.startswith("[]"):
            items: list[Any] = obj.setdefault(json_name, [])
            elem = type_[2:]
            if wire == LEN and elem in ("int", "bool"):  # a packed list: varints back to back
                items.extend(_packed(value, elem, path))
            else:
                items.append(_value(wire, value, elem, f"{path}[{len(items)}]", depth, raw))
        elif type_.startswith("map[string]"):
            key, item = _entry(wire, value, type_[len("map[string]") :], path, depth)
            obj.setdefault(json_name, {})[key] = item
        elif not json_name:  # an inlined struct: its fields are the parent's
            obj.update(_value(wire, value, type_, where, depth, raw))
        else:
            item = _value(wire, value, type_, path, depth, raw)
            if item is None or (type_ in SCALARS and item == ZERO[type_]):
                obj.pop(json_name, None)  # unset (omitempty), or a zero time
            else:
                obj[json_name] = item
    return form(obj) if form is not None else obj


def _value(wire: int, value: int | bytes, type_: str, where: str, depth: int, raw: bool) -> Any:
    base = type_.removeprefix("*")
    if base in ("int", "bool"):
        if not isinstance(value, int):
            raise ProtobufError(f"{where}: wire type {wire} cannot hold {base} field")
        return bool(value) if base == "bool" else _signed(value)
    if not isinstance(value, bytes) or wire != LEN:
        raise ProtobufError(f"{where}: wire type {wire} cannot hold a {base} field")
    if base == "string":
        return value.decode("utf-8", "replace")  # as Go's JSON encoder writes invalid UTF-8
    if base == "bytes":
        return value if raw else base64.b64encode(value).decode("ascii")
    return _message(value, base, where, depth + 1)


def _signed(value: int) -> int:
    """int32 and int64 travel as 64-bit two's complement: -1 is ten bytes of varint."""
    return value - (1 << 64) if value >= 1 << 63 else value


def _packed(value: int | bytes, elem: str, where: str) -> Iterator[Any]:
    assert isinstance(value, bytes)
    pos = 0
    while pos < len(value):
        number, pos = _varint(value, pos)
        yield bool(number) if elem == "bool" else _signed(number)


def _entry(wire: int, value: int | bytes, elem: str, where: str, depth: int) -> tuple[str, Any]:
    """One map entry: a ``{1: key, 2: value}`` message; a missing value is the zero value."""
    if not isinstance(value, bytes) or wire != LEN:
        raise ProtobufError(f"{where}: wire type {wire} cannot hold a map entry")
    key, item, found = "", None, False
    for number, entry_wire, entry_value in _scan(value, where):
        if number == 1:
            key = _value(entry_wire, entry_value, "string", where, depth, False)
        elif number == 2:
            item, found = _value(entry_wire, entry_value, elem, f"{where}.{key}", depth, False), True
    if not found:
        item = ZERO[elem] if elem in SCALARS else _message(b"", elem, f"{where}.{key}", depth + 1)
    return key, item


# -- messages with a JSON form of their own (their Go types implement json.Marshaler) --------------


def _timestamp(fields: dict[str, Any]) -> datetime | None:
    """``metav1.Time``: an empty message is the zero time (left out); else seconds and nanos since 1970."""
    if not fields:
        return None
    try:
        return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(
            seconds=fields.get("seconds", 0), microseconds=fields.get("nanos", 0) // 1000
        )
    except OverflowError:
        raise ProtobufError(f"timestamp out of range: {fields}") from None


def _time(fields: dict[str, Any]) -> str | None:
    moment = _timestamp(fields)  # JSON keeps whole seconds (RFC 3339)
    return None if moment is None else moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _micro_time(fields: dict[str, Any]) -> str | None:
    moment = _timestamp(fields)  # RFC 3339 with microseconds, as leases are renewed
    return None if moment is None else moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _int_or_string(fields: dict[str, Any]) -> int | str:
    kind = fields.get("type", 0)
    if kind == 0:
        return int(fields.get("intVal", 0))
    if kind == 1:
        return str(fields.get("strVal", ""))
    raise ProtobufError(f"IntOrString of unknown type {kind}")


def _json_bytes(raw: bytes | None, what: str) -> Any:
    """RawExtension and FieldsV1 carry JSON (or, for a RawExtension, another envelope)."""
    if not raw:
        return None
    if raw.startswith(MAGIC):
        return decode(raw)[2]
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as error:
        raise ProtobufError(f"{what} holds neither JSON nor a protobuf object: {error}") from None


JSON_FORMS: Final[dict[str, Callable[[dict[str, Any]], Any]]] = {
    "meta.Time": _time,
    "meta.MicroTime": _micro_time,
    "resource.Quantity": lambda f: f.get("string") or "0",  # the zero Quantity is "0"
    "intstr.IntOrString": _int_or_string,
    "runtime.RawExtension": lambda f: _json_bytes(f.get("raw"), "RawExtension"),
    "meta.FieldsV1": lambda f: _json_bytes(f.get("Raw"), "FieldsV1"),
    "authentication.ExtraValue": lambda f: f.get("items", []),  # Go: type ExtraValue []string
    "authentication.AttestationValue": lambda f: f.get("items", []),
    "authorization.ExtraValue": lambda f: f.get("items", []),
    "certificates.ExtraValue": lambda f: f.get("items", []),
    "runtime.Unknown": lambda f: f,  # the envelope: decode() reads raw as bytes
}
"""Messages whose JSON form is not a plain object of their fields, and how to make it."""
