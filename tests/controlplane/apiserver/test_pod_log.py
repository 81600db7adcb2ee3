"""``pods/<name>/log`` (``kubectl logs``): the API server relays the node's kubelet.

A real API server and a real kubelet run in process on a ``ManualClock``; the kubelet's log server is
registered with the API server's kubelet connections, as the runtime does. Requests go through the
REST client (the same path as every component, streaming for ``follow``), errors come back as upstream
Status objects.
"""

from __future__ import annotations

import random
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from controlplane.api.meta import Object
from controlplane.apiserver.kubeletclient import KubeletConnections, KubeletUnavailable, node_address
from controlplane.client.errors import BadRequest, Invalid, NotFound
from controlplane.client.rest import ResourceClient
from controlplane.clock import ManualClock
from controlplane.components.kubelet.kubelet import Kubelet
from controlplane.components.kubelet.simulation import PullTiming
from controlplane.identity import NODES, UserInfo, node_user
from tests.support.inprocess import CLUSTER, InProcessCluster, in_process_cluster, wait_for

NODE = "node-1"


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
async def cluster(tmp_path: Path, clock: ManualClock) -> AsyncIterator[InProcessCluster]:
    async with in_process_cluster(tmp_path, clock=clock) as running:
        kubelet = Kubelet(
            running.client_for(UserInfo.create(node_user(NODE), groups=[NODES])),
            NODE,
            clock=clock,
            rng=random.Random(1),
            cluster=CLUSTER,
            pull_timing=PullTiming(per_image={"slow": 30.0}),
        )
        await kubelet.start()
        running.server.kubelets.register(NODE, kubelet.server)
        try:
            yield running
        finally:
            running.server.kubelets.unregister(NODE, kubelet.server)
            await kubelet.stop()


def pods(cluster: InProcessCluster) -> ResourceClient:
    return cluster.resource("", "v1", "pods", "default")


def container(name: str = "app", *, image: str = "busybox", script: str | None = None) -> Object:
    spec: Object = {"name": name, "image": image}
    if script is not None:
        spec["command"] = ["sh", "-c", script]
    return spec


async def run_pod(
    cluster: InProcessCluster,
    name: str,
    *containers: Object,
    node: str | None = NODE,
    annotations: dict[str, str] | None = None,
    until: str = "Running",
    **spec: Any,
) -> Object:
    body: Object = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations or {}},
        "spec": {"containers": list(containers), **spec},
    }
    if node:
        body["spec"]["nodeName"] = node
    await pods(cluster).create(body)
    if not node:
        return body
    items = await wait_for(
        pods(cluster),
        lambda items: any(
            p["metadata"]["name"] == name
            and p["status"].get("phase") == until
            and p["status"].get("containerStatuses")  # the kubelet has seen it
            for p in items
        ),
    )
    found: Object = next(p for p in items if p["metadata"]["name"] == name)
    return found


async def logs(cluster: InProcessCluster, name: str, **params: str) -> httpx.Response:
    return await pods(cluster).request("GET", name, "log", params=params)


SCRIPT = "echo one; echo two; sleep 5; echo three; sleep 3600"


async def test_logs_are_the_lines_printed_so_far_as_plain_text(
    cluster: InProcessCluster, clock: ManualClock
) -> None:
    await run_pod(cluster, "web", container(script=SCRIPT))

    response = await logs(cluster, "web")
    assert response.text == "one\ntwo\n"
    assert response.headers["content-type"] == "text/plain"

    await clock.advance(5)
    assert (await logs(cluster, "web")).text == "one\ntwo\nthree\n"
    assert (await logs(cluster, "web", tailLines="2")).text == "two\nthree\n"
    assert (await logs(cluster, "web", tailLines="0")).text == ""
    assert (await logs(cluster, "web", limitBytes="5")).text == "one\nt"
    assert (await logs(cluster, "web", sinceSeconds="3")).text == "three\n"
    stamped = (await logs(cluster, "web", timestamps="true", tailLines="1")).text
    assert stamped == "2023-11-14T22:13:25.000000000Z three\n"


