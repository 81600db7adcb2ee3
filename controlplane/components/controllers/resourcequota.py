"""The resource quota controller: keep each ResourceQuota's ``status`` saying what its namespace uses.

A ResourceQuota's ``spec.hard`` is the limit; its ``status`` is what ``kubectl describe quota`` and
``kubectl get quota`` show: ``status.hard`` (the limits in force) and ``status.used`` (what the
namespace's objects count against each), as ``pods: 3/10``. This controller (upstream
``pkg/controller/resourcequota/resource_quota_controller.go``, ``syncResourceQuota``) computes them:
for every name in ``spec.hard`` that an evaluator knows (``controlplane/api/quota.py``), the sum over
the namespace's objects of the resource it counts, zero where nothing counts, and writes the status
only when it differs (``UpdateStatus``, so a concurrent change of the spec makes it try again).

It is woken by a quota whose ``spec.hard`` changed (its own status writes do not count), and by any
change to an object its namespace's quotas count: upstream's "replenishment" reacts to deletions and
to pods that finished, because its admission plugin adds each new object's usage to ``status.used`` at
once; this lab's admission counts usage without writing it (``apiserver/admission/resourcequota.py``),
so the controller catches creations too. Quota scopes (``Terminating``, ``BestEffort``,
``scopeSelector``) are not modelled: a scoped quota counts every object, as admission does.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from typing import Any, Final

from controlplane.api import quota
from controlplane.client.cache import NAMESPACE_INDEX, DeletedFinalStateUnknown, Indexer
from controlplane.client.errors import Conflict, NotFound
from controlplane.client.manager import Kind, Manager
from controlplane.client.reconciler import Controller, Request, Result
from controlplane.client.rest import RESTClient
from controlplane.components.controllers import kinds

logger = logging.getLogger(__name__)

COMPONENT: Final = "resourcequota-controller"
RESOURCE_QUOTAS: Final = Kind("", "v1", "resourcequotas", "ResourceQuota")
SECRETS: Final = Kind("", "v1", "secrets", "Secret")

#: The resources whose usage a quota can name, by (group, plural): the evaluators' resources and the
#: built-in kinds ``count/<resource>.<group>`` names most often. A ``count/`` name of any other
#: resource is reported as used by nothing it can see (zero), never left out.
COUNTED: Final[dict[tuple[str, str], Kind]] = {
    (kind.group, kind.plural): kind
    for kind in (
        kinds.PODS,
        kinds.SERVICES,
        kinds.CONFIGMAPS,
        SECRETS,
        kinds.PERSISTENT_VOLUME_CLAIMS,
        kinds.REPLICATION_CONTROLLERS,
        RESOURCE_QUOTAS,
        kinds.SERVICEACCOUNTS,
        kinds.ENDPOINTS,
        kinds.DEPLOYMENTS,
        kinds.REPLICASETS,
        kinds.DAEMONSETS,
        kinds.STATEFULSETS,
        kinds.JOBS,
        kinds.CRONJOBS,
        kinds.PODDISRUPTIONBUDGETS,
        kinds.HORIZONTAL_POD_AUTOSCALERS,
    )
}


def status_of(
    resource_quota: Mapping[str, Any], objects: dict[tuple[str, str], list[dict[str, Any]]]
) -> dict[str, Any]:
    """The ``status`` ``syncResourceQuota`` writes: ``hard`` as the spec says, ``used`` per hard name
    an evaluator knows (pure)."""
    hard = dict((resource_quota.get("spec") or {}).get("hard") or {})
    used = quota.used(list(hard), objects)
    return {"hard": hard, "used": {name: str(amount) for name, amount in sorted(used.items())}}


def _namespace(obj: Mapping[str, Any] | DeletedFinalStateUnknown) -> str:
    if isinstance(obj, DeletedFinalStateUnknown):
        return obj.key.partition("/")[0] if "/" in obj.key else ""
    return str((obj.get("metadata") or {}).get("namespace") or "")


class ResourceQuotaReconciler:
    """One ResourceQuota per reconcile: count, then write its status if it changed."""

    def __init__(
        self, client: RESTClient, *, quotas: Indexer, counted: dict[tuple[str, str], Indexer]
    ) -> None:
        self.client = client
        self.quotas = quotas
        self.counted = counted

    async def reconcile(self, request: Request) -> Result:
        cached = self.quotas.get_by_key(request.key)
        if cached is None or (cached.get("metadata") or {}).get("deletionTimestamp"):
            return Result()
        objects = {
            resource: indexer.by_index(NAMESPACE_INDEX, request.namespace)
            for resource, indexer in self.counted.items()
        }
        status = status_of(cached, objects)
        current = cached.get("status") or {}
        if status == {"hard": current.get("hard"), "used": current.get("used")}:
            return Result()
        quotas = self.client.resource("", "v1", "resourcequotas", request.namespace)
        updated = {**cached, "status": status}
        with contextlib.suppress(NotFound):
            try:
                await quotas.update_status(updated)
            except Conflict:  # its spec changed meanwhile: the informer brings it, and us back
                return Result(requeue=True)
        return Result()

    def quotas_in_namespace_of(self, obj: Mapping[str, Any]) -> list[Request]:
        """Every quota of the namespace a counted object changed in (its replenishment)."""
        namespace = _namespace(obj)
        if not namespace:
            return []
        return [Request.for_object(q) for q in self.quotas.by_index(NAMESPACE_INDEX, namespace)]


def add_to_manager(manager: Manager) -> Controller:
    """Build the controller on ``manager``: ResourceQuotas, and every resource they can count."""
    counted = {resource: manager.cache(kind) for resource, kind in COUNTED.items()}
    reconciler = ResourceQuotaReconciler(
        manager.client, quotas=manager.cache(RESOURCE_QUOTAS), counted=counted
    )
    controller = manager.new_controller("resourcequota", reconciler, for_=RESOURCE_QUOTAS)
    for resource, kind in COUNTED.items():
        if resource != (RESOURCE_QUOTAS.group, RESOURCE_QUOTAS.plural):
            controller.watch(manager.informer_for(kind), reconciler.quotas_in_namespace_of)
    return controller


__all__ = ["COMPONENT", "COUNTED", "ResourceQuotaReconciler", "add_to_manager", "status_of"]
