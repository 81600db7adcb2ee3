"""The flow-control stage in a running API server: 429 with Retry-After, PF headers, live config.

Handlers are held open with an event (a patched ``_non_resource``), never with sleeps: a test checks
the server's own counts (``flow_control.snapshot()``) each time the server emits a trace event.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from controlplane.api.kinds import builtin_types
from controlplane.apiserver.filters.priority_and_fairness import (
    FLOW_SCHEMA_UID_HEADER,
    PRIORITY_LEVEL_UID_HEADER,
    FlowControlOptions,
)
from controlplane.apiserver.flowcontrol.shufflesharding import Dealer, hash_flow
from controlplane.apiserver.http import respond
from controlplane.apiserver.pipeline import Authorized
from controlplane.apiserver.server import APIServer
from controlplane.identity import AUTHENTICATED, SYSTEM_MASTERS, UserInfo
from controlplane.store.sqlite import SqliteStore
from controlplane.trace import ListSink
from tests.support.admission import WITHOUT_CONTROLLERS
from tests.support.inprocess import in_process_cluster

OTHERS = ("bob", "carol", "dave", "erin", "frank", "grace")
USERS = {
    "admin": UserInfo.create("admin", groups=[SYSTEM_MASTERS, AUTHENTICATED]),
    **{name: UserInfo.create(name, groups=[AUTHENTICATED]) for name in ("alice", *OTHERS)},
}
FC = "/apis/flowcontrol.apiserver.k8s.io/v1"


@dataclass
class Held:
    """``/api`` answered only when ``release`` is set; ``entered`` counts the handlers inside."""

    release: asyncio.Event
    entered: int = 0
    order: list[str] = field(default_factory=list)


@dataclass
class Server:
    server: APIServer
    trace: ListSink
    held: Held

    def client(self, token: str) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            transport=httpx.ASGITransport(app=self.server),
            base_url="http://test",
            headers={"Authorization": f"Bearer {token}"},
        )


class NotifyingSink(ListSink):
    """A trace sink that wakes ``until`` at every event."""

    def __init__(self) -> None:
        super().__init__()
        self.emitted = asyncio.Event()

    def emit(self, type: str, /, **fields: Any) -> None:
        super().emit(type, **fields)
        self.emitted.set()


SINK: NotifyingSink | None = None


async def until(check: Callable[[], bool]) -> None:
    """Wait until ``check()`` holds, looking again after each trace event of the server."""
    assert SINK is not None
    async with asyncio.timeout(10):
        while not check():
            SINK.emitted.clear()
            await SINK.emitted.wait()


@pytest.fixture
async def api(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Server]:
    options: FlowControlOptions = getattr(
        request, "param", FlowControlOptions(max_requests_inflight=1, max_mutating_requests_inflight=1)
    )
    global SINK
    trace = SINK = NotifyingSink()
    store = SqliteStore("test", path=tmp_path / "store.sqlite3")
    await store.start()
    server = APIServer(
        "test",
        store,
        resource_types=builtin_types(),
        tokens=USERS.get,
        trace=trace,
        flow_control=options,
        admission_options=WITHOUT_CONTROLLERS,
    )
    await server.start()
    held = Held(asyncio.Event())
    original: Callable[[Authorized], Awaitable[int]] = server._non_resource

    async def hold(authorized: Authorized) -> int:
        request = authorized.request
        if request.path != "/api":
            return await original(authorized)
        held.entered += 1
        held.order.append(authorized.acting.username)
        await held.release.wait()
        held.entered -= 1
        await respond(authorized.send, 200, b"{}", audit_id=request.audit_id)
        return 200

    server._non_resource = hold  # type: ignore[method-assign]
    try:
        yield Server(server, trace, held)
    finally:
        held.release.set()
        await server.stop()
        await store.close()


async def squeeze_global_default(admin: httpx.AsyncClient) -> dict[str, Any]:
    """``kubectl edit``: global-default gets one queue of one request, and keeps the edit."""
    level = (await admin.get(f"{FC}/prioritylevelconfigurations/global-default")).json()
    level["metadata"]["annotations"]["apf.kubernetes.io/autoupdate-spec"] = "false"
    level["spec"]["limited"]["limitResponse"]["queuing"] = {"queues": 1, "handSize": 1, "queueLengthLimit": 1}
    reply = await admin.put(f"{FC}/prioritylevelconfigurations/global-default", json=level)
    assert reply.status_code == 200, reply.text
    return dict(reply.json())


async def test_an_overloaded_priority_level_answers_429_with_retry_after_and_the_pf_headers(
    api: Server,
) -> None:
    async with api.client("admin") as admin, api.client("alice") as alice:
        level = await squeeze_global_default(admin)
        schema = (await admin.get(f"{FC}/flowschemas/global-default")).json()
        # global-default has ceil(2 x 20 / 245) = 1 seat: the first request holds it, the second waits,
        # the third finds its queue full.
        first = asyncio.create_task(alice.get("/api"))
        await until(lambda: api.held.entered == 1)
        second = asyncio.create_task(alice.get("/api"))
        await until(lambda: _level(api, "global-default").waiting == 1)
        third = await alice.get("/api")
        assert third.status_code == 429
        assert third.text == "Too many requests, please try again later.\n"
        assert third.headers["content-type"] == "text/plain; charset=utf-8"
        assert third.headers["retry-after"] == "1"
        assert third.headers[FLOW_SCHEMA_UID_HEADER] == schema["metadata"]["uid"]
        assert third.headers[PRIORITY_LEVEL_UID_HEADER] == level["metadata"]["uid"]
        # An admin is exempt: served at once while alice's level is full.
        assert (await admin.get("/version")).status_code == 200
        assert (await admin.get("/api/v1/namespaces")).status_code == 200
        api.held.release.set()
        for served in await asyncio.gather(first, second):
            assert served.status_code == 200
            assert served.headers[FLOW_SCHEMA_UID_HEADER] == schema["metadata"]["uid"]
    snapshot = _level(api, "global-default")
    assert snapshot.rejected == {"queue-full": 1}
    assert (snapshot.seats_in_use, snapshot.waiting) == (0, 0)
    decisions = [
        e for e in api.trace.events if e["type"] == "flowcontrol.decision" and e.get("flow") == "alice"
    ]
    assert [d["outcome"] for d in decisions] == ["dispatched", "queued", "rejected", "dispatched"]
    assert decisions[2]["reason"] == "queue-full" and decisions[2]["retry_after"] == 1
    stages = [
        e
        for e in api.trace.events
        if e["type"] == "request.stage" and e["stage"] == "flowcontrol" and e["outcome"] == "deny"
    ]
    assert len(stages) == 1 and "queue-full" in stages[0]["detail"]


def other_queue_user() -> str:
    """A user whose flow lands in the other queue than alice's, when global-default has two."""
    dealer = Dealer(2, 1)
    alice = dealer.deal(hash_flow("global-default", "alice"))
    return next(n for n in OTHERS if dealer.deal(hash_flow("global-default", n)) != alice)