async def test_follow_streams_new_lines_until_the_container_stops(
    cluster: InProcessCluster, clock: ManualClock
) -> None:
    await run_pod(
        cluster, "job", container(script="echo start; sleep 5; echo middle; sleep 5; echo done"),
        restartPolicy="Never",
    )  # fmt: skip
    path = pods(cluster).path("job", "log")
    response = await cluster.client.open_stream("GET", path, params={"follow": "true"})
    try:
        chunks = response.aiter_text()
        assert await anext(chunks) == "start\n"
        await clock.advance(5)
        assert await anext(chunks) == "middle\n"
        await clock.advance(5)
        assert await anext(chunks) == "done\n"
        rest = [chunk async for chunk in chunks]  # the container exited: the stream ends by itself
        assert "".join(rest) == ""
    finally:
        await response.aclose()


async def test_a_reader_that_goes_away_ends_the_follow_on_the_kubelet_too(
    cluster: InProcessCluster, clock: ManualClock
) -> None:
    await run_pod(cluster, "web", container(script=SCRIPT))
    path = pods(cluster).path("web", "log")
    response = await cluster.client.open_stream("GET", path, params={"follow": "true", "tailLines": "1"})
    chunks = response.aiter_text()
    assert await anext(chunks) == "two\n"
    await response.aclose()  # the leak check fails the test if the kubelet's follower kept running
    await clock.advance(5)
    assert (await logs(cluster, "web", tailLines="1")).text == "three\n"


async def test_previous_shows_the_run_before_the_restart(cluster: InProcessCluster) -> None:
    await run_pod(cluster, "web", container(image="nginx"))
    with pytest.raises(BadRequest) as missing:
        await logs(cluster, "web", previous="true")
    assert missing.value.message == 'previous terminated container "app" in pod "web" not found'

    # Prints and exits 1 at once: restarted at once, then in CrashLoopBackOff.
    await pods(cluster).create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "crash"},
            "spec": {"nodeName": NODE, "containers": [container(script="echo boom; exit 1")]},
        }
    )
    await wait_for(
        pods(cluster),
        lambda items: any(
            (p["status"].get("containerStatuses") or [{}])[0]
            .get("state", {})
            .get("waiting", {})
            .get("reason")
            == "CrashLoopBackOff"
            for p in items
        ),
    )
    assert (await logs(cluster, "crash", previous="true")).text == "boom\n"
    assert (await logs(cluster, "crash")).text == "boom\n"


async def test_a_container_that_has_not_started_has_no_logs_yet(cluster: InProcessCluster) -> None:
    await run_pod(cluster, "slow", container(image="slow"), until="Pending")
    with pytest.raises(BadRequest) as creating:
        await logs(cluster, "slow")
    assert creating.value.message == 'container "app" in pod "slow" is waiting to start: ContainerCreating'

    await pods(cluster).create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "bad"},
            "spec": {"nodeName": NODE, "containers": [container(image="nginx:bad")]},
        }
    )
    await wait_for(
        pods(cluster),
        lambda items: any(
            (p["status"].get("containerStatuses") or [{}])[0]
            .get("state", {})
            .get("waiting", {})
            .get("reason")
            == "ErrImagePull"
            for p in items
        ),
    )
    with pytest.raises(BadRequest) as pulling:
        await logs(cluster, "bad")
    assert pulling.value.message == 'container "app" in pod "bad" is waiting to start: image can\'t be pulled'


async def test_the_container_is_chosen_like_upstream(cluster: InProcessCluster) -> None:
    two = [container("a", script="echo from-a; sleep 3600"), container("b", script="echo from-b; sleep 3600")]
    await run_pod(cluster, "two", *two)
    with pytest.raises(BadRequest) as ambiguous:
        await logs(cluster, "two")
    assert ambiguous.value.message == "a container name must be specified for pod two, choose one of: [a b]"
    assert (await logs(cluster, "two", container="b")).text == "from-b\n"
    with pytest.raises(BadRequest) as wrong:
        await logs(cluster, "two", container="zz")
    assert wrong.value.message == "container zz is not valid for pod two"

    annotated = {"kubectl.kubernetes.io/default-container": "b"}
    await run_pod(cluster, "picked", *two, annotations=annotated)
    assert (await logs(cluster, "picked")).text == "from-b\n"


