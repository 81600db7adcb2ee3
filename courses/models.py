"""The ``courses`` app's models, where Django looks for them: each area defines its own and they are
imported here.

Every model of the web application belongs to the one app ``courses`` (app label ``courses``, one
``courses/migrations``), whichever sub-package defines it: today the classrooms
(``courses.classrooms.models``). ``validate_cluster_name`` is imported too: migration 0001 refers to it
as ``courses.models.validate_cluster_name``.
"""

from __future__ import annotations

from courses.classrooms.models import Classroom, ClassroomCluster, validate_cluster_name

__all__ = ["Classroom", "ClassroomCluster", "validate_cluster_name"]
