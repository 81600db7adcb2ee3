"""Resource semantics against upstream: status codes, Status reasons and messages, concurrency, paging."""

from __future__ import annotations

import base64
import itertools
import json
from datetime import UTC, datetime

import pytest

from controlplane.apiserver.registry import format_seconds
from tests.controlplane.apiserver.conftest import API

PODS = "/api/v1/namespaces/default/pods"


def pod(name: str, **labels: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }


def cm(name: str, data: dict[str, str] | None = None) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data or {}}


CMS = "/api/v1/namespaces/default/configmaps"


async def test_update_with_a_stale_resource_version_is_a_conflict_with_upstreams_message(api: API) -> None:
    first = (await api.client.post(CMS, json=cm("a", {"k": "1"}))).json()
    second = dict(first, data={"k": "2"})
    assert (await api.client.put(f"{CMS}/a", json=second)).status_code == 200
    stale = dict(first, data={"k": "3"})
    response = await api.client.put(f"{CMS}/a", json=stale)
    assert response.status_code == 409
    status = response.json()
    assert status["reason"] == "Conflict"
    assert status["message"] == (
        'Operation cannot be fulfilled on configmaps "a": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    assert (await api.client.get(f"{CMS}/a")).json()["data"] == {"k": "2"}


async def test_get_of_a_missing_object_is_not_found(api: API) -> None:
    response = await api.client.get(f"{CMS}/nope")
    assert response.status_code == 404
    assert response.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'configmaps "nope" not found',
        "reason": "NotFound",
        "details": {"name": "nope", "kind": "configmaps"},
        "code": 404,
    }


@pytest.mark.parametrize(
    ("body", "content_type", "code", "fragment"),
    [
        (b"{not json", "application/json", 400, "error decoding"),
        (b"a: [1, 2", "application/yaml", 400, "yaml"),
        (
            json.dumps({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}}).encode(),
            "application/json",
            400,
            "does not match the expected kind",
        ),
        (
            json.dumps({"apiVersion": "apps/v1", "kind": "ConfigMap", "metadata": {"name": "x"}}).encode(),
            "application/json",
            400,
            "does not match the expected API version",
        ),
        (
            json.dumps({"kind": "ConfigMap", "metadata": {"name": "x", "namespace": "other"}}).encode(),
            "application/json",
            400,
            "does not match the namespace",
        ),
        (b"{}", "text/plain", 415, "unknown format"),
        (
            json.dumps({"kind": "ConfigMap", "metadata": {"name": "Bad_Name"}}).encode(),
            "application/json",
            422,
            '"Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name"',
        ),
        (
            json.dumps({"kind": "ConfigMap", "metadata": {}}).encode(),
            "application/json",
            422,
            "name or generateName is required",
        ),
    ],
)
async def test_bad_requests_get_upstreams_status_and_write_nothing(
    api: API, body: bytes, content_type: str, code: int, fragment: str
) -> None:
    before = await api.store.current_revision()
    response = await api.client.post(CMS, content=body, headers={"Content-Type": content_type})
    assert response.status_code == code, response.text
    status = response.json()
    assert status["kind"] == "Status" and status["code"] == code
    assert fragment in status["message"]
    assert await api.store.current_revision() == before


async def test_a_body_over_3_mib_is_refused_with_413(api: API) -> None:
    big = json.dumps(cm("big", {"k": "x" * (3 * 1024 * 1024)})).encode()
    response = await api.client.post(CMS, content=big, headers={"Content-Type": "application/json"})
    assert response.status_code == 413
    assert response.json()["reason"] == "RequestEntityTooLarge"


async def test_unknown_resources_and_bad_tokens(api: API) -> None:
    assert (await api.client.get("/api/v1/namespaces/default/widgets")).status_code == 404
    response = await api.client.get(CMS, headers={"Authorization": "Bearer wrong"})
    assert response.status_code == 401
    assert response.json()["reason"] == "Unauthorized"


async def test_generate_name_and_dry_run(api: API) -> None:
    body = {"kind": "ConfigMap", "metadata": {"generateName": "web-"}}
    dry = await api.client.post(CMS + "?dryRun=All", json=body)
    assert dry.status_code == 201
    assert dry.json()["metadata"]["name"].startswith("web-")
    assert (await api.client.get(CMS)).json()["items"] == []


