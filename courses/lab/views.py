"""The cluster pages: a cluster's live topology and its etcd panel's reads, thin views over
``courses.lab.selectors``; and its presenter mode (the live diagram full screen, driven by the keyboard)
with the presenter's fault controls, over ``courses.lab.presenter``.

A cluster's page, its presenter mode and its etcd panel are for those who may see the cluster
(``courses.classrooms.access``, the rule the trace socket follows too), asked before the cluster is
looked up: someone refused gets 403 whether the cluster exists or not. Its faults are for those who
may break it (``user_may_break``: staff, and instructors for their classrooms' clusters and their
students' sandboxes); the fault panel is rendered for them only.

The page is composed of the ``lab`` template tags (``courses/templatetags/lab.py``: the topology, the
etcd panel), which a chapter page can compose as well.
"""

from __future__ import annotations

from channels.db import database_sync_to_async
from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from courses import gateway
from courses.classrooms.access import (
    auser_may_break,
    auser_may_read_store,
    auser_may_view,
    user_may_break,
    user_may_view,
    user_trace_scope,
)
from courses.lab import presenter, selectors
from courses.lab.etcdpanel import StoreSnapshot


def _refused_page(request: HttpRequest, name: str) -> HttpResponse:
    if request.user.is_authenticated:
        message = _("You may not watch cluster %(name)s.") % {"name": repr(name)}
    else:
        message = _("Sign in to watch cluster %(name)s.") % {"name": repr(name)}
    return render(request, "courses/refused.html", {"message": message}, status=403)


def _summary(name: str) -> selectors.ClusterSummary:
    summary = selectors.cluster_summary(
        name=name, data_dir=settings.KUBELAB_DATA_DIR, store_url=settings.KUBELAB_STORE
    )
    if summary is None:
        raise Http404(f"no cluster named {name!r}")
    return summary


def cluster(request: HttpRequest, name: str) -> HttpResponse:
    """One cluster: its state and its live topology (static/topology/, fed by the trace websocket)."""
    if not user_may_view(request.user, name):
        return _refused_page(request, name)
    return render(request, "courses/lab/cluster.html", {"cluster": _summary(name)})


@require_GET
def present(request: HttpRequest, name: str) -> HttpResponse:
    """One cluster's live diagram full screen, in large type, driven by the keyboard
    (static/topology/present.js); with the fault panel for those who may break the cluster."""
    if not user_may_view(request.user, name):
        return _refused_page(request, name)
    summary = _summary(name)
    panel = (
        presenter.fault_panel(cluster=name, lang=get_language())
        if user_may_break(request.user, name)
        else None
    )
    return render(request, "courses/lab/present.html", {"cluster": summary, "panel": panel})


def _answer(status: int, *, ok: bool, message: str) -> JsonResponse:
    response = JsonResponse({"ok": ok, "message": message}, status=status)
    response["Cache-Control"] = "no-store"
    return response


@require_POST
async def cluster_faults(request: HttpRequest, name: str) -> JsonResponse:
    """The presenter's fault controls: ``action=apply`` (``kind``, its parameters such as ``node``,
    optional ``for`` seconds) or ``action=clear-all``, for whoever may break the cluster. Answers
    ``{ok, message}``, the message in the user's language: 200 once done, 400 for a fault or action
    that is not one, 403 for someone who may not, 404 when this process does not run the cluster, 409
    when the lab refused."""
    user = await request.auser()
    if not await auser_may_break(user, name):
        await database_sync_to_async(presenter.record_refusal)(cluster=name, actor=user, path=request.path)
        if user.is_authenticated:
            return _answer(
                403, ok=False, message=_("You may not break cluster %(name)s.") % {"name": repr(name)}
            )
        return _answer(403, ok=False, message=_("Sign in to break cluster %(name)s.") % {"name": repr(name)})
    try:
        message = await presenter.perform(cluster=name, form=request.POST, actor=user, lang=get_language())
    except presenter.BadFaultRequest as problem:
        return _answer(400, ok=False, message=str(problem))
    except presenter.ClusterNotHere as problem:
        return _answer(404, ok=False, message=str(problem))
    except presenter.FaultNotDone as problem:
        return _answer(409, ok=False, message=str(problem))
    return _answer(200, ok=True, message=message)


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
    # The rewound diagram's nodes and pods are what the live diagram shows (scoped as its trace is,
    # ``controlplane/trace/scope.py``); the store's keys and values may be more than the viewer may
    # read through the API (a shared cluster's).
    diagram = request.GET.get("objects") == "diagram"
    if not await (auser_may_view(user, name) if diagram else auser_may_read_store(user, name)):
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
    answer = snapshot.as_json(name)
    if diagram and (scope := await database_sync_to_async(user_trace_scope)(user, name)) is not None:
        answer["objects"] = scope.objects(answer["objects"])
    response = JsonResponse(answer)
    response["Cache-Control"] = "no-store"
    return response
