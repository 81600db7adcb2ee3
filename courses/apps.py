"""The courses as a Django app."""

from __future__ import annotations

from django.apps import AppConfig


class CoursesConfig(AppConfig):
    name = "courses"
    verbose_name = "Kubelab courses"
    default_auto_field = "django.db.models.BigAutoField"
