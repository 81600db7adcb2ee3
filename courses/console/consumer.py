"""The console's socket: kubectl commands from the chapter page, run in the student's own sandbox.

One socket per open console, at ``ws/course/<course>/<chapter>/console/``, for a signed-in student.
The student is whoever the session says; nothing in the URL can name a sandbox, and a query that tries
(``?cluster=``, ``?user=``) for anyone but the student is refused. On connect the socket starts (or
wakes) the student's sandbox, writes their kubeconfig into a private workspace (``runner.Workspace``)
and says ``ready``. When the student's classroom has its chapters use its shared cluster
(``courses.classrooms.shared``), that is the cluster instead, their namespace the kubeconfig's.
The chapter's ``impersonate`` list (``courses.engine.content``) says whom ``--as`` may name here.
The conversation (JSON)::

    server: {"type": "status", "message": "Starting your sandbox…"}
    server: {"type": "ready", "cluster": "sandbox-alice", "user": "student:alice"}
    client: {"action": "run", "command": "kubectl get configmap -w"}
    server: {"type": "started", "run": 1, "command": "kubectl get configmap -w"}
    server: {"type": "output", "run": 1, "data": "NAME  DATA  AGE\\n..."}      (as kubectl writes it)
    client: {"action": "run", "command": "kubectl apply -f -", "stdin": "<the editor's text>"}
    client: {"action": "stop", "run": 1}                                      (Ctrl-C; no run: the newest)
    server: {"type": "exit", "run": 1, "code": -9, "reason": "stopped", "message": "Stopped."}
    client: {"action": "run", "command": "kubectl get pods | grep web"}
    server: {"type": "refused", "reason": "shell", "message": "This console runs kubectl itself, ...",
             "command": "kubectl get pods | grep web"}

Every ``run`` is answered, in order, by ``started`` or ``refused``; ``exit.reason`` is ``exited``,
``timeout``, ``output-limit``, ``stopped`` or ``killed`` (``runner.ExitReason``). A refused socket
gets ``{"type": "error", "code": 4403, "message": ...}`` and is closed with that code: 4403 (not signed
in, or another's sandbox), 4404 (no such chapter), 4503 (the sandbox cannot start). Messages are in the
page's language (``?lang=``, else the browser's).

Thin: the policy (``policy.decide``) and the runner (``runner.start``) do the work. Both the sandbox
service and the runner can be handed in (``ConsoleConsumer.as_asgi(sandboxes=..., start=...)``), so
the tests can prove that a refused line never reaches the runner.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any
from urllib.parse import parse_qs

from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.utils import translation
from django.utils.translation import gettext

from controlplane.tasks import cancel_and_wait
from courses.classrooms import shared
from courses.console import runner
from courses.console.policy import Allowed, Refused, decide
from courses.engine import content
from courses.sandboxes import services as sandbox_services

logger = logging.getLogger(__name__)

FORBIDDEN = 4403
NOT_FOUND = 4404
UNAVAILABLE = 4503
#: The largest editor text ``apply -f -`` takes: what the API server accepts in one request body.
MAX_STDIN_BYTES = 3 * 1024 * 1024
#: A running command keeps its sandbox awake at most this often (seconds).
TOUCH_INTERVAL = 60.0

Start = Callable[..., AbstractAsyncContextManager[runner.KubectlProcess]]


async def chapter_impersonation(course: str, chapter: str) -> tuple[str, ...] | None:
    """Whom ``--as`` may name in ``chapter`` of ``course``; None if there is no such chapter."""
    try:
        # Cached after the first read; that one reads files, so not on the event loop.
        found = await asyncio.to_thread(content.load_course, course)
    except content.CourseNotFound:
        return None
    for candidate in found.chapters:
        if candidate.slug == chapter:
            return tuple(candidate.impersonate)
    return None


def _language(scope: dict[str, Any]) -> str:
    """The page's language: ``?lang=`` (the page says which it shows), else the browser's, else English."""
    query = parse_qs((scope.get("query_string") or b"").decode("latin-1"))
    headers = dict(scope.get("headers") or [])
    candidates = query.get("lang", [])
    cookie = headers.get(b"cookie", b"").decode("latin-1")
    candidates += [
        v for n, _, v in (p.strip().partition("=") for p in cookie.split(";")) if n == "django_language"
    ]
    accept = headers.get(b"accept-language", b"").decode("latin-1")
    candidates += [part.split(";")[0].strip() for part in accept.split(",")]
    for code in candidates:
        try:
            return translation.get_supported_language_variant(code)
        except LookupError:
            continue
    return str(settings.LANGUAGE_CODE)


class ConsoleConsumer(AsyncWebsocketConsumer):  # type: ignore[misc]  # channels has no type hints
    """One student's console on one chapter page (see the module's docstring)."""

    #: No channel layer: nothing is sent to this socket from elsewhere.
    channel_layer_alias = "kubelab-console-needs-no-channel-layer"

    def __init__(self, *, sandboxes: Any = None, start: Start | None = None) -> None:
        """``sandboxes``: the sandbox service (default ``courses.sandboxes.services``: ``ensure_sandbox``,
        ``kubeconfig_for``, ``touch``, ``SandboxUnavailable``); ``start``: the runner (``runner.start``)."""
        super().__init__()
        self.sandboxes: Any = sandboxes or sandbox_services
        self._start: Start = start or runner.start
        self.language = str(settings.LANGUAGE_CODE)
        self.user_key = ""
        self.cluster = ""
        self.impersonate: tuple[str, ...] = ()
        self.workspace: runner.Workspace | None = None
        self._user: Any = None
        self._kubeconfig = b""
        self._next_run = 0
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._processes: dict[int, runner.KubectlProcess] = {}
        self._last_touch = 0.0

    # -- the socket's life ---------------------------------------------------------------------------

    async def connect(self) -> None:
        self.language = _language(self.scope)
        await self.accept()
        with translation.override(self.language):
            await self._open()

    async def _open(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated or not user.is_active:
            await self._refuse(FORBIDDEN, gettext("Sign in to use the kubectl console."))
            return
        kwargs = self.scope["url_route"]["kwargs"]
        course, chapter = str(kwargs["course"]), str(kwargs["chapter"])
        try:
            impersonate = await chapter_impersonation(course, chapter)
        except Exception:
            logger.exception("the console could not read chapter %r of course %r", chapter, course)
            await self._refuse(UNAVAILABLE, gettext("The console is not available right now."))
            return
        if impersonate is None:
            await self._refuse(NOT_FOUND, gettext("There is no such chapter."))
            return
        await self._send_json({"type": "status", "message": gettext("Starting your sandbox…")})
        try:
            if self.sandboxes is sandbox_services:
                # The classroom's shared cluster, in the student's namespace, if their instructor chose it.
                self.sandboxes = await shared.cluster_service(user=user, course=course, chapter=chapter)
            service = self.sandboxes
            access = await service.ensure_sandbox(user=user)
            if not self._is_own(access, user):
                await self._refuse(FORBIDDEN, gettext("The console runs commands only in your own sandbox."))
                return
            kubeconfig = await service.kubeconfig_for(
                user=user, server=settings.KUBELAB_CONSOLE_SERVER or None
            )
            self.workspace = await asyncio.to_thread(runner.Workspace.create, kubeconfig)
            self._user, self._kubeconfig = user, kubeconfig
        except Exception as error:
            unavailable = getattr(self.sandboxes, "SandboxUnavailable", None)
            if isinstance(unavailable, type) and isinstance(
                error, unavailable
            ):  # its message is for the student
                message = str(error)
            else:
                logger.exception("the console of user %s could not reach their sandbox", user.pk)
                message = gettext("Your sandbox is not available right now. Try again in a moment.")
            await self._refuse(UNAVAILABLE, message)
            return
        self.user_key, self.cluster, self.impersonate = str(user.pk), access.cluster, impersonate
        await self._send_json({"type": "ready", "cluster": access.cluster, "user": access.user})

    def _is_own(self, access: Any, user: Any) -> bool:
        """False when the socket's query names a sandbox or user that is not the student's own."""
        query = parse_qs((self.scope.get("query_string") or b"").decode("latin-1"))
        own = {
            "cluster": {access.cluster},
            "sandbox": {access.cluster},
            "user": {access.user, user.get_username()},
        }
        return all(set(query.get(name, [])) <= allowed for name, allowed in own.items())

    async def disconnect(self, code: int) -> None:
        with contextlib.suppress(Exception):  # leaving runner.start's block kills the process
            await cancel_and_wait(*self._tasks.values())
        if self.workspace is not None:
            await asyncio.to_thread(self.workspace.remove)
            self.workspace = None

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if self.workspace is None:  # refused, or closing
            return
        with translation.override(self.language):
            try:
                message = json.loads(text_data or "")
                action = message["action"]
            except (ValueError, KeyError, TypeError):
                await self._send_json(
                    {
                        "type": "error",
                        "code": 400,
                        "message": gettext("The page sent a message the console does not understand."),
                    }
                )
                return
            if action == "run" and isinstance(message.get("command"), str):
                stdin = message.get("stdin")
                await self._run(message["command"], stdin if isinstance(stdin, str) else None)
            elif action == "stop":
                await self._stop(message.get("run"))
            else:
                await self._send_json(
                    {
                        "type": "error",
                        "code": 400,
                        "message": gettext("The page sent a message the console does not understand."),
                    }
                )

    # -- running -------------------------------------------------------------------------------------

    async def _run(self, command: str, stdin: str | None) -> None:
        decision = decide(command, impersonate=self.impersonate)
        if isinstance(decision, Refused):
            logger.info("console of user %s refused %r: %s", self.user_key, command[:200], decision.reason)
            await self._refused(command, decision.reason, decision.message)
            return
        refused = self._check_stdin(decision, stdin)
        if refused is not None:
            await self._refused(command, "editor", refused)
            return
        limit = settings.KUBELAB_CONSOLE_CONCURRENCY
        if not runner.SLOTS.try_acquire(self.user_key, limit=limit):
            message = gettext(
                "You are already running %(count)d commands: stop one (Ctrl-C) before you start another."
            ) % {"count": limit}
            await self._refused(command, "busy", message)
            return
        await self._fresh_kubeconfig()
        self._next_run += 1
        run = self._next_run
        try:
            # Said here, not in the task: every "run" is answered in order, "started" or "refused".
            await self._send_json({"type": "started", "run": run, "command": command})
        except BaseException:
            runner.SLOTS.release(self.user_key)
            raise
        self._tasks[run] = asyncio.create_task(
            self._follow(run, command, decision, stdin if decision.stdin_from_editor else None),
            name=f"console run {run} of user {self.user_key}",
        )

    async def _fresh_kubeconfig(self) -> None:
        """Write the student's kubeconfig again if it changed since the console opened: a reset of the
        sandbox (from another tab, the sandbox page) replaces every token of the old one."""
        try:
            kubeconfig = await self.sandboxes.kubeconfig_for(
                user=self._user, server=settings.KUBELAB_CONSOLE_SERVER or None
            )
        except Exception:  # the run says what is wrong with the sandbox; the old file is no worse
            logger.info("console of user %s: no fresh kubeconfig", self.user_key, exc_info=True)
            return
        if kubeconfig != self._kubeconfig and self.workspace is not None:
            await asyncio.to_thread(self.workspace.replace_kubeconfig, kubeconfig)
            self._kubeconfig = kubeconfig

    def _check_stdin(self, decision: Allowed, stdin: str | None) -> str | None:
        if not decision.stdin_from_editor:
            return None
        if not stdin or not stdin.strip():
            return gettext("-f - reads the manifest in the editor, and the editor is empty.")
        if len(stdin.encode("utf-8")) > MAX_STDIN_BYTES:
            return gettext("The editor's text is larger than 3 MiB, the most the API server accepts.")
        return None

    async def _follow(self, run: int, command: str, decision: Allowed, stdin: str | None) -> None:
        """Run one command and stream it to the page; the slot is released whatever happens."""
        assert self.workspace is not None
        timeout = (
            settings.KUBELAB_CONSOLE_FOLLOW_TIMEOUT if decision.follows else settings.KUBELAB_CONSOLE_TIMEOUT
        )
        try:
            self._touch(force=True)
            async with self._start(
                workspace=self.workspace, argv=decision.argv, timeout=timeout, stdin=stdin
            ) as process:
                self._processes[run] = process
                async for chunk in process.output():
                    await self._send_json({"type": "output", "run": run, "data": chunk})
                    self._touch()
            result = process.result
            if result is not None:
                with translation.override(self.language):
                    await self._send_json(self._exit_message(run, result, timeout))
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("console run %s of user %s (%r) failed", run, self.user_key, command[:200])
            with translation.override(self.language):
                message = gettext("The console could not run this command.")
            await self._send_json(
                {"type": "exit", "run": run, "code": None, "reason": "error", "message": message}
            )
        finally:
            runner.SLOTS.release(self.user_key)
            self._processes.pop(run, None)
            self._tasks.pop(run, None)

    def _exit_message(self, run: int, result: runner.RunResult, timeout: float) -> dict[str, Any]:
        reason = result.reason
        message = ""
        if reason == runner.ExitReason.TIMEOUT:
            message = gettext("Stopped after %(seconds)d s, the console's time limit for this command.") % {
                "seconds": round(timeout)
            }
        elif reason == runner.ExitReason.OUTPUT_LIMIT:
            message = gettext(
                "Stopped: the command wrote more than %(size)d KiB, the console's limit. Ask for less (a "
                "name, -l with a label, -o name)."
            ) % {"size": settings.KUBELAB_CONSOLE_OUTPUT_LIMIT // 1024}
        elif reason == runner.ExitReason.STOPPED:
            message = gettext("Stopped.")
        elif reason == runner.ExitReason.KILLED:
            message = gettext("kubectl was stopped by the console's resource limits.")
        return {
            "type": "exit",
            "run": run,
            "code": result.exit_code,
            "reason": str(reason),
            "message": message,
        }

    async def _stop(self, run: object) -> None:
        if not (isinstance(run, int) and not isinstance(run, bool)):  # no run named: the newest
            run = max(self._tasks, default=None)
        if not isinstance(run, int) or run not in self._tasks:
            return
        process = self._processes.get(run)
        if process is not None:
            await process.stop()  # its task then says how it ended
            return
        task = self._tasks[run]  # not started yet: it never will
        await cancel_and_wait(task)
        stopped = runner.RunResult(exit_code=None, output="", reason=runner.ExitReason.STOPPED)
        await self._send_json(self._exit_message(run, stopped, 0))

    def _touch(self, *, force: bool = False) -> None:
        """Tell the sandbox service the student is active (at most every ``TOUCH_INTERVAL``)."""
        now = time.monotonic()
        if force or now - self._last_touch >= TOUCH_INTERVAL:
            self._last_touch = now
            try:
                self.sandboxes.touch(cluster=self.cluster)
            except Exception:
                logger.exception("could not mark sandbox %r active", self.cluster)

    # -- messages ------------------------------------------------------------------------------------

    async def _refused(self, command: str, reason: str, message: str) -> None:
        await self._send_json(
            {"type": "refused", "reason": str(reason), "message": message, "command": command}
        )

    async def _send_json(self, message: dict[str, Any]) -> None:
        """Send ``message``; a socket that has gone already is the end of it, not an error."""
        try:
            await self.send(text_data=json.dumps(message, ensure_ascii=False, separators=(",", ":")))
        except Exception as error:
            logger.debug("a console socket of user %s has gone: %s", self.user_key, error)

    async def _refuse(self, code: int, message: str) -> None:
        """Say why, then close with ``code`` (browsers cannot read a refused handshake's reason)."""
        await self._send_json({"type": "error", "code": code, "message": message})
        with contextlib.suppress(Exception):
            await self.close(code=code)


__all__ = ["FORBIDDEN", "NOT_FOUND", "UNAVAILABLE", "ConsoleConsumer", "chapter_impersonation"]
