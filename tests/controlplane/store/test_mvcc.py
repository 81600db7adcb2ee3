"""The pure MVCC core: what a transaction writes, decided without a database."""

from __future__ import annotations

import pytest

from controlplane.store import (
    Compacted,
    Compare,
    Delete,
    DuplicateKey,
    EventType,
    FutureRevision,
    Get,
    KeyOutsidePrefix,
    KeyValue,
    LeaseNotFound,
    Put,
    RequestTooLarge,
    Txn,
    mvcc,
)

K = "/registry/pods/ns/a"


def state(*kvs: KeyValue) -> mvcc.ReadKey:
    by_key = {kv.key: kv for kv in kvs}
    return by_key.get


def test_a_put_of_a_new_key_creates_version_one_at_the_revision() -> None:
    outcome = mvcc.evaluate(Txn(success=(Put(K, b"v"),)), state(), 7)
    (event,) = outcome.events
    assert event.kv == KeyValue(K, b"v", create_revision=7, mod_revision=7, version=1)
    assert event.prev_kv is None


def test_a_put_of_an_existing_key_keeps_create_revision_and_bumps_version() -> None:
    old = KeyValue(K, b"1", 3, 5, 2)
    (event,) = mvcc.evaluate(Txn(success=(Put(K, b"2"),)), state(old), 9).events
    assert (event.kv.create_revision, event.kv.mod_revision, event.kv.version) == (3, 9, 3)
    assert event.prev_kv == old


def test_failed_compares_run_the_failure_branch_and_write_nothing() -> None:
    old = KeyValue(K, b"1", 3, 5, 2)
    txn = Txn(compares=(Compare.unchanged(K, 4),), success=(Put(K, b"2"),), failure=(Get(K),))
    outcome = mvcc.evaluate(txn, state(old), 9)
    assert not outcome.succeeded
    assert outcome.events == ()


@pytest.mark.parametrize(
    ("compare", "holds"),
    [
        (Compare(K, "version", "=", 2), True),
        (Compare(K, "version", "!=", 2), False),
        (Compare(K, "mod_revision", "<", 6), True),
        (Compare(K, "create_revision", ">", 3), False),
        (Compare.absent(K), False),
        (Compare.absent(K + "x"), True),
    ],
)
def test_compares_read_the_targets_of_the_current_key(compare: Compare, holds: bool) -> None:
    assert compare.holds(state(KeyValue(K, b"1", 3, 5, 2))(compare.key)) is holds


def test_deleting_an_absent_key_is_a_no_op() -> None:
    outcome = mvcc.evaluate(Txn(success=(Delete(K),)), state(), 4)
    assert outcome.events == ()


def test_a_delete_event_is_a_tombstone_at_the_revision() -> None:
    old = KeyValue(K, b"1", 3, 5, 2)
    (event,) = mvcc.evaluate(Txn(success=(Delete(K),)), state(old), 8).events
    assert event.type is EventType.DELETE
    assert event.kv == mvcc.tombstone(K, 8)
    assert event.prev_kv == old


def test_a_put_with_a_lease_that_does_not_exist_is_refused() -> None:
    with pytest.raises(LeaseNotFound):
        mvcc.evaluate(Txn(success=(Put(K, b"1", lease=5),)), state(), 1, has_lease=lambda _: False)


def test_check_txn_refuses_bad_requests() -> None:
    with pytest.raises(KeyOutsidePrefix):
        mvcc.check_txn(Txn(success=(Put("/elsewhere/a", b""),)))
    with pytest.raises(KeyOutsidePrefix):
        mvcc.check_txn(Txn(compares=(Compare.absent("nope"),)))
    with pytest.raises(DuplicateKey):
        mvcc.check_txn(Txn(failure=(Put(K, b""), Put(K, b""))))
    with pytest.raises(RequestTooLarge):
        mvcc.check_txn(Txn(success=(Put(K, b"x" * 100),)), max_bytes=50)
    mvcc.check_txn(Txn(success=(Get(K), Put(K, b"")), failure=(Delete(K),)))


def test_prefix_end_is_the_first_key_after_the_prefix() -> None:
    end = mvcc.prefix_end("/registry/pods/")
    assert "/registry/pods/zzz" < end <= "/registry/pods0"
    assert not "/registry/pods/x".startswith(end)


def test_read_revisions_between_the_compaction_mark_and_now_are_allowed() -> None:
    mvcc.check_read_revision(5, current=9, compacted=5)
    with pytest.raises(Compacted):
        mvcc.check_read_revision(4, current=9, compacted=5)
    with pytest.raises(FutureRevision):
        mvcc.check_read_revision(10, current=9, compacted=5)
