"""A classroom in one lab: what idle running sandboxes cost, and one fault fanned out to all of them.

One process, as the embedded default runs (``manage.py runlab``: CPython's collector tuned the same
way, ``gc.freeze()`` once the lab runs), with no demo cluster and no ports: a lab in this process
(``controlplane.runtime.Lab``) whose sandboxes are made with ``Lab.ensure_cluster`` (three nodes,
``classroom`` timing, the guardrails), each given what a student has made by chapter 2 (a ConfigMap,
a Secret and a Deployment of three replicas, through its API server as an admin client) and left to
settle until the Deployment's replicas are available. Requests go through the API port's router over
the in-process transport (``bench._coursesleep.Sandboxes``).

Lines, in the order they are printed
------------------------------------

``idle.n<N>.cpu_percent_per_sandbox`` (target ``<= 0.17``: 300 under half a core) and
``idle.n<N>.rss_mb_per_sandbox`` (target ``<= 5``), for each N of ``--counts`` (30, 100, 300)
    The lab grows to N running sandboxes (the ones of the previous count are kept), waits
    ``--settle-seconds`` for what their starts set off to finish (the first pods' image pulls, the
    controllers' first syncs), then reads this process's CPU time over ``--idle-seconds`` with
    nobody doing anything: Lease renewals, node status, the controllers' periodic work. The value is
    that CPU as a percentage of one core, divided by N. The line gives the whole lab's cores beside
    it. RSS per sandbox is ``(RSS with N running - RSS before the first)/N``, after a collection; the
    RSS before is read with one warm-up sandbox running (the code paths and caches a first sandbox
    brings, paid once per process).

``fault.fanout_p99_s`` (target ``<= 1``) and ``fault.clear_all_p99_s`` (target ``<= 10``)
    A classroom of ``--fanout`` students (100; the first sandboxes made): an instructor stops the
    kubelet of ``node-1`` in every sandbox at once, as the dashboard does (one ``FaultService.apply``
    per sandbox, all gathered). Each is timed from the moment the instructor asked to its apply
    returning (the fault in its book, ``fault.applied`` on the trace, the kubelet stopped); the line
    counts the sandboxes it reached. The lab then waits until every sandbox's API server lists
    ``node-1`` as not Ready (the node lifecycle controller's verdict, about ten seconds on the
    classroom timing), so clearing has something to restore. Then "clear all" on every sandbox at
    once (``FaultService.clear_all``, which heals), each timed until its API server answers
    ``/readyz`` and lists three Ready nodes, asked every ``--poll-seconds`` as a client would (so a
    time is late by up to that much).

``--quick`` (CI): counts 2 and 4, 2 s idle, a fan-out to 3 sandboxes.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import resource
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench._courselab import rss_mb
from bench._coursesleep import Sandboxes
from bench.report import Reporter
from bench.stats import percentile
from controlplane.faults.service import FaultService
from controlplane.runtime import Lab, LabConfig, SandboxProfile, tune_garbage_collector

CPU_TARGET = "<= 0.17"
RSS_TARGET = "<= 5"
FANOUT_TARGET = "<= 1"
CLEAR_TARGET = "<= 10"
#: The fault the instructor applies, and the node it names.
FAULT = "stop-kubelet"
NODE = "node-1"
#: The longest the lab waits for every sandbox to see the node go (and come back).
VERDICT_TIMEOUT = 120.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("classroom")
    group.add_argument(
        "--counts", help="running sandboxes at which idle cost is read, comma-separated (30,100,300)"
    )
    group.add_argument("--idle-seconds", type=float, help="seconds of idle CPU read per count (20)")
    group.add_argument(
        "--settle-seconds", type=float, help="seconds left to settle before each idle read (10)"
    )
    group.add_argument("--fanout", type=int, help="sandboxes the fault is applied to (100)")
    group.add_argument(
        "--poll-seconds", type=float, default=0.25, help="how often a sandbox's health is asked (0.25)"
    )
    group.add_argument("--dir", type=Path, help="where the lab's data go (the system temp dir)")


@dataclass(frozen=True, slots=True)
class Settings:
    counts: tuple[int, ...]
    idle_seconds: float
    settle_seconds: float
    fanout: int
    poll_seconds: float
    directory: Path | None

    @classmethod
    def from_options(cls, options: argparse.Namespace) -> Settings:
        quick = bool(options.quick)
        counts = options.counts or ("2,4" if quick else "30,100,300")
        parsed = tuple(sorted({int(c) for c in str(counts).split(",") if c.strip()}))
        if not parsed or parsed[0] < 1:
            raise SystemExit("python -m bench classroom: --counts takes positive numbers")

        def pick(value: Any, full: Any, fast: Any) -> Any:
            return value if value is not None else (fast if quick else full)

        fanout = min(pick(options.fanout, 100, 3), parsed[-1])
        return cls(
            counts=parsed,
            idle_seconds=pick(options.idle_seconds, 20.0, 2.0),
            settle_seconds=pick(options.settle_seconds, 10.0, 2.0),
            fanout=max(1, fanout),
            poll_seconds=options.poll_seconds,
            directory=options.dir,
        )


@dataclass
class IdleReading:
    sandboxes: int
    cores: float
    rss_mb: float | None
    seconds: float


@dataclass
class FanOut:
    applied_s: list[float] = field(default_factory=list)
    apply_errors: list[str] = field(default_factory=list)
    verdict_s: float | None = None
    cleared_s: list[float] = field(default_factory=list)
    clear_errors: list[str] = field(default_factory=list)


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


@contextmanager
def _quiet_controlplane() -> Iterator[None]:
    """The lab's own log lines (a controller's retried conflict) are not the benchmark's output."""
    logger = logging.getLogger("controlplane")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


