"""The sandboxes routes, included by ``courses/urls.py`` into the ``courses`` namespace:
``courses:sandbox`` (the student's cluster), ``courses:sandbox-kubeconfig`` (its kubeconfig) and
``courses:sandbox-reset`` (the question, and the reset)."""

from __future__ import annotations

from django.urls import path

from courses.sandboxes import views

urlpatterns = [
    path("sandbox/", views.status, name="sandbox"),
    path("sandbox/kubeconfig/", views.kubeconfig, name="sandbox-kubeconfig"),
    path("sandbox/reset/", views.reset, name="sandbox-reset"),
]
