"""The shared cluster against a real lab: a namespace and an ``edit`` RoleBinding per student, made
through the API server when they join or when the cluster is made, idempotently; each student may
work in their own namespace and is refused (403) in another's, in the cluster's scope, and by RBAC."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
import yaml
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import Permission, User
from django.test import AsyncClient
from django.urls import path

from courses import gateway
from courses.chapters.consumer import ChapterConsumer
from courses.classrooms import services, shared
from courses.classrooms.models import SHARED, Classroom
from courses.engine.checks.evaluator import _trace_in_namespace
from courses.engine.checks.spec import TraceLeaf
from courses.engine.content import load_course
from courses.manifests import services as manifests
from courses.sandboxes import services as sandboxes
from tests.courses.sandboxes.conftest import LabFactory
from tests.support.tracestream import open_socket, trace_router, trace_socket

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_students_namespace_is_a_unique_dns_label() -> None:
    assert shared.student_namespace(username="alice", user_id=3) == "student-alice"
    assert shared.student_namespace(username="Alice.B@x", user_id=4) == "student-alice-b-x-u4"
    # A username that looks like another's suffixed namespace gets a suffix of its own.
    assert shared.student_namespace(username="alice-b-x-u4", user_id=9) == "student-alice-b-x-u4-u9"
    long = shared.student_namespace(username="a" * 150, user_id=12345)
    assert len(long) == 63 and long.endswith("-u12345")
    assert shared.student_namespace(username="__", user_id=5) == "student-x-u5"


async def _classroom(teacher: User, *students: User) -> Classroom:
    def make() -> Classroom:
        classroom = services.create_classroom(user=teacher, name="K8s", course="control-plane", chapters=[])
        for student in students:
            services.join(user=student, code=classroom.join_code or "")
        return Classroom.objects.get(pk=classroom.pk)

    return await sync_to_async(make)()


async def _teacher() -> User:
    user = await User.objects.acreate_user("teacher", password="pw-teacher-12345")
    permission = await Permission.objects.aget(codename="teach_classroom")
    await user.user_permissions.aadd(permission)
    return user


async def _get(access: sandboxes.SandboxAccess, path: str) -> httpx.Response:
    async with gateway.api_client(cluster=access.cluster, token=access.token) as client:
        return await client.get(path)


async def _create(access: sandboxes.SandboxAccess, path: str, obj: dict[str, Any]) -> httpx.Response:
    async with gateway.api_client(cluster=access.cluster, token=access.token) as client:
        return await client.post(path, json=obj)


def _configmap(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}}


async def test_students_get_a_namespace_with_edit_and_nothing_else(sandbox_lab: LabFactory) -> None:
    teacher = await _teacher()
    alice = await User.objects.acreate_user("alice", password="pw-alice-1")
    bob = await User.objects.acreate_user("bob", password="pw-bob-1")
    classroom = await _classroom(teacher, alice)
    async with sandbox_lab():
        # Made for the members so far, through the API server as the lab: on the trace.
        cluster = shared.shared_cluster_name(classroom_id=classroom.pk)
        name, count = await shared.create_shared_cluster(classroom=classroom)
        assert (name, count) == (cluster, 1)

        # Bob joins afterwards: set up at once, and again (idempotent: nothing changes, no error).
        await sync_to_async(services.join)(user=bob, code=classroom.join_code or "")
        with gateway.subscribe_trace(cluster=cluster) as trace:
            assert await shared.joined(classroom=classroom, user=bob) == "student-bob"
            events = trace.drain().events
        written = {
            (e.get("verb"), e.get("resource"), e.get("code"))
            for e in events
            if e["type"] == "request.completed"
        }
        assert ("patch", "namespaces", 201) in written or ("patch", "namespaces", 200) in written
        assert await shared.joined(classroom=classroom, user=bob) == "student-bob"
        assert await shared.create_shared_cluster(classroom=classroom) == (cluster, 2)

        service = shared.SharedCluster(cluster)
        a = await service.ensure_sandbox(user=alice)
        b = await service.ensure_sandbox(user=bob)
        assert (a.cluster, a.user, a.namespace) == (cluster, "student:alice", "student-alice")
        assert b.namespace == "student-bob"

        # Alice works in her namespace (edit), and is refused in Bob's, cluster-wide and on RBAC.
        mine = await _create(a, "/api/v1/namespaces/student-alice/configmaps", _configmap("hers"))
        assert mine.status_code == 201, mine.text
        assert (await _get(a, "/api/v1/namespaces/student-alice/pods")).status_code == 200
        theirs = await _get(a, "/api/v1/namespaces/student-bob/pods")
        assert theirs.status_code == 403
        assert 'User "student:alice" cannot list resource "pods"' in theirs.json()["message"]
        assert (await _get(a, "/api/v1/namespaces/student-bob/configmaps/hers")).status_code == 403
        assert (await _get(a, "/api/v1/nodes")).status_code == 403
        role = {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "x"},
        }
        refused = await _create(a, "/apis/rbac.authorization.k8s.io/v1/clusterroles", role)
        assert refused.status_code == 403
        # Her binding in her namespace is there, and she cannot change it (edit grants no RBAC).
        binding = await _get(a, "/apis/rbac.authorization.k8s.io/v1/namespaces/student-alice/rolebindings")
        assert binding.status_code == 403

        # The instructor administers the cluster; the checker reads every namespace.
        token = await gateway.kept_token(cluster=cluster, user="instructor:teacher")
        admin = sandboxes.SandboxAccess(cluster=cluster, user="instructor:teacher", token=token)
        bindings = await _get(
            admin, "/apis/rbac.authorization.k8s.io/v1/namespaces/student-alice/rolebindings"
        )
        assert bindings.status_code == 200
        [item] = bindings.json()["items"]
        assert item["roleRef"]["name"] == "edit"
        assert item["subjects"] == [
            {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "student:alice"}
        ]
        assert (await _get(admin, "/api/v1/nodes")).status_code == 200

        # The manifest form puts a document that names no namespace in hers.
        text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-the-form\ndata:\n  k: v\n"
        result = await manifests.submit(access=a, text=text, action="apply", field_manager="alice")
        assert result.ok, result.summary
        assert [d.namespace for d in result.documents] == ["student-alice"]
        assert (await _get(a, "/api/v1/namespaces/student-alice/configmaps/from-the-form")).status_code == 200

        # Her kubeconfig names the shared cluster, with her namespace as the context's.
        document = yaml.safe_load(
            await service.kubeconfig_for(user=alice, server="https://lab.example.org:6443")
        )
        [context] = document["contexts"]
        assert context["context"]["namespace"] == "student-alice"
        assert document["clusters"][0]["cluster"]["server"].endswith(f"/clusters/{cluster}")


async def test_the_pages_use_the_shared_cluster_once_the_instructor_switches(sandbox_lab: LabFactory) -> None:
    teacher = await _teacher()
    alice = await User.objects.acreate_user("alice", password="pw-alice-1")
    classroom = await _classroom(teacher, alice)
    assert await shared.cluster_service(user=alice, course="control-plane", chapter="one-hub") is sandboxes
    async with sandbox_lab():
        await shared.create_shared_cluster(classroom=classroom)
        assert await shared.cluster_service(user=alice, course="control-plane") is sandboxes
        await sync_to_async(services.set_chapters_use)(classroom=classroom, user=teacher, use=SHARED)
        service = await shared.cluster_service(user=alice, course="control-plane", chapter="one-hub")
        assert isinstance(service, shared.SharedCluster)
        assert service.cluster == shared.shared_cluster_name(classroom_id=classroom.pk)
        assert await shared.cluster_service(user=teacher, course="control-plane") is sandboxes


async def test_a_students_chapter_page_works_in_their_namespace_of_the_shared_cluster(
    sandbox_lab: LabFactory,
) -> None:
    teacher = await _teacher()
    alice = await User.objects.acreate_user("alice", password="pw-alice-1")
    classroom = await _classroom(teacher, alice)
    await sync_to_async(services.set_chapters_use)(classroom=classroom, user=teacher, use=SHARED)
    async with sandbox_lab():
        cluster, _ = await shared.create_shared_cluster(classroom=classroom, user=teacher)
        app = URLRouter([path("ws/course/<str:course>/<str:chapter>/steps/", ChapterConsumer.as_asgi())])
        socket = WebsocketCommunicator(app, "/ws/course/control-plane/one-hub/steps/")
        socket.scope["user"] = alice
        assert (await socket.connect(timeout=10))[0]
        try:
            ready: dict[str, Any] = {}
            while ready.get("state") != "ready":
                ready = await socket.receive_json_from(timeout=10)
                assert ready.get("state") != "failed", ready
            assert (ready["cluster"], ready["namespace"]) == (cluster, "student-alice")
            # "Start here" would remake the cluster: everyone's, so refused.
            await socket.send_json_to({"action": "jump", "step": "write-through-the-hub"})
            refused = await socket.receive_json_from(timeout=10)
            assert refused["type"] == "progress" and refused["state"] == "error"
            assert "not available in the classroom's cluster" in refused["text"]
        finally:
            await socket.disconnect()

        # The topology the page mounts is the shared cluster's.
        client = AsyncClient()
        await client.aforce_login(alice)
        fragment = await client.get("/learn/control-plane/one-hub/sandbox/")
        assert fragment.status_code == 200
        assert f'data-cluster="{cluster}"' in fragment.content.decode()


def test_a_check_reads_the_students_namespace_where_the_chapter_says_default() -> None:
    # Chapter 1's "configmap-to-etcd": a write seen on the trace (a store key in default), then the
    # ConfigMap read back from the namespace default.
    chapter = load_course("control-plane").chapter("one-hub")
    assert chapter is not None
    step = chapter.step("configmap-to-etcd")
    assert step is not None
    in_sandbox = step.check.evaluator(student="student:alice", since_seq=0)
    in_shared = step.check.evaluator(student="student:alice", since_seq=0, namespace="student-alice")
    assert [r.path for r in in_sandbox.reads()] == ["/api/v1/namespaces/default/configmaps/app-config"]
    assert [r.path for r in in_shared.reads()] == ["/api/v1/namespaces/student-alice/configmaps/app-config"]
    [written] = [leaf for leaf in step.check.leaves() if isinstance(leaf, TraceLeaf) and leaf.id == "written"]
    moved = str(_trace_in_namespace(written, "student-alice"))
    assert "/registry/configmaps/student-alice/app-config" in moved and "/default/" not in moved
    assert shared.in_namespace("/api/v1/namespaces/default/configmaps", "student-alice") == (
        "/api/v1/namespaces/student-alice/configmaps"
    )


async def _frames_until_seen(socket: WebsocketCommunicator, wanted: str) -> list[dict[str, Any]]:
    """The events the socket is sent until one is a ``request.completed`` naming ``wanted``."""
    events: list[dict[str, Any]] = []
    async with asyncio.timeout(30):  # frames keep coming (Lease renewals): a miss must still end
        while not any(e["type"] == "request.completed" and e.get("name") == wanted for e in events):
            frame = await socket.receive_json_from(timeout=10)
            assert frame["type"] == "frame", frame
            events += frame["events"]
    return events


async def test_a_student_watches_the_shared_cluster_without_her_classmates_namespaces(
    sandbox_lab: LabFactory,
) -> None:
    teacher = await _teacher()
    alice = await User.objects.acreate_user("alice", password="pw-alice-1")
    bob = await User.objects.acreate_user("bob", password="pw-bob-1")
    classroom = await _classroom(teacher, alice, bob)
    async with sandbox_lab():
        cluster, _ = await shared.create_shared_cluster(classroom=classroom)
        service = shared.SharedCluster(cluster)
        a, b = await service.ensure_sandbox(user=alice), await service.ensure_sandbox(user=bob)
        watchers = {}
        for user in (alice, teacher):
            socket = trace_socket(trace_router(), cluster, user)
            hello = await open_socket(socket)
            await socket.send_json_to({"action": "subscribe", "since": hello["last_seq"]})
            watchers[user.username] = (socket, hello)
        try:
            assert watchers["alice"][1]["scope"] == {"namespace": "student-alice"}
            assert "scope" not in watchers["teacher"][1], "an instructor sees the whole shared cluster"
            created = await _create(b, "/api/v1/namespaces/student-bob/configmaps", _configmap("bobs"))
            assert created.status_code == 201, created.text
            mine = await _create(a, "/api/v1/namespaces/student-alice/configmaps", _configmap("alices"))
            assert mine.status_code == 201, mine.text
            refused = await _get(a, "/api/v1/namespaces/student-bob/configmaps/bobs")
            assert refused.status_code == 403
            await _create(a, "/api/v1/namespaces/student-alice/configmaps", _configmap("last"))
            assert (await _get(a, "/api/v1/namespaces/student-alice/configmaps/last")).status_code == 200

            seen = await _frames_until_seen(watchers["alice"][0], "last")
            about_bob = [
                e for e in seen if "student-bob" in json.dumps(e) and e.get("from") != "user:student:alice"
            ]
            assert about_bob == [], f"alice was sent bob's events: {about_bob[:3]}"
            names = {(e["type"], e.get("name")) for e in seen}
            assert any(
                e["type"] == "request.received" and e["path"].endswith("/student-alice/configmaps")
                for e in seen
            ), "alice's own write is missing"
            assert ("request.completed", "bobs") in names, "alice's own refused read is missing"
            assert any(e["type"] == "rbac.decision" and e.get("allowed") is False for e in seen)
            everything = await _frames_until_seen(watchers["teacher"][0], "last")
            assert any("student-bob" in json.dumps(e) for e in everything), "the instructor lost bob's events"

            # The rewound diagram's objects are scoped alike: bob's pod is drawn for the teacher only.
            pod = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "bobs-pod"},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            }
            assert (await _create(b, "/api/v1/namespaces/student-bob/pods", pod)).status_code == 201
            assert (await _create(a, "/api/v1/namespaces/student-alice/pods", pod)).status_code == 201
            drawn = {}
            for user in (alice, teacher):
                client = AsyncClient()
                await client.aforce_login(user)
                answer = await client.get(f"/lab/{cluster}/etcd/?objects=diagram")
                assert answer.status_code == 200, answer.content
                drawn[user.username] = {p["namespace"] for p in answer.json()["objects"]["pods"]}
            assert "student-bob" in drawn["teacher"] and "student-bob" not in drawn["alice"], drawn
            assert "student-alice" in drawn["alice"], "alice no longer sees her own pod"
        finally:
            for socket, _ in watchers.values():
                await socket.disconnect()
