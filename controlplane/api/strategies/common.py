"""What every kind's strategy shares: a base class, field paths, Go-formatted values, small checks.

**The base class.** kube-apiserver defaults an object while *decoding* the request, before its
strategy's ``PrepareForCreate``/``PrepareForUpdate`` run. The lab's registry calls ``default`` after
``prepare_*``, so ``KindStrategy`` defaults first inside ``prepare_*`` as well (defaulting is
idempotent): a pod's QoS class is computed from defaulted requests, and a Deployment's generation is
bumped only when its *defaulted* spec changed, not because a client left a defaulted field out.

**Values in messages.** Upstream's field errors print a string quoted (``%q``), a number or boolean
as is, a ``fmt.Stringer`` (an IntOrString, a Quantity) through its ``String()``, and, since Kubernetes
1.34, anything else as **JSON**: ``{"app":"web"}``, ``["/healthz"]``, and internal types with their Go
field names, ``{"APIGroup":"rbac.authorization.k8s.io","Kind":"Role","Name":"x"}`` (before 1.34 it was
Go's ``%#v``: ``map[string]string{"app":"web"}``). kubectl shows these verbatim, so the ``go_*``
helpers below render values the same way, and ``invalid_go``/``duplicate_go``/``not_supported_go``
build errors whose text matches upstream's exactly.

**Decode errors.** A few problems are found by upstream's *decoder*, not its validation, and are
answered 400 BadRequest rather than 422 (``Secret in version "v1" cannot be handled as a Secret:
illegal base64 data at input byte 4``, a quantity that does not parse). Strategies raise
``UndecodableObject`` for those; the API server turns it into that 400.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeGuard

from controlplane.api.meta import Object
from controlplane.api.strategies.base import Strategy
from controlplane.api.validation import (
    FieldError,
    forbidden,
    invalid,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_label_value,
    is_qualified_name,
    not_supported,
    required,
    validate_object_meta,
)

# -- decode errors ---------------------------------------------------------------------------------


class UndecodableObject(ValueError):
    """The request body cannot become an object of this kind: upstream answers 400, not 422.

    ``reason`` is the decoder's own text; ``message(kind, version)`` is the Status message
    kube-apiserver sends (``k8s.io/apimachinery/pkg/runtime/serializer/json`` wrapped by the handler's
    ``errors.NewBadRequest``).
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason

    def message(self, kind: str, version: str) -> str:
        return f'{kind} in version "{version}" cannot be handled as a {kind}: {self.reason}'


# -- the base strategy -----------------------------------------------------------------------------


class KindStrategy(Strategy):
    """A strategy that defaults before preparing, as upstream's decode-then-prepare order does."""

    def prepare_for_create(self, obj: Object) -> None:
        self.default(obj)
        super().prepare_for_create(obj)

    def prepare_for_update(self, obj: Object, old: Object) -> None:
        self.default(obj)
        if self.status_subresource:
            if "status" in old:
                obj["status"] = copy.deepcopy(old["status"])
            else:
                obj.pop("status", None)
        if self.tracks_generation:
            generation = old["metadata"].get("generation", 1)
            obj["metadata"]["generation"] = generation + 1 if self.spec_changed(obj, old) else generation

    def prepare_for_status_update(self, obj: Object, old: Object) -> None:
        super().prepare_for_status_update(obj, old)
        self.default(obj)  # a status write is decoded (and so defaulted) like any other

    def spec_changed(self, obj: Object, old: Object) -> bool:
        """Whether the update bumps ``metadata.generation`` (semantic equality: ``{}`` == missing)."""
        return bool(semantic(obj.get("spec")) != semantic(old.get("spec")))

    def validate_meta(self, obj: Object, *, namespaced: bool) -> list[FieldError]:
        return validate_object_meta(
            obj["metadata"], namespaced=namespaced, name_validator=self.name_validator
        )


class CoreKindStrategy(KindStrategy):
    """Kinds of the core and apps groups: their ``ValidateObjectMeta`` also checks finalizer names.

    ``pkg/apis/core/validation/validation.go`` ``ValidateObjectMeta`` adds ``validateKubeFinalizerName``:
    a finalizer without a ``/`` must be one of Kubernetes' own.
    """

    def validate_meta(self, obj: Object, *, namespaced: bool) -> list[FieldError]:
        errors = super().validate_meta(obj, namespaced=namespaced)
        return errors + validate_kube_finalizers(obj["metadata"].get("finalizers"), "metadata.finalizers")


