"""Stopping a task: cancel it, wait until it has finished, and keep the caller's own cancellation.

Every component runs loops in tasks of its own, and stops them the way a Go program closes a context
and waits on its goroutines: cancel, then wait. The familiar Python idiom for the wait,

    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task

has a trap. ``await task`` raises ``CancelledError`` both when the task ended cancelled (expected)
and when the *caller* is cancelled while it waits; the ``suppress`` cannot tell them apart and
swallows the caller's. A loop that stops a helper task on every turn (a reflector's resync timer, a
wait for "a change or a timeout") then goes round again as if nobody had asked it to stop, and
whoever cancelled it waits for it forever. ``cancel_and_wait`` waits with ``asyncio.wait``, which
never raises a task's outcome, so the only ``CancelledError`` that can come out of it is the caller's.
"""

from __future__ import annotations

import asyncio
from typing import Any


async def cancel_and_wait(*tasks: asyncio.Future[Any] | None) -> None:
    """Cancel ``tasks`` (None stands for no task) and return once every one has finished.

    A task that ends cancelled, or had ended before, is what was asked for; a task that ends with
    another exception raises it here (the first such), as ``await task`` would. If the caller is
    cancelled while it waits, ``CancelledError`` is raised and the tasks finish on their own.
    """
    pending = [task for task in tasks if task is not None]
    for task in pending:
        task.cancel()
    if not pending:
        return
    await asyncio.wait(pending)
    errors = [error for task in pending if not task.cancelled() and (error := task.exception()) is not None]
    if errors:
        raise errors[0]


__all__ = ["cancel_and_wait"]
