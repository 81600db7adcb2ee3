"""The step runner's verdicts: the failures in the student's language, made once per change."""

from __future__ import annotations

from typing import Any

import pytest

from courses.chapters import runner
from courses.chapters.runner import StepRunner
from courses.engine.checks.evaluator import Status
from courses.engine.checks.evaluator import Verdict as CheckVerdict
from courses.engine.checks.failures import Failure
from courses.sandboxes.services import SandboxAccess


async def _ignore(step: str, verdict: runner.Verdict) -> None:
    return None


def _runner(language: str) -> StepRunner:
    access = SandboxAccess(cluster="sb-1", user="student:mira", token="t")
    return StepRunner(access=access, checker_token="c", step=None, on_verdict=_ignore, language=language)


def _failing(seen: int) -> CheckVerdict:
    failure = Failure(
        "ready",
        "state.equals",
        {"field": "status.phase", "object": "pod app", "expected": "Running", "seen": str(seen)},
    )
    return CheckVerdict(Status.FAILING, (failure,), failing_ids=frozenset({"ready"}))


def test_the_same_failures_are_put_into_words_once_in_the_students_language(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made: list[Any] = []
    render = runner.render_failures

    def counting(failures: tuple[Failure, ...]) -> runner.Said:
        made.append(failures)
        return render(failures)

    monkeypatch.setattr(runner, "render_failures", counting)
    step = _runner("zh-hans")
    first = runner.page_verdict(_failing(1), held=False, render=step._render)
    again = runner.page_verdict(_failing(1), held=False, render=step._render)
    assert first == again and len(made) == 1
    ((leaf, message),) = first.failures
    assert leaf == "ready" and "status.phase" in message and "expected" not in message  # in Chinese
    changed = runner.page_verdict(_failing(2), held=False, render=step._render)
    assert len(made) == 2 and changed.failures != first.failures