STANDARD_FINALIZERS = frozenset({"kubernetes", "orphan", "foregroundDeletion"})


def validate_kube_finalizers(finalizers: Any, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    for i, name in enumerate(as_list(finalizers)):
        if isinstance(name, str) and "/" not in name and name not in STANDARD_FINALIZERS:
            errors.append(
                invalid(
                    f"{path}[{i}]",
                    name,
                    "name is neither a standard finalizer name nor is it fully qualified",
                )
            )
    return errors


# -- tolerant access to decoded JSON ---------------------------------------------------------------


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def as_str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def spec_of(obj: Object) -> dict[str, Any]:
    """``obj["spec"]`` as a dict, created if missing (defaulting writes into it)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        spec = {}
        obj["spec"] = spec
    return spec


def semantic(value: Any) -> Any:
    """A value with Go's zero-value distinctions dropped, for ``apiequality.Semantic.DeepEqual``.

    Decoded into Go structs, a missing field, ``null``, ``""``, ``[]`` and ``{}`` are all the zero value
    (nil and empty slices and maps compare equal semantically), so two objects that differ only there
    are the same object.
    """
    if isinstance(value, dict):
        out = {k: semantic(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, "", [], {})}
    if isinstance(value, list):
        return [semantic(v) for v in value]
    return value


# -- field paths -----------------------------------------------------------------------------------


def child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def index(path: str, i: int) -> str:
    return f"{path}[{i}]"


def key(path: str, k: str) -> str:
    """``field.Path.Key``: ``data[tls.crt]`` (no quotes)."""
    return f"{path}[{k}]"


# -- rendering values as upstream's field errors do --------------------------------------------


def go_quote(text: str) -> str:
    """Go's ``%q``: a double-quoted string with Go escapes (JSON's are the same for printable text)."""
    return json.dumps(text, ensure_ascii=False)


def go_json(value: Any) -> str:
    """Go's ``json.Marshal``: compact, and ``<``, ``>``, ``&`` escaped as Go does (HTML-safe).

    Dict order is kept: pass maps sorted (``json.Marshal`` sorts map keys) and structs in field order.
    """
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    for char, escape in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(char, escape)
    return text


def go_string_map(value: Any) -> str:
    """A ``map[string]string`` as a field error prints it: ``{"a":"1","b":"2"}`` (sorted), or ``null``."""
    if not isinstance(value, Mapping):
        return "null"
    return go_json({str(k): v for k, v in sorted(value.items())})


def go_string_slice(value: Any) -> str:
    """A ``[]string``: ``["a","b"]``, or ``null``."""
    if not isinstance(value, list):
        return "null"
    return go_json(value)


def go_label_selector(selector: Any) -> str:
    """A ``metav1.LabelSelector`` as JSON (its fields are ``omitempty``): ``{"matchLabels":{"app":"x"}}``."""
    if selector is None:
        return "null"
    selector = as_dict(selector)
    body: dict[str, Any] = {}
    labels = as_dict(selector.get("matchLabels"))
    if labels:
        body["matchLabels"] = dict(sorted(labels.items()))
    expressions = []
    for expression in as_list(selector.get("matchExpressions")):
        expression = as_dict(expression)
        item: dict[str, Any] = {
            "key": as_str(expression.get("key")),
            "operator": as_str(expression.get("operator")),
        }
        if as_list(expression.get("values")):
            item["values"] = expression["values"]
        expressions.append(item)
    if expressions:
        body["matchExpressions"] = expressions
    return go_json(body)


def go_int_or_string(value: Any) -> str:
    """An ``intstr.IntOrString`` through its ``String()`` method: ``25%`` or ``1``, unquoted."""
    if value is None:
        return "null"
    return str(value) if not isinstance(value, bool) else ("true" if value else "false")


def go_pointer(value: Any) -> str:
    """A nil pointer's value as ``field.Error`` prints it: the *string* ``"null"``, quoted."""
    if value is None:
        return '"null"'
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def invalid_go(field: str, rendered: str, detail: str, value: Any = None) -> FieldError:
    """``field.Invalid`` whose value prints Go-style (``rendered``), not as JSON."""
    return FieldError(
        "Invalid value", "FieldValueInvalid", field, f"{rendered}: {detail}" if detail else rendered, value
    )


