"""The course pages' routes, included by ``courses/urls.py`` into the ``courses`` namespace."""

from __future__ import annotations

from django.urls import path

from courses.chapters import views

urlpatterns = [
    path("learn/", views.course_list, name="courses"),
    path("learn/<slug:course>/", views.course_detail, name="course"),
    path("learn/<slug:course>/<slug:chapter>/", views.chapter, name="chapter"),
    path("learn/<slug:course>/<slug:chapter>/sandbox/", views.sandbox_topology, name="chapter-topology"),
    path("learn/<slug:course>/<slug:chapter>/<slug:step>/hint/", views.hint, name="chapter-hint"),
    path("learn/<slug:course>/<slug:chapter>/<slug:step>/solution/", views.solution, name="chapter-solution"),
]
