"""Validation of a container's ``resources``: requests, limits and the names they may use.

A *request* is what the scheduler reserves on a node; a *limit* is what the kubelet enforces (CPU is
throttled, memory over the limit is OOM-killed). So a request may not exceed its limit, and a few
resources (hugepages, extended resources such as ``nvidia.com/gpu``) may not be overcommitted at all:
their request must equal their limit. Names without a domain must be standard ones (``cpu``,
``memory``, ``ephemeral-storage``, ``hugepages-<size>``).

Upstream: ``pkg/apis/core/validation/validation.go`` (``ValidateResourceRequirements``,
``validateContainerResourceName``, ``ValidateResourceQuantityValue``) and
``pkg/apis/core/helper/helpers.go`` (``standardResources``, ``IsOvercommitAllowed``).
"""

from __future__ import annotations

from typing import Any, Final

from controlplane.api.quantity import Quantity
from controlplane.api.strategies.common import (
    as_dict,
    child,
    invalid_go,
    key,
)
from controlplane.api.strategies.pods.qos import quantity_or_none
from controlplane.api.validation import (
    FieldError,
    forbidden,
    invalid,
    is_qualified_name,
    required,
)

#: ``standardResources`` (``pkg/apis/core/helper/helpers.go``): names that need no domain prefix.
STANDARD_RESOURCES: Final = frozenset(
    {
        "cpu",
        "memory",
        "ephemeral-storage",
        "requests.cpu",
        "requests.memory",
        "requests.ephemeral-storage",
        "limits.cpu",
        "limits.memory",
        "limits.ephemeral-storage",
        "pods",
        "services",
        "replicationcontrollers",
        "resourcequotas",
        "secrets",
        "persistentvolumeclaims",
        "configmaps",
        "services.nodeports",
        "services.loadbalancers",
        "requests.storage",
    }
)

STANDARD_CONTAINER_RESOURCES: Final = frozenset({"cpu", "memory", "ephemeral-storage"})


def _is_hugepages(name: str) -> bool:
    return name.startswith("hugepages-")


def _is_native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def _overcommit_allowed(name: str) -> bool:
    """``IsOvercommitAllowed``: native resources except hugepages; extended resources are exact."""
    return _is_native(name) and not _is_hugepages(name)


def _validate_container_resource_name(name: str, path: str) -> list[FieldError]:
    errors = [invalid(path, name, msg) for msg in is_qualified_name(name)]
    if errors:
        return errors
    if "/" not in name:
        if name not in STANDARD_RESOURCES and not _is_hugepages(name):
            return [invalid(path, name, "must be a standard resource type or fully qualified")]
        if name not in STANDARD_CONTAINER_RESOURCES and not _is_hugepages(name):
            return [invalid(path, name, "must be a standard resource for containers")]
    elif not _is_native(name) and (name.startswith("requests.") or is_qualified_name("requests." + name)):
        return [invalid(path, name, "doesn't follow extended resource name standard")]
    return []


def _validate_quantity_value(name: str, quantity: Quantity, path: str) -> list[FieldError]:
    """``ValidateResourceQuantityValue``: not negative; whole numbers for integer resources."""
    errors = []
    if quantity.sign() < 0:
        errors.append(invalid(path, str(quantity), "must be greater than or equal to 0"))
    if not _is_native(name) and quantity.nanos % 10**9:
        errors.append(invalid_go(path, str(quantity), "must be an integer", str(quantity)))
    return errors


def validate_resource_requirements(resources: Any, path: str) -> list[FieldError]:
    """``validateResourceRequirements`` for a container: names, quantities, requests <= limits."""
    resources = as_dict(resources)
    errors: list[FieldError] = []
    lim_path, req_path = child(path, "limits"), child(path, "requests")
    limits = {name: quantity_or_none(value) for name, value in as_dict(resources.get("limits")).items()}
    requests = {name: quantity_or_none(value) for name, value in as_dict(resources.get("requests")).items()}
    cpu_or_memory = hugepages = False
    for name, quantity in limits.items():
        field = key(lim_path, name)
        errors += _validate_container_resource_name(name, field)
        if quantity is not None:
            errors += _validate_quantity_value(name, quantity, field)
        hugepages = hugepages or _is_hugepages(name)
        cpu_or_memory = cpu_or_memory or name in ("cpu", "memory")
    for name, quantity in requests.items():
        field = key(req_path, name)
        errors += _validate_container_resource_name(name, field)
        if quantity is None:
            continue
        errors += _validate_quantity_value(name, quantity, field)
        limit = limits.get(name)
        if name in limits and limit is not None:
            if quantity != limit and not _overcommit_allowed(name):
                errors.append(invalid(req_path, str(quantity), f"must be equal to {name} limit of {limit}"))
            elif quantity > limit:
                errors.append(
                    invalid(req_path, str(quantity), f"must be less than or equal to {name} limit of {limit}")
                )
        elif not _overcommit_allowed(name):
            errors.append(required(lim_path, "Limit must be set for non overcommitable resources"))
        hugepages = hugepages or _is_hugepages(name)
        cpu_or_memory = cpu_or_memory or name in ("cpu", "memory")
    if hugepages and not cpu_or_memory:
        errors.append(forbidden(path, "HugePages require cpu or memory"))
    return errors
