"""The step runner: a step's check, run against the student's sandbox while the step is open.

The check itself is a pure evaluator (``courses.engine.checks``): it reads nothing and sends nothing.
This runner is the thin adapter that feeds it, in one task per open step:

- it subscribes to the sandbox's trace *before* anything else, so every event after the step opened
  is offered, once, in order (the evaluator never rescans history);
- it sends the state reads the evaluator asks for through the API server, as the read-only
  ``kubelab:checker`` identity (never as the student: a check must not pass because of a request it
  made itself), and only when a ``store.txn`` wrote a key a read covers, or when the student presses
  "Check" (``check_now``: the same answer, from a fresh look);
- it asks for the verdict after each change and when the stability window ends, and hands it to
  ``on_verdict`` when it changed: passed (latched), pending (holding, not yet for long enough),
  failing with what failed and what was seen, or unknown (the checker could not look: logged for the
  course's authors, never shown as the student's failure).

A step may also ``wait`` for the cluster (its text holds until, say, the nodes are Ready): that check
runs beside the step's own, and each verdict says whether the text is still ``held``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from django.utils import translation

from courses import gateway
from courses.engine.checks.evaluator import Evaluator, Status
from courses.engine.checks.evaluator import Verdict as CheckVerdict
from courses.engine.checks.failures import Failure
from courses.engine.checks.reads import Read, ReadResult
from courses.sandboxes import services as sandboxes
from courses.sandboxes.services import SandboxAccess

logger = logging.getLogger(__name__)

#: How long a read may take before it counts as "could not look" (unknown), and how often a check
#: that waits for nothing but its stability window is asked again.
READ_SECONDS = 5.0
TICK_SECONDS = 0.25
#: How long the runner waits before looking again when its cluster is not there (restarting, waking),
#: doubling up to the most.
RETRY_SECONDS = 0.5
MAX_RETRY_SECONDS = 10.0


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the page is told about the open step: a status, the failures in words, the failing leaves."""

    status: str
    #: ``(leaf id, message)`` of each failing condition, rendered in the active language.
    failures: tuple[tuple[str | None, str], ...] = ()
    failing: frozenset[str] = field(default_factory=frozenset)
    #: Whether the step's text still waits for the cluster (its ``wait`` check does not hold yet).
    held: bool = False
    #: The seq of the event the step's ``timeline.at`` leaf matched last (None: not matched yet), where
    #: the page puts the timeline.
    at: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "failures": [{"leaf": leaf, "message": message} for leaf, message in self.failures],
            "failing": sorted(self.failing),
            "held": self.held,
            "at": self.at,
        }


Said = tuple[tuple[str | None, str], ...]


def render_failures(failures: tuple[Failure, ...]) -> Said:
    """``(leaf id, message)`` of each failure, in the active language."""
    return tuple((f.leaf_id, f.render()) for f in failures)


def page_verdict(
    check: CheckVerdict,
    *,
    held: bool,
    at: int | None = None,
    render: Callable[[tuple[Failure, ...]], Said] = render_failures,
) -> Verdict:
    """The page's verdict for the evaluator's (messages rendered by ``render``: in the active language)."""
    if check.status is Status.PASSED:
        return Verdict("passed", held=held, at=at)
    if check.status is Status.SETTLING:
        return Verdict("pending", held=held, at=at)
    if check.status is Status.UNKNOWN:
        return Verdict("unknown", failing=check.failing_ids, held=held, at=at)
    return Verdict("failing", render(check.failures), check.failing_ids, held=held, at=at)


OnVerdict = Callable[[str, Verdict], Awaitable[None]]


class _Unauthorized(Exception):
    """The checker's token no longer works: the sandbox was made anew."""


