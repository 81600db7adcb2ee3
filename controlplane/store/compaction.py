"""Compaction: deciding how much history to keep.

An MVCC store keeps every version of every key, so it grows forever unless old versions are thrown
away. *Compacting at revision C* discards, for each key, every version that was already superseded at
C (and tombstones older than C); reads and watches from before C then fail with ``Compacted``, which is
why a client watching with an old resourceVersion gets 410 Gone and must re-list.

kube-apiserver asks etcd to compact every 5 minutes (``--etcd-compaction-interval``); kine keeps at
least 1000 revisions. Kubelab's automatic compaction keeps both: at least ``min_revisions`` revisions
**and** at least ``min_age`` seconds of history. The compactor samples (time, revision) pairs as time
passes and compacts to the newest revision that is old enough by both measures. This module is the
pure decision; backends run it from a background task.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    """Keep at least ``min_revisions`` revisions and ``min_age`` seconds of history.

    ``interval`` is how often (cluster-clock seconds) the compactor looks; 0 disables it.
    """

    min_revisions: int = 1000
    min_age: float = 300.0
    interval: float = 30.0


class Compactor:
    """Remembers which revision was current when, and picks the next compaction target."""

    def __init__(self, policy: RetentionPolicy) -> None:
        self.policy = policy
        self._samples: collections.deque[tuple[float, int]] = collections.deque()

    def observe(self, now: float, revision: int) -> None:
        """Record that ``revision`` was the current revision at time ``now``."""
        if self._samples and self._samples[-1][1] == revision:
            return
        self._samples.append((now, revision))

    def target(self, now: float, current: int, compacted: int) -> int | None:
        """The revision to compact to now, or None if nothing is old enough to discard."""
        old_enough = None
        while self._samples and self._samples[0][0] <= now - self.policy.min_age:
            old_enough = self._samples.popleft()[1]
        if old_enough is None:
            return None
        # Keep the newest old-enough sample so the next look has a floor to start from.
        self._samples.appendleft((now - self.policy.min_age, old_enough))
        candidate = min(old_enough, current - self.policy.min_revisions)
        return candidate if candidate > compacted else None
