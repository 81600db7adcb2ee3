"""Hibernation: a sandbox nobody uses stops and lets go of its memory; any request wakes it, with
every object as it was. Also: who counts as using it, which clusters the reaper may put to sleep, and
a lab that resumes its sandboxes asleep."""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import weakref
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from controlplane.apiserver.mount import ClusterAPIRouter
from controlplane.client.config import Config
from controlplane.client.errors import NotFound
from controlplane.client.rest import RESTClient
from controlplane.identity import SYSTEM_MASTERS
from controlplane.runtime import (
    Activity,
    Cluster,
    ClusterState,
    ClusterUnavailable,
    Lab,
    LabConfig,
    delete_everything,
    read_cluster_list,
)
from controlplane.store.sqlite import SqliteStore
from tests.support.inprocess import wait_for

SANDBOX = "sb-7"


async def _django(scope: Any, receive: Any, send: Any) -> None:
    raise AssertionError("API paths never reach Django")


@pytest.fixture
async def lab(tmp_path: Path) -> AsyncIterator[Lab]:
    running = Lab(LabConfig(data_dir=tmp_path, demo_cluster="demo", components=(), nodes=0))
    await running.start()
    try:
        yield running
    finally:
        await running.stop()


def admin_client(lab: Lab, name: str) -> RESTClient:
    """An admin of cluster ``name`` going through the router, as kubectl's requests do."""
    token = lab.cluster(name).tokens.issue("admin", [SYSTEM_MASTERS])
    router = ClusterAPIRouter(lambda: lab, _django)
    return RESTClient(Config.for_in_process(router, name, bearer_token=token, qps=-1))


def deployment(name: str, replicas: int) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
            },
        },
    }


