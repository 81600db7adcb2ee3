"""The root CA certificate publisher: ``kube-root-ca.crt`` with upstream's data and description in every
namespace, recreated when deleted, reverted when edited, never created in a terminating namespace."""

from __future__ import annotations

import asyncio
from pathlib import Path

from controlplane.api.meta import Object
from controlplane.client.cache import Indexer
from controlplane.client.informer import ResourceEventHandlerFuncs
from controlplane.client.manager import Manager
from controlplane.client.reconciler import Request
from controlplane.components.controllers import rootcacertpublisher
from controlplane.components.controllers.kinds import CONFIGMAPS, NAMESPACES
from controlplane.components.controllers.rootcacertpublisher import (
    DESCRIPTION,
    DESCRIPTION_ANNOTATION,
    ROOT_CA_CONFIGMAP_NAME,
    RootCACertPublisher,
    configmap_namespace,
    corrected,
    needs_update,
    root_ca_configmap,
)
from tests.controlplane.components.controllers.test_garbagecollector import controller_manager
from tests.support.inprocess import in_process_cluster, wait_for

CA = "-----BEGIN CERTIFICATE-----\nMIIBlab\n-----END CERTIFICATE-----\n"
#: Upstream's text, word for word (publisher.go ``Description``).
UPSTREAM_DESCRIPTION = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints "
    "such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across "
    "distributions of Kubernetes clusters."
)


def _add(manager: Manager) -> object:
    return rootcacertpublisher.add_to_manager(manager, root_ca=CA)


def _published(items: list[Object]) -> Object | None:
    return next((cm for cm in items if cm["metadata"]["name"] == ROOT_CA_CONFIGMAP_NAME), None)


def _is_published(items: list[Object]) -> bool:
    """The ConfigMap is there with exactly the CA and upstream's description."""
    cm = _published(items)
    return (
        cm is not None
        and cm.get("data") == {"ca.crt": CA}
        and (cm["metadata"].get("annotations") or {}).get(DESCRIPTION_ANNOTATION) == DESCRIPTION
    )


# -- pure ------------------------------------------------------------------------------------------


def test_the_description_is_upstreams_word_for_word() -> None:
    assert DESCRIPTION == UPSTREAM_DESCRIPTION
    assert DESCRIPTION_ANNOTATION == "kubernetes.io/description"
    assert ROOT_CA_CONFIGMAP_NAME == "kube-root-ca.crt"


def test_the_configmap_to_create_holds_only_the_ca_and_the_description() -> None:
    assert root_ca_configmap("shop", CA) == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "kube-root-ca.crt",
            "namespace": "shop",
            "annotations": {"kubernetes.io/description": UPSTREAM_DESCRIPTION},
        },
        "data": {"ca.crt": CA},
    }


def test_only_the_root_ca_configmap_maps_to_its_namespace() -> None:
    assert configmap_namespace({"metadata": {"name": "kube-root-ca.crt", "namespace": "shop"}}) == [
        Request("", "shop")
    ]
    assert configmap_namespace({"metadata": {"name": "settings", "namespace": "shop"}}) == []
    assert configmap_namespace({"metadata": {"name": "kube-root-ca.crt"}}) == []


def test_an_update_is_needed_when_data_differs_or_the_description_is_empty() -> None:
    good = root_ca_configmap("shop", CA)
    assert not needs_update(good, CA)
    assert needs_update(good, "another CA")
    assert needs_update({**good, "data": {"ca.crt": CA, "extra": "x"}}, CA), "an extra key is a difference"
    assert needs_update({**good, "data": None}, CA)
    no_description = {**good, "metadata": {**good["metadata"], "annotations": {DESCRIPTION_ANNOTATION: ""}}}
    assert needs_update(no_description, CA)
    # Any non-empty description will do, as upstream (``len(...) > 0``).
    other_text = {**good, "metadata": {**good["metadata"], "annotations": {DESCRIPTION_ANNOTATION: "mine"}}}
    assert not needs_update(other_text, CA)


def test_the_correction_replaces_data_and_description_and_keeps_the_rest() -> None:
    edited = {
        "metadata": {
            "name": "kube-root-ca.crt",
            "namespace": "shop",
            "resourceVersion": "42",
            "labels": {"team": "a"},
            "annotations": {"note": "kept", DESCRIPTION_ANNOTATION: ""},
        },
        "data": {"ca.crt": "tampered", "extra": "dropped"},
    }
    fixed = corrected(edited, CA)
    assert fixed["data"] == {"ca.crt": CA}
    assert fixed["metadata"]["annotations"] == {"note": "kept", DESCRIPTION_ANNOTATION: DESCRIPTION}
    assert fixed["metadata"]["labels"] == {"team": "a"}
    assert fixed["metadata"]["resourceVersion"] == "42", "the update must be conditional on what was read"
    assert edited["data"] == {"ca.crt": "tampered", "extra": "dropped"}, "the cached object was changed"


