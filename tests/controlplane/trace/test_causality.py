"""Causality: from a request to the revisions it wrote, the watch events that carried them, the work
they triggered and the requests that work made; and back. Synthetic runs first, then a real one."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from controlplane.api.kinds import builtin_types
from controlplane.apiserver.server import APIServer
from controlplane.client.config import Config
from controlplane.client.rest import RESTClient
from controlplane.clock import ManualClock
from controlplane.components.kubelet.kubelet import Kubelet
from controlplane.components.scheduler.scheduler import Scheduler
from controlplane.identity import KUBE_SCHEDULER, NODES, SYSTEM_MASTERS, UserInfo, node_user
from controlplane.store.sqlite import SqliteStore
from controlplane.trace.bus import TraceBus
from controlplane.trace.causality import (
    CausalGraph,
    causes,
    effects,
    is_client_watch_event,
    is_store_watch_event,
    is_write,
)
from controlplane.trace.schema import SCHEMA_VERSION
from tests.support.admission import WITHOUT_CONTROLLERS
from tests.support.inprocess import in_process_cluster, wait_for

Event = dict[str, Any]


class Run:
    """Builds a synthetic run event by event, numbering them like the bus."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def add(self, type: str, **fields: Any) -> int:
        seq = len(self.events) + 1
        self.events.append(
            {"v": SCHEMA_VERSION, "cluster": "c", "seq": seq, "ts": float(seq), "type": type, **fields}
        )
        return seq

    def request(
        self, id: str, who: str, revision: int | None, key: str = "/registry/pods/default/web"
    ) -> tuple[int, int]:
        edge = {"from": who, "to": "apiserver"}
        received = self.add("request.received", id=id, method="POST", path="/x", **edge)
        self.add("request.stage", id=id, stage="storage", outcome="pass", **edge)
        txn = 0  # none
        if revision is not None:
            txn = self.add(
                "store.txn",
                id=id,
                op="txn",
                revision=revision,
                succeeded=True,
                writes=[{"type": "PUT", "key": key}],
                **{"from": "apiserver", "to": "etcd"},
            )
        self.add("request.completed", id=id, code=201, duration=0.01, **edge)
        return received, txn

    def store_watch(self, revision: int) -> int:
        return self.add(
            "watch.event",
            source="store",
            watch="s1",
            event="PUT",
            revision=revision,
            key="/registry/pods/default/web",
        )

    def client_watch(self, revision: int, to: str, watch_id: str = "w") -> int:
        return self.add(
            "watch.event",
            id=watch_id,
            source="apiserver",
            watch=watch_id,
            event="ADDED",
            revision=revision,
            **{"from": "apiserver", "to": to},
        )


def seqs(events: list[Any]) -> list[int]:
    return [e["seq"] for e in events]


@pytest.fixture
def pod_create() -> tuple[Run, dict[str, int]]:
    """kubectl creates a pod; the scheduler sees it and binds it; the kubelet sees the binding."""
    run = Run()
    at: dict[str, int] = {}
    at["create"], at["create.txn"] = run.request("kubectl-1", "user:alice", 10)
    run.request("kubectl-2", "user:alice", None)  # an unrelated read
    at["store.watch.10"] = run.store_watch(10)
    at["sched.watch.10"] = run.client_watch(10, "scheduler", "sched-watch")
    at["kubelet.watch.10"] = run.client_watch(10, "kubelet:node-2", "kubelet-watch")  # filtered elsewhere
    at["decision"] = run.add(
        "scheduler.decision",
        pod="default/web",
        nodes={},
        feasible=["node-1"],
        chosen="node-1",
        revision=10,
        requests=["bind-1"],
        **{"from": "scheduler"},
    )
    at["bind"], at["bind.txn"] = run.request("bind-1", "scheduler", 11)
    at["store.watch.11"] = run.store_watch(11)
    at["kubelet.watch.11"] = run.client_watch(11, "kubelet:node-1", "kubelet-watch")
    at["status"], at["status.txn"] = run.request("status-1", "kubelet:node-1", 12)
    at["sync"] = run.add(
        "reconcile",
        controller="kubelet-pod-sync",
        key="default/web",
        result="success",
        revision=11,
        requests=["status-1"],
        **{"from": "kubelet:node-1"},
    )
    return run, at


