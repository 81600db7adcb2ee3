"""Quality of Service classes: how much a pod asked for, and so who is evicted first.

The API server computes ``status.qosClass`` once, at creation (``pkg/apis/core/helper/qos/qos.go``
``ComputePodQOS``), from the containers' CPU and memory requests and limits:

- *Guaranteed*: every container limits CPU and memory and requests exactly that;
- *BestEffort*: nothing requested or limited at all;
- *Burstable*: anything in between.

Under memory pressure the kubelet evicts BestEffort pods first, then Burstable ones above their
requests. The class never changes afterwards (``status`` validates it as immutable, see ``status``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controlplane.api.quantity import Quantity, QuantityError, parse_json_quantity
from controlplane.api.strategies.common import (
    as_dict,
    as_list,
)


def pod_qos_class(spec: Mapping[str, Any]) -> str:
    """BestEffort, Burstable or Guaranteed, from the containers' CPU and memory requests and limits."""
    requests: dict[str, Quantity] = {}
    limits: dict[str, Quantity] = {}
    guaranteed = True
    containers = [*as_list(spec.get("containers")), *as_list(spec.get("initContainers"))]
    for container in containers:
        resources = as_dict(as_dict(container).get("resources"))
        for name, value in as_dict(resources.get("requests")).items():
            quantity = quantity_or_none(value)
            if name in ("cpu", "memory") and quantity is not None and quantity.sign() > 0:
                requests[name] = requests[name] + quantity if name in requests else quantity
        found: set[str] = set()
        for name, value in as_dict(resources.get("limits")).items():
            quantity = quantity_or_none(value)
            if name in ("cpu", "memory") and quantity is not None and quantity.sign() > 0:
                found.add(name)
                limits[name] = limits[name] + quantity if name in limits else quantity
        if not {"cpu", "memory"} <= found:
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed:
        for name, request in requests.items():
            if name not in limits or limits[name] != request:
                guaranteed = False
                break
    if guaranteed and len(requests) == len(limits):
        return "Guaranteed"
    return "Burstable"


def quantity_or_none(value: Any) -> Quantity | None:
    try:
        return parse_json_quantity(value)
    except QuantityError:
        return None
