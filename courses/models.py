"""The ``courses`` app's models, where Django looks for them: each area defines its own and they are
imported here.

Every model of the web application belongs to the one app ``courses`` (app label ``courses``, one
``courses/migrations``), whichever sub-package defines it: the classrooms, accounts'
preferences, sandboxes and progress. ``validate_cluster_name`` is imported too: migration 0001 refers to it
as ``courses.models.validate_cluster_name``.
"""

from __future__ import annotations

from courses.accounts.models import Preference
from courses.classrooms.models import Classroom, ClassroomCluster, ClassroomLogEntry, validate_cluster_name
from courses.progress.models import ChapterPosition, StepProgress
from courses.sandboxes.models import Sandbox

__all__ = [
    "ChapterPosition",
    "Classroom",
    "ClassroomCluster",
    "ClassroomLogEntry",
    "Preference",
    "Sandbox",
    "StepProgress",
    "validate_cluster_name",
]