async def test_paged_list_with_continue_token_and_expiry_after_compaction(api: API) -> None:
    for i in range(5):
        await api.client.post(CMS, json=cm(f"c{i}"))
    first = (await api.client.get(CMS, params={"limit": 2})).json()
    assert [i["metadata"]["name"] for i in first["items"]] == ["c0", "c1"]
    assert first["metadata"]["remainingItemCount"] == 3
    token = first["metadata"]["continue"]
    await api.client.post(CMS, json=cm("c5"))  # not in the snapshot the pages come from
    second = (await api.client.get(CMS, params={"limit": 10, "continue": token})).json()
    assert [i["metadata"]["name"] for i in second["items"]] == ["c2", "c3", "c4"]
    assert "continue" not in second["metadata"]
    await api.store.compact(await api.store.current_revision())
    expired = await api.client.get(CMS, params={"limit": 10, "continue": token})
    assert expired.status_code == 410
    assert expired.json()["reason"] == "Expired"


async def test_invalid_list_option_combinations_are_422(api: API) -> None:
    response = await api.client.get(CMS, params={"resourceVersionMatch": "NotOlderThan"})
    assert response.status_code == 422
    message = response.json()["message"]
    assert "resourceVersionMatch is forbidden unless resourceVersion is provided" in message


async def test_label_and_field_selectors(api: API) -> None:
    await api.client.post(PODS, json=pod("a", app="web"))
    await api.client.post(PODS, json=pod("b", app="db"))
    by_label = (await api.client.get(PODS, params={"labelSelector": "app=web"})).json()
    assert [p["metadata"]["name"] for p in by_label["items"]] == ["a"]
    by_field = (await api.client.get(PODS, params={"fieldSelector": "metadata.name=b"})).json()
    assert [p["metadata"]["name"] for p in by_field["items"]] == ["b"]
    bad = await api.client.get(PODS, params={"fieldSelector": "spec.bogus=x"})
    assert bad.status_code == 400


async def test_a_renamed_field_label_selects_by_the_field_it_names(api: API) -> None:
    """``ConvertFieldLabel`` renames before matching: events.k8s.io's ``regarding.name`` is the stored
    Event's ``involvedObject.name``, and old clients' ``spec.host`` a pod's ``spec.nodeName``."""
    for name in ("web", "db"):
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{name}.1"},
            "involvedObject": {"kind": "Pod", "namespace": "default", "name": name},
            "reason": "Tested",
            "message": "selected",
        }
        assert (await api.client.post("/api/v1/namespaces/default/events", json=event)).status_code == 201
    events_v1 = "/apis/events.k8s.io/v1/namespaces/default/events"
    for selector in ("regarding.name=web", "regarding.name=web,regarding.kind=Pod"):
        listed = (await api.client.get(events_v1, params={"fieldSelector": selector})).json()
        assert [e["metadata"]["name"] for e in listed["items"]] == ["web.1"], selector

    placed = pod("placed")
    placed["spec"] = {"containers": [{"name": "c", "image": "nginx"}], "nodeName": "node-1"}
    await api.client.post(PODS, json=placed)
    await api.client.post(PODS, json=pod("pending"))
    by_host = (await api.client.get(PODS, params={"fieldSelector": "spec.host=node-1"})).json()
    assert [p["metadata"]["name"] for p in by_host["items"]] == ["placed"]


async def test_watch_replays_from_a_resource_version(api: API) -> None:
    created = (await api.client.post(CMS, json=cm("w"))).json()
    rv = created["metadata"]["resourceVersion"]
    await api.client.put(f"{CMS}/w", json=dict(created, data={"k": "v"}))
    params = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": "1"}
    response = await api.client.get(CMS, params=params)
    lines = [json.loads(line) for line in response.text.splitlines()]
    assert [e["type"] for e in lines] == ["MODIFIED"]
    assert lines[0]["object"]["data"] == {"k": "v"}


