"""The ``courses`` app's admin, where Django's ``admin.autodiscover`` looks for it: each area registers
its models in its own ``admin`` module, imported here (today the classrooms').
"""

from __future__ import annotations

import courses.classrooms.admin  # noqa: F401  (registers Classroom and ClassroomCluster)
