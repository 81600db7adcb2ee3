"""The resource quota controller: a quota's status says what its namespace uses, and follows it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from controlplane.api.meta import Object
from controlplane.components.controllers import resourcequota
from controlplane.components.controllers.resourcequota import status_of
from tests.controlplane.components.controllers.test_garbagecollector import controller_manager
from tests.support.inprocess import in_process_cluster, wait_for


def _pod(name: str, cpu: str, phase: str = "Running") -> Object:
    return {
        "metadata": {"name": name, "namespace": "team"},
        "spec": {
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}, "limits": {"cpu": "1"}}}]
        },
        "status": {"phase": phase},
    }


def test_the_status_counts_every_hard_name_and_masks_the_rest() -> None:
    quota = {
        "spec": {
            "hard": {
                "pods": "10",
                "requests.cpu": "2",
                "limits.cpu": "4",
                "count/pods": "20",
                "configmaps": "5",
                "count/deployments.apps": "3",
                "example.com/gpus": "1",
            }
        }
    }
    objects: dict[tuple[str, str], list[dict[str, Any]]] = {
        ("", "pods"): [_pod("a", "250m"), _pod("b", "500m"), _pod("done", "1", phase="Succeeded")],
        ("", "configmaps"): [{"metadata": {"name": "c"}}],
    }
    assert status_of(quota, objects) == {
        "hard": quota["spec"]["hard"],
        # a finished pod still counts in count/pods, not in pods or compute; nothing counts gpus
        "used": {
            "configmaps": "1",
            "count/deployments.apps": "0",
            "count/pods": "3",
            "limits.cpu": "2",
            "pods": "2",
            "requests.cpu": "750m",
        },
    }


async def test_the_quota_status_follows_what_the_namespace_holds(tmp_path: Path) -> None:
    async with in_process_cluster(tmp_path) as cluster:
        namespaces = cluster.resource("", "v1", "namespaces")
        await namespaces.create({"metadata": {"name": "team"}})
        quotas = cluster.resource("", "v1", "resourcequotas", "team")
        configmaps = cluster.resource("", "v1", "configmaps", "team")
        await configmaps.create({"metadata": {"name": "one"}})
        await quotas.create({"metadata": {"name": "q"}, "spec": {"hard": {"configmaps": "5", "pods": "10"}}})

        def used(expected: dict[str, str]) -> Any:
            def done(items: list[Object]) -> bool:
                return bool(items) and items[0].get("status", {}).get("used") == expected

            return done

        async with controller_manager(cluster, resourcequota.add_to_manager):
            [quota] = await wait_for(quotas, used({"configmaps": "1", "pods": "0"}))
            assert quota["status"]["hard"] == {"configmaps": "5", "pods": "10"}
            await configmaps.create({"metadata": {"name": "two"}})
            await wait_for(quotas, used({"configmaps": "2", "pods": "0"}))
            await configmaps.delete("one")
            await wait_for(quotas, used({"configmaps": "1", "pods": "0"}))
            # a new hard limit is counted at once, and status.hard follows the spec
            await quotas.patch("q", {"spec": {"hard": {"configmaps": "5", "pods": "10", "secrets": "3"}}})
            [quota] = await wait_for(quotas, used({"configmaps": "1", "pods": "0", "secrets": "0"}))
            assert quota["status"]["hard"]["secrets"] == "3"
