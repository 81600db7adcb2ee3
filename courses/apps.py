"""The web application as a Django app: ``courses``, the one app of every area (see ``courses/__init__``)."""

from __future__ import annotations

from django.apps import AppConfig


class CoursesConfig(AppConfig):
    name = "courses"
    verbose_name = "Kubelab courses"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Signal receivers register themselves when their module is imported.
        from courses.classrooms import signals  # noqa: F401
        from courses.sandboxes import signals as sandbox_signals  # noqa: F401
