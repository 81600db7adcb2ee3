"""The shared cluster: one cluster for a whole classroom, beside each student's own sandbox.

A sandbox gives a student a cluster of their own, where they are ``cluster-admin``. A real team gets
something else: one cluster, and a **namespace** in it, where they may do their work and nothing more.
The classroom's shared cluster is that. Each student gets:

- a Namespace of their own, ``student-<username>`` (``student_namespace``: a DNS-1123 label, unique
  per account whatever the username is);
- a RoleBinding in it of the ClusterRole ``edit`` to their cluster user ``student:<username>``: the
  user-facing role upstream ships for "read and write most objects in a namespace", without RBAC or
  the namespace itself (``plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go``, "edit");
- nothing else. So RBAC answers 403 to a student who lists another student's pods, or nodes, or
  creates a ClusterRole, and the answer names no binding (``kubectl auth can-i`` says no).

Its instructors are its admins: a ClusterRoleBinding of ``cluster-admin`` to ``instructor:<username>``
for each of them. The checker (``kubelab:checker``) reads there as in a sandbox.

Every object is applied through the cluster's API server by the lab's own identity
(``gateway.apply_as_lab``, server-side apply: idempotent), so each shows on the trace and in
``kubectl get rolebindings``. This happens when a student joins, when the shared cluster is created
(for every member so far), and, should either have missed (the lab was elsewhere, the cluster was
made anew), the first time a student's page uses the cluster.

The instructor chooses, on the dashboard, which cluster the chapters use
(``Classroom.chapters_use``). When it is the shared cluster, ``cluster_service`` hands the chapter's
socket, console, form and topology a ``SharedCluster`` instead of ``courses.sandboxes.services``: the
same calls (``ensure_sandbox``, ``kubeconfig_for`` ...), answered with the shared cluster, the
student's token there, and their namespace as the default one (``SandboxAccess.namespace``, the
kubeconfig context's namespace).

Pure parts first (names, objects), then the adapters that read the database or the lab.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async
from django.db import IntegrityError, transaction
from django.utils.translation import gettext

from courses import gateway
from courses.classrooms import services
from courses.classrooms.models import SHARED, Classroom, ClassroomCluster
from courses.sandboxes import services as sandboxes
from courses.sandboxes.identities import student_user

if TYPE_CHECKING:
    from django.contrib.auth.base_user import AbstractBaseUser

logger = logging.getLogger(__name__)

RBAC = "rbac.authorization.k8s.io/v1"
#: A shared cluster's name: ``classroom-<id>`` (never ``sb-``: that is a sandbox's).
CLUSTER_PREFIX = "classroom-"
#: A student's namespace starts so; their RoleBinding there, and the instructors' ClusterRoleBinding.
NAMESPACE_PREFIX = "student-"
STUDENT_BINDING = "kubelab:student"
INSTRUCTORS_BINDING = "kubelab:classroom-instructors"
#: The ClusterRoles they are bound to (upstream's user-facing roles).
STUDENT_ROLE = "edit"
INSTRUCTOR_ROLE = "cluster-admin"
INSTRUCTOR_PREFIX = "instructor:"
#: Who a namespace is for, as an annotation on it (a label's value could not hold every username).
STUDENT_ANNOTATION = "kubelab.io/student"
#: A DNS-1123 label (``k8s.io/apimachinery/pkg/util/validation``: IsDNS1123Label), at most 63 long.
_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_SUFFIX = re.compile(r"-u[0-9]+$")
MAX_LABEL = 63


# -- names and objects (pure) ---------------------------------------------------------------------


def shared_cluster_name(*, classroom_id: int) -> str:
    """The shared cluster of classroom ``classroom_id``: ``classroom-<id>``."""
    return f"{CLUSTER_PREFIX}{int(classroom_id)}"


def student_namespace(*, username: str, user_id: int) -> str:
    """The namespace of the student ``username`` (account ``user_id``) in a shared cluster.

    ``student-<username>`` when the username is already a DNS-1123 label that fits; otherwise the
    username made one (lower case, other characters as ``-``, cut to fit) and ``-u<account id>``
    added. Unique: names without the suffix are the usernames themselves, and a username that ends
    like a suffix (``bob-u7``) gets one too, so no two accounts share a namespace.
    """
    room = MAX_LABEL - len(NAMESPACE_PREFIX)
    if _LABEL.fullmatch(username) and len(username) <= room and not _SUFFIX.search(username):
        return f"{NAMESPACE_PREFIX}{username}"
    suffix = f"-u{int(user_id)}"
    body = re.sub(r"[^a-z0-9]+", "-", username.lower()).strip("-")
    body = body[: room - len(suffix)].strip("-") or "x"
    return f"{NAMESPACE_PREFIX}{body}{suffix}"


def instructor_user(*, username: str) -> str:
    """An instructor's cluster user in their classroom's shared cluster: ``instructor:<username>``."""
    return f"{INSTRUCTOR_PREFIX}{username}"


def _user(name: str) -> dict[str, str]:
    return {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": name}


def student_objects(*, namespace: str, student: str) -> list[dict[str, Any]]:
    """The student's Namespace and their RoleBinding of ``edit`` in it, in the order applied."""
    space = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": namespace, "annotations": {STUDENT_ANNOTATION: student}},
    }
    binding = {
        "apiVersion": RBAC,
        "kind": "RoleBinding",
        "metadata": {"name": STUDENT_BINDING, "namespace": namespace},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": STUDENT_ROLE},
        "subjects": [_user(student)],
    }
    return [space, binding]


