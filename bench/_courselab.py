"""The live lab of ``python -m bench course``, and its students, driven from outside as browsers drive it.

``RunLab`` is ``manage.py runlab`` in a temporary data directory, on free loopback ports: one process,
daphne's event loop running the web app and every cluster, exactly as a classroom's server runs. The
benchmark never reaches into it; everything below is HTTP and websockets to its web port.

A ``Student`` is one person with a browser: an account made through the sign-up form, their own
session cookie and CSRF token in an ``httpx.AsyncClient`` of their own (its own connections, as each
browser has), the chapter page's socket, and the manifest form's ``POST`` as htmx sends it. The same
steps as ``tests/support/student.py``, asynchronous, so that fifty of them can run in one event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import websockets
import yaml

from bench.api import free_port, process_cpu

ROOT = Path(__file__).resolve().parents[1]
START_TIMEOUT = 180.0
#: Seconds a student's sandbox may take to be ready, a form submission to answer, a page to load.
SANDBOX_TIMEOUT = 120.0
SUBMIT_TIMEOUT = 30.0
REQUEST_TIMEOUT = 60.0
COURSE = "control-plane"
CHAPTER = "one-hub"
#: The step a student's open page holds during the form's load: its check (a write of ConfigMap
#: ``app-config`` delivered to the student's watch) never passes on the benchmark's manifests, so it
#: keeps evaluating every trace event of the sandbox, as a check does while a student works.
STEP = "watch-a-change"
PASSWORD = "a-long-Password-42"

_CSRF_INPUT = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
_OUTCOME = re.compile(r'data-outcome="([a-z]+)"')
_STATE = re.compile(r'class="manifest-document" data-state="([a-z-]+)"')
_SUMMARY = re.compile(r'<p class="manifest-summary[^"]*"[^>]*>(.*?)</p>', re.S)
_TAG = re.compile(r"<[^>]+>")


class LabFailed(RuntimeError):
    """The lab did not start, or stopped answering; the message has the end of its log."""


class RunLab:
    """``manage.py runlab`` on free ports in ``data_dir``, with ``settings`` (``KUBELAB_...``) added."""

    def __init__(self, data_dir: Path, **settings: str) -> None:
        self.data_dir = data_dir
        self.web = free_port()
        self.api = free_port()
        self.log = data_dir / "runlab.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBELAB_")}
        env.update(PYTHONUNBUFFERED="1", DJANGO_SETTINGS_MODULE="config.settings", **settings)
        self.env = env
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.web}"

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def start(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        command = [
            sys.executable, "manage.py", "runlab",
            "--web", f"127.0.0.1:{self.web}", "--api", f"127.0.0.1:{self.api}",
            "--data-dir", str(self.data_dir),
        ]  # fmt: skip
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                command,
                cwd=ROOT,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        deadline = time.monotonic() + START_TIMEOUT
        while b"Lab running." not in self.log.read_bytes():
            if self.process.poll() is not None:
                raise LabFailed(f"runlab exited with {self.process.returncode}: {self.log_tail()}")
            if time.monotonic() > deadline:
                raise LabFailed(f"runlab did not start in {START_TIMEOUT:g} s: {self.log_tail()}")
            time.sleep(0.1)

    def log_tail(self, lines: int = 12) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def cpu(self) -> float | None:
        """CPU seconds the lab process has used so far."""
        return process_cpu(self.pid)

    def rss_mb(self) -> float | None:
        """The lab process's resident memory now, in MB."""
        return rss_mb(self.pid)

    def stop(self) -> None:
        process = self.process
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGINT)
        try:
            process.wait(90)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def rss_mb(pid: int | str = "self") -> float | None:
    """``VmRSS`` of process ``pid`` from ``/proc``, in MB (MiB), or None."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


# -- a student ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Submitted:
    """One manifest form submission: what came back, and how long it took."""

    seconds: float
    status: int | None
    #: The fragment's ``data-outcome`` (``ok``, ``failed``, ``refused``), or None without one.
    outcome: str | None
    #: Each document's ``data-state`` (``created``, ``configured``, ``unchanged`` ...).
    states: tuple[str, ...] = ()
    #: Why it is an error, in words (None: it is not one).
    error: str | None = None


@dataclass(frozen=True, slots=True)
class SandboxStart:
    """A student's first chapter page: how long until their sandbox was there for them."""

    cluster: str
    #: From opening the chapter's socket to its ``ready`` message (the API server serves); None
    #: when the lab has no chapter socket to open.
    socket_ready_s: float | None
    #: From opening it to ``/readyz`` answering ``ok`` and three nodes Ready, through the API.
    ready_s: float
    nodes_ready: int


