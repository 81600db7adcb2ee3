"""Request scope: a context variable set for a ``with`` block, undone after it, per task."""

from __future__ import annotations

import asyncio
from contextvars import ContextVar

import pytest

from controlplane.apiserver.requestscope import Scoped

WHO: ContextVar[str | None] = ContextVar("who", default=None)


def test_the_value_holds_inside_the_block_and_the_old_one_comes_back_even_after_an_error() -> None:
    with Scoped(WHO, "alice"):
        assert WHO.get() == "alice"
        with Scoped(WHO, "bob"):
            assert WHO.get() == "bob"
        assert WHO.get() == "alice", "the inner block did not restore the outer value"
    assert WHO.get() is None
    with pytest.raises(RuntimeError), Scoped(WHO, "carol"):
        raise RuntimeError
    assert WHO.get() is None, "an error in the block left the value set"


async def test_two_requests_served_at_once_each_see_their_own_value() -> None:
    seen: dict[str, str | None] = {}

    async def serve(name: str) -> None:
        with Scoped(WHO, name):
            await asyncio.sleep(0)  # the other request runs here
            seen[name] = WHO.get()

    await asyncio.gather(serve("alice"), serve("bob"))
    assert seen == {"alice": "alice", "bob": "bob"}
