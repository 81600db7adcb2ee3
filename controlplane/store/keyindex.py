"""The key index: which revisions of which keys exist, kept in memory as etcd keeps it.

etcd stores values in its backend (bbolt) keyed by **revision**, not by key: the revision is the
position in the log. To answer "what was ``/registry/pods/default/web`` at revision 42?" it keeps an
in-memory index from each key to the revisions that wrote it (``server/mvcc/key_index.go``,
``index.go``), then reads the value at that revision from the backend. The SQLite backend does the
same: its table is ordered by revision, and this index maps keys to their versions, so a write only
appends to the log instead of updating a second on-disk index at a random place.

Each key has a list of ``Version``s in revision order; a tombstone (version 0) ends a generation of
the key. Reading at revision R takes, per key, the newest version at or before R, unless that is a
tombstone. Compacting at C forgets every version that is superseded at or before C, and tombstones at
or before C, exactly as the table's rows are deleted.

Pure data structure, no I/O; the backend guards it with a lock because readers run on threads.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator
from typing import NamedTuple


class Version(NamedTuple):
    """Where one version of a key lives in the log: its revision, its place in that revision's
    transaction, and its version number (0 for a tombstone)."""

    revision: int
    sub: int
    version: int


class KeyIndex:
    """Keys (sorted, for ranges) to their versions (in revision order)."""

    def __init__(self) -> None:
        self._keys: list[str] = []
        self._versions: dict[str, list[Version]] = {}

    def __len__(self) -> int:
        """The number of keys with at least one remembered version."""
        return len(self._keys)

    def add(self, key: str, version: Version) -> None:
        """Record a new version; versions must arrive in revision order."""
        versions = self._versions.get(key)
        if versions is None:
            self._versions[key] = [version]
            bisect.insort(self._keys, key)
        else:
            versions.append(version)

    def load(self, rows: Iterable[tuple[str, int, int, int]]) -> None:
        """Rebuild from ``(key, revision, sub, version)`` rows in revision order (on start)."""
        for key, revision, sub, version in rows:
            self._versions.setdefault(key, []).append(Version(revision, sub, version))
        self._keys = sorted(self._versions)

    def at(self, key: str, revision: int) -> Version | None:
        """The version of ``key`` visible at ``revision``, or None if it did not exist then."""
        versions = self._versions.get(key)
        if not versions:
            return None
        i = bisect.bisect_right(versions, revision, key=lambda v: v.revision)
        if i == 0:
            return None
        found = versions[i - 1]
        return None if found.version == 0 else found

    def range(self, begin: str, end: str, revision: int) -> Iterator[tuple[str, Version]]:
        """Live keys in [begin, end) at ``revision``, in key order, with their visible version."""
        start = bisect.bisect_left(self._keys, begin)
        stop = bisect.bisect_left(self._keys, end)
        for key in self._keys[start:stop]:
            found = self.at(key, revision)
            if found is not None:
                yield key, found

    def compact(self, revision: int) -> list[tuple[int, int]]:
        """Forget what a read at ``revision`` or later can never see; returns (revision, sub) dropped.

        Per key: every version superseded by a newer one at or before ``revision``, and the newest
        one too if it is a tombstone at or before ``revision``.
        """
        dropped: list[tuple[int, int]] = []
        emptied: list[str] = []
        for key, versions in self._versions.items():
            keep_from = _keep_from(versions, revision)
            if keep_from == 0:
                continue
            dropped.extend((v.revision, v.sub) for v in versions[:keep_from])
            del versions[:keep_from]
            if not versions:
                emptied.append(key)
        for key in emptied:
            del self._versions[key]
            self._keys.pop(bisect.bisect_left(self._keys, key))
        return dropped

    def dropped(self, revision: int, pending: Iterable[tuple[str, Version]] = ()) -> list[tuple[int, int]]:
        """What ``compact(revision)`` would drop once ``pending`` (newer, uncommitted) versions are added.

        Nothing changes: the store deletes these rows inside its transaction, and compacts the index
        only after the transaction has committed.
        """
        extra: dict[str, list[Version]] = {}
        for key, version in pending:
            extra.setdefault(key, []).append(version)
        dropped: list[tuple[int, int]] = []
        for key in self._versions.keys() | extra.keys():
            versions = self._versions.get(key, []) + extra.get(key, [])
            keep_from = _keep_from(versions, revision)
            dropped.extend((v.revision, v.sub) for v in versions[:keep_from])
        return dropped


def _keep_from(versions: list[Version], revision: int) -> int:
    """The index of the first version a read at ``revision`` or later may still need."""
    i = bisect.bisect_right(versions, revision, key=lambda v: v.revision)
    if i == 0:
        return 0
    # The newest version at or before the mark stays visible, unless it is a tombstone: then the
    # key did not exist at the mark, and the tombstone goes too.
    return i if versions[i - 1].version == 0 else i - 1
