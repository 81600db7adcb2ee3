"""The built-in PriorityClasses, created by the API server itself when it starts.

Every cluster has two classes whose values are above anything a user may define:
``system-node-critical`` (2000001000: pods that must stay on their node, such as a node's own
daemons) and ``system-cluster-critical`` (2000000000: pods the cluster needs, such as DNS, that may
move to another node). kube-apiserver makes sure they exist in its post-start hook
``scheduling/bootstrap-system-priority-classes`` (``pkg/registry/scheduling/rest/storage_scheduling.go``,
``AddSystemPriorityClasses``): it creates each one that is missing and leaves one that exists alone.
Like the system namespaces, these are the server's own writes to storage: no request, no admission.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from controlplane.api.strategies.scheduling import (
    GROUP,
    SYSTEM_PRIORITY_CLASSES,
    VERSION,
    system_priority_class,
)
from controlplane.apiserver import errors
from controlplane.apiserver.requestscope import RequestScope

if TYPE_CHECKING:
    from controlplane.apiserver.registry import Registry

#: The post-start hook's name, as ``/readyz`` lists it.
SYSTEM_PRIORITY_CLASSES_HOOK: Final = "scheduling/bootstrap-system-priority-classes"

SYSTEM_PRIORITY_CLASSES_SCOPE: Final = RequestScope.unadmitted(
    reason=f"{SYSTEM_PRIORITY_CLASSES_HOOK}: the server's own priority classes"
)


async def ensure_system_priority_classes(registries: Mapping[tuple[str, str, str], Registry]) -> None:
    """Create the built-in classes that do not exist yet (an existing one is left as it is)."""
    registry = registries.get((GROUP, VERSION, "priorityclasses"))
    if registry is None:
        return
    for name, value, description in SYSTEM_PRIORITY_CLASSES:
        with contextlib.suppress(errors.StatusError):  # already there
            await registry.create(
                system_priority_class(name, value, description), "", scope=SYSTEM_PRIORITY_CLASSES_SCOPE
            )


__all__ = ["SYSTEM_PRIORITY_CLASSES_HOOK", "ensure_system_priority_classes"]
