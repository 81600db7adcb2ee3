"""A client's watch on the trace: opened, one event per change sent (built without encoding), closed."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from tests.controlplane.apiserver.conftest import API

CMS = "/api/v1/namespaces/default/configmaps"


def cm(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels}}


def watch_events(api: API, audit_id: str) -> list[dict[str, Any]]:
    return [e for e in api.trace.events if e["type"].startswith("watch.") and e.get("watch") == audit_id]


async def test_a_watch_reports_opening_each_change_sent_and_closing(api: API) -> None:
    created = (await api.client.post(CMS, json=cm("w", app="web"))).json()
    rv = created["metadata"]["resourceVersion"]
    updated = (await api.client.put(f"{CMS}/w", json=dict(created, data={"k": "v"}))).json()
    await api.client.post(CMS, json=cm("other", app="db"))  # filtered out by the selector
    params = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": "0", "labelSelector": "app=web"}
    response = await api.client.get(CMS, params=params)
    assert [json.loads(line)["type"] for line in response.text.splitlines()] == ["MODIFIED"]
    audit_id = response.headers["audit-id"]

    opened, event, closed = watch_events(api, audit_id)
    edge = {"id": audit_id, "from": "apiserver", "to": "user:admin", "source": "apiserver"}
    assert opened == {"type": "watch.opened", "watch": audit_id, **edge} | {
        "resource": "configmaps",
        "namespace": "default",
        "revision": int(rv),
        "label_selector": "app=web",
    }
    assert event == {"type": "watch.event", "watch": audit_id, **edge} | {
        "event": "MODIFIED",
        "revision": int(updated["metadata"]["resourceVersion"]),
        "key": "/registry/configmaps/default/w",
        "resource": "configmaps",
        "kind": "ConfigMap",
        "namespace": "default",
        "name": "w",
    }
    assert closed == {"type": "watch.closed", "watch": audit_id, **edge, "reason": "timeout"}


async def test_the_initial_state_is_traced_with_each_objects_key(api: API) -> None:
    created = (await api.client.post(CMS, json=cm("a"))).json()
    response = await api.client.get(CMS, params={"watch": "true", "timeoutSeconds": "0"})
    (added,) = [e for e in watch_events(api, response.headers["audit-id"]) if e["type"] == "watch.event"]
    assert added["event"] == "ADDED" and added["key"] == "/registry/configmaps/default/a"
    assert added["revision"] == int(created["metadata"]["resourceVersion"])


async def test_a_watch_from_too_old_a_revision_opens_and_closes_with_the_reason(api: API) -> None:
    cache = api.server.caches["/registry/configmaps"]
    cache.capacity = cache.lower_bound = cache.upper_bound = 1  # a window of one event
    first = (await api.client.post(CMS, json=cm("a"))).json()
    for name in "bc":
        await api.client.post(CMS, json=cm(name))
    rv = first["metadata"]["resourceVersion"]
    response = await api.client.get(CMS, params={"watch": "true", "resourceVersion": rv})
    traced = watch_events(api, response.headers["audit-id"])
    assert [e["type"] for e in traced] == ["watch.opened", "watch.closed"]
    assert traced[1]["reason"].startswith(f"too old resource version: {rv}")


async def test_watch_events_are_built_without_encoding_the_objects(api: API) -> None:
    first = (await api.client.post(CMS, json=cm("a"))).json()
    await api.client.post(CMS, json=cm("b"))
    params = {"watch": "true", "timeoutSeconds": "0", "resourceVersion": first["metadata"]["resourceVersion"]}
    # a Table watch encodes each event itself: the object's JSON is never needed, so a trace that
    # encoded the change would show as the object's bytes made
    headers = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
    response = await api.client.get(CMS, params=params, headers=headers)
    assert [json.loads(line)["object"]["kind"] for line in response.text.splitlines()] == ["Table"]
    (event,) = [e for e in watch_events(api, response.headers["audit-id"]) if e["type"] == "watch.event"]
    assert event["name"] == "b" and event["kind"] == "ConfigMap"
    (change,) = [e for e in api.server.caches["/registry/configmaps"].events if e.key.endswith("/b")]
    assert change.object._raw is None, "the trace or the Table watch encoded the object as JSON"


WATCH_CMS = "/api/v1/watch/namespaces/default/configmaps"


async def test_the_deprecated_watch_path_with_a_name_watches_that_object_only(api: API) -> None:
    # upstream's ListResource (endpoints/handlers/get.go): the name is a metadata.name field selector
    first = (await api.client.post(CMS, json=cm("a"))).json()
    await api.client.post(CMS, json=cm("b"))
    await api.client.post(CMS, json=cm("ab"))
    initial = await api.client.get(f"{WATCH_CMS}/a", params={"resourceVersion": "0", "timeoutSeconds": "0"})
    assert initial.status_code == 200
    events = [json.loads(line) for line in initial.text.splitlines()]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "a")]

    rv = first["metadata"]["resourceVersion"]
    for name in ("b", "a"):
        changed = await api.client.patch(
            f"{CMS}/{name}",
            json={"data": {"k": "v"}},
            headers={"Content-Type": "application/merge-patch+json"},
        )
        assert changed.status_code == 200
    resumed = await api.client.get(f"{WATCH_CMS}/a", params={"resourceVersion": rv, "timeoutSeconds": "0"})
    changes = [json.loads(line) for line in resumed.text.splitlines()]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in changes] == [("MODIFIED", "a")]
    sent = [e for e in watch_events(api, resumed.headers["audit-id"]) if e["type"] == "watch.event"]
    assert [e["name"] for e in sent] == ["a"]


async def test_a_named_watch_takes_only_a_field_selector_for_the_same_name(api: API) -> None:
    await api.client.post(CMS, json=cm("a", app="web"))
    await api.client.post(CMS, json=cm("b", app="web"))
    params = {"resourceVersion": "0", "timeoutSeconds": "0"}
    same = await api.client.get(f"{WATCH_CMS}/a", params={**params, "fieldSelector": "metadata.name=a"})
    assert [json.loads(line)["object"]["metadata"]["name"] for line in same.text.splitlines()] == ["a"]
    for selector in ("metadata.name=b", "metadata.namespace=default", "metadata.name!=a"):
        other = await api.client.get(f"{WATCH_CMS}/a", params={**params, "fieldSelector": selector})
        assert other.status_code == 400, selector
        assert other.json()["reason"] == "BadRequest"
        assert other.json()["message"] == "fieldSelector metadata.name doesn't match requested name"
    labelled = await api.client.get(f"{WATCH_CMS}/a", params={**params, "labelSelector": "app=web"})
    assert [json.loads(line)["object"]["metadata"]["name"] for line in labelled.text.splitlines()] == ["a"]


async def test_a_watch_the_server_cuts_ends_without_a_bookmark_and_one_that_times_out_with_one(
    api: API,
) -> None:
    """Upstream's cacher sends a bookmark just before a watch's deadline, so its client resumes from
    there; a watch it terminates (shutting down, a watcher too slow) just ends, and its client resumes
    from the last change it really got."""
    first = (await api.client.post(CMS, json=cm("a"))).json()
    params = {
        "watch": "true",
        "resourceVersion": first["metadata"]["resourceVersion"],
        "allowWatchBookmarks": "true",
    }
    cache = api.server.caches["/registry/configmaps"]
    cut = asyncio.create_task(api.client.get(CMS, params=params))
    for _ in range(1000):  # until the watch is registered with the cache (no time passes)
        if cache.watchers:
            break
        await asyncio.sleep(0)
    await api.client.post(CMS, json=cm("b"))
    for _ in range(1000):  # until the change was sent to the client
        if any(e["type"] == "watch.event" and e.get("name") == "b" for e in api.trace.events):
            break
        await asyncio.sleep(0)
    for watcher in list(cache.watchers):
        watcher.close("the API server is shutting down")
    response = await cut
    assert [json.loads(line)["type"] for line in response.text.splitlines()] == ["ADDED"]
    (closed,) = [e for e in watch_events(api, response.headers["audit-id"]) if e["type"] == "watch.closed"]
    assert closed["reason"] == "the API server is shutting down"

    timed_out = await api.client.get(CMS, params={**params, "timeoutSeconds": "0"})
    assert [json.loads(line)["type"] for line in timed_out.text.splitlines()] == ["ADDED", "BOOKMARK"]
