"""The scheduler against a real API server (in process): informers in, bindings, Events and status out.

Waiting is done on the API itself: list, check, and if not there yet, watch from the list's
resourceVersion until something changes, then look again; no sleeps. The scheduler runs on a
``ManualClock``, so backoffs end when the test says so.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from controlplane.api.kinds import builtin_types
from controlplane.api.meta import Object
from controlplane.apiserver.server import APIServer
from controlplane.client.config import Config
from controlplane.client.leaderelection import LeaderElectionConfig
from controlplane.client.rest import ResourceClient, RESTClient
from controlplane.clock import ManualClock
from controlplane.components.scheduler.scheduler import LEASE_NAME, Scheduler
from controlplane.identity import SYSTEM_MASTERS, UserInfo
from controlplane.store.sqlite import SqliteStore
from controlplane.trace import ListSink
from tests.support.admission import WITHOUT_CONTROLLERS

TOKEN = "scheduler-test-token"
ADMIN = UserInfo.create("admin", groups=[SYSTEM_MASTERS])
CLUSTER = "test"
#: The host the scheduler says it runs on (its Events' ``reportingInstance``).
HOSTNAME = "control-plane"
#: Seconds of wall time a test waits for the API to show what it expects.
WAIT_TIMEOUT = 10.0


@pytest.fixture
async def client(tmp_path: Path, trace: ListSink) -> AsyncIterator[RESTClient]:
    store = SqliteStore(CLUSTER, path=tmp_path / "store.sqlite3", trace=trace)
    await store.start()
    server = APIServer(
        CLUSTER,
        store,
        resource_types=builtin_types(),
        tokens=lambda token: ADMIN if token == TOKEN else None,
        trace=trace,
        admission_options=WITHOUT_CONTROLLERS,
    )
    await server.start()
    config = Config.for_in_process(
        server, CLUSTER, mount_prefix=f"/clusters/{CLUSTER}", bearer_token=TOKEN, qps=-1
    )
    rest = RESTClient(config)
    try:
        yield rest
    finally:
        await rest.aclose()
        await server.stop()
        await store.close()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


class DecisionSink(ListSink):
    """A ``ListSink`` a test can wait on: ``decisions(n)`` returns once n scheduling attempts were made."""

    def __init__(self) -> None:
        super().__init__()
        self.changed = asyncio.Event()

    def emit(self, type: str, /, **fields: Any) -> None:
        super().emit(type, **fields)
        if type == "scheduler.decision":
            self.changed.set()

    async def decisions(self, count: int) -> list[Object]:
        async with asyncio.timeout(WAIT_TIMEOUT):
            while len(found := self.of_type("scheduler.decision")) < count:
                self.changed.clear()
                await self.changed.wait()
        return found


@pytest.fixture
def trace() -> DecisionSink:
    return DecisionSink()


StartScheduler = Callable[[], Awaitable[Scheduler]]


@pytest.fixture
async def start_scheduler(
    client: RESTClient, clock: ManualClock, trace: ListSink
) -> AsyncIterator[StartScheduler]:
    """Start the scheduler once the test has made its nodes: ``start`` waits for the informers' first
    list, so the first attempt already sees every node with its allocatable."""
    started: list[Scheduler] = []

    async def start() -> Scheduler:
        sched = Scheduler(
            client, clock=clock, rng=random.Random(1), trace=trace, cluster=CLUSTER, hostname=HOSTNAME
        )
        await sched.start()
        started.append(sched)
        return sched

    try:
        yield start
    finally:
        for sched in started:
            await sched.stop()


def pods(client: RESTClient) -> ResourceClient:
    return client.resource("", "v1", "pods", "default")


def nodes(client: RESTClient) -> ResourceClient:
    return client.resource("", "v1", "nodes")


def events(client: RESTClient) -> ResourceClient:
    """The scheduler's Events through ``events.k8s.io/v1``, the API it writes them with."""
    return client.resource("events.k8s.io", "v1", "events", "default")


def node(name: str, *, cpu: str, memory: str) -> Object:
    resources = {"cpu": cpu, "memory": memory, "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {"capacity": resources, "allocatable": resources},
    }


async def add_node(client: RESTClient, name: str, *, cpu: str = "2", memory: str = "4Gi") -> None:
    """Create the node, then set its status through ``nodes/<name>/status``."""
    body = node(name, cpu=cpu, memory=memory)
    status = body.pop("status")
    await nodes(client).create(body)
    await nodes(client).patch(name, {"status": status}, subresource="status")


