"""The evaluator: one check, for one student, from the moment a step began, fed as things happen.

It is the pure core of "the step turns green by itself". It reads nothing and sends nothing; a thin
async runner feeds it and asks it, in a loop like this one::

    evaluator = check.evaluator(student="student:alice", since_seq=trace_seq_when_the_step_began)
    while step_is_open:
        for read in evaluator.reads():                 # what to GET, as the read-only checker
            evaluator.give(read, await get(read))      # a ReadResult: 200 + body, 404, 500, timeout
        for event in await next_batch():               # the cluster's trace, in seq order
            evaluator.offer(event)                     # returns the reads this event made old
        verdict = evaluator.verdict(now)               # passed / settling / failing / unknown

What it keeps, so that nothing is done twice:

- **Trace leaves** are ``tracepattern.SequenceMatcher``\\ s, each a set of partial matches. The
  evaluator indexes them by the event types they wait for, so an event costs a dictionary lookup
  plus the work of the leaves that wait for its type (``bench_offer`` in ``benchmark.py`` measures
  it: the target is 20 µs per event per check). A leaf that completed leaves the index; a leaf with
  ``since: <leaf>`` joins it when that leaf completes, counting from the event after.
- **State leaves** share ``reads.Read``\\ s (two leaves reading the same Deployment read it once). A
  read is *wanted* when it has never been answered or a ``store.txn`` wrote a key it covers;
  ``reads()`` hands each wanted read out once, and it is wanted again only if another write comes.
  A write that lands while a read is on its way marks it wanted again, so a stale answer is never
  the last word.
- **Values**: each leaf is True, False or None (unknown: not read yet, the API server failed, the
  trace lost events), combined by Kleene's three-valued logic (``all`` is False if a child is False,
  else unknown if a child is unknown; ``not`` of unknown is unknown). The tree is recomputed only
  when a leaf's value changes, and every change is told to the ``stability.Latch``, so a check that
  held, broke and held again between two verdicts still waits out its window.

A ``Verdict`` says ``PASSED`` (latched), ``SETTLING`` (holds; ``recheck_at`` says when the window
ends), ``FAILING`` with ``failures`` (values, rendered in the student's language by the page) and
the ``failing_ids`` a hint's ``when`` can name, or ``UNKNOWN`` with ``unknowns``: the part of the
check that could not be evaluated, to show as "not known yet" and to log for the author, never as the
student's failure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

from courses.engine.checks.conditions import bind_condition, check_list, check_object
from courses.engine.checks.describe import (
    bound_phrase,
    condition_phrase,
    counted_phrase,
    limit_phrase,
    matcher_phrase,
    object_phrase,
    objects_phrase,
    since_phrase,
    times_phrase,
)
from courses.engine.checks.failures import Failure, Param, Phrase, Unknown, gettext_noop
from courses.engine.checks.reads import Read, ReadResult, index_keys, read_for
from courses.engine.checks.spec import (
    AllOf,
    Check,
    Condition,
    EventMatcher,
    Node,
    Not,
    StateLeaf,
    Target,
    TraceLeaf,
)
from courses.engine.checks.stability import Latch, Phase
from courses.engine.checks.tracepattern import Completed, SequenceMatcher, bind_matcher_text


class Status(Enum):
    PASSED = "passed"
    SETTLING = "settling"
    FAILING = "failing"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a check says at a moment."""

    status: Status
    failures: tuple[Failure, ...] = ()
    unknowns: tuple[Unknown, ...] = ()
    #: The ids of the nodes that do not hold (a hint tied to one of them is shown first).
    failing_ids: frozenset[str] = field(default_factory=frozenset)
    #: While settling: when the stability window ends.
    recheck_at: float | None = None
    passed_at: float | None = None

    @property
    def passed(self) -> bool:
        return self.status is Status.PASSED


Value = bool | None


@dataclass(slots=True)
class _ReadState:
    read: Read
    leaves: list[int]
    wanted: bool = True
    in_flight: bool = False


