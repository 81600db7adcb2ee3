"""What happens to a sandbox when its account goes (deleted in the admin).

The sandbox goes with it: the lab stops it, deletes its store and its identities (every token and
certificate it issued stops working) and forgets it (``Lab.delete_cluster``). What the student kept
there, Secrets included, is theirs and does not outlive the account. A lab in another process is not
reached from here; its sandbox stays until that lab is asked.
"""

from __future__ import annotations

import logging
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models.signals import post_delete
from django.dispatch import receiver

from courses import gateway
from courses.sandboxes.identities import sandbox_name

logger = logging.getLogger(__name__)


@receiver(post_delete, sender=get_user_model(), dispatch_uid="kubelab-sandbox-of-account")
def delete_the_account_s_sandbox(sender: type[Any], instance: Any, **kwargs: Any) -> None:
    cluster = sandbox_name(user_id=instance.pk)
    if gateway.delete_cluster_soon(cluster=cluster):
        logger.info("account %s deleted: deleting its sandbox %s", instance.pk, cluster)
