"""The dashboard's switch between each student's sandbox and the classroom's shared cluster, and the
chapter page that follows it. Through Django's test client, without a lab (the lab's side is in
test_shared.py): only instructors switch, a student's try is refused and logged, every switch is
logged, and a student's chapter page then names the shared cluster and their namespace there."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.utils import translation

from courses.classrooms import services, shared
from courses.classrooms.access import user_may_read_store, user_may_view
from courses.classrooms.models import SANDBOX, SHARED
from courses.models import Classroom, ClassroomCluster, ClassroomLogEntry

pytestmark = pytest.mark.django_db


def _client(user: User, language: str = "en") -> Client:
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    client.force_login(user)
    client.cookies["django_language"] = language
    return client


@pytest.fixture
def teacher() -> User:
    user = User.objects.create_user("teacher", password="pw-teacher-12345")
    user.user_permissions.add(Permission.objects.get(codename="teach_classroom"))
    return User.objects.get(pk=user.pk)


@pytest.fixture
def classroom(teacher: User) -> Classroom:
    return services.create_classroom(
        user=teacher, name="K8s 101", course="control-plane", chapters=["one-hub"]
    )


@pytest.fixture
def alice(classroom: Classroom) -> User:
    user = User.objects.create_user("alice", password="pw-alice-12345")
    services.join(user=user, code=classroom.join_code or "")
    return user


def _switch(client: Client, classroom: Classroom, use: str) -> tuple[int, str]:
    response = client.post(
        f"/classrooms/{classroom.slug}/chapters-use/", {"use": use}, headers={"HX-Request": "true"}
    )
    return response.status_code, response.content.decode()


def test_the_dashboard_offers_the_switch_in_both_languages(classroom: Classroom, teacher: User) -> None:
    page = _client(teacher).get(f"/classrooms/{classroom.slug}/").content.decode()
    assert 'id="chapters-use"' in page and 'data-chapters-use="sandbox"' in page
    assert 'value="sandbox" checked' in page and "Chapters use" in page
    with translation.override("zh-hans"):
        chinese = _client(teacher, "zh-hans").get(f"/classrooms/{classroom.slug}/").content.decode()
    assert 'id="chapters-use"' in chinese and "Chapters use" not in chinese
    assert "共享集群" in chinese


def test_the_instructor_switches_and_each_switch_is_logged(
    classroom: Classroom, teacher: User, alice: User
) -> None:
    client = _client(teacher)
    # No lab runs in this process: the setting changes, the row is made, and the answer says why the
    # cluster itself could not start here (it starts when a page first uses it).
    status, html = _switch(client, classroom, SHARED)
    assert status == 200 and 'data-chapters-use="shared"' in html and "<html" not in html
    assert "not running in this server process" in html
    classroom.refresh_from_db()
    assert classroom.chapters_use == SHARED
    cluster = shared.shared_cluster_name(classroom_id=classroom.pk)
    assert list(
        ClassroomCluster.objects.filter(classroom=classroom, shared=True).values_list("cluster", flat=True)
    ) == [cluster]
    assert f'href="/lab/{cluster}/"' in html

    status, html = _switch(client, classroom, SANDBOX)
    assert status == 200 and "each student&#x27;s own sandbox" in html
    status, html = _switch(client, classroom, "everyone's")
    assert status == 400 and "Choose each student" in html
    classroom.refresh_from_db()
    assert classroom.chapters_use == SANDBOX
    log = list(
        ClassroomLogEntry.objects.filter(
            classroom=classroom, action__in=["chapters-use", "shared-cluster-created"]
        )
        .order_by("id")
        .values_list("action", "detail", "actor__username")
    )
    assert log == [
        ("chapters-use", SHARED, "teacher"),
        ("shared-cluster-created", cluster, "teacher"),
        ("chapters-use", SANDBOX, "teacher"),
    ]
    dashboard = client.get(f"/classrooms/{classroom.slug}/").content.decode()
    assert "switched where the chapters work to" in dashboard and "created the shared cluster" in dashboard
    # Without htmx: back to the dashboard.
    plain = client.post(f"/classrooms/{classroom.slug}/chapters-use/", {"use": SANDBOX})
    assert plain.status_code == 302 and plain["Location"] == f"/classrooms/{classroom.slug}/"


def test_a_student_may_not_switch_and_the_attempt_is_logged(classroom: Classroom, alice: User) -> None:
    status, _ = _switch(_client(alice), classroom, SHARED)
    assert status == 403
    other = User.objects.create_user("other-teacher")
    other.user_permissions.add(Permission.objects.get(codename="teach_classroom"))
    assert _switch(_client(User.objects.get(pk=other.pk)), classroom, SHARED)[0] == 403
    classroom.refresh_from_db()
    assert (
        classroom.chapters_use == SANDBOX
        and not ClassroomCluster.objects.filter(classroom=classroom).exists()
    )
    refused = ClassroomLogEntry.objects.filter(classroom=classroom, action="refused").order_by("id")
    assert [(e.actor, e.detail) for e in refused] == [
        (alice, f"/classrooms/{classroom.slug}/chapters-use/"),
        (other, f"/classrooms/{classroom.slug}/chapters-use/"),
    ]
    assert Client().post(f"/classrooms/{classroom.slug}/chapters-use/", {"use": SHARED}).status_code == 302


def test_the_chapter_page_shows_the_shared_cluster_once_switched_on(
    classroom: Classroom, teacher: User, alice: User
) -> None:
    url = "/learn/control-plane/one-hub/"
    before = _client(alice).get(url).content.decode()
    assert "data-shared-cluster" not in before and 'data-action="jump"' in before
    _switch(_client(teacher), classroom, SHARED)
    page = _client(alice).get(url).content.decode()
    cluster = shared.shared_cluster_name(classroom_id=classroom.pk)
    assert f'data-shared-cluster="{cluster}"' in page and 'data-namespace="student-alice"' in page
    assert "403 Forbidden" in page
    assert 'data-action="jump"' not in page  # "Start here" remakes the cluster: not the shared one
    # A chapter the classroom does not cover, and a student of no such classroom, keep the sandbox.
    assert (
        "data-shared-cluster"
        not in _client(alice).get("/learn/control-plane/core-components/").content.decode()
    )
    bob = User.objects.create_user("bob")
    assert "data-shared-cluster" not in _client(bob).get(url).content.decode()


def test_only_the_instructors_read_the_shared_clusters_store(
    classroom: Classroom, teacher: User, alice: User
) -> None:
    ClassroomCluster.objects.create(classroom=classroom, cluster="room", shared=True)
    # Alice watches the shared cluster's diagram, but its store holds every student's namespace.
    assert user_may_view(alice, "room") and not user_may_read_store(alice, "room")
    assert user_may_read_store(teacher, "room")
    # A classroom's cluster that is not the shared one reads as before.
    ClassroomCluster.objects.create(classroom=classroom, cluster="demo-room", shared=False)
    assert user_may_read_store(alice, "demo-room") == user_may_view(alice, "demo-room")
    refused = _client(alice).get("/lab/room/etcd/")
    assert refused.status_code == 403, refused.content


def test_the_dashboard_shows_the_shared_cluster_as_a_row_a_fault_can_be_for(
    classroom: Classroom, teacher: User, alice: User
) -> None:
    client = _client(teacher)
    assert "data-shared-cluster" not in client.get(f"/classrooms/{classroom.slug}/students/").content.decode()
    _switch(client, classroom, SHARED)
    cluster = shared.shared_cluster_name(classroom_id=classroom.pk)
    table = client.get(f"/classrooms/{classroom.slug}/students/?student=shared").content.decode()
    assert f'data-shared-cluster="{cluster}"' in table and "the chapters use it" in table
    assert 'value="shared" checked' in table  # a refresh keeps the instructor's choice
    assert f'href="/lab/{cluster}/"' in table
    # No lab runs in this test process: the answer names the shared cluster, and the log keeps its
    # name (not the label, which is in the instructor's language).
    asked = client.post(
        f"/classrooms/{classroom.slug}/faults/",
        {"kind": "compact-store", "student": ["shared", alice.pk]},
        HTTP_HX_REQUEST="true",
    ).content.decode()
    assert f"<strong>the shared cluster</strong>: Cluster {cluster} does not run here." in asked
    logged = ClassroomLogEntry.objects.filter(classroom=classroom, action="fault-applied").first()
    assert logged is not None, "applying a fault wrote nothing in the classroom log"
    assert logged.detail.endswith(f"-> {cluster}"), logged.detail
    with translation.override("zh-hans"):
        chinese = _client(teacher, "zh-hans").get(f"/classrooms/{classroom.slug}/").content.decode()
    assert f'data-shared-cluster="{cluster}"' in chinese and "the chapters use it" not in chinese
