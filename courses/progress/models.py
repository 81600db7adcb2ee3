"""A student's progress through a course, one row per step they opened.

Rows name (course, chapter, step id), the ids the content promises never to change
(docs/course-format.md), so progress survives edits of the text, a reset of the sandbox and a new
version of the check.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class StepProgress(models.Model):
    """One student's progress on one step."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="step_progress")
    course = models.SlugField(max_length=100)
    chapter = models.SlugField(max_length=100)
    step = models.SlugField(max_length=100)
    opened = models.DateTimeField(auto_now_add=True)
    #: When the step's check passed (it stays passed); None until then.
    passed = models.DateTimeField(null=True, blank=True)
    #: How many hints they opened, and whether they asked for the solution.
    hints = models.PositiveSmallIntegerField(default=0)
    solution = models.BooleanField(default=False)

    class Meta:
        app_label = "courses"
        constraints = [
            models.UniqueConstraint(
                fields=["user", "course", "chapter", "step"], name="one_progress_per_step"
            )
        ]

    def __str__(self) -> str:
        state = "passed" if self.passed else "open"
        return f"{self.user} {self.course}/{self.chapter}/{self.step}: {state}"


class ChapterPosition(models.Model):
    """Where a student is in a chapter: the step they last had open, to resume there."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="chapter_positions"
    )
    course = models.SlugField(max_length=100)
    chapter = models.SlugField(max_length=100)
    step = models.SlugField(max_length=100)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        app_label = "courses"
        constraints = [
            models.UniqueConstraint(fields=["user", "course", "chapter"], name="one_position_per_chapter")
        ]