async def run(options: argparse.Namespace, reporter: Reporter) -> None:
    settings = Settings.from_options(options)
    with (
        _quiet_controlplane(),
        tempfile.TemporaryDirectory(prefix="kubelab-bench-classroom-", dir=settings.directory) as tmp,
    ):
        tune_garbage_collector()  # as manage.py runlab does
        lab = Lab(LabConfig(data_dir=Path(tmp), demo_cluster="", sandbox=SandboxProfile(idle_seconds=0)))
        await lab.start()
        try:
            await _measure(lab, settings, reporter)
        finally:
            await lab.stop()
            gc.unfreeze()


async def _measure(lab: Lab, settings: Settings, reporter: Reporter) -> None:
    sandboxes = Sandboxes(lab)
    await _grow(sandboxes, ["sb-warm-up"])
    gc.collect()
    gc.freeze()  # as runlab does once its lab runs
    base_rss = rss_mb()
    made = 0
    for count in settings.counts:
        metrics = (f"idle.n{count}.cpu_percent_per_sandbox", f"idle.n{count}.rss_mb_per_sandbox")
        try:
            await _grow(sandboxes, [f"sb-class-{i + 1}" for i in range(made, count)])
            made = count
            reading = await _idle(count, settings)
        except Exception as error:
            reporter.error(metrics[0], "%", error, target=CPU_TARGET)
            reporter.error(metrics[1], "MB", error, target=RSS_TARGET)
            return
        _report_idle(reporter, metrics, reading, base_rss)
    class_names = [f"sb-class-{i + 1}" for i in range(settings.fanout)]
    try:
        fanout = await _fan_out(lab, sandboxes, class_names, settings)
    except Exception as error:
        reporter.error("fault.fanout_p99_s", "s", error, target=FANOUT_TARGET)
        reporter.error("fault.clear_all_p99_s", "s", error, target=CLEAR_TARGET)
        return
    _report_fanout(reporter, fanout, settings)


async def _grow(sandboxes: Sandboxes, names: list[str]) -> None:
    """Make sandboxes ``names`` one after another, then wait until every one has settled."""
    for name in names:
        await sandboxes.make(name)
    settled = await asyncio.gather(*(sandboxes.settle(name) for name in names))
    unsettled = [name for name, ok in zip(names, settled, strict=True) if not ok]
    if unsettled:
        raise RuntimeError(f"sandboxes whose Deployment never became available: {unsettled[:5]}")


async def _idle(count: int, settings: Settings) -> IdleReading:
    await asyncio.sleep(settings.settle_seconds)
    gc.collect()
    rss = rss_mb()
    started, cpu = time.monotonic(), _cpu_seconds()
    await asyncio.sleep(settings.idle_seconds)
    seconds = time.monotonic() - started
    return IdleReading(count, (_cpu_seconds() - cpu) / seconds, rss, seconds)


def _report_idle(
    reporter: Reporter, metrics: tuple[str, str], reading: IdleReading, base_rss: float | None
) -> None:
    n = reading.sandboxes
    common = {"sandboxes": n, "idle_seconds": round(reading.seconds, 2)}
    reporter.emit(
        metrics[0],
        round(reading.cores * 100 / n, 4),
        "%",
        target=CPU_TARGET,
        **common,
        lab_cores=round(reading.cores, 4),
    )
    per_sandbox = None
    if reading.rss_mb is not None and base_rss is not None:
        per_sandbox = round((reading.rss_mb - base_rss) / n, 3)
    reporter.emit(
        metrics[1],
        per_sandbox,
        "MB",
        target=RSS_TARGET,
        **common,
        rss_mb=None if reading.rss_mb is None else round(reading.rss_mb, 2),
        rss_before_mb=None if base_rss is None else round(base_rss, 2),
    )


