"""The landing page: what Kubelab is, and the clusters of the lab this visitor may watch.

htmx-ready in django-htmx's style: a request from htmx (``HX-Request: true``) gets only the fragment
it swaps in (the cluster list, which polls itself while clusters start); any other request gets the
whole page. The cluster pages are ``courses.lab.views``.
"""

from __future__ import annotations

import dataclasses

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from courses.classrooms.access import clusters_visible_to
from courses.htmx import is_htmx
from courses.lab.selectors import lab_summary


def landing(request: HttpRequest) -> HttpResponse:
    """What Kubelab is, and the clusters of the lab."""
    lab = lab_summary(data_dir=settings.KUBELAB_DATA_DIR, store_url=settings.KUBELAB_STORE)
    # Only the clusters this visitor may watch: the list must not tell anyone which others exist.
    visible = set(clusters_visible_to(request.user, [c.name for c in lab.clusters]))
    lab = dataclasses.replace(lab, clusters=tuple(c for c in lab.clusters if c.name in visible))
    context = {"lab": lab, "demo_cluster": settings.KUBELAB_DEMO_CLUSTER}
    template = "courses/_clusters.html" if is_htmx(request) else "courses/landing.html"
    return render(request, template, context)
