"""hot-loop-client: a controller floods the API server; API Priority and Fairness throttles only it.

The loop (``controlplane/faults/hotloop.py``) patches its ConfigMap as the user ``hot-loop``, many requests
at a time, with no client-side limit. Its FlowSchema puts it in a priority level of one seat and a
short queue: once that is full, its requests are answered 429 with ``Retry-After``. An ordinary user's
requests, classified elsewhere (``global-default``), go on being answered.
"""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.client.config import Config
from controlplane.client.errors import NotFound
from controlplane.client.rest import RESTClient
from controlplane.faults import hotloop
from controlplane.faults.effects import HotLoopClient
from tests.controlplane.faults.conftest import NAME, Running

Event = dict[str, Any]


def hot(event: Event) -> bool:
    return event.get("from") == "user:hot-loop"


async def test_the_hot_loop_gets_429s_while_an_ordinary_client_is_answered(running: Running) -> None:
    cluster, trace = running.cluster, running.trace
    rbac = running.admin.resource("rbac.authorization.k8s.io", "v1", "clusterrolebindings")
    await rbac.create(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "alice-view"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"}],
        }
    )
    token = cluster.tokens.issue("alice", [])
    alice = RESTClient(
        Config.for_in_process(
            cluster.endpoint,
            NAME,
            mount_prefix=f"/clusters/{NAME}",
            bearer_token=token,
            qps=-1,
            max_retries=0,
        )
    )
    start = len(trace.events)

    applied = await running.faults.apply(cluster.name, "hot-loop-client", {"for": 60}, reason="test")

    on = await trace.until(lambda e: e["type"] == "fault.applied", after=start)
    assert (on["fault"], on["target"]) == ("hot-loop-client", "user:hot-loop")
    refused = await trace.until(
        lambda e: e["type"] == "flowcontrol.decision" and hot(e) and e["outcome"] == "rejected", after=start
    )
    assert refused["priority_level"] == hotloop.NAME
    throttled = await trace.until(
        lambda e: e["type"] == "request.completed" and hot(e) and e["code"] == 429, after=start
    )
    assert throttled["user"] == "hot-loop"
    answered = await trace.until(
        lambda e: e["type"] == "request.completed" and hot(e) and e["code"] == 200, after=start
    )
    assert answered["verb"] == "patch" and answered["resource"] == "configmaps"

    # Meanwhile an ordinary user is answered, every time, in a level of its own.
    mark = len(trace.events)
    configmaps = alice.resource("", "v1", "configmaps", "kube-system")
    for _ in range(20):
        await configmaps.list()
    theirs = [
        e
        for e in trace.events[mark:]
        if e["type"] == "flowcontrol.decision" and e.get("from") == "user:alice"
    ]
    assert theirs and all(e["outcome"] != "rejected" for e in theirs)
    assert {e["priority_level"] for e in theirs} == {"global-default"}
    effect = running.faults.effects["hot-loop-client"]
    assert isinstance(effect, HotLoopClient)
    loop = effect.loop(applied.fault.id)
    assert loop is not None
    # Burst after burst: every tick overflows the level again.
    await trace.nth(
        lambda e: e["type"] == "request.completed" and hot(e) and e["code"] == 429, 3 * 7, after=start
    )
    assert loop.written > 0 and loop.throttled > 0
    start = len(trace.events)

    cleared = await running.faults.clear(cluster.name, "hot-loop-client", {})

    assert [f.id for f in cleared] == [applied.fault.id]
    assert effect.loop(applied.fault.id) is None and not loop.stats()["running"]
    off = await trace.until(lambda e: e["type"] == "fault.cleared", after=start)
    assert off["target"] == "user:hot-loop"
    flowschemas = running.admin.resource("flowcontrol.apiserver.k8s.io", "v1", "flowschemas")
    with pytest.raises(NotFound):
        await flowschemas.get(hotloop.NAME)
    after = len(trace.events)
    await configmaps.list()  # a request after the loop ended: nothing of hot-loop's came meanwhile
    assert not any(e["type"] == "request.received" and hot(e) for e in trace.events[after:])
    await alice.aclose()
