"""The health line of a cluster (controlplane/clusterhealth.py): what counts as Ready, Pending, failing."""

from __future__ import annotations

from typing import Any

from controlplane.clusterhealth import FailureWindow, Health, failing, node_ready, pod_pending


def node(name: str, ready: str | None) -> dict[str, Any]:
    conditions = [{"type": "MemoryPressure", "status": "False"}]
    if ready is not None:
        conditions.append({"type": "Ready", "status": ready})
    return {"metadata": {"name": name}, "status": {"conditions": conditions}}


def pod(name: str, phase: str, *, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if deleting:
        meta["deletionTimestamp"] = "2030-01-01T00:00:00Z"
    return {"metadata": meta, "status": {"phase": phase}}


def completed(seq: int, code: int, ts: float) -> dict[str, Any]:
    return {"seq": seq, "type": "request.completed", "code": code, "ts": ts}


def test_only_a_ready_condition_that_is_true_makes_a_node_ready() -> None:
    assert node_ready(node("a", "True"))
    assert not node_ready(node("b", "Unknown")) and not node_ready(node("c", "False"))
    assert not node_ready(node("d", None)), "a node that never reported is not Ready"


def test_a_pending_pod_being_deleted_is_not_counted() -> None:
    assert pod_pending(pod("a", "Pending"))
    assert not pod_pending(pod("b", "Pending", deleting=True)) and not pod_pending(pod("c", "Running"))


def test_the_cluster_s_trouble_fails_not_the_client_s_mistakes() -> None:
    assert [code for code in (200, 201, 401, 403, 404, 409, 422, 429, 500, 503, 504) if failing(code)] == [
        401,
        429,
        500,
        503,
        504,
    ]


def test_health_counts_what_it_is_given() -> None:
    health = Health.of(
        [node("n1", "True"), node("n2", "Unknown"), node("n3", "True")],
        [pod("p1", "Pending"), pod("p2", "Running"), pod("p3", "Pending")],
        failing_requests=0,
    )
    assert health.as_json() == {
        "nodes_ready": 2,
        "nodes": 3,
        "pods_pending": 2,
        "failing_requests": 0,
        "healthy": False,
    }
    assert Health.of([node("n1", "True")], [pod("p", "Pending")], 0).healthy, "pending pods may be fine"
    assert not Health.of([node("n1", "True")], [], 1).healthy


def test_the_failure_window_counts_the_last_minute_and_reads_on_from_its_last_event() -> None:
    window = FailureWindow(seconds=60)
    for event in (
        completed(1, 503, 100.0),
        completed(2, 200, 110.0),
        {"seq": 3, "type": "request.received", "code": 500, "ts": 120.0},  # not an answer
        completed(4, 429, 150.0),
        completed(5, 404, 155.0),
    ):
        window.offer(event)
    assert window.last_seq == 5
    assert window.count(now=155.0) == 2
    assert window.count(now=165.0) == 1, "the 503 at 100 s is more than a minute old"
    assert window.count(now=211.0) == 0
