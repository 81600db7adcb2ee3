"""The chapter page's socket: the student's sandbox, the open step's check, and the step buttons.

One socket per open chapter page (``ws/course/<course>/<chapter>/steps/``), for a signed-in student
only. On connect it starts (or wakes) the student's sandbox and says so while it starts, with the
expected wait, then ``ready``. The page then says which step is open; the socket runs that step's
check against the sandbox (``courses.chapters.runner``) and sends a verdict whenever it changes. A pass
is recorded at once and latched (``courses.progress``).

Messages from the page (JSON): ``{"action": "open", "step": id}``, ``{"action": "check"}`` (the
"Check" button: read the cluster again now), ``{"action": "solve"}`` (run the open step's solution as
the student), ``{"action": "mistake"}`` (run the open step's common mistake as the student: the
check must go on failing, and say what it saw), ``{"action": "jump", "step": id}`` (reset the
sandbox and run the solutions of the steps before ``id``), ``{"action": "request", "index": n}``
(the open step's n-th request button, sent to the student's namespace),
``{"action": "fault", "index": n}`` (the open step's n-th action, a fault: applied to, or cleared
from, the student's own sandbox, whatever else the message says). To the page: ``sandbox`` (state,
text, expected seconds), ``verdict`` (step, status, failures with messages in the student's
language, the failing leaves), ``progress`` (what a solution, a jump or a fault is doing;
``ended`` marks the last word of a solution or a mistake), ``jumped`` (go to the step) and ``error``.

When the student's classroom has its chapters use its shared cluster (``courses.classrooms.shared``),
the socket acts there instead, in the student's namespace, with the same calls; "Start here" (which
remakes the cluster) and faults (which act on the whole cluster) are refused there.

A socket for a course or chapter that does not exist is closed with 4404, an anonymous one with 4403.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any

import yaml
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.utils import translation
from django.utils.translation import gettext

from controlplane.tasks import cancel_and_wait
from courses import gateway
from courses.accounts.models import Preference
from courses.chapters import solutions
from courses.chapters.runner import StepRunner, Verdict
from courses.classrooms import shared
from courses.engine import content
from courses.engine.content import Request, for_student
from courses.progress import services as progress
from courses.sandboxes import services as sandboxes

logger = logging.getLogger(__name__)

FORBIDDEN = 4403
NOT_FOUND = 4404
#: What the page shows while a new sandbox starts: its expected wait, in seconds.
EXPECTED_START_SECONDS = 3


class ChapterConsumer(AsyncWebsocketConsumer):  # type: ignore[misc]  # channels has no type hints
    """One chapter page of one student (see the module's docstring)."""

    channel_layer_alias = "kubelab-chapter-needs-no-channel-layer"

    def __init__(self) -> None:
        super().__init__()
        self.chapter: content.Chapter | None = None
        self.access: sandboxes.SandboxAccess | None = None
        #: What the page acts with: the student's sandbox (``courses.sandboxes.services``), or the
        #: classroom's shared cluster when the instructor chose it (``courses.classrooms.shared``).
        self.clusters: Any = sandboxes
        self.language = "en"
        self.step: str | None = None
        self.runner: StepRunner | None = None
        self._ready = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self._busy = False
        #: Starting and stopping the step's runner, one at a time: an ``open`` may arrive while the
        #: sandbox is still starting, and both want to start the runner.
        self._runner_lock = asyncio.Lock()

    # -- the socket's life ---------------------------------------------------------------------------

    async def connect(self) -> None:
        await self.accept()
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=FORBIDDEN)
            return
        kwargs = self.scope["url_route"]["kwargs"]
        # The first look at the content reads and checks its files: off the event loop.
        self.chapter = await asyncio.to_thread(_find, str(kwargs["course"]), str(kwargs["chapter"]))
        if self.chapter is None:
            await self.close(code=NOT_FOUND)
            return
        self.user = user
        self.language = content.language_code(await _scope_language(self.scope))
        self.clusters = await shared.cluster_service(
            user=user, course=self.chapter.course, chapter=self.chapter.slug
        )
        self._spawn(self._start_sandbox())

    async def disconnect(self, code: int) -> None:
        with contextlib.suppress(Exception):
            await cancel_and_wait(*self._tasks)
        await self._stop_runner()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if self.chapter is None:
            return
        try:
            message = json.loads(text_data or "")
            action = message["action"]
        except (ValueError, KeyError, TypeError):
            await self._send(
                {"type": "error", "text": gettext("The page sent a message the server does not understand.")}
            )
            return
        if action == "open" and isinstance(message.get("step"), str):
            await self._open(message["step"])
        elif action == "check" and self.runner is not None and not self.runner.done:
            await self.runner.check_now()
        elif action == "check" and self.step is not None:
            await self._open_again(self.step)
        elif action == "solve" and self.step is not None:
            self._spawn(self._solve(self.step))
        elif action == "mistake" and self.step is not None:
            self._spawn(self._solve(self.step, mistake=True))
        elif action == "request" and self.step is not None and isinstance(message.get("index"), int):
            self._spawn(self._request(self.step, message["index"]))
        elif action == "fault" and self.step is not None and isinstance(message.get("index"), int):
            self._spawn(self._fault(self.step, message["index"]))
        elif action == "jump" and isinstance(message.get("step"), str):
            self._spawn(self._jump(message["step"]))

    # -- the sandbox ---------------------------------------------------------------------------------

    async def _start_sandbox(self) -> None:
        with translation.override(self.language):
            await self._send(
                {
                    "type": "sandbox",
                    "state": "starting",
                    "expected": EXPECTED_START_SECONDS,
                    "text": gettext("Starting your cluster (about %(seconds)d seconds)…")
                    % {"seconds": EXPECTED_START_SECONDS},
                }
            )
            try:
                self.access = await self.clusters.ensure_sandbox(user=self.user)
            except sandboxes.SandboxUnavailable as error:
                await self._send({"type": "sandbox", "state": "failed", "text": str(error)})
                return
            except Exception:
                logger.exception("the sandbox of %s did not start", self.user)
                text = gettext("Your cluster could not start. Try again in a minute; your progress is kept.")
                await self._send({"type": "sandbox", "state": "failed", "text": text})
                return
            if self._shared:
                text = gettext(
                    "The classroom's cluster is running; you work in your namespace %(namespace)s."
                ) % {"namespace": self.access.namespace}
            else:
                text = gettext("Your cluster is running.")
            await self._send(
                {
                    "type": "sandbox",
                    "state": "ready",
                    "cluster": self.access.cluster,
                    "namespace": self.access.namespace,
                    "text": text,
                }
            )
        self._ready.set()
        if self.step is not None:
            await self._start_runner(self.step)

    # -- the open step -------------------------------------------------------------------------------

    async def _open(self, step: str) -> None:
        assert self.chapter is not None
        if step not in {s.id for s in self.chapter.steps} or (step == self.step and self.runner is not None):
            return
        self.step = step
        await progress.arecord_open(
            user=self.user, course=self.chapter.course, chapter=self.chapter.slug, step=step
        )
        states = await progress.achapter_progress(
            user=self.user, course=self.chapter.course, chapter=self.chapter.slug
        )
        if step in states and states[step].done:
            # Latched: a step that passed stays passed, whatever the cluster does now, so its check
            # does not run again (a reset sandbox, or a later step's work, cannot undo it).
            await self._stop_runner()
            await self._send(
                {"type": "verdict", "step": step, "status": "passed", "failures": [], "failing": []}
            )
            return
        if self._ready.is_set():
            await self._start_runner(step)

    async def _open_again(self, step: str) -> None:
        """The "Check" button with no check running: a passed step says so again."""
        self.step = None
        await self._open(step)

    async def _start_runner(self, step_id: str) -> None:
        """Run ``step_id``'s check, unless it passed already or another step was opened meanwhile."""
        assert self.chapter is not None
        async with self._runner_lock:
            await self._close_runner()
            states = await progress.achapter_progress(
                user=self.user, course=self.chapter.course, chapter=self.chapter.slug
            )
            if self.step != step_id or self.access is None or (step_id in states and states[step_id].done):
                return
            step = next(s for s in self.chapter.steps if s.id == step_id)
            checker = await self.clusters.checker_token(cluster=self.access.cluster)
            if self.step != step_id:  # another step was opened while the token was read
                return
            self.runner = StepRunner(
                access=self.access,
                checker_token=checker,
                step=step,
                on_verdict=self._verdict,
                language=self.language,
            )
            await self.runner.start()

    async def _stop_runner(self) -> None:
        async with self._runner_lock:
            await self._close_runner()

    async def _close_runner(self) -> None:
        runner, self.runner = self.runner, None
        if runner is not None:
            await runner.close()

    async def _verdict(self, step: str, verdict: Verdict) -> None:
        assert self.chapter is not None
        if verdict.status == "passed":
            await progress.arecord_pass(
                user=self.user, course=self.chapter.course, chapter=self.chapter.slug, step=step
            )
        await self._send({"type": "verdict", "step": step, **verdict.to_json()})

    # -- solutions -----------------------------------------------------------------------------------

    async def _solve(self, step_id: str, *, mistake: bool = False) -> None:
        """Run the step's solution, or its common mistake (which is not recorded: it solves nothing)."""
        assert self.chapter is not None
        step = next(s for s in self.chapter.steps if s.id == step_id)
        if (mistake and step.mistake is None) or not await self._begin():
            return
        try:
            await self._ready.wait()
            # Made anew since (a reset elsewhere)? Then with the sandbox's new credentials.
            self.access = await self.clusters.ensure_sandbox(user=self.user)
            if not mistake:
                await progress.arecord_solution(
                    user=self.user, course=self.chapter.course, chapter=self.chapter.slug, step=step_id
                )
            with translation.override(self.language):
                await solutions.run_solution(
                    access=self.access,
                    step=step,
                    say=self._progress,
                    user=self.user,
                    impersonate=self.chapter.impersonate,
                    mistake=mistake,
                    clusters=self.clusters,
                )
                if mistake:
                    done = gettext("The mistake ran. The check says what it saw.")
                else:
                    done = gettext("The solution ran. The check looks at the result.")
                await self._progress(done, "done", ended=True)
        except solutions.SolutionFailed as error:
            await self._progress(str(error), "error", ended=True)
        except (sandboxes.SandboxUnavailable, Exception) as error:
            logger.exception("a solution on the sandbox of %s failed", self.user)
            with translation.override(self.language):
                await self._progress(_unexpected(error), "error", ended=True)
        finally:
            self._busy = False

    async def _jump(self, step_id: str) -> None:
        assert self.chapter is not None
        ids = [s.id for s in self.chapter.steps]
        if self._shared:
            # "Start here" remakes the cluster: the shared one is everyone's.
            with translation.override(self.language):
                text = gettext(
                    "“Start here” resets your own sandbox; it is not available in the classroom's cluster."
                )
            await self._progress(text, "error")
            return
        if step_id not in ids or not await self._begin():
            return
        try:
            await self._ready.wait()
            await self._stop_runner()
            with translation.override(self.language):
                await self._progress(gettext("Resetting your cluster…"), "working")
                self.access = await sandboxes.reset_sandbox(user=self.user)
                checker = await sandboxes.checker_token(cluster=self.access.cluster)
                prose = self.chapter.prose_for(self.language)
                for step in self.chapter.steps[: ids.index(step_id)]:
                    await solutions.build_step(
                        access=self.access,
                        checker_token=checker,
                        step=step,
                        say=self._progress,
                        user=self.user,
                        impersonate=self.chapter.impersonate,
                        title=prose.steps[step.id].title,
                    )
            self.step = None
            await self._send({"type": "jumped", "step": step_id})
        except solutions.SolutionFailed as error:
            await self._progress(str(error), "error")
        except (sandboxes.SandboxUnavailable, Exception) as error:
            logger.exception("a solution on the sandbox of %s failed", self.user)
            with translation.override(self.language):
                await self._progress(_unexpected(error), "error")
        finally:
            self._busy = False

    async def _request(self, step_id: str, index: int) -> None:
        """A step's button that sends one API request, as the student (through the whole pipeline)."""
        assert self.chapter is not None
        step = self.chapter.step(step_id)
        actions = [a for a in step.actions if a.request is not None] if step is not None else []
        if not 0 <= index < len(actions):
            return
        await self._ready.wait()
        self.access = await self.clusters.ensure_sandbox(user=self.user)
        request = actions[index].request
        assert request is not None
        path = shared.in_namespace(for_student(request.path, self.access.user), self.access.namespace)
        body, headers = request_body(request, self.access.user)
        with translation.override(self.language):
            try:
                async with gateway.api_client(cluster=self.access.cluster, token=self.access.token) as client:
                    response = await client.request(request.method, path, content=body, headers=headers)
            except Exception:
                logger.exception("a step's request on %s failed", self.access.cluster)
                await self._progress(gettext("The request could not be sent."), "error")
                return
            text = gettext("%(method)s %(path)s: the API server answered %(code)d.") % {
                "method": request.method,
                "path": path,
                "code": response.status_code,
            }
            await self._progress(text, "done" if response.is_success else "error")

    async def _fault(self, step_id: str, index: int) -> None:
        """A step's fault button: the ``index``-th action of the open step, applied to (or cleared from)
        the student's own sandbox. Only the index comes from the page: which fault, with which
        parameters, is the chapter's, and the sandbox is always the one of the socket's student."""
        assert self.chapter is not None
        step = self.chapter.step(step_id)
        actions = step.actions if step is not None else ()
        fault = actions[index].fault if 0 <= index < len(actions) else None
        with translation.override(self.language):
            if fault is None:
                await self._progress(gettext("This step offers no such fault."), "error")
                return
            await self._ready.wait()
            try:
                self.access = await self.clusters.ensure_sandbox(user=self.user)
                where = f"{self.chapter.course}/{self.chapter.slug}"
                reason = f"chapter {where}, step {step_id}, by {self.access.user}"
                await solutions.run_fault(access=self.access, fault=fault, say=self._progress, reason=reason)
            except solutions.SolutionFailed as error:
                await self._progress(str(error), "error")
            except (sandboxes.SandboxUnavailable, Exception) as error:
                logger.exception("a fault on the sandbox of %s failed", self.user)
                await self._progress(_unexpected(error), "error")

    @property
    def _shared(self) -> bool:
        """Whether the page works in the classroom's shared cluster rather than the student's sandbox."""
        return bool(getattr(self.clusters, "shared", False))

    async def _begin(self) -> bool:
        if self._busy:
            await self._progress(gettext("Wait: the last solution is still running."), "working")
            return False
        self._busy = True
        return True

    async def _progress(self, text: str, state: str = "working", *, ended: bool = False) -> None:
        """Say what a solution, a mistake, a jump or a button is doing; ``ended``: the last word of a
        solution or a mistake (its faults' own "done" come before it)."""
        await self._send({"type": "progress", "text": text, "state": state, "ended": ended})

    # -- plumbing ------------------------------------------------------------------------------------

    def _spawn(self, work: Any) -> None:
        task: asyncio.Task[None] = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(_log_failure)

    async def _send(self, message: dict[str, Any]) -> None:
        with contextlib.suppress(Exception):  # the socket went away meanwhile
            await self.send(text_data=json.dumps(message))