async def add_pod(client: RESTClient, name: str, *, cpu: str = "500m", memory: str = "512Mi") -> None:
    container = {"name": "app", "image": "nginx", "resources": {"requests": {"cpu": cpu, "memory": memory}}}
    await pods(client).create(
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"containers": [container]}}
    )


async def wait_for(resource: ResourceClient, done: Callable[[list[Object]], bool]) -> list[Object]:
    """List until ``done(items)``; between lists, wait for the next watch event (no polling sleeps)."""
    async with asyncio.timeout(WAIT_TIMEOUT):
        while True:
            listed = await resource.list()
            items: list[Object] = listed["items"]
            if done(items):
                return items
            rv = listed["metadata"]["resourceVersion"]
            async with resource.watch(resource_version=rv) as stream:
                async for _ in stream:
                    break


def node_of(pod: Object) -> str | None:
    node: str | None = pod["spec"].get("nodeName")
    return node


def condition(pod: Object, type: str) -> Object | None:
    return next((c for c in pod.get("status", {}).get("conditions") or [] if c["type"] == type), None)


async def test_pods_are_bound_and_spread_over_the_nodes(
    client: RESTClient, start_scheduler: StartScheduler, trace: ListSink
) -> None:
    for name in ("node-a", "node-b", "node-c"):
        await add_node(client, name)
    await start_scheduler()
    for i in range(6):
        await add_pod(client, f"web-{i}")

    items = await wait_for(pods(client), lambda items: len(items) == 6 and all(map(node_of, items)))

    assert Counter(node_of(p) for p in items) == {"node-a": 2, "node-b": 2, "node-c": 2}
    for pod in items:
        scheduled = condition(pod, "PodScheduled")
        assert scheduled is not None and scheduled["status"] == "True"
    decisions = trace.of_type("scheduler.decision")
    assert sorted(d["pod"] for d in decisions) == [f"default/web-{i}" for i in range(6)]
    assert all(d["from"] == "scheduler" and d["cluster"] == CLUSTER for d in decisions)
    bound = {p["metadata"]["name"]: node_of(p) for p in items}
    assert all(d["chosen"] == bound[d["pod"].split("/")[1]] for d in decisions)
    assert all(
        (d["namespace"], d["name"], d["node"]) == ("default", d["pod"].split("/")[1], d["chosen"])
        for d in decisions
    )
    # each decision names the pod's revision it saw (its create) and the binding request it made
    writes = {e["revision"]: e for e in trace.of_type("store.txn") if e["op"] == "txn" and e.get("writes")}
    completed = {e["id"]: e for e in trace.of_type("request.completed")}
    for decision in decisions:
        key = "/registry/pods/" + decision["pod"]
        [created] = writes[decision["revision"]]["writes"]
        assert (created["type"], created["key"], created["pod"]["node"]) == ("PUT", key, "")
        (binding_id,) = decision["requests"]
        assert completed[binding_id]["code"] == 201
        (binding_write,) = [e for e in writes.values() if e["id"] == binding_id]
        assert binding_write["writes"][0]["key"] == key
        assert binding_write["writes"][0]["pod"]["node"] == decision["chosen"], (
            "the binding's write names its node"
        )

    recorded = await wait_for(
        events(client), lambda items: sum(e["reason"] == "Scheduled" for e in items) == 6
    )
    web0 = next(e for e in recorded if e["regarding"]["name"] == "web-0")
    assert web0["note"] == f"Successfully assigned default/web-0 to {bound['web-0']}"
    assert web0["type"] == "Normal"
    assert web0["action"] == "Binding"
    assert web0["reportingController"] == "default-scheduler"
    assert web0["reportingInstance"] == f"default-scheduler-{HOSTNAME}"
    assert web0["regarding"]["kind"] == "Pod" and web0["regarding"]["uid"]
    assert web0["eventTime"].endswith("Z") and "." in web0["eventTime"], "eventTime is a MicroTime"
    assert web0["metadata"]["name"].startswith("web-0.")
    assert "series" not in web0 and "deprecatedSource" not in web0 and "deprecatedCount" not in web0


