"""ConfigMaps and Secrets: configuration kept outside the image, handed to pods as files or variables.

Both are maps of **keys** to values. A key becomes a file name when the map is mounted as a volume,
so it must be a valid config key (``[-._a-zA-Z0-9]+``, not ``.`` or ``..``). A ConfigMap holds text in
``data`` and bytes in ``binaryData``; a Secret holds bytes in ``data``, **base64-encoded in JSON**
(``stringData`` is a write-only convenience: plain text the API server encodes into ``data`` and never
returns). Base64 that does not decode is found by upstream's *decoder*, so it is a 400, not a 422:
``Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte 4``.

Everything in one object is limited to **1 MiB** in total: objects live in etcd, are watched by every
kubelet that mounts them, and are not meant to carry files.

A Secret has a ``type`` (default ``Opaque``) that promises consumers a shape: ``kubernetes.io/tls``
must have ``tls.crt`` and ``tls.key``, ``kubernetes.io/dockerconfigjson`` a ``.dockerconfigjson`` holding
JSON, ``kubernetes.io/basic-auth`` a ``username`` or ``password``, ``kubernetes.io/ssh-auth`` an
``ssh-privatekey``, ``kubernetes.io/service-account-token`` the ``kubernetes.io/service-account.name``
annotation. The type cannot change later.

Setting ``immutable: true`` freezes the data (and cannot be undone): the kubelet then stops watching the
object, which matters when thousands of pods mount it.

Upstream: ``ValidateConfigMap*``/``ValidateSecret*`` in ``pkg/apis/core/validation/validation.go``,
``SetDefaults_Secret`` in ``pkg/apis/core/v1/defaults.go``, stringData in ``pkg/apis/core/v1/conversion.go``.
"""

from __future__ import annotations

import base64
import json
from typing import Any, Final

from controlplane.api.meta import Object
from controlplane.api.strategies.common import (
    CoreKindStrategy,
    UndecodableObject,
    as_dict,
    as_str,
    key,
)
from controlplane.api.strategies.pods import is_config_map_key
from controlplane.api.strategies.workloads import validate_meta_update
from controlplane.api.validation import FieldError, forbidden, invalid, required, too_long

#: ``core.MaxSecretSize``: the limit for a Secret's data and a ConfigMap's data + binaryData.
MAX_SIZE: Final = 1024 * 1024
IMMUTABLE_DETAIL: Final = "field is immutable when `immutable` is set"
REDACTED: Final = "<secret contents redacted>"
_ALPHABET: Final = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")


def base64_error_offset(text: str) -> int | None:
    """Where Go's ``base64.StdEncoding.Decode`` gives up (``CorruptInputError``), or None if it decodes.

    A port of ``encoding/base64`` ``decodeQuantum``: padding is required, ``\\r``/``\\n`` are skipped,
    and the offset is in bytes of the UTF-8 text, as in upstream's message.
    """
    src = text.encode()
    n, si = len(src), 0
    while si < n:
        j = 0
        while j < 4:
            if si == n:
                return None if j == 0 else si - j  # a partial quantum: padding was required
            c = src[si]
            si += 1
            if c in _ALPHABET:
                j += 1
                continue
            if c in b"\r\n":
                continue
            if c != ord("="):
                return si - 1
            if j < 2:
                return si - 1  # "=" too early
            if j == 2:
                while si < n and src[si] in b"\r\n":
                    si += 1
                if si == n:
                    return n  # "x==" needs its second "="
                if src[si] != ord("="):
                    return si - 1
                si += 1
            while si < n and src[si] in b"\r\n":
                si += 1
            return si if si < n else None  # anything after padding is trailing garbage
    return None


def decode_base64(value: Any, field: str) -> bytes:
    """A ``[]byte`` field's JSON value, decoded as upstream's decoder does (raises UndecodableObject)."""
    if value is None:
        return b""
    if not isinstance(value, str):
        kind = (
            "number"
            if isinstance(value, int | float) and not isinstance(value, bool)
            else type(value).__name__
        )
        kind = {"bool": "bool", "list": "array", "dict": "object"}.get(kind, kind)
        raise UndecodableObject(f"json: cannot unmarshal {kind} into Go struct field {field} of type []uint8")
    offset = base64_error_offset(value)
    if offset is not None:
        raise UndecodableObject(f"illegal base64 data at input byte {offset}")
    return base64.b64decode("".join(value.split()))


def _go_json_error(data: bytes) -> str | None:
    """Roughly what Go's ``json.Unmarshal`` into ``map[string]interface{}`` says about ``data``."""
    text = data.decode(errors="replace")
    if not text.strip():
        return "unexpected end of JSON input"
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as error:
        if error.pos >= len(text.rstrip()):
            return "unexpected end of JSON input"
        char = text[error.pos]
        where = (
            "looking for beginning of value"
            if error.pos == len(text) - len(text.lstrip())
            else "after top-level value"
        )
        return f"invalid character {char!r} {where}"
    if not isinstance(parsed, dict):
        kind = {list: "array", str: "string", bool: "bool"}.get(type(parsed), "number")
        return f"json: cannot unmarshal {kind} into Go value of type map[string]interface {{}}"
    return None


