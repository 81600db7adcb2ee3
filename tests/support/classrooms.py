"""Two classrooms with their people and clusters, the world the access tests share.

``make_classrooms`` saves it: Kubernetes 101 (``k8s-101``) owns cluster ``team-a``, bob teaches it and
alice attends it; Kubernetes 201 (``k8s-201``) owns ``team-b``, carol teaches it and dave attends it;
erin is in no classroom. ``committed_classrooms`` saves the same for async code that reads it in
``database_sync_to_async``'s worker thread (the consumer, the async views): use it in a fixture with
``transactional_db``.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from asgiref.sync import sync_to_async
from django.contrib.auth.models import User

from courses.models import Classroom
from tests.support.database import forget_worker_connections

PEOPLE = ("alice", "bob", "carol", "dave", "erin")


def make_classrooms() -> dict[str, User]:
    """The users of ``PEOPLE``, by name, in their classrooms (see the module's docstring)."""
    users = {name: User.objects.create_user(name) for name in PEOPLE}
    for (name, slug, cluster), (instructor, student) in {
        ("Kubernetes 101", "k8s-101", "team-a"): ("bob", "alice"),
        ("Kubernetes 201", "k8s-201", "team-b"): ("carol", "dave"),
    }.items():
        classroom = Classroom.objects.create(name=name, slug=slug)
        classroom.instructors.add(users[instructor])
        classroom.students.add(users[student])
        classroom.clusters.create(cluster=cluster)
    return users


@contextlib.asynccontextmanager
async def committed_classrooms() -> AsyncIterator[dict[str, User]]:
    """``make_classrooms`` from async code, and the worker thread's connection dropped afterwards."""
    try:
        yield await sync_to_async(make_classrooms)()
    finally:
        await forget_worker_connections()