@dataclass(slots=True)
class _StateRun:
    leaf: StateLeaf
    target: Target
    conditions: tuple[Condition, ...]
    read: Read
    value: Value = None
    failures: tuple[Failure, ...] = ()
    unknown: Unknown | None = None


@dataclass(slots=True)
class _TraceRun:
    leaf: TraceLeaf
    matcher: SequenceMatcher
    #: The leaves whose ``since`` names this one: they start when it completes.
    dependents: list[int] = field(default_factory=list)


def _value_in_namespace(name: str, value: Any, namespace: str) -> Any:
    """A trace pattern's value written for the namespace ``default``, for ``namespace``: a
    ``namespace`` field, the namespace in a store ``key`` (``/registry/configmaps/default/x``) and
    in a URL ``path``; anything else as written."""
    if isinstance(value, Mapping):
        return {key: _value_in_namespace(key, item, namespace) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_value_in_namespace(name, item, namespace) for item in value)
    if not isinstance(value, str):
        return value
    if name == "namespace" and value == "default":
        return namespace
    if name == "key":
        return value.replace("/default/", f"/{namespace}/", 1)
    if name == "path":
        return value.replace("/namespaces/default", f"/namespaces/{namespace}")
    return value


def _trace_in_namespace(leaf: TraceLeaf, namespace: str) -> TraceLeaf:
    def matcher(m: EventMatcher) -> EventMatcher:
        fields = tuple((name, _value_in_namespace(name, value, namespace)) for name, value in m.fields)
        return replace(m, fields=fields)

    return replace(
        leaf,
        sequence=tuple(matcher(m) for m in leaf.sequence),
        not_before=tuple(matcher(m) for m in leaf.not_before),
    )


def _status_message(result: ReadResult) -> str:
    body = result.body
    if isinstance(body, Mapping) and isinstance(body.get("message"), str):
        return str(body["message"])
    return result.message