async def test_a_request_wakes_a_hibernated_sandbox_with_its_pods(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lab = Lab(LabConfig(data_dir=tmp_path, demo_cluster=""))
    await lab.start()
    try:
        sandbox = await lab.ensure_cluster(SANDBOX)
        assert sandbox.nodes == 3 and sandbox.timing.name == "classroom"
        async with admin_client(lab, SANDBOX) as admin:
            await admin.resource("apps", "v1", "deployments", "default").create(deployment("web", 2))
            pods = admin.resource("", "v1", "pods", "default")
            running = await wait_for(
                pods,
                lambda items: (
                    len(items) == 2 and all(p.get("status", {}).get("phase") == "Running" for p in items)
                ),
                seconds=30,
            )
            before = sorted(
                (p["metadata"]["name"], p["metadata"]["uid"], p["spec"]["nodeName"]) for p in running
            )

            assert await lab.hibernate(SANDBOX)
            assert sandbox.state is ClusterState.HIBERNATED
            assert sandbox.apiserver is None and not sandbox.components_running
            assert lab.needs_waking(SANDBOX) and not lab.serving(SANDBOX)

            # Three requests at once: one start, and each answered with the same pods.
            starts = 0
            start = Cluster.start

            async def counted(self: Cluster) -> None:
                nonlocal starts
                starts += 1
                await start(self)

            monkeypatch.setattr(Cluster, "start", counted)
            answers = await asyncio.gather(*(pods.list() for _ in range(3)))
            assert starts == 1
            for answer in answers:
                after = sorted(
                    (p["metadata"]["name"], p["metadata"]["uid"], p["spec"]["nodeName"])
                    for p in answer["items"]
                )
                assert after == before
            assert lab.serving(SANDBOX)
            web = await admin.resource("apps", "v1", "deployments", "default").get("web")
            assert web["spec"]["replicas"] == 2
            # The components start again behind the API server and find everything as it was.
            await wait_for(
                pods,
                lambda items: (
                    sorted(p["metadata"]["name"] for p in items) == [b[0] for b in before]
                    and all(p.get("status", {}).get("phase") == "Running" for p in items)
                ),
                seconds=30,
            )
    finally:
        await lab.stop()


async def test_a_hibernated_sandbox_lets_go_of_its_memory(lab: Lab) -> None:
    sandbox = await lab.ensure_cluster(SANDBOX)
    await lab.settled(SANDBOX)
    bus = lab.trace_bus(SANDBOX)
    with bus.subscribe():  # someone watched: the recorder kept events
        async with admin_client(lab, SANDBOX) as admin:
            await admin.resource("", "v1", "configmaps", "default").list()
    assert len(bus.recorder) > 0
    assert sandbox.apiserver is not None
    server, store = weakref.ref(sandbox.apiserver), weakref.ref(sandbox.store)
    caches = [weakref.ref(cache) for cache in sandbox.apiserver.caches.values()]
    assert await lab.hibernate(SANDBOX)
    gc.collect()
    assert server() is None, "the stopped API server must be freed"
    assert all(cache() is None for cache in caches), "its watch caches must be freed"
    assert store() is None, "the closed store (and its key index) must be freed"
    assert len(bus.recorder) == 0, "the recorded trace events must go"
    assert not list(sandbox.metrics.collect()), "its metrics named the API server: they go too"


async def test_only_idle_sandboxes_hibernate(lab: Lab) -> None:
    await lab.ensure_cluster(SANDBOX)
    await lab.settled(SANDBOX)  # its start is over (a sandbox still starting does not hibernate)
    assert await lab.hibernate_idle_sandboxes(3600) == []  # just made: not idle
    with lab.busy(SANDBOX):  # a request (a watch) in flight keeps it awake however long
        assert await lab.hibernate_idle_sandboxes(0) == []
    assert await lab.hibernate_idle_sandboxes(0) == [SANDBOX]
    assert lab.cluster("demo").state is ClusterState.RUNNING  # never the demo or a classroom's
    assert lab.cluster(SANDBOX).state is ClusterState.HIBERNATED
    await lab.use(SANDBOX)  # a page or a socket wakes it
    assert lab.serving(SANDBOX)
    await lab.settled(SANDBOX)
    assert lab.cluster(SANDBOX).state is ClusterState.RUNNING
    assert await lab.hibernate(SANDBOX, idle_for=60) is False  # touched by its wake


async def test_a_request_while_it_falls_asleep_waits_and_wakes_it(lab: Lab) -> None:
    await lab.ensure_cluster(SANDBOX)
    async with admin_client(lab, SANDBOX) as admin:
        config_maps = admin.resource("", "v1", "configmaps", "default")
        await config_maps.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kept"}})
        await lab.settled(SANDBOX)
        hibernating = asyncio.ensure_future(lab.hibernate(SANDBOX))
        await asyncio.sleep(0)  # the hibernation has begun
        assert lab.needs_waking(SANDBOX)
        found = await config_maps.get("kept")
        assert await hibernating
        assert found["metadata"]["name"] == "kept"
        assert lab.serving(SANDBOX)


async def test_a_lab_resumes_its_sandboxes_asleep(tmp_path: Path) -> None:
    config = LabConfig(data_dir=tmp_path, demo_cluster="demo", components=(), nodes=0)
    first = Lab(config)
    await first.start()
    try:
        await first.ensure_cluster(SANDBOX)
        async with admin_client(first, SANDBOX) as admin:
            await admin.resource("", "v1", "configmaps", "default").create(
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "survives"}}
            )
    finally:
        await first.stop()
    second = Lab(config)
    await second.start()
    try:
        assert second.cluster("demo").state is ClusterState.RUNNING
        assert second.cluster(SANDBOX).state is ClusterState.HIBERNATED
        await second.wake(SANDBOX)
        async with admin_client(second, SANDBOX) as admin:
            kept = await admin.resource("", "v1", "configmaps", "default").get("survives")
        assert kept["metadata"]["name"] == "survives"
    finally:
        await second.stop()


async def test_only_a_hibernated_cluster_is_woken(lab: Lab) -> None:
    await lab.wake("demo")  # running: nothing to do
    demo = lab.cluster("demo")
    await demo.stop()
    with pytest.raises(ClusterUnavailable, match="'demo' is stopped"):
        await lab.wake("demo")
    assert not lab.needs_waking("demo")
    router = ClusterAPIRouter(lambda: lab, _django)
    async with RESTClient(Config.for_in_process(router, SANDBOX, bearer_token="x", qps=-1)) as nobody:
        with pytest.raises(NotFound, match='cluster "sb-7" not found'):  # no sandbox is made by a request
            await nobody.resource("", "v1", "configmaps", "default").list()
    assert SANDBOX not in lab.names()


async def test_a_cluster_made_anew_is_empty(lab: Lab) -> None:
    first = await lab.ensure_cluster(SANDBOX)
    async with admin_client(lab, SANDBOX) as admin:
        await admin.resource("", "v1", "configmaps", "default").create(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "gone"}}
        )
    old_ca = first.pki.ca.certificate_pem
    second = await lab.recreate_cluster(SANDBOX)
    assert second is not first and second.incarnation != first.incarnation
    assert second.pki.ca.certificate_pem != old_ca
    async with admin_client(lab, SANDBOX) as admin:
        names = [
            c["metadata"]["name"]
            for c in (await admin.resource("", "v1", "configmaps", "default").list())["items"]
        ]
    assert "gone" not in names