def duplicate_go(field: str, rendered: str, detail: str = "", value: Any = None) -> FieldError:
    return FieldError(
        "Duplicate value",
        "FieldValueDuplicate",
        field,
        f"{rendered}: {detail}" if detail else rendered,
        value,
    )


def not_supported_go(field: str, rendered: str, valid: Iterable[str], value: Any = None) -> FieldError:
    supported = "supported values: " + ", ".join(go_quote(v) for v in valid)
    return FieldError("Unsupported value", "FieldValueNotSupported", field, f"{rendered}: {supported}", value)


def not_found(field: str, value: Any) -> FieldError:
    """``field.NotFound``: "Not found" with the value."""
    return FieldError("Not found", "FieldValueNotFound", field, "", value, True)


def too_many(field: str, actual: int, maximum: int) -> FieldError:
    return FieldError(
        "Too many", "FieldValueTooMany", field, f"must have at most {maximum} items", actual, True
    )


# -- common checks ---------------------------------------------------------------------------------

FIELD_IMMUTABLE = "field is immutable"
IS_NEGATIVE = "must be greater than or equal to 0"


def inclusive_range(lo: int, hi: int) -> str:
    """``validation.InclusiveRangeError``."""
    return f"must be between {lo} and {hi}, inclusive"


def nonnegative(value: Any, path: str) -> list[FieldError]:
    """``ValidateNonnegativeField``."""
    if is_int(value) and value < 0:
        return [invalid(path, value, IS_NEGATIVE)]
    return []


def immutable(new: Any, old: Any, path: str) -> list[FieldError]:
    """``ValidateImmutableField`` for plain values (strings, numbers)."""
    if semantic(new) != semantic(old):
        return [invalid(path, new, FIELD_IMMUTABLE)]
    return []


def is_valid_port_num(port: Any) -> list[str]:
    if is_int(port) and 1 <= port <= 65535:
        return []
    return [inclusive_range(1, 65535)]


_PORT_NAME_CHARSET = re.compile(r"^[-a-z0-9]+$")
_PORT_NAME_LETTER = re.compile(r"[a-z]")


def is_valid_port_name(name: str) -> list[str]:
    """``validation.IsValidPortName`` (IANA service names: at most 15 characters, one letter...)."""
    errors = []
    if len(name) > 15:
        errors.append("must be no more than 15 characters")
    if not _PORT_NAME_CHARSET.match(name):
        errors.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not _PORT_NAME_LETTER.search(name):
        errors.append("must contain at least one letter (a-z)")
    if "--" in name:
        errors.append("must not contain consecutive hyphens")
    if name and (name[0] == "-" or name[-1] == "-"):
        errors.append("must not begin or end with a hyphen")
    return errors


def validate_port_num_or_name(port: Any, path: str) -> list[FieldError]:
    """``ValidatePortNumOrName``: an IntOrString that is a port number or an IANA port name."""
    if isinstance(port, str):
        return [invalid(path, port, msg) for msg in is_valid_port_name(port)]
    return [invalid(path, port, msg) for msg in is_valid_port_num(port)]


_DNS1035_LABEL = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_LABEL_RE = re.compile(f"^{_DNS1035_LABEL}$")


def is_dns1035_label(value: str) -> list[str]:
    """``validation.IsDNS1035Label``: what Service names must be (they become DNS names)."""
    errors = []
    if len(value) > 63:
        errors.append("must be no more than 63 characters")
    if not _DNS1035_LABEL_RE.match(value):
        errors.append(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
            "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
            f"regex used for validation is '{_DNS1035_LABEL}')"
        )
    return errors


def is_valid_path_segment_name(name: str) -> list[str]:
    """``path.IsValidPathSegmentName``: the only rule for RBAC and Event names (they are URL segments)."""
    for illegal in (".", ".."):
        if name == illegal:
            return [f"may not be '{illegal}'"]
    return [f"may not contain '{illegal}'" for illegal in ("/", "%") if illegal in name]


def dns_label(value: str, path: str) -> list[FieldError]:
    """``ValidateDNS1123Label``."""
    return [invalid(path, value, msg) for msg in is_dns1123_label(value)]


def dns_subdomain(value: str, path: str) -> list[FieldError]:
    return [invalid(path, value, msg) for msg in is_dns1123_subdomain(value)]


def label_name(value: str, path: str) -> list[FieldError]:
    """``ValidateLabelName``: a qualified name (keys of labels, taints, tolerations, topology keys)."""
    return [invalid(path, value, msg) for msg in is_qualified_name(value)]