async def test_a_pod_too_big_for_every_node_stays_pending_until_a_big_node_comes(
    client: RESTClient, start_scheduler: StartScheduler, clock: ManualClock, trace: ListSink
) -> None:
    for name in ("node-a", "node-b", "node-c"):
        await add_node(client, name)
    await start_scheduler()
    await add_pod(client, "big", cpu="8")
    # DefaultPreemption appends what it found: no node has a pod of lower priority to evict.
    message = (
        "0/3 nodes are available: 3 Insufficient cpu. "
        "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
    )

    recorded = await wait_for(
        events(client), lambda items: any(e["reason"] == "FailedScheduling" for e in items)
    )
    failed = next(e for e in recorded if e["reason"] == "FailedScheduling")
    assert failed["type"] == "Warning"
    assert failed["note"] == message
    assert failed["action"] == "Scheduling"
    assert failed["regarding"]["name"] == "big"
    assert failed["reportingController"] == "default-scheduler"

    def unschedulable(items: list[Object]) -> bool:
        scheduled = condition(items[0], "PodScheduled")
        return scheduled is not None and scheduled["status"] == "False"

    (pod,) = await wait_for(pods(client), unschedulable)
    assert node_of(pod) is None
    assert pod["status"]["phase"] == "Pending"
    scheduled = condition(pod, "PodScheduled")
    assert scheduled is not None
    assert scheduled["reason"] == "Unschedulable"
    assert scheduled["message"] == message

    (decision,) = trace.of_type("scheduler.decision")
    assert decision["pod"] == "default/big"
    assert decision["chosen"] is None and "node" not in decision
    assert decision["requests"] == []  # no binding
    assert decision["message"] == message
    assert set(decision["nodes"]) == {"node-a", "node-b", "node-c"}
    for verdict in decision["nodes"].values():
        assert verdict["feasible"] is False
        assert verdict["filters"]["NodeResourcesFit"] == {
            "code": "Unschedulable",
            "reasons": ["Insufficient cpu"],
        }

    # A kubelet registers its node with its status in one write (a Node keeps the status it is created
    # with), so the scheduler sees node-big whole. Whether the NodeAdd comes before or after the clock
    # moves, the pod is retried: from backoffQ once it expires, or straight to activeQ.
    await nodes(client).create(node("node-big", cpu="16", memory="64Gi"))
    await clock.advance(10)  # the pod's backoff (1 s after its first attempt) is over

    (pod,) = await wait_for(pods(client), lambda items: node_of(items[0]) is not None)
    assert node_of(pod) == "node-big"
    last = trace.of_type("scheduler.decision")[-1]
    assert last["chosen"] == "node-big"
    assert last["feasible"] == ["node-big"]
    assert last["nodes"]["node-a"]["feasible"] is False


async def test_a_failure_repeated_on_an_unchanged_pod_becomes_a_series_not_new_events(
    client: RESTClient, start_scheduler: StartScheduler, clock: ManualClock, trace: DecisionSink
) -> None:
    """events.k8s.io/v1's series: a repeat of an Event about the same pod (same resourceVersion) patches
    ``series.count`` on the first one instead of writing another Event."""
    for name in ("node-a", "node-b", "node-c"):
        await add_node(client, name)
    sched = await start_scheduler()
    await add_pod(client, "big", cpu="8")
    await trace.decisions(1)
    for attempt in (2, 3):
        # A label change is a node update that may let the pod fit: it is tried again, and fails again.
        await nodes(client).patch("node-a", {"metadata": {"labels": {"attempt": str(attempt)}}})
        await clock.advance(60)  # past the pod's backoff
        await trace.decisions(attempt)
    await sched.flush_events()

    failed = [e for e in (await events(client).list())["items"] if e["reason"] == "FailedScheduling"]
    assert len(failed) < 3, f"three failures wrote {len(failed)} Events: repeats must become a series"
    series = [e for e in failed if "series" in e]
    assert len(series) == 1, failed
    assert series[0]["series"]["count"] == 2, "the first repeat is written; later ones wait for the upkeep"
    assert series[0]["series"]["lastObservedTime"] > series[0]["eventTime"]
    assert all(
        e["note"].startswith("0/3 nodes are available: 3 Insufficient cpu. preemption: ") for e in failed
    )


