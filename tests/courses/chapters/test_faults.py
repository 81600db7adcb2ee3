"""A step's fault buttons and a solution's faults, on a live sandbox of an in-process lab.

The chapter page's socket is spoken as the page speaks it (Channels' test communicator); the lab is
real and active (``tests.support.lab.active_lab``), so a fault really stops the sandbox's kubelet. What
needs the database (the Sandbox row, progress) and the step's check are stood in for: the sandbox
service answers with the live cluster, as it would for this student.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User
from django.urls import path
from django.utils import translation

from controlplane.faults.catalogue import check
from controlplane.faults.service import FaultService
from controlplane.runtime import Lab, LabConfig
from courses.chapters import consumer as chapter_consumer
from courses.chapters.consumer import ChapterConsumer
from courses.chapters.solutions import run_solution
from courses.classrooms import shared
from courses.engine.checks import parse_check
from courses.engine.content import Action, Chapter, FaultAction, Highlight, Solution, Step
from courses.progress import services as progress
from courses.sandboxes import services as sandboxes
from courses.sandboxes.services import SandboxAccess
from tests.support.lab import active_lab

SANDBOX = "sb-7"
ALICE = User(pk=7, username="alice")
TIMEOUT = 30

STOP = FaultAction(check("stop-kubelet", {"node": "node-2"}))
START = FaultAction(check("stop-kubelet", {"node": "node-2"}, clearing=True), clear=True)


def step(step_id: str, *actions: Action, solution: Solution | None = None) -> Step:
    return Step(
        id=step_id,
        highlight=Highlight(),
        narration=(),
        timeline=None,
        editor=None,
        actions=actions,
        wait=None,
        check=parse_check({"trace": {"sequence": [{"type": "fault.applied"}]}}, where="test"),
        hints=(),
        solution=solution or Solution(),
    )


CHAPTER = Chapter(
    course="c",
    slug="ch",
    number=1,
    nodes=3,
    impersonate=(),
    steps=(
        step(
            "break-a-node",
            Action(kind="fault", fault=STOP),
            Action(kind="kubectl", kubectl="kubectl get nodes"),
            Action(kind="fault", fault=START, label={"en": "Bring node-2 back", "zh-hans": "恢复 node-2"}),
        ),
    ),
    prose={},
)


@pytest.fixture
async def lab(tmp_path: Path) -> AsyncIterator[Lab]:
    """An active lab running the student's sandbox, its components and all."""
    async with active_lab(LabConfig(data_dir=tmp_path, demo_cluster="")) as running:
        await running.ensure_cluster(SANDBOX)
        await running.settled(SANDBOX)
        yield running


@dataclass
class Sandboxes:
    """The sandbox service for the socket's student: their sandbox is the live one."""

    asked_for: list[str] = field(default_factory=list)

    async def ensure_sandbox(self, *, user: Any) -> SandboxAccess:
        self.asked_for.append(user.get_username())
        return SandboxAccess(cluster=f"sb-{user.pk}", user=f"student:{user.get_username()}", token="t")


class NoRunner:
    """The step's check, not run here (its own tests are elsewhere)."""

    done = False

    def __init__(self, **_: Any) -> None:
        pass

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None


@pytest.fixture
def page(monkeypatch: pytest.MonkeyPatch) -> Sandboxes:
    """Everything of the socket that needs the database or a check, stood in for."""
    service = Sandboxes()

    async def nothing(**_: Any) -> Any:
        return {}

    monkeypatch.setattr(
        chapter_consumer, "_find", lambda course, chapter: CHAPTER if chapter == "ch" else None
    )
    monkeypatch.setattr(sandboxes, "ensure_sandbox", service.ensure_sandbox)
    monkeypatch.setattr(sandboxes, "checker_token", nothing)
    monkeypatch.setattr(progress, "arecord_open", nothing)
    monkeypatch.setattr(progress, "achapter_progress", nothing)
    monkeypatch.setattr(chapter_consumer, "StepRunner", NoRunner)

    async def own_sandbox(**_: Any) -> Any:
        return sandboxes  # no classroom's shared cluster: no database to ask

    monkeypatch.setattr(shared, "cluster_service", own_sandbox)

    async def english(scope: Any) -> str:
        return "en"

    monkeypatch.setattr(chapter_consumer, "_scope_language", english)
    return service


def socket() -> WebsocketCommunicator:
    app = URLRouter([path("ws/course/<str:course>/<str:chapter>/steps/", ChapterConsumer.as_asgi())])
    communicator = WebsocketCommunicator(app, "/ws/course/c/ch/steps/")
    communicator.scope["user"] = ALICE
    return communicator


async def until(communicator: WebsocketCommunicator, state: str) -> list[dict[str, Any]]:
    """Every message up to the first ``progress`` in ``state``, that one included."""
    seen: list[dict[str, Any]] = []
    async with asyncio.timeout(TIMEOUT):
        while True:
            message: dict[str, Any] = await communicator.receive_json_from(timeout=TIMEOUT)
            seen.append(message)
            if message["type"] == "progress" and message["state"] == state:
                return seen


