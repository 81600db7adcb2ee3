"""CustomResourceDefinitions (``apiextensions.k8s.io/v1``): new resources taught to a running API server.

A definition names the resource (``spec.names``: ``plural`` for URLs, ``singular``, ``kind``,
``listKind``, ``shortNames`` and ``categories`` for kubectl), its ``group``, its ``scope``
(``Namespaced`` or ``Cluster``) and its ``versions``: each ``served`` or not, exactly one the
``storage`` version (the form objects are kept in), each with a structural OpenAPI v3 schema
(``controlplane.api.apiextensions.structural``), optional ``subresources`` and
``additionalPrinterColumns``. The definition's own name must be ``<plural>.<group>``.

Defaults (``pkg/apis/apiextensions/v1/defaults.go``): ``singular`` is the lower-case kind, ``listKind``
the kind with ``List``, ``conversion.strategy: None``. On create the status starts empty but for
``storedVersions`` (the storage version); the API server's own controller
(``controlplane.apiserver.apiextensions``) then accepts the names and marks the definition
``Established``. The definition carries the finalizer ``customresourcecleanup.apiextensions.k8s.io``:
deleting it first deletes every object of the resource, then the definition.

Upstream: ``pkg/apis/apiextensions/validation/validation.go``,
``pkg/registry/customresourcedefinition/strategy.go`` (in ``staging/src/k8s.io/apiextensions-apiserver``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from controlplane.api.apiextensions import structural
from controlplane.api.meta import Object
from controlplane.api.strategies.base import Strategy
from controlplane.api.validation import (
    FieldError,
    duplicate,
    invalid,
    is_dns1123_subdomain,
    not_supported,
    required,
)

#: Deleting a definition first empties its resource (upstream's ``CustomResourceCleanupFinalizer``).
CLEANUP_FINALIZER: Final = "customresourcecleanup.apiextensions.k8s.io"
SCOPES: Final = ("Cluster", "Namespaced")
COLUMN_TYPES: Final = ("boolean", "date", "integer", "number", "string")

_DNS1035_LABEL: Final = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS1035_MESSAGE: Final = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex "
    "used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)


def _dns1035(field: str, value: str) -> list[FieldError]:
    return (
        [] if _DNS1035_LABEL.match(value) and len(value) <= 63 else [invalid(field, value, _DNS1035_MESSAGE)]
    )


def _kind_name(field: str, value: str) -> list[FieldError]:
    """A kind may have mixed case but must otherwise be a DNS-1035 label."""
    if _DNS1035_LABEL.match(value.lower()):
        return []
    return [
        invalid(field, value, "may have mixed case, but should otherwise match: [a-z]([-a-z0-9]*[a-z0-9])?")
    ]


def storage_version(crd: Mapping[str, Any]) -> str | None:
    for version in (crd.get("spec") or {}).get("versions") or ():
        if isinstance(version, Mapping) and version.get("storage"):
            return str(version.get("name", ""))
    return None


class CustomResourceDefinitionStrategy(Strategy):
    status_subresource = True
    tracks_generation = True

    def default(self, obj: Object) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        names = spec.get("names")
        if isinstance(names, dict) and names.get("kind"):
            names.setdefault("singular", str(names["kind"]).lower())
            names.setdefault("listKind", f"{names['kind']}List")
        conversion = spec.setdefault("conversion", {})
        if isinstance(conversion, dict):
            conversion.setdefault("strategy", "None")

    def reset_status(self, obj: Object) -> None:
        # Upstream's PrepareForCreate: an empty status but for the version objects are stored in.
        stored = storage_version(obj)
        obj["status"] = {
            "acceptedNames": {"kind": "", "plural": ""},
            "conditions": [],
            "storedVersions": [stored] if stored else [],
        }

    def prepare_for_create(self, obj: Object) -> None:
        super().prepare_for_create(obj)
        # Upstream adds the finalizer on the first DELETE (registry/customresourcedefinition/etcd.go);
        # here it is there from the start, so the generic delete marks the definition Terminating.
        finalizers = obj["metadata"].setdefault("finalizers", [])
        if CLEANUP_FINALIZER not in finalizers:
            finalizers.append(CLEANUP_FINALIZER)

    def prepare_for_update(self, obj: Object, old: Object) -> None:
        super().prepare_for_update(obj, old)
        stored = storage_version(obj)
        status = obj.get("status")
        if stored and isinstance(status, dict):
            versions = status.setdefault("storedVersions", [])
            if stored not in versions:
                versions.append(stored)

    def validate(self, obj: Object, *, namespaced: bool) -> list[FieldError]:
        return super().validate(obj, namespaced=namespaced) + validate_spec(obj)

    def validate_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        problems = super().validate_update(obj, old, namespaced=namespaced)
        new_spec, old_spec = obj.get("spec") or {}, old.get("spec") or {}
        established = any(
            c.get("type") == "Established" and c.get("status") == "True"
            for c in (old.get("status") or {}).get("conditions") or ()
            if isinstance(c, Mapping)
        )
        if established and new_spec.get("scope") != old_spec.get("scope"):
            problems.append(invalid("spec.scope", new_spec.get("scope"), "field is immutable"))
        return problems


def validate_spec(crd: Mapping[str, Any]) -> list[FieldError]:
    """``ValidateCustomResourceDefinition``'s rules for the spec (and the name it implies)."""
    problems: list[FieldError] = []
    spec = crd.get("spec")
    if not isinstance(spec, Mapping):
        return [required("spec")]
    group = str(spec.get("group") or "")
    names = spec.get("names") if isinstance(spec.get("names"), Mapping) else {}
    assert isinstance(names, Mapping)
    plural = str(names.get("plural") or "")
    name = str((crd.get("metadata") or {}).get("name") or "")
    if name != f"{plural}.{group}":
        problems.append(invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group'))
    if not group:
        problems.append(required("spec.group"))
    else:
        problems += [invalid("spec.group", group, m) for m in is_dns1123_subdomain(group)]
        if "." not in group:
            problems.append(invalid("spec.group", group, "should be a domain with at least one dot"))
    scope = spec.get("scope")
    if not scope:
        problems.append(required("spec.scope"))
    elif scope not in SCOPES:
        problems.append(not_supported("spec.scope", scope, list(SCOPES)))
    # names
    if not plural:
        problems.append(required("spec.names.plural"))
    else:
        problems += _dns1035("spec.names.plural", plural)
    singular = str(names.get("singular") or "")
    if singular:
        problems += _dns1035("spec.names.singular", singular)
    kind = str(names.get("kind") or "")
    if not kind:
        problems.append(required("spec.names.kind"))
    else:
        problems += _kind_name("spec.names.kind", kind)
    list_kind = str(names.get("listKind") or "")
    if not list_kind:
        problems.append(required("spec.names.listKind"))
    else:
        problems += _kind_name("spec.names.listKind", list_kind)
        if list_kind == kind:
            problems.append(
                invalid("spec.names.listKind", list_kind, "kind and listKind may not be the same")
            )
    for i, short in enumerate(names.get("shortNames") or ()):
        problems += _dns1035(f"spec.names.shortNames[{i}]", str(short))
    for i, category in enumerate(names.get("categories") or ()):
        problems += _dns1035(f"spec.names.categories[{i}]", str(category))
    # conversion
    strategy = (spec.get("conversion") or {}).get("strategy", "None")
    if strategy != "None":
        # Conversion webhooks are not served by the lab: only objects that differ in apiVersion.
        problems.append(not_supported("spec.conversion.strategy", strategy, ["None"]))
    problems += _validate_versions(spec.get("versions"))
    return problems


def _validate_versions(versions: Any) -> list[FieldError]:
    if not isinstance(versions, list) or not versions:
        return [required("spec.versions")]
    problems: list[FieldError] = []
    seen: set[str] = set()
    storage = sum(1 for v in versions if isinstance(v, Mapping) and v.get("storage"))
    if storage != 1:
        problems.append(
            invalid("spec.versions", versions, "must have exactly one version marked as storage version")
        )
    if not any(isinstance(v, Mapping) and v.get("served") for v in versions):
        problems.append(invalid("spec.versions", versions, "must have at least one served version"))
    for i, version in enumerate(versions):
        path = f"spec.versions[{i}]"
        if not isinstance(version, Mapping):
            problems.append(required(path))
            continue
        name = str(version.get("name") or "")
        if not name:
            problems.append(required(f"{path}.name"))
        else:
            problems += _dns1035(f"{path}.name", name)
            if name in seen:
                problems.append(duplicate(f"{path}.name", name))
            seen.add(name)
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        problems += structural.validate_schema(schema, f"{path}.schema.openAPIV3Schema")
        for j, column in enumerate(version.get("additionalPrinterColumns") or ()):
            cpath = f"{path}.additionalPrinterColumns[{j}]"
            if not isinstance(column, Mapping):
                continue
            if not column.get("name"):
                problems.append(required(f"{cpath}.name"))
            if column.get("type") not in COLUMN_TYPES:
                problems.append(not_supported(f"{cpath}.type", column.get("type"), list(COLUMN_TYPES)))
            if not column.get("jsonPath"):
                problems.append(required(f"{cpath}.jsonPath"))
    return problems


__all__ = ["CLEANUP_FINALIZER", "CustomResourceDefinitionStrategy", "storage_version", "validate_spec"]
