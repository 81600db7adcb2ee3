"""The lag behind live phase of ``python -m bench ui``: a student acts on an idling classroom cluster.

The issue: "with a classroom cluster idling and a student creating and scaling a Deployment, the p95
delay from an event's emission to its drawing at 1x is <= 1 s, with the student's events all drawn".
``bench/ui.py``'s docstring says what is measured and how; this module does it:

- ``Student`` is the real kubectl (``.venv/bin/kubectl``) with a kubeconfig ``manage.py kubeconfig``
  made for user ``student`` in group ``system:masters``: its requests reach the API port over HTTPS,
  and the trace draws them as coming from ``user:student``.
- ``PROBE`` is the benchmark's own script, evaluated in the page once it has drawn the cluster's
  state: it wraps the timeline's sinks (``window.kubelabTopology.timeline.sinks``) to note, by seq,
  which events were played (animated), which were applied at once (folded background traffic, or
  to keep up) and which the page took for a person's own. The page's code is not changed.
- ``analyse`` sets the page's drawing times (``__kubelabPerf.drawnSince``) against the events' ``ts``
  as the cluster's trace recorder holds them (``/bench/events``, ``bench._uiserve``).
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from bench.stats import percentile

LAG_TARGET = "<= 1000"
OWN_TARGET = ">= 1"
STUDENT = "student"
DEPLOYMENT = "web"
NAMESPACE = "default"
CLUSTER = "demo"
ROOT = Path(__file__).resolve().parents[1]
KUBECTL = Path(sys.executable).parent / "kubectl"

#: The lines of this phase: (metric, unit, target).
METRICS = (
    ("lag.p95_ms", "ms", LAG_TARGET),
    ("lag.own_events_animated", "fraction", OWN_TARGET),
    ("lag.events_drawn", "events", None),
)

#: Seconds the student waits, at most, to see the pods a step asked for on the page.
STEP_TIMEOUT = 60.0
#: Seconds the page may take, after the window, to draw the window's last event.
CATCH_UP_TIMEOUT = 10.0
#: The student's requests listed per step in the report (all are counted).
STEP_REQUESTS_SHOWN = 20

# Evaluated in the page once it is live and has drawn the cluster's state. The timeline calls
# `this.sinks.play(event)` for each event it animates and `this.sinks.skip(events, {kinds, ...})` for
# those it applies at once, and asks `this.sinks.kind(event)` (then `recheck`) what each event is as it
# arrives: wrapping those properties sees every decision without touching the page's code.
PROBE = """
(() => {
  const timeline = window.kubelabTopology.timeline;
  const sinks = timeline.sinks;
  const probe = { played: [], folded: [], behind: [], own: [] };
  probe.reset = () => Object.assign(probe, { played: [], folded: [], behind: [], own: [] });
  const { play, skip, kind, recheck } = sinks;
  sinks.play = (event, options) => {
    probe.played.push(event.seq);
    return play(event, options);
  };
  sinks.skip = (events, options) => {
    if (!options.restoring) {
      events.forEach((event, i) => {
        const folded = (options.kinds || [])[i] === "background" && !timeline.showBackground;
        (folded ? probe.folded : probe.behind).push(event.seq);
      });
    }
    return skip(events, options);
  };
  const noteOwn = (event, answer) => {
    if (answer === "own") probe.own.push(event.seq);
    return answer;
  };
  if (kind) sinks.kind = (event) => noteOwn(event, kind(event));
  if (recheck) sinks.recheck = (event) => noteOwn(event, recheck(event));
  window.__benchLag = probe;
})();
"""

LIVE_AND_DRAWN = """() => {
  const topology = window.kubelabTopology;
  return document.querySelector('[data-topology=status]')?.dataset.state === 'live'
    && topology && topology.model.stateRevision > 0
    && [...topology.model.nodes.keys()].some((id) => id.startsWith('kubelet:'));
}"""

# The Deployment's pods as the page draws them (the store's, from its store.txn events): how many,
# and how many Running and not being deleted.
PODS_SEEN = """([prefix, running, total]) => {
  const pods = [...window.kubelabTopology.model.pods.values()].filter((p) => p.key.startsWith(prefix));
  const shown = pods.filter((p) => p.state === 'running').length;
  return shown === running && (total === null || pods.length === total);
}"""

READINGS = """(first) => {
  const perf = window.__kubelabPerf;
  const probe = window.__benchLag;
  const atLeast = (seqs) => seqs.filter((seq) => seq >= first);
  return {
    drawn: perf.drawnSince(first),
    played: atLeast(probe.played),
    folded: atLeast(probe.folded),
    behind: atLeast(probe.behind),
    own: atLeast(probe.own),
    summary: perf.summary(),
    lastSeq: window.kubelabTopology.model.lastSeq,
    speed: window.kubelabTopology.timeline.speed,
    clockOffset: performance.timeOrigin + performance.now() - Date.now(),
  };
}"""


class LagLab(Protocol):
    """What this phase needs of the benchmark's lab (``bench.ui.UIServer``)."""

    @property
    def origin(self) -> str: ...

    @property
    def api_port(self) -> int: ...

    @property
    def env(self) -> dict[str, str]: ...

    @property
    def tmp(self) -> Path: ...

    def events(self, since: int | None = None) -> dict[str, Any]: ...


