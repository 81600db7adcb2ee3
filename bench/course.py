"""A class on the course: the manifest form under load, checks, sandboxes starting, sleeping, waking.

What a class of students does to one lab, against the issue's targets on a 2-core machine. Three
settings, each described in full below: the checks' evaluator alone in this process; a lab in this
process for hibernation (``bench._coursesleep``); and a real ``manage.py runlab`` (``bench._courselab``)
that students drive from outside, as browsers do, for everything else.

Lines, in the order they are printed
------------------------------------

``check.eval_us_per_event`` (target ``<= 20`` µs)
    ``courses.engine.checks.benchmark.bench_offer``: one active check as heavy as a chapter's (chapter
    2's six-step trace sequence tied by ``same_request``, a second trace leaf, a state leaf) offered a
    busy sandbox's trace (``--events`` events: lease renewals, their watch events, reconciles, and a
    student's create that starts a partial match never completed), timed per event. Run ``--check-rounds``
    times; the value is the median round, each round's figure beside it. Pure CPU in this process.

``sandbox.hibernated_rss_mb`` (target ``<= 1`` MB), ``sandbox.hibernated_heap_kib`` (information),
``sandbox.wake_p95_s`` (target ``<= 1`` s), ``sandbox.ready_quiet_lab_p95_s`` (information)
    A lab in this process with no demo cluster; see ``bench/_coursesleep.py`` for the method. In
    short: one warm-up sandbox made and hibernated; RSS read; ``--sandboxes`` N sandboxes made (each
    with a ConfigMap, a Secret and a Deployment of three available replicas), run together,
    hibernated, memory released as ``runlab``'s reaper releases it; RSS read again. The value is
    ``(RSS after - RSS before) / N``: what hibernated sandboxes cost the machine, the allocator's
    leftovers included. The line also gives the RSS with the N running (and per running sandbox),
    the RSS after each of N more made, run and hibernated one at a time (and what each of those added
    once the allocator reuses freed memory), the RSS after the wake rounds, and the RSS once the N
    are deleted (``held_mb_per_sandbox``: what deleting them gave back, per sandbox: what they held
    themselves; the rest is the process's high-water mark, which deleting does not give back).
    Python rarely returns memory to the system, so the heap is measured as well, with ``tracemalloc`` on
    ``--heap-sandboxes`` M further sandboxes: the objects a hibernated sandbox still holds, per
    sandbox, with the files that allocated them. The target is on the RSS of the N hibernated
    together, the machine's cost and the most conservative figure; the others say how much of it is
    reusable free memory and how much objects kept on purpose.
    Wake: each hibernated sandbox is woken by a GET of its ConfigMaps through the router the API port
    serves (``ClusterAPIRouter``, in-process: kubectl's path without TLS), timed to the answer, which
    must list the ConfigMap made before it slept; then hibernated again; ``--wake-rounds`` rounds, one
    sandbox awake at a time. The quiet lab's sandbox start (information) is each of the 2N timed from
    ``Lab.ensure_cluster`` to readyz ``ok`` with three Ready nodes, without the sandbox service's set-up.

``page.chapter_quiet_lab_p95_ms`` (information)
    The chapter page in the live lab before any sandbox runs (the demo cluster only), timed as
    ``page.chapter_p95_ms`` below: the page's own cost, for comparison with the class's.

``sandbox.ready_p95_s`` (target ``<= 3`` s)
    In the live lab: what a student waits for on their first chapter page. Each of ``--students``
    students, signed up through the form, opens the chapter ``control-plane/one-hub``: its socket
    (``ws/course/.../steps/``, which starts the sandbox through ``ensure_sandbox`` and says ``ready``
    once its API server serves) and, at the same moment, the kubeconfig download (which shares that
    start and returns the student's token). Timed from opening the page until the sandbox's
    ``/readyz`` answers ``ok`` and ``/api/v1/nodes`` shows three Ready nodes, asked every 50 ms as the
    student through the web port. Students arrive one after another, so the k-th sandbox starts
    while k-1 others run: the line gives the first and the last start beside the percentiles, and the
    socket's own ``ready`` p95 (null when the lab has no chapter socket: then the download alone
    starts the sandbox). Also: the lab's RSS once all run, and ``idle_server_cores``, the lab's CPU
    over ``--idle-seconds`` after the last start with nobody doing anything: what the running
    sandboxes cost by themselves (the lab is one process: about one core is all it can use).

``form.round_trip_p95_ms`` (target ``<= 150`` ms) and ``form.errors`` (target ``== 0``)
    In the live lab, once every student's sandbox runs: each student submits a three-document
    manifest (a ConfigMap, a Secret and a Service, one value changed each time so that every apply
    writes) to ``POST /manifests/submit/`` with ``action=apply``, as htmx does (``HX-Request``, the
    CSRF header, their session cookie, a connection of their own), every ``--period`` s for
    ``--duration`` s, the students' first submissions spread evenly over the first period. A student
    never has two submissions in flight: when an answer comes after the next slot, the next submission
    goes at once (counted as ``late``) and the slots that passed beyond it are ``skipped``, not sent
    later; nothing is sent after the window. The round trip is from sending the request to the last
    byte of the answer, measured in this process. An error is a transport failure (no answer within
    30 s is one), an HTTP status other than 200, or a result fragment whose ``data-outcome`` is not
    ``ok`` (the form answers 200 with the problem in words).

    The form lives on the chapter page, so during the window each student's page is held open as a
    browser holds it: the chapter socket with step ``watch-a-change`` opened (its check, which the
    benchmark's manifests never satisfy, evaluates every event of the sandbox's trace the whole time)
    and the live diagram's trace socket, subscribed as the topology subscribes, every frame read.
    ``--closed-pages`` measures the form alone, with no page open (then a sandbox traces only while
    a submission runs).

    The line gives the submissions made, the documents' states (created, configured, unchanged: an
    ``unchanged`` means an apply did not write), what the open pages received (trace events and
    frames, the step socket's messages, any socket that did not open or closed), the CPU over the
    window in cores: the lab's (``server_cores``), this process's (``bench_cores``) and the rest of the
    machine's (``other_cores``), and the lab's RSS at its end.

``page.chapter_p95_ms`` (target ``<= 50`` ms)
    In the live lab, after the form's load (the pages closed), with every student's sandbox still
    running: one student GETs ``/learn/control-plane/one-hub/`` ``--pages`` times in a row over one
    kept-alive connection (after two unmeasured GETs), or as many as fit in ``--page-seconds`` (at
    least five). Timed from the request to its last byte over loopback: the server's time (daphne,
    Django's middleware, the view, its template, the progress it records) plus well under a
    millisecond of loopback and HTTP parsing, so an upper bound of the server time. The lab's CPU over
    the loads is on the line.

Caveats: the lab, this load generator and whatever else runs share the machine; the form's lines say
how much CPU each took. Sign-ups (the password hash is slow on purpose) and the sandboxes' starts
happen before the form's window and are not in it. The students' sandboxes keep running through the
window (the lab's idle timeout is set to an hour, so none hibernates under the benchmark).

``--keep`` keeps the live lab's data directory and ``runlab.log``. ``--quick`` (CI): 5 students
for 12 s, a check of 20,000 events, 3 + 2 sandboxes in process and 2 wake rounds, 40 page loads
(at most 15 s) each time: every line, in about a minute and a half.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import math
import os
import statistics
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import _coursesleep
from bench._courselab import (
    CHAPTER,
    COURSE,
    STEP,
    LabFailed,
    OpenPage,
    RunLab,
    SandboxStart,
    Student,
    Submitted,
    manifest,
    open_page,
    sign_up,
)
from bench.api import lab_directory
from bench.report import Reporter
from bench.stats import percentile
from bench.ui import machine_cpu

FORM_TARGET = "<= 150"
ERRORS_TARGET = "== 0"
CHECK_TARGET = "<= 20"
READY_TARGET = "<= 3"
WAKE_TARGET = "<= 1"
HIBERNATED_TARGET = "<= 1"
PAGE_TARGET = "<= 50"

CHAPTER_PATH = f"/learn/{COURSE}/{CHAPTER}/"
#: Errors quoted on the ``form.errors`` line (they are all counted).
QUOTED_ERRORS = 5
#: Chapter page loads timed even when their time budget has run out.
MIN_PAGES = 5

SLEEP_METRICS = (
    ("sandbox.hibernated_rss_mb", "MB", HIBERNATED_TARGET),
    ("sandbox.hibernated_heap_kib", "KiB", None),
    ("sandbox.wake_p95_s", "s", WAKE_TARGET),
    ("sandbox.ready_quiet_lab_p95_s", "s", None),
)
LIVE_METRICS = (
    ("page.chapter_quiet_lab_p95_ms", "ms", None),
    ("sandbox.ready_p95_s", "s", READY_TARGET),
    ("form.round_trip_p95_ms", "ms", FORM_TARGET),
    ("form.errors", "count", ERRORS_TARGET),
    ("page.chapter_p95_ms", "ms", PAGE_TARGET),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("course")
    group.add_argument("--students", type=int, help="students in the live lab (50; --quick 5)")
    group.add_argument("--duration", type=float, help="seconds of the form's load (60; --quick 12)")
    group.add_argument(
        "--period", type=float, default=2.0, help="seconds between a student's submissions (2)"
    )
    group.add_argument("--events", type=int, help="trace events per check round (100000; --quick 20000)")
    group.add_argument("--check-rounds", type=int, default=5, help="rounds of the check's evaluation (5)")
    group.add_argument(
        "--sandboxes", type=int, help="sandboxes hibernated for the RSS figure (10; --quick 3)"
    )
    group.add_argument(
        "--heap-sandboxes", type=int, help="sandboxes for the tracemalloc figure (5; --quick 2)"
    )
    group.add_argument("--wake-rounds", type=int, help="times each sandbox is woken (2; --quick 2)")
    group.add_argument("--pages", type=int, help="chapter page loads timed (200; --quick 40)")
    group.add_argument(
        "--page-seconds", type=float, help="time budget of the page loads, each time (60; --quick 15)"
    )
    group.add_argument(
        "--closed-pages",
        action="store_true",
        help="submit the form with no chapter page open (no step check, no diagram): the form alone",
    )
    group.add_argument("--idle-seconds", type=float, help="the live lab's CPU read idle (10; --quick 2)")
    group.add_argument("--dir", type=Path, help="where the labs' data go (the system temp dir)")
    group.add_argument("--keep", action="store_true", help="keep the live lab's data and log afterwards")


@dataclass(frozen=True, slots=True)
class Settings:
    """The run's sizes: the options given, else the full or the quick run's."""

    students: int
    duration: float
    period: float
    events: int
    check_rounds: int
    sandboxes: int
    heap_sandboxes: int
    wake_rounds: int
    pages: int
    page_seconds: float
    open_pages: bool
    idle_seconds: float
    directory: Path | None
    keep: bool

    @classmethod
    def from_options(cls, options: argparse.Namespace) -> Settings:
        quick = bool(options.quick)

        def pick(value: Any, full: Any, fast: Any) -> Any:
            return value if value is not None else (fast if quick else full)

        return cls(
            students=max(1, pick(options.students, 50, 5)),
            duration=pick(options.duration, 60.0, 12.0),
            period=options.period,
            events=pick(options.events, 100_000, 20_000),
            check_rounds=max(1, options.check_rounds),
            sandboxes=max(1, pick(options.sandboxes, 10, 3)),
            heap_sandboxes=pick(options.heap_sandboxes, 5, 2),
            wake_rounds=max(1, pick(options.wake_rounds, 2, 2)),
            pages=max(1, pick(options.pages, 200, 40)),
            page_seconds=pick(options.page_seconds, 60.0, 15.0),
            open_pages=not options.closed_pages,
            idle_seconds=pick(options.idle_seconds, 10.0, 2.0),
            directory=options.dir,
            keep=bool(options.keep),
        )


async def run(options: argparse.Namespace, reporter: Reporter) -> None:
    settings = Settings.from_options(options)
    if reporter.wants("check"):
        measure_check(reporter, settings)
    if any(reporter.wants(metric) for metric, _, _ in SLEEP_METRICS):
        await measure_sleep(reporter, settings)
    if any(reporter.wants(metric) for metric, _, _ in LIVE_METRICS):
        await measure_live(reporter, settings)


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def _p(samples: list[float], q: float, digits: int = 3) -> float:
    return round(percentile(samples, q), digits)


# -- the check's evaluation ----------------------------------------------------------------------------


def measure_check(reporter: Reporter, settings: Settings) -> None:
    try:
        # Imported here, so that a check module that fails to import is this line's error, not the run's.
        from courses.engine.checks.benchmark import bench_offer

        rounds = [bench_offer(settings.events) for _ in range(settings.check_rounds)]
    except Exception as error:
        reporter.error("check.eval_us_per_event", "us", error, target=CHECK_TARGET)
        return
    reporter.emit(
        "check.eval_us_per_event",
        statistics.median(rounds),
        "us",
        target=CHECK_TARGET,
        events=settings.events,
        rounds_us=[round(r, 3) for r in rounds],  # to the value's precision (rounding keeps the order)
        checks=1,
    )


# -- hibernation, in this process -----------------------------------------------------------------------


@contextmanager
def _quiet_controlplane() -> Iterator[None]:
    """The in-process lab's warnings (a controller's retried conflict) are its business, not the
    benchmark's output."""
    logger = logging.getLogger("controlplane")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