class StepRunner:
    """Runs one step's check (and its ``wait``) until closed (see the module's docstring)."""

    def __init__(
        self,
        *,
        access: SandboxAccess,
        checker_token: str,
        step: Any,
        on_verdict: OnVerdict,
        language: str = "en",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.access = access
        #: The student's language: what failing conditions are said in.
        self.language = language
        self.checker_token = checker_token
        self.step = step
        self.on_verdict = on_verdict
        self.clock = clock
        self.check: Evaluator | None = None
        self.wait: Evaluator | None = None
        self._subscription: gateway.Subscription | None = None
        self._task: asyncio.Task[None] | None = None
        self._poke = asyncio.Event()
        self._force = False
        self._last: Verdict | None = None
        #: The failures said last, and their words: the same failures are not rendered again.
        self._said: tuple[tuple[Failure, ...], Said] | None = None

    async def start(self) -> None:
        """Subscribe to the sandbox's trace and start checking: every event from now on counts."""
        self._subscription = gateway.subscribe_trace(cluster=self.access.cluster)
        student, namespace = self.access.user, self.access.namespace
        self.check = self.step.check.evaluator(student=student, since_seq=0, namespace=namespace)
        if self.step.wait is not None:
            self.wait = self.step.wait.evaluator(student=student, since_seq=0, namespace=namespace)
        self._task = asyncio.create_task(self._run(), name=f"check-{self.access.cluster}-{self.step.id}")

    async def check_now(self) -> None:
        """Look at the cluster again now and say the verdict, changed or not (the "Check" button)."""
        for evaluator in self._evaluators():
            evaluator.refresh()
        self._force = True
        self._poke.set()

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
            except Exception:
                logger.exception(
                    "check of step %s on %s ended with an error", self.step.id, self.access.cluster
                )
        if self._subscription is not None:
            self._subscription.close()
            self._subscription = None

    @property
    def done(self) -> bool:
        """Whether it stopped checking: the step passed (or it was closed)."""
        return self._task is None or self._task.done()

    def _evaluators(self) -> list[Evaluator]:
        return [e for e in (self.check, self.wait) if e is not None]

    # -- the loop ------------------------------------------------------------------------------------

    async def _run(self) -> None:
        """Check until the step passes (then stop: a pass is latched), through whatever happens to the
        sandbox meanwhile: a cluster that is restarting or waking is waited for, never a crash."""
        delay = RETRY_SECONDS
        while True:
            try:
                async with gateway.api_client(
                    cluster=self.access.cluster, token=self.checker_token, read_timeout=READ_SECONDS
                ) as client:
                    if await self._check(client):
                        return
            except (gateway.NotRunning, gateway.NotServedHere) as error:
                logger.info("check of %s waits for its cluster: %s", self.access.cluster, error)
            except _Unauthorized:
                # The sandbox was made anew (a reset, "start here" in another tab): new identities.
                logger.info("check of %s takes the checker's new token", self.access.cluster)
                self.checker_token = await sandboxes.checker_token(cluster=self.access.cluster)
                for evaluator in self._evaluators():
                    evaluator.refresh()
                continue
            except Exception:
                logger.exception(
                    "check of step %s on %s failed; trying again", self.step.id, self.access.cluster
                )
            await asyncio.sleep(delay)
            delay = min(delay * 2, MAX_RETRY_SECONDS)

    async def _check(self, client: httpx.AsyncClient) -> bool:
        """Feed the evaluators until the check passes (True) or the trace ends (False)."""
        assert self._subscription is not None
        subscription = self._subscription
        batches: asyncio.Future[Any] | None = None
        poked: asyncio.Future[Any] | None = None
        try:
            while True:
                if await self._read(client):
                    raise _Unauthorized
                if await self._tell():
                    return True
                if batches is None:
                    batches = asyncio.ensure_future(subscription.next_batch())
                poked = asyncio.ensure_future(self._poke.wait())
                done, _ = await asyncio.wait(
                    {batches, poked}, timeout=self._timeout(), return_when=asyncio.FIRST_COMPLETED
                )
                poked.cancel()
                poked = None
                self._poke.clear()
                if batches in done:
                    batch, batches = batches.result(), None
                    if batch is None:  # the trace ended: the cluster stopped
                        return False
                    self._offer(batch)
        finally:
            # Cancelled while waiting (the step closed): neither wait may outlive the runner.
            for waiting in (batches, poked):
                if waiting is not None:
                    waiting.cancel()

    def _offer(self, batch: Any) -> None:
        for evaluator in self._evaluators():
            evaluator.offer_all(batch.events)
            if batch.missed is not None:
                evaluator.missed(*batch.missed)

    def _timeout(self) -> float | None:
        """Until the next look without news: while a check settles, soon; else only on news."""
        assert self.check is not None
        settling = self.check.verdict(self.clock()).status is Status.SETTLING
        if self.wait is not None and self.wait.verdict(self.clock()).status is Status.SETTLING:
            settling = True
        return TICK_SECONDS if settling else None

    async def _read(self, client: httpx.AsyncClient) -> bool:
        """Send the reads the evaluators want and give them the answers; whether any was 401."""
        unauthorized = False
        for evaluator in self._evaluators():
            reads = evaluator.reads()
            if reads:
                results = await asyncio.gather(*(self._get(client, read) for read in reads))
                for read, result in zip(reads, results, strict=True):
                    evaluator.give(read, result)
                    unauthorized = unauthorized or result.status == 401
        return unauthorized

    async def _get(self, client: httpx.AsyncClient, read: Read) -> ReadResult:
        try:
            response = await client.request(read.method, read.url)
        except httpx.HTTPError as error:
            logger.warning("check of %s could not read %s: %s", self.access.cluster, read.url, error)
            return ReadResult.timed_out()
        if response.status_code == 200:
            try:
                return ReadResult.ok(response.json())
            except ValueError:
                return ReadResult.error(500, "the API server's answer was not JSON")
        if response.status_code == 404:
            return ReadResult.not_found()
        message = ""
        with contextlib.suppress(ValueError):
            message = str(response.json().get("message", ""))
        logger.warning(
            "check of %s read %s: %s %s", self.access.cluster, read.url, response.status_code, message
        )
        return ReadResult.error(response.status_code, message)

    def _moment(self) -> int | None:
        """The last event of the match of the step's ``timeline.at`` leaf, once it matched."""
        leaf = self.step.timeline.at if self.step.timeline is not None else None
        if leaf is None:
            return None
        for evaluator in self._evaluators():
            try:
                matched = evaluator.matched(leaf)
            except KeyError:  # the leaf is the other check's (``wait`` or ``check``)
                continue
            return matched.last_seq if matched is not None else None
        return None

    def _render(self, failures: tuple[Failure, ...]) -> Said:
        """The failures in the student's language. A check is asked for its verdict after every
        batch of its sandbox's events, and fails the same way most of the time: the words of the
        same failures as last time are not made again."""
        if self._said is None or self._said[0] != failures:
            with translation.override(self.language):
                self._said = (failures, render_failures(failures))
        return self._said[1]

    async def _tell(self) -> bool:
        """Hand the verdict on if it changed (or the student asked); whether the check passed."""
        assert self.check is not None
        now = self.clock()
        held = self.wait is not None and not self.wait.verdict(now).passed
        seen = self.check.verdict(now)
        if seen.status is Status.UNKNOWN:
            for unknown in seen.unknowns:
                if unknown.code != "unknown.not_read":
                    logger.info(
                        "check of step %s on %s is unknown: %s",
                        self.step.id,
                        self.access.cluster,
                        unknown.render(),
                    )
        verdict = page_verdict(seen, held=held, at=self._moment(), render=self._render)
        if verdict != self._last or self._force:
            self._last, self._force = verdict, False
            try:
                await self.on_verdict(self.step.id, verdict)
            except Exception:  # recording it failed: said again on the next change or "Check"
                logger.exception(
                    "the verdict of step %s on %s was not taken", self.step.id, self.access.cluster
                )
                self._last = None
                return False
        return verdict.status == "passed"
