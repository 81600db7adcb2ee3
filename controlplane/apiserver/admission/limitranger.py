"""LimitRanger: default and bound each container's resources, from the namespace's LimitRanges.

A container that states no ``resources`` may use a whole node's CPU and memory, and the scheduler
counts it as asking for nothing. An administrator who wants every container in a namespace to say
what it needs writes a **LimitRange**::

    spec:
      limits:
      - type: Container
        default:        {cpu: 500m, memory: 256Mi}   # limits for containers that set none
        defaultRequest: {cpu: 100m, memory: 128Mi}   # requests for containers that set none
        min:            {cpu: 50m}                    # no request below this
        max:            {cpu: "2"}                    # no limit above this
        maxLimitRequestRatio: {cpu: "10"}             # limit at most 10x the request
      - type: Pod
        max:            {cpu: "4"}                    # the sum over the pod's containers

On every pod create this plugin first (mutating) fills in the defaults, recording what it did in the
annotation ``kubernetes.io/limit-ranger`` ("LimitRanger plugin set: cpu, memory request for container
app"), then (validating) checks the minimums, maximums and ratios, refusing with upstream's messages
(``pods "app" is forbidden: maximum cpu usage per Container is 2, but limit is 4``).

A LimitRange's own defaults (``default`` from ``max``; ``defaultRequest`` from ``default``, else
``min``) are applied here when it is read, where upstream applies them when it is stored.

Upstream: ``plugin/pkg/admission/limitranger/admission.go``.
"""

from __future__ import annotations

from typing import Any, Final

from controlplane.api.quantity import Quantity, QuantityError, parse_json_quantity
from controlplane.apiserver.admission.attributes import (
    CREATE,
    Attributes,
    Object,
    PatchOp,
    escape,
    forbidden,
    section,
)
from controlplane.apiserver.admission.chain import ClusterView, Plugin, Scope

ANNOTATION: Final = "kubernetes.io/limit-ranger"
Resources = dict[str, Quantity]


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def quantities(value: Any) -> Resources:
    """A ResourceList as quantities; entries that do not parse are left out (validation reports them)."""
    out: Resources = {}
    for name, amount in _dict(value).items():
        try:
            out[str(name)] = parse_json_quantity(amount)
        except QuantityError:
            continue
    return out


def item_with_defaults(item: dict[str, Any]) -> dict[str, Resources]:
    """``SetDefaults_LimitRangeItem`` for a Container item; min/max/ratio as quantities."""
    parsed = {
        key: quantities(item.get(key))
        for key in ("min", "max", "default", "defaultRequest", "maxLimitRequestRatio")
    }
    if item.get("type") == "Container":
        for name, value in parsed["max"].items():
            parsed["default"].setdefault(name, value)
        for name, value in parsed["default"].items():
            parsed["defaultRequest"].setdefault(name, value)
        for name, value in parsed["min"].items():
            parsed["defaultRequest"].setdefault(name, value)
    return parsed


def container_items(limit_ranges: list[Object]) -> list[dict[str, Resources]]:
    return [
        item_with_defaults(_dict(item))
        for lr in limit_ranges
        for item in _list(section(lr, "spec", "limits"))
        if _dict(item).get("type") == "Container"
    ]


def default_patch(pod: Object, limit_ranges: list[Object]) -> list[PatchOp]:
    """The defaults for every container and the annotation saying so (pure)."""
    defaults_limits: Resources = {}
    defaults_requests: Resources = {}
    for item in container_items(limit_ranges):  # the first LimitRange that sets a default wins
        for name, value in item["default"].items():
            defaults_limits.setdefault(name, value)
        for name, value in item["defaultRequest"].items():
            defaults_requests.setdefault(name, value)
    if not defaults_limits and not defaults_requests:
        return []
    spec = _dict(pod.get("spec"))
    patch: list[PatchOp] = []
    notes: list[str] = []
    for field, label in (("initContainers", "init container"), ("containers", "container")):
        for i, container in enumerate(_list(spec.get(field))):
            if not isinstance(container, dict):
                continue
            resources = _dict(container.get("resources"))
            set_limits = sorted(n for n in defaults_limits if n not in _dict(resources.get("limits")))
            set_requests = sorted(n for n in defaults_requests if n not in _dict(resources.get("requests")))
            if not set_limits and not set_requests:
                continue
            merged: dict[str, Any] = dict(resources)
            limits = dict(_dict(resources.get("limits")))
            requests = dict(_dict(resources.get("requests")))
            limits.update({n: defaults_limits[n].canonical() for n in set_limits})
            requests.update({n: defaults_requests[n].canonical() for n in set_requests})
            if limits:
                merged["limits"] = limits
            if requests:
                merged["requests"] = requests
            # "add" on a member that exists replaces it (RFC 6902 section 4.1).
            patch.append({"op": "add", "path": f"/spec/{field}/{i}/resources", "value": merged})
            name = container.get("name", "")
            if set_requests:
                notes.append(f"{', '.join(set_requests)} request for {label} {name}")
            if set_limits:
                notes.append(f"{', '.join(set_limits)} limit for {label} {name}")
    if not notes:
        return patch
    note = f"LimitRanger plugin set: {'; '.join(notes)}"
    annotations = section(pod, "metadata", "annotations")
    if isinstance(annotations, dict):
        patch.append({"op": "add", "path": f"/metadata/annotations/{escape(ANNOTATION)}", "value": note})
    else:
        patch.append({"op": "add", "path": "/metadata/annotations", "value": {ANNOTATION: note}})
    return patch