async def measure_sleep(reporter: Reporter, settings: Settings) -> None:
    try:
        with _quiet_controlplane():
            result = await _coursesleep.measure(
                settings.directory,
                sandboxes=settings.sandboxes,
                heap_sandboxes=settings.heap_sandboxes,
                wake_rounds=settings.wake_rounds,
            )
    except Exception as error:
        for metric, unit, target in SLEEP_METRICS:
            reporter.error(metric, unit, error, target=target)
        return
    report_sleep(reporter, result)


def report_sleep(reporter: Reporter, result: _coursesleep.SleepResult) -> None:
    hibernated = result.per_sandbox_mb(result.rss_hibernated_mb)
    running = result.per_sandbox_mb(result.rss_running_mb)
    memory: dict[str, Any] = {
        "sandboxes": result.sandboxes,
        "rss_empty_mb": _round(result.rss_empty_mb, 2),
        "rss_running_mb": _round(result.rss_running_mb, 2),
        "rss_hibernated_mb": _round(result.rss_hibernated_mb, 2),
        "rss_after_wakes_mb": _round(result.rss_after_wakes_mb, 2),
        "rss_after_deleting_mb": _round(result.rss_after_deleting_mb, 2),
        "held_mb_per_sandbox": _round(result.held_mb(), 2),
        "running_mb_per_sandbox": _round(running, 2),
        "rss_one_at_a_time_mb": [_round(r, 2) for r in result.rss_one_at_a_time_mb],
        "one_at_a_time_mb_per_sandbox": _round(result.one_at_a_time_mb(), 2),
        "heap_kib_per_sandbox": _round(_kib(result.heap_retained_bytes), 1),
    }
    if result.unsettled:
        memory["unsettled"] = result.unsettled
    if hibernated is None:
        reporter.error("sandbox.hibernated_rss_mb", "MB", "RSS could not be read", target=HIBERNATED_TARGET)
    else:
        reporter.emit("sandbox.hibernated_rss_mb", hibernated, "MB", target=HIBERNATED_TARGET, **memory)

    heap: dict[str, Any] = {"sandboxes": result.heap_sandboxes, "top_files_kib": dict(result.heap_top)}
    if result.heap_retained_bytes is None:
        reporter.error("sandbox.hibernated_heap_kib", "KiB", "no sandboxes were traced (--heap-sandboxes 0)")
    else:
        reporter.emit("sandbox.hibernated_heap_kib", _kib(result.heap_retained_bytes), "KiB", **heap)

    wake: dict[str, Any] = {"wakes": len(result.wake_s), "errors": len(result.wake_errors)}
    if result.wake_errors:
        wake["error"] = "; ".join(result.wake_errors[:QUOTED_ERRORS])
    if result.wake_s:
        wake |= {"p50_s": _p(result.wake_s, 50), "max_s": round(max(result.wake_s), 3)}
        reporter.emit("sandbox.wake_p95_s", percentile(result.wake_s, 95), "s", target=WAKE_TARGET, **wake)
    else:
        reporter.error("sandbox.wake_p95_s", "s", "no wake was measured", target=WAKE_TARGET)

    if result.ready_s:
        reporter.emit(
            "sandbox.ready_quiet_lab_p95_s",
            percentile(result.ready_s, 95),
            "s",
            sandboxes=len(result.ready_s),
            p50_s=_p(result.ready_s, 50),
            max_s=round(max(result.ready_s), 3),
        )
    else:
        reporter.error("sandbox.ready_quiet_lab_p95_s", "s", "no sandbox was made")


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def _kib(value: int | None) -> float | None:
    return None if value is None else value / 1024