async def test_missing_and_unscheduled_pods_and_bad_options(cluster: InProcessCluster) -> None:
    with pytest.raises(NotFound) as missing:
        await logs(cluster, "nope")
    assert missing.value.message == 'pods "nope" not found'

    await run_pod(cluster, "pending", container(image="nginx"), node=None)
    assert (await logs(cluster, "pending")).text == ""  # no node yet: no log location, empty answer

    await pods(cluster).create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "lost"},
            "spec": {"nodeName": "ghost", "containers": [container(image="nginx")]},
        }
    )
    with pytest.raises(NotFound) as no_node:
        await logs(cluster, "lost")
    assert no_node.value.message == 'nodes "ghost" not found'

    await run_pod(cluster, "web", container(image="nginx"))
    with pytest.raises(Invalid) as negative:
        await logs(cluster, "web", tailLines="-1")
    assert negative.value.message == (
        'PodLogOptions "web" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0'
    )
    with pytest.raises(BadRequest):
        await logs(cluster, "web", tailLines="many")
    with pytest.raises(BadRequest):
        await logs(cluster, "web", follow="perhaps")
    with pytest.raises(Invalid):
        await logs(cluster, "web", sinceSeconds="5", sinceTime="2023-11-14T22:13:20Z")


# -- reaching a kubelet over HTTP ---------------------------------------------------------------------


def test_the_node_address_is_its_internal_ip_and_kubelet_port() -> None:
    node = {
        "metadata": {"name": "n"},
        "status": {
            "addresses": [
                {"type": "Hostname", "address": "n"},
                {"type": "InternalIP", "address": "10.0.0.9"},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        },
    }
    assert node_address(node) == ("10.0.0.9", 10250)
    with pytest.raises(KubeletUnavailable, match="no preferred addresses found"):
        node_address({"metadata": {"name": "n"}, "status": {}})


async def test_an_unregistered_kubelet_is_dialled_at_its_node_address() -> None:
    seen: list[str] = []

    def kubelet(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(200, text="hello\n", headers={"content-type": "text/plain"})

    connections = KubeletConnections(transport=httpx.MockTransport(kubelet))
    node = {
        "metadata": {"name": "far"},
        "status": {
            "addresses": [{"type": "InternalIP", "address": "10.0.0.9"}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        },
    }
    try:
        response = await connections.get("far", node, "/containerLogs/default/web/app", {"tailLines": "1"})
        assert response.status == 200
        assert await response.read() == b"hello\n"
        await response.aclose()
        with pytest.raises(KubeletUnavailable, match='nodes "gone" not found'):
            await connections.get("gone", None, "/containerLogs/default/web/app", {})
    finally:
        await connections.aclose()
    assert seen == ["http://10.0.0.9:10250/containerLogs/default/web/app?tailLines=1"]


async def test_a_stopped_in_process_kubelet_is_refused_not_dialled() -> None:
    """A simulated node's address is nobody's: with its kubelet stopped, the dial fails as upstream's
    does on a node whose kubelet is down, and no request leaves the process."""
    seen: list[str] = []

    def anywhere(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(404)

    connections = KubeletConnections(transport=httpx.MockTransport(anywhere))
    node = {
        "metadata": {"name": "node-2"},
        "status": {
            "addresses": [{"type": "InternalIP", "address": "172.18.0.3"}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        },
    }

    async def app(scope: Any, receive: Any, send: Any) -> None:  # the in-process kubelet, then stopped
        raise AssertionError("not reached")

    connections.register("node-2", app)
    connections.unregister("node-2", app)
    try:
        refused = re.escape("dial tcp 172.18.0.3:10250: connect: connection refused")
        with pytest.raises(KubeletUnavailable, match=refused):
            await connections.get("node-2", node, "/containerLogs/default/web/app", {})
    finally:
        await connections.aclose()
    assert seen == []
