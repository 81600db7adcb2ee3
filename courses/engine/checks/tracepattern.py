"""Trace patterns: waiting for events in an order, one event at a time, without looking back.

A trace leaf says "the create request, *then* its write to etcd, *then* the scheduler's watch event",
other events coming between. The cluster's trace is long (thousands of events a minute) and the
evaluator sees it once, in seq order, as it happens. So a ``SequenceMatcher`` never rescans the
history: it keeps **partial matches**, each one "steps 0..k-1 seen, waiting for step k", and every new
event can only move partial matches forward, start a new one, or end one that ran out of time.

Which partial matches are worth keeping? Advancing greedily (taking the first event that fits the
next step) is always at least as good as waiting for a later one: a later event leaves less room
for the steps after it and makes the window longer. Greedy is wrong only when *which* event fits
matters later, and that is what ``same_request`` is for: step 0 ``as: req`` (some create request),
step 1 ``same_request: req`` (a store transaction of *that* request). Then every request that fits
step 0 starts its own partial match, keyed by its Audit-ID, and a store transaction is looked up by
its own ``id`` among them in one dictionary lookup, however many are waiting. Two partial matches at
the same step with the same bound requests have the same future, so only the one that started later
is kept (it is the likelier to fit ``within``): the set of partial matches stays small, and finding
"a later, better match" needs no backtracking. A match that runs out of its ``within`` window is
dropped when it is next looked at, and a newer start takes its place.

A step with ``times: {at_least: N}`` (docs/course-format.md, "Checks") waits for N fitting events, each
after the one before. It is not N copies of the step: the partial matches waiting there count the
step's events, and one moves on when it has seen N. Counting every fitting event is again the greedy
choice. Partial matches at the same counted step with the same bound requests see the same events, so
they share one count (a ``Tally``): an event costs one addition however many wait. Without ``within``
the one that has seen the most is at least as good as the others and is kept alone; with a window a
later start may still make it where an earlier one that saw more will not, so the tally keeps each
start that saw fewer but started later, oldest first: the first is the next to reach N, and the
first to run out of time.

The rules, which the property test's brute-force reference matcher states once more:

- the leaf holds when events e0 < e1 < ... (by seq, all after the leaf's start) fit the steps in order,
  a step with ``times: {at_least: N}`` standing for N steps in a row that are all it, each
  ``same_request`` step's event belonging to the same request as the event it names (an equal
  Audit-ID in ``id``; a reconcile or scheduling decision also counts the requests it lists in
  ``requests``);
- ``within``: ``seq(last) - seq(e0) <= events`` and ``ts(last) - ts(e0) <= seconds``;
- ``not_before``: no event fitting one of them comes between the start and e0: after the first such
  event no new match starts (those already started may still finish);
- the leaf's start is the seq the step began at, or for ``since: <leaf>`` the seq of the event that
  first completed that leaf's sequence. Once it holds, it holds for good.

Matching one event against one step (``CompiledMatcher``) is a few dictionary lookups and
comparisons: field values were turned into tests when the evaluator was made (``$student`` bound,
globs compiled to regular expressions, exact strings compared as strings).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from courses.engine.checks.spec import EventMatcher, TraceLeaf, bind_text, bind_value

#: How many partial matches one step may hold; past it the oldest is dropped. Real checks hold a
#: handful; the cap only keeps a pattern that fits every request from growing without end.
MAX_PARTIAL = 256

Test = Callable[[Any], bool]


def _any_item(test: Test) -> Test:
    """A field that is a list (``groups``, ``feasible``, ``writes``) fits when one of its items does."""

    def test_items(value: Any) -> bool:
        return type(value) is list and any(test(item) for item in value)

    return test_items


def compile_value(expected: Any, student: str) -> Test:
    """The test for one field of a matcher: ``expected`` as written, ``$student`` bound (as text: a
    ``*`` in a user name is not a glob)."""
    if isinstance(expected, str):
        parts = [bind_text(part, student) for part in expected.split("*")]
        expected = "*".join(parts)
        if len(parts) > 1:
            regex = re.compile(".*".join(re.escape(part) for part in parts), re.DOTALL)
            fullmatch = regex.fullmatch

            def glob(value: Any) -> bool:
                if type(value) is str:
                    return fullmatch(value) is not None
                return type(value) is list and any(type(i) is str and fullmatch(i) is not None for i in value)

            return glob

        def text(value: Any) -> bool:
            return value == expected or (type(value) is list and expected in value)

        return text
    if isinstance(expected, bool):

        def boolean(value: Any) -> bool:
            return value is expected

        return boolean
    if isinstance(expected, int | float):

        def number(value: Any) -> bool:
            if type(value) is list:
                return any(type(i) is not bool and i == expected for i in value)
            return type(value) is not bool and value == expected

        return number
    if expected is None:
        return lambda value: value is None
    if isinstance(expected, dict):
        tests = tuple((key, compile_value(item, student)) for key, item in expected.items())

        def mapping(value: Any) -> bool:
            if isinstance(value, Mapping):
                return all(key in value and test(value[key]) for key, test in tests)
            return type(value) is list and any(mapping(item) for item in value if isinstance(item, Mapping))

        return mapping
    whole = bind_value(expected, student)
    return lambda value: value == whole  # a list, compared whole


class CompiledMatcher:
    """One ``EventMatcher`` made into tests, for one student."""

    __slots__ = ("need", "same_request", "source", "tests", "type")

    def __init__(self, matcher: EventMatcher, student: str) -> None:
        self.source = matcher
        self.type = matcher.type
        self.same_request = matcher.same_request
        #: How many fitting events the step waits for (``times: {at_least: N}``; 1 without).
        self.need = matcher.at_least
        self.tests = tuple((name, compile_value(value, student)) for name, value in matcher.fields)

    def matches(self, event: Mapping[str, Any]) -> bool:
        """Whether ``event`` (already known to be of this type) has every field this step names."""
        for name, test in self.tests:  # noqa: SIM110 (a loop: all() of a generator is slower)
            if name not in event or not test(event[name]):
                return False
        return True


def request_ids(event: Mapping[str, Any]) -> frozenset[str]:
    """The Audit-IDs an event belongs to: its ``id``, and the ``requests`` a reconcile or a scheduling
    decision made."""
    ids: set[str] = set()
    own = event.get("id")
    if isinstance(own, str) and own:
        ids.add(own)
    made = event.get("requests")
    if type(made) is list:
        ids.update(r for r in made if isinstance(r, str) and r)
    return frozenset(ids)


Bound = tuple[frozenset[str], ...]


@dataclass(slots=True)
class Partial:
    """A partial match: steps before ``step`` seen, the first at ``first_seq``/``first_ts``; ``bound``
    holds the request ids of the named steps a later ``same_request`` refers to."""

    step: int
    first_seq: int
    first_ts: float
    bound: Bound

    @property
    def key(self) -> tuple[int, Bound]:
        return self.step, self.bound


@dataclass(slots=True)
class Tally:
    """The partial matches waiting at a step with ``times``, all with the same bound requests.

    Every event that fits the step counts for each of them, so they share one ``count`` (the step's
    fitting events since the tally began) and each member keeps a ``mark``: it has seen
    ``count - mark`` events of the step. One event is one addition, however many members wait.
    Members are kept oldest first, each starting later and having seen fewer than the one before
    (one that started no later and saw no more could never do better, so it is not kept): the first
    is the one to reach N first, and, under ``within``, the first to run out of time.
    """

    bound: Bound
    count: int = 0
    members: deque[tuple[int, Partial]] = field(default_factory=deque)

    def seen(self) -> int:
        """How many events of the step its furthest member has seen."""
        return self.count - self.members[0][0]


@dataclass(frozen=True, slots=True)
class Completed:
    """How a sequence was first completed: the seqs of its first and last events."""

    first_seq: int
    last_seq: int
    last_ts: float


class SequenceMatcher:
    """The incremental state of one trace leaf for one student: feed it events in seq order."""

    def __init__(self, leaf: TraceLeaf, student: str, *, after: int | None) -> None:
        self.leaf = leaf
        self.steps = tuple(CompiledMatcher(m, student) for m in leaf.sequence)
        self.not_before = tuple(CompiledMatcher(m, student) for m in leaf.not_before)
        self.student = student
        #: Events with a seq above this count; None while the leaf named by ``since`` is not done.
        self.after = after
        self.completed: Completed | None = None
        #: The index of the ``not_before`` matcher whose event came first (no new starts after it).
        self.blocked_by: int | None = None
        #: How far the furthest partial match that ran out of its window got: its step and the events
        #: of that step it had seen ((0, 0): none ran out).
        self.expired_at: tuple[int, int] = (0, 0)
        #: The seqs of lost events (a gap in the trace) after the start, if any: then "not seen" is
        #: not known.
        self.gap: tuple[int, int] | None = None
        within = leaf.within
        self.max_events = within.events if within is not None else None
        self.max_seconds = within.seconds if within is not None else None
        self.windowed = within is not None
        # Which named steps a later step refers to: only their request ids are kept in ``bound``.
        referenced = {m.same_request for m in leaf.sequence if m.same_request is not None}
        self.slot_of_step: dict[int, int] = {}
        slot_of_name: dict[str, int] = {}
        for index, matcher in enumerate(leaf.sequence):
            if matcher.as_name is not None and matcher.as_name in referenced:
                slot_of_name[matcher.as_name] = self.slot_of_step[index] = len(slot_of_name)
        self.slots = len(slot_of_name)
        #: For a ``same_request`` step, the slot whose ids it must share.
        self.needs: dict[int, int] = {
            index: slot_of_name[m.same_request]
            for index, m in enumerate(leaf.sequence)
            if m.same_request is not None
        }
        #: The steps with ``times`` (N >= 2): their partial matches wait in tallies.
        self.counted = frozenset(index for index, step in enumerate(self.steps) if step.need > 1)
        # Partial matches waiting at step k >= 1: by key, or for a same_request step by request id
        # too, so that an event finds its own in one lookup. A counted step (k >= 0) keeps tallies
        # instead, by bound requests (and by request id for a same_request step).
        self.waiting: list[dict[tuple[int, Bound], Partial]] = [{} for _ in self.steps]
        self.by_request: list[dict[str, list[Partial]]] = [{} for _ in self.steps]
        self.tallies: list[dict[Bound, Tally]] = [{} for _ in self.steps]
        self.tallies_by_request: list[dict[str, list[Tally]]] = [{} for _ in self.steps]
        # Per event type, the steps partial matches wait at (and whether they count), last first,
        # so that an event never moves one partial match two steps, nor counts once and moves on.
        self.steps_of_type: dict[str, tuple[tuple[int, bool], ...]] = {}
        for index in range(len(self.steps) - 1, -1, -1):
            if index == 0 and 0 not in self.counted:
                break  # a fitting event starts a match, which then waits at step 1
            t = self.steps[index].type
            self.steps_of_type[t] = (*self.steps_of_type.get(t, ()), (index, index in self.counted))
        self.types = frozenset(m.type for m in (*self.steps, *self.not_before))

    # -- feeding -------------------------------------------------------------------------------------

    def offer(self, event: Mapping[str, Any]) -> bool:
        """Take one event (in seq order); True when it completed the sequence."""
        after = self.after
        if after is None or self.completed is not None:
            return False
        seq = event["seq"]
        if seq <= after:
            return False
        etype = event["type"]
        ts = event.get("ts", 0.0)
        for index, counted in self.steps_of_type.get(etype, ()):
            if counted:
                if (
                    self.tallies[index]
                    and self.steps[index].matches(event)
                    and self._count(index, event, seq, ts)
                ):
                    return True
            elif (
                self.waiting[index]
                and self.steps[index].matches(event)
                and self._advance(index, event, seq, ts)
            ):
                return True
        first = self.steps[0]
        if self.blocked_by is None and etype == first.type and first.matches(event):
            bound: Bound = ()
            if self.slots:
                bound = tuple(frozenset() for _ in range(self.slots))
                if 0 in self.slot_of_step:
                    bound = self._bind(bound, 0, event)
            if 0 in self.counted:
                self._join(Partial(0, seq, ts, bound), 1)  # this event is the first of N
            elif self._place(Partial(1, seq, ts, bound), seq, ts):
                return True
        if self.blocked_by is None and self.not_before:
            for index, matcher in enumerate(self.not_before):
                if etype == matcher.type and matcher.matches(event):
                    self.blocked_by = index
                    break
        return False

    def _bind(self, bound: Bound, step: int, event: Mapping[str, Any]) -> Bound:
        slot = self.slot_of_step[step]
        return (*bound[:slot], request_ids(event), *bound[slot + 1 :])

    def _expired(self, partial: Partial, seq: int, ts: float) -> bool:
        return (self.max_events is not None and seq - partial.first_seq > self.max_events) or (
            self.max_seconds is not None and ts - partial.first_ts > self.max_seconds
        )

    def _advance(self, index: int, event: Mapping[str, Any], seq: int, ts: float) -> bool:
        """Move the partial matches waiting at step ``index`` that ``event`` fits; True if one completed."""
        chosen: list[Partial]
        if index in self.needs:
            buckets = self.by_request[index]
            by_identity: dict[int, Partial] = {}
            for rid in request_ids(event):
                for partial in buckets.get(rid, ()):
                    by_identity[id(partial)] = partial
            chosen = list(by_identity.values())
        else:
            chosen = list(self.waiting[index].values())
        fork = index in self.slot_of_step
        for partial in chosen:
            if self._expired(partial, seq, ts):
                self._remove(partial)
                self.expired_at = max(self.expired_at, (index, 0))
                continue
            if not fork:
                self._remove(partial)
            bound = self._bind(partial.bound, index, event) if fork else partial.bound
            if self._place(Partial(index + 1, partial.first_seq, partial.first_ts, bound), seq, ts):
                return True
        return False

    def _count(self, index: int, event: Mapping[str, Any], seq: int, ts: float) -> bool:
        """Count ``event`` for the tallies at the counted step ``index`` that it fits; a member that has
        seen N moves on. True if that completed the sequence."""
        tallies: list[Tally]
        if index in self.needs:
            buckets = self.tallies_by_request[index]
            by_identity: dict[int, Tally] = {}
            for rid in request_ids(event):
                for tally in buckets.get(rid, ()):
                    by_identity[id(tally)] = tally
            tallies = list(by_identity.values())
        else:
            tallies = list(self.tallies[index].values())
        need = self.steps[index].need
        for tally in tallies:
            members = tally.members
            if self.windowed:
                self._drop_expired(index, tally, seq, ts)
                if not members:
                    continue
            tally.count += 1
            mark, front = members[0]
            if tally.count - mark < need:
                continue
            members.popleft()  # only the first can have reached N: the others saw fewer
            if not members:
                self._forget_tally(index, tally)
            if self._place(Partial(index + 1, front.first_seq, front.first_ts, front.bound), seq, ts):
                return True
        return False

    def _drop_expired(self, index: int, tally: Tally, seq: int, ts: float) -> None:
        """Drop the members of ``tally`` that can no longer fit the window (the oldest first)."""
        members = tally.members
        while members and self._expired(members[0][1], seq, ts):
            mark, _ = members.popleft()
            self.expired_at = max(self.expired_at, (index, tally.count - mark))
        if not members:
            self._forget_tally(index, tally)

    def _place(self, partial: Partial, seq: int, ts: float) -> bool:
        """Keep ``partial`` waiting at its step, or complete the sequence; True if it completed."""
        if partial.step == len(self.steps):
            self.completed = Completed(partial.first_seq, seq, ts)
            self.waiting = [{} for _ in self.steps]
            self.by_request = [{} for _ in self.steps]
            self.tallies = [{} for _ in self.steps]
            self.tallies_by_request = [{} for _ in self.steps]
            return True
        if partial.step in self.counted:
            self._join(partial, 0)
            return False
        pool = self.waiting[partial.step]
        key = partial.key
        old = pool.get(key)
        if old is not None:
            if old.first_seq >= partial.first_seq:
                return False  # the one already waiting started later: it is at least as good
            self._remove(old)
        if len(pool) >= MAX_PARTIAL:
            self._remove(next(iter(pool.values())))
        pool[key] = partial
        slot = self.needs.get(partial.step)
        if slot is not None:
            buckets = self.by_request[partial.step]
            for rid in partial.bound[slot]:
                buckets.setdefault(rid, []).append(partial)
        return False

    def _join(self, partial: Partial, seen: int) -> None:
        """Let ``partial``, having seen ``seen`` events of its counted step, wait in its tally."""
        index = partial.step
        tallies = self.tallies[index]
        tally = tallies.get(partial.bound)
        if tally is None:
            if len(tallies) >= MAX_PARTIAL:
                self._forget_tally(index, next(iter(tallies.values())))
            tally = tallies[partial.bound] = Tally(partial.bound)
            slot = self.needs.get(index)
            if slot is not None:
                buckets = self.tallies_by_request[index]
                for rid in partial.bound[slot]:
                    buckets.setdefault(rid, []).append(tally)
        mark = tally.count - seen
        members = tally.members
        if members:
            last_mark, last = members[-1]  # it has seen at least as many: it joined no later
            if not self.windowed:
                # Without a window the start does not matter: the one that saw more is kept alone.
                if last_mark < mark or last.first_seq >= partial.first_seq:
                    return
                members.pop()
            elif last.first_seq >= partial.first_seq:
                return  # it saw at least as many and started no earlier: at least as good
            elif last_mark == mark:
                members.pop()  # as many seen, an earlier start: this one is better
            if len(members) >= MAX_PARTIAL:
                members.popleft()
        members.append((mark, partial))

    def _forget_tally(self, index: int, tally: Tally) -> None:
        tallies = self.tallies[index]
        if tallies.get(tally.bound) is tally:
            del tallies[tally.bound]
        slot = self.needs.get(index)
        if slot is not None:
            buckets = self.tallies_by_request[index]
            for rid in tally.bound[slot]:
                bucket = buckets.get(rid)
                if bucket is not None:
                    bucket[:] = [t for t in bucket if t is not tally]
                    if not bucket:
                        del buckets[rid]

    def _remove(self, partial: Partial) -> None:
        pool = self.waiting[partial.step]
        if pool.get(partial.key) is partial:
            del pool[partial.key]
        slot = self.needs.get(partial.step)
        if slot is not None:
            buckets = self.by_request[partial.step]
            for rid in partial.bound[slot]:
                bucket = buckets.get(rid)
                if bucket is not None:
                    bucket[:] = [p for p in bucket if p is not partial]
                    if not bucket:
                        del buckets[rid]

    def start(self, after: int) -> None:
        """Begin counting events after seq ``after`` (the ``since`` leaf just completed there)."""
        if self.after is None:
            self.after = after

    # -- reading -------------------------------------------------------------------------------------

    def prune(self, seq: int, ts: float) -> None:
        """Drop the partial matches that can no longer fit ``within`` by the event at ``seq``/``ts``
        (the newest seen), so that a message says "too late" rather than "still waiting"."""
        if not self.windowed:
            return
        for index, pool in enumerate(self.waiting):
            for partial in [p for p in pool.values() if self._expired(p, seq, ts)]:
                self._remove(partial)
                self.expired_at = max(self.expired_at, (index, 0))
        for index, tallies in enumerate(self.tallies):
            for tally in list(tallies.values()):
                self._drop_expired(index, tally, seq, ts)

    def furthest(self) -> tuple[int, int]:
        """How far the furthest partial match got: the step it waits at, and how many events of that
        step it has seen if the step has ``times`` ((0, 0): none started)."""
        for index in range(len(self.steps) - 1, -1, -1):
            if index in self.counted:
                tallies = self.tallies[index]
                if tallies:
                    return index, max(tally.seen() for tally in tallies.values())
            elif self.waiting[index]:
                return index, 0
        return 0, 0


def bind_matcher_text(matcher: EventMatcher, student: str) -> EventMatcher:
    """``matcher`` with ``$student`` bound in its values (for describing it to the student)."""
    return EventMatcher(
        matcher.type,
        tuple((name, bind_value(value, student)) for name, value in matcher.fields),
        matcher.as_name,
        matcher.same_request,
        matcher.at_least,
    )


__all__ = [
    "MAX_PARTIAL",
    "CompiledMatcher",
    "Completed",
    "Partial",
    "SequenceMatcher",
    "bind_matcher_text",
    "bind_text",
    "compile_value",
    "request_ids",
]
