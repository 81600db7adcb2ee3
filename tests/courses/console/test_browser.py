"""The console in a real browser (Playwright, Debian's Chromium).

First with a scripted socket (``FAKE_SOCKET``, as the topology's browser tests do): the page's side of
the protocol exactly, keys and all. Then end to end: the partial served by daphne with the console's
socket, a signed-in student whose sandbox is a live lab's cluster, and the real kubectl; a command typed
into the page prints its output there.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import CHROMIUM, FAKE_SOCKET, FakeServer, _missing
from tests.courses.console.pages import console_page
from tests.support.lab import LiveLab
from tests.support.services import free_port

ROOT = Path(__file__).resolve().parents[3]
STATIC = ROOT / "static"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(_missing() is not None and os.environ.get("CI") != "true", reason=str(_missing())),
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Closed with this module: Playwright's sync API holds an event loop that later asyncio tests need."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1000, "height": 800})
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    yield opened
    context.close()
    assert not errors, f"the page raised: {errors}"


def serve_offline(page: Any, origin: str = "http://console.test") -> str:
    """The console's page and its static files, answered by the browser itself (no server)."""
    html = console_page()

    def static(route: Any) -> None:
        relative = route.request.url.split("/static/", 1)[1].split("?", 1)[0]
        file = (STATIC / relative).resolve()
        assert STATIC in file.parents, relative
        kind = "text/javascript" if file.suffix in (".js", ".mjs") else "text/css"
        route.fulfill(body=file.read_bytes(), content_type=kind)

    page.route(f"{origin}/static/**", static)
    page.route(f"{origin}/console/", lambda route: route.fulfill(body=html, content_type="text/html"))
    return f"{origin}/console/"


# -- the page's side of the protocol -----------------------------------------------------------------


def test_typing_a_command_sends_it_and_shows_its_answer(page: Any) -> None:
    page.add_init_script(FAKE_SOCKET)
    server = FakeServer(page)
    page.goto(serve_offline(page))
    server.wait_connected()
    assert server.url() == "ws://console.test/ws/course/c/ch/console/?lang=en"
    server.send({"type": "status", "message": "Starting your sandbox…"})
    server.send({"type": "ready", "cluster": "sandbox-alice", "user": "student:alice"})
    state = page.locator("[data-console-state]")
    assert "sandbox-alice" in state.inner_text()

    command = page.get_by_label("kubectl command")
    command.fill("kubectl apply -f -")
    command.press("Enter")
    assert server.sent() == [{"action": "run", "command": "kubectl apply -f -", "stdin": "kind: ConfigMap\n"}]
    echo = page.locator(".console-echo").last
    assert echo.inner_text() == "$ kubectl apply -f -"
    server.send({"type": "started", "run": 1, "command": "kubectl apply -f -"})
    server.send({"type": "output", "run": 1, "data": "\x1b[32mconfigmap/app created\x1b[0m\n"})
    server.send({"type": "exit", "run": 1, "code": 0, "reason": "exited", "message": ""})
    output = page.locator(".console-text").last
    assert output.inner_text() == "configmap/app created\n"  # colours stripped
    page.wait_for_function(
        "() => document.querySelector('[data-console-announce]').textContent.includes('app created')"
    )  # read out to a screen reader, a moment later

    command.fill("kubectl get pods | grep web")
    command.press("Enter")
    message = "This console runs kubectl itself, not a shell."
    server.send(
        {"type": "refused", "reason": "shell", "message": message, "command": "kubectl get pods | grep web"}
    )
    assert page.locator(".console-refusal").last.inner_text() == f"Not run: {message}"

    command.press("ArrowUp")
    assert command.input_value() == "kubectl get pods | grep web"
    command.press("ArrowUp")
    assert command.input_value() == "kubectl apply -f -"
    command.press("ArrowDown")
    command.press("ArrowDown")
    assert command.input_value() == ""


