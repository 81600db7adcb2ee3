"""A lab running in this test's event loop, made this process's lab, with the web app pointed at it.

The sandboxes' tests act on clusters the way the web app does, through ``courses.gateway``. A
cluster starts in well under a second without components (the API server with its RBAC, flow control
and admission is what most of these tests look at); the tests that need pods ask for them.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from pytest_django import Settings

from controlplane.runtime import Lab, LabConfig, SandboxProfile
from tests.support.database import forget_worker_connections
from tests.support.lab import active_lab

LabFactory = Callable[..., AbstractAsyncContextManager[Lab]]


@pytest.fixture(autouse=True)
async def _worker_connections(request: pytest.FixtureRequest) -> AsyncIterator[None]:
    """The async ORM's worker thread keeps a connection to the in-memory test database: drop it
    after each async test (tests/support/database.py says why)."""
    yield
    function = getattr(request.node, "function", None)
    if function is not None and inspect.iscoroutinefunction(function):
        await forget_worker_connections()


@pytest.fixture
def sandbox_lab(tmp_path: Path, settings: Settings) -> LabFactory:
    """``async with sandbox_lab(max_objects=..., components=...) as lab``: an active lab, no demo cluster."""

    @asynccontextmanager
    async def make(*, max_objects: int = 2000, **options: Any) -> AsyncIterator[Lab]:
        settings.KUBELAB_DATA_DIR = tmp_path
        options.setdefault("components", ())
        config = LabConfig(
            data_dir=tmp_path, demo_cluster="", sandbox=SandboxProfile(max_objects=max_objects), **options
        )
        async with active_lab(config) as lab:
            yield lab

    return make
