"""The REST client against a real API server (in-process), and its retry and throttling manners."""

from __future__ import annotations

import asyncio
import uuid
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from controlplane.apiserver.mount import ClusterAPIRouter
from controlplane.client.config import Config
from controlplane.client.errors import (
    AlreadyExists,
    Conflict,
    Expired,
    InternalError,
    Invalid,
    NotFound,
    ResourceExpired,
    TooManyRequests,
    TransportError,
    Unauthorized,
)
from controlplane.client.pager import ListPager
from controlplane.client.rest import AUDIT_ID_HEADER, ListOptions, PatchType, RESTClient
from controlplane.client.watch import EventType
from controlplane.trace import recording_requests
from tests.controlplane.client.conftest import CLUSTER, TOKEN, Cluster, MakeCluster, configmap

# -- CRUD and typed errors -------------------------------------------------------------------------------


async def test_create_get_update_delete(cluster: Cluster) -> None:
    cms = cluster.configmaps()
    created = await cms.create(configmap("a", {"k": "1"}))
    assert created["metadata"]["resourceVersion"]
    assert (await cms.get("a"))["data"] == {"k": "1"}

    updated = await cms.update(dict(created, data={"k": "2"}))
    assert int(updated["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    patched = await cms.patch("a", {"data": {"extra": "x"}}, patch_type=PatchType.MERGE)
    assert patched["data"] == {"k": "2", "extra": "x"}

    await cms.delete("a")
    with pytest.raises(NotFound):
        await cms.get("a")


async def test_an_update_with_a_stale_resource_version_is_a_conflict(cluster: Cluster) -> None:
    cms = cluster.configmaps()
    first = await cms.create(configmap("a", {"k": "1"}))
    await cms.update(dict(first, data={"k": "2"}))
    with pytest.raises(Conflict) as caught:
        await cms.update(dict(first, data={"k": "3"}))
    assert caught.value.code == 409
    assert caught.value.reason == "Conflict"
    assert "the object has been modified" in caught.value.message
    assert caught.value.name == "a"


async def test_not_found_and_already_exists_are_their_own_types(cluster: Cluster) -> None:
    cms = cluster.configmaps()
    with pytest.raises(NotFound) as missing:
        await cms.get("nope")
    assert missing.value.message == 'configmaps "nope" not found'
    await cms.create(configmap("a"))
    with pytest.raises(AlreadyExists) as taken:
        await cms.create(configmap("a"))
    assert not isinstance(taken.value, Conflict)  # client-go: IsConflict(AlreadyExists) is false
    assert taken.value.code == 409


async def test_an_invalid_object_is_422_with_its_causes(cluster: Cluster) -> None:
    with pytest.raises(Invalid) as caught:
        await cluster.configmaps().create(configmap("Bad_Name"))
    assert caught.value.code == 422
    [cause] = caught.value.causes
    assert cause.field == "metadata.name"
    assert cause.type == "FieldValueInvalid"
    assert "Bad_Name" in caught.value.message


async def test_a_wrong_token_is_unauthorized(cluster: Cluster) -> None:
    async with RESTClient(cluster.config(bearer_token="wrong")) as stranger:
        with pytest.raises(Unauthorized):
            await stranger.resource("", "v1", "configmaps", "default").list()


async def test_status_and_binding_subresources(cluster: Cluster) -> None:
    pods = cluster.client.resource("", "v1", "pods", "default")
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web"},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }
    await pods.create(pod)
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "web"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"},
    }
    response = await pods.request("POST", "web", "binding", body=binding)
    assert response.status_code == 201
    assert (await pods.get("web"))["spec"]["nodeName"] == "node-1"
    with pytest.raises(Conflict, match="already assigned"):
        await pods.request("POST", "web", "binding", body=binding)

    current = await pods.get("web")
    running = dict(current, status=dict(current["status"], phase="Running"), spec=dict(current["spec"]))
    running["spec"]["nodeName"] = "elsewhere"  # ignored: /status writes only the status
    written = await pods.update_status(running)
    assert written["status"]["phase"] == "Running"
    assert written["spec"]["nodeName"] == "node-1"


# -- lists ------------------------------------------------------------------------------------------------


async def test_a_paged_list_fits_together_at_one_resource_version(cluster: Cluster) -> None:
    cms = cluster.configmaps()
    for i in range(7):
        await cms.create(configmap(f"cm-{i}"))
    first = await cms.list(limit=3)
    assert [i["metadata"]["name"] for i in first["items"]] == ["cm-0", "cm-1", "cm-2"]
    token = first["metadata"]["continue"]
    await cms.create(configmap("cm-late"))  # after the snapshot: not in the pages
    second = await cms.list(limit=3, continue_=token)
    third = await cms.list(limit=3, continue_=second["metadata"]["continue"])
    assert "continue" not in third["metadata"]
    names = [i["metadata"]["name"] for page in (first, second, third) for i in page["items"]]
    assert names == [f"cm-{i}" for i in range(7)]

    result = await ListPager(lambda o: cms.list(limit=o.limit, continue_=o.continue_), page_size=2).list(
        ListOptions()
    )
    assert result.paginated
    assert len(result.items) == 8


async def test_a_paged_list_whose_snapshot_expired_falls_back_to_one_full_list() -> None:
    calls: list[ListOptions] = []

    async def page(options: ListOptions) -> dict[str, Any]:
        calls.append(options)
        if options.continue_:
            raise Expired({"reason": "Expired", "code": 410, "message": "continue too old"})
        if options.limit:
            return {"metadata": {"resourceVersion": "5", "continue": "t"}, "items": [{"n": 1}]}
        return {"metadata": {"resourceVersion": "9"}, "items": [{"n": 1}, {"n": 2}]}

    result = await ListPager(page, page_size=1).list(ListOptions(resource_version="0"))
    assert (result.resource_version, len(result.items)) == ("9", 2)
    assert calls[-1] == ListOptions(resource_version="0")  # the requested RV, no limit, no token


# -- watches ----------------------------------------------------------------------------------------------


async def test_a_watch_streams_each_change_as_it_happens(cluster: Cluster) -> None:
    cms = cluster.configmaps()
    start = (await cms.list())["metadata"]["resourceVersion"]
    async with asyncio.timeout(10), cms.watch(resource_version=start) as events:
        created = await cms.create(configmap("w", {"v": "1"}))
        added = await anext(events)
        assert (added.type, added.object["metadata"]["name"]) == (EventType.ADDED, "w")
        assert added.resource_version == created["metadata"]["resourceVersion"]

        await cms.update(dict(created, data={"v": "2"}))
        modified = await anext(events)
        assert (modified.type, modified.object["data"]) == (EventType.MODIFIED, {"v": "2"})

        await cms.delete("w")
        deleted = await anext(events)
        assert deleted.type is EventType.DELETED
        assert int(deleted.resource_version) > int(modified.resource_version)


async def test_a_watch_without_resource_version_starts_with_the_current_objects(cluster: Cluster) -> None:
    cms = cluster.configmaps()
    await cms.create(configmap("old"))
    async with asyncio.timeout(10), cms.watch() as events:
        first = await anext(events)
        assert (first.type, first.object["metadata"]["name"]) == (EventType.ADDED, "old")


async def test_send_initial_events_ends_the_initial_state_with_a_bookmark(cluster: Cluster) -> None:
    cms = cluster.configmaps()
    await cms.create(configmap("one"))
    await cms.create(configmap("two"))
    async with (
        asyncio.timeout(10),
        cms.watch(
            send_initial_events=True, resource_version_match="NotOlderThan", allow_bookmarks=True
        ) as events,
    ):
        initial = [await anext(events) for _ in range(3)]
    assert [(e.type, e.object["metadata"].get("name")) for e in initial] == [
        (EventType.ADDED, "one"),
        (EventType.ADDED, "two"),
        (EventType.BOOKMARK, None),
    ]
    assert initial[2].object["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


async def test_delete_collection_deletes_what_the_selector_matches(cluster: Cluster) -> None:
    cms = cluster.configmaps()
    for name, tier in (("a", "web"), ("b", "web"), ("c", "db")):
        body = configmap(name)
        body["metadata"]["labels"] = {"tier": tier}
        await cms.create(body)
    gone = await cms.delete_collection(label_selector="tier=web")
    assert sorted(i["metadata"]["name"] for i in gone["items"]) == ["a", "b"]
    assert [i["metadata"]["name"] for i in (await cms.list())["items"]] == ["c"]
    with pytest.raises(Conflict):
        await cms.delete("c", preconditions={"uid": "not-its-uid"})


async def test_a_watch_that_times_out_ends_with_a_bookmark(cluster: Cluster) -> None:
    cms = cluster.configmaps()
    start = (await cms.list())["metadata"]["resourceVersion"]
    async with (
        asyncio.timeout(10),
        cms.watch(resource_version=start, allow_bookmarks=True, timeout_seconds=0) as w,
    ):
        events = [event async for event in w]
    assert [e.type for e in events] == [EventType.BOOKMARK]
    assert int(events[0].resource_version) >= int(start)


async def test_a_watch_from_a_too_old_resource_version_raises_expired(make_cluster: MakeCluster) -> None:
    cluster = await make_cluster(watch_cache_window=3)
    cms = cluster.configmaps()
    first = await cms.create(configmap("first"))
    for i in range(5):
        await cms.create(configmap(f"later-{i}"))
    async with (
        asyncio.timeout(10),
        cms.watch(resource_version=first["metadata"]["resourceVersion"]) as events,
    ):
        with pytest.raises(ResourceExpired) as caught:
            await anext(events)
    assert isinstance(caught.value, Expired)
    assert caught.value.code == 410
    assert "too old resource version" in caught.value.message


async def test_stopping_a_watch_from_another_task_ends_its_iteration(cluster: Cluster) -> None:
    cms = cluster.configmaps()
    start = (await cms.list())["metadata"]["resourceVersion"]
    watch = cms.watch(resource_version=start)
    await watch.start()

    async def consume() -> list[str]:
        return [event.type async for event in watch]

    consumer = asyncio.create_task(consume())
    await asyncio.sleep(0)  # the consumer is now waiting for an event
    await watch.stop()  # client-go's Stop(): the result channel closes
    async with asyncio.timeout(5):
        assert await consumer == []


async def test_a_refused_watch_raises_when_it_starts(cluster: Cluster) -> None:
    watch = cluster.configmaps().watch(resource_version="1", resource_version_match="NotOlderThan")
    with pytest.raises(Invalid):
        await watch.start()
    await watch.stop()


# -- retries, as client-go's rest/with_retry.go -------------------------------------------------------------


class RecordingClock:
    """Time that moves only by the sleeps it is asked for, which it records (no real waiting)."""

    def __init__(self) -> None:
        self.time = 1_000.0
        self.slept: list[float] = []

    def now(self) -> float:
        return self.time

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.time += max(0.0, seconds)
        await asyncio.sleep(0)


def fake_client(handler: Any, clock: RecordingClock, **options: Any) -> RESTClient:
    config = Config(host="http://fake/clusters/x", clock=clock, **options)
    http = httpx.AsyncClient(transport=httpx.MockTransport(handler), base_url=config.host)
    return RESTClient(config, http_client=http)


def too_many(retry_after: str | None = "2") -> httpx.Response:
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    return httpx.Response(429, headers=headers, text="Too many requests, please try again later.\n")


OK = {"kind": "ConfigMap", "metadata": {"name": "a"}}


async def test_429_with_retry_after_is_retried_for_writes_too() -> None:
    answers = [too_many("2"), too_many("1"), httpx.Response(201, json=OK)]
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.method)
        return answers.pop(0)

    clock = RecordingClock()
    client = fake_client(handler, clock, qps=-1)
    assert await client.resource("", "v1", "configmaps", "default").create(configmap("a")) == OK
    assert seen == ["POST", "POST", "POST"]
    assert clock.slept == [2.0, 1.0]
    await client.aclose()


async def test_each_call_sends_an_audit_id_of_its_own_and_its_retries_the_same() -> None:
    answers = [too_many("1"), httpx.Response(201, json=OK), httpx.Response(200, json=OK)]
    sent: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request.headers["audit-id"])
        return answers.pop(0)

    client = fake_client(handler, RecordingClock(), qps=-1)
    cms = client.resource("", "v1", "configmaps", "default")
    with recording_requests() as issued:
        await cms.create(configmap("a"))  # a 429, then the retry
        await cms.get("a")
    assert issued == [sent[0], sent[2]] and sent[0] == sent[1] != sent[2]
    assert all(str(uuid.UUID(audit_id)) == audit_id for audit_id in sent)
    await client.aclose()