def instructor_objects(*, instructors: list[str]) -> list[dict[str, Any]]:
    """The instructors' ClusterRoleBinding of ``cluster-admin`` (``instructors``: their usernames)."""
    binding = {
        "apiVersion": RBAC,
        "kind": "ClusterRoleBinding",
        "metadata": {"name": INSTRUCTORS_BINDING},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": INSTRUCTOR_ROLE},
        "subjects": [_user(instructor_user(username=name)) for name in sorted(instructors)],
    }
    return [binding]


def in_namespace(path: str, namespace: str) -> str:
    """A chapter's request path for the ``default`` namespace, sent to ``namespace`` instead."""
    return path.replace("/namespaces/default/", f"/namespaces/{namespace}/")


# -- the database (synchronous: the ORM) -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Members:
    """Who a shared cluster is for: (account id, username) of each student, the instructors' usernames."""

    students: tuple[tuple[int, str], ...]
    instructors: tuple[str, ...]


def members_of(classroom: Classroom) -> Members:
    students = classroom.students.order_by("username").values_list("pk", "username")
    instructors = classroom.instructors.order_by("username").values_list("username", flat=True)
    return Members(tuple((int(pk), name) for pk, name in students), tuple(instructors))


def shared_cluster_of(classroom: Classroom) -> str | None:
    """The classroom's shared cluster's name, or None if it has none yet."""
    row = ClassroomCluster.objects.filter(classroom=classroom, shared=True).first()
    return row.cluster if row is not None else None


def claim_shared_cluster(classroom: Classroom) -> tuple[str, bool]:
    """The classroom's shared cluster's row, made if missing: its name, and whether it was made now."""
    name = shared_cluster_of(classroom)
    if name is not None:
        return name, False
    name = shared_cluster_name(classroom_id=classroom.pk)
    try:
        with transaction.atomic():
            ClassroomCluster.objects.create(classroom=classroom, cluster=name, shared=True)
    except IntegrityError:  # made at the same moment by another request
        return shared_cluster_of(classroom) or name, False
    return name, True