def _min(kind: str, name: str, enforced: Quantity, requests: Resources, limits: Resources) -> str | None:
    request, limit = requests.get(name), limits.get(name)
    if request is None:
        return f"minimum {name} usage per {kind} is {enforced}.  No request is specified"
    if request < enforced:
        return f"minimum {name} usage per {kind} is {enforced}, but request is {request}"
    if limit is not None and limit < enforced:
        return f"minimum {name} usage per {kind} is {enforced}, but limit is {limit}"
    return None


def _max(kind: str, name: str, enforced: Quantity, requests: Resources, limits: Resources) -> str | None:
    request, limit = requests.get(name), limits.get(name)
    if limit is None:
        return f"maximum {name} usage per {kind} is {enforced}.  No limit is specified"
    if enforced < limit:
        return f"maximum {name} usage per {kind} is {enforced}, but limit is {limit}"
    if request is not None and enforced < request:
        return f"maximum {name} usage per {kind} is {enforced}, but request is {request}"
    return None


def _ratio(kind: str, name: str, enforced: Quantity, requests: Resources, limits: Resources) -> str | None:
    request, limit = requests.get(name), limits.get(name)
    if request is None or request.is_zero():
        return (
            f"{name} max limit to request ratio per {kind} is {enforced}, "
            "but no request is specified or request is 0"
        )
    if limit is None or limit.is_zero():
        return (
            f"{name} max limit to request ratio per {kind} is {enforced}, "
            "but no limit is specified or limit is 0"
        )
    observed = limit.milli_value() / request.milli_value()
    if observed * 1000 > enforced.milli_value():
        return (
            f"{name} max limit to request ratio per {kind} is {enforced}, but provided ratio is {observed:f}"
        )
    return None


def _pod_totals(spec: dict[str, Any], key: str) -> Resources:
    """Sum over containers, at least the largest init container (``podRequests``/``podLimits``)."""
    total: Resources = {}
    for container in _list(spec.get("containers")):
        for name, value in quantities(section(container, "resources", key)).items():
            total[name] = total[name] + value if name in total else value
    for container in _list(spec.get("initContainers")):
        for name, value in quantities(section(container, "resources", key)).items():
            if name not in total or total[name] < value:
                total[name] = value
    return total


def violations(pod: Object, limit_ranges: list[Object]) -> list[str]:
    """Every min/max/ratio a pod breaks (pure), deduplicated in order, like an aggregate error."""
    spec = _dict(pod.get("spec"))
    problems: list[str] = []
    for lr in limit_ranges:
        for raw in _list(section(lr, "spec", "limits")):
            item = _dict(raw)
            kind = str(item.get("type") or "")
            parsed = item_with_defaults(item)
            subjects: list[tuple[Resources, Resources]] = []
            if kind == "Container":
                for field in ("containers", "initContainers"):
                    for container in _list(spec.get(field)):
                        subjects.append(
                            (
                                quantities(section(container, "resources", "requests")),
                                quantities(section(container, "resources", "limits")),
                            )
                        )
            elif kind == "Pod":
                subjects.append((_pod_totals(spec, "requests"), _pod_totals(spec, "limits")))
            for requests, limits in subjects:
                for check, key in ((_min, "min"), (_max, "max"), (_ratio, "maxLimitRequestRatio")):
                    for name in sorted(parsed[key]):
                        problem = check(kind, name, parsed[key][name], requests, limits)
                        if problem is not None:
                            problems.append(problem)
    return list(dict.fromkeys(problems))


def aggregate(messages: list[str]) -> str:
    """``utilerrors.NewAggregate(errs).Error()``: one message as is, several in brackets."""
    return messages[0] if len(messages) == 1 else "[" + ", ".join(messages) + "]"


class LimitRanger(Plugin):
    name = "LimitRanger"
    mutating = True
    validating = True

    def handles(self, a: Attributes) -> bool:
        # Containers cannot be added or changed on update: only creates are defaulted and checked.
        return a.is_pod() and not a.subresource and a.operation == CREATE and isinstance(a.object, dict)

    async def admit(self, a: Attributes, cluster: ClusterView, scope: Scope) -> list[PatchOp]:
        limit_ranges = cluster.cached_list("", "limitranges", a.namespace)
        if not limit_ranges:
            return []
        assert a.object is not None
        return default_patch(a.object, limit_ranges)

    async def validate(self, a: Attributes, cluster: ClusterView, scope: Scope) -> None:
        limit_ranges = cluster.cached_list("", "limitranges", a.namespace)
        if not limit_ranges:
            return
        assert a.object is not None
        problems = violations(a.object, limit_ranges)
        if problems:
            raise forbidden(a, aggregate(problems))


__all__ = ["ANNOTATION", "LimitRanger", "aggregate", "default_patch", "violations"]
