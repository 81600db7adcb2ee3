"""Shared test fixtures: above all, no asyncio test may leave a task running behind it.

A control plane is made of long-lived tasks (watches, informers, leases, compactors). A task that
outlives the test that started it is a bug waiting to surface somewhere else: it keeps a store open,
writes after the test's assertions, or logs "Task was destroyed but it is pending" in a later test.
Like kopf's ``tests/conftest.py``, every asyncio test here is checked on its way out: tasks that it
started and did not finish are cancelled, named, and the test fails.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Iterator

import pytest
from django.utils import translation

from tests.support.database import forget_worker_connections

#: How many loop turns a test's tasks get to finish on their own after the test returns.
SETTLE_TURNS = 5


def _describe(task: asyncio.Task[object]) -> str:
    coro = task.get_coro()
    where = getattr(coro, "__qualname__", repr(coro))
    return f"{task.get_name()} ({where})"


@pytest.fixture
async def _asyncio_task_leak_check() -> AsyncIterator[None]:
    before = asyncio.all_tasks()
    yield
    for _ in range(SETTLE_TURNS):
        await asyncio.sleep(0)
    leaked = [t for t in asyncio.all_tasks() - before if t is not asyncio.current_task() and not t.done()]
    if leaked:
        for task in leaked:
            task.cancel()
        await asyncio.gather(*leaked, return_exceptions=True)
        names = ", ".join(sorted(_describe(t) for t in leaked))
        pytest.fail(f"the test left {len(leaked)} asyncio task(s) running: {names}", pytrace=False)


@pytest.fixture
async def _worker_connections_dropped() -> AsyncIterator[None]:
    yield
    await forget_worker_connections()


def _uses_database(request: pytest.FixtureRequest) -> bool:
    return bool(
        {"db", "transactional_db"} & set(request.fixturenames) or request.node.get_closest_marker("django_db")
    )


@pytest.fixture(autouse=True)
def _no_leaked_asyncio_tasks(request: pytest.FixtureRequest) -> None:
    """For asyncio tests: fail the test if it leaves tasks running (set up first, checked last); and
    for those that use the database, drop the connection the async ORM's worker thread made, which
    would outlive the test and trip a later one (tests/support/database.py says why)."""
    function = getattr(request.node, "function", None)
    if function is not None and inspect.iscoroutinefunction(function):
        request.getfixturevalue("_asyncio_task_leak_check")
        if _uses_database(request):
            request.getfixturevalue("_worker_connections_dropped")


@pytest.fixture(autouse=True)
def _default_language_after() -> Iterator[None]:
    """A test that activates a language (a middleware called directly, a view) must not leave it to
    the next test in this process: Django keeps the active language per thread until told otherwise."""
    yield
    translation.deactivate()
