"""A check, as written in a chapter: a small tree of conditions, parsed once and never changed.

A step is done when its check holds. A check is a tree (docs/course-format.md, "Checks"):

- a **state** leaf reads objects through the API server, as a read-only checker identity would with
  ``kubectl get`` (one object, or a list with selectors), and puts conditions on their fields;
- a **trace** leaf waits for events of the cluster's trace in an order (the create request, *then*
  its write to etcd), since the step began or since another leaf's events;
- ``all``, ``any`` and ``not`` combine them, and every node may carry an ``id`` that hints and
  messages refer to.

This module holds the tree's types, which are plain frozen values: ``parsing.parse_check`` builds
them from YAML and refuses anything it cannot make sense of (``CheckSpecError``), and
``evaluator.Evaluator`` evaluates one for one student. Nothing here reads a cluster or a clock.

Strings may say ``$student``, the student's cluster user name (``student:alice``): the check is
written once for everyone and bound to a student when it is evaluated (``bind_text``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from courses.engine.checks.paths import FieldPath, Select

if TYPE_CHECKING:
    from courses.engine.checks.evaluator import Evaluator

#: The placeholder for the student's cluster user name.
STUDENT = "$student"


class CheckSpecError(ValueError):
    """A check that cannot be used as written: ``where`` (the file and step), ``at`` (the place inside
    the check, such as ``all[0].trace.sequence[1].key``) and the ``problem`` in words."""

    def __init__(self, where: str, at: str, problem: str) -> None:
        self.where = where
        self.at = at
        self.problem = problem
        super().__init__(f"{where}: {at}: {problem}" if at else f"{where}: {problem}")


def bind_text(text: str, student: str) -> str:
    """``text`` with ``$student`` replaced by the student's user name."""
    return text.replace(STUDENT, student) if STUDENT in text else text


def bind_value(value: Any, student: str) -> Any:
    """``value`` (a YAML scalar, list or map) with ``$student`` replaced in every string in it."""
    if isinstance(value, str):
        return bind_text(value, student)
    if isinstance(value, list):
        return [bind_value(item, student) for item in value]
    if isinstance(value, dict):
        return {key: bind_value(item, student) for key, item in value.items()}
    return value


# -- state leaves -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Target:
    """What a state leaf reads: one object (``get``) or a list of them, and where they are stored.

    ``namespace`` is None for a cluster-scoped kind, and for a list across every namespace.
    ``storage_prefix`` is where the API server keeps these objects in etcd (``/registry/pods``), so
    that a ``store.txn`` writing under it tells the evaluator to read again.
    """

    api_version: str
    kind: str
    group: str
    version: str
    resource: str
    namespaced: bool
    namespace: str | None
    name: str | None
    label_selector: str | None
    field_selector: str | None
    storage_prefix: str

    def bind(self, student: str) -> Target:
        def text(value: str | None) -> str | None:
            return None if value is None else bind_text(value, student)

        return Target(
            self.api_version,
            self.kind,
            self.group,
            self.version,
            self.resource,
            self.namespaced,
            text(self.namespace),
            text(self.name),
            text(self.label_selector),
            text(self.field_selector),
            self.storage_prefix,
        )


Operator = Literal["equals", "exists", "at_least", "at_most", "matches", "contains"]

#: The operators of a condition, in the order a condition with several is checked.
OPERATORS: tuple[Operator, ...] = ("exists", "equals", "at_least", "at_most", "matches", "contains")


@dataclass(frozen=True, slots=True)
class Condition:
    """One test of one field: ``{path: status.phase, equals: Running}``. A condition written with two
    operators (``at_least`` and ``at_most``) becomes two of these with the same path.

    ``example`` is for ``matches`` only: a text the pattern accepts, written by the author
    (``like: "Scaled up replica set shop-7d9c8 from 0 to 1"``), which a failure shows the student
    instead of the regular expression.
    """

    path: FieldPath
    op: Operator
    operand: Any
    example: str | None = None


@dataclass(frozen=True, slots=True)
class Count:
    """How many items of a list must meet the conditions: ``at_least`` (1 when nothing is said),
    ``at_most`` and ``equals``."""

    at_least: int | None = None
    at_most: int | None = None
    equals: int | None = None

    def holds(self, n: int) -> bool:
        if self.equals is not None and n != self.equals:
            return False
        if self.at_least is not None and n < self.at_least:
            return False
        return not (self.at_most is not None and n > self.at_most)


@dataclass(frozen=True, slots=True)
class StateLeaf:
    """Objects read through the API server and conditions on their fields."""

    id: str | None
    target: Target
    conditions: tuple[Condition, ...]
    #: None for a ``get``; for a ``list``, how many items must meet every condition.
    count: Count | None


# -- trace leaves -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EventMatcher:
    """One event a trace leaf waits for: its ``type`` and values of its fields (docs/trace.md).

    ``fields`` keeps the values as written (a ``*`` glob, ``$student``, a number, a map for an item
    of a list field such as ``writes``); ``tracepattern.CompiledMatcher`` turns them into tests.
    ``as_name`` names the event so that a later one can ask for ``same_request`` as it.

    ``at_least`` (``times: {at_least: N}``, 1 when not written) is how many events must fit this step,
    each after the one before: N fitting events in a row of the pattern, so "30 pod watch events" is
    one step rather than 30 copies of it. A trace leaf holds once its events have come, so a step
    says "at least", never "at most": "not 30 times" is a ``not`` around ``at_least: 30``.
    """

    type: str
    fields: tuple[tuple[str, Any], ...]
    as_name: str | None = None
    same_request: str | None = None
    at_least: int = 1

    def field(self, name: str) -> Any:
        for key, value in self.fields:
            if key == name:
                return value
        return None