# -- the live lab ----------------------------------------------------------------------------------------


class CPUWindow:
    """The lab's, this process's and the rest of the machine's CPU over a window, in cores."""

    def __init__(self, lab: RunLab) -> None:
        self.lab = lab
        self.wall = time.perf_counter()
        self.server = lab.cpu()
        self.bench = time.process_time()
        self.machine = machine_cpu()

    def shares(self) -> dict[str, Any]:
        seconds = time.perf_counter() - self.wall
        server_now, machine_now = self.lab.cpu(), machine_cpu()
        bench = (time.process_time() - self.bench) / seconds
        server = None if server_now is None or self.server is None else (server_now - self.server) / seconds
        others = None
        if machine_now is not None and self.machine is not None and server is not None:
            others = max(0.0, (machine_now - self.machine) / seconds - server - bench)
        return {
            "server_cores": _round(server, 2),
            "bench_cores": round(bench, 2),
            "other_cores": _round(others, 2),
            "machine_cores": os.cpu_count() or 1,
            "load_average": round(os.getloadavg()[0], 2),
        }


async def measure_live(reporter: Reporter, settings: Settings) -> None:
    try:
        with lab_directory(settings, "course") as tmp:
            # An hour's idle timeout: no student's sandbox hibernates under the benchmark.
            lab = RunLab(tmp / "data", KUBELAB_SANDBOX_IDLE_SECONDS="3600")
            try:
                await _live(reporter, settings, lab)
            finally:
                await asyncio.to_thread(lab.stop)
    except Exception as error:
        problem = f"{type(error).__name__}: {error}"
        reported = {result.metric for result in reporter.results}
        for metric, unit, target in LIVE_METRICS:
            if metric not in reported:
                reporter.error(metric, unit, problem, target=target)