async def test_the_same_failure_after_a_spec_change_is_written_for_the_new_generation(
    client: RESTClient, start_scheduler: StartScheduler, clock: ManualClock, trace: DecisionSink
) -> None:
    """``UpdatePodCondition`` compares the observedGeneration: a pod changed in a way that fits no
    better (a toleration of the wrong effect) gets its PodScheduled=False again, for its new
    generation, so that a client waiting for the condition of this generation sees it."""
    await nodes(client).create(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "node-a"},
            "spec": {"taints": [{"key": "dedicated", "value": "lab", "effect": "NoSchedule"}]},
        }
    )
    await start_scheduler()
    await add_pod(client, "pinned")
    (pod,) = await wait_for(pods(client), lambda items: condition(items[0], "PodScheduled") is not None)
    first = condition(pod, "PodScheduled")
    assert first is not None and first["observedGeneration"] == pod["metadata"]["generation"] == 1
    wrong = {"key": "dedicated", "operator": "Equal", "value": "lab", "effect": "NoExecute"}
    await pods(client).patch("pinned", {"spec": {"tolerations": [wrong]}})
    await clock.advance(60)  # past the pod's backoff
    (pod,) = await wait_for(
        pods(client),
        lambda items: (condition(items[0], "PodScheduled") or {}).get("observedGeneration") == 2,
    )
    again = condition(pod, "PodScheduled")
    assert again is not None and (again["status"], again["message"]) == ("False", first["message"])
    assert again["lastTransitionTime"] == first["lastTransitionTime"], "no transition: still False"


async def test_a_long_failure_message_is_cut_to_fit_an_events_note_but_not_the_condition(
    client: RESTClient, start_scheduler: StartScheduler
) -> None:
    """``truncateMessage``: an Event's note is at most 1024 characters; the pod condition keeps it all."""
    taints = [{"key": f"dedicated-{'x' * 40}-{i}", "value": "v", "effect": "NoSchedule"} for i in range(30)]
    for i in range(30):
        await nodes(client).create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{i}"},
                                    "spec": {"taints": [taints[i]]}})  # fmt: skip
    await start_scheduler()
    await add_pod(client, "tolerates-nothing")

    recorded = await wait_for(
        events(client), lambda items: any(e["reason"] == "FailedScheduling" for e in items)
    )
    (note,) = [e["note"] for e in recorded if e["reason"] == "FailedScheduling"]
    (pod,) = await wait_for(pods(client), lambda items: condition(items[0], "PodScheduled") is not None)
    scheduled = condition(pod, "PodScheduled")
    assert scheduled is not None
    message = scheduled["message"]
    assert len(message) > 1024
    assert len(note) == 1024 and note.endswith(" ...")
    assert note == message[:1020] + " ..."


