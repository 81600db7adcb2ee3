"""Classrooms: who teaches whom, and which clusters are theirs.

A classroom is a group of people around a few clusters: its **instructors** (the cluster admins of
its clusters, docs/architecture.md, "Identities") and its **students** (each of whom acts in a
cluster as the user ``student:<username>``). The clusters themselves live in the lab
(``controlplane.runtime``), not in this database; a ``ClassroomCluster`` row says that the cluster
of that name belongs to a classroom.
A cluster belongs to at most one classroom, so "whose cluster is this?" has one answer, which is what
``courses.classrooms.access`` (who may see a cluster) asks.

This is the foundation the course issues build on (progress, checks, the instructor console); for now
staff set classrooms up in Django's admin (``/admin/``, ``courses/classrooms/admin.py``).

The models belong to the ``courses`` app (app label ``courses``, tables ``courses_classroom`` ...,
migrations in ``courses/migrations``): Django finds them through ``courses/models.py``, which imports
them from here. ``courses.models.validate_cluster_name`` is the name migration 0001 refers to.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models

from courses import gateway


def validate_cluster_name(name: str) -> None:
    """A cluster's name is a DNS label, as the lab requires (``courses.gateway.check_cluster_name``)."""
    try:
        gateway.check_cluster_name(name=name)
    except gateway.InvalidClusterName as error:
        raise ValidationError(str(error), code="invalid") from None
    if name.startswith(gateway.SANDBOX_PREFIX):
        # The lab takes every sb-* cluster for a student's sandbox (its guardrails, its hibernation).
        raise ValidationError(
            f"{name!r}: names starting with {gateway.SANDBOX_PREFIX!r} are the students' sandboxes",
            code="reserved",
        )


class Classroom(models.Model):
    """A class of students with their instructors, and (through ``clusters``) the clusters they work on."""

    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=63, unique=True, help_text="Short name used in URLs, e.g. k8s-101.")
    instructors = models.ManyToManyField(
        settings.AUTH_USER_MODEL,
        related_name="classrooms_taught",
        blank=True,
        help_text="They see every cluster of this classroom, as its cluster admins.",
    )
    students = models.ManyToManyField(
        settings.AUTH_USER_MODEL,
        related_name="classrooms_attended",
        blank=True,
        help_text="They see every cluster of this classroom.",
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class ClassroomCluster(models.Model):
    """The cluster named ``cluster`` belongs to ``classroom`` (and to no other: the name is unique)."""

    classroom = models.ForeignKey(Classroom, on_delete=models.CASCADE, related_name="clusters")
    cluster = models.CharField(
        "cluster name",
        max_length=63,
        unique=True,
        validators=[validate_cluster_name],
        error_messages={"unique": "This cluster already belongs to a classroom."},
        help_text="The name of a cluster of the lab, as in /lab/<name>/.",
    )

    class Meta:
        ordering = ["cluster"]
        verbose_name = "classroom cluster"

    def __str__(self) -> str:
        return f"{self.cluster} ({self.classroom})"
