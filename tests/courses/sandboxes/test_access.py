"""Who may see a sandbox (its topology page, its etcd panel, its trace socket): its student, staff, and
the instructors of the classrooms its student attends."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import AnonymousUser, User
from django.test import AsyncClient, Client

from controlplane.consumers.access import may_view as socket_may_view
from courses.classrooms.access import ANONYMOUS, Viewer, clusters_visible_to, may_view, user_may_view
from courses.models import Classroom
from courses.sandboxes import services
from tests.courses.sandboxes.conftest import LabFactory
from tests.support.tracestream import open_socket, receive, trace_router, trace_socket

ALICE = Viewer(signed_in=True, user_id=5)
BOB = Viewer(signed_in=True, user_id=6, attends=frozenset({"k8s-101"}))
STAFF = Viewer(signed_in=True, staff=True, user_id=1)


@pytest.mark.parametrize(
    ("viewer", "cluster", "owner", "allowed"),
    [
        (ALICE, "sb-5", None, True),  # her own
        (BOB, "sb-5", None, False),  # another student's
        (STAFF, "sb-5", None, True),
        (ANONYMOUS, "sb-5", None, False),
        (Viewer(signed_in=True), "sb-5", None, False),  # a user we know nothing of
        (BOB, "sb-5", "k8s-101", False),  # a classroom's claim does not make a sandbox anyone's
        (ALICE, "sb-05", None, False),  # not her sandbox's name: a cluster for staff only
        (ALICE, "demo", None, True),
        (BOB, "team-a", "k8s-101", True),  # classrooms as before
        (ALICE, "team-a", "k8s-101", False),
        (
            Viewer(signed_in=True, user_id=7, teaches_students=frozenset({5})),
            "sb-5",
            None,
            True,
        ),  # her teacher
        (Viewer(signed_in=True, user_id=7, teaches_students=frozenset({6})), "sb-5", None, False),
    ],
)
def test_the_rule(viewer: Viewer, cluster: str, owner: str | None, allowed: bool) -> None:
    assert may_view(viewer, cluster, owner=owner, demo="demo", demo_anonymous=True) is allowed


@pytest.mark.django_db
def test_for_django_users_without_reading_classrooms(django_assert_num_queries: Any) -> None:
    alice = User.objects.create_user("alice")
    bob = User.objects.create_user("bob")
    teacher = User.objects.create_user("teacher", is_staff=True)
    classroom = Classroom.objects.create(name="Kubernetes 101", slug="k8s-101")
    classroom.students.add(bob)
    classroom.clusters.create(cluster=f"sb-{alice.pk}")  # a classroom claiming her sandbox
    mine = f"sb-{alice.pk}"
    with django_assert_num_queries(0):  # the owner is in the name
        assert user_may_view(alice, mine)
        assert user_may_view(teacher, mine)
        assert not user_may_view(AnonymousUser(), mine)
        assert not user_may_view(None, mine)
    with django_assert_num_queries(1):  # whether bob teaches her: one query
        assert not user_may_view(bob, mine)
    assert clusters_visible_to(alice, ["demo", mine, f"sb-{bob.pk}"]) == ["demo", mine]


@pytest.mark.django_db(transaction=True)
async def test_another_student_is_refused_the_page_the_panel_and_the_socket(sandbox_lab: LabFactory) -> None:
    alice = await User.objects.acreate_user("alice", password="pw-alice-1")
    bob = await User.objects.acreate_user("bob", password="pw-bob-1")
    async with sandbox_lab() as lab:
        access = await services.ensure_sandbox(user=alice)
        cluster = access.cluster
        as_bob, as_alice, anonymous = AsyncClient(), AsyncClient(), AsyncClient()
        await as_bob.aforce_login(bob)
        await as_alice.aforce_login(alice)
        for client, status in ((as_bob, 403), (anonymous, 403), (as_alice, 200)):
            assert (await client.get(f"/lab/{cluster}/etcd/")).status_code == status
        page = await sync_to_async(_page_statuses)(cluster, alice, bob)
        assert page == {"alice": 200, "bob": 403, "anonymous": 403}
        assert not await socket_may_view(bob, cluster)
        assert await socket_may_view(alice, cluster)

        # The socket: refused for bob; for alice it wakes her hibernated sandbox.
        refused = trace_socket(trace_router(), cluster, bob)
        connected, _ = await refused.connect()
        assert connected
        assert (await receive(refused))["code"] == 4403
        await refused.disconnect()
        await lab.settled(cluster)
        assert await lab.hibernate(cluster)
        watching = trace_socket(trace_router(), cluster, alice)
        hello = await open_socket(watching)
        assert hello["cluster"] == cluster
        assert lab.serving(cluster)
        await watching.disconnect()
        await lab.settled(cluster)


def _page_statuses(cluster: str, alice: User, bob: User) -> dict[str, int]:
    """The topology page is a synchronous view: asked through Django's test client."""
    statuses = {}
    for name, user in (("alice", alice), ("bob", bob), ("anonymous", None)):
        client = Client()
        if user is not None:
            client.force_login(user)
        statuses[name] = client.get(f"/lab/{cluster}/").status_code
    return statuses
