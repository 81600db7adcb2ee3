"""The web UI's URL routes. The API server mounts ``/clusters/<name>/`` here in its own issue."""

from __future__ import annotations

from django.contrib import admin
from django.urls import URLPattern, URLResolver, include, path
from django.views.i18n import JavaScriptCatalog

urlpatterns: list[URLPattern | URLResolver] = [
    path("admin/", admin.site.urls),
    # The scripts' translations (locale/<locale>/LC_MESSAGES/djangojs.po) in the request's language,
    # as `django.gettext` and friends: static/topology/i18n.js uses them.
    path("jsi18n/", JavaScriptCatalog.as_view(), name="javascript-catalog"),
    path("", include("courses.urls")),
]
