"""Running a step's solution on the student's sandbox, as the student.

A solution (docs/course-format.md) is faults to apply, manifests to apply and kubectl commands to
run. The faults come before the manifests and the commands (a step whose lesson needs a stopped
kubelet), once the background commands watch, through the lab's fault service (``run_fault``, the
same a step's fault button uses), on the student's own sandbox only. The rest runs exactly as the
student's own actions would: the manifests through the manifest form's service
(server-side apply with the student's name as field manager, through the full pipeline), the
commands through the kubectl console's runner (the real kubectl with the student's kubeconfig, after
the console's policy). The web app gains no rights by running them.

A solution's ``background`` commands (a watch, ``kubectl wait``) are started before the rest of it runs,
so that they see what the rest does, and stopped when the step is built; its ``kubectl`` commands run
unattended in order (the content loader refuses a watch there). So a step such as "watch the ConfigMap,
then change it" has a solution that composes.

A step whose lesson is a refusal (RBAC's 403, an admission webhook's denial, a 409 Conflict) marks the
manifest or command that must be refused (``expect: refused``, docs/course-format.md): it passes when
the API server refuses the manifest, or when kubectl exits by itself with an error, and the solution
fails when it succeeds, since then the step's check would see no refusal. A command killed for running
too long is no refusal: it fails the solution too.

``build_step`` is "jump to step N"'s building block: it runs a step's solution while the step's check
runs, and returns once the check passes, so a solution that does not reach its own check is found
(``SolutionFailed``), never silently skipped.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from django.utils import translation
from django.utils.translation import gettext

from controlplane.tasks import cancel_and_wait
from courses import gateway
from courses.sandboxes import services as sandboxes
from courses.sandboxes.identities import sandbox_owner

if TYPE_CHECKING:
    from courses.console.runner import RunResult
    from courses.engine.content import FaultAction, Solution, SolutionCommand, SolutionManifest
    from courses.manifests.results import SubmitResult

Say = Callable[[str, str], Awaitable[None]]
#: How long a solution's command may run, and a step's check may take to pass after its solution.
COMMAND_SECONDS = 60.0
BUILD_SECONDS = 90.0
#: How long a background watch of a solution may run at most, how long the rest of the solution waits
#: for it to open, and how long the solution waits for it to end once the rest has run.
WATCH_SECONDS = 120.0
WATCH_OPEN_SECONDS = 10.0
WATCH_END_SECONDS = 30.0


class SolutionFailed(Exception):
    """A solution could not run, or did not reach its step's check; the message says which and why."""


def _username(access: sandboxes.SandboxAccess) -> str:
    return access.user.removeprefix("student:")


async def run_solution(
    *,
    access: sandboxes.SandboxAccess,
    step: Any,
    say: Say,
    user: Any = None,
    impersonate: Sequence[str] = (),
    mistake: bool = False,
    clusters: Any = None,
) -> None:
    """Run ``step``'s solution as the student: its background commands first (once their watch is
    open), then its faults, the manifests, then the other commands, in order; then wait for the
    background commands to end. Raises ``SolutionFailed`` with what went wrong.

    ``mistake``: run the step's common mistake instead, the same way (it is written as a solution is).
    ``clusters``: where the kubectl commands run (the student's sandbox service when None, else the
    classroom's shared cluster, ``courses.classrooms.shared.SharedCluster``).
    """
    solution: Solution = step.mistake.actions if mistake else step.solution
    what = "mistake" if mistake else "solution"
    waiting = solution.background
    commands = solution.kubectl
    kubeconfig = (
        await (clusters or sandboxes).kubeconfig_for(user=user)
        if (commands or waiting) and user is not None
        else None
    )
    background: list[asyncio.Task[Any]] = []
    try:
        if waiting:
            # The rest of the solution is what the watch is there to see: it waits until the watch is
            # open. The subscription is made first, so the opening cannot slip by unseen.
            with gateway.subscribe_trace(cluster=access.cluster) as subscription:
                for line in waiting:
                    await say(gettext("Starting %(command)s…") % {"command": line}, "working")
                    background.append(asyncio.create_task(_run(kubeconfig, line, impersonate, WATCH_SECONDS)))
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(WATCH_OPEN_SECONDS):
                        await _watch_opened(subscription, student=access.user)
        for fault in solution.faults:
            await run_fault(access=access, fault=fault, say=say, reason=f"the {what} of step {step.id}")
        for manifest in solution.apply:
            await _apply(access, manifest, say)
        for command in commands:
            await _run_command(kubeconfig, command, impersonate, say)
        if background:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(WATCH_END_SECONDS):
                    await asyncio.gather(*background, return_exceptions=True)
    finally:
        with contextlib.suppress(Exception):
            await cancel_and_wait(*background)


