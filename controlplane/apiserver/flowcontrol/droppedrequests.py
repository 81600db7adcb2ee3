"""How long a refused client should wait: the ``Retry-After`` of a 429, per priority level.

A 429 says "try again later"; ``Retry-After`` says when. Upstream
(``k8s.io/apiserver/pkg/util/flowcontrol/dropped_requests_tracker.go``) adapts it per priority level,
the way TCP adapts its window: it starts at 1 second; each time a new second begins, it looks at the
requests dropped in the last ``retryAfter`` seconds. At least ``3 x retryAfter`` of them (and no
increase in the last ``retryAfter`` seconds): double it, up to 32. Fewer than ``retryAfter``: one
second less, down to 1. A level that keeps refusing thus tells its clients to back off further.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: The longest Retry-After (upstream's ``maxRetryAfter``).
MAX_RETRY_AFTER = 32


@dataclass(slots=True)
class _Stats:
    history: list[tuple[int, int]] = field(default_factory=list)  # (unix second, dropped)
    current_second: int = 0
    current_count: int = 0
    retry_after: int = 1
    last_increase: int = 0

    def record(self, second: int) -> None:
        if second == self.current_second:
            self.current_count += 1
            return
        self._remember(self.current_second, self.current_count)
        self.current_second, self.current_count = second, 1
        self._update(second)

    def _remember(self, second: int, count: int) -> None:
        self.history.append((second, count))
        self.history = [(s, c) for s, c in self.history if second - s <= MAX_RETRY_AFTER]

    def _update(self, now: int) -> None:
        """``updateRetryAfterIfNeededLocked``: the interval [now - retryAfter, now)."""
        retry_after = self.retry_after
        dropped = 0
        for second, count in reversed(self.history):
            if now - second > retry_after:
                break
            if second < now:
                dropped += count
        if now - self.last_increase >= retry_after and dropped >= 3 * retry_after:
            self.retry_after = min(retry_after * 2, MAX_RETRY_AFTER)
            self.last_increase = now
        elif dropped < retry_after and retry_after > 1:
            self.retry_after = retry_after - 1


class DroppedRequests:
    """Dropped requests per priority level, and the Retry-After each level advises now."""

    def __init__(self) -> None:
        self._levels: dict[str, _Stats] = {}

    def record(self, priority_level: str, now: float) -> None:
        """A request of ``priority_level`` was dropped at ``now`` (seconds since the epoch)."""
        self._levels.setdefault(priority_level, _Stats()).record(int(now))

    def retry_after(self, priority_level: str) -> int:
        """Seconds a client of ``priority_level`` should wait before retrying (1 to 32)."""
        stats = self._levels.get(priority_level)
        return stats.retry_after if stats is not None else 1
