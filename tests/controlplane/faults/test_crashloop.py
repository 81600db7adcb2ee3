"""CrashLoopBackOff's schedule: at once the first time, then 10 s doubling to 5 minutes (pure)."""

from __future__ import annotations

import pytest

from controlplane.faults.crashloop import CrashLoopTiming, RestartSchedule, container, crashed, restarted


def delays(schedule: RestartSchedule, runs_for: float, crashes: int) -> list[float]:
    """The restart delays of ``crashes`` crashes, each ``runs_for`` seconds after the restart before."""
    now, found = 1000.0, []
    for _ in range(crashes):
        delay = schedule.restart_delay(now)
        found.append(delay)
        now += delay + runs_for
    return found


def test_upstreams_back_off_at_once_then_doubling_from_10_s_to_5_min() -> None:
    assert delays(RestartSchedule(), 5.0, 9) == [0, 10, 20, 40, 80, 160, 300, 300, 300]


def test_a_component_that_ran_long_enough_starts_the_sequence_again() -> None:
    schedule = RestartSchedule()
    assert delays(schedule, 5.0, 3) == [0, 10, 20]
    # client-go's Backoff forgets an entry not updated for twice the maximum (10 minutes).
    assert schedule.restart_delay(1000.0 + 35 + 601 + 20) == 0
    assert schedule.restarts == 4


def test_a_scaled_loop_keeps_upstreams_ratios() -> None:
    timing = CrashLoopTiming().scaled(1 / 20)
    assert (timing.initial, timing.maximum, timing.runs_for) == (0.5, 15.0, 0.25)
    assert delays(RestartSchedule(timing), timing.runs_for, 8) == [0, 0.5, 1, 2, 4, 8, 15, 15]
    with pytest.raises(ValueError, match="positive"):
        CrashLoopTiming().scaled(0)


def test_what_the_trace_says() -> None:
    assert container("scheduler") == "kube-scheduler"
    assert container("controller-manager") == "kube-controller-manager"
    assert container("kube-proxy:node-2") == "kube-proxy"
    assert crashed("scheduler", 0) == "crashed; the kubelet restarts it at once"
    assert crashed("scheduler", 20) == "crashed; back-off 20s restarting failed container=kube-scheduler"
    assert crashed("kube-proxy:node-1", 300).endswith("back-off 5m0s restarting failed container=kube-proxy")
    assert restarted(3) == "restarted by the kubelet (restart 3)"
