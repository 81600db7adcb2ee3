"""The cluster pages' routes: one page per cluster, its etcd panel's reads, its presenter mode and the
presenter's fault controls.

Included by ``courses/urls.py`` without a namespace of its own, so the names are the ``courses``
namespace's: ``courses:cluster``, ``courses:etcd-keys``, ``courses:cluster-present``,
``courses:cluster-faults``.
"""

from __future__ import annotations

from django.urls import path

from courses.lab import views

urlpatterns = [
    path("lab/<slug:name>/", views.cluster, name="cluster"),
    path("lab/<slug:name>/etcd/", views.etcd_keys, name="etcd-keys"),
    path("lab/<slug:name>/present/", views.present, name="cluster-present"),
    path("lab/<slug:name>/faults/", views.cluster_faults, name="cluster-faults"),
]
