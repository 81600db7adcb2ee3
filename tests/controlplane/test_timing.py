"""Timing profiles: upstream's defaults, and a classroom profile with the same ratios."""

from __future__ import annotations

import dataclasses

import pytest

from controlplane.timing import CLASSROOM, UPSTREAM, UnknownTimingProfile, timing_profile


def test_upstream_is_kubernetes_defaults() -> None:
    assert (UPSTREAM.node_lease_duration, UPSTREAM.node_lease_renew_interval) == (40, 10)
    assert UPSTREAM.node_monitor_grace_period == 50
    assert UPSTREAM.default_toleration_seconds == 300
    assert (UPSTREAM.leader_lease_duration, UPSTREAM.leader_renew_deadline, UPSTREAM.leader_retry_period) == (
        15,
        10,
        2,
    )


LEADER_ELECTION = ("leader_lease_duration", "leader_renew_deadline", "leader_retry_period")


def test_classroom_keeps_every_ratio_and_is_five_times_faster() -> None:
    assert CLASSROOM.name == "classroom"
    assert CLASSROOM.node_monitor_grace_period == pytest.approx(10)
    assert CLASSROOM.default_toleration_seconds == pytest.approx(60)
    for f in dataclasses.fields(UPSTREAM):
        if f.name not in ("name", *LEADER_ELECTION):
            assert getattr(CLASSROOM, f.name) == pytest.approx(getattr(UPSTREAM, f.name) / 5), f.name


def test_classroom_leaders_renew_at_upstreams_pace() -> None:
    """Five Lease writes a second per leader would cost an idle cluster more than all its other writes."""
    for name in LEADER_ELECTION:
        assert getattr(CLASSROOM, name) == getattr(UPSTREAM, name), name


def test_profiles_are_found_by_name_and_unknown_names_are_refused() -> None:
    assert timing_profile("upstream") is UPSTREAM
    assert timing_profile("classroom") is CLASSROOM
    with pytest.raises(UnknownTimingProfile, match="choose one of classroom, upstream"):
        timing_profile("fast")
    with pytest.raises(ValueError, match="positive"):
        UPSTREAM.scaled(0, name="frozen")
