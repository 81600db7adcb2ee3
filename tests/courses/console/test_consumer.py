"""The console's socket, spoken as the page speaks it (Channels' test communicator).

The sandbox service is a fake (``conftest.FakeSandboxes``); the runner is a spy that records every
call, so a refused line is proven never to reach it. The tests that stream use the real kubectl
against a live lab, with the lab admin's kubeconfig standing in for the student's.
"""

from __future__ import annotations

import asyncio
import json
import types
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.conf import settings as django_settings
from django.contrib.auth.models import AnonymousUser, User
from django.urls import path
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from courses.console import consumer as console
from courses.console import runner
from courses.console.consumer import ConsoleConsumer, chapter_impersonation
from tests.courses.console.conftest import FakeSandboxes, SpyRunner
from tests.courses.console.escapes import ESCAPES, IMPERSONATE, RAW_WITH_QUERY
from tests.courses.console.test_runner import gone
from tests.support.lab import LiveLab

TIMEOUT = 10  # seconds a test waits for one message (never spent when things work)
ALICE = User(pk=1, username="alice")
BOB = User(pk=2, username="bob")


@pytest.fixture(autouse=True)
def chapter(monkeypatch: pytest.MonkeyPatch) -> None:
    """Course ``c``, chapter ``ch`` exists and lets ``--as`` name ``IMPERSONATE``; nothing else exists."""

    async def known(course: str, chapter: str) -> tuple[str, ...] | None:
        return IMPERSONATE if (course, chapter) == ("c", "ch") else None

    monkeypatch.setattr(console, "chapter_impersonation", known)


def socket(
    sandboxes: FakeSandboxes,
    start: Any,
    user: Any = ALICE,
    *,
    url: str = "/ws/course/c/ch/console/?lang=en",
) -> WebsocketCommunicator:
    app = URLRouter(
        [
            path(
                "ws/course/<str:course>/<str:chapter>/console/",
                ConsoleConsumer.as_asgi(sandboxes=sandboxes, start=start),
            )
        ]
    )
    communicator = WebsocketCommunicator(app, url)
    communicator.scope["user"] = user
    return communicator


async def receive(communicator: WebsocketCommunicator) -> dict[str, Any]:
    message: dict[str, Any] = await communicator.receive_json_from(timeout=TIMEOUT)
    return message


async def ready(communicator: WebsocketCommunicator) -> dict[str, Any]:
    """Connect; the ``ready`` message (after ``status``)."""
    connected, _ = await communicator.connect(timeout=TIMEOUT)
    assert connected
    assert (await receive(communicator))["type"] == "status"
    message = await receive(communicator)
    assert message["type"] == "ready", message
    return message


async def refused_with(communicator: WebsocketCommunicator) -> tuple[dict[str, Any], int]:
    """Connect; the error message and the close code of a socket that is refused."""
    connected, _ = await communicator.connect(timeout=TIMEOUT)
    assert connected  # accepted first, so that the page can read why it is closed
    while (message := await receive(communicator))["type"] == "status":
        pass
    closed = await communicator.receive_output(timeout=TIMEOUT)
    assert closed["type"] == "websocket.close"
    return message, closed["code"]


async def run_to_exit(
    communicator: WebsocketCommunicator, command: str, **extra: Any
) -> list[dict[str, Any]]:
    """Run ``command``; every message up to and including its ``exit``."""
    await communicator.send_json_to({"action": "run", "command": command, **extra})
    messages = [await receive(communicator)]
    assert messages[0]["type"] == "started", messages[0]
    while messages[-1]["type"] != "exit":
        messages.append(await receive(communicator))
    return messages


def output_of(messages: list[dict[str, Any]]) -> str:
    return "".join(m["data"] for m in messages if m["type"] == "output")


# -- who may connect ---------------------------------------------------------------------------------


async def test_an_anonymous_visitor_is_refused_and_nothing_starts() -> None:
    sandboxes, spy = FakeSandboxes(), SpyRunner()
    error, code = await refused_with(socket(sandboxes, spy, AnonymousUser()))
    assert code == console.FORBIDDEN == 4403
    assert error == {"type": "error", "code": 4403, "message": "Sign in to use the kubectl console."}
    assert sandboxes.ensured == [] and spy.calls == []