async def test_a_fault_button_breaks_the_students_own_sandbox_and_another_mends_it(
    lab: Lab, page: Sandboxes
) -> None:
    cluster = lab.cluster(SANDBOX)
    faults = FaultService.of(lab)
    communicator = socket()
    assert (await communicator.connect(timeout=TIMEOUT))[0]
    await until_ready(communicator)
    await communicator.send_json_to({"action": "open", "step": "break-a-node"})

    # The page sends the action's index; anything else it says is not listened to.
    await communicator.send_json_to(
        {"action": "fault", "index": 0, "cluster": "sb-8", "kind": "compact-store"}
    )

    said = await until(communicator, "done")
    assert [m["text"] for m in said if m["type"] == "progress"] == [
        "Stop the kubelet on node-2…",
        "Stop the kubelet on node-2: done.",
    ]
    assert page.asked_for[-1] == "alice"
    assert "kubelet:node-2" in cluster.components_stopped
    (fault,) = faults.in_force(SANDBOX)
    assert (fault.kind, fault.target) == ("stop-kubelet", "kubelet:node-2")
    assert fault.reason == "chapter c/ch, step break-a-node, by student:alice"

    await communicator.send_json_to({"action": "fault", "index": 2})

    said = await until(communicator, "done")
    assert said[-1]["text"] == "Start the kubelet on node-2 again: done."
    assert faults.in_force() == [] and "kubelet:node-2" in cluster.components_running

    await communicator.send_json_to({"action": "fault", "index": 1})  # the kubectl button is no fault
    said = await until(communicator, "error")
    assert said[-1]["text"] == "This step offers no such fault."
    await communicator.send_json_to({"action": "fault", "index": 9})
    assert (await until(communicator, "error"))[-1]["text"] == "This step offers no such fault."
    assert faults.in_force() == []
    await communicator.disconnect()


async def until_ready(communicator: WebsocketCommunicator) -> None:
    async with asyncio.timeout(TIMEOUT):
        while True:
            message = await communicator.receive_json_from(timeout=TIMEOUT)
            if message["type"] == "sandbox" and message["state"] == "ready":
                assert message["cluster"] == SANDBOX
                return


@dataclass
class Said:
    lines: list[tuple[str, str]] = field(default_factory=list)

    async def __call__(self, message: str, state: str) -> None:
        self.lines.append((message, state))


async def test_a_solutions_faults_run_on_the_sandbox(lab: Lab) -> None:
    cluster = lab.cluster(SANDBOX)
    access = SandboxAccess(cluster=SANDBOX, user="student:alice", token="t")
    said = Said()
    with translation.override("zh-hans"):
        await run_solution(access=access, step=step("s", solution=Solution(faults=(STOP,))), say=said)
    assert said.lines == [
        ("停止 node-2 上的 kubelet……", "working"),
        ("停止 node-2 上的 kubelet：已完成。", "done"),  # noqa: RUF001 (Chinese punctuation)
    ]
    assert cluster.components_stopped == {"kubelet:node-2"}
    (fault,) = FaultService.of(lab).in_force(SANDBOX)
    assert fault.reason == "the solution of step s"

    with translation.override("en"):
        await run_solution(access=access, step=step("t", solution=Solution(faults=(START, START))), say=said)
    assert said.lines[-1] == ("Start the kubelet on node-2 again: there was nothing to clear.", "done")
    assert cluster.components_stopped == set() and FaultService.of(lab).in_force() == []


def test_a_fault_button_says_the_catalogues_words_in_the_pages_language() -> None:
    from courses.chapters.selectors import ActionView, action_views

    (only,) = CHAPTER.steps
    assert action_views(only, "zh-hans") == (
        ActionView("fault", "停止 node-2 上的 kubelet", index=0),
        ActionView("kubectl", "kubectl get nodes", command="kubectl get nodes"),
        ActionView("fault", "恢复 node-2", index=2),
    )
    assert action_views(only, "en")[0].label == "Stop the kubelet on node-2"


@pytest.mark.django_db
def test_the_chapter_page_shows_a_fault_button_in_the_pages_language(tmp_path: Path, settings: Any) -> None:
    from django.test import Client

    from controlplane.runtime import activate
    from courses.engine import content as course_content

    fixtures = Path(__file__).parents[1] / "engine" / "fixtures" / "valid"
    shutil.copytree(fixtures / "tiny", tmp_path / "content" / "tiny")
    chapter = tmp_path / "content" / "tiny" / "01-first" / "chapter.yaml"
    first = '      - {kubectl: "kubectl get configmap -w"}\n'
    chapter.write_text(
        chapter.read_text().replace(first, first + "      - {fault: stop-kubelet, node: node-1}\n")
    )
    settings.KUBELAB_COURSE_CONTENT = tmp_path / "content"
    settings.KUBELAB_DATA_DIR = tmp_path
    activate(None)
    course_content.reload()
    client = Client()
    client.force_login(User.objects.create_user("alice", password="a-long-Password-42"))
    try:
        english = client.get("/learn/tiny/first/?step=create-configmap").content.decode()
        chinese = client.get(
            "/learn/tiny/first/?step=create-configmap", HTTP_ACCEPT_LANGUAGE="zh-CN"
        ).content.decode()
    finally:
        course_content.reload()
    button = '<button type="button" class="fault" data-action="fault" data-index="1">⚠ {}</button>'
    assert button.format("Stop the kubelet on node-1") in english
    assert button.format("停止 node-1 上的 kubelet") in chinese
