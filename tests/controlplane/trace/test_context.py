"""The request context: set for a ``with`` block, undone after it however it ends, and per task."""

from __future__ import annotations

import asyncio

import pytest

from controlplane.trace.context import current_request_id, note_request, recording_requests, request_context


def test_the_request_holds_inside_the_block_and_the_one_before_comes_back_even_after_an_error() -> None:
    with request_context("outer") as audit_id:
        assert audit_id == current_request_id.get() == "outer"
        with request_context("inner"):
            assert current_request_id.get() == "inner"
        assert current_request_id.get() == "outer", "the inner block did not put the outer request back"
    assert current_request_id.get() is None
    with pytest.raises(RuntimeError), request_context("failing"):
        raise RuntimeError
    assert current_request_id.get() is None, "an error in the block left the request set"


async def test_two_requests_served_at_once_each_see_their_own() -> None:
    seen: dict[str, str | None] = {}

    async def serve(audit_id: str) -> None:
        with request_context(audit_id):
            await asyncio.sleep(0)  # the other request runs here
            seen[audit_id] = current_request_id.get()

    await asyncio.gather(serve("a"), serve("b"))
    assert seen == {"a": "a", "b": "b"}


async def test_a_reconcile_collects_the_requests_made_in_it_and_in_its_tasks_only() -> None:
    async def request(audit_id: str) -> None:
        note_request(audit_id)

    note_request("before")  # nobody collects: nothing happens
    with recording_requests() as issued:
        note_request("req-1")
        await asyncio.create_task(request("req-2"))  # a task started inside reports to the same list
        with recording_requests() as inner:
            note_request("req-3")
        note_request("")  # a request without an Audit-ID is not named
    note_request("after")
    assert issued == ["req-1", "req-2"] and inner == ["req-3"]
