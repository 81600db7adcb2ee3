"""Reading a check from a chapter's YAML, and refusing loudly what would only fail later.

A check that names a field no trace event has, or a kind the lab does not serve, would never hold,
and the student would be stuck on a step that cannot be done. So everything that can be checked
without a cluster is checked when the course loads, and ``CheckSpecError`` names the file and step
(``where``), the place inside the check (``all[0].trace.sequence[1].writes``) and the problem:

- the tree's shape: each node one of ``state``, ``trace``, ``all``, ``any``, ``not``, plus an ``id``;
  no unknown keys anywhere; ids unique within the check;
- state leaves: ``get`` or ``list`` of a kind the lab serves (``controlplane.api.kinds``; another kind
  must say its ``resource``), a namespace only for namespaced kinds, label and field selectors the
  API server would accept (``controlplane.api.selectors``), field paths that parse, regular
  expressions that compile, numbers where numbers are compared;
- trace leaves: event types of the trace schema (``controlplane.trace.schema.EVENT_TYPES``), fields
  that type has, values of the field's JSON type and among its choices (``op`` of ``store.txn`` is
  ``txn``, ``get`` or ``range``), ``as`` names unique, ``same_request`` naming an earlier step of
  the same sequence, ``times: {at_least: N}`` with N >= 1 on a step of a sequence (never ``at_most``:
  a leaf that held cannot stop holding; never with ``as``: it would name one of N events), ``since``
  naming a trace leaf written earlier, ``within`` positive.

The rules themselves (what each key means) are in docs/course-format.md, "Checks".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from controlplane.api.selectors import (
    SelectorError,
    check_field_selector,
    parse_field_selector,
    parse_label_selector,
)
from controlplane.trace.schema import EVENT_TYPES, EventType
from controlplane.trace.schema import Field as SchemaField
from courses.engine.checks.paths import PathError, parse_path
from courses.engine.checks.reads import kinds_in, lookup_kind, split_api_version
from courses.engine.checks.spec import (
    OPERATORS,
    STUDENT,
    AllOf,
    AnyOf,
    Check,
    CheckSpecError,
    Condition,
    Count,
    EventMatcher,
    Node,
    Not,
    StateLeaf,
    Target,
    TraceLeaf,
    Within,
)

_ID = re.compile(r"[a-z0-9][a-z0-9-]*\Z")
_AS_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")
_NODE_KINDS = ("state", "trace", "all", "any", "not")
_TARGET_KEYS = frozenset(
    {"apiVersion", "kind", "namespace", "name", "labelSelector", "fieldSelector", "allNamespaces", "resource"}
)
#: The envelope fields a matcher may never name: the bus stamps them, they say nothing of the event.
_ENVELOPE_ONLY = frozenset({"v", "cluster", "seq", "ts", "type"})
#: Fields that carry an Audit-ID a ``same_request`` can compare.
_REQUEST_ID_FIELDS = ("id", "requests")


def _kind_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a map"
    return type(value).__name__


def _join(at: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{at}[{key}]"
    return f"{at}.{key}" if at else key


def glob_matches(pattern: str, text: str) -> bool:
    """Whether ``text`` fits ``pattern``, where ``*`` stands for any run of characters."""
    regex = ".*".join(re.escape(part) for part in pattern.split("*"))
    return re.fullmatch(regex, text, re.DOTALL) is not None


class _Parser:
    def __init__(self, where: str) -> None:
        self.where = where
        self.ids: dict[str, str] = {}  # id -> where it was defined
        self.trace_ids: list[str] = []  # ids of the trace leaves parsed so far, in order
        self.since_refs: list[tuple[str, str, frozenset[str]]] = []  # since, where, trace ids before it

    def fail(self, at: str, problem: str) -> CheckSpecError:
        return CheckSpecError(self.where, at, problem)

    def mapping(self, value: Any, at: str, allowed: frozenset[str] | tuple[str, ...]) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.fail(at, f"expected a map, got {_kind_of(value)}")
        for key in value:
            if not isinstance(key, str) or key not in allowed:
                raise self.fail(
                    _join(at, str(key)), f"unknown key {key!r} (allowed here: {', '.join(sorted(allowed))})"
                )
        return value

    def string(self, value: Any, at: str) -> str:
        if not isinstance(value, str) or not value:
            raise self.fail(at, f"expected a non-empty string, got {_kind_of(value)}")
        return value

    def integer(self, value: Any, at: str, *, minimum: int) -> int:
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            raise self.fail(at, f"expected a whole number of at least {minimum}, got {value!r}")
        return value

    def number(self, value: Any, at: str) -> float | int:
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise self.fail(at, f"expected a number, got {_kind_of(value)}")
        return value

    # -- the tree ------------------------------------------------------------------------------------

    def node(self, data: Any, at: str) -> Node:
        if not isinstance(data, Mapping):
            raise self.fail(
                at, f"a check is a map with one of {', '.join(_NODE_KINDS)}, got {_kind_of(data)}"
            )
        self.mapping(data, at, (*_NODE_KINDS, "id"))
        kinds = [kind for kind in _NODE_KINDS if kind in data]
        if len(kinds) != 1:
            found = f"found {' and '.join(kinds)}" if kinds else "found none"
            raise self.fail(at, f"a check node has exactly one of {', '.join(_NODE_KINDS)} ({found})")
        node_id = self.node_id(data.get("id"), _join(at, "id")) if "id" in data else None
        kind = kinds[0]
        inner = _join(at, kind)
        if kind in ("all", "any"):
            items = data[kind]
            if not isinstance(items, list) or not items:
                raise self.fail(inner, f"expected a non-empty list of checks, got {_kind_of(items)}")
            children = tuple(self.node(item, _join(inner, i)) for i, item in enumerate(items))
            return AllOf(node_id, children) if kind == "all" else AnyOf(node_id, children)
        if kind == "not":
            return Not(node_id, self.node(data[kind], inner))
        if kind == "state":
            return self.state(node_id, data[kind], inner)
        leaf = self.trace(node_id, data[kind], inner)
        if leaf.since is not None:
            if leaf.since == node_id:
                raise self.fail(_join(inner, "since"), "a leaf cannot start after its own events")
            self.since_refs.append((leaf.since, _join(inner, "since"), frozenset(self.trace_ids)))
        if node_id is not None:
            self.trace_ids.append(node_id)
        return leaf

    def node_id(self, value: Any, at: str) -> str:
        if not isinstance(value, str) or not _ID.match(value):
            raise self.fail(at, f"an id is lowercase letters, digits and '-', got {value!r}")
        if value in self.ids:
            raise self.fail(at, f"duplicate id {value!r} (first at {self.ids[value] or 'the top'})")
        self.ids[value] = at
        return value

    # -- state ---------------------------------------------------------------------------------------

    def state(self, node_id: str | None, data: Any, at: str) -> StateLeaf:
        spec = self.mapping(data, at, ("get", "list", "conditions", "count"))
        if ("get" in spec) == ("list" in spec):
            raise self.fail(at, "a state check has exactly one of get (one object) or list")
        is_list = "list" in spec
        target = self.target(
            spec["list" if is_list else "get"], _join(at, "list" if is_list else "get"), is_list
        )
        conditions: list[Condition] = []
        raw = spec.get("conditions", [])
        if not isinstance(raw, list):
            raise self.fail(_join(at, "conditions"), f"expected a list of conditions, got {_kind_of(raw)}")
        for i, item in enumerate(raw):
            conditions.extend(self.condition(item, _join(_join(at, "conditions"), i)))
        count: Count | None = None
        if "count" in spec:
            if not is_list:
                raise self.fail(_join(at, "count"), "count is for a list (a get reads one object)")
            count = self.count(spec["count"], _join(at, "count"))
        elif is_list:
            count = Count(at_least=1)
        return StateLeaf(node_id, target, tuple(conditions), count)

    def target(self, data: Any, at: str, is_list: bool) -> Target:
        spec = self.mapping(data, at, _TARGET_KEYS)
        for key in ("apiVersion", "kind"):
            if key not in spec:
                raise self.fail(at, f"missing {key}")
        api_version = self.string(spec["apiVersion"], _join(at, "apiVersion"))
        kind = self.string(spec["kind"], _join(at, "kind"))
        group, version = split_api_version(api_version)
        found = lookup_kind(api_version, kind)
        resource = spec.get("resource")
        if resource is not None:
            resource = self.string(resource, _join(at, "resource"))
        if found is not None:
            if resource is not None and resource != found.plural:
                raise self.fail(
                    _join(at, "resource"), f"{kind} is served as {found.plural!r}, not {resource!r}"
                )
            resource, namespaced = found.plural, found.namespaced
            storage_prefix = found.storage_prefix or f"/registry/{found.plural}"
        elif resource is not None:
            # A kind the lab's built-in table does not know (a custom resource): stored as upstream
            # stores CRs, under /registry/<group>/<resource>; namespaced unless said otherwise.
            namespaced = True
            storage_prefix = f"/registry/{group}/{resource}" if group else f"/registry/{resource}"
        else:
            served = kinds_in(api_version)
            hint = (
                f" (it serves: {', '.join(served)})" if served else " (it serves no kinds in that apiVersion)"
            )
            raise self.fail(
                _join(at, "kind"),
                f"the lab serves no kind {kind!r} in {api_version!r}{hint}; name another kind's resource with"
                " resource:",
            )
        namespace: str | None = None
        if "namespace" in spec:
            if not namespaced:
                raise self.fail(_join(at, "namespace"), f"{kind} is cluster-scoped: it has no namespace")
            namespace = self.string(spec["namespace"], _join(at, "namespace"))
        all_namespaces = spec.get("allNamespaces", False)
        if not isinstance(all_namespaces, bool):
            raise self.fail(
                _join(at, "allNamespaces"), f"expected true or false, got {_kind_of(all_namespaces)}"
            )
        if all_namespaces:
            if not is_list:
                raise self.fail(_join(at, "allNamespaces"), "allNamespaces is for a list")
            if "namespace" in spec:
                raise self.fail(_join(at, "allNamespaces"), "give a namespace or allNamespaces, not both")
        elif namespaced and namespace is None:
            namespace = "default"  # as kubectl does without -n
        name: str | None = None
        if is_list:
            if "name" in spec:
                raise self.fail(
                    _join(at, "name"), "a list has no name (get one object, or use a fieldSelector)"
                )
        else:
            if "name" not in spec:
                raise self.fail(at, "missing name (a get reads one object)")
            name = self.string(spec["name"], _join(at, "name"))
            for key in ("labelSelector", "fieldSelector"):
                if key in spec:
                    raise self.fail(_join(at, key), f"{key} is for a list")
        label_selector = field_selector = None
        if "labelSelector" in spec:
            label_selector = self.string(spec["labelSelector"], _join(at, "labelSelector"))
            if STUDENT not in label_selector:
                try:
                    parse_label_selector(label_selector)
                except SelectorError as error:
                    raise self.fail(_join(at, "labelSelector"), error.message) from None
        if "fieldSelector" in spec:
            field_selector = self.string(spec["fieldSelector"], _join(at, "fieldSelector"))
            if STUDENT not in field_selector:
                try:
                    check_field_selector(f"{group}/{resource}", parse_field_selector(field_selector))
                except SelectorError as error:
                    raise self.fail(_join(at, "fieldSelector"), error.message) from None
        return Target(
            api_version,
            kind,
            group,
            version,
            resource,
            namespaced,
            namespace,
            name,
            label_selector,
            field_selector,
            storage_prefix,
        )

    def condition(self, data: Any, at: str) -> list[Condition]:
        spec = self.mapping(data, at, ("path", *OPERATORS, "like"))
        if "path" not in spec:
            raise self.fail(at, "missing path")
        try:
            path = parse_path(spec["path"])
        except PathError as error:
            raise self.fail(_join(at, "path"), str(error)) from None
        ops = [op for op in OPERATORS if op in spec]
        if not ops:
            raise self.fail(at, f"a condition needs one of {', '.join(OPERATORS)}")
        conditions = []
        for op in ops:
            operand = spec[op]
            where = _join(at, op)
            if op == "exists":
                if not isinstance(operand, bool):
                    raise self.fail(where, f"expected true or false, got {_kind_of(operand)}")
            elif op in ("at_least", "at_most"):
                self.number(operand, where)
            elif op == "matches":
                example = self.example(operand, spec, at)
                conditions.append(Condition(path, op, operand, example))
                continue
            conditions.append(Condition(path, op, operand))
        if "like" in spec and "matches" not in spec:
            raise self.fail(_join(at, "like"), "like is an example of what matches accepts: add matches")
        return conditions

    def example(self, pattern: Any, spec: Mapping[str, Any], at: str) -> str:
        """The ``like`` beside ``matches``: a failure shows the student this text, never the pattern,
        so it is required, and it must be one the pattern accepts."""
        where = _join(at, "matches")
        self.string(pattern, where)
        try:
            compiled = re.compile(pattern.replace(STUDENT, "student"))
        except re.error as error:
            raise self.fail(where, f"not a regular expression: {error}") from None
        if "like" not in spec:
            raise self.fail(
                at, "matches needs like: a text it accepts, shown to a student instead of the pattern"
            )
        example = self.string(spec["like"], _join(at, "like"))
        if compiled.fullmatch(example.replace(STUDENT, "student")) is None:
            raise self.fail(_join(at, "like"), f"{example!r} does not match {pattern!r}")
        return example

    def count(self, data: Any, at: str) -> Count:
        spec = self.mapping(data, at, ("at_least", "at_most", "equals"))
        if not spec:
            raise self.fail(at, "a count needs at_least, at_most or equals")
        values = {key: self.integer(value, _join(at, key), minimum=0) for key, value in spec.items()}
        count = Count(values.get("at_least"), values.get("at_most"), values.get("equals"))
        if count.at_least is not None and count.at_most is not None and count.at_least > count.at_most:
            raise self.fail(at, f"at_least {count.at_least} is more than at_most {count.at_most}")
        return count

    # -- trace ---------------------------------------------------------------------------------------

    def trace(self, node_id: str | None, data: Any, at: str) -> TraceLeaf:
        spec = self.mapping(data, at, ("since", "sequence", "not_before", "within"))
        since = spec.get("since", "step")
        since = self.string(since, _join(at, "since"))
        if "sequence" not in spec:
            raise self.fail(at, "missing sequence (the events to wait for, in order)")
        raw = spec["sequence"]
        if not isinstance(raw, list) or not raw:
            raise self.fail(
                _join(at, "sequence"), f"expected a non-empty list of events, got {_kind_of(raw)}"
            )
        names: dict[str, EventType] = {}
        sequence = []
        for i, item in enumerate(raw):
            matcher = self.matcher(item, _join(_join(at, "sequence"), i), names)
            if matcher.as_name is not None:
                names[matcher.as_name] = EVENT_TYPES[matcher.type]
            sequence.append(matcher)
        raw_not_before = spec.get("not_before", [])
        if not isinstance(raw_not_before, list):
            raise self.fail(
                _join(at, "not_before"), f"expected a list of events, got {_kind_of(raw_not_before)}"
            )
        not_before = tuple(
            self.matcher(item, _join(_join(at, "not_before"), i), None)
            for i, item in enumerate(raw_not_before)
        )
        within = None
        if "within" in spec:
            within = self.within(spec["within"], _join(at, "within"))
        return TraceLeaf(node_id, None if since == "step" else since, tuple(sequence), not_before, within)

    def within(self, data: Any, at: str) -> Within:
        spec = self.mapping(data, at, ("events", "seconds"))
        if not spec:
            raise self.fail(at, "within needs events and/or seconds")
        events = self.integer(spec["events"], _join(at, "events"), minimum=1) if "events" in spec else None
        seconds = None
        if "seconds" in spec:
            seconds = self.number(spec["seconds"], _join(at, "seconds"))
            if seconds <= 0:
                raise self.fail(_join(at, "seconds"), f"expected a positive number, got {seconds!r}")
        return Within(events, float(seconds) if seconds is not None else None)

    def matcher(self, data: Any, at: str, names: dict[str, EventType] | None) -> EventMatcher:
        if not isinstance(data, Mapping):
            raise self.fail(at, f"an event is a map with a type and fields, got {_kind_of(data)}")
        if "type" not in data:
            raise self.fail(at, "missing type (an event type of docs/trace.md)")
        type_name = data["type"]
        etype = EVENT_TYPES.get(type_name) if isinstance(type_name, str) else None
        if etype is None:
            raise self.fail(
                _join(at, "type"),
                f"unknown event type {type_name!r} (known: {', '.join(sorted(EVENT_TYPES))})",
            )
        schema = etype.fields()
        fields: list[tuple[str, Any]] = []
        as_name = same_request = None
        at_least = 1
        for key, value in data.items():
            where = _join(at, str(key))
            if key == "type":
                continue
            if key == "times":
                if names is None:
                    raise self.fail(where, "times is for the events of a sequence")
                at_least = self.times(value, where)
                continue
            if key in ("as", "same_request"):
                if names is None:
                    raise self.fail(where, f"{key} is for the events of a sequence")
                if not any(f in schema for f in _REQUEST_ID_FIELDS):
                    raise self.fail(where, f"{type_name} events name no request (no id or requests field)")
                if not isinstance(value, str) or not _AS_NAME.match(value):
                    raise self.fail(where, f"expected a name (letters, digits, _ and -), got {value!r}")
                if key == "as":
                    if value in names:
                        raise self.fail(where, f"the name {value!r} is already used in this sequence")
                    as_name = value
                else:
                    if value not in names:
                        known = f" (named so far: {', '.join(names)})" if names else " (none named so far)"
                        raise self.fail(where, f"no earlier event of this sequence is named {value!r}{known}")
                    same_request = value
                continue
            if key == "count" and isinstance(value, Mapping):
                # A state leaf's count: {at_least: N} written on a step (store.txn's count is a number).
                raise self.fail(where, "to wait for several events of one step, write times: {at_least: N}")
            if not isinstance(key, str) or key in _ENVELOPE_ONLY or key not in schema:
                raise self.fail(
                    where,
                    f"{type_name} events have no field {key!r} (fields: {', '.join(sorted(schema))})",
                )
            self.field_value(schema[key], value, where, type_name, key)
            fields.append((key, value))
        if as_name is not None and at_least > 1:
            raise self.fail(
                _join(at, "as"),
                f"as names one event, and this step waits for {at_least} of them: name the event of"
                " another step",
            )
        return EventMatcher(type_name, tuple(fields), as_name, same_request, at_least)

    def times(self, data: Any, at: str) -> int:
        """``times: {at_least: N}``: how many events must fit one step of a sequence (N >= 1)."""
        for key in ("at_most", "equals"):
            if isinstance(data, Mapping) and key in data:
                raise self.fail(
                    _join(at, key),
                    "a trace leaf holds once its events have come, so a step waits for at least so many"
                    " of them; to say at most N, put the leaf under not: with times: {at_least: N+1}",
                )
        spec = self.mapping(data, at, ("at_least",))
        if "at_least" not in spec:
            raise self.fail(at, "times needs at_least (how many events must fit this step)")
        return self.integer(spec["at_least"], _join(at, "at_least"), minimum=1)

    def field_value(self, spec: SchemaField, value: Any, at: str, type_name: str, name: str) -> None:
        """Refuse a value the field can never have: another JSON type, or none of its choices."""
        types = spec.types
        if isinstance(value, dict):
            if dict not in types and list not in types:
                raise self.fail(at, f"{type_name}.{name} is {spec.type_names()}: a map cannot match it")
            for key in value:
                if not isinstance(key, str):
                    raise self.fail(at, f"expected field names, got {key!r}")
            return
        if isinstance(value, list):
            if list not in types:
                raise self.fail(at, f"{type_name}.{name} is {spec.type_names()}: a list cannot match it")
            return
        if isinstance(value, bool):
            ok = bool in types or list in types
        elif isinstance(value, int | float):
            ok = any(t in types for t in (int, float, list)) and bool not in types
        elif isinstance(value, str):
            ok = str in types or list in types
        elif value is None:
            ok = type(None) in types
        else:
            ok = False
        if not ok:
            raise self.fail(at, f"{type_name}.{name} is {spec.type_names()}, got {_kind_of(value)}")
        if (
            spec.choices
            and isinstance(value, str)
            and STUDENT not in value
            and not any(isinstance(c, str) and glob_matches(value, c) for c in spec.choices)
        ):
            choices = ", ".join(str(c) for c in spec.choices if c is not None)
            raise self.fail(at, f"{type_name}.{name} is one of {choices}; {value!r} is none of them")

    # -- whole-tree rules ----------------------------------------------------------------------------

    def check_since(self) -> None:
        """``since`` names a trace leaf written before the leaf that names it (so they cannot wait for
        each other in a circle)."""
        for since, at, earlier_traces in self.since_refs:
            if since in earlier_traces:
                continue
            if since not in self.ids:
                raise self.fail(
                    at,
                    f"no leaf has the id {since!r} (write since: step, or the id of an earlier trace leaf)",
                )
            if since in self.trace_ids:
                raise self.fail(at, f"{since!r} is written after this leaf; since names an earlier one")
            raise self.fail(at, f"{since!r} is not a trace leaf, so it has no event to start after")


def parse_check(data: Any, *, where: str) -> Check:
    """The check written as ``data`` (YAML already loaded), validated; ``where`` names the file and
    step for messages. Raises ``CheckSpecError``."""
    parser = _Parser(where)
    root = parser.node(data, "")
    parser.check_since()
    return Check(root, where)


__all__ = ["glob_matches", "parse_check"]
