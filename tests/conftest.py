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
from typing import Any

import pytest
from django.utils import translation

from tests.support.database import forget_worker_connections

#: How many loop turns a test's tasks get to finish on their own after the test returns.
SETTLE_TURNS = 5

#: The modules that take longest (``pytest --durations``), longest first. They are collected before
#: the others, so that with pytest-xdist's ``--dist loadfile`` (``make test``) the workers start on
#: them and the short modules fill in around them: otherwise a long module that happens to come last
#: in the collection runs alone at the end while the other worker has finished. A module missing
#: from this list only costs time, never a test.
LONGEST_FIRST = (
    "tests/browser/test_topology.py",
    "tests/courses/chapters/test_play_chapters.py",
    "tests/courses/chapters/test_play_chapters_later.py",
    "tests/browser/test_chapter.py",
    "tests/bench/test_course_smoke.py",
    "tests/courses/console/test_helptext.py",
    "tests/browser/test_shared_cluster.py",
    "tests/bench/test_ui_smoke.py",
    "tests/browser/test_classrooms.py",
    "tests/clients/test_kubectl_workloads.py",
    "tests/browser/test_rewind.py",
    "tests/test_runcomponent.py",
    "tests/controlplane/test_runtime.py",
    "tests/browser/test_live.py",
    "tests/clients/test_kubectl_policy.py",
    "tests/bench/test_classroom_smoke.py",
    "tests/test_settings.py",
    "tests/bench/test_api_smoke.py",
    "tests/clients/test_kubectl_encryption.py",
    "tests/test_runlab.py",
    "tests/browser/test_presenter.py",
    "tests/clients/test_kubectl_crds.py",
    "tests/controlplane/faults/test_kill_node.py",
    "tests/bench/test_apf_smoke.py",
)


def _awaiting(coro: Any) -> list[Any]:
    """The frames of ``coro`` and of what it awaits, down to the innermost (``Task.get_stack`` only
    gives the outermost coroutine's)."""
    frames = []
    while coro is not None:
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        if frame is not None:
            frames.append(frame)
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
    return frames


def pytest_configure(config: pytest.Config) -> None:
    """When pytest-timeout stops a test that hangs, it prints every thread's stack; on an event loop
    that waits forever, the one that matters is the stack of each asyncio task, printed here too."""
    import pytest_timeout  # type: ignore[import-untyped]  # (no type hints; requirements-dev.txt)

    threads_only = pytest_timeout.dump_stacks

    def dump_stacks(terminal: Any) -> None:
        threads_only(terminal)
        try:
            loop = asyncio.get_running_loop()  # the timeout's signal arrives on the loop's thread
        except RuntimeError:
            return
        tasks = sorted(asyncio.all_tasks(loop), key=lambda task: task.get_name())
        terminal.sep("~", title=f"{len(tasks)} asyncio tasks, each where it waits")
        for task in tasks:
            frames = _awaiting(task.get_coro())[-4:]
            where = " -> ".join(f"{f.f_code.co_name} ({f.f_code.co_filename}:{f.f_lineno})" for f in frames)
            terminal.write(f"{_describe(task)}: {where}\n")

    pytest_timeout.dump_stacks = dump_stacks


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {module: position for position, module in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.partition("::")[0], len(LONGEST_FIRST)))


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
