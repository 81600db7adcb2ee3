"""The evaluator: combinators, reads and when they go stale, unknown versus failing, stability, latching."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.utils import translation

from courses.engine.checks import Evaluator, Read, ReadResult, Status, parse_check
from courses.engine.checks.reads import index_keys, read_for
from courses.engine.checks.spec import StateLeaf

ALICE = "student:alice"


@pytest.fixture(autouse=True)
def _english() -> Iterator[None]:
    with translation.override("en"):
        yield


def build(data: Any, *, since_seq: int = 0, stability: float = 0.0) -> Evaluator:
    return parse_check(data, where="test").evaluator(student=ALICE, since_seq=since_seq, stability=stability)


CM = {"apiVersion": "v1", "kind": "ConfigMap", "name": "app-config"}
BLUE = {"path": "data.color", "equals": "blue"}


def cm(color: str) -> ReadResult:
    return ReadResult.ok({"metadata": {"name": "app-config"}, "data": {"color": color}})


def write(seq: int, key: str, *, type_: str = "PUT") -> dict[str, Any]:
    return {
        "seq": seq,
        "ts": float(seq),
        "type": "store.txn",
        "op": "txn",
        "revision": seq,
        "writes": [{"type": type_, "key": key}],
    }


def event(seq: int, type_: str, **fields: Any) -> dict[str, Any]:
    return {"seq": seq, "ts": float(seq), "type": type_, **fields}


def answer_all(evaluator: Evaluator, result: ReadResult) -> list[Read]:
    reads = list(evaluator.reads())
    for read in reads:
        evaluator.give(read, result)
    return reads


# -- reads -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "url", "key", "exact"),
    [
        (
            {"get": CM},
            "/api/v1/namespaces/default/configmaps/app-config",
            "/registry/configmaps/default/app-config",
            True,
        ),
        (
            {"get": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "shop", "name": "web"}},
            "/apis/apps/v1/namespaces/shop/deployments/web",
            "/registry/deployments/shop/web",
            True,
        ),
        (
            {"get": {"apiVersion": "v1", "kind": "Node", "name": "node-1"}},
            "/api/v1/nodes/node-1",
            "/registry/minions/node-1",
            True,
        ),
        (
            {"list": {"apiVersion": "v1", "kind": "Pod", "labelSelector": "app=web,tier in (a,b)"}},
            "/api/v1/namespaces/default/pods?labelSelector=app%3Dweb%2Ctier%20in%20%28a%2Cb%29",
            "/registry/pods/default/",
            False,
        ),
        (
            {
                "list": {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "allNamespaces": True,
                    "fieldSelector": "spec.nodeName=node-1",
                }
            },
            "/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-1",
            "/registry/pods/",
            False,
        ),
        (
            {"list": {"apiVersion": "v1", "kind": "Service"}},
            "/api/v1/namespaces/default/services",
            "/registry/services/specs/default/",
            False,
        ),
    ],
)
def test_read_for(spec: dict[str, Any], url: str, key: str, exact: bool) -> None:
    (leaf,) = parse_check({"state": spec}, where="test").leaves()
    assert isinstance(leaf, StateLeaf)
    read = read_for(leaf.target)
    assert (read.method, read.url, read.key, read.exact) == ("GET", url, key, exact)


def test_index_keys() -> None:
    assert index_keys("/registry/pods/default/web") == ("/registry/pods", "/registry/pods/default")
    assert index_keys("/registry/services/specs/default/web") == (
        "/registry/services",
        "/registry/services/specs",
    )
    assert index_keys("/registry/namespaces") == ("/registry/namespaces", "/registry/namespaces")
    assert index_keys("x") == ("x", "x")


def test_reads_are_handed_out_once_and_shared() -> None:
    evaluator = build({"all": [{"state": {"get": CM, "conditions": [BLUE]}}, {"state": {"get": CM}}]})
    (read,) = evaluator.reads()
    assert evaluator.reads() == ()
    evaluator.give(read, cm("blue"))
    assert evaluator.verdict(0).status is Status.PASSED
    with pytest.raises(KeyError):
        evaluator.give(Read("GET", "/api/v1/nodes", (), "/registry/minions/", False), cm("blue"))


def test_a_write_it_covers_makes_a_read_old() -> None:
    evaluator = build(
        {
            "all": [
                {"state": {"get": CM, "conditions": [BLUE]}},
                {"state": {"list": {"apiVersion": "v1", "kind": "Pod", "labelSelector": "app=web"}}},
                {"state": {"get": {"apiVersion": "v1", "kind": "Service", "name": "web"}}},
            ]
        }
    )
    get_cm, list_pods, get_svc = evaluator.reads()
    assert evaluator.offer(write(1, "/registry/configmaps/default/app-config")) == (get_cm,)
    assert evaluator.offer(write(2, "/registry/configmaps/default/app-config-2")) == ()
    assert evaluator.offer(write(3, "/registry/configmaps/kube-system/app-config")) == ()
    assert evaluator.offer(write(4, "/registry/pods/default/web-1", type_="DELETE")) == (list_pods,)
    assert evaluator.offer(write(5, "/registry/pods/other/web-1")) == ()
    assert evaluator.offer(write(6, "/registry/services/specs/default/web")) == (get_svc,)
    assert evaluator.offer(write(7, "/registry/services/endpoints/default/web")) == ()
    assert evaluator.offer(event(8, "store.txn", op="range", revision=8, key="/registry/pods/default/")) == ()
    assert evaluator.offer_all(
        [write(9, "/registry/pods/default/a"), write(10, "/registry/pods/default/b")]
    ) == {list_pods}
    # All three are in flight; the writes made them wanted again, for after their answers.
    assert evaluator.reads() == ()
    for read in (get_cm, list_pods, get_svc):
        evaluator.give(
            read, ReadResult.ok({"items": []} if read is list_pods else {"data": {"color": "blue"}})
        )
    assert set(evaluator.reads()) == {get_cm, list_pods, get_svc}


def test_events_from_before_the_step_are_ignored() -> None:
    evaluator = build({"state": {"get": CM}}, since_seq=10)
    (read,) = evaluator.reads()
    evaluator.give(read, cm("red"))
    assert evaluator.offer(write(10, "/registry/configmaps/default/app-config")) == ()
    assert evaluator.offer(write(11, "/registry/configmaps/default/app-config")) == (read,)


def test_refresh_reads_everything_again() -> None:
    evaluator = build({"state": {"get": CM}})
    answer_all(evaluator, cm("red"))
    assert evaluator.reads() == ()
    evaluator.refresh()
    assert len(evaluator.reads()) == 1


# -- unknown is not failing ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("result", "code", "message"),
    [
        (
            ReadResult.error(500, "etcd is down"),
            "unknown.api_error",
            "reading configmap app-config failed: the API server answered 500: etcd is down",
        ),
        (
            ReadResult.error(503),
            "unknown.api_status",
            "reading configmap app-config failed: the API server answered 503",
        ),
        (
            ReadResult(403, {"kind": "Status", "message": 'configmaps "app-config" is forbidden'}),
            "unknown.api_error",
            "reading configmap app-config failed: the API server answered 403: "
            'configmaps "app-config" is forbidden',
        ),
        (
            ReadResult.timed_out(),
            "unknown.timeout",
            "reading configmap app-config failed: the API server did not answer in time",
        ),
        (
            ReadResult.ok(["not", "an", "object"]),
            "unknown.api_error",
            "reading configmap app-config failed: the API server answered 200: not a Kubernetes object",
        ),
    ],
)
def test_an_api_error_is_unknown(result: ReadResult, code: str, message: str) -> None:
    evaluator = build({"id": "stored", "state": {"get": CM, "conditions": [BLUE]}})
    answer_all(evaluator, result)
    verdict = evaluator.verdict(0)
    assert verdict.status is Status.UNKNOWN
    assert verdict.failures == ()
    (unknown,) = verdict.unknowns
    assert (unknown.leaf_id, unknown.code) == ("stored", code)
    assert unknown.render() == message


def test_not_found_is_the_students_failure() -> None:
    evaluator = build({"id": "stored", "state": {"get": CM}})
    answer_all(evaluator, ReadResult.not_found())
    verdict = evaluator.verdict(0)
    assert verdict.status is Status.FAILING
    assert [f.render() for f in verdict.failures] == ["configmap app-config was not found"]
    assert verdict.failing_ids == {"stored"}


def test_a_list_that_is_not_found_is_unknown() -> None:
    evaluator = build({"state": {"list": {"apiVersion": "v1", "kind": "Pod"}}})
    answer_all(evaluator, ReadResult.not_found())
    assert evaluator.verdict(0).status is Status.UNKNOWN


def test_not_read_yet_is_unknown() -> None:
    evaluator = build({"state": {"get": CM}})
    verdict = evaluator.verdict(0)
    assert verdict.status is Status.UNKNOWN
    assert [u.render() for u in verdict.unknowns] == ["configmap app-config has not been read yet"]
    assert verdict.unknowns[0].code == "unknown.not_read"


def test_lost_trace_events_make_a_waiting_trace_leaf_unknown_until_it_matches() -> None:
    evaluator = build({"id": "t", "trace": {"sequence": [{"type": "reconcile", "controller": "deployment"}]}})
    assert evaluator.verdict(0).status is Status.FAILING
    evaluator.missed(3, 9)
    evaluator.missed(12, 14)
    verdict = evaluator.verdict(0)
    assert verdict.status is Status.UNKNOWN
    assert [u.render() for u in verdict.unknowns] == [
        "the trace lost events 3 to 14, so the reconcile by the deployment controller may have been missed"
    ]
    evaluator.offer(event(15, "reconcile", controller="deployment", key="default/web", result="success"))
    assert evaluator.verdict(0).status is Status.PASSED


def test_a_gap_before_a_leaf_starts_does_not_matter() -> None:
    evaluator = build({"trace": {"sequence": [{"type": "reconcile"}]}}, since_seq=20)
    evaluator.missed(3, 9)
    assert evaluator.verdict(0).status is Status.FAILING


# -- combinators -------------------------------------------------------------------------------------------

RECONCILE = {"type": "reconcile", "controller": "deployment"}


def test_all_any_not_with_three_values() -> None:
    evaluator = build(
        {
            "id": "top",
            "any": [
                {
                    "id": "both",
                    "all": [
                        {"id": "s", "state": {"get": CM, "conditions": [BLUE]}},
                        {"id": "r", "trace": {"sequence": [RECONCILE]}},
                    ],
                },
                {"id": "none", "not": {"trace": {"sequence": [{"type": "fault.applied"}]}}},
            ],
        }
    )
    # not(fault) holds while no fault came: the any holds at once, though "both" is unknown (not
    # read yet) and then false; the pass waits only for the outstanding read to be answered.
    assert evaluator.verdict(0).status is Status.SETTLING
    answer_all(evaluator, cm("red"))
    verdict = evaluator.verdict(0)
    assert verdict.status is Status.PASSED


def test_any_is_unknown_when_no_child_holds_and_one_is_unknown() -> None:
    evaluator = build(
        {
            "any": [
                {"id": "s", "state": {"get": CM, "conditions": [BLUE]}},
                {"id": "r", "trace": {"sequence": [RECONCILE]}},
            ]
        }
    )
    assert evaluator.verdict(0).status is Status.UNKNOWN
    answer_all(evaluator, cm("red"))
    verdict = evaluator.verdict(0)
    assert verdict.status is Status.FAILING
    assert verdict.failing_ids == {"s", "r"}
    assert [f.render() for f in verdict.failures] == [
        "expected data.color of configmap app-config to be blue, saw red",
        "no reconcile by the deployment controller was seen since this step began",
    ]


def test_all_fails_when_one_child_fails_even_if_another_is_unknown() -> None:
    evaluator = build(
        {"id": "both", "all": [{"state": {"get": CM}}, {"id": "r", "trace": {"sequence": [RECONCILE]}}]}
    )
    verdict = evaluator.verdict(0)
    assert verdict.status is Status.FAILING
    assert verdict.failing_ids == {"both", "r"}
    assert [u.code for u in verdict.unknowns] == ["unknown.not_read"]


def test_not_says_what_it_did_not_expect() -> None:
    evaluator = build(
        {
            "all": [
                {
                    "id": "no-fault",
                    "not": {"trace": {"sequence": [{"type": "fault.applied", "fault": "component-stop"}]}},
                },
                {"not": {"id": "not-blue", "state": {"get": CM, "conditions": [BLUE]}}},
            ]
        }
    )
    answer_all(evaluator, cm("blue"))
    evaluator.offer(event(1, "fault.applied", fault="component-stop", target="scheduler"))
    verdict = evaluator.verdict(0)
    assert verdict.status is Status.FAILING
    assert [(f.leaf_id, f.render()) for f in verdict.failures] == [
        ("no-fault", "did not expect the applied fault (fault=component-stop), but it was seen"),
        ("not-blue", "did not expect configmap app-config with data.color = blue, but it holds"),
    ]


def test_not_of_combinators_and_lists_in_words() -> None:
    evaluator = build(
        {
            "not": {
                "any": [
                    {"trace": {"sequence": [{"type": "store.txn"}, RECONCILE]}},
                    {"state": {"list": {"apiVersion": "v1", "kind": "Pod"}, "count": {"at_least": 2}}},
                ]
            }
        }
    )
    answer_all(evaluator, ReadResult.ok({"items": [{}, {}]}))
    (failure,) = evaluator.verdict(0).failures
    assert failure.render() == (
        "did not expect any of: store transaction followed by reconcile by the deployment controller, "
        "at least 2 pods, but it holds"
    )


# -- stability and latching --------------------------------------------------------------------------------


def test_a_pass_waits_out_the_window_then_latches() -> None:
    evaluator = build({"state": {"get": CM, "conditions": [BLUE]}}, stability=1.0)
    (read,) = evaluator.reads()
    evaluator.give(read, cm("blue"))
    settling = evaluator.verdict(10.0)
    assert settling.status is Status.SETTLING and settling.recheck_at == 11.0
    assert evaluator.verdict(10.9).status is Status.SETTLING
    passed = evaluator.verdict(11.0)
    assert passed.status is Status.PASSED and passed.passed_at == 11.0 and passed.passed
    # Latched: undoing it later does not take the step back.
    evaluator.offer(write(5, "/registry/configmaps/default/app-config"))
    (read,) = evaluator.reads()
    evaluator.give(read, ReadResult.not_found())
    assert evaluator.verdict(12.0).status is Status.PASSED
    assert evaluator.passed


def test_a_flicker_starts_the_window_again() -> None:
    evaluator = build({"state": {"get": CM, "conditions": [BLUE]}}, stability=1.0)
    (read,) = evaluator.reads()
    evaluator.give(read, cm("blue"))
    assert evaluator.verdict(10.0).status is Status.SETTLING
    # Red and blue again between two verdicts: the window still starts over.
    evaluator.offer(write(1, "/registry/configmaps/default/app-config"))
    (read,) = evaluator.reads()
    evaluator.give(read, cm("red"))
    evaluator.offer(write(2, "/registry/configmaps/default/app-config"))
    (read,) = evaluator.reads()
    evaluator.give(read, cm("blue"))
    assert evaluator.verdict(10.5).recheck_at == 11.5
    assert evaluator.verdict(11.2).status is Status.SETTLING
    assert evaluator.verdict(11.5).status is Status.PASSED


def test_an_unknown_moment_starts_the_window_again() -> None:
    evaluator = build({"state": {"get": CM, "conditions": [BLUE]}}, stability=1.0)
    answer_all(evaluator, cm("blue"))
    evaluator.verdict(0.0)
    evaluator.refresh()
    answer_all(evaluator, ReadResult.timed_out())
    assert evaluator.verdict(0.5).status is Status.UNKNOWN
    evaluator.refresh()
    answer_all(evaluator, cm("blue"))
    assert evaluator.verdict(1.2).recheck_at == 2.2


def test_no_pass_while_a_read_is_outstanding() -> None:
    evaluator = build({"state": {"get": CM, "conditions": [BLUE]}}, stability=1.0)
    answer_all(evaluator, cm("blue"))
    evaluator.verdict(0.0)
    evaluator.offer(write(1, "/registry/configmaps/default/app-config"))
    # The window has passed, but a write came that the last read did not see.
    assert evaluator.verdict(5.0).status is Status.SETTLING
    (read,) = evaluator.reads()
    assert evaluator.verdict(5.0).status is Status.SETTLING  # in flight
    evaluator.give(read, cm("blue"))
    assert evaluator.verdict(5.0).status is Status.PASSED


def test_a_trace_check_passes_after_its_window() -> None:
    evaluator = build({"trace": {"sequence": [RECONCILE]}}, stability=1.0)
    evaluator.offer(event(1, "reconcile", controller="deployment", key="k", result="success"))
    assert evaluator.verdict(3.0).status is Status.SETTLING
    assert evaluator.verdict(4.0).status is Status.PASSED


def test_the_window_starts_no_earlier_than_it_is_seen() -> None:
    evaluator = build({"trace": {"sequence": [RECONCILE]}}, stability=1.0)
    evaluator.offer(event(1, "reconcile", controller="deployment", key="k", result="success"))
    assert evaluator.verdict(100.0).status is Status.SETTLING


def test_check_evaluator_shortcut() -> None:
    check = parse_check({"state": {"get": CM}}, where="test")
    evaluator = check.evaluator(student=ALICE, since_seq=7)
    assert isinstance(evaluator, Evaluator)
    assert evaluator.since_seq == 7 and evaluator.student == ALICE


def test_the_student_is_bound_in_reads() -> None:
    evaluator = build(
        {"state": {"list": {"apiVersion": "v1", "kind": "Pod", "labelSelector": "owner=$student"}}}
    )
    (read,) = evaluator.reads()
    assert read.query == (("labelSelector", f"owner={ALICE}"),)