# -- the student -------------------------------------------------------------------------------------


class Student:
    """The real kubectl, as user ``student`` (group ``system:masters``), against the lab's API port."""

    def __init__(self, lab: LagLab, kubectl: Path = KUBECTL) -> None:
        if not kubectl.exists():
            raise RuntimeError(f"{kubectl} does not exist: kubectl is not installed next to Python")
        self.kubectl_path = kubectl
        self.kubeconfig = lab.tmp / "student.kubeconfig"
        self.cache_dir = lab.tmp / "student-kube-cache"
        command = [
            sys.executable, "manage.py", "kubeconfig", "--cluster", CLUSTER, "--user", STUDENT,
            "--group", "system:masters", "--server", f"https://127.0.0.1:{lab.api_port}",
        ]  # fmt: skip
        made = subprocess.run(command, cwd=ROOT, env=lab.env, capture_output=True, text=True, check=False)
        if made.returncode != 0:
            raise RuntimeError(f"manage.py kubeconfig failed: {made.stderr.strip()[-500:]}")
        self.kubeconfig.write_text(made.stdout)

    def kubectl(self, *args: str) -> float:
        """Run ``kubectl ARGS``; how long it took (ms). ``RuntimeError`` if it failed."""
        began = time.perf_counter()
        result = subprocess.run(
            [str(self.kubectl_path), "--kubeconfig", str(self.kubeconfig), "--cache-dir", str(self.cache_dir),
             *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )  # fmt: skip
        if result.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)} failed: {result.stderr.strip()[-500:]}")
        return (time.perf_counter() - began) * 1000


# -- the run -----------------------------------------------------------------------------------------


@dataclass(slots=True)
class LagReadings:
    """What the phase read: the window's events (server) and what the page did with them."""

    first: int
    last: int
    seconds: float
    idle: float
    events: list[list[Any]]
    drawn: list[list[float]]
    played: list[int]
    folded: list[int]
    behind: list[int]
    own: list[int]
    summary: dict[str, Any]
    page_last_seq: int
    caught_up: bool
    speed: float
    warm: bool
    timing: str
    nodes: int
    clock_offsets: dict[str, float]
    steps: list[dict[str, Any]] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)


def measure(
    browser: Any, lab: LagLab, *, idle: float, dwell: float, replicas: Sequence[int], warm: bool = False
) -> LagReadings:
    """Open the page, let the cluster idle, act as the student, and read what the page drew when.

    ``warm``: the student's kubectl discovers the API (``kubectl api-resources``) before the window,
    as one that has been used before has; otherwise its first command that needs discovery
    (``kubectl scale``) asks for every API group first, inside the window.
    """
    student = Student(lab)
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(f"{lab.origin}/lab/{CLUSTER}/?perf=1")
        wait_for(page, LIVE_AND_DRAWN, "go live and draw the cluster's state with its nodes", 60, errors)
        if warm:
            student.kubectl("api-resources")
        # Nothing from before the window waits in the timeline (the page's first events, or the
        # warm-up's), so that none of it holds the window's events back.
        wait_for(page, "window.kubelabTopology.timeline.queue.length === 0", "empty its timeline", 30, errors)
        page.evaluate(PROBE)
        # The window opens: the page forgets what it drew before, then the first seq is read, so every
        # event of the window is drawn after the page started noting.
        page.evaluate("() => { window.__kubelabPerf.reset(); window.__benchLag.reset(); }")
        start = lab.events()
        first = start["last_seq"] + 1
        began = time.perf_counter()
        steps = [{"step": "idle", "at_s": 0.0, "wall": time.time()}]
        page.wait_for_timeout(idle * 1000)
        steps += act(page, student, dwell=dwell, replicas=replicas, began=began, errors=errors)
        end = lab.events(since=first - 1)
        seconds = time.perf_counter() - began
        last = int(end["last_seq"])
        try:
            page.wait_for_function(
                f"window.kubelabTopology.model.lastSeq >= {last}", timeout=CATCH_UP_TIMEOUT * 1000
            )
            caught_up = True
        except Exception:  # reported (caught_up false), and the events not drawn are counted
            caught_up = False
        readings = page.evaluate(READINGS, first)
    finally:
        context.close()
    return LagReadings(
        first=first,
        last=last,
        seconds=seconds,
        idle=idle,
        events=[e for e in end["events"] if e[0] <= last],
        drawn=readings["drawn"],
        played=readings["played"],
        folded=readings["folded"],
        behind=readings["behind"],
        own=readings["own"],
        summary=readings["summary"],
        page_last_seq=readings["lastSeq"],
        caught_up=caught_up,
        speed=float(readings["speed"]),
        warm=warm,
        timing=str(end["timing"]),
        nodes=int(end["nodes"]),
        clock_offsets={"server": end["clock_offset_ms"], "page": readings["clockOffset"]},
        steps=steps,
        page_errors=list(errors),
    )