async def _live(reporter: Reporter, settings: Settings, lab: RunLab) -> None:
    students: list[Student] = []
    try:
        await asyncio.to_thread(lab.start)
        for i in range(settings.students):
            students.append(await sign_up(lab.base, f"student{i + 1:02d}"))
        if reporter.wants("page"):
            await measure_page(reporter, settings, lab, students[0], quiet=True, sandboxes=0)
        window = CPUWindow(lab)
        starts = [await student.open_sandbox() for student in students]
        cpu = window.shares()
        # What the running sandboxes cost the lab while nobody does anything.
        idle = CPUWindow(lab)
        await asyncio.sleep(settings.idle_seconds)
        cpu["idle_server_cores"] = idle.shares()["server_cores"]
        report_ready(reporter, starts, lab, cpu)
        if reporter.wants("form"):
            async with contextlib.AsyncExitStack() as stack:
                pages = []
                if settings.open_pages:
                    pages = [await stack.enter_async_context(open_page(s, step=STEP)) for s in students]
                window = CPUWindow(lab)
                run = await form_load(students, settings)
                cpu = window.shares()
            cpu["lab_rss_mb"] = _round(lab.rss_mb(), 1)
            report_form(reporter, settings, run, {**cpu, **pages_seen(pages)})
        if reporter.wants("page"):
            await measure_page(reporter, settings, lab, students[0], quiet=False, sandboxes=len(starts))
    except Exception as error:
        if lab.process is not None and lab.process.poll() is not None:
            raise LabFailed(f"{type(error).__name__}: {error}; the lab exited: {lab.log_tail(3)}") from error
        raise
    finally:
        for student in students:
            await student.client.aclose()