async def test_watch_from_before_the_cache_window_gets_410_expired_in_the_stream(api: API) -> None:
    cache = api.server.caches["/registry/configmaps"]
    cache.capacity = cache.lower_bound = cache.upper_bound = 2  # a window of two events
    first = (await api.client.post(CMS, json=cm("a"))).json()
    for name in "bcd":
        await api.client.post(CMS, json=cm(name))
    rv = first["metadata"]["resourceVersion"]
    params = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": "1"}
    response = await api.client.get(CMS, params=params)
    assert response.status_code == 200
    (event,) = [json.loads(line) for line in response.text.splitlines()]
    assert event["type"] == "ERROR"
    assert event["object"]["code"] == 410 and event["object"]["reason"] == "Expired"
    assert event["object"]["message"].startswith(f"too old resource version: {rv} (")


async def test_watch_with_send_initial_events_ends_the_initial_state_with_a_bookmark(api: API) -> None:
    await api.client.post(CMS, json=cm("a"))
    await api.client.post(CMS, json=cm("b"))
    await api.client.post(CMS, json=cm("c"))
    await api.client.delete(f"{CMS}/c")  # the newest revision is now no object's
    listed = (await api.client.get(CMS)).json()["metadata"]["resourceVersion"]
    params = {
        "watch": "true",
        "sendInitialEvents": "true",
        "resourceVersionMatch": "NotOlderThan",
        "allowWatchBookmarks": "true",
        "timeoutSeconds": "1",
    }
    response = await api.client.get(CMS, params=params)
    events = [json.loads(line) for line in response.text.splitlines()]
    assert [e["type"] for e in events[:3]] == ["ADDED", "ADDED", "BOOKMARK"]
    assert events[2]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    # It points at the revision the initial state was taken at, not at its newest object's.
    assert events[2]["object"]["metadata"]["resourceVersion"] == listed


async def test_discovery_documents(api: API) -> None:
    assert (await api.client.get("/api")).json()["versions"] == ["v1"]
    groups = (await api.client.get("/apis")).json()["groups"]
    assert {"apps", "rbac.authorization.k8s.io", "coordination.k8s.io"} <= {g["name"] for g in groups}
    core = (await api.client.get("/api/v1")).json()
    pods = next(r for r in core["resources"] if r["name"] == "pods")
    assert pods["namespaced"] and pods["kind"] == "Pod" and "po" in pods["shortNames"]
    assert any(r["name"] == "pods/status" for r in core["resources"])
    version = (await api.client.get("/version")).json()
    assert version["major"] == "1" and version["minor"] == "37"


async def test_a_binding_assigns_a_pod_once(api: API) -> None:
    await api.client.post(PODS, json=pod("bound"))
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "bound"},
        "target": {"name": "node-1"},
    }
    first = await api.client.post(f"{PODS}/bound/binding", json=binding)
    assert first.status_code == 201, first.text
    stored = (await api.client.get(f"{PODS}/bound")).json()
    assert stored["spec"]["nodeName"] == "node-1"
    assert {"type": "PodScheduled", "status": "True"}.items() <= stored["status"]["conditions"][0].items()
    again = await api.client.post(f"{PODS}/bound/binding", json=dict(binding, target={"name": "node-2"}))
    assert again.status_code == 409
    assert 'is already assigned to node "node-1"' in again.json()["message"]


async def test_a_pod_cannot_move_nodes_through_a_plain_update(api: API) -> None:
    created = (await api.client.post(PODS, json=pod("stay"))).json()
    created["spec"]["nodeName"] = "node-9"
    response = await api.client.put(f"{PODS}/stay", json=created)
    assert response.status_code == 422
    assert "pod updates may not change fields" in response.json()["message"]


async def test_methods_without_a_route_are_405(api: API) -> None:
    put_collection = await api.client.put(CMS, json=cm("x"))
    assert put_collection.status_code == 405
    assert put_collection.json()["reason"] == "MethodNotAllowed"
    post_named = await api.client.post(f"{CMS}/x", json=cm("x"))
    assert post_named.status_code == 405
    assert (await api.client.get(CMS)).json()["items"] == []