def test_what_a_create_caused_reaches_the_kubelets_status_update(
    pod_create: tuple[Run, dict[str, int]],
) -> None:
    run, at = pod_create
    graph = CausalGraph(run.events)
    caused = seqs(graph.effects(at["create"]))
    for step in (
        "create.txn",
        "store.watch.10",
        "sched.watch.10",
        "decision",
        "bind",
        "bind.txn",
        "store.watch.11",
        "kubelet.watch.11",
        "sync",
        "status",
        "status.txn",
    ):
        assert at[step] in caused, step
    assert caused == sorted(caused)
    assert at["create"] not in caused
    unrelated = [e["seq"] for e in run.events if e.get("id") == "kubectl-2"]
    assert not set(unrelated) & set(caused)


def test_what_caused_the_status_update_goes_back_to_kubectl(pod_create: tuple[Run, dict[str, int]]) -> None:
    run, at = pod_create
    chain = seqs(causes(run.events, at["status.txn"]))
    assert chain == sorted(
        [
            at["create"],
            at["create.txn"],
            at["store.watch.10"],
            at["sched.watch.10"],
            at["decision"],
            at["bind"],
            at["bind.txn"],
            at["store.watch.11"],
            at["kubelet.watch.11"],
            at["sync"],
            at["status"],
        ]
    )


def test_work_is_caused_by_the_watch_event_delivered_to_that_component(
    pod_create: tuple[Run, dict[str, int]],
) -> None:
    run, at = pod_create
    graph = CausalGraph(run.events)
    assert seqs(graph.causes(at["decision"], transitive=False)) == [at["sched.watch.10"]]
    # the kubelet of node-2 saw revision 10 too, but did nothing with it
    assert graph.effects(at["kubelet.watch.10"]) == []
    assert seqs(graph.effects(at["store.watch.10"], transitive=False)) == [
        at["sched.watch.10"],
        at["kubelet.watch.10"],
    ]


def test_direct_effects_of_a_request_are_its_steps(pod_create: tuple[Run, dict[str, int]]) -> None:
    run, at = pod_create
    direct = graph_effects = CausalGraph(run.events).effects("kubectl-1", transitive=False)
    assert [e["type"] for e in direct] == ["request.stage", "store.txn", "request.completed"]
    assert graph_effects[1]["seq"] == at["create.txn"]


def test_a_request_id_stands_for_its_request_and_unknown_refs_find_nothing(
    pod_create: tuple[Run, dict[str, int]],
) -> None:
    run, at = pod_create
    graph = CausalGraph(run.events)
    assert graph.resolve("bind-1") == at["bind"]
    assert effects(run.events, "bind-1") == effects(run.events, at["bind"])
    assert graph.effects("nope") == [] and graph.causes(10_000) == [] and graph.chain("nope") == []


def test_the_chain_is_causes_self_and_effects(pod_create: tuple[Run, dict[str, int]]) -> None:
    run, at = pod_create
    chain = seqs(CausalGraph(run.events).chain(at["decision"]))
    assert at["create"] in chain and at["decision"] in chain and at["status.txn"] in chain
    assert at["kubelet.watch.10"] not in chain


def test_without_client_watch_events_work_links_to_the_stores_watch_event() -> None:
    run = Run()
    create, txn = run.request("kubectl-1", "user:alice", 10)
    store_watch = run.store_watch(10)
    decision = run.add(
        "scheduler.decision",
        pod="default/web",
        nodes={},
        feasible=[],
        chosen=None,
        revision=10,
        **{"from": "scheduler"},
    )
    assert seqs(causes(run.events, decision)) == [create, txn, store_watch]


def test_failed_transactions_and_reads_write_nothing() -> None:
    run = Run()
    run.add("store.txn", id="r", op="txn", revision=10, succeeded=False, writes=[])
    run.add("store.txn", id="r", op="range", revision=10, key="/registry/pods/")
    watch = run.store_watch(10)
    assert causes(run.events, watch) == []


# -- a real API server, store, scheduler and kubelet on one bus ------------------------------------


ADMIN_TOKEN = "admin-token"
SCHEDULER_TOKEN = "scheduler-token"
KUBELET_TOKEN = "kubelet-token"
CLUSTER = "test"
NODE = "node-1"


@dataclass
class Traced:
    bus: TraceBus
    admin: RESTClient
    scheduler_client: RESTClient
    kubelet_client: RESTClient


