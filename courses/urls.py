"""The web application's URL routes, the ``courses`` namespace: the landing page here, each area's
routes included from its own ``urls`` module (the accounts', the chapters', the sandboxes', the
manifest form's, the kubectl console's, the cluster pages' and the classrooms').

Python code builds paths with ``reverse("courses:<name>")`` and templates with ``{% url %}``, never by
hand.
"""

from __future__ import annotations

from django.urls import include, path

from courses import views

app_name = "courses"

urlpatterns = [
    path("", views.landing, name="landing"),
    path("", include("courses.accounts.urls")),
    path("", include("courses.chapters.urls")),
    path("", include("courses.sandboxes.urls")),
    path("", include("courses.manifests.urls")),
    path("", include("courses.console.urls")),
    path("", include("courses.lab.urls")),
    path("", include("courses.classrooms.urls")),
]
