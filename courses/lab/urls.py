"""The cluster pages' routes: one page per cluster and its etcd panel's reads.

Included by ``courses/urls.py`` without a namespace of its own, so the names are the ``courses``
namespace's: ``courses:cluster``, ``courses:etcd-keys``.
"""

from __future__ import annotations

from django.urls import path

from courses.lab import views

urlpatterns = [
    path("lab/<slug:name>/", views.cluster, name="cluster"),
    path("lab/<slug:name>/etcd/", views.etcd_keys, name="etcd-keys"),
]
