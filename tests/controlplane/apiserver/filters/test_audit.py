"""The audit stage: events for real requests through the API server, and the trace pointing at them."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from controlplane.api.kinds import builtin_types
from controlplane.apiserver.audit.log import AuditLog
from controlplane.apiserver.audit.policy import Attributes, parse_policy
from controlplane.apiserver.filters.audit import Auditor
from controlplane.apiserver.server import APIServer
from controlplane.identity import SYSTEM_MASTERS, UserInfo
from controlplane.store.sqlite import SqliteStore
from controlplane.trace import ListSink

ADMIN = UserInfo.create("admin", groups=[SYSTEM_MASTERS, "system:authenticated"])
TOKENS = {"admin-token": ADMIN}
CMS = "/api/v1/namespaces/default/configmaps"
SECRETS = "/api/v1/namespaces/default/secrets"

#: The most verbose policy there is, for everything.
EVERYTHING = {"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": [{"level": "RequestResponse"}]}


@dataclass
class Audited:
    client: httpx.AsyncClient
    server: APIServer
    trace: ListSink
    log_path: Path

    async def events(self) -> list[dict[str, Any]]:
        assert self.server.auditor is not None
        await self.server.auditor.log.flush()
        if not self.log_path.exists():
            return []
        return [json.loads(line) for line in self.log_path.read_text().splitlines()]

    async def events_of(self, response: httpx.Response) -> list[dict[str, Any]]:
        return [e for e in await self.events() if e["auditID"] == response.headers["audit-id"]]


async def audited_server(tmp_path: Path, policy: dict[str, Any]) -> AsyncIterator[Audited]:
    trace = ListSink()
    store = SqliteStore("test", path=tmp_path / "store.sqlite3", trace=trace)
    await store.start()
    log_path = tmp_path / "audit" / "audit.log"
    auditor = Auditor(parse_policy(policy), AuditLog(log_path), now=time.time)
    server = APIServer(
        "test", store, resource_types=builtin_types(), tokens=TOKENS.get, trace=trace, auditor=auditor
    )
    await server.start()
    client = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=server, client=("192.0.2.7", 4711)),
        base_url="http://test",
        headers={"Authorization": "Bearer admin-token", "User-Agent": "kubectl/v1.37.0 (linux/amd64)"},
    )
    try:
        yield Audited(client, server, trace, log_path)
    finally:
        await client.aclose()
        await server.stop()
        await store.close()


@pytest.fixture
async def everything(tmp_path: Path) -> AsyncIterator[Audited]:
    async for audited in audited_server(tmp_path, EVERYTHING):
        yield audited


async def test_a_create_is_recorded_with_who_what_and_the_answer(everything: Audited) -> None:
    response = await everything.client.post(
        CMS, json={"kind": "ConfigMap", "metadata": {"name": "web"}, "data": {"color": "blue"}}
    )
    assert response.status_code == 201
    (received, complete) = await everything.events_of(response)
    assert (received["stage"], complete["stage"]) == ("RequestReceived", "ResponseComplete")
    assert received["stageTimestamp"] == received["requestReceivedTimestamp"]
    assert complete["level"] == "RequestResponse" and complete["verb"] == "create"
    assert complete["requestURI"] == CMS
    assert complete["user"]["username"] == "admin" and SYSTEM_MASTERS in complete["user"]["groups"]
    assert complete["sourceIPs"] == ["192.0.2.7"]
    assert complete["userAgent"] == "kubectl/v1.37.0 (linux/amd64)"
    assert complete["objectRef"] == {
        "resource": "configmaps",
        "namespace": "default",
        "name": "web",
        "apiVersion": "v1",
    }
    assert complete["responseStatus"] == {"metadata": {}, "code": 201}
    assert complete["requestObject"]["data"] == {"color": "blue"}
    assert complete["responseObject"]["metadata"]["uid"] == response.json()["metadata"]["uid"]
    assert complete["annotations"]["authorization.k8s.io/decision"] == "allow"
    assert "authorization.k8s.io/reason" in complete["annotations"]
    assert complete["stageTimestamp"] >= complete["requestReceivedTimestamp"]


async def test_the_trace_names_the_level_and_points_at_the_audit_event(everything: Audited) -> None:
    response = await everything.client.get(CMS)
    audit_id = response.headers["audit-id"]
    (stage,) = [
        e for e in everything.trace.of_type("request.stage") if e["id"] == audit_id and e["stage"] == "audit"
    ]
    assert stage["outcome"] == "pass" and stage["detail"] == "level RequestResponse (rule 1)"
    (done,) = [e for e in everything.trace.of_type("request.completed") if e["id"] == audit_id]
    assert done["audit"] == "RequestResponse"
    assert [e["auditID"] for e in await everything.events_of(response)] == [audit_id, audit_id]


async def test_a_secrets_data_never_reaches_the_audit_log(everything: Audited) -> None:
    password = "hunter2-very-secret"
    encoded = base64.b64encode(b"s3cr3t-bytes").decode()
    created = await everything.client.post(
        SECRETS,
        json={
            "kind": "Secret",
            "metadata": {"name": "db"},
            "stringData": {"password": password},
            "data": {"key": encoded},
        },
    )
    assert created.status_code == 201
    got = await everything.client.get(SECRETS + "/db")
    secret = got.json()
    secret["data"]["more"] = base64.b64encode(b"more-secret").decode()
    assert (await everything.client.put(SECRETS + "/db", json=secret)).status_code == 200
    patched = await everything.client.patch(
        SECRETS + "/db",
        content=json.dumps({"stringData": {"patched": "patched-secret"}}),
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert patched.status_code == 200
    assert (await everything.client.get(SECRETS)).status_code == 200
    assert (await everything.client.get(SECRETS, headers={"Accept": "application/yaml"})).status_code == 200
    assert (await everything.client.delete(SECRETS + "/db")).status_code == 200
    # ... while a ConfigMap is recorded with its data: the policy really is the most verbose one.
    await everything.client.post(
        CMS, json={"kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "visible"}}
    )

    events = await everything.events()
    text = everything.log_path.read_text()
    for value in (
        password,
        "s3cr3t-bytes",
        encoded,
        "more-secret",
        "patched-secret",
        secret["data"]["password"],
    ):
        assert value not in text
    secret_events = [e for e in events if e.get("objectRef", {}).get("resource") == "secrets"]
    assert len(secret_events) == 14  # 7 requests, RequestReceived and ResponseComplete each
    assert {e["level"] for e in secret_events} == {"Metadata"}
    assert not any("requestObject" in e or "responseObject" in e for e in secret_events)
    # The create is named once its body was read (at ResponseComplete), as upstream names it.
    assert [e["objectRef"].get("name") for e in secret_events][:2] == [None, "db"]
    assert '"visible"' in text


async def test_a_failure_records_its_status(everything: Audited) -> None:
    response = await everything.client.get(CMS + "/missing")
    assert response.status_code == 404
    complete = (await everything.events_of(response))[-1]
    assert complete["responseStatus"]["code"] == 404
    assert complete["responseStatus"]["reason"] == "NotFound"
    assert complete["responseStatus"]["message"] == 'configmaps "missing" not found'
    assert "responseObject" not in complete


async def test_a_request_refused_by_authentication_is_recorded_without_a_user(everything: Audited) -> None:
    response = await everything.client.get(CMS, headers={"Authorization": "Bearer wrong"})
    assert response.status_code == 401
    complete = (await everything.events_of(response))[-1]
    assert complete["user"] == {} and complete["responseStatus"]["code"] == 401
    assert complete["responseStatus"]["reason"] == "Unauthorized"
    stages = [
        e["stage"]
        for e in everything.trace.of_type("request.stage")
        if e["id"] == response.headers["audit-id"]
    ]
    assert stages == ["authentication"]  # the diagram stops the request where it was refused


async def test_a_watch_is_recorded_when_its_response_starts_and_when_it_ends(everything: Audited) -> None:
    response = await everything.client.get(CMS, params={"watch": "true", "timeoutSeconds": "1"})
    assert response.status_code == 200
    stages = [e["stage"] for e in await everything.events_of(response)]
    assert stages == ["RequestReceived", "ResponseStarted", "ResponseComplete"]
    complete = (await everything.events_of(response))[-1]
    assert complete["verb"] == "watch" and "responseObject" not in complete


async def test_non_resource_requests_have_no_object_ref(everything: Audited) -> None:
    response = await everything.client.get("/apis")
    complete = (await everything.events_of(response))[-1]
    assert complete["verb"] == "get" and complete["requestURI"] == "/apis" and "objectRef" not in complete


async def test_level_none_and_omitted_stages_record_nothing(tmp_path: Path) -> None:
    policy = {
        "apiVersion": "audit.k8s.io/v1",
        "kind": "Policy",
        "omitStages": ["RequestReceived"],
        "rules": [
            {"level": "None", "resources": [{"group": "", "resources": ["configmaps"]}]},
            {"level": "Metadata"},
        ],
    }
    async for audited in audited_server(tmp_path, policy):
        ignored = await audited.client.get(CMS)
        recorded = await audited.client.get("/api/v1/namespaces/default/pods")
        assert await audited.events_of(ignored) == []
        (only,) = await audited.events_of(recorded)
        assert only["stage"] == "ResponseComplete" and only["level"] == "Metadata"
        assert "requestObject" not in only
        (stage,) = [
            e
            for e in audited.trace.of_type("request.stage")
            if e["id"] == ignored.headers["audit-id"] and e["stage"] == "audit"
        ]
        assert stage["detail"] == "level None: not recorded (rule 1)"
        (done,) = [
            e for e in audited.trace.of_type("request.completed") if e["id"] == ignored.headers["audit-id"]
        ]
        assert "audit" not in done


async def test_an_impersonated_user_is_recorded_beside_the_real_one(everything: Audited) -> None:
    """``kubectl --as``: the event's ``user`` is who authenticated, ``impersonatedUser`` whom it acted as."""
    acting_as_bob = {"Impersonate-User": "bob", "Impersonate-Group": SYSTEM_MASTERS}
    response = await everything.client.get(CMS, headers=acting_as_bob)
    assert response.status_code == 200
    (received, complete) = await everything.events_of(response)
    assert "impersonatedUser" not in received
    assert complete["user"]["username"] == "admin"
    assert complete["impersonatedUser"] == {
        "username": "bob",
        "groups": [SYSTEM_MASTERS, "system:authenticated"],
    }
    (plain,) = [
        e
        for e in await everything.events_of(await everything.client.get(CMS))
        if e["stage"] != "RequestReceived"
    ]
    assert "impersonatedUser" not in plain


