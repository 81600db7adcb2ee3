"""Stopping a task: ``cancel_and_wait`` waits for the task and never swallows the caller's cancellation."""

from __future__ import annotations

import asyncio

import pytest

from controlplane.tasks import cancel_and_wait


async def test_the_task_is_cancelled_and_finished_when_it_returns() -> None:
    task = asyncio.create_task(asyncio.Event().wait())
    await asyncio.sleep(0)
    await cancel_and_wait(task, None)
    assert task.cancelled()


async def test_a_task_that_ended_with_an_error_raises_it_and_one_that_ended_well_does_not() -> None:
    async def fails() -> None:
        raise LookupError("the task's own failure")

    failed = asyncio.create_task(fails())
    finished = asyncio.create_task(asyncio.sleep(0))
    await asyncio.wait({failed, finished})
    await cancel_and_wait(finished)
    with pytest.raises(LookupError, match="the task's own failure"):
        await cancel_and_wait(finished, failed)


async def test_a_caller_cancelled_while_the_task_cleans_up_is_cancelled() -> None:
    """The trap of ``suppress(CancelledError): await task``: the caller's cancel came out as the
    task's and was swallowed, so a loop that stopped a helper on every turn never stopped."""
    cleaning, release = asyncio.Event(), asyncio.Event()

    async def slow_to_stop() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            cleaning.set()
            await release.wait()

    turns = 0

    async def loop() -> None:
        nonlocal turns
        while True:
            turns += 1
            helper = asyncio.create_task(slow_to_stop())
            await asyncio.sleep(0)
            await cancel_and_wait(helper)

    looping = asyncio.create_task(loop())
    await cleaning.wait()  # the loop waits for its helper to finish
    looping.cancel()
    release.set()
    done, _ = await asyncio.wait({looping}, timeout=5)
    assert done, f"the loop went on after it was cancelled ({turns} turns)"
    assert looping.cancelled()
    assert turns == 1
