"""Stability and latching: a check never flaps.

Controllers converge in steps. A Deployment scaled to 3 may show 3 available replicas, then 2 while
a pod restarts, then 3 again; a check that turned green at the first 3 and red at the 2 would teach
the student that the lab is broken. Two rules, the ones learners of other platforms ask for, keep a
step's verdict honest:

- **stability window**: a check passes only after it has held *continuously* for ``window`` seconds
  (1 s by default), with every read it depends on answered, not waiting to be repeated. Any moment it
  does not hold, or cannot be told, starts the wait again;
- **latching**: once passed, always passed. The student did the thing; undoing it later (deleting the
  ConfigMap in the next step) does not take the step back.

``Latch`` is only that bookkeeping. It is told when the check's value changes (``change``) and asked at
a moment (``observe``); it never reads a clock, so tests drive it with plain numbers. The clock is the
runner's choice; the cluster's clock (the trace's ``ts``) suits best, since it is the one controllers
keep time by.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Phase(Enum):
    """Where a check is: holding not long enough yet, passed for good, or not holding."""

    SETTLING = "settling"
    PASSED = "passed"
    NOT_HOLDING = "not-holding"


@dataclass(frozen=True, slots=True)
class Observation:
    phase: Phase
    #: While settling: when the window ends (ask again then).
    until: float | None = None
    #: Once passed: when.
    passed_at: float | None = None


class Latch:
    """Holds-for-a-while-then-passes, and passes-for-good."""

    def __init__(self, window: float) -> None:
        if window < 0:
            raise ValueError("a stability window cannot be negative")
        self.window = window
        self.passed_at: float | None = None
        self._held_since: float | None = None
        #: The check holds but no moment has been observed since it started to (the window starts at
        #: the next ``observe``, never earlier: conservative).
        self._holding = False

    def change(self, holds: bool) -> None:
        """The check's value was recomputed: it holds, or it does not (or cannot be told)."""
        if not holds:
            self._holding = False
            self._held_since = None
        elif not self._holding:
            self._holding = True
            self._held_since = None

    def observe(self, now: float, *, confirmed: bool) -> Observation:
        """The phase at ``now``; ``confirmed`` says that no read the check depends on is outstanding."""
        if self.passed_at is not None:
            return Observation(Phase.PASSED, passed_at=self.passed_at)
        if not self._holding:
            return Observation(Phase.NOT_HOLDING)
        if self._held_since is None or now < self._held_since:
            self._held_since = now
        until = self._held_since + self.window
        if confirmed and now >= until:
            self.passed_at = now
            return Observation(Phase.PASSED, passed_at=now)
        return Observation(Phase.SETTLING, until=until)


__all__ = ["Latch", "Observation", "Phase"]