@pytest.fixture
async def traced(tmp_path: Path) -> AsyncIterator[Traced]:
    """What the runtime does: one bus for the cluster's store, API server and components."""
    bus = TraceBus(CLUSTER, check_schema=True)
    store = SqliteStore(CLUSTER, path=tmp_path / "store.sqlite3", trace=bus)
    await store.start()
    users = {
        ADMIN_TOKEN: UserInfo.create("admin", groups=[SYSTEM_MASTERS]),
        SCHEDULER_TOKEN: UserInfo.create(KUBE_SCHEDULER),
        KUBELET_TOKEN: UserInfo.create(node_user(NODE), groups=[NODES]),
    }
    server = APIServer(
        CLUSTER,
        store,
        admission_options=WITHOUT_CONTROLLERS,
        resource_types=builtin_types(),
        tokens=users.get,
        trace=bus,
    )
    await server.start()

    def client(token: str) -> RESTClient:
        return RESTClient(
            Config.for_in_process(
                server, CLUSTER, mount_prefix=f"/clusters/{CLUSTER}", bearer_token=token, qps=-1
            )
        )

    admin, scheduler_client, kubelet_client = (
        client(ADMIN_TOKEN),
        client(SCHEDULER_TOKEN),
        client(KUBELET_TOKEN),
    )
    try:
        yield Traced(bus, admin, scheduler_client, kubelet_client)
    finally:
        for rest in (kubelet_client, scheduler_client, admin):
            await rest.aclose()
        await server.stop()
        await store.close()


def _of(events: list[Event], type: str, **fields: Any) -> list[Event]:
    return [e for e in events if e["type"] == type and all(e.get(k) == v for k, v in fields.items())]