async def test_a_callers_audit_id_is_sent_as_it_is(cluster: Cluster) -> None:
    with recording_requests() as issued:
        response = await cluster.client.request(
            "GET", "/api/v1/namespaces/default/configmaps", headers={AUDIT_ID_HEADER: "chosen-1"}
        )
    assert response.headers["audit-id"] == "chosen-1"  # the API server adopted it
    assert issued == ["chosen-1"]


async def test_retries_stop_after_ten_and_the_error_says_when_to_come_back() -> None:
    calls = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        return too_many("3")

    client = fake_client(handler, RecordingClock(), qps=-1)
    with pytest.raises(TooManyRequests) as caught:
        await client.request("GET", "/api/v1/pods")
    assert calls == 11  # the first attempt and 10 retries
    assert caught.value.retry_after == 3.0
    assert "Too many requests" in caught.value.message  # a plain-text body becomes the message
    await client.aclose()


async def test_a_5xx_without_retry_after_is_not_retried() -> None:
    calls = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        status = {
            "kind": "Status",
            "code": 500,
            "reason": "InternalError",
            "message": "Internal error occurred: x",
        }
        return httpx.Response(500, json=status)

    client = fake_client(handler, RecordingClock(), qps=-1)
    with pytest.raises(InternalError):
        await client.request("GET", "/api/v1/pods")
    assert calls == 1
    await client.aclose()


