"""The manifest form's views: thin, over ``services.submit``.

``POST manifests/submit/`` (``courses:manifest-submit``) takes the form's fields (``manifest``,
``action``: ``dry-run``, ``apply`` or ``delete``, and optionally ``as``, ``course`` and ``chapter``),
makes sure the student's cluster runs (their sandbox, ``courses.sandboxes.services.ensure_sandbox``, or
their classroom's shared cluster, ``courses.classrooms.shared``), submits, and
answers in django-htmx's style: a request from htmx gets only the result partial
(``_result.html``), swapped into ``#manifest-result``; any other (the form without JavaScript) gets the
whole page again, the text kept, with the result under it. Every answer is a 200 with a result in
words, refusals included, because htmx swaps only successful answers into the page.

``as`` (impersonation) is accepted only if the chapter named by ``course`` and ``chapter`` lists the
name in its ``impersonate``; the API server then decides with RBAC whether the student may act as it.
The field manager of an apply is the student's username.

``GET manifests/`` (``courses:manifests``) is the form on a page of its own, so it works outside a
chapter too. Both are for signed-in students only, and the POST needs the CSRF token (the form's
hidden field, or htmx's ``X-CSRFToken`` header from ``base.html``).
"""

from __future__ import annotations

import logging
from typing import Any

from asgiref.sync import sync_to_async
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.urls import NoReverseMatch, reverse
from django.utils.translation import gettext
from django.views.decorators.http import require_GET, require_POST

from courses.classrooms import shared
from courses.engine.content import ContentError, CourseNotFound, load_course
from courses.htmx import is_htmx
from courses.manifests import services
from courses.manifests.results import ACTIONS, Action, SubmitResult
from courses.sandboxes import services as sandboxes

logger = logging.getLogger(__name__)

#: What the form holds when it is opened on its own page.
EXAMPLE = """apiVersion: v1
kind: ConfigMap
metadata:
  name: example
data:
  greeting: hello
"""


def _allowed_as(course: str, chapter: str) -> tuple[str, ...]:
    """The users the chapter lets the form act as (none outside a chapter, or for a chapter not found)."""
    if not course or not chapter:
        return ()
    try:
        found = load_course(course)
    except (CourseNotFound, ContentError):
        return ()
    return next((c.impersonate for c in found.chapters if c.slug == chapter), ())


def _chapter_url(course: str, chapter: str) -> str | None:
    """The chapter page the form was posted from (None outside a chapter, or for slugs that are not)."""
    if not course or not chapter:
        return None
    try:
        return reverse("courses:chapter", args=[course, chapter])
    except NoReverseMatch:
        return None


@login_required
@require_GET
async def page(request: HttpRequest) -> HttpResponse:
    """The manifest form on a page of its own."""
    request.user = await request.auser()
    context = {"manifest": EXAMPLE, "result": None, "back_url": None}
    return render(request, "courses/manifests/page.html", context)


@login_required
@require_POST
async def submit(request: HttpRequest) -> HttpResponse:
    """Dry-run, apply or delete the form's manifest in the student's sandbox."""
    user = await request.auser()
    request.user = user
    if not isinstance(user, AbstractBaseUser):  # (login_required let only signed-in users in)
        raise PermissionDenied
    too_large = False
    try:
        form = request.POST
    except RequestDataTooBig:  # past DATA_UPLOAD_MAX_MEMORY_SIZE (config/settings.py)
        form, too_large = QueryDict(), True
    text = None if too_large else form.get("manifest", "")
    course, chapter = form.get("course", ""), form.get("chapter", "")
    chosen = form.get("as", "").strip() or None
    action = form.get("action", "")
    allowed = await sync_to_async(_allowed_as)(course, chapter)
    clusters = await shared.cluster_service(user=user, course=course or None, chapter=chapter or None)
    result = await _result(user, clusters, text=text, action=action, chosen=chosen, allowed=allowed)
    context: dict[str, Any] = {
        "result": result,
        "manifest": text or "",
        "course": course,
        "chapter": chapter,
        "impersonate": allowed,
        "selected_as": chosen,
        "back_url": _chapter_url(course, chapter),
    }
    template = "courses/manifests/_result.html" if is_htmx(request) else "courses/manifests/page.html"
    return render(request, template, context)


async def _result(
    user: AbstractBaseUser,
    clusters: Any,
    *,
    text: str | None,
    action: str,
    chosen: str | None,
    allowed: tuple[str, ...],
) -> SubmitResult:
    """What the submission came to, or why it was not made. ``clusters``: the student's sandbox service,
    or the classroom's shared cluster (``courses.classrooms.shared.cluster_service``)."""
    if text is None:
        summary = gettext("The form was too large to read: a manifest may be at most 3 MiB.")
        return SubmitResult(action="apply", ok=False, summary=summary, refused=True)
    if action not in ACTIONS:
        summary = gettext("Choose what to do with the manifest: dry run, apply or delete.")
        return SubmitResult(action="dry-run", ok=False, summary=summary, refused=True)
    checked: Action = action  # (one of ACTIONS: just checked)
    if chosen is not None and chosen not in allowed:
        summary = gettext("You cannot act as %(user)s here: this chapter does not offer it.")
        summary %= {"user": chosen}
        return SubmitResult(action=checked, ok=False, summary=summary, refused=True)
    try:
        access = await clusters.ensure_sandbox(user=user)
    except sandboxes.SandboxUnavailable as error:
        return SubmitResult(action=checked, ok=False, summary=str(error))
    except Exception:
        logger.exception("the sandbox of %s could not be reached for the manifest form", user)
        summary = gettext(
            "Could not submit the manifest: your cluster could not be reached (this has been logged). "
            "Try again in a moment."
        )
        return SubmitResult(action=checked, ok=False, summary=summary)
    manager = user.get_username()
    return await services.submit(
        access=access, text=text, action=checked, field_manager=manager, impersonate=chosen
    )
