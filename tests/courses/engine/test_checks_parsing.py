"""Parsing checks: what a chapter may write, and every way it is refused (loudly, with the place)."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.trace.schema import EVENT_TYPES
from courses.engine.checks import CheckSpecError, parse_check
from courses.engine.checks.spec import AllOf, AnyOf, Count, Not, StateLeaf, TraceLeaf, Within

WHERE = "control-plane/01-one-hub/chapter.yaml: steps[create-configmap].check"

CM = {"apiVersion": "v1", "kind": "ConfigMap", "name": "app-config"}
RECEIVED = {"type": "request.received", "verb": "create", "resource": "configmaps"}


def state(**spec: Any) -> dict[str, Any]:
    return {"state": spec}


def trace(*sequence: Any, **spec: Any) -> dict[str, Any]:
    return {"trace": {"sequence": list(sequence), **spec}}


#: (check, the place inside it, words of the problem)
BAD: list[tuple[Any, str, str]] = [
    ("state", "", "a check is a map"),
    ({"state": {"get": CM}, "trace": {"sequence": [RECEIVED]}}, "", "exactly one of"),
    ({"id": "x"}, "", "found none"),
    ({**trace(RECEIVED), "bogus": 1}, "bogus", "unknown key 'bogus'"),
    ({"id": "Bad_Id", **trace(RECEIVED)}, "id", "lowercase letters"),
    (
        {"all": [{"id": "a", **trace(RECEIVED)}, {"id": "a", **trace(RECEIVED)}]},
        "all[1].id",
        "duplicate id 'a'",
    ),
    ({"all": []}, "all", "non-empty list"),
    ({"any": {"state": {}}}, "any", "non-empty list"),
    ({"not": [trace(RECEIVED)]}, "not", "a check is a map"),
    (state(), "state", "exactly one of get"),
    (state(get=CM, list=CM), "state", "exactly one of get"),
    (state(get={"apiVersion": "v1", "kind": "ConfigMap"}), "state.get", "missing name"),
    (state(get={"kind": "ConfigMap", "name": "x"}), "state.get", "missing apiVersion"),
    (state(get={**CM, "kind": "Configmap"}), "state.get.kind", "serves no kind 'Configmap'"),
    (state(get={**CM, "kind": "Deployment"}), "state.get.kind", "it serves: Namespace"),
    (
        state(get={"apiVersion": "v1", "kind": "Node", "name": "n", "namespace": "x"}),
        "state.get.namespace",
        "cluster-scoped",
    ),
    (state(get=CM, count={"at_least": 1}), "state.count", "count is for a list"),
    (state(list={**CM}), "state.list.name", "a list has no name"),
    (state(get={**CM, "labelSelector": "a=b"}), "state.get.labelSelector", "is for a list"),
    (state(get={**CM, "allNamespaces": True}), "state.get.allNamespaces", "is for a list"),
    (
        state(list={"apiVersion": "v1", "kind": "Pod", "namespace": "a", "allNamespaces": True}),
        "state.list.allNamespaces",
        "not both",
    ),
    (
        state(list={"apiVersion": "v1", "kind": "Pod", "labelSelector": "app in (web"}),
        "state.list.labelSelector",
        "",
    ),
    (
        state(list={"apiVersion": "v1", "kind": "ConfigMap", "fieldSelector": "spec.nodeName=x"}),
        "state.list.fieldSelector",
        "not a known field selector",
    ),
    (state(get={**CM, "resource": "secrets"}), "state.get.resource", "served as 'configmaps'"),
    (state(get={**CM, "extra": 1}), "state.get.extra", "unknown key"),
    (state(get=CM, conditions=[{"equals": 1}]), "state.conditions[0]", "missing path"),
    (state(get=CM, conditions=[{"path": "data.a"}]), "state.conditions[0]", "needs one of"),
    (
        state(get=CM, conditions=[{"path": "data..a", "exists": True}]),
        "state.conditions[0].path",
        "empty name",
    ),
    (
        state(get=CM, conditions=[{"path": "data.a", "matches": "(open", "like": "x"}]),
        "state.conditions[0].matches",
        "regular",
    ),
    (
        state(get=CM, conditions=[{"path": "data.a", "matches": "a+"}]),
        "state.conditions[0]",
        "matches needs like",
    ),
    (
        state(get=CM, conditions=[{"path": "data.a", "matches": "a+", "like": "b"}]),
        "state.conditions[0].like",
        "'b' does not match 'a+'",
    ),
    (
        state(get=CM, conditions=[{"path": "data.a", "equals": "a", "like": "a"}]),
        "state.conditions[0].like",
        "add matches",
    ),
    (
        state(get=CM, conditions=[{"path": "data.a", "exists": "yes"}]),
        "state.conditions[0].exists",
        "true or false",
    ),
    (
        state(get=CM, conditions=[{"path": "data.a", "at_least": "3"}]),
        "state.conditions[0].at_least",
        "a number",
    ),
    (
        state(get=CM, conditions=[{"path": "data.a", "at_most": True}]),
        "state.conditions[0].at_most",
        "a number",
    ),
    (state(get=CM, conditions=[{"path": "data.a", "is": 1}]), "state.conditions[0].is", "unknown key"),
    (state(get=CM, conditions={"path": "x"}), "state.conditions", "a list of conditions"),
    (
        state(list={"apiVersion": "v1", "kind": "Pod"}, count={"at_least": -1}),
        "state.count.at_least",
        "at least 0",
    ),
    (state(list={"apiVersion": "v1", "kind": "Pod"}, count={}), "state.count", "needs at_least"),
    (
        state(list={"apiVersion": "v1", "kind": "Pod"}, count={"at_least": 3, "at_most": 1}),
        "state.count",
        "more than at_most",
    ),
    ({"trace": {}}, "trace", "missing sequence"),
    (trace(), "trace.sequence", "non-empty list"),
    (trace("store.txn"), "trace.sequence[0]", "a map with a type"),
    (trace({"verb": "create"}), "trace.sequence[0]", "missing type"),
    (trace({"type": "request.recieved"}), "trace.sequence[0].type", "unknown event type"),
    (trace({"type": "store.txn", "verb": "create"}), "trace.sequence[0].verb", "no field 'verb'"),
    (trace({"type": "store.txn", "seq": 3}), "trace.sequence[0].seq", "no field 'seq'"),
    (trace({"type": "request.completed", "code": "201"}), "trace.sequence[0].code", "integer"),
    (trace({"type": "rbac.decision", "allowed": "yes"}), "trace.sequence[0].allowed", "boolean"),
    (trace({"type": "store.txn", "op": "create"}), "trace.sequence[0].op", "one of txn, get, range"),
    (trace({"type": "request.received", "verb": {"a": 1}}), "trace.sequence[0].verb", "a map cannot match"),
    (trace({"type": "request.completed", "reason": 409}), "trace.sequence[0].reason", "is string, got"),
    (trace({"type": "request.received", "query": "dryRun=All"}), "trace.sequence[0].query", "is object, got"),
    (
        trace({"type": "request.stage", "query": {"dryRun": "All"}}),
        "trace.sequence[0].query",
        "no field 'query'",
    ),
    (
        trace({"type": "request.received", "verb": ["create"]}),
        "trace.sequence[0].verb",
        "a list cannot match",
    ),
    (trace({**RECEIVED, "same_request": "req"}), "trace.sequence[0].same_request", "none named so far"),
    (
        trace({**RECEIVED, "same_request": "later"}, {**RECEIVED, "as": "later"}),
        "trace.sequence[0].same_request",
        "no earlier event",
    ),
    (trace({**RECEIVED, "as": "a"}, {**RECEIVED, "as": "a"}), "trace.sequence[1].as", "already used"),
    (trace({**RECEIVED, "as": "1x"}), "trace.sequence[0].as", "expected a name"),
    (trace({"type": "component.state", "as": "c"}), "trace.sequence[0].as", "name no request"),
    (
        trace(RECEIVED, not_before=[{**RECEIVED, "as": "x"}]),
        "trace.not_before[0].as",
        "for the events of a sequence",
    ),
    (trace(RECEIVED, not_before={"type": "store.txn"}), "trace.not_before", "a list of events"),
    (trace(RECEIVED, within={}), "trace.within", "events and/or seconds"),
    (trace(RECEIVED, within={"events": 0}), "trace.within.events", "at least 1"),
    (trace(RECEIVED, within={"seconds": -1}), "trace.within.seconds", "positive"),
    (trace(RECEIVED, within={"minutes": 1}), "trace.within.minutes", "unknown key"),
    (trace(RECEIVED, since=""), "trace.since", "non-empty string"),
    (trace(RECEIVED, since="nope"), "trace.since", "no leaf has the id 'nope'"),
    (
        {"all": [{"id": "s", **state(get=CM)}, trace(RECEIVED, since="s")]},
        "all[1].trace.since",
        "'s' is not a trace leaf",
    ),
    (
        {"all": [trace(RECEIVED, since="later"), {"id": "later", **trace(RECEIVED)}]},
        "all[0].trace.since",
        "written after this leaf",
    ),
    ({"id": "me", **trace(RECEIVED, since="me")}, "trace.since", "its own events"),
    ({"id": "top", "all": [trace(RECEIVED, since="top")]}, "all[0].trace.since", "'top' is not a trace leaf"),
    # times: how many events one step of a sequence waits for
    (trace({**RECEIVED, "times": {"at_least": 0}}), "trace.sequence[0].times.at_least", "at least 1"),
    (trace({**RECEIVED, "times": {"at_least": True}}), "trace.sequence[0].times.at_least", "at least 1"),
    (trace({**RECEIVED, "times": {"at_least": 2.5}}), "trace.sequence[0].times.at_least", "whole number"),
    (trace({**RECEIVED, "times": {}}), "trace.sequence[0].times", "needs at_least"),
    (trace({**RECEIVED, "times": 30}), "trace.sequence[0].times", "expected a map"),
    (trace({**RECEIVED, "times": {"at_most": 3}}), "trace.sequence[0].times.at_most", "the leaf under not:"),
    (
        trace({**RECEIVED, "times": {"at_least": 3, "at_most": 1}}),
        "trace.sequence[0].times.at_most",
        "at least so many",
    ),
    (trace({**RECEIVED, "times": {"equals": 3}}), "trace.sequence[0].times.equals", "the leaf under not:"),
    (trace({**RECEIVED, "times": {"at_lest": 3}}), "trace.sequence[0].times.at_lest", "unknown key"),
    (
        trace({**RECEIVED, "as": "r", "times": {"at_least": 3}}),
        "trace.sequence[0].as",
        "waits for 3 of them",
    ),
    (
        trace(RECEIVED, not_before=[{**RECEIVED, "times": {"at_least": 2}}]),
        "trace.not_before[0].times",
        "for the events of a sequence",
    ),
    # A state leaf's count written on a step, even where the event has a count field of its own.
    (trace({**RECEIVED, "count": {"at_least": 3}}), "trace.sequence[0].count", "write times: {at_least: N}"),
    (trace({"type": "store.txn", "count": {"at_least": 3}}), "trace.sequence[0].count", "write times"),
]


@pytest.mark.parametrize(("data", "at", "problem"), BAD, ids=[f"{b[1] or 'top'}:{b[2]}" for b in BAD])
def test_refused(data: Any, at: str, problem: str) -> None:
    with pytest.raises(CheckSpecError) as raised:
        parse_check(data, where=WHERE)
    error = raised.value
    assert error.where == WHERE
    assert error.at == at
    assert problem in error.problem
    assert str(error).startswith(WHERE + ": ")


DOC_EXAMPLE: dict[str, Any] = {
    "all": [
        {
            "id": "created",
            "trace": {
                "since": "step",
                "sequence": [
                    {
                        "type": "request.received",
                        "verb": "create",
                        "resource": "configmaps",
                        "user": "$student",
                        "as": "req",
                    },
                    {
                        "type": "store.txn",
                        "op": "txn",
                        "writes": {"key": "/registry/configmaps/*/app-config"},
                        "same_request": "req",
                    },
                ],
                "not_before": [],
                "within": {"events": 2000, "seconds": 30},
            },
        },
        {
            "id": "stored",
            "state": {
                "get": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "namespace": "default",
                    "name": "app-config",
                },
                "conditions": [
                    {"path": "data.color", "equals": "blue"},
                    {"path": "metadata.uid", "exists": True},
                ],
            },
        },
        {
            "id": "three-pods",
            "state": {
                "list": {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "namespace": "default",
                    "labelSelector": "app=web",
                },
                "count": {"at_least": 3},
                "conditions": [{"path": "status.phase", "equals": "Running"}],
            },
        },
    ]
}


def test_the_documented_example() -> None:
    check = parse_check(DOC_EXAMPLE, where=WHERE)
    assert isinstance(check.root, AllOf)
    created, stored, pods = check.leaves()
    assert isinstance(created, TraceLeaf) and isinstance(stored, StateLeaf) and isinstance(pods, StateLeaf)
    assert created.since is None  # since: step
    assert created.within == Within(2000, 30.0)
    assert [m.type for m in created.sequence] == ["request.received", "store.txn"]
    assert created.sequence[0].as_name == "req" and created.sequence[1].same_request == "req"
    assert created.sequence[1].field("writes") == {"key": "/registry/configmaps/*/app-config"}
    assert stored.count is None
    assert stored.target.storage_prefix == "/registry/configmaps"
    assert [c.op for c in stored.conditions] == ["equals", "exists"]
    assert pods.count == Count(at_least=3)
    assert pods.target.label_selector == "app=web"
    assert check.ids() == {"created", "stored", "three-pods"}
    assert check.where == WHERE


def test_times_on_a_step() -> None:
    check = parse_check(
        trace(
            {"type": "request.received", "user": "$student", "as": "watch"},
            {"type": "watch.event", "resource": "pods", "same_request": "watch", "times": {"at_least": 30}},
            {"type": "reconcile", "controller": "replicaset", "times": {"at_least": 1}},
        ),
        where=WHERE,
    )
    (leaf,) = check.leaves()
    assert isinstance(leaf, TraceLeaf)
    assert [m.at_least for m in leaf.sequence] == [1, 30, 1]
    counted = leaf.sequence[1]
    assert counted.same_request == "watch"
    assert counted.field("times") is None  # not a field of the event: nothing to match, nothing to mention
    assert "times" not in check.mentions() and "30" not in check.mentions()
    # store.txn's own count field (keys read) is still a field, matched as a number.
    (txn,) = parse_check(trace({"type": "store.txn", "count": 3}), where=WHERE).leaves()
    assert isinstance(txn, TraceLeaf) and txn.sequence[0].field("count") == 3


def test_the_keys_of_a_step_are_no_event_fields() -> None:
    """``as``, ``same_request`` and ``times`` say how a step is matched: were an event type to grow a
    field of one of these names, a check could not name that field (a step's key would shadow it)."""
    for etype in EVENT_TYPES.values():
        assert not {"as", "same_request", "times"} & set(etype.fields()), etype.name


def test_mentions() -> None:
    check = parse_check(DOC_EXAMPLE, where=WHERE)
    assert check.mentions() == {
        "request.received",
        "create",
        "configmaps",
        "store.txn",
        "app-config",
        "ConfigMap",
        "color",
        "uid",
        "Pod",
        "phase",
    }


def test_a_status_reason_is_mentioned_and_a_query_is_not() -> None:
    check = parse_check(
        trace(
            {"type": "request.received", "verb": "update", "query": {"dryRun": "All"}, "as": "req"},
            {"type": "request.completed", "code": 409, "reason": "Conflict", "same_request": "req"},
        ),
        where=WHERE,
    )
    assert check.mentions() == {"request.received", "update", "request.completed", "Conflict"}


def test_mentions_leave_out_globs_and_the_student() -> None:
    check = parse_check(
        {
            "all": [
                trace(
                    {
                        "type": "request.received",
                        "resource": "pod*",
                        "user": "$student",
                        "name": "web-$student",
                    },
                    {"type": "scheduler.decision", "pod": "default/web", "chosen": "node-1"},
                    {"type": "reconcile", "controller": "replicaset", "key": "default/web-*"},
                    {"type": "request.stage", "stage": "authorization", "outcome": "pass"},
                ),
                state(
                    get={"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                    conditions=[{"path": "status.conditions[type=Available].status", "equals": "True"}],
                ),
            ]
        },
        where=WHERE,
    )
    assert check.mentions() == {
        "request.received",
        "scheduler.decision",
        "web",
        "reconcile",
        "replicaset",
        "request.stage",
        "authorization",
        "Deployment",
        "status",
        "Available",
    }


def test_defaults_and_scopes() -> None:
    check = parse_check(
        {
            "all": [
                state(get={"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}),
                state(list={"apiVersion": "v1", "kind": "Pod", "allNamespaces": True}),
                state(list={"apiVersion": "v1", "kind": "Node"}),
                state(get={"apiVersion": "v1", "kind": "Service", "namespace": "shop", "name": "front"}),
            ]
        },
        where=WHERE,
    )
    deployment, pods, nodes, service = check.leaves()
    assert isinstance(deployment, StateLeaf) and deployment.target.namespace == "default"  # as kubectl
    assert isinstance(pods, StateLeaf) and pods.target.namespace is None and pods.count == Count(at_least=1)
    assert isinstance(nodes, StateLeaf) and nodes.target.namespace is None and not nodes.target.namespaced
    assert nodes.target.storage_prefix == "/registry/minions"
    assert isinstance(service, StateLeaf) and service.target.storage_prefix == "/registry/services/specs"
    assert deployment.target.group == "apps" and deployment.target.resource == "deployments"


def test_a_kind_the_lab_does_not_serve_names_its_resource() -> None:
    check = parse_check(
        state(get={"apiVersion": "example.com/v1", "kind": "Widget", "resource": "widgets", "name": "w"}),
        where=WHERE,
    )
    (leaf,) = check.leaves()
    assert isinstance(leaf, StateLeaf)
    assert leaf.target.storage_prefix == "/registry/example.com/widgets"
    assert leaf.target.namespace == "default"


def test_combinators_and_since() -> None:
    check = parse_check(
        {
            "any": [
                {"id": "first", **trace(RECEIVED)},
                {"not": {"id": "then", **trace({"type": "store.txn"}, since="first")}},
            ]
        },
        where=WHERE,
    )
    assert isinstance(check.root, AnyOf)
    negated = check.root.children[1]
    assert isinstance(negated, Not) and isinstance(negated.child, TraceLeaf)
    assert negated.child.since == "first"


def test_values_with_the_student_are_checked_when_bound() -> None:
    # A selector naming the student cannot be checked before it is bound; it is not refused.
    parse_check(
        state(list={"apiVersion": "v1", "kind": "Pod", "labelSelector": "owner=$student"}),
        where=WHERE,
    )
    parse_check(trace({"type": "store.txn", "op": "$student"}), where=WHERE)


@pytest.mark.parametrize(
    "matcher",
    [
        {"type": "store.txn", "op": "t*"},  # a glob that fits a choice
        {"type": "scheduler.decision", "chosen": None},  # null where the field may be null
        {"type": "scheduler.decision", "feasible": "node-1"},  # an item of a list field
        {"type": "scheduler.decision", "feasible": ["node-1", "node-2"]},  # a whole list
        {"type": "rbac.decision", "rule": {"verbs": ["create"]}},  # a map field
        {"type": "request.completed", "duration": 0.5},
        {"type": "watch.event", "watch": 3},
        {"type": "request.completed", "code": 409, "reason": "Conflict"},  # a Status reason
        {"type": "request.received", "query": {"dryRun": "All", "resourceVersion": "*"}},  # the query
    ],
)
def test_accepted_values(matcher: dict[str, Any]) -> None:
    parse_check(trace(matcher), where=WHERE)
