"""What a classroom's dashboard shows: each student, where they are in each chapter, their sandbox.

Read in a fixed number of queries whatever the class's size (the students, their progress rows, their
chapter positions, their sandboxes, the log), then put together in Python: ``dashboard`` is
synchronous (the ORM; views run it in a worker thread). A sandbox's state, its faults and what the
latest of them caused come from the lab in this process (``courses.gateway``, no I/O): ``with_clusters``
reads them on the event loop, where the lab lives, and fills them in (``None`` when this process does
not run the sandbox).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from django.contrib.auth import get_user_model

from courses import gateway
from courses.classrooms import shared
from courses.classrooms.models import Classroom, ClassroomLogEntry
from courses.engine import content
from courses.progress.models import ChapterPosition, StepProgress
from courses.sandboxes.models import Sandbox

#: Log lines the dashboard shows, newest first.
LOG_LINES = 20


@dataclass(frozen=True, slots=True)
class ChapterColumn:
    slug: str
    number: int
    title: str
    steps: int


@dataclass(frozen=True, slots=True)
class ChapterCell:
    """One student in one chapter."""

    passed: int
    steps: int
    #: The title of the step they have open (None: not opened yet).
    at: str | None = None
    hints: int = 0
    solutions: int = 0

    @property
    def done(self) -> bool:
        return self.passed >= self.steps > 0


@dataclass(frozen=True, slots=True)
class StudentRow:
    user_id: int
    username: str
    #: Their sandbox's cluster name (None: they have none yet), its state here (None: not run here).
    cluster: str | None
    state: str | None
    faults: tuple[str, ...]
    cells: tuple[ChapterCell, ...]
    last_seen: datetime | None
    #: What the latest fault on their cluster caused (``courses.gateway.fault_episodes``), or None.
    episode: dict[str, Any] | None = None
    #: Ready nodes, pending pods, failing answers (``courses.gateway.cluster_health``), or None.
    health: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class SharedRow:
    """The classroom's shared cluster, a row of its own above the students' (each of them works
    there in a namespace when the chapters use it); the fields as in ``StudentRow``."""

    cluster: str
    state: str | None = None
    faults: tuple[str, ...] = ()
    episode: dict[str, Any] | None = None
    health: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Dashboard:
    classroom: Classroom
    chapters: tuple[ChapterColumn, ...]
    students: tuple[StudentRow, ...]
    log: tuple[ClassroomLogEntry, ...] = field(default_factory=tuple)
    #: The shared cluster (None: the classroom has none yet).
    shared: SharedRow | None = None


def chapters_of(classroom: Classroom, lang: str | None) -> tuple[content.Chapter, ...]:
    """The chapters the classroom covers, in the course's order (all of them when it names none)."""
    try:
        course = content.load_course(classroom.course)
    except content.CourseNotFound:
        return ()
    chosen = set(classroom.chapters or ())
    return tuple(c for c in course.chapters if not chosen or c.slug in chosen)


@dataclass(frozen=True, slots=True)
class SandboxView:
    """A sandbox as the lab in this process sees it now (``state`` None: not run here)."""

    state: str | None = None
    faults: tuple[str, ...] = ()
    episode: dict[str, Any] | None = None
    health: dict[str, Any] | None = None


def _sandbox_view(cluster: str) -> SandboxView:
    try:
        state: str | None = gateway.cluster_facts(cluster=cluster).state
    except gateway.NotServedHere:
        return SandboxView()
    faults = tuple(f"{f['fault']} ({f['target']})" for f in gateway.faults_in_force(cluster=cluster))
    episodes = gateway.fault_episodes(cluster=cluster)
    return SandboxView(
        state, faults, episodes[0] if episodes else None, gateway.cluster_health(cluster=cluster)
    )


def dashboard(*, classroom: Classroom, lang: str | None) -> Dashboard:
    chapters = chapters_of(classroom, lang)
    columns = tuple(ChapterColumn(c.slug, c.number, c.prose_for(lang).title, len(c.steps)) for c in chapters)
    students = list(
        get_user_model()
        .objects.filter(classrooms_attended=classroom)
        .order_by("username")
        .values_list("pk", "username")
    )
    ids = [pk for pk, _ in students]
    slugs = [c.slug for c in chapters]
    rows = StepProgress.objects.filter(
        user_id__in=ids, course=classroom.course, chapter__in=slugs
    ).values_list("user_id", "chapter", "step", "passed", "hints", "solution", "opened")
    progress: dict[tuple[int, str], list[tuple[str, datetime | None, int, bool]]] = defaultdict(list)
    seen: dict[int, datetime] = {}
    for user_id, chapter_slug, step, passed, hints, solution, opened in rows:
        progress[(user_id, chapter_slug)].append((step, passed, hints, solution))
        for moment in (opened, passed):
            if moment is not None and (user_id not in seen or moment > seen[user_id]):
                seen[user_id] = moment
    positions = {
        (user_id, chapter_slug): step
        for user_id, chapter_slug, step in ChapterPosition.objects.filter(
            user_id__in=ids, course=classroom.course, chapter__in=slugs
        ).values_list("user_id", "chapter", "step")
    }
    sandboxes = dict(Sandbox.objects.filter(user_id__in=ids).values_list("user_id", "cluster"))
    step_ids = {chapter.slug: {s.id for s in chapter.steps} for chapter in chapters}
    result = []
    for user_id, username in students:
        cells = []
        for chapter in chapters:
            done = progress.get((user_id, chapter.slug), [])
            at_step = positions.get((user_id, chapter.slug))
            at = chapter.prose_for(lang).steps[at_step].title if at_step in step_ids[chapter.slug] else None
            cells.append(
                ChapterCell(
                    passed=sum(
                        1
                        for step, passed, _, _ in done
                        if passed is not None and step in step_ids[chapter.slug]
                    ),
                    steps=len(chapter.steps),
                    at=at,
                    hints=sum(h for _, _, h, _ in done),
                    solutions=sum(1 for _, _, _, s in done if s),
                )
            )
        cluster = sandboxes.get(user_id)
        result.append(StudentRow(user_id, username, cluster, None, (), tuple(cells), seen.get(user_id)))
    log = tuple(ClassroomLogEntry.objects.filter(classroom=classroom).select_related("actor")[:LOG_LINES])
    shared_cluster = shared.shared_cluster_of(classroom)
    shared_row = SharedRow(shared_cluster) if shared_cluster is not None else None
    return Dashboard(classroom, columns, tuple(result), log, shared_row)


def with_clusters(board: Dashboard) -> Dashboard:
    """``board`` with each student's sandbox, and the shared cluster, as the lab sees them now. Call it
    on the event loop."""
    shared_row = board.shared
    if shared_row is not None:
        view = _sandbox_view(shared_row.cluster)
        shared_row = replace(
            shared_row, state=view.state, faults=view.faults, episode=view.episode, health=view.health
        )
    students = []
    for row in board.students:
        if row.cluster is not None:
            view = _sandbox_view(row.cluster)
            row = replace(row, state=view.state, faults=view.faults, episode=view.episode, health=view.health)
        students.append(row)
    return replace(board, students=tuple(students), shared=shared_row)


__all__ = [
    "ChapterCell",
    "ChapterColumn",
    "Dashboard",
    "SharedRow",
    "StudentRow",
    "chapters_of",
    "dashboard",
    "with_clusters",
]
