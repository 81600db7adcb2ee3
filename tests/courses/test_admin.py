"""Django's admin is where staff set classrooms up: their people and the clusters they own."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from courses.models import Classroom

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff_client(client: Client) -> Client:
    client.force_login(User.objects.create_superuser("root", password="not-used"))
    return client


def test_the_classroom_list_shows_clusters_and_head_counts(staff_client: Client) -> None:
    classroom = Classroom.objects.create(name="Kubernetes 101", slug="k8s-101")
    classroom.instructors.add(User.objects.create_user("bob"))
    classroom.students.add(*(User.objects.create_user(n) for n in ("alice", "dave", "erin")))
    classroom.clusters.create(cluster="team-b")
    classroom.clusters.create(cluster="team-a")
    response = staff_client.get("/admin/courses/classroom/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "Kubernetes 101" in page
    assert '<td class="field-cluster_names">team-a, team-b</td>' in page
    assert '<td class="field-instructor_count">1</td>' in page
    assert '<td class="field-student_count">3</td>' in page


def test_a_classroom_is_set_up_on_one_page(staff_client: Client) -> None:
    bob = User.objects.create_user("bob")
    alice = User.objects.create_user("alice")
    response = staff_client.post(
        "/admin/courses/classroom/add/",
        {
            "name": "Kubernetes 101",
            "slug": "k8s-101",
            "course": "control-plane",
            "chapters": "[]",
            "chapters_use": "sandbox",
            "instructors": [bob.pk],
            "students": [alice.pk],
            "clusters-TOTAL_FORMS": "1",
            "clusters-INITIAL_FORMS": "0",
            "clusters-0-cluster": "team-a",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    classroom = Classroom.objects.get(slug="k8s-101")
    assert list(classroom.instructors.all()) == [bob]
    assert list(classroom.students.all()) == [alice]
    assert [c.cluster for c in classroom.clusters.all()] == ["team-a"]


def test_the_cluster_list_names_each_cluster_s_classroom(staff_client: Client) -> None:
    Classroom.objects.create(name="Kubernetes 101", slug="k8s-101").clusters.create(cluster="team-a")
    page = staff_client.get("/admin/courses/classroomcluster/").content.decode()
    assert '/change/">team-a</a></th><td class="field-classroom nowrap">Kubernetes 101</td>' in page
