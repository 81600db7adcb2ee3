"""Classrooms: who teaches whom, and which clusters are theirs.

A classroom is a group of people around a few clusters: its **instructors** (the cluster admins of
its clusters, docs/architecture.md, "Identities") and its **students** (each of whom acts in a
cluster as the user ``student:<username>``). The clusters themselves live in the lab
(``controlplane.runtime``), not in this database; a ``ClassroomCluster`` row says that the cluster
of that name belongs to a classroom.
A cluster belongs to at most one classroom, so "whose cluster is this?" has one answer, which is what
``courses.classrooms.access`` (who may see a cluster) asks.

An instructor (a user with the ``courses.teach_classroom`` permission, granted in Django's admin, or
staff) creates a classroom from ``/classrooms/`` with a course and the chapters it covers; students
join it with its **join code** (``JoinCode``: eight letters and digits without look-alikes, shown as
``ABCD-EFGH``), typed in or followed as a link. Every instructor action on a classroom is written to
its ``ClassroomLogEntry`` rows, which its instructors read on the dashboard. Staff can still set
everything up in Django's admin (``/admin/``, ``courses/classrooms/admin.py``).

The models belong to the ``courses`` app (app label ``courses``, tables ``courses_classroom`` ...,
migrations in ``courses/migrations``): Django finds them through ``courses/models.py``, which imports
them from here. ``courses.models.validate_cluster_name`` is the name migration 0001 refers to.
"""

from __future__ import annotations

import secrets

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


#: A join code's letters: no 0/O, 1/I/L, so that a code read aloud or from a projector is typed right.
JOIN_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
JOIN_LENGTH = 8


def new_join_code() -> str:
    """A random join code (31^8, about 8.5e11: not guessable at the sign-in rate limit)."""
    return "".join(secrets.choice(JOIN_ALPHABET) for _ in range(JOIN_LENGTH))


def normalise_join_code(text: str) -> str:
    """What a student typed, as stored: upper case, without spaces or dashes."""
    return "".join(ch for ch in text.upper() if ch not in " -\t")


def show_join_code(code: str) -> str:
    """``ABCDEFGH`` as ``ABCD-EFGH``: two halves are easier to read out and to copy."""
    half = len(code) // 2
    return f"{code[:half]}-{code[half:]}"


#: ``Classroom.chapters_use``: each student's own sandbox, or the classroom's shared cluster.
SANDBOX = "sandbox"
SHARED = "shared"


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
    course = models.SlugField(max_length=100, default="control-plane", help_text="The course it follows.")
    chapters = models.JSONField(
        default=list, blank=True, help_text="Slugs of the chapters it covers, in order; empty: all of them."
    )
    join_code = models.CharField(
        max_length=JOIN_LENGTH,
        unique=True,
        null=True,
        blank=True,
        help_text="Students join with it; empty: joining is closed.",
    )
    created = models.DateTimeField(auto_now_add=True, null=True)
    #: Which cluster the chapter pages of its students act in: each student's own sandbox, or the
    #: classroom's shared cluster (each student in a namespace of their own there,
    #: ``courses.classrooms.shared``). The instructor switches it on the dashboard, lesson by lesson.
    chapters_use = models.CharField(
        max_length=10,
        choices=[(SANDBOX, "each student's sandbox"), (SHARED, "the shared cluster")],
        default=SANDBOX,
        help_text="Where its students' chapter pages act: their sandboxes or the shared cluster.",
    )

    class Meta:
        ordering = ["name"]
        permissions = [("teach_classroom", "Can create classrooms and teach them")]

    def __str__(self) -> str:
        return self.name

    @property
    def shown_join_code(self) -> str:
        return show_join_code(self.join_code) if self.join_code else ""


class ClassroomLogEntry(models.Model):
    """One thing an instructor did to a classroom or its clusters (a fault applied, a code renewed)."""

    classroom = models.ForeignKey(Classroom, on_delete=models.CASCADE, related_name="log")
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    at = models.DateTimeField(auto_now_add=True)
    action = models.CharField(max_length=50)
    detail = models.TextField(blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        verbose_name = "classroom log entry"
        verbose_name_plural = "classroom log"

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.action} {self.detail}"


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
    #: The classroom's shared cluster (at most one per classroom): its students each get a namespace
    #: there, with the ClusterRole ``edit`` in it and nothing else; its instructors are its admins.
    shared = models.BooleanField(
        default=False, help_text="The classroom's shared cluster: a namespace in it for each student."
    )

    class Meta:
        ordering = ["cluster"]
        verbose_name = "classroom cluster"
        constraints = [
            models.UniqueConstraint(
                fields=["classroom"], condition=models.Q(shared=True), name="one_shared_cluster_per_classroom"
            )
        ]

    def __str__(self) -> str:
        return f"{self.cluster} ({self.classroom})"
