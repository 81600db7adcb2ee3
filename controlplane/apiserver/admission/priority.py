"""Priority: a new pod's ``spec.priority`` is the value of its PriorityClass, looked up at creation.

A pod names a class (``spec.priorityClassName: high``); the number the scheduler compares is
``spec.priority``. Users do not write that number: this plugin looks the class up and writes its
``value`` into ``spec.priority`` and its ``preemptionPolicy`` into ``spec.preemptionPolicy`` when the
pod is created. Later changes to the class do not touch existing pods (a class's value is immutable
anyway), and pod validation keeps both fields from changing afterwards.

- **No class named**: the ``globalDefault`` class, if one exists, is written into
  ``spec.priorityClassName`` and its value used (if several claim it after a race, the lowest value
  wins); without one the priority is 0 (``DefaultPriorityWhenNoDefaultClassExists``) and the policy
  ``PreemptLowerPriority``.
- **Unknown class**: 403 ``pods "x" is forbidden: no PriorityClass with name X was found``.
- **A pod that already carries a number** (``spec.priority`` set by its author) must carry the one
  the class gives, or it is refused: "the integer value of priority (5) must not be provided in pod
  spec; priority admission controller computed 1000 from the given PriorityClass name". The same for
  a ``preemptionPolicy`` that differs from the class's.
- **Updates** keep the priority the pod was created with when the new body leaves it out (a
  ``kubectl replace`` of the original manifest would otherwise look like an attempt to change it).

The plugin also has a validating half for PriorityClasses themselves: at most one may be the
``globalDefault`` ("PriorityClass X is already marked as default. Only one default can exist").

Upstream: ``plugin/pkg/admission/priority/admission.go``.
"""

from __future__ import annotations

from typing import Final

from controlplane.api.strategies.scheduling import (
    DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS,
    GROUP,
    PREEMPT_LOWER_PRIORITY,
)
from controlplane.apiserver.admission.attributes import (
    CREATE,
    UPDATE,
    Attributes,
    Object,
    PatchOp,
    forbidden,
    section,
)
from controlplane.apiserver.admission.chain import ClusterView, Plugin, Scope

PRIORITY_CLASSES: Final = "priorityclasses"


class ClassNotFound(LookupError):
    """The pod names a PriorityClass that does not exist."""

    def __init__(self, name: str) -> None:
        super().__init__(f"no PriorityClass with name {name} was found")
        self.name = name


class PriorityMismatch(ValueError):
    """The pod carries a priority or preemption policy other than its class gives."""


def default_priority_class(classes: list[Object]) -> Object | None:
    """``getDefaultPriorityClass``: the ``globalDefault`` class; the lowest value if several are."""
    chosen: Object | None = None
    for candidate in classes:
        if candidate.get("globalDefault") is True and (chosen is None or _value(candidate) < _value(chosen)):
            chosen = candidate
    return chosen


def _value(priority_class: Object) -> int:
    value = priority_class.get("value")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _name(obj: Object) -> str:
    return str(section(obj, "metadata", "name") or "")


def resolve(class_name: str, found: Object | None, default: Object | None) -> tuple[str, int, str | None]:
    """``establishPriority``: the class name the pod ends up with, its priority and preemption policy.

    ``found`` is the named class (None: not found), ``default`` the ``globalDefault`` one.
    """
    if not class_name:
        if default is None:
            return "", DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS, PREEMPT_LOWER_PRIORITY
        policy = default.get("preemptionPolicy")
        return _name(default), _value(default), policy if isinstance(policy, str) else None
    if found is None:
        raise ClassNotFound(class_name)
    policy = found.get("preemptionPolicy")
    return class_name, _value(found), policy if isinstance(policy, str) else None


def pod_patch(spec: Object, class_name: str, priority: int, policy: str | None) -> list[PatchOp]:
    """The patch that writes the resolved priority into a new pod's spec; refuses a mismatch (pure)."""
    given = spec.get("priority")
    if given is not None and given != priority:
        raise PriorityMismatch(
            f"the integer value of priority ({given}) must not be provided in pod spec; priority "
            f"admission controller computed {priority} from the given PriorityClass name"
        )
    given_policy = spec.get("preemptionPolicy")
    if policy is not None and given_policy is not None and given_policy != policy:
        raise PriorityMismatch(
            f"the string value of PreemptionPolicy ({given_policy}) must not be provided in pod spec; "
            f"priority admission controller computed {policy} from the given PriorityClass name"
        )
    patch: list[PatchOp] = []
    if class_name != (spec.get("priorityClassName") or ""):
        patch.append({"op": "add", "path": "/spec/priorityClassName", "value": class_name})
    if given != priority:
        patch.append({"op": "add", "path": "/spec/priority", "value": priority})
    if policy is not None and given_policy != policy:
        patch.append({"op": "add", "path": "/spec/preemptionPolicy", "value": policy})
    return patch


def update_patch(spec: Object, old_spec: Object) -> list[PatchOp]:
    """On update, the priority and policy the pod was created with, where the new body omits them."""
    patch: list[PatchOp] = []
    for field in ("priority", "preemptionPolicy"):
        if spec.get(field) is None and old_spec.get(field) is not None:
            patch.append({"op": "add", "path": f"/spec/{field}", "value": old_spec[field]})
    return patch


def _is_priority_class(a: Attributes) -> bool:
    return a.group == GROUP and a.resource == PRIORITY_CLASSES


class Priority(Plugin):
    name = "Priority"
    mutating = True
    validating = True

    def handles(self, a: Attributes) -> bool:
        if a.subresource or a.object is None or a.operation not in (CREATE, UPDATE):
            return False
        return a.is_pod() or _is_priority_class(a)

    async def admit(self, a: Attributes, cluster: ClusterView, scope: Scope) -> list[PatchOp]:
        if not a.is_pod() or a.object is None:
            return []
        spec = a.object.get("spec")
        if not isinstance(spec, dict):
            return []
        if a.operation == UPDATE:
            old_spec = section(a.old_object, "spec")
            return update_patch(spec, old_spec) if isinstance(old_spec, dict) else []
        class_name = str(spec.get("priorityClassName") or "")
        found: Object | None = None
        default: Object | None = None
        if class_name:
            found = await cluster.get(GROUP, PRIORITY_CLASSES, "", class_name)
        else:
            default = default_priority_class(cluster.cached_list(GROUP, PRIORITY_CLASSES, None))
        try:
            name, priority, policy = resolve(class_name, found, default)
            return pod_patch(spec, name, priority, policy)
        except (ClassNotFound, PriorityMismatch) as error:
            raise forbidden(a, str(error)) from None

    async def validate(self, a: Attributes, cluster: ClusterView, scope: Scope) -> None:
        if not _is_priority_class(a) or a.object is None or a.object.get("globalDefault") is not True:
            return
        existing = default_priority_class(cluster.cached_list(GROUP, PRIORITY_CLASSES, None))
        if existing is None:
            return
        # A second default may not be created, nor another class marked default while one exists.
        if a.operation == CREATE or _name(existing) != _name(a.object):
            raise forbidden(
                a, f"PriorityClass {_name(existing)} is already marked as default. Only one default can exist"
            )


__all__ = [
    "ClassNotFound",
    "Priority",
    "PriorityMismatch",
    "default_priority_class",
    "pod_patch",
    "resolve",
    "update_patch",
]
