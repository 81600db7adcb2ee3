"""Custom resources: the resource types an Established CustomResourceDefinition serves.

Each *served* version of a definition becomes one ``ResourceType``: ``/apis/<group>/<version>/<plural>``
with the definition's names, scope, short names and categories, every verb, and the ``status`` and
``scale`` subresources if the version asks for them (``scale`` at the paths the version names). All
versions keep their objects under one store prefix, ``/registry/<group>/<plural>`` (upstream's
``customresource.NewStorage``), in the form of the *storage* version; with the ``None`` conversion
strategy (the only one served here) an object changes version by having its ``apiVersion`` rewritten,
nothing else (``pkg/apiserver/conversion/nop_converter.go``).

The objects' strategy (``pkg/registry/customresource/strategy.go``): on create and update the body is
pruned and defaulted against the version's schema, then validated against it; ``metadata.generation``
counts changes to anything but ``metadata`` (and ``status`` when it has its own subresource).

``kubectl get`` shows the version's ``additionalPrinterColumns``: each a JSONPath into the object
(``.spec.cronSpec``), after the name; without any, NAME and AGE
(``pkg/registry/customresource/tableconvertor/tableconvertor.go``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Final

from controlplane.api import printers, selectors
from controlplane.api.apiextensions import structural
from controlplane.api.meta import Object
from controlplane.api.printers import Column, Printer
from controlplane.api.resources import CRUD, ResourceType, StorageConversion, Subresource
from controlplane.api.scale import scale_object
from controlplane.api.strategies.base import Strategy
from controlplane.api.validation import FieldError

STATUS_VERBS: Final = ("get", "patch", "update")


class ScalePaths:
    """A version's ``subresources.scale``: where its replicas and selector live, for ``/scale``
    (upstream ``pkg/registry/customresource/etcd.go``, ``scaleFromCustomResource``)."""

    def __init__(self, spec: Mapping[str, Any]) -> None:
        self.spec_replicas = json_path(str(spec.get("specReplicasPath", ".spec.replicas")))
        self.status_replicas = json_path(str(spec.get("statusReplicasPath", ".status.replicas")))
        selector = spec.get("labelSelectorPath")
        self.selector = json_path(str(selector)) if selector else None

    def view(self, obj: Mapping[str, Any]) -> Object:
        """The object as an ``autoscaling/v1`` Scale (missing values are 0 and "")."""
        meta = obj.get("metadata") or {}
        replicas = _lookup(obj, self.spec_replicas)
        current = _lookup(obj, self.status_replicas)
        selector = _lookup(obj, self.selector) if self.selector else None
        return scale_object(
            meta,
            replicas if isinstance(replicas, int) else 0,
            current if isinstance(current, int) else 0,
            selector if isinstance(selector, str) else "",
        )

    def set_replicas(self, obj: Object, replicas: int) -> None:
        """Write ``replicas`` at the spec's path, making the objects on the way."""
        node: Any = obj
        for step in self.spec_replicas[:-1]:
            node = node.setdefault(step, {}) if isinstance(step, str) else node[step]
        node[self.spec_replicas[-1]] = replicas


