"""Validation: field errors with upstream's paths, types and wording.

When kube-apiserver refuses an object it answers 422 Invalid with a Status whose ``details.causes``
list every problem, each with a field path (``spec.containers[0].image``), a reason
(``FieldValueRequired``) and a message (``Required value``). kubectl prints them verbatim, so the
wording here follows apimachinery's ``pkg/util/validation/field/errors.go`` and
``pkg/util/validation/validation.go`` exactly.

This module holds the error type and the checks every kind shares (names, labels, annotations, object
metadata: apimachinery ``pkg/api/validation/objectmeta.go``); each kind's own rules live in its
strategy.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class FieldError:
    """One validation failure (apimachinery ``field.Error``).

    ``type`` is upstream's ErrorType string ("Required value", "Invalid value", ...); ``reason`` is
    the CauseType that the Status carries ("FieldValueRequired", ...).
    """

    type: str
    reason: str
    field: str
    detail: str = ""
    value: Any = None
    has_value: bool = False

    def body(self) -> str:
        """Upstream's ``ErrorBody``: ``<type>[: <value>][: <detail>]``, without the field path."""
        text = self.type
        if self.has_value:
            text += f": {_render(self.value)}"
        if self.detail:
            text += f": {self.detail}"
        return text

    def message(self) -> str:
        """The text upstream prints (``Error()``): ``<field>: <body>``."""
        return f"{self.field}: {self.body()}" if self.field else self.body()

    def cause(self) -> dict[str, str]:
        """The Status ``details.causes`` entry (apimachinery ``errors.NewInvalid``: the body only)."""
        return {"reason": self.reason, "message": self.body(), "field": self.field}


def _render(value: Any) -> str:
    # field.Error.Error() quotes strings and prints other values with %#v-like formatting.
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, separators=(",", ":"))


def required(field: str, detail: str = "") -> FieldError:
    return FieldError("Required value", "FieldValueRequired", field, detail)


def invalid(field: str, value: Any, detail: str) -> FieldError:
    return FieldError("Invalid value", "FieldValueInvalid", field, detail, value, True)


def not_supported(field: str, value: Any, valid: list[str]) -> FieldError:
    detail = "supported values: " + ", ".join(json.dumps(v) for v in valid)
    return FieldError("Unsupported value", "FieldValueNotSupported", field, detail, value, True)


def duplicate(field: str, value: Any) -> FieldError:
    return FieldError("Duplicate value", "FieldValueDuplicate", field, "", value, True)


def forbidden(field: str, detail: str) -> FieldError:
    return FieldError("Forbidden", "FieldValueForbidden", field, detail)


def too_long(field: str, max_length: int) -> FieldError:
    detail = f"may not be more than {max_length} bytes"
    return FieldError("Too long", "FieldValueTooLong", field, detail)


# -- names (apimachinery pkg/util/validation/validation.go) ---------------------------------------

_DNS1123_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = _DNS1123_LABEL + r"(\." + _DNS1123_LABEL + ")*"
_DNS1123_LABEL_RE = re.compile(f"^{_DNS1123_LABEL}$")
_DNS1123_SUBDOMAIN_RE = re.compile(f"^{_DNS1123_SUBDOMAIN}$")
_QUALIFIED_NAME = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED_NAME_RE = re.compile(f"^{_QUALIFIED_NAME}$")
_LABEL_VALUE = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?"
_LABEL_VALUE_RE = re.compile(f"^{_LABEL_VALUE}$")


def is_dns1123_label(value: str) -> list[str]:
    errors = []
    if len(value) > 63:
        errors.append("must be no more than 63 bytes")
    if not _DNS1123_LABEL_RE.match(value):
        errors.append(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
            "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
            f"used for validation is '{_DNS1123_LABEL}')"
        )
    return errors


def is_dns1123_subdomain(value: str) -> list[str]:
    errors = []
    if len(value) > 253:
        errors.append("must be no more than 253 bytes")
    if not _DNS1123_SUBDOMAIN_RE.match(value):
        errors.append(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
            "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
            f"for validation is '{_DNS1123_SUBDOMAIN}')"
        )
    return errors