class Evaluator:
    """Evaluates one ``Check`` for one student, incrementally (see the module's docstring)."""

    def __init__(
        self,
        check: Check,
        *,
        student: str,
        since_seq: int,
        stability: float = 1.0,
        namespace: str = "default",
    ) -> None:
        self.check = check
        self.student = student
        self.since_seq = since_seq
        self._latch = Latch(stability)
        self._leaves = check.leaves()
        self._index = {id(leaf): i for i, leaf in enumerate(self._leaves)}
        self._values: list[Value] = [None] * len(self._leaves)
        self._states: dict[int, _StateRun] = {}
        self._traces: dict[int, _TraceRun] = {}
        self._reads: dict[Read, _ReadState] = {}
        self._reads_by_prefix: dict[str, list[_ReadState]] = {}
        self._by_type: dict[str, list[SequenceMatcher]] = {}
        self._run_of_matcher: dict[int, int] = {}
        trace_by_id: dict[str, int] = {}
        for i, leaf in enumerate(self._leaves):
            if isinstance(leaf, StateLeaf):
                target = leaf.target.bind(student)
                if namespace != "default" and target.namespace == "default":
                    # A chapter writes ``default``; a student in a shared cluster works in theirs.
                    target = replace(target, namespace=namespace)
                read = read_for(target)
                conditions = tuple(bind_condition(c, student) for c in leaf.conditions)
                self._states[i] = _StateRun(
                    leaf, target, conditions, read, unknown=self._not_read(leaf, target)
                )
                state = self._reads.get(read)
                if state is None:
                    state = self._reads[read] = _ReadState(read, [])
                    self._reads_by_prefix.setdefault(target.storage_prefix, []).append(state)
                state.leaves.append(i)
            else:
                after = since_seq if leaf.since is None else None
                if namespace != "default":
                    leaf = _trace_in_namespace(leaf, namespace)
                matcher = SequenceMatcher(leaf, student, after=after)
                self._traces[i] = _TraceRun(leaf, matcher)
                self._run_of_matcher[id(matcher)] = i
                if leaf.since is not None:
                    self._traces[trace_by_id[leaf.since]].dependents.append(i)
                else:
                    self._listen(matcher)
                if leaf.id is not None:
                    trace_by_id[leaf.id] = i
        #: The trace leaves with an id, by id (a ``since`` names one).
        self._trace_by_id = trace_by_id
        #: The seq and clock of the newest event offered (for telling which matches ran out of time).
        self._last: tuple[int, float] = (since_seq, 0.0)
        self._value: Value = None
        self._recompute()

    @staticmethod
    def _not_read(leaf: StateLeaf, target: Target) -> Unknown:
        return Unknown(leaf.id, "unknown.not_read", {"object": _target_phrase(target)})

    def _listen(self, matcher: SequenceMatcher) -> None:
        for etype in matcher.types:
            self._by_type.setdefault(etype, []).append(matcher)

    def _forget(self, matcher: SequenceMatcher) -> None:
        for etype in matcher.types:
            listeners = self._by_type[etype]
            listeners.remove(matcher)
            if not listeners:
                del self._by_type[etype]

    # -- feeding -------------------------------------------------------------------------------------

    def offer(self, event: Mapping[str, Any]) -> tuple[Read, ...]:
        """Take one trace event (in seq order); answer the reads it made old (to GET again)."""
        seq = event["seq"]
        if seq <= self.since_seq:
            return ()
        self._last = (seq, event.get("ts", 0.0))
        etype = event["type"]
        dirty: tuple[Read, ...] = ()
        if etype == "store.txn" and self._reads_by_prefix:
            dirty = self._dirty(event)
        listeners = self._by_type.get(etype)
        if listeners:
            for matcher in tuple(listeners):
                if matcher.offer(event):
                    self._completed(matcher, event["seq"])
        return dirty

    def offer_all(self, events: Iterable[Mapping[str, Any]]) -> frozenset[Read]:
        """``offer`` each event; the reads any of them made old."""
        dirty: set[Read] = set()
        for event in events:
            dirty.update(self.offer(event))
        return frozenset(dirty)

    def _dirty(self, event: Mapping[str, Any]) -> tuple[Read, ...]:
        writes = event.get("writes")
        if type(writes) is not list:
            return ()
        found: list[Read] = []
        prefixes = self._reads_by_prefix
        for write in writes:
            key = write.get("key") if isinstance(write, Mapping) else None
            if not isinstance(key, str):
                continue
            for prefix in set(index_keys(key)):
                for state in prefixes.get(prefix, ()):
                    if state.read.covers(key) and state.read not in found:
                        state.wanted = True
                        found.append(state.read)
        return tuple(found)

    def _completed(self, matcher: SequenceMatcher, seq: int) -> None:
        self._forget(matcher)
        i = self._run_of_matcher[id(matcher)]
        self._values[i] = True
        for dependent in self._traces[i].dependents:
            follower = self._traces[dependent].matcher
            follower.start(seq)
            if follower.completed is None:
                self._listen(follower)
        self._recompute()

    def missed(self, first: int, last: int) -> None:
        """The trace lost events ``first`` to ``last`` (a subscriber that fell behind): a trace leaf
        that has not completed can no longer say it was not seen, so it is unknown until it is."""
        for run in self._traces.values():
            matcher = run.matcher
            if matcher.completed is None and (matcher.after is None or last > matcher.after):
                old = matcher.gap
                matcher.gap = (first, last) if old is None else (min(old[0], first), max(old[1], last))
        self._recompute()

    def reads(self) -> tuple[Read, ...]:
        """The reads to send now. Each is handed out once: answer every one with ``give`` (an error
        or a timeout too); it comes back only when a write makes it old again."""
        out = []
        for state in self._reads.values():
            if state.wanted and not state.in_flight:
                state.wanted = False
                state.in_flight = True
                out.append(state.read)
        return tuple(out)

    def refresh(self) -> None:
        """Want every read again (the "Check" button: the same answer, from a fresh look)."""
        for state in self._reads.values():
            state.wanted = True

    def give(self, read: Read, result: ReadResult) -> None:
        """The API server's answer to ``read``."""
        state = self._reads.get(read)
        if state is None:
            raise KeyError(f"{read.url} is not a read of this check")
        state.in_flight = False
        for i in state.leaves:
            self._answer(i, result)
        self._recompute()

    def _answer(self, i: int, result: ReadResult) -> None:
        run = self._states[i]
        leaf, target = run.leaf, run.target
        run.unknown = None
        run.failures = ()
        if result.status == 0:
            run.value = None
            run.unknown = Unknown(leaf.id, "unknown.timeout", {"object": _target_phrase(target)})
        elif result.status == 404 and leaf.count is None:
            run.failures = check_object(leaf, target, run.conditions, None)
            run.value = False
        elif result.status == 200 and leaf.count is None and isinstance(result.body, Mapping):
            run.failures = check_object(leaf, target, run.conditions, result.body)
            run.value = not run.failures
        elif (
            result.status == 200
            and leaf.count is not None
            and isinstance(result.body, Mapping)
            and isinstance(result.body.get("items"), list)
        ):
            run.failures = check_list(leaf, target, run.conditions, leaf.count, result.body["items"])
            run.value = not run.failures
        else:
            run.value = None
            message = _status_message(result) if result.status != 200 else "not a Kubernetes object"
            params: dict[str, Param] = {"object": _target_phrase(target), "status": result.status}
            if message:
                params["message"] = message
            run.unknown = Unknown(leaf.id, "unknown.api_error" if message else "unknown.api_status", params)
        self._values[i] = run.value

    # -- values --------------------------------------------------------------------------------------

    def _leaf_value(self, i: int) -> Value:
        run = self._traces.get(i)
        if run is None:
            return self._values[i]
        matcher = run.matcher
        if matcher.completed is not None:
            return True
        return None if matcher.gap is not None else False

    def _value_of(self, node: Node) -> Value:
        if isinstance(node, StateLeaf | TraceLeaf):
            return self._leaf_value(self._index[id(node)])
        if isinstance(node, Not):
            value = self._value_of(node.child)
            return None if value is None else not value
        values = [self._value_of(child) for child in node.children]
        if isinstance(node, AllOf):
            if False in values:
                return False
            return None if None in values else True
        if True in values:
            return True
        return None if None in values else False

    def _recompute(self) -> None:
        self._value = self._value_of(self.check.root)
        self._latch.change(self._value is True)

    # -- asking --------------------------------------------------------------------------------------

    def verdict(self, now: float) -> Verdict:
        """The check's verdict at ``now`` (the runner's clock, in seconds)."""
        confirmed = not any(state.wanted or state.in_flight for state in self._reads.values())
        seen = self._latch.observe(now, confirmed=confirmed)
        if seen.phase is Phase.PASSED:
            return Verdict(Status.PASSED, passed_at=seen.passed_at)
        unknowns = tuple(self._unknowns())
        if seen.phase is Phase.SETTLING:
            return Verdict(Status.SETTLING, unknowns=unknowns, recheck_at=seen.until)
        if self._value is None:
            return Verdict(Status.UNKNOWN, unknowns=unknowns, failing_ids=self._failing_ids())
        # A leaf that has not begun is left out while the leaf it waits for says what is missing; if
        # that leaf cannot say it (it is under a ``not``), the waiting leaf does after all.
        failures = self._failures(self.check.root) or self._failures(self.check.root, waiting=True)
        return Verdict(
            Status.FAILING,
            failures=_unique(failures),
            unknowns=unknowns,
            failing_ids=self._failing_ids(),
        )

    @property
    def passed(self) -> bool:
        return self._latch.passed_at is not None

    def matched(self, leaf_id: str) -> Completed | None:
        """How the trace leaf ``leaf_id`` was first matched (the seqs of its first and last events),
        or None while it is not: a step's ``timeline.at`` puts the timeline there."""
        for run in self._traces.values():
            if run.leaf.id == leaf_id:
                return run.matcher.completed
        raise KeyError(f"no trace leaf has the id {leaf_id!r}")

    def _failing_ids(self) -> frozenset[str]:
        ids = set()
        for node in self.check.nodes():
            if node.id is not None and self._value_of(node) is False and not self._waiting(node):
                ids.add(node.id)
        return frozenset(ids)

    def _waiting(self, node: Node) -> bool:
        """Whether ``node`` is a trace leaf that counts ``since`` another one which has not completed
        and fails: it has not begun, so it is not yet what is wrong. Its failure ("no ... since the
        <event of the other leaf>") and a hint tied to it would speak of events the student has not
        caused; the leaf it waits for says what to do first."""
        if not isinstance(node, TraceLeaf) or node.since is None:
            return False
        run = self._traces[self._index[id(node)]]
        if run.matcher.after is not None:
            return False
        return self._leaf_value(self._trace_by_id[node.since]) is False

    def _unknowns(self) -> list[Unknown]:
        found: list[Unknown] = []
        for i, leaf in enumerate(self._leaves):
            if self._leaf_value(i) is not None:
                continue
            if i in self._states:
                unknown = self._states[i].unknown
                if unknown is not None:
                    found.append(unknown)
            else:
                gap = self._traces[i].matcher.gap
                assert gap is not None
                steps = self._traces[i].matcher.steps
                found.append(
                    Unknown(
                        leaf.id,
                        "unknown.trace_gap",
                        {"first": gap[0], "last": gap[1], "what": self._describe(steps[-1].source)},
                    )
                )
        return found

    def _failures(self, node: Node, *, waiting: bool = False) -> list[Failure]:
        """The failures under ``node``; ``waiting``: with those of the leaves that have not begun."""
        value = self._value_of(node)
        if value is not False:
            return []
        if isinstance(node, StateLeaf):
            return list(self._states[self._index[id(node)]].failures)
        if isinstance(node, TraceLeaf):
            if self._waiting(node) and not waiting:
                return []
            return [self._trace_failure(self._index[id(node)])]
        if isinstance(node, Not):
            inner = node.child
            leaf_id = node.id if node.id is not None else inner.id
            if isinstance(inner, TraceLeaf):
                return [Failure(leaf_id, "not.seen", {"what": self._trace_phrase(inner)})]
            return [Failure(leaf_id, "not.held", {"what": self._node_phrase(inner)})]
        found: list[Failure] = []
        for child in node.children:
            found.extend(self._failures(child, waiting=waiting))
        return found

    # -- words ---------------------------------------------------------------------------------------

    def _describe(self, matcher: EventMatcher) -> Phrase:
        return matcher_phrase(bind_matcher_text(matcher, self.student))

    def _counted(self, matcher: EventMatcher) -> Phrase:
        """A step as one of a sequence's "done" steps: with its count when it waited for several."""
        return counted_phrase(bind_matcher_text(matcher, self.student))

    def _trace_failure(self, i: int) -> Failure:
        run = self._traces[i]
        leaf, matcher = run.leaf, run.matcher
        steps = leaf.sequence
        matcher.prune(*self._last)
        reached = matcher.furthest()
        if matcher.expired_at > reached:
            at, seen = matcher.expired_at
            limit = limit_phrase(matcher.max_events, matcher.max_seconds)
            if seen:  # ran out of time while counting the events of a step with times
                counting: dict[str, Param] = {
                    "what": self._describe(steps[at]),
                    "times": times_phrase(steps[at].at_least),
                    "seen": times_phrase(seen),
                    "limit": limit,
                }
                if at == 0:
                    return Failure(leaf.id, "trace.counted_too_late", counting)
                return Failure(
                    leaf.id, "trace.counted_too_late_after", {**counting, "first": self._describe(steps[0])}
                )
            return Failure(
                leaf.id,
                "trace.too_late",
                {
                    "done": self._counted(steps[at - 1]),
                    "next": self._describe(steps[at]),
                    "first": self._describe(steps[0]),
                    "limit": limit,
                },
            )
        at, seen = reached
        if seen:  # some of the events of a step with times, not all
            counted: dict[str, Param] = {
                "what": self._describe(steps[at]),
                "times": times_phrase(steps[at].at_least),
                "seen": times_phrase(seen),
            }
            if at == 0:
                return Failure(leaf.id, "trace.counted", {**counted, "since": self._since(leaf)})
            return Failure(leaf.id, "trace.counted_after", {**counted, "done": self._counted(steps[at - 1])})
        if at:
            return Failure(
                leaf.id,
                "trace.stopped",
                {"done": self._counted(steps[at - 1]), "next": self._describe(steps[at])},
            )
        if matcher.blocked_by is not None:
            return Failure(
                leaf.id,
                "trace.too_early",
                {
                    "early": self._describe(leaf.not_before[matcher.blocked_by]),
                    "first": self._describe(steps[0]),
                },
            )
        return Failure(leaf.id, "trace.none", {"what": self._describe(steps[0]), "since": self._since(leaf)})

    def _since(self, leaf: TraceLeaf) -> Phrase:
        if leaf.since is None:
            return since_phrase(None)
        for other in self._leaves:
            if isinstance(other, TraceLeaf) and other.id == leaf.since:
                return since_phrase(bind_matcher_text(other.sequence[-1], self.student))
        return since_phrase(None)

    def _trace_phrase(self, leaf: TraceLeaf) -> Param:
        phrases: list[Phrase] = [self._counted(m) for m in leaf.sequence]
        what = phrases[-1]
        for earlier in reversed(phrases[:-1]):
            what = Phrase(gettext_noop("%(first)s followed by %(next)s"), {"first": earlier, "next": what})
        return what

    def _node_phrase(self, node: Node) -> Param:
        if isinstance(node, TraceLeaf):
            return self._trace_phrase(node)
        if isinstance(node, StateLeaf):
            run = self._states[self._index[id(node)]]
            return _state_phrase(run.target, node, run.conditions)
        if isinstance(node, Not):
            return Phrase(gettext_noop("not %(what)s"), {"what": self._node_phrase(node.child)})
        items = tuple(self._node_phrase(child) for child in node.children)
        if isinstance(node, AllOf):
            return Phrase(gettext_noop("all of: %(items)s"), {"items": items})
        return Phrase(gettext_noop("any of: %(items)s"), {"items": items})


