"""Property-based tests: random interleavings of writers, compactions and watchers.

The property, for every backend: a watcher that starts at revision R sees exactly the history after R
(every event, in order, once, with the right previous value), or is told ``Compacted``; and a read at
any retained revision returns the state that history implies.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controlplane.store import Compacted, Delete, Event, EventType, Put, Store, Txn, Watch
from tests.support.stores import make_store

P = "/registry/things/"
KEYS = [P + name for name in ("a", "b", "c", "d")]

key = st.sampled_from(KEYS)
op = st.one_of(
    st.tuples(st.just("put"), key, st.binary(max_size=8)),
    st.tuples(st.just("delete"), key),
    st.tuples(st.just("txn"), st.lists(key, min_size=1, max_size=3, unique=True), st.binary(max_size=4)),
    st.tuples(st.just("compact"), st.floats(0, 1)),
    st.tuples(st.just("watch"), st.floats(0, 1)),
)
scenario = st.tuples(st.lists(st.lists(op, max_size=12), min_size=1, max_size=4), st.integers(0, 2**16))


@dataclass
class Run:
    base: int
    history: list[Event] = field(default_factory=list)
    watches: list[tuple[int, Watch]] = field(default_factory=list)
    refused: list[tuple[int, Compacted]] = field(default_factory=list)


def snapshot(history: list[Event], revision: int) -> dict[str, bytes]:
    """The key-values that ``history`` implies at ``revision``."""
    state: dict[str, bytes] = {}
    for event in history:
        if event.revision > revision:
            break
        if event.type is EventType.PUT:
            state[event.key] = event.kv.value
        else:
            state.pop(event.key, None)
    return state


async def writer(store: Store, run: Run, ops: list[tuple[Any, ...]]) -> None:
    for step in ops:
        kind = step[0]
        if kind == "put":
            result = await store.txn(Txn(success=(Put(str(step[1]), bytes(step[2])),)))
            run.history.extend(result.events)
        elif kind == "delete":
            result = await store.txn(Txn(success=(Delete(str(step[1])),)))
            run.history.extend(result.events)
        elif kind == "txn":
            keys, value = step[1], step[2]
            puts = tuple(Put(k, bytes(value)) for k in keys)
            result = await store.txn(Txn(success=puts))
            run.history.extend(result.events)
        elif kind == "compact":
            current, mark = await store.current_revision(), await store.compact_revision()
            target = run.base + int(float(step[1]) * (current - run.base))
            if target > mark:
                with contextlib.suppress(Compacted):  # another writer compacted further meanwhile
                    await store.compact(target)
        else:
            current = await store.current_revision()
            start = run.base + int(float(step[1]) * (current - run.base))
            try:
                run.watches.append((start, await store.watch(P, from_revision=start)))
            except Compacted as error:
                run.refused.append((start, error))
        await asyncio.sleep(0)


async def check(store: Store, run: Run) -> None:
    run.history.sort(key=lambda e: e.revision)  # events of one txn keep their order: sort is stable
    final = await store.current_revision()
    for start, error in run.refused:
        assert start < error.compact_revision, f"watch from {start} refused, but the mark was {error}"
    for start, watch in run.watches:
        expected = [e for e in run.history if e.revision > start]
        seen: list[Event] = []
        try:
            async with asyncio.timeout(10):
                while len(seen) < len(expected):
                    seen.append(await anext(watch))
        except Compacted:
            pass  # compaction overtook the replay: the watcher was told, and what it saw must be right
        finally:
            await watch.close()
        assert [(e.type, e.key, e.revision) for e in seen] == [
            (e.type, e.key, e.revision) for e in expected[: len(seen)]
        ], f"watch from {start} saw the wrong history"
        for got, want in zip(seen, expected, strict=False):
            assert got.kv.value == want.kv.value
            want_prev = want.prev_kv.value if want.prev_kv else None
            assert (got.prev_kv.value if got.prev_kv else None) == want_prev
    mark = max(await store.compact_revision(), run.base)
    for revision in sorted({mark, (mark + final) // 2, final}):
        listed = await store.range(P, revision=revision)
        assert {kv.key: kv.value for kv in listed.kvs} == snapshot(run.history, revision), revision


async def play(backend: str, writers: list[list[tuple[Any, ...]]]) -> None:
    async with make_store(backend, "props") as store:
        run = Run(base=await store.current_revision())
        await asyncio.gather(*(writer(store, run, ops) for ops in writers))
        await check(store, run)


@pytest.mark.parametrize(
    ("backend", "examples"),
    [
        pytest.param("sqlite", 60, id="sqlite"),
        pytest.param("postgres", 20, id="postgres", marks=pytest.mark.postgres),
        pytest.param("etcd", 15, id="etcd", marks=pytest.mark.etcd),
    ],
)
def test_watchers_see_exactly_the_history_after_their_start_or_compacted(backend: str, examples: int) -> None:
    @settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(scenario)
    def property(case: tuple[list[list[tuple[Any, ...]]], int]) -> None:
        writers, _seed = case
        asyncio.run(play(backend, writers))

    property()