async def test_the_console_is_the_students_own_sandbox_whatever_the_url_says() -> None:
    for query in ("cluster=sandbox-bob", "sandbox=sandbox-bob", "user=bob", "user=student:bob"):
        sandboxes = FakeSandboxes()
        communicator = socket(sandboxes, SpyRunner(), url=f"/ws/course/c/ch/console/?lang=en&{query}")
        error, code = await refused_with(communicator)
        assert code == 4403, query
        assert "only in your own sandbox" in error["message"]
        assert sandboxes.kubeconfigs_for == []  # no kubeconfig was even written
    # Naming oneself is no crime; and the sandbox and kubeconfig are asked for the session's user.
    sandboxes = FakeSandboxes()
    communicator = socket(
        sandboxes, SpyRunner(), url="/ws/course/c/ch/console/?cluster=sandbox-alice&user=alice"
    )
    hello = await ready(communicator)
    assert hello == {"type": "ready", "cluster": "sandbox-alice", "user": "student:alice"}
    assert sandboxes.ensured == ["alice"] and sandboxes.kubeconfigs_for == ["alice"]
    await communicator.disconnect()


async def test_two_students_get_two_sandboxes() -> None:
    sandboxes, spy = FakeSandboxes(), SpyRunner()
    alice, bob = socket(sandboxes, spy, ALICE), socket(sandboxes, spy, BOB)
    assert (await ready(alice))["cluster"] == "sandbox-alice"
    assert (await ready(bob))["cluster"] == "sandbox-bob"
    await alice.disconnect()
    await bob.disconnect()


async def test_an_unknown_chapter_is_refused_with_4404() -> None:
    communicator = socket(FakeSandboxes(), SpyRunner(), url="/ws/course/c/no-such-chapter/console/")
    error, code = await refused_with(communicator)
    assert code == 4404 and error["code"] == 4404


async def test_a_sandbox_that_cannot_start_says_why() -> None:
    sandboxes = FakeSandboxes(unavailable="The lab is full; try again in a minute.")
    error, code = await refused_with(socket(sandboxes, SpyRunner()))
    assert code == 4503
    assert error["message"] == "The lab is full; try again in a minute."


# -- the escape battery, through the socket ----------------------------------------------------------


async def test_every_escape_is_refused_and_nothing_runs() -> None:
    spy = SpyRunner()
    communicator = socket(FakeSandboxes(), spy)
    await ready(communicator)
    for line, reason in ESCAPES:
        await communicator.send_json_to({"action": "run", "command": line, "stdin": "kind: Pod"})
        answer = await receive(communicator)
        assert answer["type"] == "refused", (line, answer)
        assert answer["reason"] == reason, (line, answer)
        assert answer["message"].strip() and answer["command"] == line
    assert spy.calls == [], "a refused line reached the runner"
    await communicator.disconnect()


async def test_an_ampersand_runs_only_inside_a_raw_paths_query() -> None:
    spy = SpyRunner()
    communicator = socket(FakeSandboxes(), spy)
    await ready(communicator)
    messages = await run_to_exit(communicator, f'kubectl get --raw "{RAW_WITH_QUERY}"')
    assert messages[-1]["code"] == 0
    assert spy.calls[0]["argv"] == ("kubectl", "get", "--raw", RAW_WITH_QUERY)
    await communicator.send_json_to({"action": "run", "command": f"kubectl get --raw {RAW_WITH_QUERY} & id"})
    answer = await receive(communicator)
    assert (answer["type"], answer["reason"]) == ("refused", "shell")
    assert len(spy.calls) == 1, "the line with an & outside --raw reached the runner"
    await communicator.disconnect()


async def test_impersonation_is_the_chapters() -> None:
    spy = SpyRunner()
    communicator = socket(FakeSandboxes(), spy)
    await ready(communicator)
    messages = await run_to_exit(communicator, "kubectl auth can-i get pods --as=jane")
    assert messages[-1]["code"] == 0
    assert spy.calls[0]["argv"] == ("kubectl", "auth", "can-i", "get", "pods", "--as=jane")
    await communicator.send_json_to({"action": "run", "command": "kubectl get pods --as=bob"})
    assert (await receive(communicator))["reason"] == "impersonation"
    assert len(spy.calls) == 1
    await communicator.disconnect()


async def test_apply_from_the_editor_reads_the_editor_and_only_then() -> None:
    spy = SpyRunner()
    communicator = socket(FakeSandboxes(), spy)
    await ready(communicator)
    for stdin in (None, "", "  \n"):
        extra = {} if stdin is None else {"stdin": stdin}
        await communicator.send_json_to({"action": "run", "command": "kubectl apply -f -", **extra})
        answer = await receive(communicator)
        assert answer["type"] == "refused" and answer["reason"] == "editor", answer
    too_big = "#" * (console.MAX_STDIN_BYTES + 1)
    await communicator.send_json_to({"action": "run", "command": "kubectl apply -f -", "stdin": too_big})
    assert (await receive(communicator))["reason"] == "editor"
    assert spy.calls == []
    await run_to_exit(communicator, "kubectl apply -f -", stdin="kind: ConfigMap\n")
    await run_to_exit(communicator, "kubectl get pods", stdin="kind: ConfigMap\n")
    assert [call["stdin"] for call in spy.calls] == ["kind: ConfigMap\n", None]  # only -f - reads it
    await communicator.disconnect()