async def test_a_deleted_cluster_is_forgotten_with_its_data(lab: Lab, tmp_path: Path) -> None:
    first = await lab.ensure_cluster(SANDBOX)
    async with admin_client(lab, SANDBOX) as admin:
        await admin.resource("", "v1", "configmaps", "default").create(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "gone"}}
        )
    await lab.hibernate(SANDBOX)
    lab.activity.touch(SANDBOX)
    gone = weakref.ref(first)
    del first
    assert await lab.delete_cluster(SANDBOX)
    assert SANDBOX not in lab.names()
    assert not (tmp_path / "clusters" / SANDBOX).exists(), "its store and identities are deleted"
    assert SANDBOX not in (read_cluster_list(tmp_path) or []), "a restarted lab does not bring it back"
    assert lab.activity.idle_for(SANDBOX) == float("inf")
    gc.collect()
    assert gone() is None, "nothing in the lab holds the deleted cluster"
    assert not await lab.delete_cluster(SANDBOX), "deleting it again finds nothing"

    await lab.ensure_cluster(SANDBOX)
    async with admin_client(lab, SANDBOX) as admin:
        listed = await admin.resource("", "v1", "configmaps", "default").list()
    assert "gone" not in [c["metadata"]["name"] for c in listed["items"]], "made anew, empty"


async def test_delete_everything_empties_a_store(tmp_path: Path) -> None:
    """What a reset does to a cluster on a shared backend (PostgreSQL, etcd), here on SQLite."""
    store = SqliteStore("x", path=tmp_path / "store.sqlite3")
    await store.start()
    try:
        for i in range(250):
            await store.create(f"/registry/configmaps/default/cm-{i}", b"{}")
        assert await delete_everything(store) == 250
        assert not (await store.range("/registry/")).kvs
    finally:
        await store.close()


def test_activity_counts_requests_in_flight_as_use() -> None:
    now = [100.0]
    activity = Activity(now=lambda: now[0])
    assert activity.idle_for("sb-1") == float("inf")
    activity.touch("sb-1")
    now[0] = 160.0
    assert activity.idle_for("sb-1") == 60.0
    with activity.busy("sb-1"):
        now[0] = 1000.0
        assert activity.idle_for("sb-1") == 0.0
    assert activity.idle_for("sb-1") == 0.0  # just finished
    now[0] = 1010.0
    assert activity.idle_for("sb-1") == 10.0


async def test_only_a_request_with_credentials_of_the_sandbox_wakes_it(lab: Lab) -> None:
    # Waking costs a whole control plane: a request that could only be refused does not get one.
    await lab.ensure_cluster(SANDBOX)
    await lab.settled(SANDBOX)
    token = lab.cluster(SANDBOX).tokens.issue("student:ada")
    assert await lab.hibernate(SANDBOX)
    router = ClusterAPIRouter(lambda: lab, _django)
    for headers in ({}, {"Authorization": "Bearer not-a-token-of-this-sandbox"}):
        client = httpx.AsyncClient(transport=httpx.ASGITransport(router), base_url="http://lab")
        async with client:
            answer = await client.get(f"/clusters/{SANDBOX}/api", headers=headers)
        assert answer.status_code == 401
        assert answer.json()["reason"] == "Unauthorized"
        assert lab.needs_waking(SANDBOX), "nothing was started for it"
    client = httpx.AsyncClient(transport=httpx.ASGITransport(router), base_url="http://lab")
    async with client:
        answer = await client.get(f"/clusters/{SANDBOX}/api", headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 200
    assert lab.serving(SANDBOX)


def test_a_sandboxs_trace_recorder_keeps_fewer_events_than_the_labs_clusters(tmp_path: Path) -> None:
    """A student's page makes their sandbox record; at 1-2 KB an event, a class of 50 must not keep 50,000
    events each."""
    config = LabConfig(data_dir=tmp_path, demo_cluster="", trace_capacity=50_000)
    lab = Lab(dataclasses.replace(config, sandbox=dataclasses.replace(config.sandbox, trace_capacity=1_000)))
    assert lab.trace_bus("sb-7").recorder.capacity == 1_000
    assert lab.trace_bus("classroom-a").recorder.capacity == 50_000
