"""Quota usage: what an object counts against a namespace's ResourceQuota (pure, no I/O).

A ResourceQuota's ``spec.hard`` names resources by **quota names**: ``pods`` and ``count/pods`` (one
per pod that still runs), ``requests.cpu`` and ``limits.memory`` (summed over the pods' containers),
``services.nodeports``, ``count/deployments.apps`` (one per object of any resource). The same
evaluation serves twice, as upstream's evaluators do (``pkg/quota/v1/evaluator/core/``): admission
checks a new object's usage against what the namespace uses already
(``apiserver/admission/resourcequota.py``), and the resource quota controller writes the namespace's
usage into the quota's ``status.used`` (``components/controllers/resourcequota.py``).
"""

from __future__ import annotations

from typing import Any, Final

from controlplane.api.quantity import Quantity, QuantityError, parse_json_quantity

Object = dict[str, Any]

Usage = dict[str, Quantity]

ONE: Final = parse_json_quantity("1")
ZERO: Final = parse_json_quantity("0")

#: Core resources with a short quota name (``ResourceServices`` ...), besides ``count/<resource>``.
SHORT_COUNT_NAMES: Final = {
    "pods": "pods",
    "services": "services",
    "configmaps": "configmaps",
    "secrets": "secrets",
    "replicationcontrollers": "replicationcontrollers",
    "resourcequotas": "resourcequotas",
    "persistentvolumeclaims": "persistentvolumeclaims",
}


def section(obj: Any, *path: str) -> Any:
    """``obj[path[0]][path[1]]...``, or None where a step is missing or not a mapping."""
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def add(usage: Usage, name: str, amount: Quantity) -> None:
    usage[name] = usage[name] + amount if name in usage else amount


def count_name(group: str, resource: str) -> str:
    return f"count/{resource}.{group}" if group else f"count/{resource}"


def pod_counts(pod: Object) -> bool:
    """Whether a pod still uses quota: not finished (Succeeded/Failed), not past its deletion."""
    return section(pod, "status", "phase") not in ("Succeeded", "Failed")


def _container_sum(spec: dict[str, Any], key: str, name: str) -> Quantity | None:
    total: Quantity | None = None
    for container in _list(spec.get("containers")):
        value = _dict(section(container, "resources", key)).get(name)
        if value is None:
            continue
        try:
            amount = parse_json_quantity(value)
        except QuantityError:
            continue
        total = amount if total is None else total + amount
    for container in _list(spec.get("initContainers")):
        value = _dict(section(container, "resources", key)).get(name)
        if value is None:
            continue
        try:
            amount = parse_json_quantity(value)
        except QuantityError:
            continue
        if total is None or total < amount:
            total = amount
    return total


def usage_of(group: str, resource: str, obj: Object) -> Usage:
    """What one object counts against a quota (pure; ``pods`` also counts its requests and limits)."""
    usage: Usage = {count_name(group, resource): ONE}
    if not group and resource in SHORT_COUNT_NAMES:
        usage[SHORT_COUNT_NAMES[resource]] = ONE
    if not group and resource == "pods":
        if not pod_counts(obj):
            # count/pods counts every pod in storage; ``pods`` and compute only those that still run
            # (pkg/quota/v1/evaluator/core/pods.go ``PodUsageFunc``)
            return {count_name(group, resource): ONE}
        spec = _dict(obj.get("spec"))
        for key, prefix in (("requests", "requests."), ("limits", "limits.")):
            for name in ("cpu", "memory", "ephemeral-storage"):
                total = _container_sum(spec, key, name)
                if total is not None:
                    usage[prefix + name] = total
                    if key == "requests":
                        usage[name] = total
    if not group and resource == "services":
        kind = section(obj, "spec", "type")
        if kind == "LoadBalancer":
            usage["services.loadbalancers"] = ONE
        if kind in ("NodePort", "LoadBalancer"):
            ports = [p for p in _list(section(obj, "spec", "ports")) if isinstance(p, dict)]
            usage["services.nodeports"] = parse_json_quantity(str(len(ports)))
    if not group and resource == "persistentvolumeclaims":
        # pkg/quota/v1/evaluator/core/persistent_volume_claims.go: storage requested, in all and per
        # storage class (``<class>.storageclass.storage.k8s.io/requests.storage``)
        storage_class = section(obj, "spec", "storageClassName")
        prefix = (
            f"{storage_class}{STORAGE_CLASS_SUFFIX}"
            if isinstance(storage_class, str) and storage_class
            else ""
        )
        if prefix:
            usage[prefix + "persistentvolumeclaims"] = ONE
        requested = section(obj, "spec", "resources", "requests", "storage")
        if requested is not None:
            try:
                amount = parse_json_quantity(requested)
            except QuantityError:
                amount = None
            if amount is not None:
                usage["requests.storage"] = amount
                if prefix:
                    usage[prefix + "requests.storage"] = amount
    return usage


#: Quota names of the pod evaluator (compute), besides ``pods`` and ``count/pods``.
POD_COMPUTE_NAMES: Final = frozenset(
    f"{prefix}{name}"
    for prefix in ("", "requests.", "limits.")
    for name in ("cpu", "memory", "ephemeral-storage")
)
#: How a per-storage-class quota name continues after the class's name.
STORAGE_CLASS_SUFFIX: Final = ".storageclass.storage.k8s.io/"


def counted_resource(name: str) -> tuple[str, str] | None:
    """The (group, resource) whose objects the quota name ``name`` counts; None for a name no
    evaluator knows (upstream then reports no usage for it either)."""
    if name.startswith("count/"):
        resource, _, group = name[len("count/") :].partition(".")
        return (group, resource) if resource else None
    if name in SHORT_COUNT_NAMES:
        return ("", SHORT_COUNT_NAMES[name])
    if name in POD_COMPUTE_NAMES:
        return ("", "pods")
    if name in ("services.loadbalancers", "services.nodeports"):
        return ("", "services")
    if name == "requests.storage" or STORAGE_CLASS_SUFFIX in name:
        return ("", "persistentvolumeclaims")
    return None


def used(hard: list[str], objects: dict[tuple[str, str], list[Object]]) -> Usage:
    """``status.used`` of a quota whose ``spec.hard`` names ``hard``, given each counted resource's
    objects in the namespace: every name an evaluator knows, zero where nothing counts
    (``quota.CalculateUsage``, then masked to the hard names)."""
    totals: dict[tuple[str, str], Usage] = {}
    result: Usage = {}
    for name in hard:
        counted = counted_resource(name)
        if counted is None:
            continue
        if counted not in totals:
            summed: Usage = {}
            for obj in objects.get(counted, []):
                for key, amount in usage_of(counted[0], counted[1], obj).items():
                    add(summed, key, amount)
            totals[counted] = summed
        result[name] = totals[counted].get(name, ZERO)
    return result