async def run_fault(
    *, access: sandboxes.SandboxAccess, fault: FaultAction, say: Say, reason: str
) -> gateway.FaultDone:
    """Apply (or clear) one fault of the catalogue on the student's sandbox, ``access.cluster``, and say
    what happened in the student's words; ``SolutionFailed`` if it could not be done. A fault is the
    lab's doing, not the student's: no credential of theirs is involved, but only their own sandbox."""
    label = fault.label(translation.get_language())
    if sandbox_owner(access.cluster) is None:
        # A fault acts on the whole cluster: in a classroom's shared cluster, everyone's. Only its
        # instructor breaks that one (the dashboard, the presenter's page).
        raise SolutionFailed(
            gettext(
                "%(fault)s: faults act on the whole cluster, so in the classroom's cluster only your "
                "instructor applies them."
            )
            % {"fault": label}
        )
    await say(gettext("%(fault)s…") % {"fault": label}, "working")
    try:
        if fault.clear:
            done = await gateway.clear_fault(
                cluster=access.cluster, fault=fault.spec, reason=reason, actor=access.user
            )
        else:
            done = await gateway.apply_fault(
                cluster=access.cluster, fault=fault.spec, reason=reason, actor=access.user
            )
    except (gateway.FaultRefused, gateway.NotServedHere) as error:
        raise SolutionFailed(
            gettext("%(fault)s: it could not be done: %(why)s") % {"fault": label, "why": error}
        ) from error
    await say(fault_message(label, done.outcome), "done")
    return done


def fault_message(label: str, outcome: str) -> str:
    """What the student is told once a fault was applied or cleared (``gateway.FaultDone.outcome``)."""
    if outcome == "renewed":
        return gettext("%(fault)s: it was already in force; its time starts again.") % {"fault": label}
    if outcome == "under way":
        return gettext("%(fault)s: it is already happening.") % {"fault": label}
    if outcome == "pending":
        return gettext("%(fault)s: it will start in a moment.") % {"fault": label}
    if outcome == "not in force":
        return gettext("%(fault)s: there was nothing to clear.") % {"fault": label}
    return gettext("%(fault)s: done.") % {"fault": label}


async def _watch_opened(subscription: gateway.Subscription, *, student: str) -> None:
    """Return once the student's next watch has opened (a ``watch.opened`` to ``user:<student>``)."""
    me = f"user:{student}"
    async for batch in subscription:
        if any(e.get("type") == "watch.opened" and me in (e.get("to"), e.get("from")) for e in batch.events):
            return


async def _apply(access: sandboxes.SandboxAccess, manifest: SolutionManifest, say: Say) -> None:
    """Apply one manifest of a solution as the form would; one expected to be refused must be."""
    from courses.manifests import services as manifests

    if manifest.refused:
        await say(gettext("Applying a manifest the cluster should refuse…"), "working")
    else:
        await say(gettext("Applying the solution's manifest…"), "working")
    result = await manifests.submit(
        access=access, text=manifest.text, action="apply", field_manager=_username(access)
    )
    if not manifest.refused:
        if not result.ok:
            raise SolutionFailed(
                gettext("The solution's manifest was refused: %(why)s") % {"why": result.summary}
            )
        return
    if result.ok:
        raise SolutionFailed(
            gettext("The solution's manifest should have been refused, but the cluster accepted it: %(why)s")
            % {"why": result.summary}
        )
    if not _refused_by_the_api_server(result):
        raise SolutionFailed(
            gettext("The solution's manifest did not reach the cluster: %(why)s") % {"why": result.summary}
        )
    await say(gettext("Refused, as the lesson expects: %(why)s") % {"why": result.summary}, "working")