def wait_for(
    page: Any, expression: str, what: str, seconds: float, errors: list[str], arg: Any = None
) -> None:
    """Wait until ``expression`` holds in the page; ``RuntimeError`` saying ``what`` the page did not do
    (and the page's errors, if any) if it does not within ``seconds``."""
    try:
        page.wait_for_function(expression, arg=arg, timeout=seconds * 1000)
    except Exception as error:
        problems = f" (page errors: {'; '.join(errors[:3])})" if errors else ""
        raise RuntimeError(f"the page did not {what} within {seconds:g} s{problems}") from error


def act(
    page: Any, student: Student, *, dwell: float, replicas: Sequence[int], began: float, errors: list[str]
) -> list[dict[str, Any]]:
    """The student's session: create the Deployment, scale it (up, then down), delete it. After each
    command the student watches the page until it shows the pods asked for, then looks ``dwell`` s."""
    first, *scales = replicas
    plan: list[tuple[str, list[str], int, int | None]] = [
        (
            f"create {first}",
            ["create", "deployment", DEPLOYMENT, "--image=nginx", f"--replicas={first}"],
            first,
            None,
        ),
    ]
    for count in scales:
        plan.append(
            (f"scale {count}", ["scale", f"deployment/{DEPLOYMENT}", f"--replicas={count}"], count, count)
        )
    plan.append(("delete", ["delete", "deployment", DEPLOYMENT], 0, 0))
    steps = []
    prefix = f"{NAMESPACE}/{DEPLOYMENT}-"
    for name, args, running, total in plan:
        at = time.perf_counter()
        wall = time.time()
        kubectl_ms = student.kubectl(*args)
        what = f"show {running} Running pods of {DEPLOYMENT}{'' if total is None else f' ({total} in all)'}"
        wait_for(
            page,
            PODS_SEEN,
            f"{what} after kubectl {' '.join(args)}",
            STEP_TIMEOUT,
            errors,
            arg=[prefix, running, total],
        )
        shown = time.perf_counter()
        steps.append(
            {
                "step": name,
                "at_s": round(at - began, 2),
                "wall": wall,
                "kubectl_ms": round(kubectl_ms),
                "shown_after_s": round(shown - at, 2),
            }
        )
        page.wait_for_timeout(dwell * 1000)
    return steps


# -- the figures ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LagAnalysis:
    emitted: int
    drawn: int
    lags_ms: list[float]
    own_lags_ms: list[float]
    own_emitted: int
    own_animated: int
    own_drawn: int
    own_classified: int
    own_not_animated: dict[str, int]
    played: int
    folded: int
    behind: int
    not_drawn: int
    not_drawn_types: dict[str, int]
    steps: list[dict[str, Any]]


