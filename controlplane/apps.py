"""The control plane as a Django app: it contributes the ``runlab`` command, and starts nothing.

Clusters are started by ``manage.py runlab`` on daphne's event loop, never as a side effect of Django
loading its apps: ``ready()`` also runs for ``migrate``, for tests and for every other command.
"""

from __future__ import annotations

from django.apps import AppConfig


class ControlPlaneConfig(AppConfig):
    name = "controlplane"
    verbose_name = "Kubelab control plane"
    default_auto_field = "django.db.models.BigAutoField"
