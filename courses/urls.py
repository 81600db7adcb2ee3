"""The web application's URL routes, the ``courses`` namespace: the landing page here, each area's
routes included from its own ``urls`` module (today the cluster pages', ``courses.lab.urls``).

Python code builds paths with ``reverse("courses:<name>")`` and templates with ``{% url %}``, never by
hand.
"""

from __future__ import annotations

from django.urls import include, path

from courses import views

app_name = "courses"

urlpatterns = [
    path("", views.landing, name="landing"),
    path("", include("courses.lab.urls")),
]