def _refused_by_the_api_server(result: SubmitResult) -> bool:
    """Whether the API server answered one of the documents with an error (a Status with a code), rather
    than the text being refused before it was sent or the request never being answered."""
    return any(d.problem is not None and d.problem.code is not None for d in result.documents)


async def _run_command(
    kubeconfig: bytes | None, command: SolutionCommand, impersonate: Sequence[str], say: Say
) -> None:
    """Run one of a solution's commands; one expected to be refused must fail by itself."""
    from courses.console.runner import ExitReason

    if not command.refused:
        await say(gettext("Running %(command)s…") % {"command": command.command}, "working")
        await _run(kubeconfig, command.command, impersonate, COMMAND_SECONDS)
        return
    await say(
        gettext("Running %(command)s, which the cluster should refuse…") % {"command": command.command},
        "working",
    )
    result = await _run(kubeconfig, command.command, impersonate, COMMAND_SECONDS, check=False)
    output = result.output[-500:]
    if result.reason is not ExitReason.EXITED:  # killed (too long, too much output): no refusal
        raise SolutionFailed(
            gettext("%(command)s did not finish (%(reason)s): %(output)s")
            % {"command": command.command, "reason": result.reason.value, "output": output}
        )
    if not result.exit_code:
        raise SolutionFailed(
            gettext("%(command)s should have been refused, but it succeeded: %(output)s")
            % {"command": command.command, "output": output}
        )
    await say(gettext("Refused, as the lesson expects: %(why)s") % {"why": output.strip()}, "working")


async def _run(
    kubeconfig: bytes | None, command: str, impersonate: Sequence[str], seconds: float, *, check: bool = True
) -> RunResult:
    """Run one command of a solution as the console would: through its policy, with its runner.

    With ``check``, a command that fails (a non-zero exit, except for one that follows until stopped)
    fails the solution; without, the caller judges the result. A command the console's policy refuses
    always fails the solution: that is the lab refusing it, not the cluster."""
    from courses.console import policy, runner

    if kubeconfig is None:
        raise SolutionFailed(gettext("The solution needs the console, which is not available here."))
    decision = policy.decide(command, impersonate=impersonate)
    if not isinstance(decision, policy.Allowed):
        raise SolutionFailed(
            gettext("The solution's command was refused: %(why)s") % {"why": decision.message}
        )
    result = await runner.run_once(kubeconfig=kubeconfig, argv=decision.argv, timeout=seconds)
    if check and result.exit_code not in (0, None) and not decision.follows:
        raise SolutionFailed(
            gettext("%(command)s failed: %(output)s") % {"command": command, "output": result.output[-500:]}
        )
    return result


async def build_step(
    *,
    access: sandboxes.SandboxAccess,
    checker_token: str,
    step: Any,
    say: Say,
    user: Any = None,
    impersonate: Sequence[str] = (),
    title: str | None = None,
) -> None:
    """Run ``step``'s solution with its check running, and return once the check passes. ``title``:
    the step's title in the student's language, which the progress messages name it by (its id
    otherwise)."""
    from courses.chapters.runner import StepRunner, Verdict

    passed = asyncio.Event()
    last: list[Verdict] = []

    async def seen(_step: str, verdict: Verdict) -> None:
        last[:] = [verdict]
        if verdict.status == "passed":
            passed.set()

    runner = StepRunner(
        access=access,
        checker_token=checker_token,
        step=step,
        on_verdict=seen,
        language=translation.get_language() or "en",
    )
    await runner.start()
    try:
        name = title or step.id
        await say(gettext("Building step “%(step)s”…") % {"step": name}, "working")
        await run_solution(access=access, step=step, say=say, user=user, impersonate=impersonate)
        try:
            async with asyncio.timeout(BUILD_SECONDS):
                while not passed.is_set():
                    await runner.check_now()
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(2.0):
                            await passed.wait()
        except TimeoutError:
            why = "; ".join(message for _, message in last[0].failures) if last else ""
            if not why:  # the check could not look, or had not settled: say that, not nothing
                why = gettext("the check gave no verdict in %(seconds)d s") % {"seconds": BUILD_SECONDS}
            raise SolutionFailed(
                gettext("The solution of step “%(step)s” did not reach its check: %(why)s")
                % {"step": name, "why": why}
            ) from None
    finally:
        await runner.close()