async def test_a_polite_user_is_served_before_a_hot_users_backlog_in_the_same_level(api: Server) -> None:
    async with api.client("admin") as admin, api.client("alice") as alice:
        await squeeze_global_default(admin)
        # Two queues of one request each, a hand of one: alice's flow has one, the other user's the other.
        level = (await admin.get(f"{FC}/prioritylevelconfigurations/global-default")).json()
        level["spec"]["limited"]["limitResponse"]["queuing"] = {
            "queues": 2,
            "handSize": 1,
            "queueLengthLimit": 1,
        }
        assert (
            await admin.put(f"{FC}/prioritylevelconfigurations/global-default", json=level)
        ).status_code == 200
        polite_name = other_queue_user()
        async with api.client(polite_name) as polite:
            running = asyncio.create_task(alice.get("/api"))
            await until(lambda: api.held.entered == 1)
            backlog = asyncio.create_task(alice.get("/api"))
            await until(lambda: _level(api, "global-default").waiting == 1)
            assert (await alice.get("/api")).status_code == 429  # alice's queue is full
            quiet = asyncio.create_task(polite.get("/api"))  # bob's is not
            await until(lambda: _level(api, "global-default").waiting == 2)
            assert sorted(_level(api, "global-default").queue_lengths) == [1, 1]
            api.held.release.set()
            results = await asyncio.gather(running, backlog, quiet)
    assert [r.status_code for r in results] == [200, 200, 200]
    # Fair queuing: alice had just been served from her queue, so the polite user's request goes first.
    assert api.held.order == ["alice", polite_name, "alice"]


RBAC = "/apis/rbac.authorization.k8s.io/v1"