@dataclass(frozen=True, slots=True)
class Within:
    """How close the first and the last event of a sequence must be: in events (seq numbers) and/or
    in seconds of the cluster's clock (the events' ``ts``)."""

    events: int | None = None
    seconds: float | None = None


@dataclass(frozen=True, slots=True)
class TraceLeaf:
    """An ordered pattern over trace events: ``sequence`` in this order (other events may come
    between), none of ``not_before`` ahead of its first event, all of it ``within`` a window."""

    id: str | None
    #: None: since the step began; else the id of an earlier trace leaf: after the event that
    #: completed its sequence.
    since: str | None
    sequence: tuple[EventMatcher, ...]
    not_before: tuple[EventMatcher, ...] = ()
    within: Within | None = None


# -- combinators --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AllOf:
    """Holds when every child holds."""

    id: str | None
    children: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class AnyOf:
    """Holds when at least one child holds."""

    id: str | None
    children: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Not:
    """Holds when its child does not (and is unknown when its child is)."""

    id: str | None
    child: Node


Leaf = StateLeaf | TraceLeaf
Node = AllOf | AnyOf | Not | StateLeaf | TraceLeaf


def walk(node: Node) -> Iterator[Node]:
    """Every node of the tree under ``node``, parents before children, in the order written."""
    yield node
    if isinstance(node, AllOf | AnyOf):
        for child in node.children:
            yield from walk(child)
    elif isinstance(node, Not):
        yield from walk(node.child)


#: Trace fields whose values are words a step's text should mention (the content linter's input).
_MENTIONED_FIELDS = frozenset(
    {"verb", "resource", "subresource", "name", "kind", "plugin", "controller", "stage", "component", "fault"}
)


def _word(value: Any) -> str | None:
    """A value the linter can look for in text: a plain string, with no glob and no placeholder."""
    if isinstance(value, str) and value and "*" not in value and STUDENT not in value:
        return value
    return None


def _key_name(key: Any) -> str | None:
    """The object name at the end of a store key (``app-config`` of ``/registry/configmaps/default/
    app-config``), if the key spells it out."""
    word = _word(key)
    if word is None:
        return None
    last = word.rstrip("/").rsplit("/", 1)[-1]
    return last or None


def _matcher_mentions(matcher: EventMatcher) -> Iterator[str]:
    yield matcher.type
    for name, value in matcher.fields:
        word: str | None = None
        if name in _MENTIONED_FIELDS:
            word = _word(value)
        elif name == "pod":
            word = _key_name(value)  # namespace/name: the name
        elif name == "key":
            word = _key_name(value)
        elif name == "writes" and isinstance(value, dict):
            word = _key_name(value.get("key"))
        elif name == "reason" and matcher.type == "request.completed":
            word = _word(value)  # a Status reason (Conflict, AlreadyExists): which refusal it is
        if word is not None:
            yield word


@dataclass(frozen=True, slots=True)
class Check:
    """A parsed, validated check: its tree and where it was written (for messages)."""

    root: Node
    where: str

    def nodes(self) -> Iterator[Node]:
        return walk(self.root)

    def leaves(self) -> tuple[Leaf, ...]:
        """The state and trace leaves, in the order written."""
        return tuple(node for node in walk(self.root) if isinstance(node, StateLeaf | TraceLeaf))

    def ids(self) -> frozenset[str]:
        """Every node id (a hint's ``when`` must name one of them)."""
        return frozenset(node.id for node in walk(self.root) if node.id is not None)

    def mentions(self) -> frozenset[str]:
        """The words this check names, as written: kinds and object names, the last key of each
        field path (and the value a ``[key=value]`` picks), trace event types, and the verbs,
        resources, names, plugins, controllers and stages its events name, and the Status reason an
        answer is expected with. Globs and ``$student`` are left out. The content linter asks that
        the step's text mentions each."""
        words: set[str] = set()
        for leaf in self.leaves():
            if isinstance(leaf, StateLeaf):
                words.add(leaf.target.kind)
                if (name := _word(leaf.target.name)) is not None:
                    words.add(name)
                for condition in leaf.conditions:
                    if condition.path.last_name:
                        words.add(condition.path.last_name)
                    words.update(s.value for s in condition.path.steps if isinstance(s, Select) and s.value)
            else:
                for matcher in (*leaf.sequence, *leaf.not_before):
                    words.update(_matcher_mentions(matcher))
        return frozenset(words)

    def evaluator(
        self, *, student: str, since_seq: int, stability: float = 1.0, namespace: str = "default"
    ) -> Evaluator:
        """An evaluator of this check for ``student`` (their cluster user name, ``student:alice``),
        counting trace events after ``since_seq`` (the trace's last seq when the step began).
        ``namespace``: the student's default namespace, which objects the check looks for in
        ``default`` are read in (their own in a classroom's shared cluster)."""
        from courses.engine.checks.evaluator import Evaluator

        return Evaluator(self, student=student, since_seq=since_seq, stability=stability, namespace=namespace)


__all__ = [
    "OPERATORS",
    "STUDENT",
    "AllOf",
    "AnyOf",
    "Check",
    "CheckSpecError",
    "Condition",
    "Count",
    "EventMatcher",
    "Leaf",
    "Node",
    "Not",
    "Operator",
    "StateLeaf",
    "Target",
    "TraceLeaf",
    "Within",
    "bind_text",
    "bind_value",
    "walk",
]
