"""Updates through ``pods/status``: the checks on what a kubelet reports.

A pod's ``status`` is written only by its kubelet (and the scheduler's conditions), through the
``status`` subresource; the strategy keeps the spec from the stored pod (see ``strategy``). These
rules catch a kubelet that got something wrong: condition types must be qualified names, ``qosClass``
never changes, a container that terminated under ``restartPolicy: Never`` (or ``OnFailure`` with exit
code 0) may not come back to life, and pod IPs must be IPs.

Upstream: ``pkg/apis/core/validation/validation.go`` (``ValidatePodStatusUpdate``) and
``pkg/registry/core/pod/strategy.go`` (``podStatusStrategy``).
"""

from __future__ import annotations

from controlplane.api.meta import Object
from controlplane.api.strategies.common import (
    as_dict,
    as_list,
    as_str,
    child,
    dns_subdomain,
    index,
    valid_ip,
)
from controlplane.api.validation import (
    FieldError,
    forbidden,
    invalid,
    is_qualified_name,
)


def validate_pod_status_update(obj: Object, old: Object) -> list[FieldError]:
    """``ValidatePodStatusUpdate``: the parts a kubelet could get wrong."""
    status, old_status = as_dict(obj.get("status")), as_dict(old.get("status"))
    errors: list[FieldError] = []
    for i, condition in enumerate(as_list(status.get("conditions"))):
        kind = as_str(as_dict(condition).get("type"))
        if kind not in ("PodScheduled", "Ready", "Initialized"):
            errors += [
                invalid(child(index("metadata.conditions", i), "Type"), kind, m)
                for m in is_qualified_name(kind)
            ]
    nominated = as_str(status.get("nominatedNodeName"))
    if nominated and nominated != old_status.get("nominatedNodeName"):
        errors += dns_subdomain(nominated, "status.nominatedNodeName")
    if status.get("qosClass") != old_status.get("qosClass"):
        errors.append(invalid("status.qosClass", as_str(status.get("qosClass")), "field is immutable"))
    restart = as_dict(old.get("spec")).get("restartPolicy")
    if restart != "Always":
        new_by_name = {as_dict(s).get("name"): as_dict(s) for s in as_list(status.get("containerStatuses"))}
        for i, old_container in enumerate(as_list(old_status.get("containerStatuses"))):
            terminated = as_dict(as_dict(as_dict(old_container).get("state")).get("terminated"))
            if not terminated:
                continue
            if terminated.get("exitCode", 0) != 0 and restart == "OnFailure":
                continue
            new = new_by_name.get(as_dict(old_container).get("name"))
            if new is not None and not as_dict(new.get("state")).get("terminated"):
                errors.append(
                    forbidden(
                        child(index("status.containerStatuses", i), "state"),
                        "may not be transitioned to non-terminated state",
                    )
                )
    for i, pod_ip in enumerate(as_list(status.get("podIPs"))):
        errors += valid_ip(as_str(as_dict(pod_ip).get("ip")), index("status.podIPs", i))
    return errors
