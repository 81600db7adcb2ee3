"""Classrooms as their instructors and students use them: create one, join it, renew its code, log.

HackSoft style, as ``courses.progress``: services write, ``courses.classrooms.selectors`` read. Every
function is keyword-only and synchronous (the ORM); errors are types (``ClassroomError`` and its
kinds), each with a message for the person who met it.

Who is an instructor: staff, a superuser, or a user with the ``courses.teach_classroom`` permission
(granted in Django's admin, to a user or through a group). An instructor creates classrooms and teaches
the ones they are an instructor of; a superuser may open any. Students join with a classroom's join
code, never by being named in a form, so a student only ever adds themselves.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib.auth.models import PermissionsMixin
from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils.text import slugify
from django.utils.translation import gettext

from courses import gateway
from courses.classrooms.models import (
    JOIN_LENGTH,
    SANDBOX,
    SHARED,
    Classroom,
    ClassroomLogEntry,
    new_join_code,
    normalise_join_code,
)
from courses.engine import content
from courses.sandboxes.models import Sandbox

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

    Person = AbstractBaseUser | AnonymousUser

#: The permission that makes a user an instructor (``Classroom.Meta.permissions``).
TEACH = "courses.teach_classroom"
#: Tries at a free join code or slug before giving up (31^8 codes: a clash is already rare).
ATTEMPTS = 20


class ClassroomError(Exception):
    """Something about a classroom that cannot be done; the message says why, in the active language."""


class NotAnInstructor(ClassroomError):
    """The user may not create classrooms, or does not teach this one."""


class InvalidJoinCode(ClassroomError):
    """No open classroom has this join code."""


class InvalidClassroom(ClassroomError):
    """A classroom that cannot be made as asked (no name, an unknown course or chapter)."""


def is_instructor(user: Person) -> bool:
    """Whether ``user`` may create classrooms (and so sees the instructor's side of the pages)."""
    if not user.is_authenticated:
        return False
    if getattr(user, "is_staff", False) or getattr(user, "is_superuser", False):
        return True
    return isinstance(user, PermissionsMixin) and user.has_perm(TEACH)


def teaches(user: Person, classroom: Classroom) -> bool:
    """Whether ``user`` may open ``classroom``'s dashboard: one of its instructors, or a superuser."""
    if not user.is_authenticated:
        return False
    if getattr(user, "is_superuser", False):
        return True
    return classroom.instructors.filter(pk=user.pk).exists()


def _id(user: Person) -> int:
    """A signed-in user's account id (0 for anyone else, who matches no row)."""
    return int(user.pk) if user.is_authenticated and user.pk is not None else 0


def fault_reason(*, user: Person, classroom: Classroom) -> str:
    """Why a fault an instructor applies from the dashboard is in force: the reason the fault book and
    the cluster's audit log keep, ending with ``classroom_suffix`` so the classroom's faults can be
    found again when it goes."""
    return f"instructor {user.get_username()}{classroom_suffix(classroom.slug)}"


def classroom_suffix(slug: str) -> str:
    return f" of classroom {slug}"


def clusters_of(classroom: Classroom) -> list[str]:
    """Every cluster the classroom's instructors may break: its own (the shared one) and its
    students' sandboxes."""
    own = list(classroom.clusters.values_list("cluster", flat=True))
    sandboxes = Sandbox.objects.filter(user__classrooms_attended=classroom).values_list("cluster", flat=True)
    return sorted({*own, *sandboxes})


def clear_faults_of(*, classroom: Classroom) -> bool:
    """No fault outlives its classroom: have the lab clear what the classroom's instructors applied
    to its clusters (``courses.gateway.clear_faults_soon``; False without a lab in this process)."""
    return gateway.clear_faults_soon(
        clusters=clusters_of(classroom),
        reason_suffix=classroom_suffix(classroom.slug),
        reason=f"classroom {classroom.slug} deleted",
    )


def log(*, classroom: Classroom, actor: Person | None, action: str, detail: str = "") -> None:
    """Write one line to the classroom's log (what its instructors read on the dashboard)."""
    ClassroomLogEntry.objects.create(
        classroom=classroom,
        actor_id=actor.pk if actor is not None and actor.is_authenticated else None,
        action=action,
        detail=detail,
    )


def _free_slug(name: str) -> str:
    base = (slugify(name) or "classroom")[:50].strip("-") or "classroom"
    if base == "join":  # /classrooms/join/ is the join form
        base = "join-classroom"
    taken = set(Classroom.objects.filter(slug__startswith=base).values_list("slug", flat=True))
    if base not in taken:
        return base
    return next(f"{base}-{n}" for n in range(2, len(taken) + 3) if f"{base}-{n}" not in taken)


def _free_code() -> str:
    for _ in range(ATTEMPTS):
        code = new_join_code()
        if not Classroom.objects.filter(join_code=code).exists():
            return code
    raise ClassroomError(gettext("No free join code was found. Try again."))


def create_classroom(*, user: Person, name: str, course: str, chapters: list[str]) -> Classroom:
    """A new classroom taught by ``user``, following ``course`` (its ``chapters``, in the course's
    order; none: all of them), open to join with a fresh code."""
    if not is_instructor(user):
        raise NotAnInstructor(gettext("Only instructors can create classrooms."))
    name = name.strip()
    if not name:
        raise InvalidClassroom(gettext("A classroom needs a name."))
    try:
        found = content.load_course(course)
    except content.CourseNotFound:
        raise InvalidClassroom(gettext("There is no such course.")) from None
    known = [c.slug for c in found.chapters]
    unknown = sorted(set(chapters) - set(known))
    if unknown:
        raise InvalidClassroom(gettext("The course has no chapter %(slug)s.") % {"slug": unknown[0]})
    for _ in range(ATTEMPTS):
        try:
            with transaction.atomic():
                classroom = Classroom.objects.create(
                    name=name[:200],
                    slug=_free_slug(name),
                    course=course,
                    chapters=[slug for slug in known if slug in chapters],
                    join_code=_free_code(),
                )
                classroom.instructors.add(_id(user))
                log(classroom=classroom, actor=user, action="created", detail=classroom.name)
                return classroom
        except IntegrityError:
            continue  # another classroom took the slug or the code meanwhile: pick again
    raise ClassroomError(gettext("The classroom could not be created. Try again."))


def renew_join_code(*, classroom: Classroom, user: Person) -> str:
    """A new join code (the old one stops working: students who joined stay)."""
    classroom.join_code = _free_code()
    classroom.save(update_fields=["join_code"])
    log(classroom=classroom, actor=user, action="join-code-renewed")
    return classroom.join_code


def close_joining(*, classroom: Classroom, user: Person) -> None:
    """No code works any more until a new one is made."""
    classroom.join_code = None
    classroom.save(update_fields=["join_code"])
    log(classroom=classroom, actor=user, action="joining-closed")


def set_chapters_use(*, classroom: Classroom, user: Person, use: str) -> bool:
    """Which cluster the classroom's chapter pages act in (``SANDBOX`` or ``SHARED``); whether it
    changed. Logged. The shared cluster itself is made by ``courses.classrooms.shared``."""
    if use not in (SANDBOX, SHARED):
        raise ClassroomError(gettext("Choose each student's sandbox or the shared cluster."))
    if classroom.chapters_use == use:
        return False
    classroom.chapters_use = use
    classroom.save(update_fields=["chapters_use"])
    log(classroom=classroom, actor=user, action="chapters-use", detail=use)
    return True


def join(*, user: Person, code: str) -> Classroom:
    """Add ``user`` to the students of the classroom whose join code is ``code`` (as typed: case,
    spaces and dashes do not matter). Joining twice changes nothing."""
    normalised = normalise_join_code(code)
    if len(normalised) != JOIN_LENGTH:
        raise InvalidJoinCode(
            gettext("A join code has %(count)d letters and digits.") % {"count": JOIN_LENGTH}
        )
    classroom = Classroom.objects.filter(join_code=normalised).first()
    if classroom is None or not user.is_authenticated:
        raise InvalidJoinCode(
            gettext("No classroom has this join code. Ask your instructor for the current one.")
        )
    if not classroom.students.filter(pk=user.pk).exists():
        classroom.students.add(_id(user))
        log(classroom=classroom, actor=user, action="joined")
    return classroom


def taught_by(user: Person) -> QuerySet[Classroom]:
    return Classroom.objects.filter(instructors__id=_id(user)).order_by("name")


def attended_by(user: Person) -> QuerySet[Classroom]:
    return Classroom.objects.filter(students__id=_id(user)).order_by("name")


__all__ = [
    "TEACH",
    "ClassroomError",
    "InvalidClassroom",
    "InvalidJoinCode",
    "NotAnInstructor",
    "attended_by",
    "close_joining",
    "create_classroom",
    "is_instructor",
    "join",
    "log",
    "renew_join_code",
    "set_chapters_use",
    "taught_by",
    "teaches",
]
