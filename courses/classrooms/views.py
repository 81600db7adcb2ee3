"""The classroom pages, thin views over ``courses.classrooms.services`` and ``selectors``.

- ``/classrooms/``: the classrooms one teaches (with a form to create one, for instructors) and
  attends, and a form to join one with its code;
- ``/classrooms/join/`` and ``/classrooms/join/<code>/`` (the link an instructor shares): the join
  form, filled in from the link; joining is a ``POST``, never a visit;
- ``/classrooms/<slug>/``: the instructor's dashboard: the join code, each student's step and progress
  per chapter and their sandbox (state, faults, a link to its live diagram), the fault controls and the
  classroom's log; ``students/`` is its table alone, which the page asks for again every few seconds
  (htmx);
- ``/classrooms/<slug>/faults/``: apply a fault of the catalogue to the chosen students' sandboxes
  and, if chosen, the classroom's shared cluster, or clear every fault of them; ``code/``: renew the
  join code or close joining; ``chapters-use/``: whether the chapter pages use each student's sandbox
  or the classroom's shared cluster
  (``courses.classrooms.shared``: a namespace per student there).

Only a classroom's instructors (and superusers) open its dashboard and its actions; anyone else gets
403, and the attempt is written to the classroom's log. Every instructor action is logged there too.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from asgiref.sync import sync_to_async
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils.translation import get_language, gettext, ngettext
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from controlplane.faults import catalogue
from courses.classrooms import selectors, services, shared
from courses.classrooms.models import SHARED, Classroom
from courses.engine import content
from courses.htmx import is_htmx
from courses.lab import presenter
from courses.sandboxes.models import Sandbox
from courses.sandboxes.services import SandboxUnavailable

logger = logging.getLogger(__name__)

#: The course a new classroom follows (the one course the lab ships).
COURSE = "control-plane"
#: Nodes of a student's sandbox (``courses.sandboxes``): what a fault's node parameter may name.
SANDBOX_NODES = 3
#: The fault form's value that chooses the classroom's shared cluster (beside students' account ids).
SHARED_TARGET = "shared"


def _course() -> content.Course | None:
    try:
        return content.load_course(COURSE)
    except content.CourseNotFound:
        return None


@login_required
@require_http_methods(["GET", "POST"])
def index(request: HttpRequest) -> HttpResponse:
    instructor = services.is_instructor(request.user)
    error = None
    name = ""
    chosen: list[str] = []
    if request.method == "POST":
        if not instructor:
            raise PermissionDenied
        name = request.POST.get("name", "")
        chosen = request.POST.getlist("chapter")
        try:
            classroom = services.create_classroom(
                user=request.user, name=name, course=COURSE, chapters=chosen
            )
        except services.ClassroomError as problem:
            error = str(problem)
        else:
            return HttpResponseRedirect(reverse("courses:classroom", args=[classroom.slug]))
    course = _course()
    context = {
        "instructor": instructor,
        "taught": list(services.taught_by(request.user)) if instructor else [],
        "attended": list(services.attended_by(request.user)),
        "chapters": [(c.slug, c.number, c.prose_for(get_language()).title) for c in course.chapters]
        if course
        else [],
        "error": error,
        "name": name,
        "chosen": chosen,
    }
    return render(request, "courses/classrooms/index.html", context, status=400 if error else 200)


@login_required
@require_http_methods(["GET", "POST"])
async def join(request: HttpRequest, code: str = "") -> HttpResponse:
    """The join form; joining also gives the student their namespace in the classroom's shared
    cluster, if it has one running here (``shared.joined``)."""
    user = await request.auser()
    request.user = user
    error = None
    if request.method == "POST":
        code = request.POST.get("code", "")
        try:
            classroom = await sync_to_async(services.join)(user=user, code=code)
        except services.InvalidJoinCode as problem:
            error = str(problem)
        else:
            if isinstance(user, AbstractBaseUser):  # (login_required let only signed-in users in)
                await shared.joined(classroom=classroom, user=user)
            return HttpResponseRedirect(reverse("courses:classrooms") + f"?joined={classroom.slug}")
    context = {"code": code, "error": error}
    status = 400 if error else 200
    return await sync_to_async(render)(request, "courses/classrooms/join.html", context, status=status)


def _taught(request: HttpRequest, slug: str) -> Classroom:
    """The classroom ``slug``, if the user teaches it; else 403, written to the classroom's log."""
    classroom = get_object_or_404(Classroom, slug=slug)
    if not services.teaches(request.user, classroom):
        services.log(classroom=classroom, actor=request.user, action="refused", detail=request.path)
        raise PermissionDenied
    return classroom


