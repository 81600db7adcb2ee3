"""Reading the course for the pages: the content (``courses.engine.content``) in the reader's
language, with the student's progress beside it (selectors, in the HackSoft styleguide's terms).

Languages: Django's codes (``en``, ``zh-hans``) name the prose too; any other active language reads
the English text (``content.language_code``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.http import Http404
from django.urls import reverse

from courses.engine import content
from courses.progress import services as progress

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

    User = AbstractBaseUser | AnonymousUser


def find_course(slug: str) -> content.Course:
    """The course called ``slug``; 404 if there is none."""
    try:
        return content.load_course(slug)
    except content.CourseNotFound:
        raise Http404(f"no course {slug!r}") from None


def find_chapter(course: str, chapter: str) -> content.Chapter:
    """The chapter ``chapter`` of course ``course``; 404 if there is none."""
    found = find_course(course).chapter(chapter)
    if found is None:
        raise Http404(f"no chapter {chapter!r} in course {course!r}")
    return found


@dataclass(frozen=True, slots=True)
class ChapterSummary:
    slug: str
    number: int
    title: str
    url: str
    steps: int
    passed: int
    #: The step the student last had open, to resume at (None: the first).
    resume: str | None

    @property
    def done(self) -> bool:
        return self.steps > 0 and self.passed == self.steps


@dataclass(frozen=True, slots=True)
class CourseView:
    slug: str
    title: str
    url: str
    chapters: tuple[ChapterSummary, ...]

    @property
    def passed(self) -> int:
        return sum(c.passed for c in self.chapters)

    @property
    def steps(self) -> int:
        return sum(c.steps for c in self.chapters)


def course_views(*, user: User, language: str | None = None) -> list[CourseView]:
    """Every course with the user's progress in each chapter (nothing passed for a visitor)."""
    from django.utils.translation import get_language

    lang = content.language_code(language or get_language())
    found = []
    for course in content.courses():
        done = progress.course_progress(user=user, course=course.slug)
        chapters = []
        for chapter in course.chapters:
            ids = [s.id for s in chapter.steps]
            states = done.get(chapter.slug, {})
            chapters.append(
                ChapterSummary(
                    slug=chapter.slug,
                    number=chapter.number,
                    title=chapter.prose_for(lang).title,
                    url=reverse("courses:chapter", kwargs={"course": course.slug, "chapter": chapter.slug}),
                    steps=len(ids),
                    passed=sum(1 for i in ids if i in states and states[i].done),
                    resume=progress.position(user=user, course=course.slug, chapter=chapter.slug, steps=ids),
                )
            )
        found.append(
            CourseView(
                slug=course.slug,
                title=course.title.get(lang) or course.title.get("en", course.slug),
                url=reverse("courses:course", kwargs={"course": course.slug}),
                chapters=tuple(chapters),
            )
        )
    return found


@dataclass(frozen=True, slots=True)
class ActionView:
    """A step's button: a kubectl command for the console, the ``index``-th request of the step, or a
    fault (``index``: its place among all the step's actions, what the page sends back)."""

    kind: str
    label: str
    command: str | None = None
    index: int | None = None


def action_views(step: Any, lang: str) -> tuple[ActionView, ...]:
    found: list[ActionView] = []
    requests = 0
    for position, action in enumerate(step.actions):
        label = action.label.get(lang) or action.label.get("en")
        if action.kubectl is not None:
            found.append(ActionView("kubectl", label or action.kubectl, command=action.kubectl))
        elif action.request is not None:
            text = label or f"{action.request.method} {action.request.path}"
            found.append(ActionView("request", text, index=requests))
            requests += 1
        elif action.fault is not None:
            # The catalogue's words in the page's language, unless the chapter gives its own.
            text = action.label.get(lang) or action.fault.label(lang)
            found.append(ActionView("fault", text, index=position))
    return tuple(found)


@dataclass(frozen=True, slots=True)
class StepView:
    """One step as the page shows it: its structure, its prose, the student's state on it."""

    index: int
    spec: Any
    title: str
    html: str
    state: progress.StepState
    url: str
    actions: tuple[ActionView, ...] = ()


@dataclass(frozen=True, slots=True)
class ChapterView:
    course: content.Course
    course_title: str
    chapter: content.Chapter
    title: str
    intro_html: str
    language: str
    steps: tuple[StepView, ...]
    #: The open step's id, and its index in ``steps``.
    step_id: str
    index: int

    @property
    def current(self) -> StepView:
        return self.steps[self.index]

    @property
    def previous(self) -> StepView | None:
        return self.steps[self.index - 1] if self.index > 0 else None

    @property
    def next(self) -> StepView | None:
        return self.steps[self.index + 1] if self.index + 1 < len(self.steps) else None


def chapter_view(
    *, user: User, course: str, chapter: str, step: str | None, language: str | None
) -> ChapterView:
    """A chapter in ``language`` with the user's progress, open at ``step`` (else where they were, else
    the first step). 404 for an unknown course or chapter; an unknown step opens the first."""
    found_course = find_course(course)
    found = find_chapter(course, chapter)
    lang = content.language_code(language)
    prose = found.prose_for(lang)
    ids = [s.id for s in found.steps]
    states = progress.chapter_progress(user=user, course=found_course.slug, chapter=found.slug)
    if step not in ids:
        step = progress.position(user=user, course=found_course.slug, chapter=found.slug, steps=ids) or ids[0]
    base = reverse("courses:chapter", kwargs={"course": found_course.slug, "chapter": found.slug})
    steps = tuple(
        StepView(
            index=i,
            spec=s,
            title=prose.steps[s.id].title,
            html=prose.steps[s.id].html,
            state=states.get(s.id, progress.StepState(s.id)),
            url=f"{base}?step={s.id}",
            actions=action_views(s, lang),
        )
        for i, s in enumerate(found.steps)
    )
    return ChapterView(
        course=found_course,
        course_title=found_course.title.get(lang) or found_course.title.get("en", found_course.slug),
        chapter=found,
        title=prose.title,
        intro_html=prose.intro_html,
        language=lang,
        steps=steps,
        step_id=step,
        index=ids.index(step),
    )