def report_ready(reporter: Reporter, starts: list[SandboxStart], lab: RunLab, cpu: dict[str, Any]) -> None:
    ready = [s.ready_s for s in starts]
    socket = [s.socket_ready_s for s in starts if s.socket_ready_s is not None]
    reporter.emit(
        "sandbox.ready_p95_s",
        percentile(ready, 95),
        "s",
        target=READY_TARGET,
        sandboxes=len(starts),
        p50_s=_p(ready, 50),
        max_s=round(max(ready), 3),
        first_s=round(ready[0], 3),
        last_s=round(ready[-1], 3),
        socket_ready_p95_s=_p(socket, 95) if socket else None,
        via="chapter socket + kubeconfig"
        if socket
        else "kubeconfig download (no chapter socket in this lab)",
        lab_rss_mb=_round(lab.rss_mb(), 1),
        **cpu,
    )


@dataclass(slots=True)
class FormRun:
    """The form's window: every submission made, and the student's slots that went otherwise."""

    submitted: list[Submitted] = field(default_factory=list)
    #: Submissions sent after their slot, because the student's previous one answered after it.
    late: int = 0
    #: Slots that passed in full while a student still waited for an answer: never sent.
    skipped: int = 0


async def form_load(students: list[Student], settings: Settings) -> FormRun:
    """Every student submitting in slots ``period`` s apart for ``duration`` s, the students' first
    slots spread over the first period. A student waits for each answer: if it comes after the next
    slot, the next submission goes at once (``late``) and any further slot that also passed is
    ``skipped``, as a person would not send a backlog. Nothing is sent after the window."""
    loop = asyncio.get_running_loop()
    start = loop.time() + 0.5
    run = FormRun()

    async def student_loop(index: int, student: Student) -> None:
        offset = settings.period * index / len(students)
        slots = math.ceil((settings.duration - offset) / settings.period - 1e-9)
        slot = 0
        while slot < slots:
            due = start + offset + slot * settings.period
            now = loop.time()
            if now < due:
                await asyncio.sleep(due - now)
            elif now - due > 0.01:
                run.late += 1
            student.rounds += 1
            text = manifest(student=student.username, round=student.rounds)
            run.submitted.append(await student.submit(text))
            slot += 1
            # Slots that passed in full while the answer was awaited: skipped (the next goes late).
            passed = math.floor((loop.time() - start - offset) / settings.period)
            skip = max(0, min(passed, slots) - slot)
            run.skipped += skip
            slot += skip

    await asyncio.gather(*(student_loop(i, s) for i, s in enumerate(students)))
    return run


