"""Namespace termination on the server: DELETE marks ``Terminating``, ``/finalize`` releases it.

``controlplane/apiserver/handlers/finalize.py`` (upstream's ``pkg/registry/core/namespace/storage``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from controlplane.client.errors import Conflict, Invalid, NotFound
from tests.support.inprocess import InProcessCluster, in_process_cluster

NAMESPACES_KEY = ("", "v1", "namespaces")


async def finalize_namespace(cluster: InProcessCluster, namespace: dict[str, Any]) -> dict[str, Any]:
    path = cluster.resource("", "v1", "namespaces").path(namespace["metadata"]["name"], "finalize")
    return await cluster.client.request_json("PUT", path, body=namespace)


async def test_deleting_a_namespace_marks_it_terminating_until_its_finalizers_are_gone(
    tmp_path: Path,
) -> None:
    async with in_process_cluster(tmp_path) as cluster:
        namespaces = cluster.resource("", "v1", "namespaces")
        await namespaces.create({"metadata": {"name": "shop"}})

        marked = await namespaces.delete("shop")
        assert marked["status"]["phase"] == "Terminating"
        assert marked["metadata"]["deletionTimestamp"]
        assert marked["spec"]["finalizers"] == ["kubernetes"]
        # Again: nothing changes while the finalizer is there.
        again = await namespaces.delete("shop")
        assert again["metadata"]["resourceVersion"] == marked["metadata"]["resourceVersion"]

        # A status update of the terminating namespace must not finish the deletion.
        current = await namespaces.get("shop")
        current["status"]["conditions"] = [
            {
                "type": "NamespaceContentRemaining",
                "status": "True",
                "reason": "SomeResourcesRemain",
                "message": "Some resources are remaining: pods. has 1 resource instances",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ]
        updated = await namespaces.update_status(current)
        assert updated["status"]["conditions"][0]["reason"] == "SomeResourcesRemain"
        # An ordinary update cannot drop the finalizer ...
        updated["spec"]["finalizers"] = []
        assert (await namespaces.update(updated))["spec"]["finalizers"] == ["kubernetes"]

        # ... the finalize subresource can, and then the namespace is gone.
        latest = await namespaces.get("shop")
        latest["spec"]["finalizers"] = []
        latest["metadata"]["labels"] = {"changed": "no"}  # finalize changes spec.finalizers only
        answer = await finalize_namespace(cluster, latest)
        assert answer["spec"]["finalizers"] == []
        assert answer["metadata"]["labels"].get("changed") is None
        with pytest.raises(NotFound):
            await namespaces.get("shop")


async def test_finalize_keeps_an_active_namespace_and_validates_names(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster:
        namespaces = cluster.resource("", "v1", "namespaces")
        ns = await namespaces.create({"metadata": {"name": "shop"}})
        ns["spec"]["finalizers"] = ["example.com/hold"]
        answer = await finalize_namespace(cluster, ns)
        assert answer["spec"]["finalizers"] == ["example.com/hold"]
        assert answer["status"]["phase"] == "Active"
        ns = await namespaces.get("shop")
        ns["spec"]["finalizers"] = ["not a finalizer!"]
        with pytest.raises(Invalid):
            await finalize_namespace(cluster, ns)


async def test_a_namespace_without_finalizers_and_a_uid_precondition(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster:
        namespaces = cluster.resource("", "v1", "namespaces")
        ns = await namespaces.create({"metadata": {"name": "shop"}})
        with pytest.raises(Conflict, match="Precondition failed: UID in precondition: wrong"):
            await namespaces.delete("shop", preconditions={"uid": "wrong"})
        await namespaces.delete("shop", preconditions={"uid": ns["metadata"]["uid"]})
        marked = await namespaces.get("shop")
        marked["spec"]["finalizers"] = []
        await finalize_namespace(cluster, marked)
        with pytest.raises(NotFound):
            await namespaces.delete("shop")
