"""Browser tests: Python Playwright driving Debian's Chromium (``/usr/bin/chromium``), headless.

Both come from the project's own install steps (``playwright`` in requirements-dev.txt, ``chromium``
in the Makefile's debian-packages). Locally a test is skipped when either is missing; in CI
(``CI=true``) it fails instead, so a missing install step cannot pass unseen.

``fake_socket`` replaces the page's ``WebSocket`` with a scripted one before any page script runs:
the test plays the server's side of the trace protocol (hello, state, frames, errors) and reads what the page
sent back, so the page's protocol handling is tested exactly, without a running cluster.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")


def _missing() -> str | None:
    if importlib.util.find_spec("playwright") is None:
        return "the playwright package is not installed (requirements-dev.txt)"
    if not CHROMIUM.exists():
        return "Debian's chromium is not installed (make debian-packages)"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    missing = _missing()
    if missing is None or os.environ.get("CI") == "true":
        return
    for item in items:
        if item.get_closest_marker("browser"):
            item.add_marker(pytest.mark.skip(reason=missing))


@pytest.fixture(scope="package")
def web_server() -> Iterator[str]:
    """Django (with its static files) on a free port in a thread, started before the browser.

    Not pytest-django's ``live_server``: that sets up a test database from inside the test, which
    Django refuses while Playwright's sync API keeps an event loop in this thread. The page needs no
    database."""
    from django.contrib.staticfiles.handlers import StaticFilesHandler
    from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler
    from django.core.wsgi import get_wsgi_application

    class QuietHandler(WSGIRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadedWSGIServer(("127.0.0.1", 0), QuietHandler, allow_reuse_address=False)
    server.set_app(StaticFilesHandler(get_wsgi_application()))
    thread = threading.Thread(target=server.serve_forever, name="browser-test-web", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture(scope="package")
def browser(web_server: str) -> Iterator[Any]:
    """Playwright's sync API runs an event loop in this thread while it is open, which stops every
    later test that starts one of its own: it is closed with the package, not the session."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.errors = errors
    yield page
    context.close()
    assert not errors, f"the page raised: {errors}"


FAKE_SOCKET = """
(() => {
  const sockets = [];
  class FakeSocket extends EventTarget {
    static CONNECTING = 0; static OPEN = 1; static CLOSING = 2; static CLOSED = 3;
    constructor(url) {
      super();
      this.url = url; this.readyState = 0; this.sent = [];
      sockets.push(this);
      setTimeout(() => { this.readyState = 1; this.dispatchEvent(new Event("open")); }, 0);
    }
    send(data) { this.sent.push(JSON.parse(data)); }
    close(code = 1000) {
      this.readyState = 3;
      const event = new Event("close"); event.code = code; this.dispatchEvent(event);
    }
    serverSend(message) {
      const event = new Event("message"); event.data = JSON.stringify(message); this.dispatchEvent(event);
    }
  }
  window.WebSocket = FakeSocket;
  window.__sockets = sockets;
})();
"""


class FakeServer:
    """The server's side of the trace websocket, played by the test through the page's fake socket."""

    def __init__(self, page: Any) -> None:
        self.page = page

    def wait_connected(self, count: int = 1) -> None:
        self.page.wait_for_function(f"window.__sockets && window.__sockets.length >= {count}")

    def send(self, message: dict[str, Any]) -> None:
        self.page.evaluate("m => window.__sockets.at(-1).serverSend(m)", message)

    def sent(self) -> list[dict[str, Any]]:
        sent: list[dict[str, Any]] = self.page.evaluate("() => window.__sockets.at(-1).sent")
        return sent

    def url(self) -> str:
        url: str = self.page.evaluate("() => window.__sockets.at(-1).url")
        return url

    def frame(self, events: list[dict[str, Any]], *, summary: dict[str, Any] | None = None) -> None:
        seqs = [e["seq"] for e in events]
        frame: dict[str, Any] = {"type": "frame", "first": min(seqs), "last": max(seqs), "events": events}
        if summary is not None:
            frame["summary"] = summary
            frame["first"] = min(frame["first"], summary["first"])
            frame["last"] = max(frame["last"], summary["last"])
        self.send(frame)


@pytest.fixture
def fake_socket(page: Any) -> FakeServer:
    page.add_init_script(FAKE_SOCKET)
    return FakeServer(page)