def _dashboard_context(
    request: HttpRequest, classroom: Classroom, board: selectors.Dashboard
) -> dict[str, Any]:
    lang = get_language()
    code = "zh-hans" if (lang or "").startswith("zh") else "en"
    kinds = [
        {
            "name": kind.name,
            # A label's parameters ({node}) are chosen beside it: shown as "…" in the list.
            "label": (kind.label.get(code) or kind.label["en"]).format(
                **{p.name: "…" for p in kind.parameters}
            ),
            "summary": kind.summary.get(code) or kind.summary["en"],
            "lasting": kind.lasting,
        }
        for kind in catalogue.CATALOGUE.values()
    ]
    join_link = (
        request.build_absolute_uri(reverse("courses:classroom-join-code", args=[classroom.join_code]))
        if classroom.join_code
        else ""
    )
    asked = request.GET.getlist("student")
    chosen: set[int | str] = {int(c) for c in asked if c.isdigit()}
    if SHARED_TARGET in asked:
        chosen.add(SHARED_TARGET)
    return {
        "chosen": chosen,
        "board": board,
        "classroom": classroom,
        "kinds": kinds,
        "nodes": [f"node-{n}" for n in range(1, SANDBOX_NODES + 1)],
        "components": ["scheduler", "controller-manager"]
        + [f"kube-proxy:node-{n}" for n in range(1, SANDBOX_NODES + 1)],
        "join_link": join_link,
    }


async def _dashboard_page(request: HttpRequest, slug: str, template: str) -> HttpResponse:
    """The dashboard, or its students' table: the database read in a worker thread, the sandboxes on
    the event loop (where the lab lives), the template rendered in a worker thread again."""
    request.user = await request.auser()
    classroom = await sync_to_async(_taught)(request, slug)
    board = await sync_to_async(selectors.dashboard)(classroom=classroom, lang=get_language())
    board = selectors.with_clusters(board)
    context = _dashboard_context(request, classroom, board)
    context["shared_cluster"] = await sync_to_async(shared.shared_cluster_of)(classroom)
    return await sync_to_async(render)(request, template, context)


@login_required
@require_GET
async def dashboard(request: HttpRequest, slug: str) -> HttpResponse:
    return await _dashboard_page(request, slug, "courses/classrooms/dashboard.html")


@login_required
@require_GET
async def students(request: HttpRequest, slug: str) -> HttpResponse:
    return await _dashboard_page(request, slug, "courses/classrooms/_students.html")


@login_required
@require_POST
def code(request: HttpRequest, slug: str) -> HttpResponse:
    classroom = _taught(request, slug)
    if request.POST.get("action") == "close":
        services.close_joining(classroom=classroom, user=request.user)
    else:
        services.renew_join_code(classroom=classroom, user=request.user)
    return HttpResponseRedirect(reverse("courses:classroom", args=[classroom.slug]))


@login_required
@require_POST
async def chapters_use(request: HttpRequest, slug: str) -> HttpResponse:
    """Switch which cluster the classroom's chapter pages use (``use``: ``sandbox`` or ``shared``).
    Choosing the shared cluster makes it if need be and gives every student their namespace there.
    Logged; for htmx, the control again with what happened."""
    user = await request.auser()
    request.user = user
    classroom = await sync_to_async(_taught)(request, slug)
    use = request.POST.get("use", "")
    ok, status = True, 200
    try:
        await sync_to_async(services.set_chapters_use)(classroom=classroom, user=user, use=use)
    except services.ClassroomError as problem:
        message, ok, status = str(problem), False, 400
    else:
        if use == SHARED:
            try:
                cluster, count = await shared.create_shared_cluster(classroom=classroom, user=user)
            except SandboxUnavailable as problem:
                message, ok = str(problem), False
            else:
                message = ngettext(
                    "The chapters now use the shared cluster %(cluster)s, where %(count)d student has "
                    "a namespace.",
                    "The chapters now use the shared cluster %(cluster)s, where %(count)d students have "
                    "a namespace each.",
                    count,
                ) % {"cluster": cluster, "count": count}
        else:
            message = gettext("The chapters now use each student's own sandbox.")
    if not is_htmx(request):
        return HttpResponseRedirect(reverse("courses:classroom", args=[classroom.slug]))
    context = {
        "classroom": classroom,
        "shared_cluster": await sync_to_async(shared.shared_cluster_of)(classroom),
        "message": message,
        "ok": ok,
    }
    template = "courses/classrooms/_chapters_use.html"
    return await sync_to_async(render)(request, template, context, status=status)


