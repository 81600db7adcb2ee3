"""The etcd panel's view: the running lab's store, key by key, for whoever may watch the cluster.

A started lab (no components) and an admin writing through its real API server. An anonymous visitor
asks ``/lab/<cluster>/etcd/`` through the whole Django stack (sessions, authentication); signed-in
users are ``User`` objects handed to the view as the session would: unsaved (no database) for the
demo cluster, saved into classrooms for the test of who may look into a classroom's cluster.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.contrib.auth.models import User
from django.http import HttpResponse
from django.test import AsyncClient, AsyncRequestFactory
from pytest_django import Settings

from controlplane.diagram import node_summary, pod_summary
from controlplane.runtime import Lab, LabConfig
from controlplane.store.kv import KeyValue
from courses.lab.etcdpanel import CIPHERTEXT_PREVIEW, describe_value
from courses.lab.views import etcd_keys
from tests.support.classrooms import committed_classrooms
from tests.support.lab import active_lab

#: A Secret's value: random, so that finding it anywhere in an answer cannot be a coincidence.
PASSWORD = "s3cret-" + base64.b32encode(os.urandom(10)).decode()


@pytest.fixture
async def lab(tmp_path: Path, settings: Settings) -> AsyncIterator[Lab]:
    settings.KUBELAB_DATA_DIR = tmp_path
    settings.KUBELAB_DEMO_ANONYMOUS = False
    async with active_lab(LabConfig(data_dir=tmp_path, components=(), nodes=0)) as running:
        yield running


async def api(lab: Lab, method: str, path: str, body: dict[str, Any] | None = None) -> httpx.Response:
    """A request to the demo cluster's API server as a cluster admin (through its whole pipeline)."""
    cluster = lab.cluster("demo")
    assert cluster.apiserver is not None
    token = cluster.tokens.issue("admin", ["system:masters"])
    transport = httpx.ASGITransport(app=cluster.apiserver)
    async with httpx.AsyncClient(transport=transport, base_url="http://demo") as client:
        return await client.request(method, path, json=body, headers={"Authorization": f"Bearer {token}"})


class SignedIn:
    """Asks the view as a signed-in user, the way the session middleware would hand it over."""

    def __init__(self, user: User) -> None:
        self.user = user

    async def get(self, path: str, params: dict[str, str | list[str]] | None = None) -> HttpResponse:
        request = AsyncRequestFactory().get(path, params or {})
        user = self.user

        async def auser() -> User:
            return user

        request.user = user
        request.auser = auser
        name = path.split("/")[2]
        return await etcd_keys(request, name)


def signed_in(username: str, *, staff: bool = False) -> SignedIn:
    """A user who is in no classroom (never saved): sees the demo cluster, and every cluster if staff."""
    return SignedIn(User(username=username, is_staff=staff))


