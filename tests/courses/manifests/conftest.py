"""A lab in this test's event loop, made this process's lab, and identities in its demo cluster.

The manifest form acts on a cluster the way the web app does, through ``courses.gateway``; these
fixtures stand in for the sandbox service (``courses.sandboxes``), which makes a student's own
cluster: a ``SandboxAccess`` to the demo cluster with a token of a cluster admin (``admin``), or of a
user nobody has given any rights (``stranger``). The cluster has no components: the API server, with
its RBAC, admission and validation, is what the form talks to.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from pytest_django import Settings

from controlplane.runtime import Lab, LabConfig
from courses import gateway
from courses.manifests import discovery
from courses.sandboxes.services import SandboxAccess
from tests.support.lab import active_lab


@pytest.fixture
async def lab(tmp_path: Path, settings: Settings) -> AsyncIterator[Lab]:
    settings.KUBELAB_DATA_DIR = tmp_path
    discovery.forget()
    async with active_lab(LabConfig(data_dir=tmp_path, components=(), nodes=0)) as running:
        yield running
    discovery.forget()


def access_for(lab: Lab, user: str, *groups: str) -> SandboxAccess:
    token = lab.cluster("demo").tokens.issue(user, groups)
    return SandboxAccess(cluster="demo", user=user, token=token)


@pytest.fixture
def admin(lab: Lab) -> SandboxAccess:
    """A cluster admin of the demo cluster (as a student is of their sandbox)."""
    return access_for(lab, "student:alice", "system:masters")


@pytest.fixture
def stranger(lab: Lab) -> SandboxAccess:
    """A user of the demo cluster with no rights beyond discovery."""
    return access_for(lab, "bob")


async def snapshot(access: SandboxAccess, path: str = "/api/v1/configmaps") -> dict[str, str]:
    """Every object of a list (all namespaces but kube-system and kube-public, whose objects the
    cluster made and keeps: its addons, cluster-info and its signatures), by namespace/name, with its
    resourceVersion."""
    async with gateway.api_client(cluster=access.cluster, token=access.token) as client:
        response = await client.get(path)
    assert response.status_code == 200, response.text
    return {
        f"{item['metadata'].get('namespace', '')}/{item['metadata']['name']}": item["metadata"][
            "resourceVersion"
        ]
        for item in response.json()["items"]
        if item["metadata"].get("namespace") not in ("kube-system", "kube-public")
    }


async def read(access: SandboxAccess, path: str) -> dict[str, object]:
    async with gateway.api_client(cluster=access.cluster, token=access.token) as client:
        response = await client.get(path)
    assert response.status_code == 200, response.text
    data: dict[str, object] = response.json()
    return data
