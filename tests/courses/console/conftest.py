"""The console's fixtures: one live lab for the tests that run the real kubectl, a fake sandbox service,
and runners that record what they were asked to run."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from courses.console import runner
from tests.support.lab import LiveLab


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveLab]:
    """A running ``manage.py runlab`` (its demo cluster and the admin's kubeconfig)."""
    live = LiveLab(Path(tmp_path_factory.mktemp("console-lab")))
    try:
        yield live
    finally:
        live.stop()


class SandboxUnavailable(Exception):
    """The fake service's error, as ``courses.sandboxes.services.SandboxUnavailable``."""


@dataclass(frozen=True)
class Access:
    cluster: str
    user: str
    token: str = "token"


@dataclass
class FakeSandboxes:
    """The sandbox service's interface (docs: interfaces), answering with a given kubeconfig."""

    kubeconfig: bytes = b"apiVersion: v1\nkind: Config\n"
    unavailable: str | None = None
    ensured: list[str] = field(default_factory=list)
    kubeconfigs_for: list[str] = field(default_factory=list)
    touched: list[str] = field(default_factory=list)
    SandboxUnavailable: type[Exception] = SandboxUnavailable

    async def ensure_sandbox(self, *, user: Any) -> Access:
        self.ensured.append(user.get_username())
        if self.unavailable is not None:
            raise SandboxUnavailable(self.unavailable)
        return Access(cluster=f"sandbox-{user.get_username()}", user=f"student:{user.get_username()}")

    async def kubeconfig_for(self, *, user: Any, server: str | None = None) -> bytes:
        self.kubeconfigs_for.append(user.get_username())
        return self.kubeconfig

    def touch(self, *, cluster: str) -> None:
        self.touched.append(cluster)


@dataclass
class SpyRunner:
    """A stand-in for ``runner.start`` that records every call; with ``real``, it then runs kubectl."""

    real: bool = False
    calls: list[dict[str, Any]] = field(default_factory=list)

    def __call__(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        if self.real:
            return runner.start(**kwargs)
        return _finished(kwargs)


class FinishedProcess:
    """A run that printed its argv and exited 0 (what a spy hands back instead of kubectl)."""

    def __init__(self, argv: list[str]) -> None:
        self.argv = argv
        self.result: runner.RunResult | None = None

    async def output(self) -> AsyncIterator[str]:
        text = " ".join(self.argv) + "\n"
        yield text
        self.result = runner.RunResult(exit_code=0, output=text)

    async def stop(self) -> None:
        pass


@asynccontextmanager
async def _finished(kwargs: dict[str, Any]) -> AsyncIterator[FinishedProcess]:
    yield FinishedProcess(list(kwargs["argv"]))
