"""The landing page and the cluster pages: thin views over ``courses.selectors``.

htmx-ready in django-htmx's style: a request from htmx (``HX-Request: true``) gets only the fragment
it swaps in (the cluster list, which polls itself while clusters start); any other request gets the
whole page.

A cluster's page and its etcd panel are for those who may see the cluster (``courses.access``, the
rule the trace socket follows too), asked before the cluster is looked up: someone refused gets 403
whether the cluster exists or not.
"""

from __future__ import annotations

import dataclasses

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from controlplane.diagram import DiagramObjects, read_objects
from controlplane.runtime import ClusterState, active_lab
from controlplane.store.errors import Compacted, FutureRevision, InvalidRequest, UnknownCluster
from courses.access import auser_may_view, clusters_visible_to, user_may_view
from courses.etcdpanel import StoreSnapshot, read_key_states, read_keys
from courses.selectors import cluster_summary, lab_summary


def _is_htmx(request: HttpRequest) -> bool:
    return request.headers.get("HX-Request") == "true"


def landing(request: HttpRequest) -> HttpResponse:
    """What Kubelab is, and the clusters of the lab."""
    lab = lab_summary(data_dir=settings.KUBELAB_DATA_DIR, store_url=settings.KUBELAB_STORE)
    # Only the clusters this visitor may watch: the list must not tell anyone which others exist.
    visible = set(clusters_visible_to(request.user, [c.name for c in lab.clusters]))
    lab = dataclasses.replace(lab, clusters=tuple(c for c in lab.clusters if c.name in visible))
    context = {"lab": lab, "demo_cluster": settings.KUBELAB_DEMO_CLUSTER}
    template = "courses/_clusters.html" if _is_htmx(request) else "courses/landing.html"
    return render(request, template, context)


def cluster(request: HttpRequest, name: str) -> HttpResponse:
    """One cluster: its state and its live topology (static/topology/, fed by the trace websocket)."""
    if not user_may_view(request.user, name):
        reason = "You may not watch" if request.user.is_authenticated else "Sign in to watch"
        return render(request, "courses/refused.html", {"message": f"{reason} cluster {name!r}."}, status=403)
    summary = cluster_summary(name, data_dir=settings.KUBELAB_DATA_DIR, store_url=settings.KUBELAB_STORE)
    if summary is None:
        raise Http404(f"no cluster named {name!r}")
    topology = {
        "cluster": summary.name,
        # Same origin; the trace consumer (controlplane.consumers) serves it.
        "socket": f"/ws/lab/{summary.name}/trace/",
        # The profile this process starts clusters with; the stream's hello says which is in force.
        "timing": settings.KUBELAB_TIMING_PROFILE,
        # The etcd panel's reads (``etcd_keys`` below).
        "etcd": f"/lab/{summary.name}/etcd/",
    }
    return render(request, "courses/cluster.html", {"cluster": summary, "topology": topology})


def _refusal(status: int, message: str, **fields: object) -> JsonResponse:
    response = JsonResponse({"error": message, **fields}, status=status)
    response["Cache-Control"] = "no-store"
    return response


@require_GET
async def etcd_keys(request: HttpRequest, name: str) -> JsonResponse:
    """The etcd panel's reads (``courses.etcdpanel``), as JSON, for whoever may watch the cluster's trace.

    ``?revision=N`` reads the store as it was at revision N (410 once compacted); ``?key=K`` (repeated)
    answers only those keys, with their values; ``?prefix=P`` narrows the list (default ``/registry/``);
    ``?objects=diagram`` answers the Nodes and Pods decoded for the rewound diagram instead of keys.
    """
    user = await request.auser()
    if not await auser_may_view(user, name):
        signed_in = user.is_authenticated
        return _refusal(403, f"{'you may not' if signed_in else 'sign in to'} look into cluster {name!r}")
    lab = active_lab()
    try:
        if lab is None:
            raise UnknownCluster(name)
        cluster = lab.cluster(name)
    except UnknownCluster:
        return _refusal(404, f"cluster {name!r} is not running in this process")
    if cluster.state is not ClusterState.RUNNING:
        return _refusal(503, f"cluster {name!r} is {cluster.state.value}")
    revision_text = request.GET.get("revision", "")
    if revision_text and not (revision_text.isdigit() and int(revision_text) > 0):
        return _refusal(400, f"revision must be a positive integer, not {revision_text!r}")
    revision = int(revision_text) if revision_text else None
    keys = request.GET.getlist("key")
    snapshot: StoreSnapshot | DiagramObjects
    try:
        if request.GET.get("objects") == "diagram":
            snapshot = await read_objects(cluster.store, revision=revision)
        elif keys:
            snapshot = await read_key_states(cluster.store, keys, revision=revision)
        else:
            snapshot = await read_keys(
                cluster.store, prefix=request.GET.get("prefix", "/registry/"), revision=revision
            )
    except Compacted as error:
        message = (
            f"revision {error.revision} is compacted: the store keeps history from revision"
            f" {error.compact_revision} on"
        )
        return _refusal(410, message, compacted=error.compact_revision)
    except FutureRevision as error:
        return _refusal(
            400, f"revision {error.revision} is not written yet (current is {error.current_revision})"
        )
    except InvalidRequest as error:
        return _refusal(400, str(error))
    response = JsonResponse(snapshot.as_json(name))
    response["Cache-Control"] = "no-store"
    return response
