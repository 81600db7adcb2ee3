"""Watch progress: how far a watch has seen when nothing under its prefix changed.

A watch delivers the writes under its prefix, each at its revision. That says nothing about the
revisions in between: were they writes elsewhere, or writes under the prefix still on their way? A
watch cache must know before it answers a consistent read (it has to have seen everything up to the
revision the read asks for: upstream's "consistent reads from cache", KEP-2340), and an API server
starting up must know when its caches have caught up with the store. etcd answers with a *progress
notification*, "this watch has seen everything up to revision R", which upstream's watch cache asks
for (``RequestWatchProgress`` in staging/src/k8s.io/apiserver/pkg/storage/cacher/progress). Through
etcd's gRPC-JSON gateway a watch is one HTTP request whose body is sent once, so it cannot ask; etcd
sends one unasked only every ten minutes. A revision written outside the prefix (another resource,
or another cluster sharing the etcd) would otherwise never reach a cache waiting for it.

One API server writes a cluster's keys, so the store it writes through knows which revisions could
concern a watch: its own writes under the watch's prefix. Every other revision cannot. A watch that
has received every such write owed to it has therefore seen everything up to the newest revision the
store has heard of, which is the progress ``WatchProgress`` reports. While a write is on its way
(sent, not yet answered) nobody makes progress: its revision is not known yet.

Writes etcd makes by itself are not counted: when a lease expires or is revoked, etcd deletes its
keys (Events, in Kubernetes). A cache may show such a key a moment after its revision, as it would
until upstream's next progress notification.

A pure core: no I/O. ``controlplane/store/etcd.py`` tells it what it sends, hears and delivers.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable, Sequence
from typing import Protocol

#: Own writes remembered for watches that start in the past (a cache lists at revision L, then
#: watches from L: the writes after L under its prefix are owed to it).
WRITES_REMEMBERED = 4096


class ProgressWatch(Protocol):
    """What ``WatchProgress`` needs of a watch (``controlplane.store.watch.Watch`` has it)."""

    prefix: str
    progress_revision: int


class WatchProgress:
    """The writes each watch is still owed, and the progress of those owed none."""

    def __init__(self, remembered: int = WRITES_REMEMBERED) -> None:
        #: The newest revision the store has heard of (etcd's header revision, shared).
        self.newest = 0
        #: Own writes sent and not yet answered.
        self.writing = 0
        self._writes: collections.deque[tuple[int, tuple[str, ...]]] = collections.deque(maxlen=remembered)
        self._owed: dict[ProgressWatch, int] = {}
        self._delivered: dict[ProgressWatch, int] = {}

    # -- what the store tells it ---------------------------------------------------------------

    def heard(self, revision: int) -> None:
        """An answer of etcd's said its revision is ``revision``."""
        if revision > self.newest:
            self.newest = revision

    def wrote(self, revision: int, keys: Sequence[str]) -> None:
        """An own write committed at ``revision``, changing ``keys`` (none: it changed nothing)."""
        self.heard(revision)
        if not keys:
            return
        self._writes.append((revision, tuple(keys)))
        for watch, delivered in self._delivered.items():
            if delivered < revision and _under(watch.prefix, keys):
                self._owed[watch] = max(self._owed.get(watch, 0), revision)

    def watching(self, watch: ProgressWatch, from_revision: int) -> None:
        """``watch`` starts after ``from_revision``: owed the own writes after it under its prefix."""
        self._delivered[watch] = from_revision
        owed = max(
            (r for r, keys in self._writes if r > from_revision and _under(watch.prefix, keys)), default=0
        )
        if len(self._writes) == self._writes.maxlen and self._writes[0][0] > from_revision + 1:
            # Writes after from_revision may have been forgotten: owe it the newest one known, so
            # that it reports progress only once it has had an event at least that new.
            owed = max(owed, self._writes[-1][0])
        if owed:
            self._owed[watch] = owed

    def delivered(self, watch: ProgressWatch, revision: int) -> None:
        """``watch`` was given the events up to ``revision``."""
        if revision > self._delivered.get(watch, 0):
            self._delivered[watch] = revision
        if self._owed.get(watch, revision + 1) <= revision:
            del self._owed[watch]

    def forget(self, watch: ProgressWatch) -> None:
        self._owed.pop(watch, None)
        self._delivered.pop(watch, None)

    # -- what it answers -------------------------------------------------------------------------

    def progress(self, watch: ProgressWatch) -> int | None:
        """The revision ``watch`` has seen everything up to, or None if it is owed a write."""
        if self.writing or watch in self._owed or watch not in self._delivered:
            return None
        return max(self.newest, self._delivered[watch])

    def advance(self, watches: Iterable[ProgressWatch]) -> None:
        """Raise each watch's ``progress_revision`` to its progress, where it has made some."""
        for watch in watches:
            revision = self.progress(watch)
            if revision is not None and revision > watch.progress_revision:
                watch.progress_revision = revision


def _under(prefix: str, keys: Iterable[str]) -> bool:
    return any(key.startswith(prefix) for key in keys)
