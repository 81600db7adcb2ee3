"""The courses' URL routes: the landing page and one page per cluster."""

from __future__ import annotations

from django.urls import path

from courses import views

app_name = "courses"

urlpatterns = [
    path("", views.landing, name="landing"),
    path("lab/<slug:name>/", views.cluster, name="cluster"),
]
