"""Trace patterns: sequences among noise, same_request, not_before, within, times, since another leaf."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.utils import translation

from courses.engine.checks import Status, parse_check
from courses.engine.checks.describe import times_phrase
from courses.engine.checks.spec import TraceLeaf
from courses.engine.checks.tracepattern import MAX_PARTIAL, SequenceMatcher, compile_value, request_ids

ALICE = "student:alice"


@pytest.fixture(autouse=True)
def _english() -> Iterator[None]:
    with translation.override("en"):
        yield


class Trace:
    """Events with seqs 1, 2, 3 ... and a clock that moves 1 s per event unless told otherwise."""

    def __init__(self) -> None:
        self.seq = 0
        self.ts = 1000.0

    def __call__(self, type_: str, *, dt: float = 1.0, **fields: Any) -> dict[str, Any]:
        self.seq += 1
        self.ts += dt
        return {"seq": self.seq, "ts": self.ts, "type": type_, **fields}


def create(t: Trace, rid: str, *, user: str = ALICE, resource: str = "configmaps") -> dict[str, Any]:
    return t("request.received", id=rid, user=user, verb="create", resource=resource)


def txn(t: Trace, rid: str | None, key: str = "/registry/configmaps/default/app-config") -> dict[str, Any]:
    return t("store.txn", id=rid, op="txn", revision=t.seq + 10, writes=[{"type": "PUT", "key": key}])


def noise(t: Trace, n: int) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        out.append(
            t("watch.event", watch="w1", event="MODIFIED", revision=i, resource="leases", to="kubelet:node-1")
        )
        out.append(txn(t, f"lease-{i}", key="/registry/leases/kube-node-lease/node-1"))
        out.append(create(t, f"other-{i}", user="system:node:node-1", resource="events"))
    return out


def matcher(sequence: list[dict[str, Any]], *, after: int = 0, **spec: Any) -> SequenceMatcher:
    (leaf,) = parse_check({"trace": {"sequence": sequence, **spec}}, where="test").leaves()
    assert isinstance(leaf, TraceLeaf)
    return SequenceMatcher(leaf, ALICE, after=after)


def feed(m: SequenceMatcher, events: list[dict[str, Any]]) -> int | None:
    """Offer every event; the seq of the one that completed the sequence, if any."""
    for event in events:
        if m.offer(event):
            return int(event["seq"])
    return None


CREATE = {
    "type": "request.received",
    "verb": "create",
    "resource": "configmaps",
    "user": "$student",
    "as": "req",
}
WRITE = {"type": "store.txn", "writes": {"key": "/registry/configmaps/*/app-config"}, "same_request": "req"}


def test_a_sequence_among_noise() -> None:
    t = Trace()
    m = matcher([CREATE, WRITE])
    events = [*noise(t, 5), create(t, "r1"), *noise(t, 5), txn(t, "r1"), *noise(t, 2)]
    done = feed(m, events)
    assert done == events[15 + 1 + 15]["seq"]
    assert m.completed is not None and m.completed.first_seq == 16


def test_order_matters() -> None:
    t = Trace()
    m = matcher([CREATE, WRITE])
    assert feed(m, [txn(t, "r1"), create(t, "r1")]) is None
    assert m.furthest() == (1, 0)  # the create started a match that waits for its write


def test_same_request_finds_its_own_among_many() -> None:
    t = Trace()
    m = matcher([CREATE, WRITE])
    events = [create(t, f"r{i}") for i in range(50)]
    events += [txn(t, f"x{i}") for i in range(50)]  # writes of other requests
    assert feed(m, events) is None
    assert len(m.waiting[1]) == 50
    assert feed(m, [txn(t, "r17")]) == 101


def test_same_request_through_the_requests_a_decision_made() -> None:
    t = Trace()
    m = matcher(
        [
            {"type": "scheduler.decision", "pod": "default/web", "chosen": "node-*", "as": "decision"},
            {"type": "request.completed", "subresource": "binding", "code": 201, "same_request": "decision"},
        ]
    )
    events = [
        t(
            "scheduler.decision",
            pod="default/web",
            nodes={},
            feasible=["node-2"],
            chosen="node-2",
            requests=["b1"],
        ),
        t("request.completed", id="b0", subresource="binding", code=201, duration=0.1),
        t("request.completed", id="b1", subresource="binding", code=409, duration=0.1),
        t("request.completed", id="b1", subresource="binding", code=201, duration=0.1),
    ]
    assert feed(m, events) == 4


def test_greedy_advance_still_finds_a_later_binding() -> None:
    # Step 1 names which request step 2 must belong to, so every candidate for step 1 is kept.
    t = Trace()
    m = matcher(
        [
            {"type": "request.received", "verb": "create", "resource": "pods"},
            {"type": "request.received", "verb": "create", "resource": "bindings", "as": "b"},
            {"type": "request.completed", "code": 201, "same_request": "b"},
        ]
    )
    events = [
        t("request.received", id="p", verb="create", resource="pods"),
        t("request.received", id="b1", verb="create", resource="bindings"),
        t("request.received", id="b2", verb="create", resource="bindings"),
        t("request.completed", id="b1", code=409, duration=0.1),
        t("request.completed", id="b2", code=201, duration=0.1),
    ]
    assert feed(m, events) == 5


def test_an_event_fills_one_step_at_a_time() -> None:
    t = Trace()
    m = matcher([{"type": "store.txn"}, {"type": "store.txn"}])
    assert feed(m, [txn(t, "a")]) is None
    assert feed(m, [txn(t, "b")]) == 2


def test_a_one_step_sequence() -> None:
    t = Trace()
    m = matcher([{"type": "store.txn", "writes": {"type": "DELETE"}}])
    assert feed(m, [txn(t, "a")]) is None
    event = t(
        "store.txn", op="txn", revision=3, writes=[{"type": "DELETE", "key": "/registry/pods/default/web"}]
    )
    assert feed(m, [event]) == 2


def test_events_before_the_start_do_not_count() -> None:
    t = Trace()
    m = matcher([CREATE, WRITE], after=1)
    assert feed(m, [create(t, "r1"), txn(t, "r1")]) is None
    assert feed(m, [create(t, "r2"), txn(t, "r2")]) == 4


def test_not_before_stops_new_starts_but_not_old_ones() -> None:
    binding = {"type": "request.received", "resource": "bindings"}
    pod = {"type": "request.received", "verb": "create", "resource": "pods"}
    then = {"type": "store.txn"}
    t = Trace()
    m = matcher([pod, then], not_before=[binding])
    assert (
        feed(
            m,
            [
                t("request.received", id="b", resource="bindings"),
                t("request.received", id="p", verb="create", resource="pods"),
                txn(t, "p"),
            ],
        )
        is None
    )
    assert m.blocked_by == 0 and m.furthest() == (0, 0)
    t = Trace()
    m = matcher([pod, then], not_before=[binding])
    events = [
        t("request.received", id="p", verb="create", resource="pods"),
        t("request.received", id="b", resource="bindings"),
        txn(t, "p"),
    ]
    assert feed(m, events) == 3


def test_within_events_drops_a_stale_start_and_takes_a_newer_one() -> None:
    t = Trace()
    m = matcher([CREATE, WRITE], within={"events": 3})
    events = [create(t, "r1"), *noise(t, 2), txn(t, "r1")]  # 7 events apart: too late
    assert feed(m, events) is None
    assert m.expired_at == (1, 0)
    events = [create(t, "r2"), t("reconcile", controller="x", key="k", result="success"), txn(t, "r2")]
    assert feed(m, events) == events[-1]["seq"]
    assert m.completed is not None and m.completed.first_seq == events[0]["seq"]


def test_within_seconds_uses_the_cluster_clock() -> None:
    t = Trace()
    m = matcher([CREATE, WRITE], within={"seconds": 5})
    assert (
        feed(
            m,
            [
                create(t, "r1"),
                txn(t, "r1", key="/registry/configmaps/default/app-config") | {"ts": t.ts + 10},
            ],
        )
        is None
    )
    t2 = Trace()
    m = matcher([CREATE, WRITE], within={"seconds": 5})
    assert feed(m, [create(t2, "r1"), txn(t2, "r1")]) == 2


def test_a_restart_keeps_the_later_start() -> None:
    # Two creates of the same name wait at the same step with the same future: the later one stays.
    t = Trace()
    m = matcher([{"type": "request.received", "verb": "create"}, {"type": "store.txn"}], within={"events": 2})
    events = [t("request.received", id="a", verb="create"), t("request.received", id="b", verb="create")]
    feed(m, events)
    (waiting,) = m.waiting[1].values()
    assert waiting.first_seq == 2
    assert feed(m, [t("reconcile", controller="x", key="k", result="success"), txn(t, None)]) == 4


def test_partial_matches_are_capped() -> None:
    t = Trace()
    m = matcher([CREATE, WRITE])
    feed(m, [create(t, f"r{i}") for i in range(MAX_PARTIAL + 10)])
    assert len(m.waiting[1]) == MAX_PARTIAL
    assert feed(m, [txn(t, "r0")]) is None  # the oldest went first
    assert feed(m, [txn(t, f"r{MAX_PARTIAL + 9}")]) is not None


@pytest.mark.parametrize(
    ("expected", "value", "result"),
    [
        ("create", "create", True),
        ("create", "update", False),
        ("create", ["get", "create"], True),
        ("/registry/*/app-config", "/registry/configmaps/default/app-config", True),
        ("/registry/*/app-config", "/registry/configmaps/default/app-config-2", False),
        ("node-*", ["x", "node-3"], True),
        ("node-*", 3, False),
        ("user:$student", "user:student:alice", True),
        ("$student*", "student:alice-2", True),
        (201, 201, True),
        (201, 201.0, True),
        (201, "201", False),
        (1, True, False),
        (True, True, True),
        (True, 1, False),
        (None, None, True),
        (None, "x", False),
        ({"key": "/registry/pods/*"}, [{"type": "PUT", "key": "/registry/pods/default/web"}], True),
        (
            {"key": "/registry/pods/*", "type": "DELETE"},
            [{"type": "PUT", "key": "/registry/pods/default/web"}],
            False,
        ),
        (
            {"NodeResourcesFit": {"code": "Success"}},
            {"NodeResourcesFit": {"code": "Success", "reasons": []}},
            True,
        ),
        (["node-1"], ["node-1"], True),
        (["node-1"], ["node-1", "node-2"], False),
        # request.received's query: a parameter's value, or one of a repeated parameter's values
        ({"dryRun": "All"}, {"dryRun": "All", "fieldManager": "kubectl"}, True),
        ({"dryRun": "All"}, {"dryRun": ["All", "All"]}, True),
        ({"resourceVersion": "*"}, {"watch": "1"}, False),
        ({"watch": "1", "resourceVersion": "0"}, {"watch": "1", "resourceVersion": "0"}, True),
    ],
)
def test_field_values(expected: Any, value: Any, result: bool) -> None:
    assert compile_value(expected, ALICE)(value) is result


def test_a_conflict_is_told_from_an_already_exists_by_its_reason() -> None:
    t = Trace()
    m = matcher(
        [
            {"type": "request.received", "user": "$student", "as": "req"},
            {"type": "request.completed", "code": 409, "reason": "Conflict", "same_request": "req"},
        ]
    )
    exists = [
        t("request.received", id="a", user=ALICE, verb="create", resource="configmaps"),
        t("request.completed", id="a", user=ALICE, code=409, reason="AlreadyExists"),
    ]
    assert feed(m, exists) is None
    conflict = [
        t("request.received", id="b", user=ALICE, verb="update", resource="configmaps"),
        t("request.completed", id="b", user=ALICE, code=409, reason="Conflict"),
    ]
    assert feed(m, conflict) == conflict[-1]["seq"]


def test_a_student_name_is_never_a_glob() -> None:
    assert compile_value("$student", "student:*")("student:*")
    assert not compile_value("$student", "student:*")("student:bob")


def test_request_ids() -> None:
    assert request_ids({"id": "a", "requests": ["b", "", 3]}) == {"a", "b"}
    assert request_ids({"id": None}) == frozenset()


# -- times: several events for one step ---------------------------------------------------------------

POD_EVENT = {"type": "watch.event", "to": "controller-manager", "resource": "pods", "name": "catalog-*"}


def pod_event(
    t: Trace, name: str = "catalog-1", *, to: str = "controller-manager", dt: float = 1.0
) -> dict[str, Any]:
    fields = {"watch": "w", "event": "MODIFIED", "revision": t.seq, "resource": "pods", "name": name}
    return t("watch.event", dt=dt, to=to, **fields)


def sync(t: Trace, name: str = "catalog-5d8f", *, dt: float = 1.0) -> dict[str, Any]:
    return t("reconcile", dt=dt, controller="replicaset", key=f"default/{name}", name=name, result="success")


def scale(t: Trace) -> dict[str, Any]:
    return t("request.received", id="s", user=ALICE, verb="patch", resource="deployments", name="catalog")


SCALE = {"type": "request.received", "user": "$student", "resource": "deployments", "name": "catalog"}


def test_times_completes_on_the_nth_fitting_event() -> None:
    t = Trace()
    m = matcher([{**POD_EVENT, "times": {"at_least": 3}}])
    events = [pod_event(t), *noise(t, 2), pod_event(t, to="scheduler"), pod_event(t, "web-1"), pod_event(t)]
    assert feed(m, events) is None
    assert m.furthest() == (0, 2)  # two of the three seen; the others were for someone else
    last = pod_event(t)
    assert feed(m, [last]) == last["seq"]
    assert m.completed is not None and m.completed.first_seq == 1


def test_times_counts_only_after_the_step_before() -> None:
    t = Trace()
    m = matcher([SCALE, {**POD_EVENT, "times": {"at_least": 2}}])
    assert feed(m, [pod_event(t), pod_event(t), scale(t), pod_event(t)]) is None
    assert m.furthest() == (1, 1)
    assert feed(m, [pod_event(t)]) == 5


def test_one_event_counts_once_even_for_two_steps_of_its_type() -> None:
    t = Trace()
    m = matcher([{**POD_EVENT, "times": {"at_least": 2}}, POD_EVENT])  # three pod events in all
    assert feed(m, [pod_event(t), pod_event(t)]) is None
    assert m.furthest() == (1, 0)
    assert feed(m, [pod_event(t)]) == 3


def test_the_step_after_a_counted_one_waits_for_the_count() -> None:
    t = Trace()
    m = matcher([{**POD_EVENT, "times": {"at_least": 3}}, {"type": "reconcile", "controller": "replicaset"}])
    assert feed(m, [pod_event(t), sync(t), pod_event(t), sync(t), pod_event(t)]) is None
    assert m.furthest() == (1, 0)
    assert feed(m, [sync(t)]) == 6


def test_times_with_same_request_counts_that_request_only() -> None:
    t = Trace()
    m = matcher(
        [
            {"type": "watch.opened", "to": "user:$student", "as": "watch"},
            {"type": "watch.event", "to": "user:$student", "same_request": "watch", "times": {"at_least": 2}},
        ]
    )

    def opened(rid: str) -> dict[str, Any]:
        return t("watch.opened", id=rid, watch=rid, to=f"user:{ALICE}", resource="pods")

    def event(rid: str) -> dict[str, Any]:
        return t("watch.event", id=rid, watch=rid, event="ADDED", revision=t.seq, to=f"user:{ALICE}")

    assert feed(m, [opened("a"), opened("b"), event("a"), event("b")]) is None
    assert sorted(tally.seen() for tally in m.tallies[1].values()) == [1, 1]  # one per watch
    assert feed(m, [event("b")]) == 5


def test_without_a_window_one_partial_match_counts_for_every_start() -> None:
    # Every fitting event could start a new count; the one that counted most is kept, alone.
    t = Trace()
    m = matcher([{**POD_EVENT, "times": {"at_least": 5000}}])
    assert feed(m, [pod_event(t) for _ in range(1000)]) is None
    (tally,) = m.tallies[0].values()
    assert tally.seen() == 1000 and [partial.first_seq for _, partial in tally.members] == [1]


def test_with_a_window_the_starts_share_one_count() -> None:
    # Each start may be the one that fits the window, so each is kept; one event still costs one
    # addition for all of them, and the ones that ran out leave from the front.
    t = Trace()
    m = matcher([{**POD_EVENT, "times": {"at_least": 5000}}], within={"events": 10})
    assert feed(m, [pod_event(t) for _ in range(100)]) is None
    (tally,) = m.tallies[0].values()
    # Seqs 90 to 100 fit a window of 10 events: the start at 90 has seen 11, the one at 100 one.
    assert tally.seen() == 11
    assert [tally.count - mark for mark, _ in tally.members] == list(range(11, 0, -1))
    assert [partial.first_seq for _, partial in tally.members] == list(range(90, 101))
    assert m.expired_at == (0, 11)  # the start at 89 saw 89 to 99


def test_with_a_window_a_later_start_finishes_where_an_earlier_ran_out() -> None:
    t = Trace()
    m = matcher([{**POD_EVENT, "times": {"at_least": 3}}], within={"seconds": 5})
    assert feed(m, [pod_event(t), pod_event(t, dt=10)]) is None
    assert m.furthest() == (0, 1)  # the second started anew: the first ran out of its window
    assert m.expired_at == (0, 1)
    assert feed(m, [pod_event(t), pod_event(t)]) == 4
    assert m.completed is not None and m.completed.first_seq == 2


def test_a_count_started_before_a_not_before_event_may_finish() -> None:
    t = Trace()
    m = matcher([{**POD_EVENT, "times": {"at_least": 2}}], not_before=[{"type": "reconcile"}])
    assert feed(m, [pod_event(t), sync(t)]) is None
    assert m.blocked_by == 0
    assert feed(m, [pod_event(t)]) == 3
    m = matcher([{**POD_EVENT, "times": {"at_least": 2}}], not_before=[{"type": "reconcile"}])
    t = Trace()
    assert feed(m, [sync(t), pod_event(t), pod_event(t)]) is None  # no count starts after it


# -- through the evaluator: since, and what a failing trace leaf says ----------------------------------


def evaluate(data: dict[str, Any], events: list[dict[str, Any]], *, since_seq: int = 0) -> Any:
    evaluator = parse_check(data, where="test").evaluator(student=ALICE, since_seq=since_seq, stability=0)
    for event in events:
        evaluator.offer(event)
    return evaluator


def test_since_a_named_leaf_counts_from_the_event_after_it() -> None:
    data = {
        "all": [
            {"id": "made", "trace": {"sequence": [CREATE, WRITE]}},
            {
                "id": "seen",
                "trace": {"since": "made", "sequence": [{"type": "watch.event", "to": "user:$student"}]},
            },
        ]
    }
    t = Trace()
    watch: dict[str, Any] = {"watch": "w", "event": "ADDED", "revision": 1, "to": f"user:{ALICE}"}
    early = [t("watch.event", **watch), create(t, "r1"), t("watch.event", **watch), txn(t, "r1")]
    evaluator = evaluate(data, early)
    assert evaluator.matched("made") is not None and evaluator.matched("seen") is None
    assert evaluator.verdict(0.0).failing_ids == {"seen"}
    evaluator.offer(t("watch.event", **watch))
    assert evaluator.verdict(0.0).status is Status.PASSED
    completed = evaluator.matched("seen")
    assert completed is not None and completed.first_seq == 5
    with pytest.raises(KeyError):
        evaluator.matched("nope")


def messages(evaluator: Any) -> list[str]:
    verdict = evaluator.verdict(0.0)
    assert verdict.status is Status.FAILING
    return [failure.render() for failure in verdict.failures]


def test_message_when_nothing_was_seen() -> None:
    evaluator = evaluate({"id": "c", "trace": {"sequence": [CREATE, WRITE]}}, noise(Trace(), 3))
    assert messages(evaluator) == [
        "no create request for configmaps by student:alice was seen since this step began"
    ]


def test_message_when_the_sequence_stopped() -> None:
    t = Trace()
    evaluator = evaluate({"trace": {"sequence": [CREATE, WRITE]}}, [create(t, "r1"), txn(t, "r2")])
    assert messages(evaluator) == [
        "saw the create request for configmaps by student:alice, but no store transaction writing "
        "/registry/configmaps/*/app-config after it"
    ]


def test_message_when_too_late() -> None:
    t = Trace()
    data = {"trace": {"sequence": [CREATE, WRITE], "within": {"seconds": 5}}}
    evaluator = evaluate(data, [create(t, "r1"), txn(t, "r1") | {"ts": t.ts + 60}])
    assert messages(evaluator) == [
        "saw the create request for configmaps by student:alice, but the store transaction writing "
        "/registry/configmaps/*/app-config did not come within 5 seconds of the create request for "
        "configmaps by student:alice"
    ]


def test_message_when_too_early() -> None:
    t = Trace()
    data = {
        "trace": {
            "sequence": [{"type": "request.received", "verb": "create", "resource": "pods", "name": "web"}],
            "not_before": [
                {
                    "type": "request.completed",
                    "resource": "pods",
                    "subresource": "binding",
                    "user": "system:kube-scheduler",
                }
            ],
        }
    }
    events = [
        t(
            "request.completed",
            id="b",
            resource="pods",
            subresource="binding",
            user="system:kube-scheduler",
            code=201,
            duration=0.1,
        ),
        t("request.received", id="p", verb="create", resource="pods", name="web"),
    ]
    assert messages(evaluate(data, events)) == [
        "the answer to the request for pods/binding by system:kube-scheduler came before the create request "
        "for pods named web"
    ]


def test_message_since_a_named_leaf() -> None:
    data = {
        "all": [
            {"id": "made", "trace": {"sequence": [CREATE, WRITE]}},
            {
                "trace": {
                    "since": "made",
                    "sequence": [{"type": "watch.event", "event": "MODIFIED", "kind": "ConfigMap"}],
                }
            },
        ]
    }
    t = Trace()
    assert messages(evaluate(data, [create(t, "r1"), txn(t, "r1")])) == [
        "no MODIFIED watch event for ConfigMap was seen since the store transaction writing "
        "/registry/configmaps/*/app-config"
    ]


@pytest.mark.parametrize(
    ("matcher_spec", "text"),
    [
        ({"type": "request.completed", "verb": "delete", "code": 200}, "200 answer to the delete request"),
        (
            {"type": "request.stage", "stage": "authorization", "outcome": "deny", "user": "$student"},
            "refusal at the authorization stage of the request by student:alice",
        ),
        (
            {"type": "request.stage", "stage": "storage", "outcome": "pass", "namespace": "shop"},
            "passed storage stage of the request in namespace shop",
        ),
        ({"type": "request.stage", "stage": "audit"}, "audit stage of the request"),
        ({"type": "request.stage"}, "pipeline stage of the request"),
        (
            {"type": "rbac.decision", "allowed": False, "verb": "list", "resource": "secrets"},
            "authorization refusing the list request for secrets",
        ),
        ({"type": "rbac.decision", "allowed": True}, "authorization allowing the request"),
        ({"type": "rbac.decision"}, "authorization of the request"),
        (
            {"type": "watch.event", "to": "scheduler", "resource": "pods", "name": "web"},
            "watch event for pods named web to scheduler",
        ),
        (
            {"type": "scheduler.decision", "pod": "default/web", "chosen": None},
            "scheduling decision for pod default/web that found no node",
        ),
        (
            {"type": "scheduler.decision", "name": "web", "chosen": "node-2"},
            "scheduling decision for pod web choosing node-2",
        ),
        ({"type": "scheduler.decision"}, "scheduling decision"),
        (
            {"type": "reconcile", "controller": "replicaset", "key": "default/web-1", "result": "error"},
            "reconcile by the replicaset controller of default/web-1 (result=error)",
        ),
        ({"type": "reconcile"}, "reconcile"),
        (
            {"type": "store.txn", "writes": {"type": "DELETE", "key": "/registry/pods/default/web"}},
            "store transaction deleting /registry/pods/default/web",
        ),
        (
            {"type": "store.txn", "op": "range", "key": "/registry/pods/"},
            "store transaction on /registry/pods/ (op=range)",
        ),
        (
            {"type": "admission.step", "plugin": "NamespaceLifecycle", "outcome": "deny"},
            "admission step (plugin=NamespaceLifecycle, outcome=deny)",
        ),
        ({"type": "fault.applied", "fault": "component-stop"}, "applied fault (fault=component-stop)"),
        ({"type": "request.received", "subresource": "status"}, "request (subresource=status)"),
    ],
)
def test_event_descriptions(matcher_spec: dict[str, Any], text: str) -> None:
    evaluator = evaluate({"trace": {"sequence": [matcher_spec]}}, [])
    (message,) = messages(evaluator)
    assert message == f"no {text} was seen since this step began"


def test_a_match_that_ran_out_of_time_is_told_as_too_late_even_without_its_next_event() -> None:
    t = Trace()
    data = {"trace": {"sequence": [CREATE, WRITE], "within": {"events": 3}}}
    evaluator = evaluate(data, [create(t, "r1"), *noise(t, 1)])
    assert messages(evaluator)[0].startswith(
        "saw the create request for configmaps by student:alice, but no store"
    )
    evaluator.offer(t("reconcile", controller="x", key="k", result="success"))
    assert messages(evaluator)[0].startswith(
        "saw the create request for configmaps by student:alice, but the store transaction writing "
        "/registry/configmaps/*/app-config did not come within 3 events"
    )


# -- what a step with times says ---------------------------------------------------------------------

PODS_TEXT = "watch event for pods named catalog-* to controller-manager"
SCALE_TEXT = "request for deployments named catalog by student:alice"


def test_message_counts_what_was_seen() -> None:
    t = Trace()
    data = {"id": "many", "trace": {"sequence": [{**POD_EVENT, "times": {"at_least": 30}}]}}
    evaluator = evaluate(data, [pod_event(t) for _ in range(12)])
    expected = f"expected the {PODS_TEXT} 30 times since this step began, saw it 12 times"
    assert messages(evaluator) == [expected]
    evaluator = evaluate(data, [pod_event(Trace())])
    assert messages(evaluator) == [f"expected the {PODS_TEXT} 30 times since this step began, saw it once"]
    assert messages(evaluate(data, [])) == [f"no {PODS_TEXT} was seen since this step began"]


def test_message_counts_after_the_step_before() -> None:
    t = Trace()
    data = {"trace": {"sequence": [SCALE, {**POD_EVENT, "times": {"at_least": 3}}]}}
    evaluator = evaluate(data, [pod_event(t), scale(t), pod_event(t), pod_event(t)])
    expected = f"after the {SCALE_TEXT}, expected the {PODS_TEXT} 3 times, saw it 2 times"
    assert messages(evaluator) == [expected]


def test_message_after_a_counted_step() -> None:
    t = Trace()
    data = {"trace": {"sequence": [{**POD_EVENT, "times": {"at_least": 2}}, {"type": "reconcile"}]}}
    evaluator = evaluate(data, [pod_event(t), pod_event(t)])
    assert messages(evaluator) == [f"saw the {PODS_TEXT} 2 times, but no reconcile after it"]


def test_message_when_a_count_ran_out_of_time() -> None:
    t = Trace()
    data = {"trace": {"sequence": [{**POD_EVENT, "times": {"at_least": 3}}], "within": {"seconds": 5}}}
    evaluator = evaluate(data, [pod_event(t), pod_event(t), pod_event(t, dt=10)])
    assert messages(evaluator) == [f"expected the {PODS_TEXT} 3 times within 5 seconds, saw it 2 times"]
    data = {"trace": {"sequence": [SCALE, {**POD_EVENT, "times": {"at_least": 3}}], "within": {"seconds": 5}}}
    t = Trace()
    evaluator = evaluate(data, [scale(t), pod_event(t), pod_event(t, dt=10)])
    assert messages(evaluator) == [
        f"expected the {PODS_TEXT} 3 times within 5 seconds of the {SCALE_TEXT}, saw it once"
    ]


def test_message_when_a_counted_step_ran_out_of_time_before_the_next() -> None:
    t = Trace()
    data = {
        "trace": {
            "sequence": [{**POD_EVENT, "times": {"at_least": 2}}, {"type": "reconcile"}],
            "within": {"seconds": 5},
        }
    }
    evaluator = evaluate(data, [pod_event(t), pod_event(t), sync(t, dt=10)])
    assert messages(evaluator) == [
        f"saw the {PODS_TEXT} 2 times, but the reconcile did not come within 5 seconds of the {PODS_TEXT}"
    ]


def test_not_around_a_count_says_how_many_it_did_not_expect() -> None:
    t = Trace()
    rs_sync = {"type": "reconcile", "controller": "replicaset", "name": "catalog-*", "times": {"at_least": 3}}
    data = {"id": "fewer", "not": {"trace": {"sequence": [rs_sync]}}}
    evaluator = evaluate(data, [sync(t), sync(t)])
    assert evaluator.verdict(0.0).status is Status.PASSED
    evaluator = evaluate(data, [sync(t), sync(t), sync(t)])
    assert messages(evaluator) == [
        "did not expect the reconcile by the replicaset controller of catalog-* 3 times, but it was seen"
    ]


def test_count_messages_in_chinese() -> None:
    t = Trace()
    data = {"trace": {"sequence": [SCALE, {**POD_EVENT, "times": {"at_least": 3}}]}}
    evaluator = evaluate(data, [scale(t), pod_event(t)])
    verdict = evaluator.verdict(0.0)
    with translation.override("zh-hans"):
        (message,) = [failure.render() for failure in verdict.failures]
        once = times_phrase(1).render()
        many = times_phrase(3).render()
    assert message != f"after the {SCALE_TEXT}, expected the {PODS_TEXT} 3 times, saw it once"
    assert once in message and many in message and "3" in many
    assert "after" not in message and "times" not in message
