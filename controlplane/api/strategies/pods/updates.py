"""Updates to a pod: why most of its spec is immutable once created.

The kubelet has already pulled images, mounted volumes, joined the pod to its network and started
processes from the spec: changing a container's command, ports or volumes in place would mean
silently restarting the pod as something else. So an update may change only what can be applied
live: a container's ``image`` (the kubelet restarts that one container), ``activeDeadlineSeconds``
(only shortened), new ``tolerations`` (added, never removed or edited), and
``terminationGracePeriodSeconds`` from negative to 1. Anything else is refused with upstream's famous
``spec: Forbidden: pod updates may not change fields other than ...`` (``POD_UPDATE_FORBIDDEN``) and
a short diff. To change a pod, you replace it; that is what Deployments and ReplicaSets do for you.

``spec.nodeName`` is set once, by the scheduler, through ``pods/binding`` (see ``strategy``).
Upstream: ``pkg/apis/core/validation/validation.go`` (``ValidatePodUpdate``,
``validateOnlyAddedTolerations``).
"""

from __future__ import annotations

import json
from typing import Any, Final

from controlplane.api.deepcopy import deep_copy
from controlplane.api.meta import Object
from controlplane.api.strategies.common import (
    as_dict,
    as_list,
    as_str,
    child,
    go_pointer,
    inclusive_range,
    index,
    invalid_go,
    is_int,
    semantic,
)
from controlplane.api.strategies.pods.scheduling import validate_tolerations
from controlplane.api.strategies.pods.spec import MAX_INT32
from controlplane.api.validation import (
    FieldError,
    forbidden,
    invalid,
    required,
)

#: The message ``ValidatePodUpdate`` starts with, verbatim (``updatablePodSpecFields``).
POD_UPDATE_FORBIDDEN: Final = "pod updates may not change fields other than " + ",".join(
    [
        "`spec.containers[*].image`",
        "`spec.initContainers[*].image`",
        "`spec.activeDeadlineSeconds`",
        "`spec.tolerations` (only additions to existing tolerations)",
        "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
    ]
)


def _only_added_tolerations(new: Any, old: Any, path: str) -> list[FieldError]:
    """``validateOnlyAddedTolerations``: each old toleration is still there (``tolerationSeconds`` aside)."""

    def strip(toleration: Any) -> Any:
        return {k: v for k, v in semantic(as_dict(toleration)).items() if k != "tolerationSeconds"}

    new_list = [strip(t) for t in as_list(new)]
    for toleration in as_list(old):
        if strip(toleration) not in new_list:
            return [forbidden(path, "existing toleration can not be modified except its tolerationSeconds")]
    return validate_tolerations(new, path)


def _spec_diff(old: Any, new: Any) -> str:
    """A short diff of two pod specs, in the spirit of the ``cmp.Diff`` upstream appends.

    (go-cmp's own output is explicitly unstable and Go-struct shaped; this lists the changed fields.)
    """
    lines: list[str] = []

    def walk(a: Any, b: Any, where: str) -> None:
        if a == b:
            return
        if isinstance(a, dict) and isinstance(b, dict):
            for k in sorted(set(a) | set(b)):
                walk(a.get(k), b.get(k), f"{where}.{k}" if where else k)
            return
        if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                walk(x, y, f"{where}[{i}]")
            return
        if a is not None:
            lines.append(f"- \t{where}: {json.dumps(a, separators=(',', ':'))},")
        if b is not None:
            lines.append(f"+ \t{where}: {json.dumps(b, separators=(',', ':'))},")

    walk(semantic(old), semantic(new), "")
    return "  core.PodSpec{\n" + "\n".join(lines) + ("\n" if lines else "") + "  }\n"


def validate_pod_update(obj: Object, old: Object, *, allow_binding: bool) -> list[FieldError]:
    """``ValidatePodUpdate``: the few fields of a running pod's spec that may change."""
    spec, old_spec = as_dict(obj.get("spec")), as_dict(old.get("spec"))
    errors: list[FieldError] = []
    for field in ("containers", "initContainers"):
        new_list, old_list = as_list(spec.get(field)), as_list(old_spec.get(field))
        if len(new_list) != len(old_list):
            return [*errors, forbidden(child("spec", field), "pod updates may not add or remove containers")]
        for i, container in enumerate(new_list):
            image = as_str(as_dict(container).get("image"))
            if not image:
                errors.append(required(child(index(child("spec", field), i), "image")))
            if image != image.strip():
                errors.append(
                    invalid(
                        child(index(child("spec", field), i), "image"),
                        image,
                        "must not have leading or trailing whitespace",
                    )
                )
    deadline, old_deadline = spec.get("activeDeadlineSeconds"), old_spec.get("activeDeadlineSeconds")
    if deadline is not None:
        if not is_int(deadline) or not 0 <= deadline <= MAX_INT32:
            return [*errors, invalid("spec.activeDeadlineSeconds", deadline, inclusive_range(0, MAX_INT32))]
        if is_int(old_deadline) and old_deadline < deadline:
            message = "must be less than or equal to previous value"
            return [*errors, invalid("spec.activeDeadlineSeconds", deadline, message)]
    elif old_deadline is not None:
        errors.append(
            invalid_go(
                "spec.activeDeadlineSeconds",
                go_pointer(None),
                "must not update from a positive integer to nil value",
            )
        )
    errors += _only_added_tolerations(
        spec.get("tolerations"), old_spec.get("tolerations"), "spec.tolerations"
    )

    munged = deep_copy(spec)
    for field in ("containers", "initContainers"):
        for container, old_container in zip(
            as_list(munged.get(field)), as_list(old_spec.get(field)), strict=False
        ):
            if isinstance(container, dict):
                container["image"] = as_dict(old_container).get("image")
    munged["activeDeadlineSeconds"] = old_deadline
    munged["tolerations"] = old_spec.get("tolerations")
    munged["schedulingGates"] = old_spec.get("schedulingGates")
    old_grace, new_grace = (
        old_spec.get("terminationGracePeriodSeconds"),
        munged.get("terminationGracePeriodSeconds"),
    )
    if is_int(old_grace) and old_grace < 0 and new_grace == 1:
        munged["terminationGracePeriodSeconds"] = old_grace
    if allow_binding and not old_spec.get("nodeName") and munged.get("nodeName"):
        # Transitional: the lab's registry routes pods/binding through the main update path; upstream's
        # BindingREST sets spec.nodeName outside the strategy. See PodBindingStrategy.
        munged["nodeName"] = old_spec.get("nodeName")
    if semantic(munged) != semantic(old_spec):
        errors.append(forbidden("spec", f"{POD_UPDATE_FORBIDDEN}\n{_spec_diff(old_spec, munged)}"))
    return errors