def report_form(reporter: Reporter, settings: Settings, run: FormRun, cpu: dict[str, Any]) -> None:
    submitted = run.submitted
    if not submitted:
        for metric, unit, target in LIVE_METRICS[2:4]:
            reporter.error(metric, unit, "no submission was made", target=target)
        return
    times = [s.seconds for s in submitted]
    states = Counter(state for s in submitted for state in s.states)
    errors = [s.error for s in submitted if s.error is not None]
    common = {
        "students": settings.students,
        "seconds": settings.duration,
        "period_s": settings.period,
        "submissions": len(submitted),
    }
    reporter.emit(
        "form.round_trip_p95_ms",
        percentile(times, 95) * 1000,
        "ms",
        target=FORM_TARGET,
        **common,
        p50_ms=_ms(percentile(times, 50)),
        p99_ms=_ms(percentile(times, 99)),
        max_ms=_ms(max(times)),
        late=run.late,
        skipped=run.skipped,
        documents=dict(states),
        **cpu,
    )
    kinds = Counter(error.split(":", 1)[0] for error in errors)
    reporter.emit(
        "form.errors",
        len(errors),
        "count",
        target=ERRORS_TARGET,
        **common,
        kinds=dict(kinds),
        examples=list(dict.fromkeys(errors))[:QUOTED_ERRORS],
    )