def shared_cluster_for(*, user_id: int, course: str | None = None, chapter: str | None = None) -> str | None:
    """The shared cluster a student's pages use: that of the first classroom (by name) they attend
    whose chapters use its shared cluster, following ``course`` and covering ``chapter`` (None: any).
    None: their sandbox."""
    rooms = Classroom.objects.filter(students__id=user_id, chapters_use=SHARED, clusters__shared=True)
    if course is not None:
        rooms = rooms.filter(course=course)
    found = rooms.order_by("name").values_list("chapters", "clusters__cluster")
    for chapters, cluster in found:
        if chapter is None or not chapters or chapter in chapters:
            return str(cluster)
    return None


# -- the lab (asynchronous) ------------------------------------------------------------------------

#: Students set up in which cluster made (``ClusterFacts.incarnation``), so that a page's first use
#: applies their objects once and later uses do not.
_set_up: set[tuple[int, str]] = set()


async def set_up_student(*, cluster: str, username: str, user_id: int) -> str:
    """Apply the student's Namespace and RoleBinding to the running ``cluster``; their namespace.
    Idempotent. Raises ``gateway.ApplyFailed``, ``NotServedHere`` or ``NotRunning``."""
    namespace = student_namespace(username=username, user_id=user_id)
    student = student_user(username=username)
    await gateway.apply_as_lab(cluster=cluster, objects=student_objects(namespace=namespace, student=student))
    return namespace


async def set_up_cluster(*, cluster: str, members: Members) -> int:
    """Start ``cluster`` (made if missing, woken if it hibernates), make its instructors its admins and
    give every student their namespace. Idempotent; how many students were set up."""
    facts = await gateway.ensure_cluster(cluster=cluster)
    if members.instructors:
        await gateway.apply_as_lab(
            cluster=cluster, objects=instructor_objects(instructors=list(members.instructors))
        )
    for user_id, username in members.students:
        namespace = await set_up_student(cluster=cluster, username=username, user_id=user_id)
        _set_up.add((facts.incarnation, namespace))
    return len(members.students)


async def create_shared_cluster(*, classroom: Classroom, user: Any = None) -> tuple[str, int]:
    """The classroom's shared cluster, made if missing (its row, logged as ``user``'s doing, and the
    cluster), with every member set up: its name and how many students have a namespace there.
    Raises ``SandboxUnavailable`` (its message for the instructor) if the lab cannot set it up."""
    name, made = await sync_to_async(claim_shared_cluster)(classroom)
    if made:
        await sync_to_async(services.log)(
            classroom=classroom, actor=user, action="shared-cluster-created", detail=name
        )
    members = await sync_to_async(members_of)(classroom)
    try:
        return name, await set_up_cluster(cluster=name, members=members)
    except (gateway.NotServedHere, gateway.NotRunning, gateway.ApplyFailed) as error:
        raise _unavailable(error) from error


async def joined(*, classroom: Classroom, user: AbstractBaseUser) -> str | None:
    """Set a student who joined ``classroom`` up in its shared cluster, if it has one and it runs in
    this process; their namespace (None: nothing done here, or it failed: logged, and done when
    their page first uses the cluster)."""
    cluster = await sync_to_async(shared_cluster_of)(classroom)
    if cluster is None or user.pk is None:
        return None
    try:
        gateway.cluster_facts(cluster=cluster)
    except gateway.NotServedHere:
        return None  # set up when their page first uses it, or when the instructor creates it here
    members = await sync_to_async(members_of)(classroom)
    newcomer = Members(((int(user.pk), user.get_username()),), members.instructors)
    try:
        await set_up_cluster(cluster=cluster, members=newcomer)
    except (gateway.NotServedHere, gateway.NotRunning, gateway.ApplyFailed):
        # Joining stands; their namespace is made when their page first uses the cluster.
        logger.warning(
            "could not set %s up in shared cluster %s", user.get_username(), cluster, exc_info=True
        )
        return None
    return student_namespace(username=user.get_username(), user_id=int(user.pk))