def is_qualified_name(value: str) -> list[str]:
    """A label or annotation key: an optional DNS-subdomain prefix, ``/``, and a name."""
    errors: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors.extend("prefix part " + msg for msg in is_dns1123_subdomain(prefix))
    else:
        return [
            "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start "
            "and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
            f"used for validation is '{_QUALIFIED_NAME}') with an optional DNS subdomain prefix and '/' "
            "(e.g. 'example.com/MyName')"
        ]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > 63:
        errors.append("name part must be no more than 63 bytes")
    if name and not _QUALIFIED_NAME_RE.match(name):
        errors.append(
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
            "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
            f"used for validation is '{_QUALIFIED_NAME}')"
        )
    return errors


def is_label_value(value: str) -> list[str]:
    errors = []
    if len(value) > 63:
        errors.append("must be no more than 63 bytes")
    if not _LABEL_VALUE_RE.match(value):
        errors.append(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
            "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
            f"'my_value',  or '12345', regex used for validation is '{_LABEL_VALUE}')"
        )
    return errors


# -- object metadata (apimachinery pkg/api/validation/objectmeta.go) ------------------------------

#: Total size of all annotations: 256 KiB (TotalAnnotationSizeLimitB).
ANNOTATIONS_LIMIT = 256 * 1024


def validate_labels(labels: Any, field: str) -> list[FieldError]:
    if labels is None:
        return []
    if not isinstance(labels, Mapping):
        return [invalid(field, labels, "must be a map of string keys to string values")]
    errors: list[FieldError] = []
    for key, value in labels.items():
        errors += [invalid(field, key, msg) for msg in is_qualified_name(str(key))]
        if not isinstance(value, str):
            errors.append(invalid(f"{field}[{key}]", value, "must be a string"))
        else:
            errors += [invalid(field, value, msg) for msg in is_label_value(value)]
    return errors


def validate_annotations(annotations: Any, field: str) -> list[FieldError]:
    if annotations is None:
        return []
    if not isinstance(annotations, Mapping):
        return [invalid(field, annotations, "must be a map of string keys to string values")]
    errors: list[FieldError] = []
    total = 0
    for key, value in annotations.items():
        errors += [invalid(field, key, msg) for msg in is_qualified_name(str(key).lower())]
        total += len(str(key)) + len(str(value))
    if total > ANNOTATIONS_LIMIT:
        errors.append(too_long(field, ANNOTATIONS_LIMIT))
    return errors


NameValidator = Any  # Callable[[str], list[str]]


def validate_object_meta(
    meta: Mapping[str, Any], *, namespaced: bool, name_validator: NameValidator = is_dns1123_subdomain
) -> list[FieldError]:
    """Upstream ``ValidateObjectMeta``: name, namespace, labels, annotations."""
    errors: list[FieldError] = []
    name = meta.get("name") or ""
    generate_name = meta.get("generateName") or ""
    if not name and not generate_name:
        errors.append(required("metadata.name", "name or generateName is required"))
    if name:
        errors += [invalid("metadata.name", name, msg) for msg in name_validator(name)]
    namespace = meta.get("namespace") or ""
    if namespaced:
        if not namespace:
            errors.append(required("metadata.namespace"))
        else:
            errors += [invalid("metadata.namespace", namespace, msg) for msg in is_dns1123_label(namespace)]
    elif namespace:
        errors.append(forbidden("metadata.namespace", "not allowed on this type"))
    errors += validate_labels(meta.get("labels"), "metadata.labels")
    errors += validate_annotations(meta.get("annotations"), "metadata.annotations")
    finalizers = meta.get("finalizers") or []
    if not isinstance(finalizers, list):
        errors.append(invalid("metadata.finalizers", finalizers, "must be a list of strings"))
    else:
        for i, finalizer in enumerate(finalizers):
            if not isinstance(finalizer, str):
                errors.append(invalid(f"metadata.finalizers[{i}]", finalizer, "must be a string"))
                continue
            errors += [invalid("metadata.finalizers", finalizer, msg) for msg in is_qualified_name(finalizer)]
    return errors


def validate_object_meta_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    """Upstream ``ValidateObjectMetaUpdate``: identity fields are immutable."""
    errors: list[FieldError] = []
    for field, what in (
        ("name", "metadata.name"),
        ("namespace", "metadata.namespace"),
        ("uid", "metadata.uid"),
    ):
        if (new.get(field) or "") != (old.get(field) or ""):
            errors.append(invalid(what, new.get(field) or "", "field is immutable"))
    if new.get("creationTimestamp") != old.get("creationTimestamp"):
        errors.append(
            invalid("metadata.creationTimestamp", new.get("creationTimestamp"), "field is immutable")
        )
    return errors