def analyse(r: LagReadings, sender: str = f"user:{STUDENT}") -> LagAnalysis:
    """Emission -> drawing of every event of the window, and what became of the student's own.

    An event is the student's own if it carries the Audit-ID (``id``) of a request whose
    ``request.received`` came from ``sender``: every step of kubectl's requests (stages, flow control,
    RBAC, admission, the store's writes, the watch events of kubectl's own watches).
    """
    window = {int(e[0]): e for e in r.events if r.first <= e[0] <= r.last}
    drawn_at = {int(seq): at for seq, at in r.drawn if seq in window}
    ids = {e[3] for e in window.values() if e[2] == "request.received" and e[4] == sender and e[3]}
    own = {seq for seq, e in window.items() if e[3] in ids}
    played = set(r.played) & window.keys()
    lags = {seq: at - 1000 * float(window[seq][1]) for seq, at in drawn_at.items()}
    not_drawn = window.keys() - drawn_at.keys()
    steps = []
    for i, step in enumerate(r.steps):
        # Each step's events: those emitted from its start to the next step's (the first, idling: from
        # the window's start; the last: to its end).
        start = step["wall"] if i else float("-inf")
        stop = r.steps[i + 1]["wall"] if i + 1 < len(r.steps) else float("inf")
        seqs = [seq for seq, e in window.items() if start <= e[1] < stop]
        step_lags = sorted(lags[seq] for seq in seqs if seq in lags)
        requests = [
            window[seq][5]
            for seq in seqs
            if window[seq][2] == "request.received" and window[seq][4] == sender
        ]
        steps.append(
            {
                **{k: v for k, v in step.items() if k != "wall"},
                "events": len(seqs),
                "p95_ms": _pct(step_lags, 95),
                "max_ms": round(step_lags[-1], 1) if step_lags else None,
                "student_requests": len(requests),
                "requests": requests[:STEP_REQUESTS_SHOWN],
            }
        )
    return LagAnalysis(
        emitted=len(window),
        drawn=len(drawn_at),
        lags_ms=sorted(lags.values()),
        own_lags_ms=sorted(lags[seq] for seq in own if seq in lags),
        own_emitted=len(own),
        own_animated=len(own & played),
        own_drawn=len(own & drawn_at.keys()),
        own_classified=len(set(r.own) & own),
        own_not_animated=dict(Counter(window[seq][2] for seq in own - played).most_common()),
        played=len(played),
        folded=len(set(r.folded) & window.keys()),
        behind=len(set(r.behind) & window.keys()),
        not_drawn=len(not_drawn),
        not_drawn_types=dict(Counter(window[seq][2] for seq in not_drawn).most_common(8)),
        steps=steps,
    )


def _pct(samples: Sequence[float], q: float) -> float | None:
    return round(percentile(samples, q), 1) if samples else None


def report(reporter: Any, r: LagReadings) -> None:
    a = analyse(r)
    extra: dict[str, Any] = {
        "seconds": round(r.seconds, 1),
        "idle_s": r.idle,
        "timing": r.timing,
        "nodes": r.nodes,
        "speed": r.speed,
        "kubectl_cache": "warm" if r.warm else "cold",
    }
    if r.page_errors:
        extra["page_errors"] = r.page_errors[:5]
    arrival = r.summary["timings"]["lag"]
    if a.lags_ms:
        reporter.emit(
            "lag.p95_ms",
            percentile(a.lags_ms, 95),
            "ms",
            target=LAG_TARGET,
            events=len(a.lags_ms),
            p50_ms=_pct(a.lags_ms, 50),
            p99_ms=_pct(a.lags_ms, 99),
            max_ms=round(a.lags_ms[-1], 1),
            over_1s=sum(1 for lag in a.lags_ms if lag > 1000),
            own_p95_ms=_pct(a.own_lags_ms, 95),
            own_max_ms=round(a.own_lags_ms[-1], 1) if a.own_lags_ms else None,
            arrival_to_drawn_p95_ms=arrival["p95"],
            clock_offset_ms={k: round(v, 1) for k, v in r.clock_offsets.items()},
            steps=a.steps,
            **extra,
        )
    else:
        reporter.error("lag.p95_ms", "ms", "the page drew no event of the window", target=LAG_TARGET, **extra)
    if a.own_emitted:
        reporter.emit(
            "lag.own_events_animated",
            a.own_animated / a.own_emitted,
            "fraction",
            target=OWN_TARGET,
            user=f"user:{STUDENT}",
            emitted=a.own_emitted,
            animated=a.own_animated,
            drawn=a.own_drawn,
            taken_for_own=a.own_classified,
            not_animated=a.own_not_animated,
            **extra,
        )
    else:
        reporter.error(
            "lag.own_events_animated",
            "fraction",
            f"the cluster traced no request from user:{STUDENT}",
            target=OWN_TARGET,
            **extra,
        )
    reporter.emit(
        "lag.events_drawn",
        a.drawn,
        "events",
        emitted=a.emitted,
        emitted_per_s=round(a.emitted / r.seconds, 1) if r.seconds else None,
        animated=a.played,
        folded_background=a.folded,
        applied_to_keep_up=a.behind,
        summarised=r.summary["counters"].get("summarised", 0),
        not_drawn=a.not_drawn,
        not_drawn_types=a.not_drawn_types,
        caught_up=r.caught_up,
        seqs=[r.first, r.last],
        **extra,
    )
