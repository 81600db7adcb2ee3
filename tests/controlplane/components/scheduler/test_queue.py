"""The scheduling queue: priority order, backoff 1-2-4-8-10 s, unschedulable pods moved by events."""

from __future__ import annotations

from controlplane.components.scheduler.queue import (
    NODE_ADD,
    POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION,
    SchedulingQueue,
    backoff_duration,
)
from tests.controlplane.components.scheduler.fixtures import pod


def test_backoff_durations() -> None:
    assert [backoff_duration(n) for n in range(1, 7)] == [1, 2, 4, 8, 10, 10]


def test_active_queue_orders_by_priority_then_time() -> None:
    q = SchedulingQueue()
    q.add(pod("old"), 0.0)
    q.add(pod("new"), 1.0)
    q.add(pod("urgent", priority=1000), 2.0)
    order = []
    while True:
        info, _ = q.pop(3.0)
        if info is None:
            break
        order.append(info.key)
    assert order == ["default/urgent", "default/old", "default/new"]


def test_priority_sort_puts_negative_priorities_last_and_a_requeued_urgent_pod_first() -> None:
    """``PrioritySort.Less``: higher ``spec.priority`` first (no priority is 0), then earlier timestamp."""
    q = SchedulingQueue()
    q.add(pod("urgent", priority=1000), 0.0)
    urgent, _ = q.pop(0.0)
    assert urgent is not None
    q.add_unschedulable(urgent, 1.0)
    q.add(pod("batch", priority=-5), 2.0)
    q.add(pod("plain"), 3.0)
    q.add(pod("peer", priority=1000), 4.0)
    q.move_all_to_active_or_backoff(NODE_ADD, 10.0)  # past urgent's backoff: back in activeQ
    assert q.active() == ["default/urgent", "default/peer", "default/plain", "default/batch"]


def test_unschedulable_pod_waits_for_an_event_then_backs_off() -> None:
    q = SchedulingQueue()
    q.add(pod("p"), 0.0)
    info, _ = q.pop(0.0)
    assert info is not None and info.attempts == 1
    q.add_unschedulable(info, 10.0)
    assert q.unschedulable() == ["default/p"]
    assert q.pop(20.0) == (None, 10.0 + POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION)
    # a node is added: moved to activeQ, since its 1 s backoff from t=10 is over
    q.move_all_to_active_or_backoff(NODE_ADD, 20.0)
    info, _ = q.pop(20.0)
    assert info is not None and info.attempts == 2
    q.add_unschedulable(info, 30.0)
    q.move_all_to_active_or_backoff(NODE_ADD, 30.5)
    assert q.backoff() == ["default/p"]  # second attempt: 2 s backoff until 32
    assert q.pop(31.0) == (None, 32.0)
    info, _ = q.pop(32.0)
    assert info is not None and info.key == "default/p"


def test_event_during_attempt_sends_pod_to_backoff() -> None:
    q = SchedulingQueue()
    q.add(pod("p"), 0.0)
    info, _ = q.pop(0.0)
    assert info is not None
    q.move_all_to_active_or_backoff(NODE_ADD, 0.5)
    q.add_unschedulable(info, 1.0)
    assert q.backoff() == ["default/p"] and q.unschedulable() == []


def test_unschedulable_pods_flushed_after_five_minutes() -> None:
    q = SchedulingQueue()
    q.add(pod("p"), 0.0)
    info, _ = q.pop(0.0)
    assert info is not None
    q.add_unschedulable(info, 0.0)
    info, _ = q.pop(POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION)
    assert info is not None and info.key == "default/p"