async def test_a_broken_connection_is_retried_for_get_only() -> None:
    failures = {"GET": 1, "POST": 1}

    def handler(request: httpx.Request) -> httpx.Response:
        if failures[request.method]:
            failures[request.method] -= 1
            raise httpx.ReadError("connection reset by peer", request=request)
        return httpx.Response(200, json=OK)

    clock = RecordingClock()
    client = fake_client(handler, clock, qps=-1)
    assert await client.request_json("GET", "/api/v1/namespaces/default/configmaps/a") == OK
    assert clock.slept == [1.0]  # as if the server had said Retry-After: 1
    with pytest.raises(TransportError, match="connection reset"):
        await client.request("POST", "/api/v1/namespaces/default/configmaps", body=configmap("a"))
    await client.aclose()


async def test_requests_wait_for_the_token_bucket_but_watches_do_not() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.params.get("watch") == "true":
            return httpx.Response(200, content=b"")
        return httpx.Response(200, json=OK)

    clock = RecordingClock()
    client = fake_client(handler, clock, qps=1.0, burst=2)
    for _ in range(4):
        await client.request("GET", "/api/v1/namespaces/default/configmaps/a")
    assert clock.slept == [1.0, 1.0]  # two from the burst, then one a second
    async with client.resource("", "v1", "configmaps", "default").watch(resource_version="1") as events:
        assert [e async for e in events] == []
    assert clock.slept == [1.0, 1.0]
    await client.aclose()


