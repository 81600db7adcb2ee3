"""Test doubles for reflectors and informers: a scripted lister-watcher, a gate, no-wait backoff."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import TracebackType
from typing import Self

from controlplane.api.meta import Object
from controlplane.client.reflector import ListWatch
from controlplane.client.rest import ListOptions, Watch
from controlplane.client.watch import FakeWatcher, WatchEvent


async def until(condition: Callable[[], bool], *, turns: int = 10_000) -> None:
    """Let the loop run until ``condition`` holds (for fakes only: nothing here waits on I/O)."""
    for _ in range(turns):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("the condition never became true")


class NoBackoff:
    """A backoff that counts its waits and does not wait."""

    def __init__(self) -> None:
        self.count = 0

    def next(self) -> float:
        return 0.0

    async def backoff(self) -> None:
        self.count += 1
        await asyncio.sleep(0)


class ScriptedListWatch:
    """Lists answer from ``lists`` (an object, or an exception to raise); each watch is a FakeWatcher."""

    def __init__(self, *lists: Object | Exception) -> None:
        self.lists: list[Object | Exception] = list(lists)
        self.list_calls: list[ListOptions] = []
        self.watch_calls: list[ListOptions] = []
        self.watchers: asyncio.Queue[FakeWatcher] = asyncio.Queue()
        self.make_watcher: Callable[[], FakeWatcher] = FakeWatcher

    async def list(self, options: ListOptions) -> Object:
        self.list_calls.append(options)
        answer = self.lists.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    def watch(self, options: ListOptions) -> FakeWatcher:
        self.watch_calls.append(options)
        watcher = self.make_watcher()
        self.watchers.put_nowait(watcher)
        return watcher


def cm_list(resource_version: str, *items: Object, continue_: str | None = None) -> Object:
    meta: Object = {"resourceVersion": resource_version}
    if continue_:
        meta["continue"] = continue_
    return {"kind": "ConfigMapList", "apiVersion": "v1", "metadata": meta, "items": list(items)}


def cm(name: str, rv: str, data: dict[str, str] | None = None) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default", "resourceVersion": rv},
        "data": data or {},
    }


class GatedListWatch:
    """A real ``ListWatch`` whose watches can be held back (``gate``) and cut off (``cut``) by the test.

    Holding the watch while the test writes, with a small server-side watch window, is how a test makes
    the next watch answer 410 Expired, as a client that was away too long would see.
    """

    def __init__(self, inner: ListWatch) -> None:
        self.inner = inner
        self.gate = asyncio.Event()
        self.gate.set()
        self.cut = asyncio.Event()
        #: Set each time the reflector asks for a watch (cleared by the test).
        self.watch_requested = asyncio.Event()
        self.lists = 0

    async def list(self, options: ListOptions) -> Object:
        self.lists += 1
        return await self.inner.list(options)

    def watch(self, options: ListOptions) -> GatedWatch:
        return GatedWatch(self.inner.watch(options), self)


class GatedWatch:
    def __init__(self, inner: Watch, owner: GatedListWatch) -> None:
        self.inner = inner
        self.owner = owner

    async def start(self) -> None:
        self.owner.watch_requested.set()
        await self.owner.gate.wait()
        await self.inner.start()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> WatchEvent:
        if self.owner.cut.is_set():
            raise StopAsyncIteration
        following = asyncio.ensure_future(anext(self.inner))
        cut = asyncio.ensure_future(self.owner.cut.wait())
        try:
            done, _ = await asyncio.wait({following, cut}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            cut.cancel()
            if not following.done():
                following.cancel()
                await asyncio.wait({following})
        if following in done:
            return following.result()
        await self.inner.stop()
        raise StopAsyncIteration  # the connection was cut: to the reflector, the watch just ended

    async def stop(self) -> None:
        await self.inner.stop()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()
