"""The cluster pages: a cluster's live topology and its etcd panel's reads, thin views over
``courses.lab.selectors``.

A cluster's page and its etcd panel are for those who may see the cluster (``courses.classrooms.access``,
the rule the trace socket follows too), asked before the cluster is looked up: someone refused gets 403
whether the cluster exists or not.

The page is composed of the ``lab`` template tags (``courses/templatetags/lab.py``: the topology, the
etcd panel), which a chapter page can compose as well.
"""

from __future__ import annotations

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from courses import gateway
from courses.classrooms.access import auser_may_view, user_may_view
from courses.lab import selectors
from courses.lab.etcdpanel import StoreSnapshot


def cluster(request: HttpRequest, name: str) -> HttpResponse:
    """One cluster: its state and its live topology (static/topology/, fed by the trace websocket)."""
    if not user_may_view(request.user, name):
        if request.user.is_authenticated:
            message = _("You may not watch cluster %(name)s.") % {"name": repr(name)}
        else:
            message = _("Sign in to watch cluster %(name)s.") % {"name": repr(name)}
        return render(request, "courses/refused.html", {"message": message}, status=403)
    summary = selectors.cluster_summary(
        name=name, data_dir=settings.KUBELAB_DATA_DIR, store_url=settings.KUBELAB_STORE
    )
    if summary is None:
        raise Http404(f"no cluster named {name!r}")
    return render(request, "courses/lab/cluster.html", {"cluster": summary})


def _refusal(status: int, message: str, **fields: object) -> JsonResponse:
    response = JsonResponse({"error": message, **fields}, status=status)
    response["Cache-Control"] = "no-store"
    return response


@require_GET
async def etcd_keys(request: HttpRequest, name: str) -> JsonResponse:
    """The etcd panel's reads (``courses.lab.etcdpanel``), as JSON, for whoever may watch the cluster's trace.

    ``?revision=N`` reads the store as it was at revision N (410 once compacted); ``?key=K`` (repeated)
    answers only those keys, with their values; ``?prefix=P`` narrows the list (default ``/registry/``);
    ``?objects=diagram`` answers the Nodes and Pods decoded for the rewound diagram instead of keys.
    """
    user = await request.auser()
    if not await auser_may_view(user, name):
        if user.is_authenticated:
            return _refusal(403, _("you may not look into cluster %(name)s") % {"name": repr(name)})
        return _refusal(403, _("sign in to look into cluster %(name)s") % {"name": repr(name)})
    try:
        gateway.require_running(cluster=name)
        revision_text = request.GET.get("revision", "")
        if revision_text and not (revision_text.isdigit() and int(revision_text) > 0):
            message = _("revision must be a positive integer, not %(text)s") % {"text": repr(revision_text)}
            return _refusal(400, message)
        revision = int(revision_text) if revision_text else None
        keys = request.GET.getlist("key")
        snapshot: StoreSnapshot | gateway.DiagramObjects
        if request.GET.get("objects") == "diagram":
            snapshot = await selectors.diagram_objects(cluster=name, revision=revision)
        elif keys:
            snapshot = await selectors.etcd_key_states(cluster=name, keys=keys, revision=revision)
        else:
            prefix = request.GET.get("prefix", "/registry/")
            snapshot = await selectors.etcd_keys(cluster=name, prefix=prefix, revision=revision)
    except gateway.NotServedHere:
        return _refusal(404, _("cluster %(name)s is not running in this process") % {"name": repr(name)})
    except gateway.NotRunning as error:
        return _refusal(503, _("cluster %(name)s is %(state)s") % {"name": repr(name), "state": error.state})
    except gateway.Compacted as error:
        message = _(
            "revision %(revision)d is compacted: the store keeps history from revision %(compacted)d on"
        ) % {"revision": error.revision, "compacted": error.compact_revision}
        return _refusal(410, message, compacted=error.compact_revision)
    except gateway.FutureRevision as error:
        message = _("revision %(revision)d is not written yet (current is %(current)d)") % {
            "revision": error.revision,
            "current": error.current_revision,
        }
        return _refusal(400, message)
    except gateway.InvalidRequest as error:
        return _refusal(400, str(error))
    response = JsonResponse(snapshot.as_json(name))
    response["Cache-Control"] = "no-store"
    return response
