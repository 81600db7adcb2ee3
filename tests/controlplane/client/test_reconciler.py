"""A reconcile on the trace names its cause (the newest resourceVersion that queued it) and its effects
(the Audit-IDs of the requests it made)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from controlplane.client.cache import DeletedFinalStateUnknown
from controlplane.client.informer import ResourceEventHandler
from controlplane.client.reconciler import Controller, Request, Result, resource_version
from controlplane.client.workqueue_ratelimiters import ItemExponentialFailureRateLimiter
from controlplane.clock import ManualClock
from controlplane.trace import ListSink, note_request
from controlplane.trace.schema import validate


class FakeRegistration:
    def has_synced(self) -> bool:
        return True


class FakeInformer:
    """Hands the controller's handler to the test, which plays the informer's events."""

    def __init__(self) -> None:
        self.handler: ResourceEventHandler | None = None

    def add_event_handler(self, handler: ResourceEventHandler) -> FakeRegistration:
        self.handler = handler
        return FakeRegistration()

    async def remove_event_handler(self, registration: FakeRegistration) -> None:
        self.handler = None

    async def wait_for_sync(self) -> None:
        return None


def cm(name: str, rv: int) -> dict[str, Any]:
    return {"metadata": {"namespace": "default", "name": name, "resourceVersion": str(rv)}}


class Scripted:
    """Makes one "request" per reconcile (noting its Audit-ID like the REST client) and answers from a
    script; waits for ``go`` before answering when told to."""

    def __init__(self, outcomes: list[Result | Exception]) -> None:
        self.outcomes = outcomes
        self.calls = 0
        self.go = asyncio.Event()
        self.go.set()
        self.started = asyncio.Event()

    async def reconcile(self, request: Request) -> Result:
        self.calls += 1
        note_request(f"req-{self.calls}")
        self.started.set()
        await self.go.wait()
        outcome = self.outcomes.pop(0) if self.outcomes else Result()
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


@pytest.fixture
async def running() -> AsyncIterator[tuple[Controller, FakeInformer, Scripted, ListSink, ManualClock]]:
    clock, trace, informer = ManualClock(0.0), ListSink(), FakeInformer()
    script = Scripted([])
    controller = Controller(
        "scripted",
        script,
        rate_limiter=ItemExponentialFailureRateLimiter(1.0, 100.0),
        clock=clock,
        trace=trace,
        trace_fields={"from": "controller-manager"},
    )
    controller.watch(informer)  # type: ignore[arg-type]
    await controller.start()
    try:
        yield controller, informer, script, trace, clock
    finally:
        await controller.stop()


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


def test_resource_version_is_the_objects_revision_when_it_is_one() -> None:
    assert resource_version(cm("a", 12)) == 12
    assert resource_version({"metadata": {"resourceVersion": ""}}) is None
    assert resource_version({"metadata": {}}) is None and resource_version({}) is None


async def test_a_reconcile_names_the_newest_revision_that_queued_it_and_its_requests(
    running: tuple[Controller, FakeInformer, Scripted, ListSink, ManualClock],
) -> None:
    _, informer, script, trace, _ = running
    assert informer.handler is not None
    script.go.clear()
    informer.handler.on_add(cm("a", 5))
    await asyncio.wait_for(script.started.wait(), 5)
    # while "a" is being reconciled, two changes queue the next reconcile: the newer one names it
    informer.handler.on_update(cm("a", 5), cm("a", 8))
    informer.handler.on_update(cm("a", 8), cm("a", 7))  # an older version arriving late does not win
    script.go.set()
    await settle()
    events = trace.of_type("reconcile")
    assert [(e["revision"], e["requests"]) for e in events] == [(5, ["req-1"]), (8, ["req-2"])]
    assert all(e["from"] == "controller-manager" and e["key"] == "default/a" for e in events)
    assert all((e["namespace"], e["name"]) == ("default", "a") for e in events)


async def test_a_retry_keeps_its_cause_and_a_plain_enqueue_has_none(
    running: tuple[Controller, FakeInformer, Scripted, ListSink, ManualClock],
) -> None:
    controller, informer, script, trace, clock = running
    assert informer.handler is not None
    script.outcomes[:] = [RuntimeError("boom"), Result()]
    informer.handler.on_add(cm("b", 3))
    await settle()
    await clock.advance(1)  # the backoff of the first failure
    await settle()
    controller.enqueue(Request("default", "b"))  # asked for by hand: no watch event behind it
    await settle()
    informer.handler.on_delete(DeletedFinalStateUnknown("default/gone", None))
    await settle()
    events = trace.of_type("reconcile")
    assert [(e["key"], e["result"], e["revision"]) for e in events] == [
        ("default/b", "error", 3),
        ("default/b", "success", 3),
        ("default/b", "success", None),
        ("default/gone", "success", None),
    ]
    assert [e["requests"] for e in events] == [["req-1"], ["req-2"], ["req-3"], ["req-4"]]


async def test_a_cluster_scoped_object_is_reconciled_without_a_namespace(
    running: tuple[Controller, FakeInformer, Scripted, ListSink, ManualClock],
) -> None:
    controller, _, _, trace, _ = running
    controller.enqueue(Request("", "node-1"))
    await settle()
    (event,) = trace.of_type("reconcile")
    assert (event["key"], event["name"]) == ("node-1", "node-1") and "namespace" not in event
    assert validate(event, envelope=False, strict=True) == []
