"""A step's solution: what it runs, in order, and a refusal that is the lesson (``expect: refused``).

kubectl and the manifest form are stood in for by recorders that answer as told (the form's result,
kubectl's exit), so each outcome is exact; one test runs the real kubectl, with a kubeconfig that
leads nowhere, to show that a command that succeeds where a refusal was expected fails the solution.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.utils import translation

from courses.chapters import runner as step_runner
from courses.chapters import solutions
from courses.chapters.solutions import SolutionFailed, run_solution
from courses.console import runner
from courses.console.runner import ExitReason, RunResult
from courses.engine.content import Solution, SolutionCommand, SolutionManifest
from courses.manifests import services as manifests
from courses.manifests.results import DocumentResult, Problem, State, SubmitResult
from courses.sandboxes import services as sandboxes
from courses.sandboxes.services import SandboxAccess

ACCESS = SandboxAccess(cluster="sandbox-alice", user="student:alice", token="token")
#: A kubeconfig kubectl can read but that leads nowhere: enough for commands that stay on the client.
NOWHERE = b"""apiVersion: v1
kind: Config
clusters: [{name: none, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: none, user: {token: none}}]
contexts: [{name: none, context: {cluster: none, user: none}}]
current-context: none
"""
CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app-config}\n"
INVALID = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Not_A_Name}\n"


@dataclass(frozen=True)
class Step:
    id: str
    solution: Solution


@dataclass
class Said:
    """What the solution told the student, in order."""

    lines: list[tuple[str, str]] = field(default_factory=list)

    async def __call__(self, message: str, state: str) -> None:
        self.lines.append((message, state))


@dataclass
class Kubectl:
    """``runner.run_once``, answering each command line with a given result."""

    answers: dict[str, RunResult]
    ran: list[tuple[str, ...]] = field(default_factory=list)

    async def __call__(self, *, argv: Any, **_: Any) -> RunResult:
        self.ran.append(tuple(argv))
        return self.answers[" ".join(argv)]


@dataclass
class Form:
    """``manifests.submit``, answering each manifest text with a given result."""

    answers: dict[str, SubmitResult]
    applied: list[str] = field(default_factory=list)

    async def __call__(self, *, access: Any, text: str, action: str, field_manager: str) -> SubmitResult:
        assert action == "apply" and field_manager == "alice"
        self.applied.append(text)
        return self.answers[text]


def exited(code: int, output: str = "") -> RunResult:
    return RunResult(exit_code=code, output=output, reason=ExitReason.EXITED)


def applied() -> SubmitResult:
    document = DocumentResult(1, 1, 3, "v1", "ConfigMap", "app-config", "default", State.CREATED)
    return SubmitResult("apply", ok=True, summary="configmap/app-config created", documents=(document,))


def refused_by_the_api_server() -> SubmitResult:
    problem = Problem(
        'ConfigMap "Not_A_Name" is invalid: metadata.name: Invalid value', code=422, reason="Invalid"
    )
    document = DocumentResult(
        1, 1, 3, "v1", "ConfigMap", "Not_A_Name", "default", State.FAILED, problem=problem
    )
    return SubmitResult("apply", ok=False, summary=problem.summary, documents=(document,))


def never_sent() -> SubmitResult:
    return SubmitResult("apply", ok=False, summary="Your cluster is not running in this server process")


@pytest.fixture(autouse=True)
def _english() -> Iterator[None]:
    with translation.override("en"):
        yield


@pytest.fixture(autouse=True)
def _kubeconfig(monkeypatch: pytest.MonkeyPatch) -> None:
    async def kubeconfig_for(*, user: Any, server: str | None = None) -> bytes:
        return NOWHERE

    monkeypatch.setattr(sandboxes, "kubeconfig_for", kubeconfig_for)


def kubectl(monkeypatch: pytest.MonkeyPatch, answers: dict[str, RunResult] | None = None) -> Kubectl:
    fake = Kubectl(answers or {})
    monkeypatch.setattr(runner, "run_once", fake)
    return fake


def form(monkeypatch: pytest.MonkeyPatch, answers: dict[str, SubmitResult]) -> Form:
    fake = Form(answers)
    monkeypatch.setattr(manifests, "submit", fake)
    return fake


async def solve(solution: Solution) -> Said:
    said = Said()
    await run_solution(
        access=ACCESS, step=Step("s", solution), say=said, user=object(), impersonate=("jane",)
    )
    return said


# -- commands ------------------------------------------------------------------------------------------


async def test_a_refused_command_that_is_refused_lets_the_solution_go_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    forbidden = (
        'Error from server (Forbidden): configmaps "app-config" is forbidden: User "jane" cannot delete'
    )
    fake = kubectl(
        monkeypatch,
        {
            "kubectl delete configmap app-config --as=jane": exited(1, forbidden + "\n"),
            "kubectl get configmap app-config": exited(0, "app-config"),
        },
    )
    said = await solve(
        Solution(
            kubectl=(
                SolutionCommand("kubectl delete configmap app-config --as=jane", refused=True),
                SolutionCommand("kubectl get configmap app-config"),
            )
        )
    )
    assert fake.ran == [
        ("kubectl", "delete", "configmap", "app-config", "--as=jane"),
        ("kubectl", "get", "configmap", "app-config"),
    ]
    assert ("Refused, as the lesson expects: " + forbidden, "working") in said.lines


async def test_a_refused_command_that_succeeds_fails_the_solution(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = kubectl(
        monkeypatch,
        {
            "kubectl delete configmap app-config --as=jane": exited(0, 'configmap "app-config" deleted'),
            "kubectl get configmap after": exited(0),
        },
    )
    with pytest.raises(SolutionFailed) as failed:
        await solve(
            Solution(
                kubectl=(
                    SolutionCommand("kubectl delete configmap app-config --as=jane", refused=True),
                    SolutionCommand("kubectl get configmap after"),
                )
            )
        )
    assert str(failed.value) == (
        "kubectl delete configmap app-config --as=jane should have been refused, but it succeeded: "
        'configmap "app-config" deleted'
    )
    assert len(fake.ran) == 1, "nothing runs after the solution failed"


@pytest.mark.parametrize("reason", [ExitReason.TIMEOUT, ExitReason.OUTPUT_LIMIT, ExitReason.KILLED])
async def test_a_command_killed_is_no_refusal(monkeypatch: pytest.MonkeyPatch, reason: ExitReason) -> None:
    kubectl(monkeypatch, {"kubectl delete configmap x --as=jane": RunResult(-9, "", reason)})
    with pytest.raises(SolutionFailed) as failed:
        await solve(
            Solution(kubectl=(SolutionCommand("kubectl delete configmap x --as=jane", refused=True),))
        )
    assert str(failed.value).startswith(
        f"kubectl delete configmap x --as=jane did not finish ({reason.value})"
    )


async def test_an_ordinary_command_that_fails_still_fails_the_solution(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kubectl(monkeypatch, {"kubectl get configmap nope": exited(1, 'Error from server (NotFound): "nope"')})
    with pytest.raises(SolutionFailed) as failed:
        await solve(Solution(kubectl=(SolutionCommand("kubectl get configmap nope"),)))
    assert str(failed.value).startswith("kubectl get configmap nope failed: Error from server (NotFound)")


async def test_a_line_the_console_refuses_is_never_the_lessons_refusal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = kubectl(monkeypatch)
    with pytest.raises(SolutionFailed) as failed:
        await solve(Solution(kubectl=(SolutionCommand("kubectl get pods --as=bob", refused=True),)))
    assert str(failed.value).startswith("The solution's command was refused: --as=bob is not allowed")
    assert fake.ran == []


async def test_the_real_kubectl_succeeding_where_a_refusal_was_expected_fails_the_solution() -> None:
    with pytest.raises(SolutionFailed) as failed:
        await solve(Solution(kubectl=(SolutionCommand("kubectl version --client", refused=True),)))
    assert str(failed.value).startswith("kubectl version --client should have been refused, but it succeeded")
    assert "Client Version: v1.37" in str(failed.value)


# -- manifests -----------------------------------------------------------------------------------------


async def test_a_refused_manifest_that_the_api_server_refuses_lets_the_solution_go_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = form(monkeypatch, {INVALID: refused_by_the_api_server(), CONFIGMAP: applied()})
    said = await solve(Solution(apply=(SolutionManifest(INVALID, refused=True), SolutionManifest(CONFIGMAP))))
    assert fake.applied == [INVALID, CONFIGMAP]
    assert (
        'Refused, as the lesson expects: ConfigMap "Not_A_Name" is invalid: metadata.name: Invalid value',
        "working",
    ) in said.lines


async def test_a_refused_manifest_that_is_applied_fails_the_solution(monkeypatch: pytest.MonkeyPatch) -> None:
    form(monkeypatch, {INVALID: applied()})
    with pytest.raises(SolutionFailed) as failed:
        await solve(Solution(apply=(SolutionManifest(INVALID, refused=True),)))
    assert str(failed.value) == (
        "The solution's manifest should have been refused, but the cluster accepted it: "
        "configmap/app-config created"
    )


async def test_a_manifest_that_never_reached_the_api_server_was_not_refused_by_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    form(monkeypatch, {INVALID: never_sent()})
    with pytest.raises(SolutionFailed) as failed:
        await solve(Solution(apply=(SolutionManifest(INVALID, refused=True),)))
    assert str(failed.value).startswith("The solution's manifest did not reach the cluster:")


async def test_an_ordinary_manifest_that_is_refused_fails_the_solution(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    form(monkeypatch, {INVALID: refused_by_the_api_server()})
    with pytest.raises(SolutionFailed) as failed:
        await solve(Solution(apply=(SolutionManifest(INVALID),)))
    assert str(failed.value).startswith(
        'The solution\'s manifest was refused: ConfigMap "Not_A_Name" is invalid'
    )


# -- building a step (jump to step N) ------------------------------------------------------------------


class _SilentRunner:
    """A ``StepRunner`` whose check never passes and, like one that cannot read the cluster, names no
    failure."""

    def __init__(self, *, on_verdict: Any, **_: Any) -> None:
        self.on_verdict = on_verdict

    async def start(self) -> None:
        await self.on_verdict("s", step_runner.Verdict("unknown"))

    async def check_now(self) -> None:
        await self.on_verdict("s", step_runner.Verdict("unknown"))

    async def close(self) -> None:
        pass


async def test_a_step_that_never_passes_is_named_by_its_title_and_the_reason_is_never_empty(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def solved(**_: Any) -> None:
        pass

    monkeypatch.setattr(step_runner, "StepRunner", _SilentRunner)
    monkeypatch.setattr(solutions, "run_solution", solved)
    monkeypatch.setattr(solutions, "BUILD_SECONDS", 0.05)
    said = Said()
    with translation.override("en"), pytest.raises(SolutionFailed) as failed:
        await solutions.build_step(
            access=ACCESS,
            checker_token="checker",
            step=Step("configmap-to-etcd", Solution()),
            say=said,
            title="Follow a ConfigMap to etcd",
        )
    assert said.lines[0] == ("Building step “Follow a ConfigMap to etcd”…", "working")
    message = str(failed.value)
    assert "configmap-to-etcd" not in message, f"the step's id, not its title: {message}"
    assert not message.rstrip().endswith(":"), f"the reason is missing: {message!r}"
    assert "gave no verdict" in message
