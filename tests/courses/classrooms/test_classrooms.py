"""Classrooms from both sides: an instructor creates one and shares its code, students join, the
dashboard shows their progress, and nobody else gets in (each refusal written to the classroom's log).

Through Django's test client, against the views (courses/classrooms/views.py): the pages as a browser
gets them, in both languages where words matter.
"""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.utils import timezone

from courses.classrooms import services
from courses.classrooms.models import JOIN_ALPHABET, JOIN_LENGTH, normalise_join_code, show_join_code
from courses.models import Classroom, ClassroomLogEntry, Sandbox, StepProgress

pytestmark = pytest.mark.django_db


def _client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def teacher() -> User:
    user = User.objects.create_user("teacher", password="pw-teacher-12345")
    user.user_permissions.add(Permission.objects.get(codename="teach_classroom"))
    return User.objects.get(pk=user.pk)  # permissions are cached per instance


@pytest.fixture
def classroom(teacher: User) -> Classroom:
    return services.create_classroom(
        user=teacher, name="Kubernetes 101", course="control-plane", chapters=["one-hub", "core-components"]
    )


def test_join_codes_are_unambiguous_and_forgiving_to_type() -> None:
    assert not set("0O1IL") & set(JOIN_ALPHABET)
    assert show_join_code("ABCDEFGH") == "ABCD-EFGH"
    assert normalise_join_code(" abcd-efgh ") == "ABCDEFGH"


def test_only_instructors_create_classrooms(client: Client) -> None:
    student = User.objects.create_user("sam")
    page = _client(student).get("/classrooms/")
    assert page.status_code == 200 and 'name="name"' not in page.content.decode()
    refused = _client(student).post("/classrooms/", {"name": "Mine"})
    assert refused.status_code == 403
    assert not Classroom.objects.exists()
    with pytest.raises(services.NotAnInstructor):
        services.create_classroom(user=student, name="Mine", course="control-plane", chapters=[])


def test_an_instructor_creates_a_classroom_with_a_join_code(teacher: User) -> None:
    client = _client(teacher)
    answer = client.post(
        "/classrooms/", {"name": "Kubernetes 101", "chapter": ["core-components", "one-hub"]}
    )
    classroom = Classroom.objects.get()
    assert answer.status_code == 302 and answer["Location"] == f"/classrooms/{classroom.slug}/"
    assert classroom.slug == "kubernetes-101" and classroom.chapters == ["one-hub", "core-components"]
    assert classroom.join_code is not None and len(classroom.join_code) == JOIN_LENGTH
    assert list(classroom.instructors.all()) == [teacher]
    page = client.get(answer["Location"]).content.decode()
    assert classroom.shown_join_code in page
    assert f"/classrooms/join/{classroom.join_code}/" in page  # the link to share
    assert ClassroomLogEntry.objects.filter(classroom=classroom, action="created").count() == 1


