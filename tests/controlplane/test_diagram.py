"""The state a topology page starts from (controlplane/diagram.py), through the trace socket.

A page opens on a cluster whose objects were made long before, while nobody watched (a lab's bus
does not record then): it must still see every Node and Pod, the components, who leads and the open
watches, then the events that follow the state with no gap and nothing counted twice.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from controlplane.client.config import Config
from controlplane.client.rest import RESTClient
from controlplane.diagram import component_rows
from controlplane.identity import SYSTEM_MASTERS
from controlplane.runtime import Lab, LabConfig
from tests.support.inprocess import wait_for
from tests.support.lab import active_lab
from tests.support.tracestream import close, open_socket, receive, staff, trace_router, trace_socket

router = trace_router(max_frame_events=500)

POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"generateName": "web-", "labels": {"app": "web"}},
    "spec": {"containers": [{"name": "web", "image": "nginx"}]},
}


@pytest.fixture
async def lab(tmp_path: Path) -> AsyncIterator[Lab]:
    """A lab with every component on one node, its trace not recorded while nobody watches (as
    ``runlab`` runs it)."""
    async with active_lab(LabConfig(data_dir=tmp_path, nodes=1, trace_recording=False)) as running:
        yield running


@pytest.fixture
async def admin(lab: Lab) -> AsyncIterator[RESTClient]:
    demo = lab.cluster("demo")
    assert demo.apiserver is not None
    token = await asyncio.to_thread(demo.tokens.issue, "test-admin", [SYSTEM_MASTERS])
    config = Config.for_in_process(
        demo.apiserver, "demo", mount_prefix="/clusters/demo", bearer_token=token, qps=-1
    )
    async with RESTClient(config) as client:
        yield client


def running(items: list[dict[str, Any]]) -> bool:
    return bool(items) and all(p.get("status", {}).get("phase") == "Running" for p in items)


async def start_from_state(communicator: Any) -> dict[str, Any]:
    await open_socket(communicator)
    await communicator.send_json_to({"action": "subscribe", "since": None, "state": True})
    state = await receive(communicator)
    assert state["type"] == "state", state
    return state


async def test_a_page_starts_from_the_state_of_objects_made_while_nobody_watched(
    lab: Lab, admin: RESTClient
) -> None:
    pods = admin.resource("", "v1", "pods", "default")
    made = await pods.create(POD)
    name = made["metadata"]["name"]
    [pod] = await wait_for(pods, running)
    demo = lab.cluster("demo")
    assert demo.trace.last_seq == 0, "nobody watched: nothing was traced"

    communicator = trace_socket(router, "demo", staff())
    state = await start_from_state(communicator)
    try:
        assert state["seq"] == 0
        assert state["revision"] >= int(pod["metadata"]["resourceVersion"])
        objects = state["objects"]
        assert [(n["name"], n["ready"]) for n in objects["nodes"]] == [
            ("control-plane", "True"),
            ("node-1", "True"),
        ]
        [drawn] = [p for p in objects["pods"] if p["name"] == name]
        assert drawn | {"mod_revision": 0} == {
            "namespace": "default",
            "name": name,
            "generateName": "web-",
            "node": "node-1",
            "phase": "Running",
            "deleting": False,
            "mod_revision": 0,
        }
        components = {c["id"]: c for c in state["components"]}
        assert {"scheduler", "controller-manager", "kubelet:node-1", "kube-proxy:node-1"} <= set(components)
        assert "replicaset" in components["controller-manager"]["controllers"]
        # Each component's informers watch the API server: those watches are drawn from the start.
        watched = {(w["to"], w["resource"]) for w in state["watches"]}
        assert ("scheduler", "pods") in watched and ("kubelet:node-1", "pods") in watched
        assert all(w["from"] == "apiserver" for w in state["watches"])

        # What follows the state starts right after its seq, and a pod's writes carry its facts.
        await pods.delete(name)
        facts: list[dict[str, Any]] = []
        first: int | None = None
        async with asyncio.timeout(10):
            while not any(f.get("type") == "DELETE" for f in facts):
                frame = await receive(communicator)
                assert frame["type"] == "frame", frame
                first = frame["first"] if first is None else first
                for event in frame["events"]:
                    if event["type"] == "store.txn":
                        facts += [w for w in event.get("writes", []) if w["key"].endswith(f"/{name}")]
        assert first == state["seq"] + 1
        marked = next(w for w in facts if w["type"] == "PUT")
        assert marked["pod"]["deleting"] is True and marked["pod"]["node"] == "node-1"
    finally:
        await close(communicator)


async def test_state_comes_with_since_null_only(lab: Lab) -> None:
    communicator = trace_socket(router, "demo", staff())
    await open_socket(communicator)
    await communicator.send_json_to({"action": "subscribe", "since": 3, "state": True})
    answer = await receive(communicator)
    assert answer["type"] == "error" and answer["code"] == 400
    assert "since null" in answer["message"]
    await close(communicator)


async def test_a_page_that_reconnects_after_nobody_watched_starts_again_from_the_state(
    lab: Lab, admin: RESTClient
) -> None:
    """The page was the only watcher: while its socket was down nothing was traced, so its last seq
    cannot be caught up from (410), and the state it asks for next holds what changed meanwhile."""
    communicator = trace_socket(router, "demo", staff())
    state = await start_from_state(communicator)
    first = await receive(communicator)  # the cluster's own traffic (Lease renewals) goes on
    last = first["last"]
    await close(communicator)
    bus = lab.cluster("demo").trace
    assert bus.subscribers == 0, "the socket's stream outlived its disconnect"
    untraced = bus.last_seq  # events traced after the page's last frame, before it went, are recorded
    pods = admin.resource("", "v1", "pods", "default")
    made = await pods.create(POD)  # while nobody watches
    assert bus.last_seq == untraced, "something was traced while nobody watched"

    again = trace_socket(router, "demo", staff())
    await open_socket(again)
    try:
        await again.send_json_to({"action": "subscribe", "since": last})
        gone = await receive(again)
        assert (gone["type"], gone["code"]) == ("error", 410), gone
        assert "nothing was traced" in gone["message"]
        await again.send_json_to({"action": "subscribe", "since": None, "state": True})
        fresh = await receive(again)
        assert fresh["type"] == "state" and fresh["revision"] > state["revision"]
        assert made["metadata"]["name"] in {p["name"] for p in fresh["objects"]["pods"]}
    finally:
        await close(again)


def test_components_are_listed_by_id_stopped_or_running() -> None:
    """A page draws parts in the order it meets them: node-2's kubelet keeps its place between node-1
    and node-3 while a fault has it stopped, and after it was started again behind the others."""
    running = {"kubelet:node-3": object(), "scheduler": object(), "kubelet:node-1": object()}
    rows = component_rows(running, stopped=["kubelet:node-2"])
    assert [(r["id"], r["state"]) for r in rows] == [
        ("kubelet:node-1", "running"),
        ("kubelet:node-2", "stopped"),
        ("kubelet:node-3", "running"),
        ("scheduler", "running"),
    ]
