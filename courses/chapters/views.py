"""The course pages: the list of courses, a course's chapters, and a chapter beside the live cluster.

Thin views over the content (``courses.engine.content``), the student's progress
(``courses.progress.services``) and their sandbox (``courses.sandboxes.services``). htmx-ready in
django-htmx's style: a hint or the solution asked for by htmx gets only the fragment it swaps in.

A visitor without an account can read every chapter and watches the demo cluster beside it; the
form, the console and the checks are for students, on their own sandbox, or, when their instructor
chose it, in their namespace of their classroom's shared cluster (``courses.classrooms.shared``: the
page then says so, and what is refused there). The chapter page never waits
for the sandbox: it renders at once, and its socket (``courses.chapters.consumer``) starts the sandbox
and says when it is ready, with the expected wait meanwhile.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import get_language, gettext
from django.views.decorators.http import require_GET, require_POST

from courses.chapters import hints as hint_rules
from courses.chapters.selectors import (
    ChapterView,
    chapter_view,
    course_views,
    find_chapter,
    find_course,
)
from courses.classrooms import shared
from courses.classrooms.access import user_may_view
from courses.engine import content
from courses.htmx import is_htmx
from courses.lab import selectors as lab_selectors
from courses.progress import services as progress


@require_GET
def course_list(request: HttpRequest) -> HttpResponse:
    """Every course, with the student's progress in each."""
    return render(request, "courses/chapters/course_list.html", {"courses": course_views(user=request.user)})


@require_GET
def course_detail(request: HttpRequest, course: str) -> HttpResponse:
    """One course: its chapters, each with the student's progress and where to resume."""
    found = find_course(course)
    views = [v for v in course_views(user=request.user) if v.slug == found.slug]
    return render(request, "courses/chapters/course_detail.html", {"course": views[0]})


@require_GET
def chapter(request: HttpRequest, course: str, chapter: str) -> HttpResponse:
    """A chapter's text beside the live topology; the step from ``?step=`` or where the student was."""
    view = chapter_view(
        user=request.user,
        course=course,
        chapter=chapter,
        step=request.GET.get("step"),
        language=get_language(),
    )
    if request.user.is_authenticated:
        progress.record_open(
            user=request.user, course=view.course.slug, chapter=view.chapter.slug, step=view.step_id
        )
    context: dict[str, Any] = {
        "view": view,
        "demo": _demo_topology(request, view),
        "chapter_config": _page_config(request, view),
        "shared": _shared_cluster(request, view),
    }
    return render(request, "courses/chapters/chapter.html", context)


def _shared_cluster(request: HttpRequest, view: ChapterView) -> dict[str, Any] | None:
    """The classroom's shared cluster the student's page works in (its name, their namespace, and the
    steps that need rights they lack there), or None: their own sandbox."""
    user = request.user
    if not user.is_authenticated or user.pk is None:
        return None
    cluster = shared.shared_cluster_for(
        user_id=int(user.pk), course=view.course.slug, chapter=view.chapter.slug
    )
    if cluster is None:
        return None
    namespace = shared.student_namespace(username=user.get_username(), user_id=int(user.pk))
    # Chapters declare no rights they need; a fault is the one thing sure to be refused there (it acts
    # on the whole cluster). Anything else cluster-wide the API server refuses in place (403).
    faults = {
        s.spec.id
        for s in view.steps
        if any(a.kind == "fault" for a in s.actions) or (s.spec.solution and s.spec.solution.faults)
    }
    return {"cluster": cluster, "namespace": namespace, "fault_steps": faults}


def _page_config(request: HttpRequest, view: ChapterView) -> dict[str, Any]:
    """What static/courses/chapter.js reads to start (the page's ``#chapter-config`` JSON)."""
    signed_in = bool(request.user.is_authenticated)
    kwargs = {"course": view.course.slug, "chapter": view.chapter.slug}
    return {
        "signedIn": signed_in,
        "student": f"student:{request.user.get_username()}" if signed_in else None,
        "socket": f"/ws/course/{view.course.slug}/{view.chapter.slug}/steps/" if signed_in else None,
        "topology": reverse("courses:chapter-topology", kwargs=kwargs) if signed_in else None,
        "current": view.step_id,
        "steps": [step_config(s.spec) for s in view.steps],
        "messages": {
            "passed": gettext("Passed."),
            "failing": gettext("Not yet:"),
            "unknown": gettext("The check could not look at your cluster just now; it will try again."),
            "pending": gettext("Not done yet: the check runs as you work."),
            "run": gettext("Run"),
            "jump": gettext(
                "Start here? Your cluster is reset (emptied) and the solutions of the steps before this one "
                "run on it. Your progress is kept."
            ),
            "refused": gettext("This page may not use that cluster."),
        },
    }


