"""A person's saved preferences: today, the language they chose for the interface.

Django's ``User`` holds who they are; a ``Preference`` row (made on first use) holds what they chose,
so the choice follows them from one browser to another.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Preference(models.Model):
    """What one person chose for the interface."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="preference")
    #: A code of ``settings.LANGUAGES`` (``en``, ``zh-hans``); empty: follow the browser.
    language = models.CharField(max_length=16, blank=True, default="")

    class Meta:
        app_label = "courses"

    def __str__(self) -> str:
        return f"{self.user}: {self.language or 'browser language'}"