class SharedCluster:
    """The shared cluster as a chapter page uses it: the calls of ``courses.sandboxes.services``
    (``ensure_sandbox``, ``sandbox_access``, ``kubeconfig_for``, ``checker_token``, ``touch``),
    answered with ``cluster``, the student's token there and their namespace."""

    SandboxUnavailable = sandboxes.SandboxUnavailable
    shared = True

    def __init__(self, cluster: str) -> None:
        self.cluster = cluster

    async def ensure_sandbox(self, *, user: AbstractBaseUser) -> sandboxes.SandboxAccess:
        """The student's access to the shared cluster, running, their namespace set up (once per
        cluster made). Raises ``SandboxUnavailable``."""
        if user.pk is None:
            raise sandboxes.SandboxUnavailable(gettext("Sign in to use the classroom's cluster."))
        username, user_id = user.get_username(), int(user.pk)
        namespace = student_namespace(username=username, user_id=user_id)
        student = student_user(username=username)
        try:
            facts = await gateway.ensure_cluster(cluster=self.cluster)
            if (facts.incarnation, namespace) not in _set_up:
                await set_up_student(cluster=self.cluster, username=username, user_id=user_id)
                _set_up.add((facts.incarnation, namespace))
            token = await gateway.kept_token(cluster=self.cluster, user=student)
        except (gateway.NotServedHere, gateway.NotRunning, gateway.ApplyFailed) as error:
            raise _unavailable(error) from error
        gateway.touch(cluster=self.cluster)
        return sandboxes.SandboxAccess(cluster=self.cluster, user=student, token=token, namespace=namespace)

    async def sandbox_access(self, *, user: AbstractBaseUser) -> sandboxes.SandboxAccess | None:
        """As ``ensure_sandbox``; None when the cluster does not run in this process."""
        try:
            gateway.cluster_facts(cluster=self.cluster)
        except gateway.NotServedHere:
            return None
        return await self.ensure_sandbox(user=user)

    async def kubeconfig_for(self, *, user: AbstractBaseUser, server: str | None = None) -> bytes:
        """The student's kubeconfig for the shared cluster, their namespace the context's."""
        return await sandboxes.kubeconfig_of(access=await self.ensure_sandbox(user=user), server=server)

    async def checker_token(self, *, cluster: str) -> str:
        return await sandboxes.checker_token(cluster=cluster)

    def touch(self, *, cluster: str) -> None:
        gateway.touch(cluster=cluster)


def _unavailable(error: Exception) -> sandboxes.SandboxUnavailable:
    if isinstance(error, gateway.NotServedHere):
        text = gettext(
            "The lab is not running in this server process, so the classroom's cluster cannot start here."
        )
    elif isinstance(error, gateway.NotRunning):
        text = gettext("The classroom's cluster could not start (it is %(state)s).") % {"state": error.state}
    else:
        text = gettext("Your namespace in the classroom's cluster could not be set up: %(error)s") % {
            "error": error
        }
    return sandboxes.SandboxUnavailable(text)


async def cluster_service(*, user: Any, course: str | None = None, chapter: str | None = None) -> Any:
    """What a student's chapter page acts with: a ``SharedCluster`` when a classroom of theirs has
    its chapters use its shared cluster (``shared_cluster_for``), else their sandbox's service."""
    if user is None or not user.is_authenticated or user.pk is None:
        return sandboxes
    cluster = await sync_to_async(shared_cluster_for)(user_id=int(user.pk), course=course, chapter=chapter)
    return sandboxes if cluster is None else SharedCluster(cluster)


__all__ = [
    "CLUSTER_PREFIX",
    "INSTRUCTORS_BINDING",
    "STUDENT_BINDING",
    "Members",
    "SharedCluster",
    "claim_shared_cluster",
    "cluster_service",
    "create_shared_cluster",
    "in_namespace",
    "instructor_objects",
    "instructor_user",
    "joined",
    "members_of",
    "set_up_cluster",
    "set_up_student",
    "shared_cluster_for",
    "shared_cluster_name",
    "shared_cluster_of",
    "student_namespace",
    "student_objects",
]
