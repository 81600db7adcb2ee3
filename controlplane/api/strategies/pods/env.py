"""Validation of a container's environment: ``env`` and ``envFrom``.

Each variable has a literal ``value`` or a ``valueFrom``: a key of a ConfigMap or Secret, a field of
the pod itself (the *downward API*: ``metadata.name``, ``status.podIP``, a label...), or a container's
resource request or limit. Only one source per variable; the field paths the downward API accepts are
an explicit list, because the kubelet must know how to fill in each of them. ``envFrom`` imports every
key of a ConfigMap or Secret, optionally prefixed.

ConfigMap and Secret keys follow ``is_config_map_key`` (used by ``config`` for the objects themselves).
Upstream: ``pkg/apis/core/validation/validation.go`` (``ValidateEnv``, ``validateEnvVarValueFrom``,
``validateObjectFieldSelector``, ``ValidateEnvFrom``) and apimachinery's ``IsConfigMapKey`` and
``IsEnvVarName`` (``k8s.io/apimachinery/pkg/util/validation``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from controlplane.api.strategies.common import (
    as_dict,
    as_list,
    as_str,
    child,
    index,
)
from controlplane.api.validation import (
    FieldError,
    invalid,
    is_dns1123_subdomain,
    is_qualified_name,
    not_supported,
    required,
)

ENV_FIELD_PATHS: Final = [
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
]

RESOURCE_FIELD_PATHS: Final = [
    "limits.cpu",
    "limits.ephemeral-storage",
    "limits.memory",
    "requests.cpu",
    "requests.ephemeral-storage",
    "requests.memory",
]

_CONFIG_KEY_RE = re.compile(r"^[-._a-zA-Z0-9]+$")


def is_config_map_key(value: str) -> list[str]:
    """``validation.IsConfigMapKey``: keys of ConfigMaps and Secrets (they become file names)."""
    errors = []
    if len(value) > 253:
        errors.append("must be no more than 253 characters")
    if not _CONFIG_KEY_RE.match(value):
        errors.append(
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  "
            "or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
        )
    if value == ".":
        errors.append("must not be '.'")
    elif value == "..":
        errors.append("must not be '..'")
    elif value.startswith(".."):
        errors.append("must not start with '..'")
    return errors


def is_relaxed_env_var_name(value: str) -> list[str]:
    """``IsRelaxedEnvVarName``: printable ASCII except '=' (RelaxedEnvironmentVariableValidation, GA)."""
    errors = []
    if not value:
        errors.append("environment variable name must be non-empty")
    if any(ord(c) > 126 or ord(c) < 32 or c == "=" for c in value):
        errors.append(
            "a valid environment variable name must consist only of printable ASCII characters other than '='"
        )
    return errors


def _validate_key_selector(selector: Mapping[str, Any], path: str) -> list[FieldError]:
    """``validateConfigMapKeySelector`` / ``validateSecretKeySelector``."""
    errors = [
        invalid(child(path, "name"), as_str(selector.get("name")), msg)
        for msg in is_dns1123_subdomain(as_str(selector.get("name")))
    ]
    key_value = as_str(selector.get("key"))
    if not key_value:
        errors.append(required(child(path, "key")))
    else:
        errors += [invalid(child(path, "key"), key_value, msg) for msg in is_config_map_key(key_value)]
    return errors


#: What ``ConvertDownwardAPIFieldLabel`` accepts (``pkg/apis/core/pods/helpers.go``).
_DOWNWARD_API_LABELS: Final = frozenset(
    {
        "metadata.annotations",
        "metadata.labels",
        "metadata.name",
        "metadata.namespace",
        "metadata.uid",
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.serviceAccountName",
        "spec.schedulerName",
        "status.phase",
        "status.hostIP",
        "status.hostIPs",
        "status.podIP",
        "status.podIPs",
    }
)


def _validate_field_selector(selector: Mapping[str, Any], valid: list[str], path: str) -> list[FieldError]:
    """``validateObjectFieldSelector`` (the downward API's ``fieldRef``)."""
    if not selector.get("apiVersion"):
        return [required(child(path, "apiVersion"))]
    field_path = as_str(selector.get("fieldPath"))
    if not field_path:
        return [required(child(path, "fieldPath"))]
    converted, problem = field_path, ""
    subscripted = field_path.endswith("']") and "['" in field_path and not field_path.startswith("['")
    base, _, subscript = field_path[:-2].partition("['") if subscripted else (field_path, "", "")
    if selector.get("apiVersion") != "v1":
        problem = f"unsupported pod version: {selector.get('apiVersion')}"
    elif subscripted and base not in ("metadata.annotations", "metadata.labels"):
        problem = f"field label does not support subscript: {field_path}"
    elif not subscripted and field_path == "spec.host":
        converted = "spec.nodeName"  # old clients' name for it
    elif not subscripted and field_path not in _DOWNWARD_API_LABELS:
        problem = f"field label not supported: {field_path}"
    if problem:
        return [invalid(child(path, "fieldPath"), field_path, f"error converting fieldPath: {problem}")]
    if subscripted:
        name = subscript.lower() if base == "metadata.annotations" else subscript
        return [invalid(path, name, msg) for msg in is_qualified_name(name)]
    if converted not in valid:
        return [not_supported(child(path, "fieldPath"), converted, sorted(valid))]
    return []


def validate_env(env: Any, path: str) -> list[FieldError]:
    """``ValidateEnv``: names, and ``valueFrom`` naming exactly one source (and not with ``value``)."""
    errors: list[FieldError] = []
    for i, var in enumerate(as_list(env)):
        var = as_dict(var)
        item = index(path, i)
        name = as_str(var.get("name"))
        if not name:
            errors.append(required(child(item, "name")))
        else:
            errors += [invalid(child(item, "name"), name, msg) for msg in is_relaxed_env_var_name(name)]
        value_from = var.get("valueFrom")
        if value_from is None:
            continue
        value_from = as_dict(value_from)
        vf_path = child(item, "valueFrom")
        sources = 0
        if isinstance(value_from.get("fieldRef"), dict):
            sources += 1
            errors += _validate_field_selector(
                value_from["fieldRef"], ENV_FIELD_PATHS, child(vf_path, "fieldRef")
            )
        if isinstance(value_from.get("resourceFieldRef"), dict):
            sources += 1
            resource = as_str(value_from["resourceFieldRef"].get("resource"))
            rf_path = child(vf_path, "resourceFieldRef")
            if not resource:
                errors.append(required(child(rf_path, "resource")))
            elif resource not in RESOURCE_FIELD_PATHS and not resource.startswith(
                ("requests.hugepages-", "limits.hugepages-")
            ):
                errors.append(not_supported(child(rf_path, "resource"), resource, RESOURCE_FIELD_PATHS))
        if isinstance(value_from.get("configMapKeyRef"), dict):
            sources += 1
            errors += _validate_key_selector(value_from["configMapKeyRef"], child(vf_path, "configMapKeyRef"))
        if isinstance(value_from.get("secretKeyRef"), dict):
            sources += 1
            errors += _validate_key_selector(value_from["secretKeyRef"], child(vf_path, "secretKeyRef"))
        if sources == 0:
            errors.append(
                invalid(
                    vf_path,
                    "",
                    "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or "
                    "`secretKeyRef`",
                )
            )
        elif var.get("value"):
            errors.append(invalid(vf_path, "", "may not be specified when `value` is not empty"))
        elif sources > 1:
            errors.append(invalid(vf_path, "", "may not have more than one field specified at a time"))
    return errors


def validate_env_from(env_from: Any, path: str) -> list[FieldError]:
    """``ValidateEnvFrom``: each entry names one ConfigMap or Secret, with an optional prefix."""
    errors: list[FieldError] = []
    for i, source in enumerate(as_list(env_from)):
        source = as_dict(source)
        item = index(path, i)
        prefix = as_str(source.get("prefix"))
        if prefix:
            errors += [invalid(child(item, "prefix"), prefix, msg) for msg in is_relaxed_env_var_name(prefix)]
        count = 0
        for field in ("configMapRef", "secretRef"):
            ref = source.get(field)
            if isinstance(ref, dict):
                count += 1
                name = as_str(ref.get("name"))
                if not name:
                    errors.append(required(child(child(item, field), "name")))
                else:
                    errors += [
                        invalid(child(child(item, field), "name"), name, msg)
                        for msg in is_dns1123_subdomain(name)
                    ]
        if count == 0:
            errors.append(invalid(path, "", "must specify one of: `configMapRef` or `secretRef`"))
        elif count > 1:
            errors.append(invalid(path, "", "may not have more than one field specified at a time"))
    return errors
