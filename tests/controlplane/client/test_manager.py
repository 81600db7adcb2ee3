"""The controller-runtime layer: requests and owners (pure), a controller's outcomes on a ManualClock,
then Managers against a real (in-process) API server: reconcile on create, backoff on errors, owned
objects, and leader election between two managers.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from controlplane.client.manager import Kind, Manager
from controlplane.client.reconciler import (
    Controller,
    ReconcilerFunc,
    Request,
    Result,
    TerminalError,
    owner_requests,
)
from controlplane.client.rest import RESTClient
from controlplane.client.workqueue_ratelimiters import ItemExponentialFailureRateLimiter
from controlplane.clock import Clock, ManualClock, ScaledClock
from controlplane.trace import ListSink
from docs.examples import configmap_labeler as labeler
from tests.controlplane.client.conftest import Cluster, configmap

CONFIGMAPS = Kind("", "v1", "configmaps", "ConfigMap")
SECRETS = Kind("", "v1", "secrets", "Secret")


# -- requests and owners -----------------------------------------------------------------------


def test_a_request_is_a_namespace_and_name_with_client_gos_key() -> None:
    assert Request("shop", "web").key == "shop/web"
    assert str(Request("", "node-1")) == "node-1"
    assert Request.from_key("shop/web") == Request("shop", "web")
    assert Request.from_key("node-1") == Request("", "node-1")
    assert Request.for_object({"metadata": {"name": "web", "namespace": "shop"}}) == Request("shop", "web")


def test_an_owned_object_maps_to_its_controlling_owner_of_the_right_kind() -> None:
    def owned(*refs: dict[str, Any]) -> dict[str, Any]:
        return {"metadata": {"name": "web-abc", "namespace": "shop", "ownerReferences": list(refs)}}

    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "1", "controller": True}
    assert owner_requests(owned(rs), owner_kind="ReplicaSet", owner_api_version="apps/v1") == [
        Request("shop", "web")
    ]
    # Not the controller, another kind, another group: not this controller's business.
    assert (
        owner_requests(
            owned({**rs, "controller": False}), owner_kind="ReplicaSet", owner_api_version="apps/v1"
        )
        == []
    )
    assert owner_requests(owned(rs), owner_kind="Deployment", owner_api_version="apps/v1") == []
    assert owner_requests(owned(rs), owner_kind="ReplicaSet", owner_api_version="extensions/v1beta1") == []
    # The version does not matter, the group does.
    assert owner_requests(owned(rs), owner_kind="ReplicaSet", owner_api_version="apps/v2") == [
        Request("shop", "web")
    ]
    assert owner_requests({"metadata": {"name": "x"}}, owner_kind="ReplicaSet", owner_api_version="v1") == []


# -- a controller's outcomes, on a ManualClock (no informers) ----------------------------------


class Script:
    """A reconciler that answers from a script per call and records when it was called."""

    def __init__(self, clock: Clock, outcomes: list[Result | Exception]) -> None:
        self.clock = clock
        self.outcomes = outcomes
        self.calls: list[tuple[Request, float]] = []
        self.called = asyncio.Event()

    async def reconcile(self, request: Request) -> Result:
        self.calls.append((request, self.clock.now()))
        self.called.set()
        outcome = self.outcomes.pop(0) if self.outcomes else Result()
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


@pytest.fixture
async def run_controller() -> AsyncIterator[Callable[..., Awaitable[tuple[Controller, Script, ListSink]]]]:
    controllers: list[Controller] = []

    async def run(
        clock: ManualClock, outcomes: list[Result | Exception]
    ) -> tuple[Controller, Script, ListSink]:
        script, trace = Script(clock, outcomes), ListSink()
        controller = Controller(
            "scripted",
            script,
            rate_limiter=ItemExponentialFailureRateLimiter(1.0, 100.0),
            clock=clock,
            trace=trace,
            trace_fields={"from": "test-manager"},
        )
        await controller.start()
        controllers.append(controller)
        return controller, script, trace

    yield run
    for controller in controllers:
        await controller.stop()


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def test_errors_requeue_with_growing_backoff_and_success_forgets(
    run_controller: Callable[..., Awaitable[tuple[Controller, Script, ListSink]]],
) -> None:
    clock = ManualClock(0.0)
    boom = RuntimeError("boom")
    controller, script, trace = await run_controller(clock, [boom, boom, boom, Result()])
    controller.enqueue(Request("default", "a"))
    await settle()
    for _ in range(8):  # backoff 1 s, 2 s, 4 s on this limiter
        await clock.advance(1)
        await settle()
    assert [t for _, t in script.calls] == [0.0, 1.0, 3.0, 7.0]
    events = trace.of_type("reconcile")
    assert [e["result"] for e in events] == ["error", "error", "error", "success"]
    assert [e["requeue"] for e in events] == [True, True, True, False]
    assert [e["retries"] for e in events] == [1, 2, 3, 0]
    assert all(e["controller"] == "scripted" and e["key"] == "default/a" for e in events)
    assert events[0]["error"] == "RuntimeError('boom')"
    assert events[0]["from"] == "test-manager"
    assert controller.queue.num_requeues(Request("default", "a")) == 0


async def test_requeue_after_looks_again_later_and_requeue_backs_off(
    run_controller: Callable[..., Awaitable[tuple[Controller, Script, ListSink]]],
) -> None:
    clock = ManualClock(0.0)
    controller, script, trace = await run_controller(clock, [Result(requeue_after=30), Result(requeue=True)])
    controller.enqueue(Request("default", "a"))
    await settle()
    await clock.advance(29)
    await settle()
    assert len(script.calls) == 1
    await clock.advance(1)
    await settle()
    assert len(script.calls) == 2
    await clock.advance(1)  # requeue=True: the rate limiter's first delay, 1 s
    await settle()
    assert [t for _, t in script.calls] == [0.0, 30.0, 31.0]
    events = trace.of_type("reconcile")
    assert [(e["result"], e["requeue_after"]) for e in events] == [
        ("requeue_after", 30),
        ("requeue", None),
        ("success", None),
    ]


async def test_a_terminal_error_is_not_retried(
    run_controller: Callable[..., Awaitable[tuple[Controller, Script, ListSink]]],
) -> None:
    clock = ManualClock(0.0)
    controller, script, trace = await run_controller(clock, [TerminalError("spec.replicas is invalid")])
    controller.enqueue(Request("default", "a"))
    await settle()
    await clock.advance(100)
    await settle()
    assert len(script.calls) == 1
    [event] = trace.of_type("reconcile")
    assert (event["result"], event["requeue"]) == ("error", False)


async def test_events_for_a_request_being_reconciled_fold_into_one_more_reconcile() -> None:
    clock = ManualClock(0.0)
    release = asyncio.Event()
    calls: list[Request] = []

    async def slow(request: Request) -> Result:
        calls.append(request)
        await release.wait()
        return Result()

    controller = Controller("slow", ReconcilerFunc(slow), workers=3, clock=clock)
    await controller.start()
    try:
        controller.enqueue(Request("default", "a"))
        await settle()
        for _ in range(10):  # ten changes while the first reconcile runs
            controller.enqueue(Request("default", "a"))
        await settle()
        assert len(calls) == 1, "another worker must not take a request that is being reconciled"
        release.set()
        await settle()
        assert calls == [Request("default", "a"), Request("default", "a")]
    finally:
        await controller.stop()


# -- managers against the API server -----------------------------------------------------------


class Recording:
    """Reconciles by recording the request and what the cache holds for it; can fail on demand."""

    def __init__(self, manager: Manager, failures: dict[str, int] | None = None) -> None:
        self.cache = manager.cache(CONFIGMAPS)
        self.clock = manager.clock
        self.failures = dict(failures or {})
        self.seen: asyncio.Queue[tuple[Request, dict[str, Any] | None, float]] = asyncio.Queue()

    async def reconcile(self, request: Request) -> Result:
        self.seen.put_nowait((request, self.cache.get_by_key(request.key), self.clock.now()))
        if self.failures.get(request.key, 0) > 0:
            self.failures[request.key] -= 1
            raise RuntimeError(f"failing {request.key} on purpose")
        return Result()

    async def next(self, within: float = 5) -> tuple[Request, dict[str, Any] | None, float]:
        return await asyncio.wait_for(self.seen.get(), within)

    async def until(self, request: Request) -> tuple[dict[str, Any] | None, float]:
        """The next reconcile of ``request`` (skipping others): what the cache held, and when."""
        while True:
            seen, cached, at = await self.next()
            if seen == request:
                return cached, at


@pytest.fixture
async def clients(cluster: Cluster) -> AsyncIterator[Callable[[Clock], RESTClient]]:
    made: list[RESTClient] = []

    def client(clock: Clock) -> RESTClient:
        made.append(RESTClient(cluster.config(clock=clock)))
        return made[-1]

    yield client
    for c in made:
        await c.aclose()


async def test_the_manager_reconciles_existing_and_created_objects(
    cluster: Cluster, clients: Callable[[Clock], RESTClient]
) -> None:
    await cluster.configmaps().create(configmap("before"))
    trace = ListSink()
    manager = Manager(clients(ScaledClock()), name="test-manager", cluster="test", trace=trace)
    recording = Recording(manager)
    manager.new_controller("recording", recording, for_=CONFIGMAPS)
    async with manager:
        assert manager.is_leader(), "without leader election the controllers run at once"
        cached, _ = await recording.until(Request("default", "before"))
        assert cached is not None
        await cluster.configmaps().create(configmap("after", {"k": "v"}))
        cached, _ = await recording.until(Request("default", "after"))
        assert cached is not None and cached["data"] == {"k": "v"}, "the cache holds the object by then"
        await cluster.configmaps().delete("after")
        cached, _ = await recording.until(Request("default", "after"))
        assert cached is None, "a deleted object is reconciled too, and is gone from the cache"
    events = [e for e in trace.of_type("reconcile") if e["key"] == "default/after"]
    assert events and all(e["controller"] == "recording" for e in events)
    assert events[0]["cluster"] == "test" and events[0]["from"] == "test-manager"
    assert events[0]["result"] == "success" and events[0]["requeue"] is False


async def test_a_failing_reconcile_is_retried_with_backoff(
    cluster: Cluster, clients: Callable[[Clock], RESTClient]
) -> None:
    clock = ScaledClock()
    manager = Manager(clients(clock), name="test-manager")
    recording = Recording(manager, failures={"default/flaky": 3})
    manager.new_controller("recording", recording, for_=CONFIGMAPS)
    async with manager:
        await cluster.configmaps().create(configmap("flaky"))
        times = [(await recording.until(Request("default", "flaky")))[1] for _ in range(4)]
        gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
        # client-go's default limiter: 5 ms, 10 ms, 20 ms after the 1st, 2nd and 3rd failure.
        assert gaps[0] >= 0.005 and gaps[1] >= 0.01 and gaps[2] >= 0.02
        with pytest.raises(TimeoutError):  # succeeded: not reconciled again
            while True:
                request, _, _ = await recording.next(within=0.3)
                assert request != Request("default", "flaky")


async def test_changes_to_owned_objects_reconcile_the_owner(
    cluster: Cluster, clients: Callable[[Clock], RESTClient]
) -> None:
    owner = await cluster.configmaps().create(configmap("owner"))
    secrets = cluster.client.resource("", "v1", "secrets", "default")
    manager = Manager(clients(ScaledClock()), name="test-manager")
    recording = Recording(manager)
    manager.new_controller("recording", recording, for_=CONFIGMAPS, owns=[SECRETS])
    async with manager:
        await recording.until(Request("default", "owner"))
        # The first list also brings kube-system's ConfigMaps (kubeadm's addons): let them pass.
        with contextlib.suppress(TimeoutError):
            while True:
                await recording.next(within=0.3)
        reference = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": "owner",
            "uid": owner["metadata"]["uid"],
            "controller": True,
        }
        await secrets.create(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "owned", "ownerReferences": [reference]},
                "data": {},
            }
        )
        request, _, _ = await recording.next()
        assert request == Request("default", "owner"), "the owned secret's change reconciles its owner"
        await secrets.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "orphan"}})
        with pytest.raises(TimeoutError):
            await recording.next(within=0.3)


async def test_only_the_leading_manager_runs_its_controllers_and_a_standby_takes_over(
    cluster: Cluster, clients: Callable[[Clock], RESTClient]
) -> None:
    clock = ScaledClock(10.0)
    await cluster.configmaps().create(configmap("work"))
    managers, recordings, traces = [], [], [ListSink(), ListSink()]
    for identity, trace in zip(("manager-a", "manager-b"), traces, strict=True):
        manager = Manager(
            clients(clock),
            name="labeler",
            leader_election=True,
            identity=identity,
            rng=random.Random(identity),
            trace=trace,
        )
        recordings.append(Recording(manager))
        manager.new_controller("recording", recordings[-1], for_=CONFIGMAPS)
        managers.append(manager)
    a, b = managers
    await a.start()
    try:
        await asyncio.wait_for(a.leading.wait(), 5)
        await recordings[0].until(Request("default", "work"))
        await b.start()
        with pytest.raises(TimeoutError):  # b keeps its cache warm but runs no controller
            await asyncio.wait_for(b.leading.wait(), 20 / 10.0)
        assert recordings[1].seen.empty()
        assert b.cache(CONFIGMAPS).get_by_key("default/work") is not None
        leases = cluster.client.resource("coordination.k8s.io", "v1", "leases", "kube-system")
        assert (await leases.get("labeler"))["spec"]["holderIdentity"] == "manager-a"

        await a.stop()  # releases the lease
        assert not a.is_leader()
        await asyncio.wait_for(b.leading.wait(), 10 / 10.0)
        # b's controller starts with every cached object: it reconciles what exists.
        await recordings[1].until(Request("default", "work"))
        assert (await leases.get("labeler"))["spec"]["holderIdentity"] == "manager-b"
    finally:
        await a.stop()
        await b.stop()
    # on the trace: each manager's view of the election, from its diagram node
    states = [[(e["state"], e["reason"]) for e in t.of_type("component.state")] for t in traces]
    lease = "kube-system/labeler"
    assert states[0] == [
        ("new-leader", "the leader is now manager-a"),
        ("started-leading", f"manager-a holds the Lease {lease}"),
        ("stopped-leading", f"manager-a no longer holds the Lease {lease}"),
    ]
    assert states[1] == [
        ("new-leader", "the leader is now manager-a"),
        ("new-leader", "the leader is now manager-b"),
        ("started-leading", f"manager-b holds the Lease {lease}"),
        ("stopped-leading", f"manager-b no longer holds the Lease {lease}"),
    ]
    assert all(
        e["from"] == "labeler" and e["component"] == "labeler" for e in traces[1].of_type("component.state")
    )


async def test_the_managers_event_recorder_writes_events(
    cluster: Cluster, clients: Callable[[Clock], RESTClient]
) -> None:
    cm = await cluster.configmaps().create(configmap("noted"))
    manager = Manager(clients(ScaledClock()), name="test-manager")
    async with manager:
        manager.event_recorder().event(cm, "Normal", "Noted", "looked at it")
        await asyncio.wait_for(manager.broadcaster.flush(), 5)
    [event] = (await cluster.client.resource("", "v1", "events", "default").list())["items"]
    assert (event["reason"], event["source"]["component"]) == ("Noted", "test-manager")


# -- the example of docs/controllers.md --------------------------------------------------------


async def labeled(cluster: Cluster, name: str, value: str) -> dict[str, Any]:
    """Watch ConfigMap ``name`` until its label says ``value``."""
    async with asyncio.timeout(5):
        async with cluster.configmaps().watch() as events:
            async for event in events:
                obj = event.object
                labels = obj["metadata"].get("labels") or {}
                if obj["metadata"]["name"] == name and labels.get(labeler.LABEL) == value:
                    return obj
    raise AssertionError("the watch ended")


async def test_the_documented_configmap_labeler_labels_and_follows_changes(
    cluster: Cluster, clients: Callable[[Clock], RESTClient]
) -> None:
    client = clients(ScaledClock())
    async with labeler.build_manager(client, namespace="default", leader_elect=False) as manager:
        created = await cluster.configmaps().create(configmap("colors", {"red": "ff0000"}))
        await labeled(cluster, "colors", "1")
        await cluster.configmaps().patch("colors", {"data": {"blue": "0000ff"}})
        await labeled(cluster, "colors", "2")
        await asyncio.wait_for(manager.broadcaster.flush(), 5)
    events = (await cluster.client.resource("", "v1", "events", "default").list())["items"]
    assert sorted(e["message"] for e in events) == [f"{labeler.LABEL}=1", f"{labeler.LABEL}=2"]
    assert {e["involvedObject"]["uid"] for e in events} == {created["metadata"]["uid"]}
    assert {e["source"]["component"] for e in events} == {"configmap-labeler"}