def test_ctrl_c_and_the_stop_button_stop_the_newest_run(page: Any) -> None:
    page.add_init_script(FAKE_SOCKET)
    server = FakeServer(page)
    page.goto(serve_offline(page))
    server.wait_connected()
    server.send({"type": "ready", "cluster": "sandbox-alice", "user": "student:alice"})
    stop = page.get_by_role("button", name="Stop")
    assert stop.is_disabled()
    page.evaluate("window.kubelabConsole.run('kubectl get pods -w')")  # a step's "run" button
    server.send({"type": "started", "run": 7, "command": "kubectl get pods -w"})
    assert stop.is_enabled()
    page.get_by_label("kubectl command").press("Control+c")
    assert server.sent()[-1] == {"action": "stop", "run": 7}
    server.send({"type": "exit", "run": 7, "code": -9, "reason": "stopped", "message": "Stopped."})
    assert "Stopped." in page.locator(".console-exit").last.inner_text()
    assert stop.is_disabled()

    page.evaluate("window.kubelabConsole.type('kubectl get nodes')")
    assert page.get_by_label("kubectl command").input_value() == "kubectl get nodes"
    assert server.sent()[-1] == {"action": "stop", "run": 7}  # type() only types


def test_a_refused_socket_says_why_and_does_not_reconnect(page: Any) -> None:
    page.add_init_script(FAKE_SOCKET)
    server = FakeServer(page)
    page.goto(serve_offline(page))
    server.wait_connected()
    server.send({"type": "error", "code": 4403, "message": "Sign in to use the kubectl console."})
    page.evaluate("window.__sockets.at(-1).close(4403)")
    page.wait_for_timeout(1200)  # longer than the first reconnection delay
    assert page.evaluate("window.__sockets.length") == 1
    assert page.locator("[data-console-state]").inner_text() == "Sign in to use the kubectl console."


# -- end to end --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveLab]:
    live = LiveLab(Path(tmp_path_factory.mktemp("console-browser-lab")))
    try:
        yield live
    finally:
        live.stop()


@pytest.fixture(scope="module")
def console_server(lab: LiveLab, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """daphne serving ``browserapp.application`` on a free port."""
    port = free_port()
    data_dir = tmp_path_factory.mktemp("console-web")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("KUBELAB_")},
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "KUBELAB_DATA_DIR": str(data_dir),
        "CONSOLE_TEST_KUBECONFIG": str(lab.kubeconfig),
    }
    command = [
        str(Path(sys.executable).parent / "daphne"), "-b", "127.0.0.1", "-p", str(port),
        "tests.courses.console.browserapp:application",
    ]  # fmt: skip
    log = data_dir / "daphne.log"
    with log.open("w") as out:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert process.poll() is None, log.read_text()
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(30)


def test_a_command_typed_in_the_page_runs_kubectl_in_the_sandbox_and_prints_its_output(
    page: Any, console_server: str, lab: LiveLab
) -> None:
    page.goto(f"{console_server}/console/")
    page.locator("[data-console-state]").get_by_text("Connected to your sandbox").wait_for()

    command = page.get_by_label("kubectl command")
    command.fill("kubectl get namespaces")
    command.press("Enter")
    page.locator(".console-text", has_text="kube-system").wait_for()

    command.fill("kubectl get pods --kubeconfig=/etc/passwd")
    command.press("Enter")
    page.locator(".console-refusal", has_text="--kubeconfig=/etc/passwd").wait_for()

    command.fill("kubectl get configmaps -w")
    command.press("Enter")
    page.locator(".console-run.running").wait_for()
    lab.kubectl("create", "configmap", "seen-in-the-browser", "--from-literal=a=b")
    page.locator(".console-text", has_text="seen-in-the-browser").wait_for()
    command.press("Control+c")
    page.locator(".console-exit", has_text="Stopped.").wait_for()
    assert page.locator(".console-run.running").count() == 0
