"""The sandbox pages, thin views over ``courses.sandboxes.services``: a student's own cluster (its
name, state and timing, a link to its live topology), its kubeconfig as a download (the classroom's
shared cluster's, in their namespace, while their instructor has the chapters use it), and its reset.

Every page is the signed-in student's own: a view never takes a cluster name from the URL or a form,
it finds the student's sandbox from their account. Resetting destroys everything in the cluster, so
it asks first: ``GET sandbox/reset/`` is the question (a page, or only its form for htmx), ``POST``
with the CSRF token is the answer.

The views are asynchronous (the lab runs on the same event loop); the user is resolved once with
``request.auser()`` and set on the request, so that templates read it without a database query on
the event loop.
"""

from __future__ import annotations

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from courses.classrooms import shared
from courses.htmx import is_htmx
from courses.sandboxes import selectors, services
from courses.sandboxes.identities import sandbox_name


async def _student(request: HttpRequest) -> tuple[AbstractBaseUser, int]:
    """The signed-in user (``login_required`` let only them in) and their account id, resolved once."""
    user = await request.auser()
    request.user = user
    if not isinstance(user, AbstractBaseUser) or user.pk is None:
        raise PermissionDenied
    return user, int(user.pk)


def _unavailable(request: HttpRequest, error: services.SandboxUnavailable) -> HttpResponse:
    return render(request, "courses/sandboxes/unavailable.html", {"message": str(error)}, status=503)


@login_required
@require_GET
async def status(request: HttpRequest) -> HttpResponse:
    """The student's sandbox: started (or woken) if need be, then its name, state and timing."""
    user, user_id = await _student(request)
    try:
        access = await services.ensure_sandbox(user=user)
    except services.SandboxUnavailable as error:
        return _unavailable(request, error)
    summary = await selectors.sandbox_summary(user_id=user_id)
    clusters = await shared.cluster_service(user=user)
    context = {
        "sandbox": summary,
        "access": access,
        "reset_done": request.GET.get("reset") == "done",
        # The classroom's shared cluster the chapters use now (the kubeconfig download's), or None.
        "shared_cluster": getattr(clusters, "cluster", None),
        "shared_namespace": shared.student_namespace(username=user.get_username(), user_id=user_id),
    }
    return render(request, "courses/sandboxes/status.html", context)


@login_required
@require_GET
async def kubeconfig(request: HttpRequest) -> HttpResponse:
    """The student's kubeconfig (their own token), as a file to save: for their sandbox, or, while a
    classroom of theirs has its chapters use its shared cluster, for that one, their namespace the
    context's (``?of=sandbox``: their sandbox's all the same)."""
    user, user_id = await _student(request)
    clusters = services if request.GET.get("of") == "sandbox" else await shared.cluster_service(user=user)
    cluster = getattr(clusters, "cluster", None) or sandbox_name(user_id=user_id)
    try:
        document = await clusters.kubeconfig_for(user=user)
    except services.SandboxUnavailable as error:
        return _unavailable(request, error)
    response = HttpResponse(document, content_type="application/yaml; charset=utf-8")
    filename = f"kubeconfig-{cluster}.yaml"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["Cache-Control"] = "no-store"  # it carries a credential
    return response


@login_required
@require_http_methods(["GET", "POST"])
async def reset(request: HttpRequest) -> HttpResponse:
    """GET: ask whether to reset (a page, or only the question for htmx). POST: reset, then back to
    the sandbox page (htmx is told where with ``HX-Redirect``)."""
    user, user_id = await _student(request)
    if request.method == "GET":
        context = {"cluster": sandbox_name(user_id=user_id)}
        partial = is_htmx(request)
        template = "courses/sandboxes/_reset_confirm.html" if partial else "courses/sandboxes/reset.html"
        return render(request, template, context)
    try:
        await services.reset_sandbox(user=user)
    except services.SandboxUnavailable as error:
        return _unavailable(request, error)
    done = reverse("courses:sandbox") + "?reset=done"
    if is_htmx(request):
        response = HttpResponse(status=204)
        response["HX-Redirect"] = done
        return response
    return HttpResponseRedirect(done, status=303)
