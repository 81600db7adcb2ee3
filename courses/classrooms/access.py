"""Access: who may see a cluster (its live trace, its topology page, its etcd panel).

The trace shows everything a cluster does: who asked for what, what RBAC decided, which keys were
written; the etcd panel shows what its store holds. So a cluster is shown only to the people it is
for. A cluster is for a classroom (``courses.classrooms.models``: a ``ClassroomCluster`` row, at most
one classroom per cluster), and the rule follows the course's own roles (docs/architecture.md,
"Identities": a student acts in a cluster as ``student:<username>``, instructors are the cluster
admins of their classroom's clusters):

- staff and superusers see every cluster;
- an instructor sees the clusters of the classrooms they teach;
- a student sees the clusters of the classrooms they belong to;
- a student sees their own sandbox (``sb-<their account id>``, ``courses.sandboxes``), and so do the
  instructors of the classrooms the student attends (the dashboard's "their live diagram"), and
  staff; nobody else: a sandbox belongs to no classroom's clusters, whatever a classroom claims;
- every signed-in user sees the demo cluster (``KUBELAB_DEMO_CLUSTER``);
- an anonymous visitor sees the demo cluster only, and only while ``KUBELAB_DEMO_ANONYMOUS`` is on
  (the default, so that a local ``make run`` shows it at once; turn it off on a shared server);
- so a cluster that belongs to no classroom is for staff only (unless it is the demo cluster).

``may_view`` is that rule as a pure function: plain data in (a ``Viewer``, the slug of the classroom
that owns the cluster), yes or no out, tested without a database. ``user_may_view`` is the thin
adapter for a Django user: it reads the one row it needs (one query), and only when the answer
depends on classrooms (``depends_on_classrooms``), never for staff, an anonymous visitor, the demo
cluster or a sandbox (whose owner is in its name). It is synchronous; asynchronous code awaits
``auser_may_view``, which runs it through ``database_sync_to_async`` (the ORM must not run on the
event loop).

Who asks: the topology page and its etcd panel (``courses.lab.views``), the landing page's list of
clusters (``clusters_visible_to``: every listed cluster in one query), and the trace socket. The socket's
consumer (``controlplane.consumers``) lies in a layer below the web app and may not import it, so it
is handed this rule by name: ``settings.KUBELAB_CLUSTER_ACCESS`` is ``"courses.access.user_may_view"``,
which ``courses/access.py`` re-exports from here.
Every one of them asks before it looks the cluster up, so that someone refused cannot tell a cluster
that exists from one that does not.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from channels.db import database_sync_to_async
from django.conf import settings
from django.db.models import Exists, OuterRef

from controlplane.trace import nodes
from controlplane.trace.scope import TraceScope
from courses.classrooms.models import Classroom, ClassroomCluster
from courses.classrooms.shared import NAMESPACE_PREFIX, student_namespace
from courses.sandboxes.identities import STUDENT_PREFIX, sandbox_owner, student_user

if TYPE_CHECKING:
    from django.contrib.auth.base_user import AbstractBaseUser
    from django.contrib.auth.models import AnonymousUser


@dataclass(frozen=True, slots=True)
class Viewer:
    """Someone who wants to see a cluster, as the rule needs to know them."""

    #: False for an anonymous visitor.
    signed_in: bool
    #: Staff or superuser: sees every cluster.
    staff: bool = False
    #: The slugs of the classrooms they teach, and of those they are a student of. ``user_may_view``
    #: fills in only the classroom that owns the cluster asked about, the only one that matters.
    teaches: frozenset[str] = frozenset()
    attends: frozenset[str] = frozenset()
    #: Their account id (None: unknown): the sandbox ``sb-<id>`` is theirs.
    user_id: int | None = None
    #: Account ids of students in classrooms they teach. ``clusters_visible_to`` fills in only the
    #: owners of the sandboxes asked about.
    teaches_students: frozenset[int] = frozenset()


#: A visitor who has not signed in.
ANONYMOUS = Viewer(signed_in=False)


def _is_demo(cluster: str, demo: str) -> bool:
    return bool(demo) and cluster == demo


def may_view(viewer: Viewer, cluster: str, *, owner: str | None, demo: str, demo_anonymous: bool) -> bool:
    """Whether ``viewer`` may see the cluster named ``cluster``.

    ``owner`` is the slug of the classroom the cluster belongs to (None: none), ``demo`` the demo
    cluster's name (empty: there is none), ``demo_anonymous`` whether anonymous visitors may see it.
    """
    if not viewer.signed_in:
        return demo_anonymous and _is_demo(cluster, demo)
    if viewer.staff:
        return True
    student = sandbox_owner(cluster)
    if student is not None:
        return viewer.user_id == student or student in viewer.teaches_students
    if _is_demo(cluster, demo):
        return True
    return owner is not None and (owner in viewer.teaches or owner in viewer.attends)


def depends_on_classrooms(viewer: Viewer, cluster: str, *, demo: str) -> bool:
    """Whether ``may_view``'s answer depends on classrooms (``owner``, ``teaches``, ``attends``,
    ``teaches_students``) at all.

    Not for anonymous visitors, staff, the demo cluster or one's own sandbox: for them nothing needs
    to be read.
    """
    student = sandbox_owner(cluster)
    own_sandbox = student is not None and student == viewer.user_id
    return viewer.signed_in and not viewer.staff and not _is_demo(cluster, demo) and not own_sandbox


def viewer_of(user: AbstractBaseUser | AnonymousUser | None) -> Viewer:
    """A Django user (None: nobody signed in) as a ``Viewer``, without their classrooms."""
    if user is None or not user.is_authenticated:
        return ANONYMOUS
    staff = bool(getattr(user, "is_staff", False) or getattr(user, "is_superuser", False))
    return Viewer(signed_in=True, staff=staff, user_id=None if user.pk is None else int(user.pk))


def classrooms_of(clusters: Iterable[str], *, user_id: int | str) -> dict[str, tuple[str, bool, bool]]:
    """For each of ``clusters`` owned by a classroom: its slug, and whether the user teaches it, attends it.

    One query: the clusters' rows, with two EXISTS subqueries on the classroom's membership tables.
    """
    instructors = Classroom.instructors.through.objects.filter(
        classroom_id=OuterRef("classroom_id"), user_id=user_id
    )
    students = Classroom.students.through.objects.filter(
        classroom_id=OuterRef("classroom_id"), user_id=user_id
    )
    rows = (
        ClassroomCluster.objects.filter(cluster__in=list(clusters))
        .annotate(teaches=Exists(instructors), attends=Exists(students))
        .values_list("cluster", "classroom__slug", "teaches", "attends")
    )
    return {cluster: (slug, teaches, attends) for cluster, slug, teaches, attends in rows}


def classroom_of(cluster: str, *, user_id: int | str) -> tuple[str | None, bool, bool]:
    """The slug of the classroom owning ``cluster`` (None: none); whether the user teaches it, attends it."""
    return classrooms_of([cluster], user_id=user_id).get(cluster, (None, False, False))


def students_taught(owners: Iterable[int], *, user_id: int | str) -> frozenset[int]:
    """Those of ``owners`` (account ids) who attend a classroom the user teaches. One query."""
    taught = Classroom.students.through.objects.filter(
        user_id__in=list(owners), classroom__instructors__id=user_id
    ).values_list("user_id", flat=True)
    return frozenset(int(owner) for owner in taught)


def _member(owner: str, teaches: bool, attends: bool) -> Viewer:
    """A signed-in viewer as the owning classroom sees them."""
    return Viewer(
        signed_in=True,
        teaches=frozenset({owner}) if teaches else frozenset(),
        attends=frozenset({owner}) if attends else frozenset(),
    )


def user_may_view(user: AbstractBaseUser | AnonymousUser | None, cluster: str) -> bool:
    """``may_view`` for a Django user (None: nobody signed in), with the settings in force.

    Synchronous, and it may read the database: from async code, await ``auser_may_view``.
    """
    return bool(clusters_visible_to(user, [cluster]))


def clusters_visible_to(user: AbstractBaseUser | AnonymousUser | None, clusters: Iterable[str]) -> list[str]:
    """Those of ``clusters`` that ``user`` may see, in their order, with at most two queries (one for
    classrooms' clusters, one for other students' sandboxes).

    The landing page lists only these, so that nobody learns from it which other clusters exist.
    """
    names = list(clusters)
    demo: str = settings.KUBELAB_DEMO_CLUSTER
    demo_anonymous = bool(settings.KUBELAB_DEMO_ANONYMOUS)
    viewer = viewer_of(user)
    asked = [name for name in names if depends_on_classrooms(viewer, name, demo=demo)]
    rows: dict[str, tuple[str, bool, bool]] = {}
    owners = {student for name in asked if (student := sandbox_owner(name)) is not None}
    # A user without a primary key (never saved) belongs to no classroom: nothing to read.
    if asked and user is not None and user.pk is not None:
        if len(owners) < len(asked):
            rows = classrooms_of([n for n in asked if sandbox_owner(n) is None], user_id=user.pk)
        if owners:
            viewer = replace(viewer, teaches_students=students_taught(owners, user_id=user.pk))
    visible = []
    for name in names:
        owner, teaches, attends = rows.get(name, (None, False, False))
        seen_as = _member(owner, teaches, attends) if owner is not None else viewer
        if may_view(seen_as, name, owner=owner, demo=demo, demo_anonymous=demo_anonymous):
            visible.append(name)
    return visible


def user_may_break(user: AbstractBaseUser | AnonymousUser | None, cluster: str) -> bool:
    """Whether ``user`` may apply faults to ``cluster`` (the presenter's and the dashboard's controls).

    Stricter than seeing it: staff may break any cluster; an instructor the clusters of the classrooms
    they teach and the sandboxes of those classrooms' students; nobody else any (a student breaks their
    own sandbox only through a chapter's fault buttons, which name the faults the lesson needs).
    """
    if user is None or not user.is_authenticated or user.pk is None:
        return False
    if getattr(user, "is_staff", False) or getattr(user, "is_superuser", False):
        return True
    student = sandbox_owner(cluster)
    if student is not None:
        return student in students_taught([student], user_id=user.pk)
    _, teaches, _ = classroom_of(cluster, user_id=user.pk)
    return teaches


def user_may_read_store(user: AbstractBaseUser | AnonymousUser | None, cluster: str) -> bool:
    """Whether ``user`` may read ``cluster``'s store in the etcd panel, values and all.

    The store holds every namespace. In a classroom's shared cluster each student may read only their
    own namespace through the API (RBAC ``edit`` there), so only those who may break it (its
    instructors, staff) read its store; in any other cluster, whoever may view it.
    """
    return user_may_view(user, cluster) and _sees_every_namespace(user, cluster)


def _sees_every_namespace(user: AbstractBaseUser | AnonymousUser | None, cluster: str) -> bool:
    """For a user who may view ``cluster``: whether every namespace of it is theirs to see (no
    classroom's shared cluster confines them to their own)."""
    viewer = viewer_of(user)
    # Staff, the demo cluster and sandboxes are never a classroom's shared cluster: nothing to read.
    if viewer.staff or sandbox_owner(cluster) is not None:
        return True
    if not depends_on_classrooms(viewer, cluster, demo=settings.KUBELAB_DEMO_CLUSTER):
        return True
    if not ClassroomCluster.objects.filter(cluster=cluster, shared=True).exists():
        return True
    return user_may_break(user, cluster)


def user_trace_scope(user: AbstractBaseUser | AnonymousUser | None, cluster: str) -> TraceScope | None:
    """The part of ``cluster``'s trace ``user`` watches: None for all of it (ask ``user_may_view``
    first); in a classroom's shared cluster, for anyone who may not read its store (its students),
    their own namespace and the cluster around it, without their classmates' namespaces and requests
    (``controlplane/trace/scope.py``). The trace then shows what the API lets them read. (Whoever
    calls it has asked ``user_may_view`` already, so that is not read again.)"""
    if user is None or not user.is_authenticated or user.pk is None or _sees_every_namespace(user, cluster):
        return None
    username = user.get_username()
    return TraceScope(
        namespace_prefix=NAMESPACE_PREFIX,
        own_namespace=student_namespace(username=username, user_id=int(user.pk)),
        user_prefix=nodes.user(STUDENT_PREFIX),
        own_user=nodes.user(student_user(username=username)),
    )


async def auser_may_read_store(user: AbstractBaseUser | AnonymousUser | None, cluster: str) -> bool:
    """``user_may_read_store`` for async code: the database is read in a worker thread."""
    allowed: bool = await database_sync_to_async(user_may_read_store)(user, cluster)
    return allowed


async def auser_may_break(user: AbstractBaseUser | AnonymousUser | None, cluster: str) -> bool:
    """``user_may_break`` for async code: the database is read in a worker thread."""
    allowed: bool = await database_sync_to_async(user_may_break)(user, cluster)
    return allowed


async def auser_may_view(user: AbstractBaseUser | AnonymousUser | None, cluster: str) -> bool:
    """``user_may_view`` for async code: the database is read in a worker thread."""
    allowed: bool = await database_sync_to_async(user_may_view)(user, cluster)
    return allowed


__all__ = [
    "ANONYMOUS",
    "Viewer",
    "auser_may_break",
    "auser_may_read_store",
    "auser_may_view",
    "classroom_of",
    "classrooms_of",
    "clusters_visible_to",
    "depends_on_classrooms",
    "may_view",
    "students_taught",
    "user_may_break",
    "user_may_read_store",
    "user_may_view",
    "user_trace_scope",
    "viewer_of",
]
