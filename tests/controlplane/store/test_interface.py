"""The store's observer: every read and transaction is timed, named as upstream's etcd metrics name it."""

from __future__ import annotations

from pathlib import Path

from controlplane.store.interface import txn_operation
from controlplane.store.kv import Compare, Delete, Get, Put, Txn
from controlplane.store.sqlite import SqliteStore
from controlplane.trace.bus import TraceBus

KEY = "/registry/configmaps/default/web"


def test_transactions_are_named_by_what_they_do() -> None:
    assert txn_operation(Txn(compares=(Compare.absent(KEY),), success=(Put(KEY, b"{}"),))) == "create"
    assert txn_operation(Txn(compares=(Compare.unchanged(KEY, 3),), success=(Put(KEY, b"{}"),))) == "update"
    assert txn_operation(Txn(success=(Put(KEY, b"{}"),))) == "update"
    assert txn_operation(Txn(success=(Delete(KEY),))) == "delete"
    assert txn_operation(Txn(success=(Get(KEY),))) == "get"
    assert txn_operation(Txn(success=(Put(KEY, b"{}"), Delete(KEY + "2")))) == "txn"


async def test_an_observer_is_told_every_request_and_its_duration(tmp_path: Path) -> None:
    seen: list[tuple[str, str, float]] = []

    class Observer:
        def observe(self, operation: str, key: str, seconds: float) -> None:
            seen.append((operation, key, seconds))

    store = SqliteStore("test", path=tmp_path / "store.sqlite3")
    await store.start()
    try:
        await store.create(KEY, b"{}")
        store.observer = Observer()
        kv = await store.get(KEY)
        assert kv is not None
        await store.update(KEY, b'{"a":1}', expected_mod_revision=kv.mod_revision)
        await store.range("/registry/configmaps/")
        await store.delete(KEY)
    finally:
        await store.close()
    assert [(op, key) for op, key, _ in seen] == [
        ("get", KEY),
        ("update", KEY),
        ("list", "/registry/configmaps/"),
        ("delete", KEY),
    ]
    assert all(seconds >= 0 for _, _, seconds in seen)


async def test_inspect_reads_like_range_but_is_neither_traced_nor_measured(tmp_path: Path) -> None:
    """The etcd panel's read (courses/etcdpanel.py) is the lab looking into etcd, not the API server."""
    seen: list[str] = []

    class Observer:
        def observe(self, operation: str, key: str, seconds: float) -> None:
            seen.append(operation)

    bus = TraceBus("test", recording=True)
    store = SqliteStore("test", path=tmp_path / "store.sqlite3", trace=bus)
    await store.start()
    try:
        first = await store.create(KEY, b"{}")
        await store.create(KEY + "2", b"{}")
        store.observer = Observer()
        before = bus.last_seq
        inspected = await store.inspect("/registry/configmaps/", revision=first.mod_revision)
        assert [kv.key for kv in inspected.kvs] == [KEY]
        assert inspected == await store.range("/registry/configmaps/", revision=first.mod_revision)
        assert bus.last_seq == before + 1  # only range's store.txn; inspect emitted none
    finally:
        await store.close()
    assert seen == ["list"]


async def test_a_write_of_what_the_diagram_draws_carries_its_facts(tmp_path: Path) -> None:
    """Every write passes the store: a Pod's, Node's or leader Lease's says what the diagram draws of
    it, so the page follows etcd itself (controlplane/trace/objects.py)."""
    bus = TraceBus("test", recording=True)
    store = SqliteStore("test", path=tmp_path / "store.sqlite3", trace=bus)
    await store.start()
    pod = b'{"metadata": {"name": "web-x2kq4", "namespace": "default", "generateName": "web-"},'
    pod += b' "spec": {"nodeName": "node-1"}, "status": {"phase": "Running"}}'
    try:
        await store.create("/registry/pods/default/web-x2kq4", pod)
        await store.create("/registry/configmaps/default/c", b'{"data": {"a": "b"}}')
        await store.create("/registry/pods/default/sealed", b"k8s:enc:aescbc:v1:key1:\x00\x01")
        await store.txn(Txn(success=(Delete("/registry/pods/default/web-x2kq4"),)))
        writes = [
            w
            for e in bus.recorder.since(0)
            if e["type"] == "store.txn" and e.get("writes")
            for w in e["writes"]
        ]
    finally:
        await store.close()
    assert writes == [
        {
            "type": "PUT",
            "key": "/registry/pods/default/web-x2kq4",
            "pod": {
                "namespace": "default",
                "name": "web-x2kq4",
                "generateName": "web-",
                "node": "node-1",
                "phase": "Running",
                "deleting": False,
            },
        },
        {"type": "PUT", "key": "/registry/configmaps/default/c"},  # not drawn: no facts, never its data
        {"type": "PUT", "key": "/registry/pods/default/sealed"},  # encrypted at rest: nothing to read
        {"type": "DELETE", "key": "/registry/pods/default/web-x2kq4"},
    ]