def pages_seen(pages: list[OpenPage]) -> dict[str, Any]:
    """What the open chapter pages received during the window (nothing to say with none open)."""
    seen: dict[str, Any] = {"pages_open": sum(p.opened for p in pages)}
    if pages:
        seen["pages_not_opened"] = sum(not p.opened for p in pages)
        seen |= {
            "trace_events": sum(p.trace_events for p in pages),
            "trace_frames": sum(p.trace_frames for p in pages),
            "step_messages": sum(p.step_messages for p in pages),
        }
        problems = [p.problem for p in pages if p.problem is not None]
        if problems:
            seen["page_problems"] = list(dict.fromkeys(problems))[:QUOTED_ERRORS]
    return seen


async def measure_page(
    reporter: Reporter, settings: Settings, lab: RunLab, student: Student, *, quiet: bool, sandboxes: int
) -> None:
    window = CPUWindow(lab)
    loads = await chapter_loads(student, settings.pages, budget=settings.page_seconds)
    metric = "page.chapter_quiet_lab_p95_ms" if quiet else "page.chapter_p95_ms"
    report_page(reporter, metric, loads, sandboxes, window.shares())


async def chapter_loads(student: Student, pages: int, *, budget: float) -> list[tuple[float, int]]:
    """``pages`` timed GETs of the chapter page (after two that are not), and their statuses; fewer
    if ``budget`` seconds run out first (at least five)."""
    for _ in range(2):
        await student.client.get(CHAPTER_PATH)
    loads: list[tuple[float, int]] = []
    deadline = time.perf_counter() + budget
    while len(loads) < pages and (len(loads) < MIN_PAGES or time.perf_counter() < deadline):
        started = time.perf_counter()
        response = await student.client.get(CHAPTER_PATH)
        loads.append((time.perf_counter() - started, response.status_code))
    return loads


def report_page(
    reporter: Reporter, metric: str, loads: list[tuple[float, int]], sandboxes: int, cpu: dict[str, Any]
) -> None:
    times = [seconds for seconds, _ in loads]
    statuses = Counter(status for _, status in loads)
    extra: dict[str, Any] = {
        "requests": len(loads),
        "p50_ms": _ms(percentile(times, 50)),
        "max_ms": _ms(max(times)),
        "statuses": {str(k): v for k, v in statuses.items()},
        "sandboxes_running": sandboxes,
        **cpu,
    }
    if set(statuses) != {200}:
        extra["error"] = f"the chapter page answered {dict(statuses)}"
    target = PAGE_TARGET if metric == "page.chapter_p95_ms" else None
    reporter.emit(metric, percentile(times, 95) * 1000, "ms", target=target, **extra)