def _delay(post: Any) -> float:
    """Seconds from now the fault starts (``after``; empty: now), at most the longest a fault lasts."""
    text = post.get("after", "").strip()
    if not text:
        return 0.0
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds <= catalogue.MAX_DURATION:
        raise presenter.BadFaultRequest(
            gettext("Start it after 0 to %(most)d seconds.") % {"most": catalogue.MAX_DURATION}
        )
    return seconds


def _targets(classroom: Classroom, chosen: list[str]) -> list[tuple[str, str]]:
    """(who, cluster) of what the instructor chose: the classroom's shared cluster (``shared``), if
    it has one, first; then the chosen students of ``classroom`` that have a sandbox, by username."""
    ids = {int(c) for c in chosen if c.isdigit()}
    rows = Sandbox.objects.filter(user__classrooms_attended=classroom, user_id__in=ids).values_list(
        "user__username", "cluster"
    )
    targets = sorted(rows)
    shared_cluster = shared.shared_cluster_of(classroom) if SHARED_TARGET in chosen else None
    if shared_cluster is not None:
        targets.insert(0, (gettext("the shared cluster"), shared_cluster))
    return targets


def _logged(targets: list[tuple[str, str]]) -> str:
    """Whom a fault action was for, as the log keeps it: usernames, and the shared cluster by name
    (its label is in the instructor's language; the log is read in any)."""
    return ", ".join(
        cluster if cluster.startswith(shared.CLUSTER_PREFIX) else who for who, cluster in targets
    )


@login_required
@require_POST
async def faults(request: HttpRequest, slug: str) -> HttpResponse:
    user = await request.auser()
    request.user = user
    classroom = await sync_to_async(_taught)(request, slug)
    action = request.POST.get("action", "apply")
    targets = await sync_to_async(_targets)(classroom, request.POST.getlist("student"))
    reason = services.fault_reason(user=user, classroom=classroom)
    outcomes: list[tuple[str, str, bool]] = []
    if not targets:
        outcomes.append(("", gettext("Choose at least one student with a cluster."), False))
    elif action == "clear-all":

        async def clear(username: str, cluster: str) -> tuple[str, str, bool]:
            try:
                said = await presenter.clear_all(cluster=cluster, reason=reason, actor=user.get_username())
                return username, said, True
            except presenter.FaultActionError as problem:
                return username, str(problem), False

        outcomes = list(await asyncio.gather(*(clear(u, c) for u, c in targets)))
        await sync_to_async(services.log)(
            classroom=classroom, actor=user, action="faults-cleared", detail=_logged(targets)
        )
    else:
        try:
            # Every sandbox has the same nodes: one check for all, worded for the first student's.
            spec = presenter.read_fault(request.POST, cluster=targets[0][1], nodes=SANDBOX_NODES)
            delay = _delay(request.POST)
        except presenter.BadFaultRequest as problem:
            outcomes.append(("", str(problem), False))
        else:
            lang = get_language()

            async def apply(username: str, cluster: str) -> tuple[str, str, bool]:
                try:
                    said = await presenter.apply(
                        cluster=cluster,
                        fault=spec,
                        reason=reason,
                        lang=lang,
                        delay=delay,
                        actor=user.get_username(),
                    )
                except presenter.FaultActionError as problem:
                    return username, str(problem), False
                return username, said, True

            outcomes = list(await asyncio.gather(*(apply(u, c) for u, c in targets)))
            written = ", ".join(f"{k}={v}" for k, v in spec.as_written().items())
            if delay:
                written += f", after={delay:g}s"
            await sync_to_async(services.log)(
                classroom=classroom,
                actor=user,
                action="fault-applied",
                detail=f"{written} -> {_logged(targets)}",
            )
    context = {"outcomes": outcomes, "classroom": classroom}
    if is_htmx(request):
        return await sync_to_async(render)(request, "courses/classrooms/_fault_outcomes.html", context)
    return HttpResponseRedirect(reverse("courses:classroom", args=[classroom.slug]))