def name_errors(value: str, path: str, validator: Callable[[str], list[str]]) -> list[FieldError]:
    return [invalid(path, value, msg) for msg in validator(value)]


_IPV4_RE = re.compile(r"^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$")


def is_ipv4(value: str) -> bool:
    return bool(_IPV4_RE.match(value))


def is_ip(value: str) -> bool:
    import ipaddress

    try:
        ipaddress.ip_address(value)
    except ValueError:
        return is_ipv4(value)
    return True


def valid_ip(value: str, path: str) -> list[FieldError]:
    """``validation.IsValidIP``."""
    if is_ip(value):
        return []
    return [invalid(path, value, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)")]


# -- label selectors (apimachinery pkg/apis/meta/v1/validation) ------------------------------------

SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def validate_label_selector(selector: Any, path: str) -> list[FieldError]:
    """``ValidateLabelSelector`` (strict label values, as workloads use it)."""
    from controlplane.api.validation import validate_labels

    if selector is None:
        return []
    selector = as_dict(selector)
    errors = validate_labels(selector.get("matchLabels"), child(path, "matchLabels"))
    for i, expression in enumerate(as_list(selector.get("matchExpressions"))):
        errors += validate_selector_requirement(
            as_dict(expression), index(child(path, "matchExpressions"), i)
        )
    return errors


def validate_selector_requirement(requirement: Mapping[str, Any], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    operator = requirement.get("operator")
    values = as_list(requirement.get("values"))
    if operator in ("In", "NotIn"):
        if not values:
            errors.append(
                required(child(path, "values"), "must be specified when `operator` is 'In' or 'NotIn'")
            )
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            errors.append(
                forbidden(
                    child(path, "values"),
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                )
            )
    else:
        errors.append(invalid(child(path, "operator"), as_str(operator), "not a valid selector operator"))
    errors += label_name(as_str(requirement.get("key")), child(path, "key"))
    for i, value in enumerate(values):
        errors += [
            invalid(index(child(path, "values"), i), value, msg) for msg in is_label_value(as_str(value))
        ]
    return errors


def selector_matches(selector: Mapping[str, Any], labels: Mapping[str, Any] | None) -> bool:
    """``LabelSelectorAsSelector(selector).Matches(labels)`` for a valid selector."""
    present: Mapping[str, Any] = labels or {}
    for k, v in as_dict(selector.get("matchLabels")).items():
        if present.get(k) != v:
            return False
    for expression in as_list(selector.get("matchExpressions")):
        expression = as_dict(expression)
        name = as_str(expression.get("key"))
        values = as_list(expression.get("values"))
        operator = expression.get("operator")
        if (
            (operator == "In" and (name not in present or present[name] not in values))
            or (operator == "NotIn" and name in present and present[name] in values)
            or (operator == "Exists" and name not in present)
            or (operator == "DoesNotExist" and name in present)
        ):
            return False
    return True


def selector_is_empty(selector: Mapping[str, Any]) -> bool:
    return not as_dict(selector.get("matchLabels")) and not as_list(selector.get("matchExpressions"))


def supported(value: Any, path: str, valid: list[str], *, allow_empty: bool = False) -> list[FieldError]:
    """Required when empty (unless allowed), NotSupported when not one of ``valid``."""
    if value in (None, ""):
        return [] if allow_empty else [required(path)]
    if value not in valid:
        return [not_supported(path, value, valid)]
    return []


__all__ = [
    "FIELD_IMMUTABLE",
    "IS_NEGATIVE",
    "CoreKindStrategy",
    "KindStrategy",
    "UndecodableObject",
    "as_dict",
    "as_list",
    "as_str",
    "child",
    "dns_label",
    "dns_subdomain",
    "duplicate_go",
    "go_int_or_string",
    "go_json",
    "go_label_selector",
    "go_pointer",
    "go_quote",
    "go_string_map",
    "go_string_slice",
    "immutable",
    "inclusive_range",
    "index",
    "invalid_go",
    "is_dns1035_label",
    "is_int",
    "is_valid_path_segment_name",
    "is_valid_port_name",
    "is_valid_port_num",
    "key",
    "label_name",
    "nonnegative",
    "not_found",
    "not_supported_go",
    "selector_is_empty",
    "selector_matches",
    "semantic",
    "spec_of",
    "supported",
    "too_many",
    "valid_ip",
    "validate_kube_finalizers",
    "validate_label_selector",
    "validate_port_num_or_name",
]
