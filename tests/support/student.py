"""A student of a live lab (``tests.support.lab.LiveLab``): signed up through the real form, with a
session cookie, and a chapter page's socket opened as a browser would open it.

The course tests drive the lab from outside, the way a person does: HTTP to the web port (sign up,
submit the manifest form) and the chapter's websocket (open a step, ask for its solution, read the
verdicts). Nothing here reaches into the lab process.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import websockets

from tests.support.lab import LiveLab

_CSRF_INPUT = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


@dataclass
class Student:
    lab: LiveLab
    username: str
    client: httpx.Client

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.lab.web}"

    def csrf(self, path: str) -> str:
        """The CSRF token of the form on ``path`` (a GET of the page sets the cookie too)."""
        page = self.client.get(path)
        found = _CSRF_INPUT.search(page.text)
        assert found is not None, f"no CSRF token on {path}: {page.status_code}"
        return found.group(1)

    def cookie_header(self) -> str:
        return "; ".join(f"{name}={value}" for name, value in self.client.cookies.items())

    def submit(
        self, text: str, *, action: str = "apply", course: str = "", chapter: str = ""
    ) -> httpx.Response:
        """Submit the manifest form as htmx does: the result fragment comes back."""
        token = self.csrf("/manifests/")
        return self.client.post(
            "/manifests/submit/",
            data={"manifest": text, "action": action, "course": course, "chapter": chapter},
            headers={"HX-Request": "true", "X-CSRFToken": token, "Referer": self.base + "/manifests/"},
            timeout=60,
        )


def sign_up(lab: LiveLab, username: str, password: str = "a-long-Password-42") -> Student:
    """A new account made through the sign-up form, signed in."""
    client = httpx.Client(base_url=f"http://127.0.0.1:{lab.web}", follow_redirects=False, timeout=30)
    student = Student(lab, username, client)
    token = student.csrf("/accounts/sign-up/")
    response = client.post(
        "/accounts/sign-up/",
        data={
            "csrfmiddlewaretoken": token,
            "username": username,
            "password1": password,
            "password2": password,
        },
        headers={"Referer": student.base + "/accounts/sign-up/"},
    )
    assert response.status_code == 302, f"sign-up failed: {response.status_code} {response.text[:500]}"
    return student


class ChapterSocket:
    """A chapter page's socket: send actions, await the messages the page would get."""

    def __init__(self, socket: Any) -> None:
        self.socket = socket
        self.seen: list[dict[str, Any]] = []

    async def send(self, **message: Any) -> None:
        await self.socket.send(json.dumps(message))

    async def until(
        self, match: Callable[[dict[str, Any]], bool], what: str, *, seconds: float = 60
    ) -> dict[str, Any]:
        """The next message that ``match``es (every message is kept in ``seen``)."""
        try:
            async with asyncio.timeout(seconds):
                while True:
                    message: dict[str, Any] = json.loads(await self.socket.recv())
                    self.seen.append(message)
                    if match(message):
                        return message
        except TimeoutError:
            tail = "\n".join(json.dumps(m, ensure_ascii=False) for m in self.seen[-8:])
            raise AssertionError(
                f"timed out after {seconds:g} s waiting for {what}; last messages:\n{tail}"
            ) from None

    async def verdict(self, step: str, statuses: set[str], *, seconds: float = 60) -> dict[str, Any]:
        return await self.until(
            lambda m: m.get("type") == "verdict" and m.get("step") == step and m.get("status") in statuses,
            f"a verdict {sorted(statuses)} for step {step}",
            seconds=seconds,
        )


@asynccontextmanager
async def chapter_socket(student: Student, course: str, chapter: str) -> AsyncIterator[ChapterSocket]:
    url = f"ws://127.0.0.1:{student.lab.web}/ws/course/{course}/{chapter}/steps/"
    headers = {"Cookie": student.cookie_header(), "Origin": student.base}
    async with websockets.connect(url, additional_headers=headers, open_timeout=30) as socket:
        yield ChapterSocket(socket)