def _unexpected(error: Exception) -> str:
    if isinstance(error, sandboxes.SandboxUnavailable):
        return str(error)
    return gettext("Something went wrong on the server; it is logged. Your progress is kept: try again.")


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        logger.error("a chapter socket's task failed", exc_info=task.exception())


def _find(course: str, chapter: str) -> content.Chapter | None:
    try:
        return content.load_course(course).chapter(chapter)
    except content.CourseNotFound:
        return None


def _saved_language_sync(user: Any) -> str:
    preference = Preference.objects.filter(user_id=user.pk).first()
    return preference.language if preference is not None else ""


_saved_language = database_sync_to_async(_saved_language_sync)


async def _scope_language(scope: dict[str, Any]) -> str | None:
    """The page's language: the language cookie (the header's switch), else the student's saved choice,
    else their browser's."""
    headers = dict(scope.get("headers") or [])
    cookie = headers.get(b"cookie", b"").decode("latin-1")
    for part in cookie.split(";"):
        name, _, value = part.strip().partition("=")
        if name == "django_language" and value:
            return str(value)
    saved: str = await _saved_language(scope["user"])
    if saved:
        return saved
    accept = headers.get(b"accept-language", b"").decode("latin-1")
    for part in accept.split(","):
        code = part.split(";")[0].strip()
        try:
            return str(translation.get_supported_language_variant(code))
        except LookupError:
            continue
    return None


def request_body(request: Request, user: str) -> tuple[bytes | None, dict[str, str]]:
    """What a step's request button sends: its manifest as JSON, as kubectl sends an object (a JSON
    merge patch for PATCH), with the Content-Type that says so; nothing for a request without a body.
    The manifest is YAML in the chapter, checked when the course loads."""
    if request.body is None:
        return None, {}
    document = yaml.safe_load(for_student(request.body, user))
    content_type = "application/merge-patch+json" if request.method == "PATCH" else "application/json"
    return json.dumps(document).encode(), {"Content-Type": content_type}
