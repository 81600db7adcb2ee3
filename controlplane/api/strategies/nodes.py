"""Nodes: the machines pods run on, registered by their kubelets.

A kubelet creates its own Node object when it starts, *with* a status (capacity, allocatable,
addresses, conditions), so unlike most kinds a Node keeps the status it is created with; afterwards
the kubelet updates it through ``nodes/<name>/status`` every few seconds. The spec is small and mostly
the cluster's to set: ``taints`` (repel pods that do not tolerate them; ``kubectl taint`` edits these),
``unschedulable`` (``kubectl cordon``), ``podCIDR(s)`` (assigned once, then fixed) and ``providerID``.

Node names are DNS subdomains. Taints need a valid key, an optional label-style value and one of the
effects ``NoSchedule``, ``PreferNoSchedule``, ``NoExecute``, and no two taints may share a key and
effect. Upstream reports taint errors under ``metadata.taints`` (sic: ``ValidateNode`` builds the path
from ``metadata``), and so does the lab. Capacity and allocatable quantities may not be negative.

Upstream: ``pkg/registry/core/node/strategy.go``, ``ValidateNode``/``ValidateNodeUpdate``.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from controlplane.api.meta import Object
from controlplane.api.quantity import QuantityError, parse_json_quantity
from controlplane.api.strategies.common import (
    CoreKindStrategy,
    as_dict,
    as_list,
    as_str,
    child,
    duplicate_go,
    go_json,
    index,
    label_name,
)
from controlplane.api.strategies.pods import default_resource_list, validate_taint_effect
from controlplane.api.strategies.workloads import validate_meta_update
from controlplane.api.validation import FieldError, forbidden, invalid, is_label_value


def validate_taints(taints: Any, path: str) -> list[FieldError]:
    """``validateNodeTaints``."""
    errors: list[FieldError] = []
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(as_list(taints)):
        taint = as_dict(taint)
        item = index(path, i)
        key, value, effect = as_str(taint.get("key")), as_str(taint.get("value")), as_str(taint.get("effect"))
        errors += label_name(key, child(item, "key"))
        messages = is_label_value(value)
        if messages:
            errors.append(invalid(child(item, "value"), value, ";".join(messages)))
        errors += validate_taint_effect(effect, child(item, "effect"), allow_empty=False)
        if (key, effect) in seen:
            rendered = go_json(
                {"Key": key, "Value": value, "Effect": effect, "TimeAdded": taint.get("timeAdded")}
            )
            errors.append(duplicate_go(item, rendered, "taints must be unique by key and effect pair", taint))
            continue
        seen.add((key, effect))
    return errors


def _validate_resources(status: Any) -> list[FieldError]:
    """``ValidateNodeResources``: capacity and allocatable are non-negative (path ``status.capacity.cpu``)."""
    errors: list[FieldError] = []
    for field in ("capacity", "allocatable"):
        for name, value in as_dict(as_dict(status).get(field)).items():
            try:
                quantity = parse_json_quantity(value)
            except QuantityError:
                continue
            if quantity.sign() < 0:
                errors.append(
                    invalid(f"status.{field}.{name}", str(quantity), "must be greater than or equal to 0")
                )
    return errors


def _validate_pod_cidrs(spec: Any) -> list[FieldError]:
    errors: list[FieldError] = []
    cidrs = as_list(as_dict(spec).get("podCIDRs"))
    for i, cidr in enumerate(cidrs):
        try:
            ipaddress.ip_network(as_str(cidr), strict=False)
        except ValueError:
            errors.append(
                invalid(
                    index("spec.podCIDRs", i),
                    cidr,
                    "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
                )
            )
    return errors


class NodeStrategy(CoreKindStrategy):
    """Nodes: cluster-scoped, status subresource, status kept on create."""

    status_subresource = True

    def default(self, obj: Object) -> None:
        """``SetDefaults_NodeStatus`` (allocatable defaults to capacity) and resource-list rounding."""
        status = obj.get("status")
        if isinstance(status, dict):
            default_resource_list(status.get("capacity"))
            default_resource_list(status.get("allocatable"))
            if status.get("allocatable") is None and isinstance(status.get("capacity"), dict):
                status["allocatable"] = dict(status["capacity"])

    def prepare_for_create(self, obj: Object) -> None:
        # A kubelet registers its node with a status: keep it (upstream's PrepareForCreate does).
        self.default(obj)

    def validate(self, obj: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidateNode``."""
        errors = self.validate_meta(obj, namespaced=namespaced)
        errors += validate_taints(as_dict(obj.get("spec")).get("taints"), "metadata.taints")
        errors += _validate_resources(obj.get("status"))
        return errors + _validate_pod_cidrs(obj.get("spec"))

    def validate_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        """``ValidateNodeUpdate``."""
        spec, old_spec = as_dict(obj.get("spec")), as_dict(old.get("spec"))
        errors = validate_meta_update(obj, old)
        errors += _validate_resources(obj.get("status"))
        seen: list[Any] = []
        for i, address in enumerate(as_list(as_dict(obj.get("status")).get("addresses"))):
            if address in seen:
                errors.append(
                    duplicate_go(
                        index("status.addresses", i),
                        go_json(
                            {
                                "Type": as_str(as_dict(address).get("type")),
                                "Address": as_str(as_dict(address).get("address")),
                            }
                        ),
                    )
                )
            seen.append(address)
        old_cidrs = as_list(old_spec.get("podCIDRs"))
        if old_cidrs and as_list(spec.get("podCIDRs")) != old_cidrs:
            errors.append(
                forbidden("spec.podCIDRs", 'node updates may not change podCIDR except from "" to valid')
            )
        old_provider = as_str(old_spec.get("providerID"))
        if old_provider and old_provider != spec.get("providerID"):
            errors.append(
                forbidden("spec.providerID", 'node updates may not change providerID except from "" to valid')
            )
        errors += validate_taints(spec.get("taints"), "metadata.taints")
        if spec.get("externalID") != old_spec.get("externalID"):
            errors.append(forbidden("spec.externalID", "may not be updated"))
        return errors

    def validate_status_update(self, obj: Object, old: Object, *, namespaced: bool) -> list[FieldError]:
        """``nodeStatusStrategy.ValidateUpdate`` is ``ValidateNodeUpdate`` as well."""
        return self.validate_update(obj, old, namespaced=namespaced)


__all__ = ["NodeStrategy", "validate_taints"]