async def test_a_pod_waits_for_its_claim_and_volume_with_upstreams_messages(
    client: RESTClient, start_scheduler: StartScheduler, clock: ManualClock, trace: DecisionSink
) -> None:
    """VolumeBinding end to end, on four nodes (a tainted control plane, three workers). A missing
    claim, then an unbound Immediate one, fail in its PreFilter: the message is that reason alone,
    not a count per node, and preemption helps nowhere. Once the claim is bound, its volume is a
    per-node matter (Filter): missing, then on no node the pod may use, then on node-b, where the
    pod goes. Each claim or volume change moves the pod back to the queue."""
    for name in ("control-plane", "node-a", "node-b", "node-c"):
        body = node(name, cpu="2", memory="4Gi")
        body["metadata"]["labels"] = {"kubernetes.io/hostname": name}
        if name == "control-plane":
            body["spec"] = {
                "taints": [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]
            }
        await nodes(client).create(body)
    await start_scheduler()
    container = {"name": "app", "image": "nginx"}
    volumes = [{"name": "data", "persistentVolumeClaim": {"claimName": "missing"}}]
    await pods(client).create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "uses-data"},
            "spec": {"containers": [container], "volumes": volumes},
        }
    )
    not_helpful = " preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling."
    missing = '0/4 nodes are available: persistentvolumeclaim "missing" not found.' + not_helpful

    async def condition_says(message: str) -> None:
        def says(items: list[Object]) -> bool:
            scheduled = condition(items[0], "PodScheduled")
            return scheduled is not None and scheduled["message"] == message

        (pod,) = await wait_for(pods(client), says)
        scheduled = condition(pod, "PodScheduled")
        assert scheduled is not None and (scheduled["status"], scheduled["reason"]) == (
            "False",
            "Unschedulable",
        )

    recorded = await wait_for(
        events(client), lambda items: any(e["reason"] == "FailedScheduling" for e in items)
    )
    (failed,) = [e for e in recorded if e["reason"] == "FailedScheduling"]
    assert failed["note"] == missing
    await condition_says(missing)
    (decision,) = await trace.decisions(1)
    assert decision["message"] == missing
    assert (decision["evaluated"], decision["of"], decision["requests"]) == (0, 4, [])
    assert decision["preemption"]["nominated"] is None
    for verdict in decision["nodes"].values():
        assert verdict["filters"] == {
            "VolumeBinding": {
                "code": "UnschedulableAndUnresolvable",
                "reasons": ['persistentvolumeclaim "missing" not found'],
                "extensionPoint": "PreFilter",
            }
        }

    # The claim, of no class: Immediate, and nobody binds it (no PV controller here).
    claims = client.resource("", "v1", "persistentvolumeclaims", "default")
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "missing"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    await claims.create(claim)
    await clock.advance(60)  # past the pod's backoff
    unbound = "0/4 nodes are available: pod has unbound immediate PersistentVolumeClaims." + not_helpful
    await condition_says(unbound)
    assert trace.of_type("scheduler.decision")[-1]["evaluated"] == 0

    # Bound as the PV controller binds (the volume named, bind-completed), to a volume not there.
    await claims.patch(
        "missing",
        {
            "metadata": {"annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
            "spec": {"volumeName": "local"},
        },
    )
    await clock.advance(60)
    taint = "1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }"
    await condition_says(
        f"0/4 nodes are available: {taint}, "
        "3 node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)." + not_helpful
    )

    # A local volume on a node that is not in the cluster: every worker is filtered, and counted.
    volumes_client = client.resource("", "v1", "persistentvolumes")

    def local(host: str) -> Object:
        term = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [host]}]}
        return {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": "local"},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "local": {"path": "/mnt/disk"},
                "nodeAffinity": {"required": {"nodeSelectorTerms": [term]}},
            },
        }

    await volumes_client.create(local("node-gone"))
    await clock.advance(60)
    await condition_says(
        f"0/4 nodes are available: {taint}, 3 node(s) had volume node affinity conflict." + not_helpful
    )
    last = trace.of_type("scheduler.decision")[-1]
    assert last["evaluated"] == 4
    assert last["nodes"]["node-a"]["filters"]["VolumeBinding"] == {
        "code": "UnschedulableAndUnresolvable",
        "reasons": ["node(s) had volume node affinity conflict"],
    }

    # The volume on node-b: the pod goes there.
    await volumes_client.delete("local")
    await volumes_client.create(local("node-b"))
    await clock.advance(60)
    (pod,) = await wait_for(pods(client), lambda items: node_of(items[0]) is not None)
    assert node_of(pod) == "node-b"


async def test_pods_of_another_scheduler_are_left_alone(
    client: RESTClient, start_scheduler: StartScheduler
) -> None:
    await add_node(client, "node-a")
    await start_scheduler()
    container = {"name": "app", "image": "nginx"}
    await pods(client).create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "other"},
            "spec": {"schedulerName": "my-scheduler", "containers": [container]},
        }
    )
    await add_pod(client, "mine")

    items = await wait_for(
        pods(client), lambda items: any(p["metadata"]["name"] == "mine" and node_of(p) for p in items)
    )
    assert {p["metadata"]["name"]: node_of(p) for p in items} == {"other": None, "mine": "node-a"}


async def test_start_and_stop_leave_no_tasks(client: RESTClient, clock: ManualClock) -> None:
    before = asyncio.all_tasks()
    made: list[RESTClient] = []
    closed: list[RESTClient] = []

    class Client(RESTClient):
        async def aclose(self) -> None:
            closed.append(self)
            await super().aclose()

    def factory() -> RESTClient:
        made.append(Client(client.config))
        return made[-1]

    sched = Scheduler(factory, clock=clock, rng=random.Random(0))
    async with sched:
        assert sched.started
        # Its own client, and one for Events with a rate limiter of its own (``eventClient``)
        assert len(made) == 2 and made[0] is not made[1]
    assert not sched.started
    assert asyncio.all_tasks() == before
    assert sorted(map(id, closed)) == sorted(map(id, made)), "each client it made is closed"


