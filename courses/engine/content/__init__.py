"""Course content: the chapters a student reads and does, loaded from files and checked as a whole.

A course lives in the repository, reviewed like code (docs/course-format.md): structure once, in
YAML (``course.yaml``, each chapter's ``chapter.yaml`` and its ``manifests/``), and prose once per
language, in Markdown (``en.md``, ``zh-Hans.md``). This package turns those files into frozen values:

- ``model``: ``Course``, ``Chapter``, ``Step``, ``Hint``, ``Mistake``, ``Solution`` (its
  ``SolutionManifest``\\ s and ``SolutionCommand``\\ s), ``Highlight``, ``Timeline``, ``Action``,
  ``FaultAction`` and ``Request``, what the pages, the checks and the solutions read;
- ``loader``: ``load_course(slug)`` and ``courses()``, cached per content root; every problem of a
  course in one ``ContentError`` (``errors``), each with its file and place;
- ``schema`` and ``diagram``: how the YAML and the diagram node ids are checked;
- ``linter``: a check names nothing its step's text does not mention.

The prose itself is rendered by ``courses.engine.prose`` (``ChapterProse``, ``StepProse``), and the
checks are parsed by ``courses.engine.checks``. ``manage.py checkcontent`` runs all of it.
"""

from __future__ import annotations

from courses.engine.content.errors import ContentError, CourseNotFound, Problem
from courses.engine.content.loader import (
    content_root,
    course_slugs,
    courses,
    load_course,
    problems,
    reload,
)
from courses.engine.content.model import (
    DEFAULT_LANGUAGE,
    LANGUAGES,
    STUDENT,
    Action,
    Chapter,
    Course,
    FaultAction,
    Highlight,
    Hint,
    Mistake,
    Request,
    Solution,
    SolutionCommand,
    SolutionManifest,
    Step,
    Timeline,
    for_student,
    language_code,
)
from courses.engine.prose import ChapterProse, StepProse

__all__ = [
    "DEFAULT_LANGUAGE",
    "LANGUAGES",
    "STUDENT",
    "Action",
    "Chapter",
    "ChapterProse",
    "ContentError",
    "Course",
    "CourseNotFound",
    "FaultAction",
    "Highlight",
    "Hint",
    "Mistake",
    "Problem",
    "Request",
    "Solution",
    "SolutionCommand",
    "SolutionManifest",
    "Step",
    "StepProse",
    "Timeline",
    "content_root",
    "course_slugs",
    "courses",
    "for_student",
    "language_code",
    "load_course",
    "problems",
    "reload",
]