class ConfigMapStrategy(CoreKindStrategy):
    """ConfigMaps."""

    def validate(self, obj: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidateConfigMap``."""
        errors = self.validate_meta(obj, namespaced=namespaced)
        data, binary = as_dict(obj.get("data")), as_dict(obj.get("binaryData"))
        total = 0
        for name, value in data.items():
            errors += [invalid(key("data", name), name, msg) for msg in is_config_map_key(name)]
            if name in binary:
                errors.append(invalid(key("data", name), name, "duplicate of key present in binaryData"))
            total += len(as_str(value).encode())
        for name, value in binary.items():
            errors += [invalid(key("binaryData", name), name, msg) for msg in is_config_map_key(name)]
            total += len(decode_base64(value, "ConfigMap.binaryData"))
        if total > MAX_SIZE:
            errors.append(too_long("", MAX_SIZE))  # "" is upstream's: the whole object is too big
        return errors

    def validate_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidateConfigMapUpdate``."""
        errors = validate_meta_update(obj, old)
        if old.get("immutable") is True:
            if obj.get("immutable") is not True:
                errors.append(forbidden("immutable", IMMUTABLE_DETAIL))
            if as_dict(obj.get("data")) != as_dict(old.get("data")):
                errors.append(forbidden("data", IMMUTABLE_DETAIL))
            if as_dict(obj.get("binaryData")) != as_dict(old.get("binaryData")):
                errors.append(forbidden("binaryData", IMMUTABLE_DETAIL))
        return errors + self.validate(obj, namespaced=namespaced)


class SecretStrategy(CoreKindStrategy):
    """Secrets: typed, base64 data, ``stringData`` folded into ``data``."""

    def default(self, obj: Object) -> None:
        """``SetDefaults_Secret`` and the v1 conversion of ``stringData``."""
        if not obj.get("type"):
            obj["type"] = "Opaque"
        data = obj.get("data")
        for value in as_dict(data).values():
            decode_base64(value, "Secret.data")  # undecodable data is a 400, found while decoding
        string_data = obj.pop("stringData", None)
        if isinstance(string_data, dict) and string_data:
            if not isinstance(data, dict):
                data = obj["data"] = {}
            for name, value in string_data.items():
                data[name] = base64.b64encode(as_str(value).encode()).decode()

    def validate(self, obj: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidateSecret``."""
        errors = self.validate_meta(obj, namespaced=namespaced)
        data = as_dict(obj.get("data"))
        decoded: dict[str, bytes] = {}
        total = 0
        for name, value in data.items():
            errors += [invalid(key("data", name), name, msg) for msg in is_config_map_key(name)]
            decoded[name] = decode_base64(value, "Secret.data")
            total += len(decoded[name])
        if total > MAX_SIZE:
            errors.append(too_long("data", MAX_SIZE))
        kind = obj.get("type")
        if kind == "kubernetes.io/service-account-token":
            if not as_dict(obj["metadata"].get("annotations")).get("kubernetes.io/service-account.name"):
                errors.append(required("metadata.annotations[kubernetes.io/service-account.name]"))
        elif kind in ("kubernetes.io/dockercfg", "kubernetes.io/dockerconfigjson"):
            data_key = ".dockercfg" if kind == "kubernetes.io/dockercfg" else ".dockerconfigjson"
            if data_key not in decoded:
                errors.append(required(key("data", data_key)))
            else:
                problem = _go_json_error(decoded[data_key])
                if problem:
                    errors.append(invalid(key("data", data_key), REDACTED, problem))
        elif kind == "kubernetes.io/basic-auth":
            if "username" not in decoded and "password" not in decoded:
                errors.append(required("data[username]"))
                errors.append(required("data[password]"))
        elif kind == "kubernetes.io/ssh-auth":
            if not decoded.get("ssh-privatekey"):
                errors.append(required("data[ssh-privatekey]"))
        elif kind == "kubernetes.io/tls":
            if "tls.crt" not in decoded:
                errors.append(required("data[tls.crt]"))
            if "tls.key" not in decoded:
                errors.append(required("data[tls.key]"))
        return errors

    def validate_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidateSecretUpdate``: the type is fixed; immutable secrets keep their data."""
        errors = validate_meta_update(obj, old)
        if obj.get("type") != old.get("type"):
            errors.append(invalid("type", obj.get("type"), "field is immutable"))
        if old.get("immutable") is True:
            if obj.get("immutable") is not True:
                errors.append(forbidden("immutable", IMMUTABLE_DETAIL))
            if as_dict(obj.get("data")) != as_dict(old.get("data")):
                errors.append(forbidden("data", IMMUTABLE_DETAIL))
        return errors + self.validate(obj, namespaced=namespaced)


__all__ = ["MAX_SIZE", "ConfigMapStrategy", "SecretStrategy", "base64_error_offset", "decode_base64"]
