"""The DeltaFIFO: per-key deltas, and the deletions a relist detects by comparing with the cache."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from controlplane.client.cache import DeletedFinalStateUnknown, Indexer
from controlplane.client.delta_fifo import Delta, DeltaFIFO, Deltas, DeltaType, FIFOClosed


def cm(name: str, rv: str = "1") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default", "resourceVersion": rv}}


async def drain(fifo: DeltaFIFO) -> list[tuple[str, list[tuple[DeltaType, Any]]]]:
    """Pop everything: [(key, [(type, object)])], in queue order."""
    popped: list[tuple[str, list[tuple[DeltaType, Any]]]] = []

    def process(deltas: Deltas) -> None:
        key = fifo.key_func(deltas[0].object)
        popped.append((key, [(d.type, d.object) for d in deltas]))

    while len(fifo):
        await fifo.pop(process)
    return popped


async def test_changes_to_one_key_are_delivered_together_in_order() -> None:
    fifo = DeltaFIFO()
    fifo.add(cm("a", "1"))
    fifo.add(cm("b", "2"))
    fifo.update(cm("a", "3"))
    assert await drain(fifo) == [
        ("default/a", [(DeltaType.ADDED, cm("a", "1")), (DeltaType.UPDATED, cm("a", "3"))]),
        ("default/b", [(DeltaType.ADDED, cm("b", "2"))]),
    ]


async def test_a_relist_reports_what_disappeared_as_deleted_final_state_unknown() -> None:
    cache = Indexer()
    cache.add(cm("kept", "1"))
    cache.add(cm("gone", "2"))  # deleted on the server while the watch was down
    fifo = DeltaFIFO(known_objects=cache)
    fifo.replace([cm("kept", "1"), cm("new", "7")], "7")
    assert await drain(fifo) == [
        ("default/kept", [(DeltaType.REPLACED, cm("kept", "1"))]),
        ("default/new", [(DeltaType.REPLACED, cm("new", "7"))]),
        ("default/gone", [(DeltaType.DELETED, DeletedFinalStateUnknown("default/gone", cm("gone", "2")))]),
    ]


async def test_a_relist_also_catches_objects_only_the_queue_knew() -> None:
    fifo = DeltaFIFO(known_objects=Indexer())
    fifo.add(cm("queued", "3"))  # not processed yet, then gone from the server
    fifo.replace([], "9")
    [(key, deltas)] = await drain(fifo)
    assert key == "default/queued"
    assert deltas == [
        (DeltaType.ADDED, cm("queued", "3")),
        (DeltaType.DELETED, DeletedFinalStateUnknown("default/queued", cm("queued", "3"))),
    ]


async def test_a_deletion_already_queued_beats_a_relists_unknown_one() -> None:
    cache = Indexer()
    cache.add(cm("a", "1"))
    fifo = DeltaFIFO(known_objects=cache)
    fifo.delete(cm("a", "5"))
    fifo.replace([], "6")
    assert await drain(fifo) == [("default/a", [(DeltaType.DELETED, cm("a", "5"))])]


def test_deleting_what_nobody_knows_is_not_reported() -> None:
    fifo = DeltaFIFO(known_objects=Indexer())
    fifo.delete(cm("ghost"))
    assert len(fifo) == 0


async def test_has_synced_once_the_first_list_is_processed() -> None:
    synced: list[bool] = []
    fifo = DeltaFIFO(known_objects=Indexer(), on_synced=lambda: synced.append(True))
    assert not fifo.has_synced()
    fifo.replace([cm("a"), cm("b")], "2")
    assert not fifo.has_synced()
    fifo.add(cm("c"))  # after the list: does not delay the sync
    popped: list[Deltas] = []
    await fifo.pop(popped.append)
    assert not fifo.has_synced()
    await fifo.pop(popped.append)
    assert fifo.has_synced() and synced == [True]


def test_an_empty_first_list_is_synced_at_once() -> None:
    synced: list[bool] = []
    fifo = DeltaFIFO(known_objects=Indexer(), on_synced=lambda: synced.append(True))
    fifo.replace([], "1")
    assert fifo.has_synced() and synced == [True]


async def test_resync_redelivers_what_the_cache_holds_unless_a_change_is_pending() -> None:
    cache = Indexer()
    cache.add(cm("a", "1"))
    cache.add(cm("b", "1"))
    fifo = DeltaFIFO(known_objects=cache)
    fifo.update(cm("b", "2"))
    fifo.resync()
    assert await drain(fifo) == [
        ("default/b", [(DeltaType.UPDATED, cm("b", "2"))]),
        ("default/a", [(DeltaType.SYNC, cm("a", "1"))]),
    ]


async def test_pop_on_a_closed_queue_raises() -> None:
    fifo = DeltaFIFO()
    waiter = asyncio.ensure_future(fifo.pop(lambda d: None))
    await asyncio.sleep(0)
    fifo.close()
    with pytest.raises(FIFOClosed):
        await waiter


def test_delta_is_a_value() -> None:
    assert Delta(DeltaType.ADDED, cm("a")) == Delta(DeltaType.ADDED, cm("a"))