class CustomResourceStrategy(Strategy):
    """The strategy of one version of a custom resource: its schema decides."""

    tracks_generation = True

    def __init__(
        self,
        schema: structural.Schema,
        *,
        status_subresource: bool,
        printer: Printer,
        scale: ScalePaths | None = None,
        selectable_fields: tuple[str, ...] = (),
    ) -> None:
        self.schema = schema
        #: The version's ``selectableFields``: the field labels a field selector may name beside
        #: ``metadata.name`` (and ``metadata.namespace``), as paths without their leading dot.
        self.selectable_fields = selectable_fields
        self._selectable_steps = [(label, json_path("." + label)) for label in selectable_fields]
        self.status_subresource = status_subresource
        #: The version's ``/scale`` (None: it has none).
        self.scale = scale
        #: The version's ``kubectl get`` table (its additionalPrinterColumns).
        self.printer = printer
        #: The schema as server-side apply's field manager walks it: the version's schema with the
        #: object's own ``apiVersion``, ``kind`` and ``metadata`` (upstream's ObjectMeta) added.
        properties = dict(structural.node_properties(schema))
        properties.update(
            apiVersion={"type": "string"},
            kind={"type": "string"},
            metadata={"$ref": "#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},
        )
        self.typed_schema: structural.Schema = {**schema, "type": "object", "properties": properties}

    def check_field_selector(
        self, selector: selectors.FieldSelector, *, namespaced: bool
    ) -> selectors.FieldSelector:
        """``crConverter.ConvertFieldLabel`` (apiextensions-apiserver pkg/apiserver/conversion/
        converter.go): ``metadata.name``, ``metadata.namespace`` when namespaced, and the version's
        selectable fields; ``field label not supported: X`` for anything else."""
        allowed = {"metadata.name", *self.selectable_fields}
        if namespaced:
            allowed.add("metadata.namespace")
        for term in selector.terms:
            if term.field not in allowed:
                raise selectors.SelectorError(f"field label not supported: {term.field}")
        return selector

    def selectable_values(self, obj: Mapping[str, Any]) -> dict[str, str]:
        """The selectable fields' values (``customResourceStrategy.GetAttrs``): strings as they are,
        booleans and integers as Go formats them, ``""`` where the object has none."""
        values: dict[str, str] = {}
        for label, steps in self._selectable_steps:
            value = _lookup(obj, steps)
            if isinstance(value, bool):
                values[label] = "true" if value else "false"
            elif isinstance(value, int | str):
                values[label] = str(value)
            else:
                values[label] = ""
        return values

    def unknown_fields(self, obj: Object) -> list[str]:
        """Prune ``obj`` in place; the paths of the fields dropped (for ``fieldValidation``)."""
        return structural.prune(obj, self.schema)

    def default(self, obj: Object) -> None:
        structural.prune(obj, self.schema)
        structural.default(obj, self.schema)

    def prepare_for_update(self, obj: Object, old: Object) -> None:
        super().prepare_for_update(obj, old)
        # Upstream counts every change outside metadata (and status, when it has its own endpoint).
        ignored = {"metadata", "apiVersion", "kind"} | ({"status"} if self.status_subresource else set())
        generation = old["metadata"].get("generation", 1)
        changed = {k: v for k, v in obj.items() if k not in ignored} != {
            k: v for k, v in old.items() if k not in ignored
        }
        obj["metadata"]["generation"] = generation + 1 if changed else generation

    def validate(self, obj: Object, *, namespaced: bool) -> list[FieldError]:
        return super().validate(obj, namespaced=namespaced) + structural.validate(obj, self.schema)

    def validate_status_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        return super().validate_status_update(obj, old, namespaced=namespaced) + structural.validate(
            obj, self.schema
        )


# -- printer columns --------------------------------------------------------------------------------

_SEGMENT: Final = re.compile(r"((?:\\.|[^.\[\]])+)|\[(\d+)\]")


def json_path(expression: str) -> list[str | int]:
    """The steps of a printer column's JSONPath (``.spec.cronSpec``, ``.status.conditions[0].type``,
    ``{.metadata.labels.app\\.kubernetes\\.io/name}``): field names and list indexes."""
    text = expression.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    steps: list[str | int] = []
    for name, index in _SEGMENT.findall(text):
        steps.append(int(index) if index else name.replace("\\.", "."))
    return steps


def _lookup(obj: Any, steps: list[str | int]) -> Any:
    value = obj
    for step in steps:
        if isinstance(step, int):
            if not isinstance(value, list) or step >= len(value):
                return None
            value = value[step]
        else:
            if not isinstance(value, Mapping) or step not in value:
                return None
            value = value[step]
    return value


def _cell(value: Any, kind: str, now: datetime) -> Any:
    """One cell as upstream's convertor fills it: dates as an age, scalars as they are, lists and
    objects as their JSON; a missing field is null (kubectl prints ``<none>``)."""
    if value is None:
        return None
    if kind == "date":
        return printers.translate_timestamp_since(value, now)
    if isinstance(value, list | dict):
        return json.dumps(value, separators=(",", ":"))
    return value


def printer(columns: list[Mapping[str, Any]]) -> Printer:
    """The table of a version with these ``additionalPrinterColumns`` (NAME and AGE when empty)."""
    if not columns:
        columns = [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
    paths = [json_path(str(c.get("jsonPath", ""))) for c in columns]
    kinds = [str(c.get("type", "string")) for c in columns]
    definitions = (
        Column("Name", "string", "name", "Name must be unique within a namespace."),
        *(
            Column(
                str(c.get("name", "")),
                str(c.get("type", "string")),
                str(c.get("format", "")),
                str(c.get("description", "")),
                int(c.get("priority", 0) or 0),
            )
            for c in columns
        ),
    )

    def render(obj: Mapping[str, Any], now: datetime) -> list[Any]:
        name = (obj.get("metadata") or {}).get("name", "")
        return [name, *(_cell(_lookup(obj, p), k, now) for p, k in zip(paths, kinds, strict=True))]

    return Printer(definitions, render)


def _to(api_version: str) -> Callable[[Object], Object]:
    def convert(obj: Object) -> Object:
        return {**obj, "apiVersion": api_version} if obj.get("apiVersion") != api_version else obj

    return convert


def _rewrite(served: str, stored: str) -> StorageConversion:
    """The ``None`` conversion strategy: only ``apiVersion`` changes."""
    return StorageConversion(_to(stored), _to(served))


_KUBE_VERSION: Final = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(name: str) -> tuple[int, int, int, str]:
    """Sort key of upstream's ``version.CompareKubeAwareVersionStrings``: GA before beta before alpha,
    higher numbers first, anything else last in alphabetical order (so ``v1`` is preferred to
    ``v1beta1``, and discovery names the first as the group's preferred version)."""
    found = _KUBE_VERSION.match(name)
    if found is None:
        return (3, 0, 0, name)
    stage = {None: 0, "beta": 1, "alpha": 2}[found.group(2)]
    return (stage, -int(found.group(1)), -int(found.group(3) or 0), name)


def resource_types(crd: Mapping[str, Any]) -> list[ResourceType]:
    """The resource types a definition serves: one per served version, the preferred version first
    (``version_priority``); every version but the storage one converts to it."""
    spec = crd.get("spec") or {}
    accepted = (crd.get("status") or {}).get("acceptedNames") or {}
    names = accepted if accepted.get("plural") else spec.get("names") or {}
    group = str(spec.get("group", ""))
    plural = str(names.get("plural", ""))
    versions = [v for v in spec.get("versions") or () if isinstance(v, Mapping)]
    storage = next((v["name"] for v in versions if v.get("storage")), None)
    prefix = f"/registry/{group}/{plural}"
    result: list[ResourceType] = []
    for version in sorted(versions, key=lambda v: version_priority(str(v.get("name", "")))):
        if not version.get("served"):
            continue
        schema = (version.get("schema") or {}).get("openAPIV3Schema") or {}
        subresources_spec = version.get("subresources") or {}
        has_status = "status" in subresources_spec
        subresources: tuple[Subresource, ...] = (Subresource("status", STATUS_VERBS),) if has_status else ()
        scale_spec = subresources_spec.get("scale")
        scale = ScalePaths(scale_spec) if isinstance(scale_spec, Mapping) else None
        if scale is not None:
            subresources += (
                Subresource("scale", STATUS_VERBS, kind="Scale", group="autoscaling", version="v1"),
            )
        columns = printer(list(version.get("additionalPrinterColumns") or ()))
        selectable = tuple(
            str(field.get("jsonPath", "")).lstrip(".")
            for field in version.get("selectableFields") or ()
            if isinstance(field, Mapping) and field.get("jsonPath")
        )
        strategy = CustomResourceStrategy(
            schema, status_subresource=has_status, printer=columns, scale=scale, selectable_fields=selectable
        )
        name = str(version.get("name", ""))
        result.append(
            ResourceType(
                group,
                name,
                str(names.get("kind", "")),
                plural,
                str(names.get("singular") or names.get("kind", "").lower()),
                spec.get("scope") == "Namespaced",
                CRUD,
                tuple(names.get("shortNames") or ()),
                tuple(names.get("categories") or ()),
                subresources,
                prefix,
                strategy,
                None if name == storage else _rewrite(f"{group}/{name}", f"{group}/{storage}"),
            )
        )
    return result


def fields_of(rtype: ResourceType) -> Callable[[Mapping[str, Any]], dict[str, str]]:
    """What a field selector on ``rtype`` matches an object against (its registry's ``GetAttrs``):
    the metadata fields, and a custom resource's selectable fields."""
    key = f"{rtype.group}/{rtype.plural}"
    namespaced = rtype.namespaced
    strategy = rtype.strategy
    custom = strategy if isinstance(strategy, CustomResourceStrategy) else None

    def fields(obj: Mapping[str, Any]) -> dict[str, str]:
        found = selectors.field_set(key, obj, namespaced=namespaced)
        return found if custom is None else found | custom.selectable_values(obj)

    return fields


def table_printer(rtype: ResourceType) -> Printer | None:
    """The printer of a custom resource type (None for every other type)."""
    return rtype.strategy.printer if isinstance(rtype.strategy, CustomResourceStrategy) else None


__all__ = ["CustomResourceStrategy", "json_path", "printer", "resource_types", "table_printer"]
