"""How much one trace event costs one check: the number ``python -m bench course`` reports.

Every student's open step holds an evaluator, and every event of their sandbox's trace is offered to
it. A busy sandbox makes hundreds of events a second (kubelets renewing leases, their watch events,
the controllers' reconciles), nearly all of them noise to the step, so the cost that matters is the
cost of an event that does *not* match: the target is 20 µs per event per active check.

``bench_offer`` builds a check as heavy as a chapter's (chapter 2's pod creation: a six-step trace
sequence tied together by ``same_request``, a second trace leaf, a state leaf whose reads
``store.txn`` events can make old), binds it to a student, and offers it a synthetic but typical mix:
lease renewals with their requests, store writes and watch events, reconciles, and every so often a
create request of the student's that starts a partial match which never completes, so the
evaluator carries live partial matches the whole time, as it does while a student works.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from courses.engine.checks.parsing import parse_check
from courses.engine.checks.spec import Check

STUDENT = "student:bench"

#: Chapter 2's "create a bare Pod and follow it" check, and a Deployment beside it.
CHECK: dict[str, Any] = {
    "all": [
        {
            "id": "pod-path",
            "trace": {
                "sequence": [
                    {
                        "type": "request.received",
                        "verb": "create",
                        "resource": "pods",
                        "user": "$student",
                        "as": "create",
                    },
                    {"type": "rbac.decision", "allowed": True, "same_request": "create"},
                    {
                        "type": "store.txn",
                        "writes": {"type": "PUT", "key": "/registry/pods/*"},
                        "same_request": "create",
                    },
                    {"type": "watch.event", "to": "scheduler", "event": "ADDED", "resource": "pods"},
                    {"type": "scheduler.decision", "chosen": "node-*", "as": "decision"},
                    {
                        "type": "request.completed",
                        "subresource": "binding",
                        "code": 201,
                        "same_request": "decision",
                    },
                ],
                "within": {"events": 5000, "seconds": 60},
            },
        },
        {
            "id": "status-update",
            "trace": {
                "since": "pod-path",
                "sequence": [
                    {
                        "type": "request.completed",
                        "resource": "pods",
                        "subresource": "status",
                        "user": "system:node:*",
                    }
                ],
            },
        },
        {
            "id": "deployment",
            "state": {
                "get": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "conditions": [{"path": "status.availableReplicas", "at_least": 3}],
            },
        },
    ]
}


def bench_check() -> Check:
    return parse_check(CHECK, where="courses/engine/checks/benchmark.py")


def noise(n_events: int, *, first_seq: int = 1) -> Iterator[dict[str, Any]]:
    """``n_events`` events of a busy three-node cluster that never complete the check."""
    ts = 1_700_000_000.0
    for i in range(n_events):
        seq = first_seq + i
        ts += 0.002
        node = f"node-{i % 3 + 1}"
        kind = i % 10
        rid = f"r{i // 10}"
        if kind == 0 and i % 100 == 0:
            # The student creates a pod, but the scheduler never gets to it: a live partial match.
            yield {
                "seq": seq,
                "ts": ts,
                "type": "request.received",
                "id": f"s{i}",
                "from": f"user:{STUDENT}",
                "to": "apiserver",
                "method": "POST",
                "path": "/api/v1/namespaces/default/pods",
                "user": STUDENT,
                "verb": "create",
                "resource": "pods",
                "namespace": "default",
            }
        elif kind in (0, 1):
            yield {
                "seq": seq,
                "ts": ts,
                "type": "request.received",
                "id": rid,
                "from": f"kubelet:{node}",
                "to": "apiserver",
                "method": "PUT",
                "path": f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{node}",
                "user": f"system:node:{node}",
                "verb": "update",
                "resource": "leases",
                "namespace": "kube-node-lease",
                "name": node,
            }
        elif kind == 2:
            yield {
                "seq": seq,
                "ts": ts,
                "type": "rbac.decision",
                "id": rid,
                "allowed": True,
                "verb": "update",
            }
        elif kind == 3:
            yield {
                "seq": seq,
                "ts": ts,
                "type": "store.txn",
                "id": rid,
                "from": "apiserver",
                "to": "etcd",
                "op": "txn",
                "revision": 1000 + i,
                "succeeded": True,
                "writes": [{"type": "PUT", "key": f"/registry/leases/kube-node-lease/{node}"}],
            }
        elif kind in (4, 5, 6):
            yield {
                "seq": seq,
                "ts": ts,
                "type": "watch.event",
                "from": "apiserver",
                "to": f"kubelet:{node}",
                "source": "apiserver",
                "watch": f"w{kind}",
                "event": "MODIFIED",
                "revision": 1000 + i,
                "resource": "leases",
                "kind": "Lease",
                "namespace": "kube-node-lease",
                "name": node,
            }
        elif kind == 7:
            yield {
                "seq": seq,
                "ts": ts,
                "type": "request.completed",
                "id": rid,
                "from": f"kubelet:{node}",
                "to": "apiserver",
                "user": f"system:node:{node}",
                "verb": "update",
                "resource": "leases",
                "code": 200,
                "duration": 0.001,
            }
        elif kind == 8:
            yield {
                "seq": seq,
                "ts": ts,
                "type": "reconcile",
                "from": "controller-manager",
                "controller": "endpointslice",
                "key": "default/kubernetes",
                "result": "success",
            }
        else:
            yield {
                "seq": seq,
                "ts": ts,
                "type": "request.stage",
                "id": rid,
                "from": f"kubelet:{node}",
                "to": "apiserver",
                "stage": "authorization",
                "outcome": "pass",
            }


def bench_offer(n_events: int = 100_000) -> float:
    """Microseconds per trace event for one active check (the mean over ``n_events``)."""
    check = bench_check()
    evaluator = check.evaluator(student=STUDENT, since_seq=0)
    for read in evaluator.reads():
        evaluator.give(read, _deployment(1))
    events = list(noise(n_events))
    offer = evaluator.offer
    started = time.perf_counter()
    for event in events:
        offer(event)
    elapsed = time.perf_counter() - started
    assert not evaluator.passed
    return elapsed / max(n_events, 1) * 1e6


def _deployment(available: int) -> Any:
    from courses.engine.checks.reads import ReadResult

    return ReadResult.ok({"metadata": {"name": "web"}, "status": {"availableReplicas": available}})


if __name__ == "__main__":
    print(f"{bench_offer():.2f} µs per trace event per check")
