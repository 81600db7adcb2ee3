"""A check against a real API server and its real trace: the documented example holds when the
ConfigMap is created, and only then.

The evaluator is pure; here the test plays the runner: it reads what ``reads()`` asks through the
API server and offers the trace bus's events, in seq order, as a subscription would.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from controlplane.store.sqlite import SqliteStore
from controlplane.trace.bus import TraceBus
from courses.engine.checks import Evaluator, ReadResult, Status, parse_check
from tests.support.apiserver import admin_api

CMS = "/api/v1/namespaces/default/configmaps"

CHECK: dict[str, Any] = {
    "all": [
        {
            "id": "created",
            "trace": {
                "sequence": [
                    {
                        "type": "request.received",
                        "verb": "create",
                        "resource": "configmaps",
                        "user": "$student",
                        "as": "req",
                    },
                    {
                        "type": "store.txn",
                        "writes": {"type": "PUT", "key": "/registry/configmaps/*/app-config"},
                        "same_request": "req",
                    },
                    {"type": "request.completed", "code": 201, "same_request": "req"},
                ]
            },
        },
        {
            "id": "stored",
            "state": {
                "get": {"apiVersion": "v1", "kind": "ConfigMap", "name": "app-config"},
                "conditions": [
                    {"path": "data.color", "equals": "blue"},
                    {"path": "metadata.uid", "exists": True},
                ],
            },
        },
    ]
}


@pytest.fixture
async def lab(tmp_path: Path) -> AsyncIterator[tuple[TraceBus, httpx.AsyncClient]]:
    bus = TraceBus("test", check_schema=True)
    store = SqliteStore("test", path=tmp_path / "store.sqlite3", trace=bus)
    await store.start()
    try:
        async with admin_api(store, trace=bus) as (_, client):
            yield bus, client
    finally:
        await store.close()


async def run(evaluator: Evaluator, bus: TraceBus, client: httpx.AsyncClient, after: int) -> int:
    """One turn of a runner: offer the new events, then answer every read asked for."""
    for event in bus.recorder.since(after):
        evaluator.offer(event)
        after = event["seq"]
    for read in evaluator.reads():
        response = await client.get(read.url)
        evaluator.give(read, ReadResult(response.status_code, response.json()))
    return after


async def test_the_documented_check_against_a_real_api_server(
    lab: tuple[TraceBus, httpx.AsyncClient],
) -> None:
    bus, client = lab
    begun = bus.last_seq
    evaluator = parse_check(CHECK, where="test").evaluator(student="admin", since_seq=begun, stability=0)
    seen = await run(evaluator, bus, client, begun)
    verdict = evaluator.verdict(0.0)
    assert verdict.status is Status.FAILING
    assert verdict.failing_ids == {"created", "stored"}

    # Another ConfigMap first: its request is noise, and reads nothing new for "stored".
    other = await client.post(CMS, json={"kind": "ConfigMap", "metadata": {"name": "other"}})
    assert other.status_code == 201
    seen = await run(evaluator, bus, client, seen)
    assert evaluator.verdict(0.0).failing_ids == {"created", "stored"}

    created = await client.post(
        CMS, json={"kind": "ConfigMap", "metadata": {"name": "app-config"}, "data": {"color": "red"}}
    )
    assert created.status_code == 201
    seen = await run(evaluator, bus, client, seen)
    matched = evaluator.matched("created")
    assert matched is not None
    verdict = evaluator.verdict(0.0)
    assert verdict.status is Status.FAILING and verdict.failing_ids == {"stored"}
    assert [f.render() for f in verdict.failures] == [
        "expected data.color of configmap app-config to be blue, saw red"
    ]

    patched = await client.patch(
        CMS + "/app-config",
        json={"data": {"color": "blue"}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert patched.status_code == 200
    await run(evaluator, bus, client, seen)
    assert evaluator.verdict(0.0).status is Status.PASSED


async def test_a_write_comes_before_its_request_completes(lab: tuple[TraceBus, httpx.AsyncClient]) -> None:
    # "The answer, then its write" never holds: a request's store.txn comes before its completion.
    bus, client = lab
    wrong = {
        "trace": {
            "sequence": [
                {"type": "request.completed", "verb": "create", "resource": "configmaps", "as": "req"},
                {"type": "store.txn", "writes": {"key": "/registry/configmaps/*"}, "same_request": "req"},
            ]
        }
    }
    evaluator = parse_check(wrong, where="test").evaluator(
        student="admin", since_seq=bus.last_seq, stability=0
    )
    response = await client.post(CMS, json={"kind": "ConfigMap", "metadata": {"name": "app-config"}})
    assert response.status_code == 201
    await run(evaluator, bus, client, 0)
    verdict = evaluator.verdict(0.0)
    assert verdict.status is Status.FAILING
    assert [f.code for f in verdict.failures] == ["trace.stopped"]


async def test_a_check_tells_a_conflict_from_an_already_exists(
    lab: tuple[TraceBus, httpx.AsyncClient],
) -> None:
    # Both are 409: the Status reason of request.completed says which (docs/trace.md), and the query of
    # request.received says the update was a dry run.
    bus, client = lab
    conflict = {
        "id": "stale-update",
        "trace": {
            "sequence": [
                {"type": "request.received", "verb": "update", "query": {"dryRun": "All"}, "as": "req"},
                {"type": "request.completed", "code": 409, "reason": "Conflict", "same_request": "req"},
            ]
        },
    }
    evaluator = parse_check(conflict, where="test").evaluator(
        student="admin", since_seq=bus.last_seq, stability=0
    )
    created = await client.post(CMS, json={"kind": "ConfigMap", "metadata": {"name": "app-config"}})
    assert created.status_code == 201
    again = await client.post(CMS, json={"kind": "ConfigMap", "metadata": {"name": "app-config"}})
    assert (again.status_code, again.json()["reason"]) == (409, "AlreadyExists")
    seen = await run(evaluator, bus, client, 0)
    assert evaluator.verdict(0.0).status is Status.FAILING

    stale = dict(created.json(), data={"color": "blue"})
    stale["metadata"]["resourceVersion"] = "1"
    wet = await client.put(CMS + "/app-config", json=stale)  # the same conflict, but no dry run
    assert (wet.status_code, wet.json()["reason"]) == (409, "Conflict")
    seen = await run(evaluator, bus, client, seen)
    assert evaluator.verdict(0.0).status is Status.FAILING

    dry = await client.put(CMS + "/app-config?dryRun=All", json=stale)
    assert (dry.status_code, dry.json()["reason"]) == (409, "Conflict")
    await run(evaluator, bus, client, seen)
    assert evaluator.verdict(0.0).status is Status.PASSED
    matched = evaluator.matched("stale-update")
    assert matched is not None
    received, completed = bus.recorder.get(matched.first_seq), bus.recorder.get(matched.last_seq)
    assert received is not None and completed is not None
    assert received["id"] == completed["id"] == dry.headers["audit-id"]
