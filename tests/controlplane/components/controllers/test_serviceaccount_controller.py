"""The service-account controller: a ``default`` ServiceAccount in every active namespace, recreated
when deleted, never created in a terminating one."""

from __future__ import annotations

import asyncio
from pathlib import Path

from controlplane.api.meta import Object
from controlplane.client.informer import ResourceEventHandlerFuncs
from controlplane.client.reconciler import Request
from controlplane.components.controllers import serviceaccount_controller
from controlplane.components.controllers.serviceaccount_controller import (
    SERVICEACCOUNTS,
    ServiceAccountsController,
    missing_service_accounts,
    namespace_of,
)
from tests.controlplane.components.controllers.test_garbagecollector import controller_manager
from tests.support.inprocess import in_process_cluster, wait_for


def test_only_an_active_namespace_is_missing_service_accounts() -> None:
    active = {"metadata": {"name": "shop"}, "status": {"phase": "Active"}}
    terminating = {"metadata": {"name": "shop"}, "status": {"phase": "Terminating"}}
    assert missing_service_accounts(active, set()) == ["default"]
    assert missing_service_accounts(active, {"default", "builder"}) == []
    assert missing_service_accounts(terminating, set()) == []
    assert missing_service_accounts(None, set()) == []
    assert missing_service_accounts(active, {"default"}, ["default", "builder"]) == ["builder"]


def test_a_service_account_maps_to_its_namespace() -> None:
    assert namespace_of({"metadata": {"name": "default", "namespace": "shop"}}) == [Request("", "shop")]
    assert namespace_of({"metadata": {"name": "x"}}) == []


def _has_default(items: list[Object]) -> bool:
    return any(sa["metadata"]["name"] == "default" for sa in items)


async def test_every_namespace_gets_a_default_service_account_back_when_deleted(tmp_path: Path) -> None:
    async with (
        in_process_cluster(tmp_path) as cluster,
        controller_manager(cluster, serviceaccount_controller.add_to_manager),
    ):
        for system in ("default", "kube-system", "kube-public", "kube-node-lease"):
            await wait_for(cluster.resource("", "v1", "serviceaccounts", system), _has_default)

        await cluster.resource("", "v1", "namespaces").create({"metadata": {"name": "shop"}})
        accounts = cluster.resource("", "v1", "serviceaccounts", "shop")
        [first] = await wait_for(accounts, _has_default)

        await accounts.delete("default")
        [second] = await wait_for(
            accounts,
            lambda items: any(sa["metadata"]["uid"] != first["metadata"]["uid"] for sa in items),
        )
        assert second["metadata"]["name"] == "default"


async def test_no_service_account_is_created_in_a_terminating_namespace(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster:
        namespaces = cluster.resource("", "v1", "namespaces")
        await namespaces.create({"metadata": {"name": "closing"}})
        accounts = cluster.resource("", "v1", "serviceaccounts", "closing")
        async with controller_manager(cluster, serviceaccount_controller.add_to_manager) as manager:
            await wait_for(accounts, _has_default)
            terminating = asyncio.Event()
            sa_deleted = asyncio.Event()

            def on_namespace(old: Object, new: Object) -> None:
                if new["metadata"]["name"] == "closing" and new["status"].get("phase") == "Terminating":
                    terminating.set()

            def on_sa_deleted(obj: object) -> None:
                sa_deleted.set()

            manager.informer_for(serviceaccount_controller.NAMESPACES).add_event_handler(
                ResourceEventHandlerFuncs(update_func=on_namespace)
            )
            manager.informer_for(SERVICEACCOUNTS).add_event_handler(
                ResourceEventHandlerFuncs(delete_func=on_sa_deleted)
            )

            await namespaces.delete("closing")  # Terminating: held by its "kubernetes" finalizer
            async with asyncio.timeout(10):
                await terminating.wait()
            await accounts.delete("default")
            async with asyncio.timeout(10):
                await sa_deleted.wait()
            # The caches now show both; a reconcile of the namespace (the running controller's, and
            # this one) creates nothing.
            result = await ServiceAccountsController(manager).reconcile(Request("", "closing"))
            assert result.requeue is False
            assert (await accounts.list())["items"] == []
