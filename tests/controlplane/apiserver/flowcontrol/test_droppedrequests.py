"""Retry-After per priority level: doubles while a level keeps dropping, decays when it stops."""

from __future__ import annotations

from controlplane.apiserver.flowcontrol.droppedrequests import MAX_RETRY_AFTER, DroppedRequests


def test_a_level_that_never_dropped_advises_one_second() -> None:
    assert DroppedRequests().retry_after("global-default") == 1


def test_many_drops_double_retry_after_up_to_the_maximum_then_it_decays() -> None:
    tracker = DroppedRequests()
    seen = []
    for second in range(100, 200):
        for _ in range(200):
            tracker.record("workload-low", second + 0.5)
        seen.append(tracker.retry_after("workload-low"))
    assert seen[0] == 1
    assert 2 in seen and 4 in seen
    assert max(seen) == MAX_RETRY_AFTER
    assert tracker.retry_after("global-default") == 1  # other levels are not affected
    for second in range(300, 500, 2):  # a drop now and then: it comes down one second at a time
        tracker.record("workload-low", second)
    assert tracker.retry_after("workload-low") == 1