def view_binding(user: str, role: str = "view") -> dict[str, Any]:
    """A RoleBinding in ``default`` giving ``user`` the ClusterRole ``role`` (RBAC is on)."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": f"{user}-{role}"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "User", "name": user, "apiGroup": "rbac.authorization.k8s.io"}],
    }


async def test_a_watch_gives_its_seat_back_once_it_is_set_up(tmp_path: Path) -> None:
    options = FlowControlOptions(
        max_requests_inflight=1, max_mutating_requests_inflight=1
    )  # global-default: 1 seat
    async with in_process_cluster(tmp_path, flow_control=options) as cluster:
        admin = cluster.client_for(USERS["admin"])
        await admin.resource("rbac.authorization.k8s.io", "v1", "rolebindings", "default").create(
            view_binding("alice")
        )
        alice = cluster.client_for(UserInfo.create("alice", groups=[AUTHENTICATED]))
        configmaps = alice.resource("", "v1", "configmaps", "default")
        async with configmaps.watch(resource_version="0"):
            # The watch is open and still streaming; its seat is free again, so a list goes through.
            listed = await configmaps.list()
            assert listed["kind"] == "ConfigMapList"
            level = next(
                p
                for p in cluster.server.flow_control.snapshot().priority_levels
                if p.name == "global-default"
            )
            assert level.seats_in_use == 0


@pytest.mark.parametrize(
    "api",
    [
        FlowControlOptions(
            enable_priority_and_fairness=False, max_requests_inflight=1, max_mutating_requests_inflight=1
        )
    ],
    indirect=True,
)
async def test_max_inflight_refuses_at_once_without_queues_or_headers_but_never_system_masters(
    api: Server,
) -> None:
    async with api.client("admin") as admin, api.client("alice") as alice, api.client("bob") as bob:
        binding = view_binding("bob", role="edit")
        assert (await admin.post(f"{RBAC}/namespaces/default/rolebindings", json=binding)).status_code == 201
        held = asyncio.create_task(alice.get("/api"))
        await until(lambda: api.held.entered == 1)
        refused = await bob.get("/api/v1/namespaces")
        assert refused.status_code == 429
        assert refused.headers["retry-after"] == "1"
        assert FLOW_SCHEMA_UID_HEADER.lower() not in refused.headers
        assert (await admin.get("/api/v1/namespaces")).status_code == 200  # system:masters
        created = await bob.post("/api/v1/namespaces/default/configmaps", json={"metadata": {"name": "c"}})
        assert created.status_code == 201  # writes have their own limit
        api.held.release.set()
        assert (await held).status_code == 200
    snapshot = api.server.flow_control.snapshot()
    assert snapshot.mode == "max-inflight"
    read_only = snapshot.priority_levels[0]
    assert (read_only.name, read_only.concurrency_limit, read_only.rejected) == (
        "readOnly",
        1,
        {"concurrency-limit": 1},
    )


async def test_the_bootstrap_objects_are_restored_and_report_dangling(api: Server) -> None:
    async with api.client("admin") as admin:
        names = [i["metadata"]["name"] for i in (await admin.get(f"{FC}/flowschemas")).json()["items"]]
        assert {"exempt", "probes", "system-nodes", "global-default", "catch-all"} <= set(names)
        levels = (await admin.get(f"{FC}/prioritylevelconfigurations")).json()["items"]
        assert {i["metadata"]["name"] for i in levels} == {
            "exempt",
            "catch-all",
            "system",
            "node-high",
            "leader-election",
            "workload-high",
            "workload-low",
            "global-default",
        }
        # A mandatory object comes back when deleted; a FlowSchema naming a missing level is Dangling.
        assert (await admin.delete(f"{FC}/prioritylevelconfigurations/catch-all")).status_code == 200
        mine = {
            "metadata": {"name": "mine"},
            "spec": {
                "priorityLevelConfiguration": {"name": "nope"},
                "matchingPrecedence": 5000,
                "rules": [
                    {
                        "subjects": [{"kind": "User", "user": {"name": "x"}}],
                        "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                    }
                ],
            },
        }
        assert (await admin.post(f"{FC}/flowschemas", json=mine)).status_code == 201

        async def state() -> tuple[int, str]:
            restored = (await admin.get(f"{FC}/prioritylevelconfigurations/catch-all")).status_code
            conditions = (
                (await admin.get(f"{FC}/flowschemas/mine")).json().get("status", {}).get("conditions", [])
            )
            return restored, next((c["status"] for c in conditions if c["type"] == "Dangling"), "")

        cache = api.server.caches["/registry/flowschemas"]
        async with asyncio.timeout(10):
            while True:
                seen = cache.revision
                if await state() == (200, "True"):
                    break
                await cache.wait_for(seen + 1, 10)  # the API server writes them in the background


def _level(api: Server, name: str) -> Any:
    return next(p for p in api.server.flow_control.snapshot().priority_levels if p.name == name)