async def test_only_the_leader_schedules_and_a_standby_takes_over_when_it_stops(
    client: RESTClient, clock: ManualClock, trace: ListSink
) -> None:
    for name in ("node-a", "node-b"):
        await add_node(client, name)
    first = Scheduler(
        client,
        clock=clock,
        rng=random.Random(1),
        trace=trace,
        cluster=CLUSTER,
        leader_election=LeaderElectionConfig(LEASE_NAME, identity="first"),
    )
    second = Scheduler(
        client,
        clock=clock,
        rng=random.Random(2),
        trace=trace,
        cluster=CLUSTER,
        leader_election=LeaderElectionConfig(LEASE_NAME, identity="second"),
    )
    await first.start()
    try:
        await asyncio.wait_for(first.leading.wait(), WAIT_TIMEOUT)
        await second.start()
        await add_pod(client, "web-0")
        await wait_for(pods(client), lambda items: bool(items) and all(map(node_of, items)))
        lease = await client.resource("coordination.k8s.io", "v1", "leases", "kube-system").get(
            "kube-scheduler"
        )
        assert lease["spec"]["holderIdentity"] == "first"
        assert not second.is_leader(), "the standby scheduled while another replica held the lease"

        await first.stop()  # releases the lease: the standby takes it at its next retry
        await clock.advance(5)
        await asyncio.wait_for(second.leading.wait(), WAIT_TIMEOUT)
        await add_pod(client, "web-1")
        items = await wait_for(pods(client), lambda items: len(items) == 2 and all(map(node_of, items)))
        assert {p["metadata"]["name"] for p in items} == {"web-0", "web-1"}
        lease = await client.resource("coordination.k8s.io", "v1", "leases", "kube-system").get(
            "kube-scheduler"
        )
        assert lease["spec"]["holderIdentity"] == "second"
        assert lease["spec"]["leaseTransitions"] >= 1
    finally:
        await first.stop()
        await second.stop()
    states = [(e["state"], e["reason"]) for e in trace.of_type("component.state")]
    assert all(e["from"] == "scheduler" for e in trace.of_type("component.state"))
    lease_name = "kube-system/kube-scheduler"
    led = [s for s in states if s[0] != "new-leader"]
    assert led == [
        ("started-leading", f"first holds the Lease {lease_name}"),
        ("stopped-leading", f"first no longer holds the Lease {lease_name}"),
        ("started-leading", f"second holds the Lease {lease_name}"),
        ("stopped-leading", f"second no longer holds the Lease {lease_name}"),
    ]
    assert ("new-leader", "the leader is now second") in states


async def add_priority_classes(client: RESTClient) -> None:
    classes = client.resource("scheduling.k8s.io", "v1", "priorityclasses")
    for name, value in (("low", 10), ("high", 1000)):
        body = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}}
        await classes.create({**body, "value": value})


async def add_prioritized_pod(
    client: RESTClient, name: str, priority_class: str, *, cpu: str = "1"
) -> Object:
    container = {"name": "app", "image": "nginx", "resources": {"requests": {"cpu": cpu}}}
    spec = {"containers": [container], "priorityClassName": priority_class}
    return await pods(client).create(
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}
    )


def by_name(items: list[Object]) -> dict[str, Object]:
    return {p["metadata"]["name"]: p for p in items}