def step_config(step: Any) -> dict[str, Any]:
    """A step's structure as the page needs it: what it points at and the commands it offers."""
    highlight = step.highlight
    return {
        "id": step.id,
        "highlight": {
            "nodes": list(getattr(highlight, "nodes", ()) or ()),
            "edges": [list(edge) for edge in (getattr(highlight, "edges", ()) or ())],
        },
        "narration": list(step.narration or ()),
        "timeline": {"speed": step.timeline.speed, "at": step.timeline.at} if step.timeline else {},
        "actions": [{"kubectl": a.kubectl} for a in step.actions if getattr(a, "kubectl", None)],
        "editor": step.editor,
    }


def _demo_topology(request: HttpRequest, view: ChapterView) -> lab_selectors.ClusterSummary | None:
    """The demo cluster a visitor without an account watches beside the text (None: none to watch)."""
    if request.user.is_authenticated:
        return None
    demo = settings.KUBELAB_DEMO_CLUSTER
    if not demo or not user_may_view(request.user, demo):
        return None
    return lab_selectors.cluster_summary(
        name=demo, data_dir=settings.KUBELAB_DATA_DIR, store_url=settings.KUBELAB_STORE
    )


@require_GET
async def sandbox_topology(request: HttpRequest, course: str, chapter: str) -> HttpResponse:
    """The topology of the student's cluster (their sandbox, or their classroom's shared cluster), the
    fragment the chapter page mounts once it runs."""
    user = await request.auser()
    if not user.is_authenticated:
        return HttpResponse(status=403)
    clusters = await shared.cluster_service(user=user, course=course, chapter=chapter)
    access = await clusters.sandbox_access(user=user)
    if access is None:
        raise Http404("no sandbox yet")
    summary = lab_selectors.cluster_summary(
        name=access.cluster, data_dir=settings.KUBELAB_DATA_DIR, store_url=settings.KUBELAB_STORE
    )
    if summary is None:
        raise Http404("no sandbox yet")
    return render(request, "courses/chapters/_topology.html", {"cluster": summary})


@login_required
@require_POST
def hint(request: HttpRequest, course: str, chapter: str, step: str) -> HttpResponse:
    """One more hint: the one tied to a failing leaf first (``failing``, from the page's last verdict)."""
    found = find_chapter(course, chapter)
    spec = found.step(step)
    if spec is None:
        raise Http404(f"no step {step!r}")
    failing = [f for f in request.POST.get("failing", "").split(",") if f]
    shown_before = [h for h in request.POST.get("shown", "").split(",") if h]
    count = progress.record_hint(
        user=request.user, course=found.course, chapter=found.slug, step=step, shown=len(shown_before) + 1
    )
    ids = hint_rules.hints_to_show(spec.hints, shown=count, failing=failing, first=shown_before)
    prose = found.prose_for(content.language_code(get_language())).steps[step]
    context = {
        "step": spec,
        "hints": [(i, prose.hints.get(i, "")) for i in ids],
        "more": len(ids) < len(spec.hints),
        "url": reverse("courses:chapter-hint", kwargs={"course": course, "chapter": chapter, "step": step}),
    }
    if not is_htmx(request):
        return redirect(
            f"{reverse('courses:chapter', kwargs={'course': course, 'chapter': chapter})}?step={step}"
        )
    return render(request, "courses/chapters/_hints.html", context)


@login_required
@require_POST
def solution(request: HttpRequest, course: str, chapter: str, step: str) -> HttpResponse:
    """The step's solution and why it works (recorded: the student asked for it)."""
    found = find_chapter(course, chapter)
    spec = found.step(step)
    if spec is None:
        raise Http404(f"no step {step!r}")
    progress.record_solution(user=request.user, course=found.course, chapter=found.slug, step=step)
    prose = found.prose_for(content.language_code(get_language())).steps[step]
    context = {"step": spec, "why": prose.solution_html, "solution": spec.solution}
    if not is_htmx(request):
        return redirect(
            f"{reverse('courses:chapter', kwargs={'course': course, 'chapter': chapter})}?step={step}"
        )
    return render(request, "courses/chapters/_solution.html", context)