@dataclass
class Student:
    """One signed-in student: their browser's cookies and connections (``client``), the manifest
    form's CSRF token, and once their sandbox runs its name and their token."""

    username: str
    client: httpx.AsyncClient
    csrf: str = ""
    cluster: str | None = None
    token: str | None = None
    #: Submissions made so far: each changes a value by it.
    rounds: int = 0

    @property
    def base(self) -> str:
        return str(self.client.base_url).rstrip("/")

    async def page_csrf(self, path: str) -> str:
        page = await self.client.get(path)
        found = _CSRF_INPUT.search(page.text)
        if found is None:
            raise LabFailed(f"no CSRF token on {path} ({page.status_code}) for {self.username}")
        return found.group(1)

    def cookie_header(self) -> str:
        return "; ".join(f"{name}={value}" for name, value in self.client.cookies.items())

    async def open_sandbox(self, *, poll: float = 0.05) -> SandboxStart:
        """Open the chapter page as on a student's first visit, and time how long until the sandbox is
        there for them: ``/readyz`` answering ``ok`` with three nodes Ready, asked every ``poll`` s as
        the student through the API.

        The page's socket starts the sandbox and says ``ready`` once its API server serves; the
        kubeconfig download, sent at the same moment, shares that start (one lock per sandbox) and
        answers with the student's token, so the nodes can be asked at once. A lab without the
        chapter's socket route is measured through the download alone (``socket_ready_s`` None).
        """
        started = time.perf_counter()
        socket = asyncio.ensure_future(self._socket_ready(started))
        try:
            async with asyncio.timeout(SANDBOX_TIMEOUT):
                response = await self.client.get("/sandbox/kubeconfig/", timeout=SANDBOX_TIMEOUT)
                self._read_kubeconfig(response)
                nodes = await self._until_nodes_ready(poll)
                ready = time.perf_counter() - started
                socket_ready = await socket
        finally:
            socket.cancel()
        assert self.cluster is not None
        return SandboxStart(self.cluster, socket_ready, ready, nodes)

    async def _socket_ready(self, started: float) -> float | None:
        """Seconds from ``started`` to the chapter socket's ``ready``; None if the lab has no such
        socket (its handshake is refused)."""
        url = f"ws://127.0.0.1:{self.client.base_url.port}/ws/course/{COURSE}/{CHAPTER}/steps/"
        headers = {"Cookie": self.cookie_header(), "Origin": self.base}
        try:
            connection = websockets.connect(url, additional_headers=headers, open_timeout=SANDBOX_TIMEOUT)
            async with connection as socket:
                while True:
                    message = json.loads(await socket.recv())
                    if message.get("type") != "sandbox":
                        continue
                    if message.get("state") == "failed":
                        raise LabFailed(f"the sandbox of {self.username} failed: {message.get('text')}")
                    if message.get("state") == "ready":
                        return time.perf_counter() - started
        except websockets.InvalidStatus:
            return None

    def _read_kubeconfig(self, response: httpx.Response) -> None:
        if response.status_code != 200:
            raise LabFailed(f"kubeconfig of {self.username}: {response.status_code} {response.text[:200]}")
        config = yaml.safe_load(response.text)
        self.token = str(config["users"][0]["user"]["token"])
        self.cluster = str(config["clusters"][0]["name"])

    async def _until_nodes_ready(self, poll: float, wanted: int = 3) -> int:
        """Ask the sandbox's ``/readyz`` and Nodes (through the web port, which serves the API too)
        until it is ready with ``wanted`` Ready nodes; how many were Ready."""
        api = f"/clusters/{self.cluster}"
        headers = {"Authorization": f"Bearer {self.token}"}
        while True:
            readyz = await self.client.get(f"{api}/readyz", headers=headers)
            if readyz.status_code == 200 and readyz.text.strip() == "ok":
                nodes = await self.client.get(f"{api}/api/v1/nodes", headers=headers)
                if nodes.status_code == 200:
                    ready = sum(1 for node in nodes.json().get("items", []) if _node_ready(node))
                    if ready >= wanted:
                        return ready
            await asyncio.sleep(poll)

    async def submit(self, text: str, *, action: str = "apply") -> Submitted:
        """Submit the manifest form as htmx does (``HX-Request``, the CSRF header); time the round trip."""
        data = {"manifest": text, "action": action, "course": COURSE, "chapter": CHAPTER}
        headers = {"HX-Request": "true", "X-CSRFToken": self.csrf, "Referer": self.base + "/manifests/"}
        started = time.perf_counter()
        try:
            response = await self.client.post(
                "/manifests/submit/", data=data, headers=headers, timeout=SUBMIT_TIMEOUT
            )
        except httpx.HTTPError as failure:
            words = str(failure) or f"no answer within {SUBMIT_TIMEOUT:g} s"
            return Submitted(
                time.perf_counter() - started, None, None, error=f"{type(failure).__name__}: {words}"
            )
        seconds = time.perf_counter() - started
        body = response.text
        outcome = _OUTCOME.search(body)
        states = tuple(_STATE.findall(body))
        found = outcome.group(1) if outcome else None
        error = None
        if response.status_code != 200:
            error = f"HTTP {response.status_code}"
        elif found != "ok":
            summary = _SUMMARY.search(body)
            words = " ".join(_TAG.sub(" ", summary.group(1)).split()) if summary else body[:200]
            error = f"{found or 'no outcome'}: {words}"
        return Submitted(seconds, response.status_code, found, states, error)


