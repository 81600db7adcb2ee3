"""The manifest form's routes, included by ``courses/urls.py`` into the ``courses`` namespace.

``manifests/`` is the form on a page of its own; ``manifests/submit/`` is where it posts (with htmx or
without); see ``views.py``.
"""

from __future__ import annotations

from django.urls import path

from courses.manifests import views

urlpatterns = [
    path("manifests/", views.page, name="manifests"),
    path("manifests/submit/", views.submit, name="manifest-submit"),
]
