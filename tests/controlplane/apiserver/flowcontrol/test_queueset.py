"""The queue set of a priority level: seats, queue length limits, fair dispatch, exempt and Reject."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from controlplane.apiserver.flowcontrol.queueset import (
    CANCELLED,
    CONCURRENCY_LIMIT,
    QUEUE_FULL,
    QueueSet,
    QueuingConfig,
    Request,
    State,
)

ONE_QUEUE = QueuingConfig(queues=1, hand_size=1, queue_length_limit=2)


def test_requests_take_seats_until_the_limit_then_wait() -> None:
    qs = QueueSet(2, QueuingConfig(queues=8, hand_size=2, queue_length_limit=5))
    a, b, c = (qs.start(flow=1, seats=1, now=0.0) for _ in range(3))
    assert [a.state, b.state, c.state] == [State.EXECUTING, State.EXECUTING, State.WAITING]
    assert (qs.seats_in_use, qs.executing, qs.waiting) == (2, 2, 1)
    assert qs.finish(a, now=1.0) == [c]
    assert c.state is State.EXECUTING
    assert (qs.seats_in_use, qs.waiting) == (2, 0)


def test_a_wide_request_takes_several_seats_and_waits_for_them() -> None:
    qs = QueueSet(4, QueuingConfig(queues=4, hand_size=1, queue_length_limit=5))
    small = qs.start(flow=1, seats=1, now=0.0)
    wide = qs.start(flow=2, seats=4, now=0.0)
    assert small.state is State.EXECUTING and wide.state is State.WAITING
    assert qs.seats_in_use == 1
    assert qs.finish(small, now=0.1) == [wide]
    assert qs.seats_in_use == 4


def test_a_request_wider_than_the_level_runs_alone() -> None:
    qs = QueueSet(2, ONE_QUEUE)
    huge = qs.start(flow=1, seats=5, now=0.0)
    assert huge.state is State.EXECUTING  # nothing else runs: it may
    other = qs.start(flow=1, seats=1, now=0.0)
    assert other.state is State.WAITING


def test_a_full_queue_rejects_only_while_every_seat_is_taken() -> None:
    qs = QueueSet(1, ONE_QUEUE)
    running = qs.start(flow=1, seats=1, now=0.0)
    waiting = [qs.start(flow=1, seats=1, now=0.0) for _ in range(2)]
    assert [w.state for w in waiting] == [State.WAITING, State.WAITING]
    refused = qs.start(flow=1, seats=1, now=0.0)
    assert (refused.state, refused.reason) == (State.REJECTED, QUEUE_FULL)
    assert qs.queue_lengths() == [2]
    qs.finish(running, now=0.5)
    assert qs.start(flow=1, seats=1, now=0.5).state is State.WAITING  # room again


def test_fair_dispatch_serves_a_quiet_flow_before_a_hot_flows_backlog() -> None:
    qs = QueueSet(1, QueuingConfig(queues=2, hand_size=1, queue_length_limit=50))
    assert qs.dealer is not None
    # Two flows that land in different queues.
    hot_flow = 0
    quiet_flow = next(f for f in range(1, 100) if qs.dealer.deal(f) != qs.dealer.deal(0))
    running = qs.start(hot_flow, 1, now=0.0)
    hot = [qs.start(hot_flow, 1, now=0.0) for _ in range(10)]
    quiet = qs.start(quiet_flow, 1, now=0.01)
    order = []
    current, now = running, 0.0
    while True:
        now += 0.01
        dispatched = qs.finish(current, now)
        if not dispatched:
            break
        current = dispatched[0]
        order.append(current)
    # The quiet flow's single request goes second at the latest, not after the hot backlog.
    assert order.index(quiet) <= 1
    assert [r for r in order if r is not quiet] == hot


def test_two_busy_flows_alternate() -> None:
    qs = QueueSet(1, QueuingConfig(queues=2, hand_size=1, queue_length_limit=50))
    assert qs.dealer is not None
    a = 0
    b = next(f for f in range(1, 100) if qs.dealer.deal(f) != qs.dealer.deal(0))
    running = qs.start(a, 1, now=0.0)
    requests = [qs.start(a, 1, now=0.0) for _ in range(4)] + [qs.start(b, 1, now=0.0) for _ in range(4)]
    flows = []
    current, now = running, 0.0
    while True:
        now += 0.01
        dispatched = qs.finish(current, now)
        if not dispatched:
            break
        current = dispatched[0]
        flows.append(current.flow)
    assert len(flows) == len(requests)
    assert all(flows[i] != flows[i + 1] for i in range(len(flows) - 1)), flows


def test_cancelling_a_waiting_request_takes_it_out_of_its_queue() -> None:
    qs = QueueSet(1, ONE_QUEUE)
    running = qs.start(1, 1, now=0.0)
    left = qs.start(1, 1, now=0.0)
    stays = qs.start(1, 1, now=0.0)
    qs.cancel(left, CANCELLED, now=0.1)
    assert (left.state, left.reason) == (State.REJECTED, CANCELLED)
    assert qs.queue_lengths() == [1]
    assert qs.finish(running, now=0.2) == [stays]


def test_an_exempt_level_never_waits_and_counts_its_seats() -> None:
    qs = QueueSet(0, None, exempt=True)
    requests = [qs.start(1, 1, now=0.0) for _ in range(100)]
    assert all(r.state is State.EXECUTING for r in requests)
    assert qs.seats_in_use == 100
    qs.finish(requests[0], now=1.0)
    assert qs.seats_in_use == 99


def test_a_reject_level_refuses_at_once_when_its_seats_are_taken() -> None:
    qs = QueueSet(2, None)
    a, b, c = (qs.start(1, 1, now=0.0) for _ in range(3))
    assert [a.state, b.state] == [State.EXECUTING, State.EXECUTING]
    assert (c.state, c.reason) == (State.REJECTED, CONCURRENCY_LIMIT)
    qs.finish(a, now=0.1)
    assert qs.start(1, 1, now=0.1).state is State.EXECUTING


def test_raising_the_limit_dispatches_the_waiting_requests_at_once() -> None:
    qs = QueueSet(1, ONE_QUEUE)
    qs.start(1, 1, now=0.0)
    waiting = qs.start(1, 1, now=0.0)
    assert qs.reconfigure(2, ONE_QUEUE, now=0.1) == [waiting]
    assert waiting.state is State.EXECUTING


def test_fewer_queues_keep_their_waiting_requests_until_they_drain() -> None:
    qs = QueueSet(1, QueuingConfig(queues=4, hand_size=1, queue_length_limit=5))
    running = qs.start(3, 1, now=0.0)
    queued = [qs.start(f, 1, now=0.0) for f in range(8)]
    assert qs.waiting == 8
    qs.reconfigure(1, QueuingConfig(queues=1, hand_size=1, queue_length_limit=5), now=0.1)
    assert qs.waiting == 8  # nobody lost
    served = []
    current, now = running, 0.1
    while True:
        now += 0.01
        dispatched = qs.finish(current, now)
        if not dispatched:
            break
        current = dispatched[0]
        served.append(current)
    assert sorted(map(id, served)) == sorted(map(id, queued))
    assert len(qs.queues) == 1


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["start", "finish", "cancel", "reconfigure"]), st.integers(0, 40))))
def test_the_running_counts_agree_with_the_queues_after_any_sequence(steps: list[tuple[str, int]]) -> None:
    """Virtual time and dispatch use counts kept step by step, not a scan of every queue: after any
    sequence of arrivals, completions, cancellations and edits they must equal what a scan finds."""
    qs = QueueSet(3, QueuingConfig(queues=6, hand_size=2, queue_length_limit=4))
    executing: list[Request] = []
    waiting: list[Request] = []
    now = 0.0
    for op, n in steps:
        now += 0.01
        if op == "start":
            request = qs.start(n, 1 + n % 3, now)
            if request.state is State.EXECUTING:
                executing.append(request)
            elif request.state is State.WAITING:
                waiting.append(request)
            else:  # turned away at once (its queue is full): neither running nor queued
                assert request.state is State.REJECTED, request
        elif op == "finish" and executing:
            dispatched = qs.finish(executing.pop(n % len(executing)), now)
        elif op == "cancel" and waiting:
            dispatched = qs.cancel(waiting.pop(n % len(waiting)), CANCELLED, now)
        elif op == "reconfigure":
            dispatched = qs.reconfigure(
                1 + n % 5, QueuingConfig(queues=1 + n % 7, hand_size=1, queue_length_limit=4), now
            )
        else:
            continue
        if op != "start":
            for request in dispatched:
                waiting.remove(request)
                executing.append(request)
        assert qs._busy == sum(1 for q in qs.queues if not q.idle), "busy queues miscounted"
        assert qs._queued_seats == sum(q.seats_in_use + q.waiting_seats for q in qs.queues), (
            "seats miscounted"
        )
        assert qs._nonempty == {q.index for q in qs.queues if q.waiting}, "queues with waiters miscounted"
        assert qs.waiting == len(waiting)
