"""The micro-benchmark that ``python -m bench course`` calls: it runs, and what it measures is real."""

from __future__ import annotations

from courses.engine.checks.benchmark import STUDENT, bench_check, bench_offer, noise


def test_bench_offer_reports_microseconds_per_event() -> None:
    per_event = bench_offer(3000)
    assert 0 < per_event < 200  # the target, 20 µs, is the bench's to judge on a quiet machine


def test_the_noise_keeps_partial_matches_alive_and_never_completes() -> None:
    evaluator = bench_check().evaluator(student=STUDENT, since_seq=0)
    for event in noise(1000):
        evaluator.offer(event)
    assert evaluator.matched("pod-path") is None
    # The student's creates started matches that wait for their authorization.
    # "status-update" counts since "pod-path", which never completes: it has not begun, so only the
    # leaf it waits for is what is failing.
    assert evaluator.verdict(0.0).failing_ids == {"pod-path"}
    runs = [run for run in evaluator._traces.values() if run.leaf.id == "pod-path"]
    assert runs[0].matcher.furthest() == (1, 0)
