"""ResourceQuota: what a whole namespace may use, counted at admission.

A LimitRange bounds each container; a **ResourceQuota** bounds the namespace's total::

    spec:
      hard:
        pods: "10"               # at most 10 pods (count/pods works too)
        requests.cpu: "4"        # their CPU requests add up to at most 4 cores
        limits.memory: 8Gi
        count/deployments.apps: "5"
        services: "3"

Every create (and every pod update that changes what it counts) is checked: the namespace's current
usage plus what this request adds must stay within ``hard``, else 403 with upstream's message::

    pods "web-3" is forbidden: exceeded quota: team-quota, requested: pods=1, used: pods=10, limited: pods=10

A quota on ``requests.cpu`` (or memory, or limits) also makes every container *say* how much it needs:
``failed quota: team-quota: must specify requests.cpu for: app``. That is why quotas and
LimitRanges come together: the LimitRange fills in the defaults (it runs earlier in the chain).

Upstream keeps the usage in the quota's ``status.used``, maintained by the quota controller and
updated by admission itself in one compare-and-swap per request. Kubelab counts the usage afresh from
the API server's watch cache at each check (a namespace holds few objects): simpler, and just as
exact, except that two creates racing in the same instant can both pass. This plugin runs last, after
the webhooks, so that it counts the object that will be stored.

Upstream: ``plugin/pkg/admission/resourcequota/controller.go`` and
``pkg/quota/v1/evaluator/core/pods.go``.
"""

from __future__ import annotations

from typing import Any, Final

from controlplane.api.quantity import QuantityError, parse_json_quantity
from controlplane.api.quota import ZERO, Usage, add, usage_of
from controlplane.apiserver.admission.attributes import CREATE, UPDATE, Attributes, Object, forbidden, section
from controlplane.apiserver.admission.chain import ClusterView, Plugin, Scope

#: Quota names a container must state a value for, and the part of ``resources`` they read.
_CONTAINER_CONSTRAINTS: Final = {
    "cpu": ("requests", "cpu"),
    "requests.cpu": ("requests", "cpu"),
    "memory": ("requests", "memory"),
    "requests.memory": ("requests", "memory"),
    "limits.cpu": ("limits", "cpu"),
    "limits.memory": ("limits", "memory"),
}


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def missing_constraints(pod: Object, constrained: set[str]) -> str | None:
    """``podEvaluator.Constraints``: the quota names some container does not state, or None."""
    missing: dict[str, list[str]] = {}
    spec = _dict(pod.get("spec"))
    for field in ("initContainers", "containers"):
        for container in _list(spec.get(field)):
            for name in sorted(constrained & set(_CONTAINER_CONSTRAINTS)):
                key, resource = _CONTAINER_CONSTRAINTS[name]
                if resource not in _dict(section(container, "resources", key)):
                    missing.setdefault(name, []).append(str(_dict(container).get("name") or ""))
    if not missing:
        return None
    parts = [f"{name} for: {','.join(sorted(set(names)))}" for name, names in sorted(missing.items())]
    return f"must specify {'; '.join(parts)}"


def pretty(usage: Usage) -> str:
    """``prettyPrint``: ``name=value`` sorted by name, comma-separated."""
    return ",".join(f"{name}={usage[name]}" for name in sorted(usage))


def check_quota(quota: Object, requested: Usage, used: Usage) -> str | None:
    """Why ``requested`` on top of ``used`` breaks ``quota``, or None (pure)."""
    hard: Usage = {}
    for name, value in _dict(section(quota, "spec", "hard")).items():
        try:
            hard[str(name)] = parse_json_quantity(value)
        except QuantityError:
            continue
    over_requested: Usage = {}
    over_used: Usage = {}
    over_hard: Usage = {}
    for name, amount in requested.items():
        if name not in hard or amount.is_zero():
            continue
        current = used.get(name, ZERO)
        if hard[name] < current + amount:
            over_requested[name] = amount
            over_used[name] = current
            over_hard[name] = hard[name]
    if not over_requested:
        return None
    name = str(section(quota, "metadata", "name") or "")
    return (
        f"exceeded quota: {name}, requested: {pretty(over_requested)}, used: {pretty(over_used)}, "
        f"limited: {pretty(over_hard)}"
    )


class ResourceQuota(Plugin):
    name = "ResourceQuota"
    validating = True

    def handles(self, a: Attributes) -> bool:
        if not a.namespace or a.subresource or a.object is None:
            return False
        return a.operation == CREATE or (a.operation == UPDATE and a.is_pod())

    async def validate(self, a: Attributes, cluster: ClusterView, scope: Scope) -> None:
        quotas = cluster.cached_list("", "resourcequotas", a.namespace)
        if not quotas:
            return
        assert a.object is not None
        requested = usage_of(a.group, a.resource, a.object)
        if a.operation == UPDATE and a.old_object is not None:
            before = usage_of(a.group, a.resource, a.old_object)
            requested = {k: v - before.get(k, ZERO) for k, v in requested.items()}
            requested = {k: v for k, v in requested.items() if v.sign() > 0}
        if not requested:
            return
        used = self._used(a, cluster)
        for quota in sorted(quotas, key=lambda q: str(section(q, "metadata", "name") or "")):
            hard = set(_dict(section(quota, "spec", "hard")))
            if a.is_pod() and a.operation == CREATE:
                missing = missing_constraints(a.object, hard)
                if missing is not None:
                    raise forbidden(a, f"failed quota: {section(quota, 'metadata', 'name')}: {missing}")
            problem = check_quota(quota, requested, used)
            if problem is not None:
                raise forbidden(a, problem)

    @staticmethod
    def _used(a: Attributes, cluster: ClusterView) -> Usage:
        """The namespace's usage of this resource, counted from the cache (see the module docstring)."""
        used: Usage = {}
        name = a.object_name()
        for obj in cluster.cached_list(a.group, a.resource, a.namespace):
            if a.operation == UPDATE and section(obj, "metadata", "name") == name:
                continue  # the object being updated counts as its new self, in ``requested``
            for key, amount in usage_of(a.group, a.resource, obj).items():
                add(used, key, amount)
        if a.operation == UPDATE and a.old_object is not None:
            for key, amount in usage_of(a.group, a.resource, a.old_object).items():
                add(used, key, amount)
        return used


__all__ = ["ResourceQuota", "check_quota", "missing_constraints", "pretty"]