async def _fan_out(lab: Lab, sandboxes: Sandboxes, names: list[str], settings: Settings) -> FanOut:
    service = FaultService.of(lab)
    result = FanOut()
    asked = time.perf_counter()

    async def apply(name: str) -> None:
        try:
            await service.apply(name, FAULT, {"node": NODE}, reason="bench: the instructor")
        except Exception as error:
            result.apply_errors.append(f"{name}: {type(error).__name__}: {error}")
            return
        if not service.in_force(name):
            result.apply_errors.append(f"{name}: applied, yet no fault is in force")
            return
        result.applied_s.append(time.perf_counter() - asked)

    await asyncio.gather(*(apply(name) for name in names))
    # Wait until every sandbox's API server says the node is gone, so clearing restores something.
    started = time.perf_counter()
    async with asyncio.timeout(VERDICT_TIMEOUT):
        await asyncio.gather(*(_until(sandboxes, n, settings, ready=False) for n in names))
    result.verdict_s = time.perf_counter() - started
    asked = time.perf_counter()

    async def clear(name: str) -> None:
        try:
            await service.clear_all(name, reason="bench: the instructor clears all")
            async with asyncio.timeout(VERDICT_TIMEOUT):
                await _until(sandboxes, name, settings, ready=True)
        except Exception as error:
            result.clear_errors.append(f"{name}: {type(error).__name__}: {error}")
            return
        result.cleared_s.append(time.perf_counter() - asked)

    await asyncio.gather(*(clear(name) for name in names))
    return result


async def _until(sandboxes: Sandboxes, name: str, settings: Settings, *, ready: bool) -> None:
    """Ask sandbox ``name``'s API server every ``poll_seconds`` until ``node-1`` is Ready (and so are
    the others, and readyz is ok) or, with ``ready`` false, until ``node-1`` is not Ready."""
    async with sandboxes.client(name) as client:
        while True:
            if ready:
                readyz = await client.get("/readyz")
                healthy = readyz.status_code == 200 and readyz.text.strip() == "ok"
            else:
                healthy = True
            if healthy:
                nodes = await client.get("/api/v1/nodes")
                if nodes.status_code == 200:
                    states = {item["metadata"]["name"]: _ready(item) for item in nodes.json()["items"]}
                    if ready and len(states) >= 3 and all(states.values()):
                        return
                    if not ready and states.get(NODE) is False:
                        return
            await asyncio.sleep(settings.poll_seconds)


def _ready(node: dict[str, Any]) -> bool:
    conditions = node.get("status", {}).get("conditions", [])
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _report_fanout(reporter: Reporter, fanout: FanOut, settings: Settings) -> None:
    common: dict[str, Any] = {"sandboxes": settings.fanout, "fault": f"{FAULT} node={NODE}"}
    if fanout.applied_s:
        reporter.emit(
            "fault.fanout_p99_s",
            round(percentile(fanout.applied_s, 99), 3),
            "s",
            target=FANOUT_TARGET,
            **common,
            reached=len(fanout.applied_s),
            p50_s=round(percentile(fanout.applied_s, 50), 3),
            max_s=round(max(fanout.applied_s), 3),
            errors=fanout.apply_errors[:5],
        )
    else:
        reporter.error("fault.fanout_p99_s", "s", "; ".join(fanout.apply_errors[:3]), target=FANOUT_TARGET)
    if fanout.cleared_s and len(fanout.cleared_s) == len(fanout.applied_s):
        reporter.emit(
            "fault.clear_all_p99_s",
            round(percentile(fanout.cleared_s, 99), 3),
            "s",
            target=CLEAR_TARGET,
            **common,
            healthy=len(fanout.cleared_s),
            p50_s=round(percentile(fanout.cleared_s, 50), 3),
            max_s=round(max(fanout.cleared_s), 3),
            node_not_ready_after_s=None if fanout.verdict_s is None else round(fanout.verdict_s, 2),
            poll_s=settings.poll_seconds,
            errors=fanout.clear_errors[:5],
        )
    else:
        problems = fanout.clear_errors[:3] or ["no sandbox was healthy again"]
        reporter.error("fault.clear_all_p99_s", "s", "; ".join(problems), target=CLEAR_TARGET)
