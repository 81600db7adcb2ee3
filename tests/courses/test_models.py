"""Classrooms and their clusters: a cluster belongs to one classroom at most, under a valid name."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from courses.models import Classroom, ClassroomCluster

pytestmark = pytest.mark.django_db


def test_a_cluster_belongs_to_one_classroom_at_most() -> None:
    k101 = Classroom.objects.create(name="Kubernetes 101", slug="k8s-101")
    k201 = Classroom.objects.create(name="Kubernetes 201", slug="k8s-201")
    k101.clusters.create(cluster="team-a")
    with pytest.raises(IntegrityError), transaction.atomic():
        k201.clusters.create(cluster="team-a")
    duplicate = ClassroomCluster(classroom=k201, cluster="team-a")
    with pytest.raises(ValidationError, match="already belongs to a classroom"):
        duplicate.full_clean()


@pytest.mark.parametrize("name", ["Team-A", "team_a", "-team", "a" * 64])
def test_a_cluster_name_is_a_dns_label(name: str) -> None:
    classroom = Classroom.objects.create(name="Kubernetes 101", slug="k8s-101")
    with pytest.raises(ValidationError, match="invalid cluster name"):
        ClassroomCluster(classroom=classroom, cluster=name).full_clean()


def test_deleting_a_classroom_frees_its_clusters() -> None:
    classroom = Classroom.objects.create(name="Kubernetes 101", slug="k8s-101")
    classroom.clusters.create(cluster="team-a")
    classroom.delete()
    assert not ClassroomCluster.objects.exists()
    assert str(Classroom(name="Kubernetes 101")) == "Kubernetes 101"