def test_a_classroom_form_with_a_problem_says_so_in_place(teacher: User) -> None:
    client = _client(teacher)
    empty = client.post("/classrooms/", {"name": "  "})
    assert empty.status_code == 400 and "A classroom needs a name." in empty.content.decode()
    unknown = client.post("/classrooms/", {"name": "X", "chapter": ["no-such-chapter"]})
    assert unknown.status_code == 400 and "no-such-chapter" in unknown.content.decode()
    client.cookies["django_language"] = "zh-hans"
    chinese = client.post("/classrooms/", {"name": ""}, HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert "班级需要一个名称" in chinese.content.decode()
    assert not Classroom.objects.exists()


def test_two_classrooms_of_the_same_name_get_their_own_slugs(teacher: User) -> None:
    first = services.create_classroom(user=teacher, name="Lab", course="control-plane", chapters=[])
    second = services.create_classroom(user=teacher, name="Lab", course="control-plane", chapters=[])
    join = services.create_classroom(user=teacher, name="Join", course="control-plane", chapters=[])
    assert (first.slug, second.slug) == ("lab", "lab-2")
    assert join.slug != "join"  # /classrooms/join/ is the join form
    assert first.join_code != second.join_code


def test_a_student_joins_with_the_code_as_typed_or_the_link(classroom: Classroom) -> None:
    sam = User.objects.create_user("sam")
    client = _client(sam)
    assert classroom.join_code is not None
    link = client.get(f"/classrooms/join/{classroom.join_code}/")
    assert link.status_code == 200 and f'value="{classroom.join_code}"' in link.content.decode()
    assert not classroom.students.exists()  # a visit joins nobody: joining is a POST
    typed = show_join_code(classroom.join_code).lower()
    joined = client.post("/classrooms/join/", {"code": f" {typed} "})
    assert joined.status_code == 302 and list(classroom.students.all()) == [sam]
    again = client.post("/classrooms/join/", {"code": classroom.join_code})
    assert again.status_code == 302 and classroom.students.count() == 1
    assert ClassroomLogEntry.objects.filter(classroom=classroom, action="joined").count() == 1
    listed = client.get(joined["Location"]).content.decode()
    assert "Kubernetes 101" in listed and 'data-classrooms="joined"' in listed


def test_a_wrong_code_is_refused_in_place(classroom: Classroom) -> None:
    client = _client(User.objects.create_user("sam"))
    wrong = client.post("/classrooms/join/", {"code": "ZZZZ-ZZZZ"})
    assert wrong.status_code == 400 and "No classroom has this join code" in wrong.content.decode()
    short = client.post("/classrooms/join/", {"code": "ABC"})
    assert short.status_code == 400 and f"{JOIN_LENGTH} letters" in short.content.decode()
    assert not classroom.students.exists()


def test_a_closed_or_renewed_code_no_longer_works(classroom: Classroom, teacher: User) -> None:
    old = classroom.join_code
    teacher_client = _client(teacher)
    assert teacher_client.post(f"/classrooms/{classroom.slug}/code/", {"action": "renew"}).status_code == 302
    classroom.refresh_from_db()
    assert classroom.join_code not in (None, old)
    student = _client(User.objects.create_user("sam"))
    assert student.post("/classrooms/join/", {"code": old}).status_code == 400
    teacher_client.post(f"/classrooms/{classroom.slug}/code/", {"action": "close"})
    classroom.refresh_from_db()
    assert classroom.join_code is None
    actions = set(ClassroomLogEntry.objects.filter(classroom=classroom).values_list("action", flat=True))
    assert {"join-code-renewed", "joining-closed"} <= actions


def test_the_dashboard_shows_each_students_progress_and_cluster(classroom: Classroom, teacher: User) -> None:
    ada, ben = User.objects.create_user("ada"), User.objects.create_user("ben")
    classroom.students.add(ada, ben)
    now = timezone.now()
    for step in ("find-the-hub", "configmap-to-etcd"):
        StepProgress.objects.create(
            user=ada, course="control-plane", chapter="one-hub", step=step, passed=now
        )
    StepProgress.objects.create(
        user=ada, course="control-plane", chapter="one-hub", step="watch-a-change", hints=2, solution=True
    )
    Sandbox.objects.create(user=ada, cluster=f"sb-{ada.pk}")
    page = _client(teacher).get(f"/classrooms/{classroom.slug}/")
    assert page.status_code == 200
    html = page.content.decode()
    row = re.search(r'<tr data-student="ada">(.*?)</tr>', html, re.S)
    assert row is not None, html
    assert 'data-progress="2/3"' in row.group(1)  # one-hub: two of three steps passed
    assert 'data-progress="0/3"' in row.group(1)  # core-components: not begun
    assert "2 hints, 1 solution" in row.group(1)
    assert f"/lab/sb-{ada.pk}/" in row.group(1)  # their live diagram, one click away
    ben_row = re.search(r'<tr data-student="ben">(.*?)</tr>', html, re.S)
    assert ben_row is not None and "no cluster yet" in ben_row.group(1)
    fragment = _client(teacher).get(f"/classrooms/{classroom.slug}/students/")
    assert fragment.status_code == 200 and 'data-student="ada"' in fragment.content.decode()
    assert "<html" not in fragment.content.decode()


def test_only_the_classrooms_instructors_open_it_and_refusals_are_logged(classroom: Classroom) -> None:
    sam = User.objects.create_user("sam")
    classroom.students.add(sam)
    other = User.objects.create_user("other-teacher")
    other.user_permissions.add(Permission.objects.get(codename="teach_classroom"))
    for user in (sam, User.objects.get(pk=other.pk)):
        client = _client(user)
        for path in ("", "students/"):
            assert client.get(f"/classrooms/{classroom.slug}/{path}").status_code == 403
        assert (
            client.post(f"/classrooms/{classroom.slug}/faults/", {"kind": "compact-store"}).status_code == 403
        )
        assert client.post(f"/classrooms/{classroom.slug}/code/", {"action": "close"}).status_code == 403
    classroom.refresh_from_db()
    assert classroom.join_code is not None
    refused = ClassroomLogEntry.objects.filter(classroom=classroom, action="refused")
    assert refused.count() == 8 and {e.actor for e in refused} == {sam, other}
    assert Client().get(f"/classrooms/{classroom.slug}/").status_code == 302  # to sign in


def test_a_fault_without_a_chosen_student_or_a_lab_says_what_happened(
    classroom: Classroom, teacher: User
) -> None:
    ada = User.objects.create_user("ada")
    classroom.students.add(ada)
    Sandbox.objects.create(user=ada, cluster=f"sb-{ada.pk}")
    client = _client(teacher)
    none = client.post(
        f"/classrooms/{classroom.slug}/faults/", {"kind": "compact-store"}, HTTP_HX_REQUEST="true"
    )
    assert "Choose at least one student" in none.content.decode()
    bad = client.post(
        f"/classrooms/{classroom.slug}/faults/",
        {"kind": "stop-kubelet", "node": "node-9", "student": ada.pk},
        HTTP_HX_REQUEST="true",
    )
    assert bad.status_code == 200 and "node-9" in bad.content.decode()
    # No lab runs in this test process: the dashboard says so per student, and logs what was asked.
    asked = client.post(
        f"/classrooms/{classroom.slug}/faults/",
        {"kind": "compact-store", "student": ada.pk},
        HTTP_HX_REQUEST="true",
    )
    assert f"<strong>ada</strong>: Cluster sb-{ada.pk} does not run here." in asked.content.decode()
    crash = client.post(
        f"/classrooms/{classroom.slug}/faults/",
        {"kind": "crash-loop", "component": "scheduler", "node": "node-1", "student": ada.pk},
        HTTP_HX_REQUEST="true",
    )  # a kind with a component: the form's node is ignored, the component is checked and used
    assert f"<strong>ada</strong>: Cluster sb-{ada.pk} does not run here." in crash.content.decode()
    logged = ClassroomLogEntry.objects.filter(classroom=classroom, action="fault-applied").first()
    assert logged is not None and "component=scheduler" in logged.detail
    late = client.post(
        f"/classrooms/{classroom.slug}/faults/",
        {"kind": "compact-store", "after": "30", "student": ada.pk},
        HTTP_HX_REQUEST="true",
    )
    assert "does not run here" in late.content.decode()
    newest = ClassroomLogEntry.objects.filter(classroom=classroom, action="fault-applied").first()
    assert newest is not None and "after=30s" in newest.detail
    never = client.post(
        f"/classrooms/{classroom.slug}/faults/",
        {"kind": "compact-store", "after": "soon", "student": ada.pk},
        HTTP_HX_REQUEST="true",
    )
    assert "Start it after 0 to 1800 seconds." in never.content.decode()
    logged = ClassroomLogEntry.objects.filter(classroom=classroom, action="fault-applied").last()
    assert logged is not None
    assert logged.actor == teacher and "fault=compact-store" in logged.detail and "ada" in logged.detail