async def test_in_process_through_the_cluster_router_as_well(cluster: Cluster) -> None:
    """The whole ASGI router (no mount prefix) works like one cluster's API server (with one)."""

    class Lab:
        def cluster(self, name: str) -> Any:
            if name != CLUSTER:
                raise KeyError(name)
            return SimpleNamespace(apiserver=cluster.server)

    async def django(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("API paths never reach Django")

    router = ClusterAPIRouter(Lab, django)
    async with RESTClient(Config.for_in_process(router, CLUSTER, bearer_token=TOKEN, qps=-1)) as client:
        cms = client.resource("", "v1", "configmaps", "default")
        start = (await cms.list())["metadata"]["resourceVersion"]
        async with asyncio.timeout(10), cms.watch(resource_version=start) as events:
            await cms.create(configmap("via-router"))
            assert (await anext(events)).object["metadata"]["name"] == "via-router"
    async with RESTClient(Config.for_in_process(router, "elsewhere", bearer_token=TOKEN, qps=-1)) as lost:
        with pytest.raises(NotFound, match='cluster "elsewhere" not found'):
            await lost.resource("", "v1", "configmaps", "default").list()


# -- in-process request lines --------------------------------------------------------------------------

REQUEST_LINES = [
    ("/api/v1/namespaces/default/pods/web-7d9f-x2k4p/status", None),
    ("/api/v1/namespaces/default/pods/web", {"fieldManager": "kubelet", "dryRun": "All"}),
    ("/apis/apps/v1/namespaces/kube-system/deployments", {"resourceVersion": "12", "limit": "500"}),
    ("/api/v1/nodes/node-1.example_x~y", {}),
    ("/api/v1/namespaces/default/configmaps", {"labelSelector": "app=web,tier in (a,b)"}),
    ("/api/v1/namespaces/default/configmaps/a%20b", {"fieldSelector": "metadata.name=a b"}),
    ("/api/v1/namespaces/default/configmaps/..", None),
    ("/api/v1/namespaces/default/configmaps/.hidden/", {"k": "é"}),
    ("/api/v1//pods", {"": ""}),
    ("/version", None),
]


@pytest.mark.parametrize("host", ["http://testserver", "http://testserver/clusters/c1", "https://h:8443/x"])
@pytest.mark.parametrize("mount_prefix", ["", "/clusters/c1"])
@pytest.mark.parametrize(("path", "params"), REQUEST_LINES)
async def test_an_in_process_request_line_goes_where_httpx_would_send_it(
    host: str, mount_prefix: str, path: str, params: dict[str, str] | None
) -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("not called")

    client = RESTClient(Config(host=host, app=app, mount_prefix=mount_prefix))
    transport = client._direct
    assert transport is not None
    expected = transport.target(client._http.build_request("GET", path, params=params).url)
    assert client._url(path, params) == client._http.build_request("GET", path, params=params).url
    assert client._target(transport, path, params) == expected
    await client.aclose()


class _Chunks(httpx.AsyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    async def __aiter__(self) -> Any:
        for chunk in self.chunks:
            yield chunk


async def test_watch_lines_are_split_at_newlines_wherever_the_chunks_end() -> None:
    from controlplane.client.rest import _json_lines

    events = [
        b'{"type":"ADDED","object":{"metadata":{"name":"a\xe2\x80\xa8b"}}}',  # U+2028 inside a string
        b'{"type":"MODIFIED","object":{"metadata":{"name":"c"}}}',
        b'{"type":"DELETED","object":{"metadata":{"name":"d"}}}',
    ]
    wire = b"\n".join(events) + b"\n"
    for size in (1, 7, 50, len(wire)):
        chunks = [wire[i : i + size] for i in range(0, len(wire), size)]
        response = httpx.Response(200, stream=_Chunks(chunks))
        assert [line async for line in _json_lines(response)] == events
    unterminated = httpx.Response(200, stream=_Chunks([events[0] + b"\n" + events[1]]))
    assert [line async for line in _json_lines(unterminated)] == events[:2]
