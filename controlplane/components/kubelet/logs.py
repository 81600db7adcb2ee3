"""Simulated container output, for ``kubectl logs`` (``pods/log``: follow, tailLines, sinceSeconds, previous).

A container's output is a deterministic function of its ``Behaviour`` (simulation.py) and its start
time, so nothing is stored: ``ContainerLogs`` remembers each instance's start and end and replays the
lines printed up to ``now``. As with the real kubelet only the current instance and the one before it
(``previous=True``) are kept; asking for ``previous`` when the container never restarted is an error
(upstream: 'previous terminated container "x" in pod "p" not found').

Timestamps are RFC 3339 with nanoseconds, as ``kubectl logs --timestamps`` prints them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from controlplane.components.kubelet.simulation import Behaviour, Output


class NoPreviousContainer(LookupError):
    """``previous=True`` for a container that has not terminated before."""


def rfc3339_nano(epoch: float) -> str:
    whole = int(epoch)
    nanos = round((epoch - whole) * 1e9)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{nanos:09d}Z"


@dataclass(frozen=True)
class LogLine:
    at: float
    text: str

    def render(self, timestamps: bool) -> str:
        return f"{rfc3339_nano(self.at)} {self.text}" if timestamps else self.text


@dataclass
class Instance:
    start: float
    end: float | None = None

    def lines(self, behaviour: Behaviour, now: float) -> list[LogLine]:
        until = now if self.end is None else min(now, self.end)
        out: list[LogLine] = []
        for event in behaviour.events(self.start):
            at = self.start + event.offset
            if at > until:
                break
            if isinstance(event, Output):
                out.append(LogLine(at, event.text))
        return out


@dataclass
class FollowCursor:
    """Where a ``follow=true`` reader is: which instance and how many of its lines it has seen."""

    start: float
    seen: int = 0


class ContainerLogs:
    """The output of one container across its restarts (the current and the previous instance)."""

    def __init__(self, behaviour: Behaviour, *, pod: str = "", container: str = "") -> None:
        self.behaviour = behaviour
        self.pod = pod
        self.container = container
        self.current: Instance | None = None
        self.previous: Instance | None = None

    def started(self, at: float) -> None:
        if self.current is not None:
            self.previous = self.current
            if self.previous.end is None:
                self.previous.end = at
        self.current = Instance(at)

    def stopped(self, at: float) -> None:
        if self.current is not None and self.current.end is None:
            self.current.end = at

    def read(
        self,
        now: float,
        *,
        tail_lines: int | None = None,
        since: float | None = None,
        timestamps: bool = False,
        previous: bool = False,
    ) -> list[str]:
        """The lines as ``kubectl logs`` shows them; ``since`` is an absolute time (sinceSeconds)."""
        instance = self.previous if previous else self.current
        if instance is None:
            if previous:
                raise NoPreviousContainer(
                    f'previous terminated container "{self.container}" in pod "{self.pod}" not found'
                )
            return []
        lines = instance.lines(self.behaviour, now)
        if since is not None:
            lines = [line for line in lines if line.at >= since]
        if tail_lines is not None:
            lines = lines[-tail_lines:] if tail_lines > 0 else []
        return [line.render(timestamps) for line in lines]

    def follow(
        self, cursor: FollowCursor | None, now: float, *, timestamps: bool = False
    ) -> tuple[list[str], FollowCursor]:
        """New lines since ``cursor`` (None: from the start of the current instance) and the next cursor.

        A follower stays on the instance it started with; when that instance has ended and all its lines
        were read, the stream is over (``kubectl logs -f`` returns when the container exits).
        """
        if self.current is None:
            return [], cursor or FollowCursor(start=now)
        if cursor is None:
            cursor = FollowCursor(start=self.current.start)
        instance = next(
            (i for i in (self.current, self.previous) if i is not None and i.start == cursor.start), None
        )
        if instance is None:
            return [], cursor
        lines = instance.lines(self.behaviour, now)[cursor.seen :]
        return [line.render(timestamps) for line in lines], FollowCursor(
            cursor.start, cursor.seen + len(lines)
        )

    def follow_finished(self, cursor: FollowCursor, now: float) -> bool:
        instance = next(
            (i for i in (self.current, self.previous) if i is not None and i.start == cursor.start), None
        )
        if instance is None:
            return True
        return instance.end is not None and instance.end <= now and not self.follow(cursor, now)[0]