async def test_a_generated_name_that_is_taken_is_generated_again(
    api: API, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RetryGenerateName: upstream tries up to 8 generated names before answering 409."""
    from controlplane.apiserver import registry

    names = itertools.chain(["bbbbb", "bbbbb", "ccccc"], itertools.repeat("ddddd"))
    monkeypatch.setattr(registry, "generate_name", lambda prefix: prefix + next(names))
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "gen-"}}
    first = await api.client.post(CMS, json=body)
    assert first.json()["metadata"]["name"] == "gen-bbbbb"
    second = await api.client.post(CMS, json=body)
    assert second.status_code == 201, second.text
    assert second.json()["metadata"]["name"] == "gen-ccccc"  # the taken name was generated again
    third = await api.client.post(CMS, json=body)
    assert third.status_code == 201
    fourth = await api.client.post(CMS, json=body)  # eight more tries, all "ddddd": taken each time
    assert fourth.status_code == 409
    assert fourth.json()["reason"] == "AlreadyExists"


async def test_an_integer_no_int64_field_can_hold_is_a_bad_request_and_nothing_is_stored(api: API) -> None:
    body = pod("huge")
    body["spec"]["terminationGracePeriodSeconds"] = 2**70  # type: ignore[index]
    response = await api.client.post(PODS, json=body)
    assert response.status_code in (400, 422), response.text
    assert response.json()["kind"] == "Status"
    assert (await api.client.get(f"{PODS}/huge")).status_code == 404


def _strftime(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize("moment", [0.0, 1.7e9, 1.7e9 + 0.25, 1.7e9 + 0.9999994, 1.7e9 + 0.9999996, 1e9])
def test_format_seconds_writes_what_strftime_writes_cached_or_not(moment: float) -> None:
    assert format_seconds(moment) == _strftime(moment)
    assert format_seconds(moment) == _strftime(moment)  # the second time, from the cache
    assert format_seconds(int(moment)) == _strftime(int(moment))


DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"


def deployment(name: str) -> dict[str, object]:
    template = {
        "metadata": {"labels": {"app": name}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}}, "template": template},
    }


@pytest.mark.parametrize(
    ("url", "body", "message"),
    [
        (
            DEPLOYMENTS,
            {**deployment("d"), "spec": {**deployment("d")["spec"], "replicas": "x"}},  # type: ignore[dict-item]
            'Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal string '
            "into Go struct field DeploymentSpec.spec.replicas of type int32",
        ),
        (
            CMS,
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": 5}},
            'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal number '
            "into Go struct field ObjectMeta.metadata.name of type string",
        ),
        (
            "/api/v1/namespaces/default/services",
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "s"},
                "spec": {"ports": [{"port": []}]},
            },
            'Service in version "v1" cannot be handled as a Service: json: cannot unmarshal array '
            "into Go struct field ServicePort.spec.ports.port of type int32",
        ),
    ],
)
async def test_a_value_of_the_wrong_type_is_a_decode_error_and_nothing_is_stored(
    api: API, url: str, body: dict[str, object], message: str
) -> None:
    before = await api.store.current_revision()
    response = await api.client.post(url, json=body)
    assert response.status_code == 400, response.text
    assert response.json()["reason"] == "BadRequest"
    assert response.json()["message"] == message
    assert await api.store.current_revision() == before


async def test_an_update_or_patch_of_the_wrong_type_changes_nothing(api: API) -> None:
    created = await api.client.post(DEPLOYMENTS, json=deployment("web"))
    assert created.status_code == 201, created.text
    stored = created.json()
    replaced = {**stored, "spec": {**stored["spec"], "replicas": "three"}}
    update = await api.client.put(f"{DEPLOYMENTS}/web", json=replaced)
    assert update.status_code == 400, update.text
    assert "DeploymentSpec.spec.replicas of type int32" in update.json()["message"]
    for content_type, patch, problem in [
        ("application/merge-patch+json", {"spec": {"replicas": "three"}}, "json: cannot unmarshal"),
        # a strategic merge patch's result is converted, not decoded: runtime/converter.go's wording
        ("application/strategic-merge-patch+json", {"spec": {"template": 5}}, "cannot restore struct from"),
        (
            "application/json-patch+json",
            [{"op": "replace", "path": "/spec/replicas", "value": [3]}],
            "json: cannot unmarshal",
        ),
    ]:
        patched = await api.client.patch(
            f"{DEPLOYMENTS}/web", content=json.dumps(patch), headers={"Content-Type": content_type}
        )
        # upstream handlers/patch.go: the patched object does not decode, an Invalid "patch" of no kind
        assert patched.status_code == 422, (content_type, patched.text)
        status = patched.json()
        assert status["reason"] == "Invalid"
        assert status["message"].startswith(' "" is invalid: patch: Invalid value: ')
        assert problem in status["message"]
        assert status["details"]["causes"][0]["field"] == "patch"
    after = await api.client.get(f"{DEPLOYMENTS}/web")
    assert after.json()["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]
    assert after.json()["spec"]["replicas"] == 1


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (
            b'{"metadata":{"name":"deep"},"data":' + b'{"a":' * 5000 + b"1" + b"}" * 5000 + b"}",
            "exceeded max depth",
        ),
        (b'{"metadata":{"name":"nan"},"data":{"a":NaN}}', "invalid character 'N'"),
        (b'{"metadata":{"name":"inf"},"x":1e400}', "cannot unmarshal number 1e400"),
    ],
)
async def test_json_go_cannot_decode_is_a_bad_request(api: API, body: bytes, fragment: str) -> None:
    response = await api.client.post(CMS, content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 400, response.text
    assert fragment in response.json()["message"]


async def test_a_lone_surrogate_escape_is_stored_as_the_replacement_character(api: API) -> None:
    body = b'{"metadata":{"name":"s","annotations":{"a":"x\\ud800"}},"data":{"k":"\\udc00"}}'
    response = await api.client.post(CMS, content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 201, response.text
    assert response.json()["metadata"]["annotations"] == {"a": "x\ufffd"}
    assert response.json()["data"] == {"k": "\ufffd"}


async def test_yaml_timestamps_stay_strings_and_yaml_without_json_is_a_bad_request(api: API) -> None:
    yaml_body = b"metadata: {name: dated, labels: {day: 2001-01-01}}\ndata: {when: 2001-01-01T10:00:00Z}\n"
    created = await api.client.post(CMS, content=yaml_body, headers={"Content-Type": "application/yaml"})
    assert created.status_code == 201, created.text
    assert created.json()["metadata"]["labels"] == {"day": "2001-01-01"}
    assert created.json()["data"] == {"when": "2001-01-01T10:00:00Z"}
    infinite = await api.client.post(
        CMS, content=b"metadata: {name: inf}\ndata: {a: .inf}\n", headers={"Content-Type": "application/yaml"}
    )
    assert infinite.status_code == 400, infinite.text
    assert infinite.json()["message"] == "error converting YAML to JSON: json: unsupported value: +Inf"


@pytest.mark.parametrize(
    ("url", "options", "fragment"),
    [
        (f"{PODS}/doomed", {"gracePeriodSeconds": "x"}, "DeleteOptions.gracePeriodSeconds of type int64"),
        (
            "/api/v1/namespaces/doomed",
            {"preconditions": 5},
            "DeleteOptions.preconditions of type v1.Preconditions",
        ),
    ],
)
async def test_delete_options_that_do_not_decode_are_a_bad_request_and_delete_nothing(
    api: API, url: str, options: dict[str, object], fragment: str
) -> None:
    if url.startswith(PODS):
        assert (await api.client.post(PODS, json=pod("doomed"))).status_code == 201
    else:
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "doomed"}}
        assert (await api.client.post("/api/v1/namespaces", json=namespace)).status_code == 201
    response = await api.client.request(
        "DELETE", url, content=json.dumps(options), headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 400, response.text
    assert response.json()["message"].startswith(
        'DeleteOptions in version "v1" cannot be handled as a DeleteOptions: json: cannot unmarshal'
    )
    assert fragment in response.json()["message"]
    still = await api.client.get(url)
    assert still.status_code == 200 and "deletionTimestamp" not in still.json()["metadata"]


@pytest.mark.parametrize("rv", ["abc", "-1", "1e3", " 7", "+7", "1_0", "\u0661", str(2**64), "9" * 5000])
async def test_a_resource_version_strconv_parseuint_refuses_is_a_bad_request(api: API, rv: str) -> None:
    for url in (CMS, f"{CMS}/missing", f"{CMS}?watch=1"):
        response = await api.client.get(url, params={"resourceVersion": rv})
        assert response.status_code == 400, (url, rv, response.text)
        assert response.json()["message"] == f'invalid resource version "{rv}"'


async def test_a_continue_token_from_the_future_names_its_own_resource_version(api: API) -> None:
    for name in ("a", "b"):
        assert (await api.client.post(CMS, json=cm(name))).status_code == 201
    page = (await api.client.get(CMS, params={"limit": "1"})).json()
    token = page["metadata"]["continue"]
    decoded = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    decoded["rv"] = 10**9
    future = base64.urlsafe_b64encode(json.dumps(decoded).encode()).decode()
    response = await api.client.get(CMS, params={"limit": "1", "continue": future})
    assert response.status_code == 504, response.text
    assert response.json()["message"].startswith(f"Too large resource version: {10**9},")


@pytest.mark.parametrize("rv", [True, 2**63, 0, "7"])
async def test_a_continue_token_whose_resource_version_is_no_int64_is_a_bad_request(
    api: API, rv: object
) -> None:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": "default/a\u0000"}).encode()
    response = await api.client.get(
        CMS, params={"limit": "1", "continue": base64.urlsafe_b64encode(raw).decode().rstrip("=")}
    )
    assert response.status_code == 400, response.text
    assert "incorrect encoded start resourceVersion" in response.json()["message"]


async def test_a_get_at_a_resource_version_the_cluster_has_not_reached_is_504(
    api: API, monkeypatch: pytest.MonkeyPatch
) -> None:
    from controlplane.apiserver.handlers import resources

    monkeypatch.setattr(resources, "CACHE_WAIT", 0.05)
    assert (await api.client.post(CMS, json=cm("now"))).status_code == 201
    response = await api.client.get(f"{CMS}/now", params={"resourceVersion": str(10**9)})
    assert response.status_code == 504, response.text
    assert response.json()["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"


async def test_a_delete_whose_preconditions_name_another_object_is_a_conflict_naming_its_kind(
    api: API,
) -> None:
    """``rest.BeforeDelete``: the Conflict names the kind (``ConfigMap``), and nothing is deleted."""
    made = (await api.client.post(CMS, json=cm("kept"))).json()
    uid, version = made["metadata"]["uid"], made["metadata"]["resourceVersion"]
    for preconditions, message in [
        (
            {"uid": "not-" + uid},
            'Operation cannot be fulfilled on ConfigMap "kept": '
            f"the UID in the precondition (not-{uid}) does not match the UID in record ({uid}). "
            "The object might have been deleted and then recreated",
        ),
        (
            {"resourceVersion": "1"},
            'Operation cannot be fulfilled on ConfigMap "kept": '
            "the ResourceVersion in the precondition (1) does "
            f"not match the ResourceVersion in record ({version}). The object might have been modified",
        ),
    ]:
        response = await api.client.request("DELETE", f"{CMS}/kept", json={"preconditions": preconditions})
        assert response.status_code == 409, response.text
        body = response.json()
        assert (body["reason"], body["message"]) == ("Conflict", message)
        assert body["details"] == {"name": "kept", "kind": "ConfigMap"}
    assert (await api.client.get(f"{CMS}/kept")).status_code == 200


async def test_a_dry_run_other_than_all_is_invalid_options_and_writes_nothing(api: API) -> None:
    """``ValidateDryRun`` on the verb's options (handlers/create.go, delete.go): 422, not 400."""
    created = await api.client.post(CMS, params={"dryRun": "Bogus"}, json=cm("never"))
    assert created.status_code == 422, created.text
    assert created.json()["message"] == (
        'CreateOptions.meta.k8s.io "" is invalid: '
        'dryRun: Unsupported value: ["Bogus"]: supported values: "All"'
    )
    assert (await api.client.get(f"{CMS}/never")).status_code == 404
    assert (await api.client.post(CMS, json=cm("kept"))).status_code == 201
    for request in (
        api.client.request("DELETE", f"{CMS}/kept", params={"dryRun": "Bogus"}),
        api.client.request("DELETE", f"{CMS}/kept", json={"dryRun": ["All", "Bogus"]}),
    ):
        deleted = await request
        assert deleted.status_code == 422, deleted.text
        assert deleted.json()["message"].startswith('DeleteOptions.meta.k8s.io "" is invalid: dryRun: ')
    assert (await api.client.get(f"{CMS}/kept")).status_code == 200


@pytest.mark.parametrize(
    ("token", "why"),
    [
        ("a=b", "illegal base64 data at input byte 1"),
        (base64.urlsafe_b64encode(b"\x81oops").decode().rstrip("="), "invalid character '\\x81' looking for"),
        (base64.urlsafe_b64encode(b"[1]").decode().rstrip("="), "cannot unmarshal array into Go value"),
        (
            base64.urlsafe_b64encode(b'{"v":"meta.k8s.io/v9","rv":5,"start":"a"}').decode().rstrip("="),
            "server does not recognize this encoded version meta.k8s.io/v9",
        ),
    ],
)
async def test_a_continue_token_that_is_not_ours_is_a_bad_request_saying_why_as_upstream(
    api: API, token: str, why: str
) -> None:
    response = await api.client.get(CMS, params={"limit": "1", "continue": token})
    assert response.status_code == 400, response.text
    message = response.json()["message"]
    assert message.startswith("invalid continue token: continue key is not valid: "), message
    assert why in message


async def test_a_continue_token_with_a_resource_version_is_a_bad_request(api: API) -> None:
    """``storage.ValidateListOptions``: only "0" may stand beside a token."""
    for name in ("p1", "p2"):
        assert (await api.client.post(CMS, json=cm(name))).status_code == 201
    page = (await api.client.get(CMS, params={"limit": "1"})).json()
    token, version = page["metadata"]["continue"], page["metadata"]["resourceVersion"]
    pinned = await api.client.get(CMS, params={"limit": "1", "continue": token, "resourceVersion": version})
    assert pinned.status_code == 400
    assert pinned.json()["message"] == "specifying resource version is not allowed when using continue"
    assert (
        await api.client.get(CMS, params={"limit": "1", "continue": token, "resourceVersion": "0"})
    ).status_code == 200


async def test_a_delete_done_at_once_answers_a_status_except_where_upstream_returns_the_object(
    api: API,
) -> None:
    """``Store.finalizeDelete``: a ConfigMap's delete answers Status Success naming the resource (its
    ``kind`` is the plural, as upstream writes it); a pod's storage sets ``ReturnDeletedObject``."""
    made = (await api.client.post(CMS, json=cm("gone"))).json()
    for dry_run in ({"dryRun": "All"}, {}):
        response = await api.client.delete(f"{CMS}/gone", params=dry_run)
        assert response.status_code == 200, response.text
        assert response.json() == {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "details": {"name": "gone", "kind": "configmaps", "uid": made["metadata"]["uid"]},
        }
    assert (await api.client.get(f"{CMS}/gone")).status_code == 404
    assert (await api.client.post(PODS, json=pod("quick"))).status_code == 201
    answer = await api.client.delete(f"{PODS}/quick", params={"gracePeriodSeconds": "0"})
    assert (answer.status_code, answer.json()["kind"]) == (200, "Pod")


async def test_the_metadatas_empty_maps_and_lists_are_left_out_as_go_leaves_them(api: API) -> None:
    """ObjectMeta's ``labels``, ``annotations``, ``finalizers`` and ``ownerReferences`` are omitempty:
    removing the last label leaves no ``labels`` (``kubectl label cm x app-``), in the answer and stored."""
    body = cm("tidy")
    body["metadata"] = {"name": "tidy", "labels": {"app": "x"}, "annotations": {}, "finalizers": []}
    made = (await api.client.post(CMS, json=body)).json()
    assert made["metadata"]["labels"] == {"app": "x"}
    assert "annotations" not in made["metadata"] and "finalizers" not in made["metadata"]
    patched = await api.client.patch(
        f"{CMS}/tidy",
        content=json.dumps({"metadata": {"labels": {"app": None}}}),
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert patched.status_code == 200, patched.text
    assert "labels" not in patched.json()["metadata"]
    assert "labels" not in (await api.client.get(f"{CMS}/tidy")).json()["metadata"]