async def test_a_pod_create_is_followed_to_the_kubelets_status_update(traced: Traced) -> None:
    """create pod -> its write -> the store's watch -> the scheduler's watch -> its decision -> the
    binding -> its write -> the kubelet's watch -> its sync -> its status update, by ``effects``."""
    bus, admin = traced.bus, traced.admin
    clock = ManualClock()
    kubelet = Kubelet(
        traced.kubelet_client, NODE, clock=clock, rng=random.Random(1), trace=bus, cluster=CLUSTER
    )
    scheduler = Scheduler(
        traced.scheduler_client, clock=clock, rng=random.Random(1), trace=bus, cluster=CLUSTER
    )
    await kubelet.start()  # registers node-1
    await scheduler.start()
    try:
        pods = admin.resource("", "v1", "pods", "default")
        created = await pods.create(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "web"},
                "spec": {"containers": [{"name": "app", "image": "nginx"}]},
            }
        )
        await wait_for(pods, lambda items: any(p.get("status", {}).get("hostIP") for p in items))
    finally:
        await scheduler.stop()
        await kubelet.stop()
    revision = int(created["metadata"]["resourceVersion"])
    recorder = bus.recorder
    events = list(recorder)

    # the write names its request; the request is kubectl's (admin's) create, received from its user
    (write,) = [e for e in recorder.at_revision(revision) if is_write(e)]
    assert write["from"] == "apiserver" and write["to"] == "etcd"
    create_id = write["id"]
    steps = recorder.for_request(create_id)
    received = steps[0]
    assert received["type"] == "request.received" and received["from"] == "user:admin"
    assert (received["user"], received["verb"], received["resource"], received["namespace"]) == (
        "admin",
        "create",
        "pods",
        "default",
    )
    assert steps[1]["type"] == "request.stage" and steps[1]["stage"] == "authentication"
    assert steps[-1]["type"] == "request.completed" and steps[-1]["code"] == 201
    assert steps[-1]["revision"] == revision
    # every step of the request names what it is about, and the storage stage its write
    for step in steps:
        if step["type"].startswith("request."):
            assert (step["user"], step["verb"], step["resource"], step["namespace"]) == (
                "admin",
                "create",
                "pods",
                "default",
            )
    (stored,) = _of(steps, "request.stage", stage="storage")
    assert (stored["op"], stored["key"], stored["revision"]) == (
        "create",
        "/registry/pods/default/web",
        revision,
    )

    graph = CausalGraph(recorder)
    caused = graph.effects(create_id)
    seqs_caused = {e["seq"] for e in caused}

    # the store's watch (etcd -> apiserver) and the scheduler's watch carry the revision
    store_hops = [e for e in caused if is_store_watch_event(e) and e["revision"] == revision]
    assert store_hops and all(e["from"] == "etcd" and e["to"] == "apiserver" for e in store_hops)
    assert all(e["key"] == "/registry/pods/default/web" for e in store_hops)
    to_scheduler = [
        e for e in caused if is_client_watch_event(e) and e["to"] == "scheduler" and e["revision"] == revision
    ]
    assert len(to_scheduler) == 1
    assert to_scheduler[0]["event"] == "ADDED" and to_scheduler[0]["name"] == "web"
    assert to_scheduler[0]["resource"] == "pods" and to_scheduler[0]["namespace"] == "default"
    assert to_scheduler[0]["from"] == "apiserver" and to_scheduler[0]["key"] == "/registry/pods/default/web"
    hop_causes = graph.causes(to_scheduler[0]["seq"], transitive=False)
    assert hop_causes and {e["seq"] for e in hop_causes} <= {e["seq"] for e in store_hops}

    # the decision names the revision it saw and the binding it made
    (decision,) = _of(events, "scheduler.decision", pod="default/web")
    assert decision["chosen"] == NODE and decision["revision"] == revision
    assert (decision["namespace"], decision["name"], decision["node"]) == ("default", "web", NODE)
    assert decision["seq"] in seqs_caused
    assert graph.causes(decision["seq"], transitive=False) == to_scheduler
    (binding_id,) = decision["requests"]
    binding = recorder.for_request(binding_id)
    assert binding[0]["type"] == "request.received" and binding[0]["from"] == "scheduler"
    assert binding[0]["subresource"] == "binding" and binding[0]["seq"] in seqs_caused
    (bound_stage,) = _of(binding, "request.stage", stage="storage")
    assert bound_stage["op"] == "update" and bound_stage["subresource"] == "binding"
    (binding_write,) = [e for e in binding if is_write(e)]
    bound = binding_write["revision"]
    assert bound > revision and binding_write["seq"] in seqs_caused
    assert binding[-1]["type"] == "request.completed" and binding[-1]["revision"] == bound

    # the kubelet's watch carries the binding's revision, and its sync follows from it
    to_kubelet = [e for e in caused if is_client_watch_event(e) and e["to"] == f"kubelet:{NODE}"]
    assert bound in [e["revision"] for e in to_kubelet]
    syncs = [e for e in caused if e["type"] == "reconcile" and e["from"] == f"kubelet:{NODE}"]
    assert syncs and syncs[0]["controller"] == "kubelet" and syncs[0]["key"] == "default/web"
    assert (syncs[0]["namespace"], syncs[0]["name"]) == ("default", "web")
    assert syncs[0]["revision"] == bound and syncs[0]["result"] == "success"
    (delivered,) = graph.causes(syncs[0]["seq"], transitive=False)
    assert delivered["type"] == "watch.event" and delivered["to"] == f"kubelet:{NODE}"

    # ... and the sync's status update is the end of the chain
    (status_id,) = syncs[0]["requests"]
    status = recorder.for_request(status_id)
    assert status[0]["from"] == f"kubelet:{NODE}" and status[0]["subresource"] == "status"
    assert status[0]["seq"] in seqs_caused
    (status_write,) = [e for e in status if is_write(e)]
    assert status_write["seq"] in seqs_caused and status_write["revision"] > bound
    back = {e["seq"] for e in graph.causes(status_write["seq"])}
    assert {received["seq"], decision["seq"], syncs[0]["seq"]} <= back

    # the watches opened and closed on the trace, named by their requests
    (opened,) = _of(events, "watch.opened", to=f"kubelet:{NODE}", resource="pods")
    assert opened["field_selector"] == f"spec.nodeName={NODE}" and opened["source"] == "apiserver"
    assert _of(events, "watch.closed", watch=opened["watch"])

    # every event fits the schema strictly, and seq has no gaps
    assert bus.problems == []
    assert [e["seq"] for e in recorder] == list(range(1, bus.last_seq + 1))


async def test_in_process_cluster_traces_the_api_servers_requests(tmp_path: Path) -> None:
    bus = TraceBus("test", check_schema=True)
    async with in_process_cluster(tmp_path, trace=bus) as cluster:
        subscription = bus.subscribe()
        cms = cluster.resource("", "v1", "configmaps", "default")
        await cms.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "traced"}})
        batch = await asyncio.wait_for(subscription.next_batch(), 10)
        subscription.close()
    assert batch is not None
    received = [e for e in batch.events if e["type"] == "request.received"]
    assert received and received[0]["method"] == "POST"
    request_id = received[0]["id"]
    types = [e["type"] for e in bus.recorder.for_request(request_id)]
    assert types[0] == "request.received" and types[-1] == "request.completed"
    assert types.count("request.stage") >= 5
    assert bus.problems == []
