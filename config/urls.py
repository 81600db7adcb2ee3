"""The web UI's URL routes. The API server mounts ``/clusters/<name>/`` here in its own issue."""

from __future__ import annotations

from django.contrib import admin
from django.urls import URLPattern, URLResolver, include, path

urlpatterns: list[URLPattern | URLResolver] = [
    path("admin/", admin.site.urls),
    path("", include("courses.urls")),
]