async def test_a_high_priority_pod_preempts_a_lower_one_and_takes_its_room(
    client: RESTClient, start_scheduler: StartScheduler, clock: ManualClock, trace: DecisionSink
) -> None:
    await add_priority_classes(client)
    await add_node(client, "node-a", cpu="1")
    sched = await start_scheduler()
    low = await add_prioritized_pod(client, "low", "low")
    assert (low["spec"]["priority"], low["spec"]["preemptionPolicy"]) == (10, "PreemptLowerPriority")
    await wait_for(pods(client), lambda items: all(node_of(p) == "node-a" for p in items))
    high = await add_prioritized_pod(client, "high", "high")
    assert high["spec"]["priority"] == 1000

    def preempted(items: list[Object]) -> bool:
        victim, preemptor = by_name(items)["low"], by_name(items)["high"]
        return bool(victim["metadata"].get("deletionTimestamp")) and (
            preemptor.get("status", {}).get("nominatedNodeName") == "node-a"
        )

    found = by_name(await wait_for(pods(client), preempted))
    target = condition(found["low"], "DisruptionTarget")
    assert target is not None and (target["status"], target["reason"]) == ("True", "PreemptionByScheduler")
    assert target["message"] == "default-scheduler: preempting to accommodate a higher priority pod"
    assert node_of(found["high"]) is None, "it waits for the victim to be gone"
    decision = next(d for d in trace.of_type("scheduler.decision") if d.get("preemption"))
    assert decision["preemption"]["nominated"] == "node-a"
    assert decision["preemption"]["victims"] == ["default/low"]
    assert len(decision["requests"]) == 3, "the victim's condition and deletion, the nomination"
    assert decision["message"] == "0/1 nodes are available: 1 Insufficient cpu."
    await sched.flush_events()
    recorded = await events(client).list()
    [note] = [e["note"] for e in recorded["items"] if e["reason"] == "Preempted"]
    assert note == f"Preempted by pod {high['metadata']['uid']} on node node-a"

    # The kubelet would now stop the victim's containers and delete it for good; the test does so.
    await pods(client).delete("low", grace_period_seconds=0)
    await clock.advance(60)  # past the preemptor's backoff
    bound = await wait_for(pods(client), lambda items: [node_of(p) for p in items] == ["node-a"])
    assert bound[0]["metadata"]["name"] == "high"


async def test_a_preemptor_waits_for_all_its_victims_and_does_not_preempt_again(
    client: RESTClient, start_scheduler: StartScheduler, clock: ManualClock, trace: DecisionSink
) -> None:
    await add_priority_classes(client)
    await add_node(client, "node-a", cpu="2")
    await start_scheduler()
    for name in ("low-1", "low-2"):
        await add_prioritized_pod(client, name, "low")
    await wait_for(pods(client), lambda items: all(node_of(p) == "node-a" for p in items))
    await add_prioritized_pod(client, "high", "high", cpu="2")
    await wait_for(
        pods(client),
        lambda items: all(
            p["metadata"].get("deletionTimestamp") for p in items if p["metadata"]["name"] != "high"
        ),
    )
    attempts = len(await trace.decisions(3))  # two bindings, one preemption

    # One victim gone: the room is not enough yet, and the other victim is on its way out.
    await pods(client).delete("low-1", grace_period_seconds=0)
    await clock.advance(60)
    retry = (await trace.decisions(attempts + 1))[-1]
    assert retry["pod"] == "default/high" and retry["chosen"] is None
    assert retry["message"] == (
        "0/1 nodes are available: 1 Insufficient cpu. "
        "preemption: not eligible due to a terminating pod on the nominated node."
    )
    assert retry["requests"] == [], "no new victims"

    await pods(client).delete("low-2", grace_period_seconds=0)
    await clock.advance(60)
    bound = await wait_for(pods(client), lambda items: [node_of(p) for p in items] == ["node-a"])
    assert bound[0]["metadata"]["name"] == "high"


async def test_a_higher_preemptor_takes_the_nomination_of_a_lower_one_on_the_same_node(
    client: RESTClient, start_scheduler: StartScheduler, trace: DecisionSink
) -> None:
    await add_priority_classes(client)
    await client.resource("scheduling.k8s.io", "v1", "priorityclasses").create(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "mid"},
            "value": 100,
        }
    )
    await add_node(client, "node-a", cpu="2")
    await start_scheduler()
    for name in ("low-1", "low-2"):
        await add_prioritized_pod(client, name, "low")
    await wait_for(pods(client), lambda items: all(node_of(p) == "node-a" for p in items))

    def nominated(name: str) -> Callable[[list[Object]], bool]:
        return lambda items: by_name(items)[name].get("status", {}).get("nominatedNodeName") == "node-a"

    await add_prioritized_pod(client, "mid", "mid")
    await wait_for(pods(client), nominated("mid"))
    await add_prioritized_pod(client, "high", "high", cpu="2")
    await wait_for(pods(client), nominated("high"))
    found = by_name(
        await wait_for(pods(client), lambda items: "nominatedNodeName" not in by_name(items)["mid"]["status"])
    )
    assert found["high"]["status"]["nominatedNodeName"] == "node-a"
    high = next(d for d in trace.of_type("scheduler.decision") if d["pod"] == "default/high")
    assert sorted(high["preemption"]["victims"]) == ["default/low-1", "default/low-2"]
