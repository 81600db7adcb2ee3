"""The landing page and the cluster pages: thin views over ``courses.selectors``.

htmx-ready in django-htmx's style: a request from htmx (``HX-Request: true``) gets only the fragment
it swaps in (the cluster list, which polls itself while clusters start); any other request gets the
whole page.
"""

from __future__ import annotations

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from courses.selectors import cluster_summary, lab_summary


def _is_htmx(request: HttpRequest) -> bool:
    return request.headers.get("HX-Request") == "true"


def landing(request: HttpRequest) -> HttpResponse:
    """What Kubelab is, and the clusters of the lab."""
    lab = lab_summary(data_dir=settings.KUBELAB_DATA_DIR, store_url=settings.KUBELAB_STORE)
    context = {"lab": lab, "demo_cluster": settings.KUBELAB_DEMO_CLUSTER}
    template = "courses/_clusters.html" if _is_htmx(request) else "courses/landing.html"
    return render(request, template, context)


def cluster(request: HttpRequest, name: str) -> HttpResponse:
    """One cluster: its state and its live topology (static/topology/, fed by the trace websocket)."""
    summary = cluster_summary(name, data_dir=settings.KUBELAB_DATA_DIR, store_url=settings.KUBELAB_STORE)
    if summary is None:
        raise Http404(f"no cluster named {name!r}")
    topology = {
        "cluster": summary.name,
        # Same origin; the trace consumer (controlplane.consumers) serves it.
        "socket": f"/ws/lab/{summary.name}/trace/",
        # The profile this process starts clusters with; the stream's hello says which is in force.
        "timing": settings.KUBELAB_TIMING_PROFILE,
    }
    return render(request, "courses/cluster.html", {"cluster": summary, "topology": topology})