def _unique(failures: Iterable[Failure]) -> tuple[Failure, ...]:
    """``failures`` without repeats: two leaves that wait for the same first event, or read the same
    object, fail with the same words, and the student reads them once (the first leaf's)."""
    found: list[Failure] = []
    for failure in failures:
        if not any(failure.code == seen.code and failure.params == seen.params for seen in found):
            found.append(failure)
    return tuple(found)


def _target_phrase(target: Target) -> Param:
    return object_phrase(target) if target.name is not None else objects_phrase(target)


def _state_phrase(target: Target, leaf: StateLeaf, conditions: Sequence[Condition]) -> Param:
    conditions_phrase = tuple(condition_phrase(c) for c in conditions)
    if leaf.count is None:
        if not conditions_phrase:
            return object_phrase(target)
        return Phrase(
            gettext_noop("%(object)s with %(conditions)s"),
            {"object": object_phrase(target), "conditions": conditions_phrase},
        )
    what: dict[str, Param] = {"bound": bound_phrase(leaf.count), "objects": objects_phrase(target)}
    if not conditions_phrase:
        return Phrase(gettext_noop("%(bound)s %(objects)s"), what)
    return Phrase(
        gettext_noop("%(bound)s %(objects)s with %(conditions)s"), {**what, "conditions": conditions_phrase}
    )


__all__ = ["Evaluator", "Status", "Verdict"]