# -- against an API server -------------------------------------------------------------------------


async def test_every_namespace_gets_the_configmap_back_when_deleted_or_edited(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster, controller_manager(cluster, _add):
        for system in ("default", "kube-system", "kube-public", "kube-node-lease"):
            await wait_for(cluster.resource("", "v1", "configmaps", system), _is_published)

        await cluster.resource("", "v1", "namespaces").create({"metadata": {"name": "shop"}})
        configmaps = cluster.resource("", "v1", "configmaps", "shop")
        first = _published(await wait_for(configmaps, _is_published))
        assert first is not None

        await configmaps.delete(ROOT_CA_CONFIGMAP_NAME)
        again = await wait_for(
            configmaps,
            lambda items: _is_published(items) and _published(items) != first,  # a new uid
        )
        second = _published(again)
        assert second is not None and second["metadata"]["uid"] != first["metadata"]["uid"]

        edit = {
            **second,
            "metadata": {**second["metadata"], "annotations": {"note": "mine"}},
            "data": {"ca.crt": "tampered", "extra": "x"},
        }
        edited = await configmaps.update(edit)
        edited_rv = int(edited["metadata"]["resourceVersion"])

        def reverted(items: list[Object]) -> bool:
            cm = _published(items)
            return (
                _is_published(items) and cm is not None and int(cm["metadata"]["resourceVersion"]) > edited_rv
            )

        fixed = _published(await wait_for(configmaps, reverted))
        assert fixed is not None
        assert fixed["data"] == {"ca.crt": CA}, "the edit of data was not reverted"
        assert fixed["metadata"]["annotations"] == {"note": "mine", DESCRIPTION_ANNOTATION: DESCRIPTION}


async def test_other_configmaps_are_left_alone(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster, controller_manager(cluster, _add):
        configmaps = cluster.resource("", "v1", "configmaps", "default")
        await wait_for(configmaps, _is_published)
        created = await configmaps.create({"metadata": {"name": "settings"}, "data": {"ca.crt": "mine"}})
        # Queue a look at "default" after the create: once its ConfigMap is reverted, the publisher has
        # seen everything up to then, and "settings" must be as it was.
        published = _published((await configmaps.list())["items"])
        assert published is not None
        await configmaps.update({**published, "data": {"ca.crt": "tampered"}})
        await wait_for(configmaps, _is_published)
        settings = await configmaps.get("settings")
        assert settings["data"] == {"ca.crt": "mine"}
        assert settings["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


async def test_a_terminating_namespace_is_left_alone_without_error(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster:
        namespaces = cluster.resource("", "v1", "namespaces")
        await namespaces.create({"metadata": {"name": "closing"}})
        configmaps = cluster.resource("", "v1", "configmaps", "closing")
        async with controller_manager(cluster, _add) as manager:
            await wait_for(configmaps, _is_published)
            terminating = asyncio.Event()
            cm_deleted = asyncio.Event()

            def on_namespace(old: Object, new: Object) -> None:
                if new["metadata"]["name"] == "closing" and new["status"].get("phase") == "Terminating":
                    terminating.set()

            def on_cm_deleted(obj: object) -> None:
                cm_deleted.set()

            manager.informer_for(NAMESPACES).add_event_handler(
                ResourceEventHandlerFuncs(update_func=on_namespace)
            )
            manager.informer_for(CONFIGMAPS).add_event_handler(
                ResourceEventHandlerFuncs(delete_func=on_cm_deleted)
            )

            # Terminating, and held so by its "kubernetes" finalizer: no namespace controller runs here.
            await namespaces.delete("closing")
            async with asyncio.timeout(10):
                await terminating.wait()
            await configmaps.delete(ROOT_CA_CONFIGMAP_NAME)
            async with asyncio.timeout(10):
                await cm_deleted.wait()
            # The caches show both; a reconcile of the namespace (the running controller's, and this
            # one) creates nothing and succeeds.
            publisher = RootCACertPublisher(manager, root_ca=CA)
            result = await publisher.reconcile(Request("", "closing"))
            assert result.requeue is False

            # A cache that is behind (it still shows the namespace Active): the create is refused with
            # the cause NamespaceTerminating, which is not an error (upstream's HasStatusCause check).
            behind = Indexer()
            behind.add({"metadata": {"name": "closing"}, "status": {"phase": "Active"}})
            behind.add({"metadata": {"name": "gone"}, "status": {"phase": "Active"}})
            publisher.namespaces = behind
            assert (await publisher.reconcile(Request("", "closing"))).requeue is False
            # ... and one that still shows a deleted namespace: NotFound is not an error either.
            assert (await publisher.reconcile(Request("", "gone"))).requeue is False

            assert (await configmaps.list())["items"] == []