async def test_a_message_the_console_does_not_understand() -> None:
    communicator = socket(FakeSandboxes(), SpyRunner())
    await ready(communicator)
    for text in ("not json", '{"no": "action"}', '{"action": "dance"}', '{"action": "run", "command": 3}'):
        await communicator.send_to(text_data=text)
        answer = await receive(communicator)
        assert answer["type"] == "error" and answer["code"] == 400, text
    await communicator.disconnect()


# -- running, for real -------------------------------------------------------------------------------


async def test_a_command_runs_in_the_sandbox_and_its_output_streams_back(lab: LiveLab) -> None:
    sandboxes = FakeSandboxes(kubeconfig=lab.kubeconfig.read_bytes())
    communicator = socket(sandboxes, SpyRunner(real=True))
    await ready(communicator)
    messages = await run_to_exit(communicator, "kubectl get ns")
    assert messages[0] == {"type": "started", "run": 1, "command": "kubectl get ns"}
    assert "kube-system" in output_of(messages)
    assert messages[-1] == {"type": "exit", "run": 1, "code": 0, "reason": "exited", "message": ""}
    assert sandboxes.touched == ["sandbox-alice"]  # a command keeps the sandbox awake
    await communicator.disconnect()


async def test_a_watch_streams_until_it_is_stopped(lab: LiveLab) -> None:
    spy = SpyRunner(real=True)
    communicator = socket(FakeSandboxes(kubeconfig=lab.kubeconfig.read_bytes()), spy)
    await ready(communicator)
    await communicator.send_json_to({"action": "run", "command": "kubectl get configmaps -A -w"})
    assert (await receive(communicator))["type"] == "started"
    first = await receive(communicator)
    assert first["type"] == "output" and "NAMESPACE" in first["data"]
    assert spy.calls[0]["timeout"] == django_settings.KUBELAB_CONSOLE_FOLLOW_TIMEOUT  # the longer limit
    name = "console-watch-test"
    await asyncio.to_thread(lab.kubectl, "create", "configmap", name, "--from-literal=a=b")
    seen = ""
    while name not in seen:  # the watch sees the change made elsewhere
        message = await receive(communicator)
        assert message["type"] == "output", message
        seen += message["data"]
    await communicator.send_json_to({"action": "stop"})  # Ctrl-C: the newest run
    while (message := await receive(communicator))["type"] != "exit":
        assert message["type"] == "output"
    assert message["reason"] == "stopped" and message["code"] == -9 and message["message"] == "Stopped."
    await communicator.disconnect()


async def test_closing_the_socket_kills_what_runs_and_removes_the_workspace(lab: LiveLab) -> None:
    processes: list[runner.KubectlProcess] = []
    workspaces: list[runner.Workspace] = []

    @asynccontextmanager
    async def keep(**kwargs: Any) -> AsyncIterator[runner.KubectlProcess]:
        workspaces.append(kwargs["workspace"])
        async with runner.start(**kwargs) as process:
            processes.append(process)
            yield process

    communicator = socket(FakeSandboxes(kubeconfig=lab.kubeconfig.read_bytes()), keep)
    await ready(communicator)
    await communicator.send_json_to({"action": "run", "command": "kubectl get ns -w"})
    assert (await receive(communicator))["type"] == "started"
    assert (await receive(communicator))["type"] == "output"
    await communicator.disconnect()
    assert processes[0].process.returncode == -9
    assert gone(processes[0].pid)
    assert not await asyncio.to_thread(workspaces[0].root.exists)
    assert runner.SLOTS.running == {}


async def test_a_reset_elsewhere_gives_the_next_command_the_new_kubeconfig() -> None:
    """A reset replaces every token: the open console writes the new kubeconfig before its next run."""
    sandboxes, seen = FakeSandboxes(kubeconfig=b"old"), []

    @asynccontextmanager
    async def look(**kwargs: Any) -> AsyncIterator[Any]:
        seen.append(await asyncio.to_thread(kwargs["workspace"].kubeconfig.read_bytes))
        async with SpyRunner()(**kwargs) as process:
            yield process

    communicator = socket(sandboxes, look)
    await ready(communicator)
    await communicator.send_json_to({"action": "run", "command": "kubectl get pods"})
    while (await receive(communicator))["type"] != "exit":
        pass
    sandboxes.kubeconfig = b"new"  # the sandbox was reset from the sandbox page
    await communicator.send_json_to({"action": "run", "command": "kubectl get pods"})
    while (await receive(communicator))["type"] != "exit":
        pass
    await communicator.disconnect()
    assert seen == [b"old", b"new"]


