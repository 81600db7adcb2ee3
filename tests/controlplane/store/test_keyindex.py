"""The in-memory key index: versions per key, reads at a revision, ranges, compaction."""

from __future__ import annotations

from controlplane.store.keyindex import KeyIndex, Version

A, B, C = "/registry/x/a", "/registry/x/b", "/registry/x/c"


def index() -> KeyIndex:
    ix = KeyIndex()
    ix.add(A, Version(1, 0, 1))
    ix.add(B, Version(2, 0, 1))
    ix.add(A, Version(3, 0, 2))
    ix.add(B, Version(4, 0, 0))  # B deleted at 4
    ix.add(C, Version(5, 0, 1))
    ix.add(B, Version(6, 1, 1))  # B created again at 6
    return ix


def test_a_read_sees_the_newest_version_at_or_before_its_revision() -> None:
    ix = index()
    assert ix.at(A, 0) is None
    assert ix.at(A, 2) == Version(1, 0, 1)
    assert ix.at(A, 99) == Version(3, 0, 2)
    assert ix.at(B, 4) is None and ix.at(B, 5) is None
    assert ix.at(B, 6) == Version(6, 1, 1)


def test_a_range_lists_live_keys_in_key_order() -> None:
    ix = index()
    assert [k for k, _ in ix.range("/registry/x/", "/registry/x0", 5)] == [A, C]
    assert [k for k, _ in ix.range("/registry/x/", "/registry/x0", 6)] == [A, B, C]
    assert [k for k, _ in ix.range(B, "/registry/x0", 6)] == [B, C]


def test_compaction_drops_superseded_versions_and_old_tombstones() -> None:
    ix = index()
    dropped = ix.compact(4)
    assert sorted(dropped) == [(1, 0), (2, 0), (4, 0)]
    assert ix.at(A, 4) == Version(3, 0, 2)
    assert ix.at(B, 6) == Version(6, 1, 1)
    assert ix.compact(4) == []


def test_compaction_forgets_a_key_that_is_gone() -> None:
    ix = KeyIndex()
    ix.add(A, Version(1, 0, 1))
    ix.add(A, Version(2, 0, 0))
    assert sorted(ix.compact(2)) == [(1, 0), (2, 0)]
    assert len(ix) == 0
    assert list(ix.range("/registry/", "/registry0", 9)) == []


def test_load_rebuilds_the_same_index() -> None:
    rows = [(A, 1, 0, 1), (B, 2, 0, 1), (A, 3, 0, 2), (B, 4, 0, 0), (C, 5, 0, 1), (B, 6, 1, 1)]
    ix = KeyIndex()
    ix.load(rows)
    reference = index()
    for revision in range(8):
        assert list(ix.range("/registry/", "/registry0", revision)) == list(
            reference.range("/registry/", "/registry0", revision)
        )
