"""The automatic compaction policy: keep at least N revisions and M seconds of history."""

from __future__ import annotations

from controlplane.store.compaction import Compactor, RetentionPolicy


def test_nothing_is_compacted_before_history_is_old_enough() -> None:
    compactor = Compactor(RetentionPolicy(min_revisions=10, min_age=60))
    compactor.observe(0, 500)
    assert compactor.target(now=59, current=600, compacted=0) is None


def test_compacts_to_the_revision_that_was_current_min_age_ago() -> None:
    compactor = Compactor(RetentionPolicy(min_revisions=10, min_age=60))
    compactor.observe(0, 500)
    compactor.observe(30, 550)
    assert compactor.target(now=60, current=600, compacted=0) == 500
    assert compactor.target(now=90, current=600, compacted=500) == 550


def test_always_keeps_min_revisions() -> None:
    compactor = Compactor(RetentionPolicy(min_revisions=100, min_age=60))
    compactor.observe(0, 500)
    assert compactor.target(now=120, current=520, compacted=0) == 420


def test_never_moves_the_mark_backwards() -> None:
    compactor = Compactor(RetentionPolicy(min_revisions=1, min_age=1))
    compactor.observe(0, 5)
    assert compactor.target(now=10, current=9, compacted=7) is None