# -- at most two at a time ---------------------------------------------------------------------------


class Blocking:
    """A runner whose runs print nothing and last until stopped."""

    def __init__(self) -> None:
        self.started = 0

    def __call__(self, **kwargs: Any) -> Any:
        self.started += 1
        return self._run()

    @asynccontextmanager
    async def _run(self) -> AsyncIterator[Any]:
        stopped = asyncio.Event()

        class Process:
            result: runner.RunResult | None = None

            async def output(self) -> AsyncIterator[str]:
                await stopped.wait()
                self.result = runner.RunResult(exit_code=-9, output="", reason=runner.ExitReason.STOPPED)
                return
                yield ""

            async def stop(self) -> None:
                stopped.set()

        yield Process()


async def test_a_third_command_at_once_is_refused_until_one_ends() -> None:
    blocking = Blocking()
    communicator = socket(FakeSandboxes(), blocking)
    await ready(communicator)
    for run in (1, 2):
        await communicator.send_json_to({"action": "run", "command": "kubectl get pods -w"})
        assert (await receive(communicator)) == {
            "type": "started",
            "run": run,
            "command": "kubectl get pods -w",
        }
    await communicator.send_json_to({"action": "run", "command": "kubectl get nodes"})
    busy = await receive(communicator)
    assert busy["type"] == "refused" and busy["reason"] == "busy"
    assert "2 commands" in busy["message"]
    assert blocking.started == 2
    await communicator.send_json_to({"action": "stop", "run": 1})
    assert (await receive(communicator))["reason"] == "stopped"
    await communicator.send_json_to({"action": "run", "command": "kubectl get nodes"})
    assert (await receive(communicator))["type"] == "started"
    await communicator.disconnect()
    assert runner.SLOTS.running == {}


# -- the chapter's impersonation list ----------------------------------------------------------------


async def test_the_impersonation_list_comes_from_the_chapter(monkeypatch: pytest.MonkeyPatch) -> None:
    class CourseNotFound(LookupError):
        pass

    def load_course(slug: str) -> Any:
        if slug != "control-plane":
            raise CourseNotFound(slug)
        chapters = (
            types.SimpleNamespace(slug="one-hub", impersonate=()),
            types.SimpleNamespace(slug="rbac", impersonate=("jane",)),
        )
        return types.SimpleNamespace(slug=slug, chapters=chapters)

    fake = types.SimpleNamespace(load_course=load_course, CourseNotFound=CourseNotFound)
    monkeypatch.setattr(console, "content", fake)
    assert await chapter_impersonation("control-plane", "rbac") == ("jane",)
    assert await chapter_impersonation("control-plane", "one-hub") == ()
    assert await chapter_impersonation("control-plane", "nope") is None
    assert await chapter_impersonation("nope", "rbac") is None


# -- fuzzing the socket ------------------------------------------------------------------------------

MESSAGES = st.one_of(
    st.text(min_size=1, max_size=200),  # (the test communicator cannot send an empty frame)
    st.builds(lambda c: json.dumps({"action": "run", "command": c}), st.text(max_size=200)),
    st.builds(
        lambda c, s: json.dumps({"action": "run", "command": c, "stdin": s}),
        st.sampled_from(["kubectl apply -f -", "kubectl get pods", "kubectl get pods | sh"]),
        st.one_of(st.none(), st.text(max_size=50), st.integers()),
    ),
    st.builds(
        lambda r: json.dumps({"action": "stop", "run": r}), st.one_of(st.none(), st.integers(), st.text())
    ),
    st.builds(
        json.dumps, st.dictionaries(st.text(max_size=10), st.one_of(st.text(max_size=20), st.integers()))
    ),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(MESSAGES, min_size=1, max_size=6))
def test_whatever_the_page_sends_the_socket_answers_and_stays_open(messages: list[str]) -> None:
    async def play() -> None:
        communicator = socket(FakeSandboxes(), SpyRunner())
        await ready(communicator)
        for text in messages:
            await communicator.send_to(text_data=text)
        await communicator.send_json_to({"action": "run", "command": "kubectl version --client"})
        while (answer := await receive(communicator)).get("command") != "kubectl version --client":
            assert answer["type"] in ("error", "refused", "started", "output", "exit"), answer
        # still open, still answering in order (two runs of its own may still hold the slots)
        assert answer["type"] == "started" or answer.get("reason") == "busy", answer
        await communicator.disconnect()

    asyncio.run(play())