@dataclass
class OpenPage:
    """A student's chapter page held open: its socket running a step's check, and the live diagram's
    trace socket. Counts what each received (the benchmark reads every message, as a page does)."""

    step_messages: int = 0
    trace_frames: int = 0
    trace_events: int = 0
    #: Whether both sockets opened.
    opened: bool = False
    #: Why a socket did not open, or closed before the page was left (None: both stayed open).
    problem: str | None = None


@asynccontextmanager
async def open_page(student: Student, *, step: str) -> AsyncIterator[OpenPage]:
    """Hold the student's chapter page open on ``step``: the chapter socket with the step opened (its
    check runs against the sandbox while the page is open) and the trace socket of their sandbox,
    subscribed as the topology does (state first, then frames)."""
    page = OpenPage()
    headers = {"Cookie": student.cookie_header(), "Origin": student.base}
    port = student.client.base_url.port
    steps_url = f"ws://127.0.0.1:{port}/ws/course/{COURSE}/{CHAPTER}/steps/"
    trace_url = f"ws://127.0.0.1:{port}/ws/lab/{student.cluster}/trace/"

    async def read_steps(socket: Any) -> None:
        await socket.send(json.dumps({"action": "open", "step": step}))
        async for _ in socket:
            page.step_messages += 1

    async def read_trace(socket: Any) -> None:
        await socket.send(json.dumps({"action": "subscribe", "since": None, "state": True}))
        async for raw in socket:
            message = json.loads(raw)
            if message.get("type") == "frame":
                page.trace_frames += 1
                page.trace_events += len(message.get("events", ()))
            elif message.get("type") == "error":
                page.problem = f"trace socket: {message.get('message')}"

    async def watch(name: str, reader: Any, socket: Any) -> None:
        try:
            await reader(socket)
        except websockets.ConnectionClosed as closed:
            page.problem = page.problem or f"{name} socket closed: {closed}"
            return
        page.problem = page.problem or f"{name} socket closed by the server"

    async with contextlib.AsyncExitStack() as stack:
        readers = []
        for name, url, reader in (("chapter", steps_url, read_steps), ("trace", trace_url, read_trace)):
            started = time.perf_counter()
            try:
                socket = await stack.enter_async_context(
                    websockets.connect(
                        url, additional_headers=headers, open_timeout=SANDBOX_TIMEOUT, max_size=None
                    )
                )
            except (OSError, TimeoutError, websockets.WebSocketException) as error:
                seconds = time.perf_counter() - started
                page.problem = (
                    f"{name} socket not opened after {seconds:.1f} s: {type(error).__name__}: {error}"
                )
                break
            readers.append(asyncio.ensure_future(watch(name, reader, socket)))
        page.opened = len(readers) == 2
        try:
            yield page
        finally:
            for task in readers:
                task.cancel()
            await asyncio.gather(*readers, return_exceptions=True)


def _node_ready(node: dict[str, Any]) -> bool:
    conditions = node.get("status", {}).get("conditions", [])
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


async def sign_up(base: str, username: str) -> Student:
    """A new account made through the sign-up form, signed in, with the manifest form's CSRF token."""
    client = httpx.AsyncClient(base_url=base, follow_redirects=False, timeout=REQUEST_TIMEOUT)
    student = Student(username, client)
    try:
        token = await student.page_csrf("/accounts/sign-up/")
        response = await client.post(
            "/accounts/sign-up/",
            data={
                "csrfmiddlewaretoken": token,
                "username": username,
                "password1": PASSWORD,
                "password2": PASSWORD,
            },
            headers={"Referer": base + "/accounts/sign-up/"},
        )
        if response.status_code != 302:
            raise LabFailed(f"sign-up of {username} failed: {response.status_code} {response.text[:300]}")
        # Signing in rotates the CSRF token: the manifest form's own, as htmx sends it with each POST.
        student.csrf = await student.page_csrf("/manifests/")
    except BaseException:
        await client.aclose()
        raise
    return student


# -- what each student submits -------------------------------------------------------------------------

MANIFEST = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: bench-settings
data:
  student: {student}
  round: "{round}"
---
apiVersion: v1
kind: Secret
metadata:
  name: bench-credentials
type: Opaque
stringData:
  password: round-{round}
---
apiVersion: v1
kind: Service
metadata:
  name: bench-web
  annotations:
    kubelab.dev/round: "{round}"
spec:
  selector:
    app: bench-web
  ports:
  - port: 80
    targetPort: 8080
"""


def manifest(*, student: str, round: int) -> str:
    """The three documents a student submits, with a value changed each round (so each apply writes)."""
    return MANIFEST.format(student=student, round=round)
