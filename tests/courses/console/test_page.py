"""The console's page side: the partial the chapter page includes, its script's unit tests, and the
route in the real ASGI application."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from channels.testing import WebsocketCommunicator
from django.template.loader import render_to_string
from django.utils import translation

HERE = Path(__file__).parent


def test_the_partial_points_the_script_at_the_chapters_socket_in_the_pages_language() -> None:
    with translation.override("zh-hans"):
        html = render_to_string(
            "courses/console/_console.html", {"course": "control-plane", "chapter": "one-hub"}
        )
    assert 'data-console-url="/ws/course/control-plane/one-hub/console/?lang=zh-hans"' in html
    assert "courses/console.js" in html
    assert 'role="log"' in html and 'aria-live="polite"' in html
    for label in ("connecting", "ready", "reconnecting", "waiting", "refused", "exit", "empty"):
        assert f"data-label-{label}=" in html


def test_the_slugs_cannot_break_out_of_the_url() -> None:
    html = render_to_string("courses/console/_console.html", {"course": 'a"/../b', "chapter": "c d"})
    assert "/ws/course/a%22%2F..%2Fb/c%20d/console/" in html


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node 18 or later")
def test_the_scripts_pure_parts() -> None:
    result = subprocess.run(
        ["node", "--test", str(HERE / "console.test.mjs")], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.django_db
async def test_the_route_is_served_and_refuses_an_anonymous_visitor() -> None:
    from config.asgi import application

    communicator = WebsocketCommunicator(
        application, "/ws/course/c/ch/console/", headers=[(b"origin", b"http://localhost")]
    )
    connected, _ = await communicator.connect(timeout=10)
    assert connected
    assert await communicator.receive_json_from(timeout=10) == {
        "type": "error",
        "code": 4403,
        "message": "Sign in to use the kubectl console.",
    }
    assert (await communicator.receive_output(timeout=10))["code"] == 4403
    await communicator.disconnect()