async def test_a_request_the_server_fails_on_is_recorded_as_a_panic(
    everything: Audited, monkeypatch: pytest.MonkeyPatch
) -> None:
    from controlplane.apiserver import routing

    async def broken(ctx: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(routing, "ROUTES", {**routing.ROUTES, (routing.OBJECT, "get"): broken})
    response = await everything.client.get(CMS + "/anything")
    assert response.status_code == 500
    (received, panic) = await everything.events_of(response)
    assert received["stage"] == "RequestReceived"
    assert panic["stage"] == "Panic"
    assert panic["responseStatus"]["code"] == 500 and panic["responseStatus"]["reason"] == "InternalError"
    assert "a bug" in panic["responseStatus"]["message"]


async def test_the_auditor_reports_upstreams_audit_metrics(tmp_path: Path) -> None:
    policy = {
        "apiVersion": "audit.k8s.io/v1",
        "kind": "Policy",
        "rules": [{"level": "None", "nonResourceURLs": ["/apis"]}, {"level": "Metadata"}],
    }
    async for audited in audited_server(tmp_path, policy):
        await audited.client.get("/apis")
        await audited.client.get(CMS)
        assert audited.server.auditor is not None
        samples = {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in audited.server.auditor.collect()
            for s in family.samples
        }
        assert samples[("apiserver_audit_event_total", ())] == 2  # RequestReceived and ResponseComplete
        assert samples[("apiserver_audit_level_total", (("level", "None"),))] == 1
        assert samples[("apiserver_audit_level_total", (("level", "Metadata"),))] == 1
        assert samples[("apiserver_audit_error_total", (("plugin", "log"),))] == 0


def _policy(rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": rules}


def _pod_request(name: str) -> Attributes:
    return Attributes(
        "system:node:node-1",
        ("system:nodes",),
        "patch",
        True,
        path=f"/api/v1/namespaces/default/pods/{name}/status",
        namespace="default",
        resource="pods",
        subresource="status",
        name=name,
    )


def test_the_auditor_decides_once_for_every_object_name_unless_a_rule_names_objects(tmp_path: Path) -> None:
    rules = [{"level": "Metadata"}]
    plain = Auditor(parse_policy(_policy(rules)), AuditLog(tmp_path / "a.log"), now=time.time)
    for name in ("web-1", "web-2", "web-3"):
        assert plain.evaluate(_pod_request(name)).level.wire == "Metadata"
    assert len(plain._decided) == 1, "each pod's request was decided on its own"

    named = [{"level": "None", "resources": [{"resources": ["pods/status"], "resourceNames": ["web-2"]}]}]
    auditor = Auditor(parse_policy(_policy(named + rules)), AuditLog(tmp_path / "b.log"), now=time.time)
    levels = [auditor.evaluate(_pod_request(name)).level.wire for name in ("web-1", "web-2", "web-3")]
    assert levels == ["Metadata", "None", "Metadata"], "a rule naming an object was not applied by name"
