"""The topology page: how far it lags behind live, and its frame handler, dropped frames and heap under load.

The issue asks two things of the page:

- *Lag behind live*: "with a classroom cluster idling and a student creating and scaling a
  Deployment, the p95 delay from an event's emission to its drawing at 1x is <= 1 s, with the
  student's events all drawn" (docs/topology.md, "Live means live").
- *Under load*: at 2000 events/s into one open page for 10 minutes, time spent in the page's frame
  handler p95 <= 8 ms per frame, dropped frames <= 1 %, JS heap growth <= 20 MB.

**Setup.** One daphne process started the way ``manage.py runlab`` starts it (``bench._uiserve``: it is
runlab, plus a switch for a trace driver and a window on the trace recorder) on free loopback ports,
in a temporary data directory, with the demo cluster running as ``runlab`` runs it: the classroom
timing profile, its three simulated nodes and every component (scheduler, controller manager,
kubelets, kube-proxies) in the process, serving the API port over HTTPS. Debian's Chromium, headless,
driven by Playwright (as the browser tests do). The two measurements run one after the other, each on
a page of its own (a fresh browser context, closed at its end), lag first.

Lag behind live
---------------

The page ``/lab/demo/?perf=1`` (1400x1000, animation on, speed 1x, background traffic folded: the
page's defaults) is opened, and the benchmark waits until its stream is live, it has drawn the
cluster's state (the kubelets' boxes are there) and nothing waits in its timeline. The **trace driver
is not switched on**: every event is the cluster's own. The benchmark then evaluates its probe in the
page (``bench._uilag.PROBE``: it wraps ``window.kubelabTopology.timeline.sinks``' ``play``, ``skip``
and ``kind`` to note, by seq, each event the timeline animated, applied at once, or took for a
person's own; the page's code is unchanged), resets the page's stopwatch, and reads the cluster's last
seq: the window starts at the next one. The cluster idles for ``--idle`` s, then a **student** acts
with the real kubectl (``.venv/bin/kubectl``) over the API port, as user ``student`` in group
``system:masters`` (a kubeconfig from ``manage.py kubeconfig``; the diagram draws its requests as
coming from ``user:student``):
``kubectl create deployment web --image=nginx --replicas=3``, then ``kubectl scale`` to 6, then to 2,
then ``kubectl delete deployment web``. After each command the student watches the page until it shows
what was asked (3, then 6 Running pods of ``web``; 2 and nothing else; none), then looks for a second
(3 s in a full run) before the next. The window ends there: the benchmark reads every event of the
window, with its ``ts``, from the cluster's **trace recorder** (``GET /bench/events``, served by
``bench._uiserve`` on the lab's loop, not from the page's ``model.events``, which keeps only the last
5000 and only what arrived), waits (at most 10 s) until the page has drawn the last of them, and reads
from the page when it drew each (``__kubelabPerf.drawnSince``: the wall-clock time of the ``perf.drawn``
call the timeline makes for every event it animates or applies at once).

``ui.lag.p95_ms``
    For every event of the window the page drew: ``drawnAt - 1000 * ts``, its delay from emission (the
    cluster clock's ``ts``; timing profiles shorten durations, not the clock, so ``ts`` is wall-clock
    time) to its drawing; p95 over all of them (exact, not bucketed), with p50, p99, max and how many
    were over 1 s. Also: the student's own events' p95 and max, the page's own arrival-to-drawing p95
    (``summary().timings.lag``: what the timeline added, the rest being the server's framing and the
    socket), each clock's offset from the system's (the cluster clock, ``performance.timeOrigin +
    now()``; both should be about 0), and ``steps``: for the idle period and each command, when it
    began, how long kubectl took, after how long the page showed its pods, its events' p95 and max, and
    the student's requests in it (``"GET /apis/apps/v1"``...). Target ``<= 1000`` ms.
``ui.lag.own_events_animated``
    The student's own events: those carrying the Audit-ID (``id``) of a request whose
    ``request.received`` came from ``user:student`` (every stage, flow-control, RBAC and admission
    step, store write and watch event of kubectl's requests), as the recorder holds them. Value:
    the fraction of them the timeline **animated** (played through ``sinks.play``; applied at once
    does not count), with how many were emitted, animated, drawn at all and taken for ``own`` by the
    page, and the types of any not animated. Target ``>= 1`` (all of them).
``ui.lag.events_drawn``
    For information: events the page drew in the window, with how many were emitted, animated,
    folded as background traffic, applied at once to keep up, summarised by the server instead of
    sent, never drawn (and their types), whether the page caught up, and the window's seqs.

Every lag line also says the cluster's timing profile and nodes, the page's speed, the window's
length and whether the student's kubectl cache was ``cold`` (the default: its first ``kubectl scale``
asks the API server for every API group, a dozen GETs, before it scales: a burst of own events the
page animates one by one) or ``warm`` (``--warm-kubectl``: ``kubectl api-resources`` ran before the
window, the page's timeline emptied after it, as for a student who has used kubectl before).

Under load
----------

The page ``/lab/demo/?perf=1`` is opened again in a new context, in a 1400x1000 viewport, with
animation on, and the benchmark waits until its stream is live. It then switches on the **trace driver**
(``bench._tracedriver``) inside the server process: a seeded, schema-valid stream of a busy cluster's
events (pods created, scheduled, bound, started and deleted; lease renewals; reads; RBAC refusals;
watches timing out) emitted into the demo cluster's real ``TraceBus`` at ``--rate`` events/s. From the
bus on, everything is the real code: the recorder, the websocket consumer (frames of at most 33 ms,
redaction, JSON), the page. The driver runs for ``--warmup`` s (the page's bounded buffers fill: the
model's events and requests, the narration, the timeline's queue), then for ``--duration`` s during
which everything below is measured; the page is never paused or touched.

**What is measured**, in the page, over the measured window only:

``ui.frame_handler.p95_ms``
    The page's frame handler is the websocket ``message`` listener of ``static/topology/stream.js`` for
    a ``frame`` message: parsing it, checking its seqs and handing its events to the timeline (and,
    through it, whatever the timeline does at once). With ``?perf=1`` the page times each call with
    ``performance.now()`` into a histogram of 0.1 ms buckets (``static/topology/perf.js``); p95 is the
    upper edge of the bucket holding the 95th percentile. The timeline's later playing of the events
    (model, SVG, narration), done in its own timer ticks, is reported for information as
    ``ui.timeline_tick.p95_ms``; its cost shows in the dropped frames. Target ``<= 8`` ms.
``ui.dropped_frames.percent``
    Frames the browser failed to show. The display's frame period is measured first on the idle page
    (the median of 120 ``requestAnimationFrame`` intervals: 16.7 ms, 60 Hz, in headless Chromium).
    During the window a ``requestAnimationFrame`` loop (injected by the benchmark, not the page's
    code) sees every frame the browser produced; an interval of ``d`` ms stands for ``round(d /
    period)`` frame slots, all but one of which were dropped: the main thread was busy (script,
    style, layout, GC) when the frame was due. Percent = dropped slots / (window / period) x 100.
    Target ``<= 1``.
``ui.heap_growth_mb``
    The page's JS heap (CDP ``Runtime.getHeapUsage``, ``usedSize``) after a forced full garbage
    collection (``HeapProfiler.collectGarbage``) at the end of the window, minus the same at its
    start: what the page kept, not garbage it had not collected yet. Measured after the warm-up, so
    that bounded buffers filling up are not counted as growth; the line also gives the heap of the
    idle page (before any load), and the DOM's node and listener counts (CDP
    ``Memory.getDOMCounters``) at both ends. Target ``<= 20`` MB.

For information: ``ui.events_received`` (events the page got in frames during the window, with the
events the driver emitted, the achieved rate and the events the server summarised instead of sending);
``ui.frames_received``; ``ui.timeline_tick.p95_ms``; ``ui.long_tasks`` (tasks over 50 ms, a
PerformanceObserver's count, with their total blocking time); ``ui.main_thread.busy_percent`` (CDP
``Performance.getMetrics``' ``TaskDuration`` over the window: how much of the renderer's main thread the
page used, with the script, layout and style shares).

The dropped-frames line also says what else used the machine's CPU over the window, in cores:
``server_cores`` (daphne), ``browser_cores`` (every Chromium process, and Playwright's driver) and
``other_cores`` (every other process on the machine, from ``/proc/stat``), with ``machine_cores`` and
the ``load_average`` at the end.

**Caveats.** *Lag:* "drawn" is when the page's code finished updating the diagram for an event
(the SVG, the narration), not when the browser painted it (the next frame, ~17 ms later), nor when its
animation (a packet travelling, ``delay()`` ms) ended. The page and the server read the same machine's
clock, but through different paths (the cluster clock is ``time.time()`` at start plus monotonic time,
the page's ``timeOrigin`` plus ``performance.now()``): both offsets are reported, and a large one (the
system clock stepped during the run) makes the figures wrong by as much. The window is short and the
cluster small: one student, three nodes; a classroom of thirty on one cluster makes thirty such bursts.
The page's stopwatch keeps the drawing times of the last 20,000 events: a window longer than that
(not with these settings) would count its oldest events as not drawn. A phase that fails (kubectl, the
page never showing the pods) reports its error on its own lines and the other phase still runs.
*Load:* the events are made up (realistic, but no store holds them): the etcd panel's reads of the
keys they name find nothing, so the panel does less than with a real cluster's writes. Chromium,
daphne and the benchmark share the machine: anything else running on it takes CPU from the page and
shows as dropped frames (see ``other_cores``); compare runs on a quiet machine. ``--cpu-profile FILE``
writes a Chrome CPU profile of the window (open it in Chrome's DevTools, Performance panel) to see
where the page's time goes. Needs Playwright (requirements-dev.txt) and Debian's ``chromium`` (``make
debian-packages``); without them every line carries an ``error``. ``--quick`` (CI): lag with 3 s of
idling and 1 s between the student's steps (about 15 s in all), then load with 4 s of warm-up and 12 s
measured.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from bench import _uilag
from bench.api import LabProcess, lab_directory, process_cpu
from bench.report import Reporter

CHROMIUM = Path("/usr/bin/chromium")
CLUSTER = "demo"
MB = 1024 * 1024

#: The issue's targets, as it states them.
HANDLER_TARGET = "<= 8"
DROPPED_TARGET = "<= 1"
HEAP_TARGET = "<= 20"
#: The lag behind live phase's Deployment: created with the first number of replicas, then scaled to
#: each of the others, then deleted.
REPLICAS = (3, 6, 2)

# The benchmark's own probe, installed before any page script runs: a requestAnimationFrame loop that
# counts frame slots, and an observer of long tasks. Bounded memory: counters, no sample arrays.
FRAME_PROBE = """
(() => {
  const probe = { period: null, calibration: [], frames: 0, dropped: 0, slots: 0, longest: 0, janks: 0,
                  longTasks: 0, blocking: 0, since: null, last: null };
  probe.start = (period) => {
    Object.assign(probe, { period, frames: 0, dropped: 0, slots: 0, longest: 0, janks: 0,
                           longTasks: 0, blocking: 0, since: performance.now(), last: null });
  };
  probe.read = () => ({ period: probe.period, frames: probe.frames, dropped: probe.dropped,
                        longest: probe.longest, janks: probe.janks, longTasks: probe.longTasks,
                        blocking: probe.blocking, elapsed: performance.now() - probe.since });
  const frame = (now) => {
    if (probe.last !== null) {
      const delta = now - probe.last;
      if (probe.period === null) {
        if (probe.calibration.length < 240) probe.calibration.push(delta);
      } else {
        const slots = Math.max(1, Math.round(delta / probe.period));
        probe.frames += 1;
        probe.dropped += slots - 1;
        if (delta > probe.longest) probe.longest = delta;
        if (delta > 50) probe.janks += 1;
      }
    }
    probe.last = now;
    requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);
  try {
    new PerformanceObserver((list) => {
      if (probe.period === null) return;
      for (const task of list.getEntries()) {
        probe.longTasks += 1;
        probe.blocking += Math.max(0, task.duration - 50);
      }
    }).observe({ type: "longtask" });
  } catch {}
  window.__benchFrames = probe;
})();
"""


@dataclass(frozen=True, slots=True)
class Settings:
    rate: float
    duration: float
    warmup: float
    seed: int
    idle: float
    dwell: float
    replicas: tuple[int, ...]
    warm_kubectl: bool
    cpu_profile: Path | None
    chromium: Path
    directory: Path | None
    keep: bool

    @classmethod
    def from_options(cls, options: argparse.Namespace) -> Settings:
        quick = bool(options.quick)
        return cls(
            rate=options.rate,
            duration=options.duration if options.duration is not None else (12.0 if quick else 600.0),
            warmup=options.warmup if options.warmup is not None else (4.0 if quick else 30.0),
            seed=options.seed,
            idle=options.idle if options.idle is not None else (3.0 if quick else 10.0),
            dwell=1.0 if quick else 3.0,
            replicas=REPLICAS,
            warm_kubectl=bool(options.warm_kubectl),
            cpu_profile=options.cpu_profile,
            chromium=options.chromium,
            directory=options.dir,
            keep=options.keep,
        )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("ui")
    group.add_argument("--rate", type=float, default=2000.0, help="trace events per second (2000)")
    group.add_argument("--duration", type=float, help="seconds measured (600; --quick 12)")
    group.add_argument("--warmup", type=float, help="seconds of load before measuring (30; --quick 4)")
    group.add_argument("--seed", type=int, default=1, help="the workload's random seed (1)")
    group.add_argument(
        "--idle",
        type=float,
        help="lag behind live: seconds the cluster idles before the student acts (10; --quick 3)",
    )
    group.add_argument(
        "--warm-kubectl",
        action="store_true",
        help="lag behind live: the student's kubectl has discovered the API before (default: its first run)",
    )
    group.add_argument("--cpu-profile", type=Path, help="write a Chrome CPU profile of the window here")
    group.add_argument(
        "--chromium", type=Path, default=CHROMIUM, help=f"the browser to drive ({CHROMIUM}, Debian's)"
    )
    group.add_argument("--dir", type=Path, help="where the temporary lab goes (the system temp dir)")
    group.add_argument("--keep", action="store_true", help="keep the temporary lab (and its log)")


#: The lag behind live phase's lines, measured first, then the load's.
LAG_METRICS = _uilag.METRICS
LOAD_METRICS = (
    ("frame_handler.p95_ms", "ms", HANDLER_TARGET),
    ("dropped_frames.percent", "%", DROPPED_TARGET),
    ("heap_growth_mb", "MB", HEAP_TARGET),
    ("events_received", "events", None),
    ("frames_received", "frames", None),
    ("timeline_tick.p95_ms", "ms", None),
    ("long_tasks", "tasks", None),
    ("main_thread.busy_percent", "%", None),
)
METRICS = LAG_METRICS + LOAD_METRICS


def browser_missing(chromium: Path = CHROMIUM) -> str | None:
    """Why the browser cannot be driven here, or None."""
    if importlib.util.find_spec("playwright") is None:
        return "the playwright package is not installed (requirements-dev.txt)"
    if not chromium.exists():
        return f"{chromium} does not exist: Debian's chromium is not installed (make debian-packages)"
    return None


def report_unavailable(
    reporter: Reporter, problem: str, metrics: tuple[tuple[str, str, str | None], ...] = METRICS
) -> None:
    """An error line for each of ``metrics`` not reported yet."""
    reported = {result.metric for result in reporter.results}
    for metric, unit, target in metrics:
        if metric not in reported:
            reporter.error(metric, unit, problem, target=target)


def wanted(reporter: Reporter, metrics: tuple[tuple[str, str, str | None], ...]) -> bool:
    return any(reporter.wants(metric) for metric, _, _ in metrics)


def run(options: argparse.Namespace, reporter: Reporter) -> None:
    settings = Settings.from_options(options)
    if not wanted(reporter, METRICS):
        return
    missing = browser_missing(settings.chromium)
    if missing is not None:
        report_unavailable(reporter, missing)
        return
    with lab_directory(settings, "ui") as tmp:
        try:
            server = UIServer.start(tmp, env={"KUBELAB_TIMING_PROFILE": "classroom"})
        except Exception as error:
            report_unavailable(reporter, f"the lab did not start: {error}")
            return
        try:
            measure(server, settings, reporter)
        except Exception as error:
            report_unavailable(reporter, f"{type(error).__name__}: {error}")
        finally:
            server.stop()


# -- the server ----------------------------------------------------------------------------------------


class UIServer(LabProcess):
    """``bench._uiserve`` (runlab plus the trace driver's switch) in a temporary data directory."""

    module = "bench._uiserve"

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    def server_args(self) -> list[str]:
        return []

    def ready(self) -> None:
        pass

    def drive(self, method: str, **request: Any) -> dict[str, Any]:
        """Start (POST), read (GET) or stop (DELETE) the server's trace driver; its stats."""
        response = httpx.request(method, f"{self.origin}/bench/drive", json=request or None, timeout=30)
        answer: dict[str, Any] = response.json()
        if response.status_code != 200:
            raise RuntimeError(f"the trace driver answered {response.status_code}: {answer.get('error')}")
        return answer

    def events(self, since: int | None = None) -> dict[str, Any]:
        """The demo cluster's last seq and, with ``since``, its recorded events after it (``[seq, ts,
        type, id, from, request]`` each), from ``/bench/events`` (``bench._uiserve``)."""
        params: dict[str, Any] = {"cluster": CLUSTER}
        if since is not None:
            params["since"] = since
        response = httpx.get(f"{self.origin}/bench/events", params=params, timeout=30)
        answer: dict[str, Any] = response.json()
        if response.status_code != 200:
            raise RuntimeError(f"/bench/events answered {response.status_code}: {answer.get('error')}")
        return answer


# -- the page ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Heap:
    used: float
    nodes: int
    listeners: int


@dataclass(slots=True)
class Measurement:
    period: float
    seconds: float
    heap_idle: Heap
    heap_start: Heap
    heap_end: Heap
    perf: dict[str, Any]
    frames: dict[str, Any]
    metrics_start: dict[str, float]
    metrics_end: dict[str, float]
    drive_start: dict[str, Any]
    drive_end: dict[str, Any]
    cpu: CPUShares
    page_errors: list[str]


def measure(server: UIServer, settings: Settings, reporter: Reporter) -> None:
    """One browser, two phases, each on a page of its own: the lag behind live of an idling cluster a
    student acts on (no trace driver), then the page under the driver's load. Each phase's lines are
    reported as soon as it ends; a phase that fails reports its error on its own lines only."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(settings.chromium), headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            if wanted(reporter, LAG_METRICS):
                try:
                    lag = _uilag.measure(
                        browser,
                        server,
                        idle=settings.idle,
                        dwell=settings.dwell,
                        replicas=settings.replicas,
                        warm=settings.warm_kubectl,
                    )
                except Exception as error:
                    report_unavailable(reporter, f"{type(error).__name__}: {error}", LAG_METRICS)
                else:
                    _uilag.report(reporter, lag)
            if wanted(reporter, LOAD_METRICS):
                context = browser.new_context(viewport={"width": 1400, "height": 1000})
                context.add_init_script(FRAME_PROBE)
                page = context.new_page()
                errors: list[str] = []
                page.on("pageerror", lambda error: errors.append(str(error)))
                try:
                    measurement = measure_page(page, context.new_cdp_session(page), server, settings, errors)
                except Exception as error:
                    report_unavailable(reporter, f"{type(error).__name__}: {error}", LOAD_METRICS)
                else:
                    report(reporter, settings, measurement)
                finally:
                    context.close()
        finally:
            browser.close()


def measure_page(page: Any, cdp: Any, server: UIServer, settings: Settings, errors: list[str]) -> Measurement:
    page.goto(f"{server.origin}/lab/{CLUSTER}/?perf=1")
    page.wait_for_function(
        "document.querySelector('[data-topology=status]')?.dataset.state === 'live'", timeout=60_000
    )
    cdp.send("HeapProfiler.enable")
    cdp.send("Performance.enable")
    page.wait_for_function("window.__benchFrames.calibration.length >= 120", timeout=30_000)
    period = statistics.median(page.evaluate("window.__benchFrames.calibration"))
    heap_idle = heap(cdp)
    server.drive("POST", cluster=CLUSTER, rate=settings.rate, seconds=None, seed=settings.seed)
    wait(page, settings.warmup)
    heap_start = heap(cdp)
    page.evaluate("period => { window.__kubelabPerf.reset(); window.__benchFrames.start(period); }", period)
    drive_start = server.drive("GET")
    metrics_start = metrics(cdp)
    cpu = CPUShareMeter(server.pid)
    began = time.perf_counter()
    if settings.cpu_profile is not None:
        cdp.send("Profiler.enable")
        cdp.send("Profiler.start")
    progress_every = 60.0
    while (left := settings.duration - (time.perf_counter() - began)) > 0:
        wait(page, min(left, progress_every))
        if left > progress_every:
            print(f"python -m bench ui: {progress(page, server)}", file=sys.stderr, flush=True)
    readings = page.evaluate(
        "() => ({ perf: window.__kubelabPerf.summary(), frames: window.__benchFrames.read() })"
    )
    seconds = time.perf_counter() - began
    shares = cpu.shares(seconds)
    metrics_end = metrics(cdp)
    drive_end = server.drive("GET")
    if settings.cpu_profile is not None:
        profile = cdp.send("Profiler.stop")["profile"]
        settings.cpu_profile.write_text(json.dumps(profile))
    heap_end = heap(cdp)
    server.drive("DELETE")
    return Measurement(
        period=period,
        seconds=seconds,
        heap_idle=heap_idle,
        heap_start=heap_start,
        heap_end=heap_end,
        perf=readings["perf"],
        frames=readings["frames"],
        metrics_start=metrics_start,
        metrics_end=metrics_end,
        drive_start=drive_start,
        drive_end=drive_end,
        cpu=shares,
        page_errors=list(errors),
    )


def wait(page: Any, seconds: float) -> None:
    """Let time pass (through Playwright, so that it keeps serving the page's events meanwhile)."""
    page.wait_for_timeout(seconds * 1000)


def heap(cdp: Any) -> Heap:
    """The page's JS heap after a full garbage collection, and its DOM's counters."""
    cdp.send("HeapProfiler.collectGarbage")
    used = cdp.send("Runtime.getHeapUsage")["usedSize"]
    counters = cdp.send("Memory.getDOMCounters")
    return Heap(used=used / MB, nodes=counters["nodes"], listeners=counters["jsEventListeners"])


def metrics(cdp: Any) -> dict[str, float]:
    return {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}


def progress(page: Any, server: UIServer) -> str:
    counters = page.evaluate("() => window.__kubelabPerf.summary()")
    frames = page.evaluate("() => window.__benchFrames.read()")
    drive = server.drive("GET")
    return (
        f"{drive['emitted']} events emitted, {counters['counters'].get('events', 0)} received, "
        f"frame handler p95 {counters['timings']['frame']['p95'] or 0:.1f} ms, "
        f"{frames['dropped']} frames dropped of {frames['elapsed'] / frames['period']:.0f}"
    )


# -- the machine -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CPUShares:
    """CPU used over the window, in cores (CPU seconds per second): the server, the browser (every
    process Playwright started), and every other process on the machine (someone else's test suite
    takes CPU from the browser, which then drops frames that are not the page's doing)."""

    server: float | None
    browser: float | None
    others: float | None
    machine: int
    load_average: float

    def as_dict(self) -> dict[str, Any]:
        return {
            "server_cores": _round(self.server, 2),
            "browser_cores": _round(self.browser, 2),
            "other_cores": _round(self.others, 2),
            "machine_cores": self.machine,
            "load_average": round(self.load_average, 2),
        }


class CPUShareMeter:
    """Reads the CPU time of this process's tree and of the whole machine (Linux ``/proc``)."""

    def __init__(self, server_pid: int) -> None:
        self.server_pid = server_pid
        self.start = self._read()

    def _read(self) -> tuple[float | None, float | None, float | None]:
        me = os.getpid()
        ours = {pid: process_cpu(pid) or 0.0 for pid in [me, *descendants(me)]}
        not_browser = {me, self.server_pid, *descendants(self.server_pid)}
        browser = sum(cpu for pid, cpu in ours.items() if pid not in not_browser)
        machine = machine_cpu()
        others = None if machine is None else machine - sum(ours.values())
        return process_cpu(self.server_pid), browser, others

    def shares(self, seconds: float) -> CPUShares:
        end = self._read()

        def cores(i: int) -> float | None:
            a, b = self.start[i], end[i]
            return None if a is None or b is None else max(0.0, (b - a) / seconds)

        return CPUShares(cores(0), cores(1), cores(2), os.cpu_count() or 1, os.getloadavg()[0])


def descendants(root: int) -> list[int]:
    """The process ids below ``root`` (children, their children...), from ``/proc``."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(entry.name))
    found: list[int] = []
    todo = [root]
    while todo:
        kids = children.get(todo.pop(), [])
        found += kids
        todo += kids
    return found


def machine_cpu() -> float | None:
    """CPU seconds the whole machine has been busy (all but idle and iowait), from ``/proc/stat``."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    except (OSError, ValueError, IndexError):
        return None
    busy = sum(fields[:8]) - fields[3] - fields[4]
    return busy / os.sysconf("SC_CLK_TCK")


# -- the report ----------------------------------------------------------------------------------------


def report(reporter: Reporter, settings: Settings, m: Measurement) -> None:
    extra: dict[str, Any] = {"rate": settings.rate, "seconds": round(m.seconds, 1)}
    if m.page_errors:
        extra["page_errors"] = m.page_errors[:5]
    frame = m.perf["timings"]["frame"]
    reporter.emit(
        "frame_handler.p95_ms",
        frame["p95"],
        "ms",
        target=HANDLER_TARGET,
        frames=frame["count"],
        p50_ms=_round(frame["p50"]),
        p99_ms=_round(frame["p99"]),
        max_ms=_round(frame["max"]),
        mean_ms=_round(frame["mean"]),
        **extra,
    )
    frames = m.frames
    expected = frames["elapsed"] / m.period
    reporter.emit(
        "dropped_frames.percent",
        100 * frames["dropped"] / expected if expected else None,
        "%",
        target=DROPPED_TARGET,
        dropped=frames["dropped"],
        expected=round(expected),
        shown=frames["frames"],
        frame_period_ms=round(m.period, 2),
        longest_ms=round(frames["longest"], 1),
        over_50ms=frames["janks"],
        **m.cpu.as_dict(),
        **extra,
    )
    reporter.emit(
        "heap_growth_mb",
        m.heap_end.used - m.heap_start.used,
        "MB",
        target=HEAP_TARGET,
        heap_idle_mb=round(m.heap_idle.used, 2),
        heap_start_mb=round(m.heap_start.used, 2),
        heap_end_mb=round(m.heap_end.used, 2),
        dom_nodes=[m.heap_idle.nodes, m.heap_start.nodes, m.heap_end.nodes],
        listeners=[m.heap_idle.listeners, m.heap_start.listeners, m.heap_end.listeners],
        warmup_s=settings.warmup,
        **extra,
    )
    emitted = m.drive_end["emitted"] - m.drive_start["emitted"]
    counters = m.perf["counters"]
    reporter.emit(
        "events_received",
        counters.get("events", 0),
        "events",
        emitted=emitted,
        summarised=counters.get("summarised", 0),
        received_per_s=round(counters.get("events", 0) / m.seconds, 1),
        driver_max_behind=m.drive_end["max_behind"],
        server_cores=_round(m.cpu.server, 2),
        **extra,
    )
    reporter.emit(
        "frames_received", frame["count"], "frames", per_s=round(frame["count"] / m.seconds, 1), **extra
    )
    tick = m.perf["timings"]["tick"]
    reporter.emit(
        "timeline_tick.p95_ms",
        tick["p95"],
        "ms",
        ticks=tick["count"],
        p50_ms=_round(tick["p50"]),
        p99_ms=_round(tick["p99"]),
        max_ms=_round(tick["max"]),
        **extra,
    )
    reporter.emit(
        "long_tasks", frames["longTasks"], "tasks", total_blocking_ms=round(frames["blocking"], 1), **extra
    )

    def share(name: str) -> float:
        return 100 * (m.metrics_end.get(name, 0.0) - m.metrics_start.get(name, 0.0)) / m.seconds

    reporter.emit(
        "main_thread.busy_percent",
        share("TaskDuration"),
        "%",
        script_percent=round(share("ScriptDuration"), 1),
        layout_percent=round(share("LayoutDuration"), 1),
        style_percent=round(share("RecalcStyleDuration"), 1),
        **extra,
    )


def _round(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)