def answer(response: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(response.content)
    return data


async def test_an_anonymous_visitor_is_refused_and_nothing_is_read(lab: Lab) -> None:
    response = await AsyncClient().get("/lab/demo/etcd/")
    assert response.status_code == 403
    assert answer(response) == {"error": "sign in to look into cluster 'demo'"}
    assert "keys" not in answer(response)


async def test_the_list_has_the_revisions_of_every_key_and_the_marks(lab: Lab) -> None:
    created = await api(lab, "POST", "/api/v1/namespaces/default/configmaps",
                        {"metadata": {"name": "colours"}, "data": {"sky": "blue"}})  # fmt: skip
    assert created.status_code == 201, created.text
    written = int(created.json()["metadata"]["resourceVersion"])
    client = signed_in("alice")
    listed = answer(await client.get("/lab/demo/etcd/"))
    assert listed["cluster"] == "demo"
    assert listed["current_revision"] >= written and listed["revision"] >= written
    assert listed["compacted"] == 0
    rows = {row["key"]: row for row in listed["keys"]}
    row = rows["/registry/configmaps/default/colours"]
    assert (row["create_revision"], row["mod_revision"], row["version"]) == (written, written, 1)
    assert row["value"] == {"form": "json", "bytes": row["value"]["bytes"]}  # no value in the list
    assert "/registry/namespaces/default" in rows
    # One key, with its value, as the page asks after a write; and one that does not exist.
    keys = ["/registry/configmaps/default/colours", "/registry/configmaps/default/none"]
    one = answer(await client.get("/lab/demo/etcd/", {"key": keys}))
    assert one["keys"][0]["value"]["json"]["data"] == {"sky": "blue"}
    assert one["absent"] == ["/registry/configmaps/default/none"]


async def test_a_secret_shows_its_ciphertext_and_never_its_plaintext(lab: Lab) -> None:
    body = {"metadata": {"name": "db"}, "stringData": {"password": PASSWORD}}
    created = await api(lab, "POST", "/api/v1/namespaces/default/secrets", body)
    assert created.status_code == 201, created.text
    client = signed_in("alice")
    key = "/registry/secrets/default/db"
    listed = await client.get("/lab/demo/etcd/")
    one = await client.get("/lab/demo/etcd/", {"key": key})
    for response in (listed, one):
        assert response.status_code == 200
        text = response.content.decode()
        for form in (PASSWORD, base64.b64encode(PASSWORD.encode()).decode(), PASSWORD.encode().hex()):
            assert form not in text
        row = next(r for r in answer(response)["keys"] if r["key"] == key)
        value = row["value"]
        assert value["form"] == "ciphertext"
        assert value["prefix"] == "k8s:enc:aescbc:v1:key1:"
        assert (value["provider"], value["key_name"]) == ("aescbc", "key1")
        assert len(bytes.fromhex(value["hex"])) == CIPHERTEXT_PREVIEW and value["truncated"]
        assert base64.b64decode(value["base64"]) == bytes.fromhex(value["hex"])
        assert "json" not in value


async def test_a_past_revision_is_read_until_it_is_compacted(lab: Lab) -> None:
    path = "/api/v1/namespaces/default/configmaps"
    first = await api(lab, "POST", path, {"metadata": {"name": "c"}, "data": {"v": "1"}})
    before = int(first.json()["metadata"]["resourceVersion"])
    changed = await api(lab, "PUT", f"{path}/c", {**first.json(), "data": {"v": "2"}})
    assert changed.status_code == 200, changed.text
    client = signed_in("alice")
    key = "/registry/configmaps/default/c"
    then = answer(await client.get("/lab/demo/etcd/", {"key": key, "revision": str(before)}))
    assert then["revision"] == before and then["keys"][0]["value"]["json"]["data"] == {"v": "1"}
    assert then["keys"][0]["version"] == 1
    store = lab.cluster("demo").store
    await store.compact(await store.current_revision())
    gone = await client.get("/lab/demo/etcd/", {"revision": str(before)})
    assert gone.status_code == 410
    assert "compacted" in answer(gone)["error"] and answer(gone)["compacted"] > before
    bad = await client.get("/lab/demo/etcd/", {"revision": "-1"})
    assert bad.status_code == 400


async def test_an_unknown_cluster_is_404_for_staff_and_403_for_others(lab: Lab) -> None:
    assert (await signed_in("root", staff=True).get("/lab/nope/etcd/")).status_code == 404
    refused = await signed_in("bob").get("/lab/nope/etcd/")  # nobody else may probe for names
    assert (refused.status_code, answer(refused)) == (403, {"error": "you may not look into cluster 'nope'"})


@pytest.fixture
async def classrooms(transactional_db: None) -> AsyncIterator[dict[str, User]]:
    """Saved users in classrooms (tests/support/classrooms.py), committed: the view reads them in a
    worker thread. alice attends k8s-101, which owns team-a; dave attends k8s-201."""
    async with committed_classrooms() as users:
        yield users


async def test_only_the_classroom_of_a_cluster_looks_into_its_store(
    lab: Lab, classrooms: dict[str, User]
) -> None:
    await lab.create_cluster("team-a")
    listed = await SignedIn(classrooms["alice"]).get("/lab/team-a/etcd/")
    assert listed.status_code == 200, listed.content
    assert answer(listed)["cluster"] == "team-a"
    assert "/registry/namespaces/default" in {row["key"] for row in answer(listed)["keys"]}
    refused = await SignedIn(classrooms["dave"]).get("/lab/team-a/etcd/")
    assert (refused.status_code, answer(refused)) == (
        403,
        {"error": "you may not look into cluster 'team-a'"},
    )


def test_an_unencrypted_secret_shows_its_size_only() -> None:
    stored = json.dumps(
        {"kind": "Secret", "data": {"password": base64.b64encode(b"plain").decode()}}
    ).encode()
    described = describe_value("/registry/secrets/default/db", stored, with_json=True)
    assert described["form"] == "hidden" and described["bytes"] == len(stored)
    assert base64.b64encode(b"plain").decode() not in json.dumps(described)
    configmap = describe_value("/registry/configmaps/default/c", b'{"data": {"a": "b"}}', with_json=True)
    assert configmap == {"form": "json", "bytes": 20, "json": {"data": {"a": "b"}}}


async def test_the_diagram_objects_are_the_nodes_and_pods_stored_at_a_revision(lab: Lab) -> None:
    """The rewound diagram's read: a pod's node and phase at each revision, gone after its delete."""
    node = {"metadata": {"name": "node-1"},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}}  # fmt: skip
    assert (await api(lab, "POST", "/api/v1/nodes", node)).status_code == 201
    pods = "/api/v1/namespaces/default/pods"
    spec = {"nodeName": "node-1", "containers": [{"name": "c", "image": "nginx"}]}
    created = await api(lab, "POST", pods, {"metadata": {"name": "web"}, "spec": spec})
    assert created.status_code == 201, created.text
    at_create = int(created.json()["metadata"]["resourceVersion"])
    running = {**created.json(), "status": {"phase": "Running"}}
    updated = await api(lab, "PUT", f"{pods}/web/status", running)
    assert updated.status_code == 200, updated.text
    at_running = int(updated.json()["metadata"]["resourceVersion"])
    secret = {"metadata": {"name": "db"}, "stringData": {"password": PASSWORD}}
    assert (await api(lab, "POST", "/api/v1/namespaces/default/secrets", secret)).status_code == 201
    deleted = await api(lab, "DELETE", f"{pods}/web?gracePeriodSeconds=0")
    assert deleted.status_code == 200, deleted.text
    client = signed_in("alice")

    async def objects(revision: int | None = None) -> dict[str, Any]:
        params: dict[str, str | list[str]] = {"objects": "diagram"}
        if revision:
            params["revision"] = str(revision)
        response = await client.get("/lab/demo/etcd/", params)
        assert response.status_code == 200, response.content
        assert PASSWORD not in response.content.decode(), "a Secret's plaintext reached the page"
        return answer(response)

    then = await objects(at_create)
    assert then["revision"] == at_create and then["current_revision"] > at_running
    web = {"namespace": "default", "name": "web", "generateName": "", "node": "node-1", "phase": "Pending",
           "deleting": False, "mod_revision": at_create}  # fmt: skip
    assert then["objects"]["pods"] == [web]
    assert [n["name"] for n in then["objects"]["nodes"]] == ["node-1"]
    assert then["objects"]["nodes"][0]["ready"] == "True"
    assert then["objects"]["unreadable"] == 0
    assert then["objects"]["leases"] == [], "no component elects a leader in this lab"
    later = await objects(at_running)
    assert later["objects"]["pods"] == [{**web, "phase": "Running", "mod_revision": at_running}]
    now = await objects()
    assert now["objects"]["pods"] == [], "the deleted pod is still drawn now"
    future = await client.get("/lab/demo/etcd/", {"objects": "diagram", "revision": str(now["revision"] + 5)})
    assert future.status_code == 400 and "not written yet" in answer(future)["error"]
    assert set(now) == {"cluster", "revision", "current_revision", "compacted", "objects"}
    store = lab.cluster("demo").store
    await store.compact(await store.current_revision())
    gone = await client.get("/lab/demo/etcd/", {"objects": "diagram", "revision": str(at_create)})
    assert gone.status_code == 410 and answer(gone)["compacted"] > at_create


def test_a_stored_object_that_cannot_be_decoded_is_not_summarised() -> None:
    encrypted = KeyValue("/registry/pods/default/web", b"k8s:enc:aescbc:v1:key1:\x00\x01", 3, 3, 1)
    assert pod_summary(encrypted) is None
    assert node_summary(KeyValue("/registry/minions/n", b"not json", 4, 4, 1)) is None
    bare = pod_summary(KeyValue("/registry/pods/kube-system/dns", b"{}", 5, 6, 2))
    assert bare == {"namespace": "kube-system", "name": "dns", "generateName": "", "node": "",
                    "phase": "Pending", "deleting": False, "mod_revision": 6}  # fmt: skip
    cordoned = node_summary(KeyValue("/registry/minions/n", b'{"spec": {"unschedulable": true}}', 4, 4, 1))
    assert cordoned == {"name": "n", "ready": None, "unschedulable": True, "mod_revision": 4}
