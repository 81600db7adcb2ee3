"""A student's sandbox: the cluster that is theirs alone.

Its name comes from the account (``sandbox_name``), never from what anyone typed. The cluster itself
lives in the lab (``controlplane.runtime``); this row remembers whose it is and the credential the
web app acts with on the student's behalf (the student's own cluster identity, never a shared one).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Sandbox(models.Model):
    """The cluster of one student."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sandbox")
    #: The lab's cluster name: ``sb-<user id>``, a DNS label whatever the username is.
    cluster = models.CharField(max_length=63, unique=True)
    created = models.DateTimeField(auto_now_add=True)
    #: How often the student reset it (each reset makes the cluster anew, empty).
    resets = models.PositiveIntegerField(default=0)

    class Meta:
        app_label = "courses"

    def __str__(self) -> str:
        return f"{self.cluster} ({self.user})"
