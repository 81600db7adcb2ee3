"""The classroom routes, included by ``courses/urls.py`` into the ``courses`` namespace:
``courses:classrooms`` (one's classrooms, and creating one), ``courses:classroom-join`` and
``courses:classroom-join-code`` (the shared link), ``courses:classroom`` (the instructor's dashboard)
with its ``-students`` table, ``-faults``, ``-code`` and ``-chapters-use`` actions."""

from __future__ import annotations

from django.urls import path

from courses.classrooms import views

urlpatterns = [
    path("classrooms/", views.index, name="classrooms"),
    path("classrooms/join/", views.join, name="classroom-join"),
    path("classrooms/join/<str:code>/", views.join, name="classroom-join-code"),
    path("classrooms/<slug:slug>/", views.dashboard, name="classroom"),
    path("classrooms/<slug:slug>/students/", views.students, name="classroom-students"),
    path("classrooms/<slug:slug>/faults/", views.faults, name="classroom-faults"),
    path("classrooms/<slug:slug>/code/", views.code, name="classroom-code"),
    path("classrooms/<slug:slug>/chapters-use/", views.chapters_use, name="classroom-chapters-use"),
]
