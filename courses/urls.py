"""The courses' URL routes: the landing page, one page per cluster and its etcd panel's reads."""

from __future__ import annotations

from django.urls import path

from courses import views

app_name = "courses"

urlpatterns = [
    path("", views.landing, name="landing"),
    path("lab/<slug:name>/", views.cluster, name="cluster"),
    path("lab/<slug:name>/etcd/", views.etcd_keys, name="etcd-keys"),
]
