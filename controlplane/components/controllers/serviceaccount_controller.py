"""The service-account controller: every active namespace has a ServiceAccount called ``default``.

A pod that names no ServiceAccount runs as ``default`` of its namespace, so that ServiceAccount must
exist as soon as the namespace does, and come back if someone deletes it. That is all this controller
does, and it shows the shape of the simplest level-triggered controller there is:

- it reconciles **namespaces** (``for_``): a new namespace, or any change to one, is a look at it;
- it also watches **serviceaccounts**, mapping each to *its namespace*: deleting ``default`` is
  noticed, and the namespace looked at again (this is not ownership: ServiceAccounts carry no
  ``ownerReferences``; a custom map from object to request does the job);
- the reconcile reads the namespace and the ServiceAccounts from the shared caches, and creates
  what is missing. ``AlreadyExists`` means someone was quicker: fine.

A namespace that is not ``Active`` is left alone: a ``Terminating`` namespace is being emptied by the
namespace controller, and creating in it would fight that (the API server refuses it anyway, with the
cause ``NamespaceTerminating``, which is ignored here as upstream does).

Upstream: ``pkg/controller/serviceaccount/serviceaccounts_controller.go`` (``syncNamespace``,
``DefaultServiceAccountsControllerOptions``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from controlplane.client.cache import NAMESPACE_INDEX
from controlplane.client.errors import AlreadyExists, APIError
from controlplane.client.manager import Manager
from controlplane.client.reconciler import Controller, Request, Result
from controlplane.components.controllers.kinds import NAMESPACES, SERVICEACCOUNTS

#: The ServiceAccounts every namespace gets (``DefaultServiceAccountsControllerOptions``).
SERVICE_ACCOUNTS_TO_ENSURE = ("default",)
#: The Status cause of a create refused in a terminating namespace (``v1.NamespaceTerminatingCause``).
NAMESPACE_TERMINATING_CAUSE = "NamespaceTerminating"


def namespace_of(obj: Mapping[str, Any]) -> list[Request]:
    """Map a ServiceAccount to its namespace's request (a cluster-scoped key: the namespace's name)."""
    namespace = (obj.get("metadata") or {}).get("namespace")
    return [Request("", str(namespace))] if namespace else []


def missing_service_accounts(
    namespace: Mapping[str, Any] | None,
    existing: set[str],
    wanted: Sequence[str] = SERVICE_ACCOUNTS_TO_ENSURE,
) -> list[str]:
    """The ServiceAccounts to create in ``namespace`` (none unless it exists and is Active)."""
    if namespace is None or (namespace.get("status") or {}).get("phase") != "Active":
        return []
    return [name for name in wanted if name not in existing]


class ServiceAccountsController:
    """The reconciler: ensure the ServiceAccounts of ``SERVICE_ACCOUNTS_TO_ENSURE`` in each namespace."""

    def __init__(
        self, manager: Manager, *, service_accounts: Sequence[str] = SERVICE_ACCOUNTS_TO_ENSURE
    ) -> None:
        self.namespaces = manager.cache(NAMESPACES)
        self.service_accounts = manager.cache(SERVICEACCOUNTS)
        self.client = manager.client
        self.wanted = tuple(service_accounts)

    async def reconcile(self, request: Request) -> Result:
        name = request.name
        namespace = self.namespaces.get_by_key(name)
        existing = {
            str(sa["metadata"]["name"]) for sa in self.service_accounts.by_index(NAMESPACE_INDEX, name)
        }
        failures: list[APIError] = []
        for sa_name in missing_service_accounts(namespace, existing, self.wanted):
            body = {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": sa_name, "namespace": name},
            }
            try:
                await self.client.resource("", "v1", "serviceaccounts", name).create(body)
            except AlreadyExists:
                continue
            except APIError as error:
                # A namespace that started terminating since the cache saw it: nothing to do.
                if any(cause.type == NAMESPACE_TERMINATING_CAUSE for cause in error.causes):
                    continue
                failures.append(error)
        if failures:
            raise failures[0]
        return Result()


def add_to_manager(manager: Manager, *, workers: int = 1) -> Controller:
    """Add the service-account controller (for namespaces, watching serviceaccounts) to ``manager``."""
    controller = manager.new_controller(
        "serviceaccount", ServiceAccountsController(manager), for_=NAMESPACES, workers=workers
    )
    controller.watch(manager.informer_for(SERVICEACCOUNTS), namespace_of)
    return controller


__all__ = [
    "NAMESPACES",
    "SERVICEACCOUNTS",
    "SERVICE_ACCOUNTS_TO_ENSURE",
    "ServiceAccountsController",
    "add_to_manager",
    "missing_service_accounts",
    "namespace_of",
]
