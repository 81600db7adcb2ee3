"""The ASGI application the console's browser test serves with daphne: the console's socket for a
signed-in "alice" whose sandbox is a live lab's demo cluster (the kubeconfig in
``CONSOLE_TEST_KUBECONFIG``), and the static files. The chapter page and the sandbox service are other
areas' work; this stands in for them so that the console is tested on its own, end to end: a real
browser, a real socket, the policy, the runner and the real kubectl."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from django.core.asgi import get_asgi_application

django_application = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.contrib.auth.models import User  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402
from django.urls import path  # noqa: E402

from courses.console import consumer  # noqa: E402
from tests.courses.console.conftest import FakeSandboxes  # noqa: E402
from tests.courses.console.pages import console_page  # noqa: E402


async def _every_chapter(course: str, chapter: str) -> tuple[str, ...]:
    return ("jane",)


consumer.chapter_impersonation = _every_chapter
SANDBOXES = FakeSandboxes(kubeconfig=Path(os.environ["CONSOLE_TEST_KUBECONFIG"]).read_bytes())


class AsAlice:
    """Every socket is alice's (what the session middleware would say after she signed in)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        await self.app({**scope, "user": User(pk=1, username="alice")}, receive, send)


class ConsolePage:
    """``/console/``: the console's page (served from here, not faked by the browser: Chromium lets a
    page open a socket to 127.0.0.1 only if the page itself came from there); the rest: static files."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["path"] != "/console/":
            await self.app(scope, receive, send)
            return
        body = console_page().encode()
        headers = [
            (b"content-type", b"text/html; charset=utf-8"),
            (b"content-length", str(len(body)).encode()),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})


application = ProtocolTypeRouter(
    {
        "http": ConsolePage(ASGIStaticFilesHandler(django_application)),
        "websocket": AsAlice(
            URLRouter(
                [
                    path(
                        "ws/course/<str:course>/<str:chapter>/console/",
                        consumer.ConsoleConsumer.as_asgi(sandboxes=SANDBOXES),
                    )
                ]
            )
        ),
    }
)
