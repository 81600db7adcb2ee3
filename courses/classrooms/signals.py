"""What happens when a classroom goes (deleted in the admin, or with its last instructor's account).

Its instructors' faults go with it: a fault applied from its dashboard to its shared cluster or to a
student's sandbox is cleared, whatever time it had left (``services.clear_faults_of``). The students'
sandboxes and progress stay: they are the students', not the classroom's.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db.models.signals import pre_delete
from django.dispatch import receiver

from courses.classrooms import services
from courses.classrooms.models import Classroom

logger = logging.getLogger(__name__)


@receiver(pre_delete, sender=Classroom, dispatch_uid="kubelab-classroom-faults")
def clear_the_classroom_s_faults(sender: type[Classroom], instance: Classroom, **kwargs: Any) -> None:
    # Before the delete: its students and clusters are still linked to it.
    if services.clear_faults_of(classroom=instance):
        logger.info("classroom %s deleted: clearing its instructors' faults", instance.slug)
