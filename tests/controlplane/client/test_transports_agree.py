"""Both transports behave the same: one scenario over real HTTPS (a live lab) and in-process.

The HTTPS side is a running ``manage.py runlab`` reached with its kubeconfig (server URL with the
cluster path, the cluster CA, a bearer token), exactly as kubectl reaches it; the in-process side
calls an API server's ASGI app directly. The same operations must produce the same watch events
and the same typed errors.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controlplane.client.config import Config
from controlplane.client.errors import APIError
from controlplane.client.rest import PatchType, RESTClient
from tests.controlplane.client.conftest import Cluster, configmap
from tests.support.lab import LiveLab

NAMESPACE = "transport-parity"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveLab]:
    live = LiveLab(Path(tmp_path_factory.mktemp("lab")))
    try:
        yield live
    finally:
        live.stop()


async def scenario(client: RESTClient) -> list[Any]:
    """Writes, a watch of them, and the failures; what happened, without revisions or uids."""
    await client.resource("", "v1", "namespaces").create(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    )
    cms = client.resource("", "v1", "configmaps", NAMESPACE)
    start = (await cms.list())["metadata"]["resourceVersion"]
    outcome: list[Any] = []
    async with asyncio.timeout(30), cms.watch(resource_version=start) as events:
        a = await cms.create(configmap("a", {"v": "1"}))
        await cms.update(dict(a, data={"v": "2"}))
        await cms.create(configmap("b"))
        await cms.patch("b", {"data": {"p": "q"}}, patch_type=PatchType.STRATEGIC_MERGE)
        await cms.delete("a")
        while len(outcome) < 5:
            event = await anext(events)
            name = event.object["metadata"]["name"]
            if name in ("a", "b"):  # a component may add its own ConfigMaps to new namespaces
                outcome.append((str(event.type), name, event.object.get("data")))

    failures = (
        cms.get("a"),
        cms.create(configmap("b")),
        cms.update(a),  # deleted since: NotFound
        cms.create(configmap("Bad_Name")),
    )
    for failing in failures:
        with pytest.raises(APIError) as caught:
            await failing
        error = caught.value
        outcome.append((type(error).__name__, error.code, error.reason, error.message, error.causes))
    return outcome


async def test_https_and_in_process_see_the_same_events_and_errors(lab: LiveLab, cluster: Cluster) -> None:
    async with RESTClient(Config.from_kubeconfig(lab.kubeconfig, qps=-1)) as https:
        over_https = await scenario(https)
    in_process = await scenario(cluster.client)

    assert in_process == over_https
    assert in_process[:5] == [
        ("ADDED", "a", {"v": "1"}),
        ("MODIFIED", "a", {"v": "2"}),
        ("ADDED", "b", {}),
        ("MODIFIED", "b", {"p": "q"}),
        ("DELETED", "a", {"v": "2"}),
    ]
    assert [entry[0] for entry in in_process[5:]] == ["NotFound", "AlreadyExists", "NotFound", "Invalid"]


def test_the_https_config_comes_from_the_kubeconfig(lab: LiveLab) -> None:
    config = Config.from_kubeconfig(lab.kubeconfig)
    assert config.host == lab.server
    assert config.ca_data is not None and config.ca_data.startswith(b"-----BEGIN CERTIFICATE-----")
    assert config.bearer_token
    assert not config.in_process
