"""The manifests routes, included by ``courses/urls.py`` into the ``courses`` namespace."""

from __future__ import annotations

from django.urls import URLPattern

urlpatterns: list[URLPattern] = []
