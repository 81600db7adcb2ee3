"""The trace stream: 100 and 500 websockets on one cluster at 2000 events/s, against a raw broadcast.

What is served. One lab process started the way ``manage.py runlab`` starts it (``bench._apiserve``:
daphne, Channels, the real ``TraceConsumer`` at ``/ws/lab/demo/trace/``, on a free loopback port, in a
temporary data directory, without components so that nothing else makes events). Inside it, a driver
task (``bench._tracedrive``) emits 2000 events a second (``--rate``) into the demo cluster's real
``TraceBus``: store transactions and watch events, schema-valid, stamped by the bus with ``seq`` and
``ts``. Beside it, in a process of its own, the baseline (``bench._traceraw``): a bare
``websockets.asyncio.server`` making the same events at the same rate and broadcasting them in frames
of the same format every 33 ms, the pace the consumer keeps per socket: the same bytes, without
Django, Channels, per-socket framing or anything else Kubelab does.

Who watches. ``N`` sockets (``--clients``, 100 then 500) in a separate process
(``bench._traceclient``; ``--client-processes`` to spread them) using the ``websockets`` client
library, anonymous visitors of the demo cluster as on a fresh ``make run``. Each says
``subscribe since null`` and reads frames as the topology page does, resyncing after a gap. For each
``N`` the raw server is measured first, then the lab: the driver starts once every socket has
subscribed; after every socket's first frame and ``--warmup`` seconds, the window of ``--seconds``
is measured.

Lines, for each ``N`` (``c100``, ``c500``):

``trace.cN.delivered_events_per_s``
    Events carried in frames, per second, summed over the sockets; baseline the raw server's, target
    ratio ``>= 0.5``. Every socket would get every event: ``expected_events_per_s`` is the rate times
    ``N``. Also on the line: ``accounted_events_per_s`` (carried plus those a frame's summary counts
    instead, for a socket that fell behind), ``summarised_events_per_s``, frames per second and
    events per frame, the rate the server really made events at (``made_events_per_s``), and the
    CPU of the server and of the clients over the window (cores: CPU seconds per second; 1.0 is one
    core saturated), for both, and the server's CPU per delivered event (``server_us_per_delivery``:
    what a delivery costs the server, which other work on the machine changes little).
``trace.cN.latency.p99_ms`` (and ``.p50_ms``, for information)
    From an event's ``ts`` (stamped by the bus as it is emitted) to the client reading the frame
    that carries it, for every event of the first ``--latency-sockets`` sockets (50); target
    ``<= 250`` ms. ``frame_oldest_p99_ms`` is the oldest event of each frame on every socket; ``raw``
    the baseline's figures.
``trace.cN.unresolved_gaps``
    Gaps (a frame not starting where the last one ended) that a resync did not close; target
    ``== 0``. With the gaps found, resolved, 410s, overlaps, and the frames checked whole (1 in
    ``--verify-every`` per socket) with any problem found in them, which makes the line an ``error``.

Caveats. Servers and clients share the machine (two cores here and in CI): each server has a core
while it is measured, the clients the other. The clients read frames from their bytes, not with
``json.loads`` (see ``bench._traceclient``), and time every event on 50 sockets only, so that they
are not the limit; ``client_cpu`` near 1.0 says they were, and then the raw baseline (and the
latency) is theirs as much as the server's. Latency includes the client's own queueing. At 500
sockets a million events a second go out (about 350 MB/s of JSON): the figures are the machine's as
much as the code's, and ``load_average`` (the machine's, at the end of the window) says how busy it
was. A lab its sockets saturate may answer its driver control late or not at all (its event loop
is the one the sockets keep busy): ``made_events_per_s`` is then null and ``control_error`` says
so; what the clients measured stands. ``--quick`` (CI): 20 sockets, 3 s. ``--profile FILE`` runs
the lab's event loop under cProfile while it is driven (warm-up and window), writing ``FILE.cN``:
where the time goes, not figures to quote (cProfile slows the lab two or three times: it saturates
earlier).
"""

from __future__ import annotations

import argparse
import array
import asyncio
import os
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench.api import CPUMeter, LabProcess, LineProcess, defaults_for, free_port, lab_directory
from bench.report import Reporter
from bench.stats import summarize

CLUSTER = "demo"
#: The targets, as the project states them.
DELIVERED_TARGET = ">= 0.5"
LATENCY_TARGET = "<= 250"
GAPS_TARGET = "== 0"
#: Seconds the lab's driver control and the raw server may take to start driving (a lab that its
#: sockets saturate answers late, or not at all: see "Caveats"), and to say how it went or stop,
#: which only informs (the lab is stopped anyway).
CONTROL_TIMEOUT = 60.0
STATUS_TIMEOUT = 10.0
#: The lab: no components (only the driver makes events), anonymous visitors may watch the demo.
LAB_ENV = {"KUBELAB_COMPONENTS": "none", "KUBELAB_DEMO_CLUSTER": CLUSTER, "KUBELAB_DEMO_ANONYMOUS": "true"}


@dataclass(frozen=True, slots=True)
class Settings:
    """How big a run is; ``--quick`` shrinks the socket counts and the window, not what is measured."""

    clients: tuple[int, ...]
    rate: float
    seconds: float
    warmup: float
    latency_sockets: int
    client_processes: int
    verify_every: int
    profile: Path | None
    directory: Path | None
    keep: bool

    @classmethod
    def from_options(cls, options: argparse.Namespace) -> Settings:
        pick = defaults_for(options)
        clients = pick(options.clients, "100,500", "20")
        return cls(
            clients=tuple(int(n) for n in str(clients).split(",") if n.strip()),
            rate=options.rate,
            seconds=pick(options.seconds, 10.0, 3.0),
            warmup=pick(options.warmup, 2.0, 1.0),
            latency_sockets=options.latency_sockets,
            client_processes=options.client_processes,
            verify_every=options.verify_every,
            profile=options.profile.absolute() if options.profile else None,
            directory=options.dir,
            keep=options.keep,
        )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("trace")
    group.add_argument("--clients", help="socket counts, one scenario each (100,500; --quick 20)")
    group.add_argument("--rate", type=float, default=2000.0, help="events/s made on the cluster (2000)")
    group.add_argument("--seconds", type=float, help="the measured window (10; --quick 3)")
    group.add_argument("--warmup", type=float, help="seconds of stream before the window (2; --quick 1)")
    group.add_argument("--latency-sockets", type=int, default=50, help="sockets timing every event (50)")
    group.add_argument("--client-processes", type=int, default=1, help="processes the sockets use (1)")
    group.add_argument("--verify-every", type=int, default=50, help="parse 1 frame in N whole (50)")
    group.add_argument(
        "--profile",
        type=Path,
        metavar="FILE",
        help="cProfile the lab's event loop while it is driven: FILE.c100, FILE.c500 (python -m pstats)",
    )
    group.add_argument("--dir", type=Path, help="where the temporary lab goes (the system temp dir)")
    group.add_argument("--keep", action="store_true", help="keep the temporary lab (and its logs)")


async def run(options: argparse.Namespace, reporter: Reporter) -> None:
    settings = Settings.from_options(options)
    wanted = [n for n in settings.clients if reporter.wants(f"c{n}")]
    if not wanted:
        return
    with lab_directory(settings, "trace") as tmp:
        try:
            lab = await asyncio.to_thread(TraceLab.start, tmp, LAB_ENV)
        except Exception as error:
            for n in wanted:
                report_unavailable(reporter, n, f"the lab did not start: {error}")
            return
        raw: RawServer | None = None
        try:
            raw = await asyncio.to_thread(RawServer.start, tmp / "raw.log")
            for n in wanted:
                try:
                    await measure_scenario(reporter, settings, lab, raw, n, tmp)
                except Exception as error:
                    report_unavailable(reporter, n, f"{type(error).__name__}: {error}")
        except Exception as error:
            for n in wanted:
                report_unavailable(reporter, n, f"the raw server did not start: {error}")
        finally:
            if raw is not None:
                raw.close()
            await asyncio.to_thread(lab.stop)


def report_unavailable(reporter: Reporter, clients: int, problem: str) -> None:
    group = f"c{clients}"
    reporter.error(f"{group}.delivered_events_per_s", "events/s", problem, target=DELIVERED_TARGET)
    reporter.error(f"{group}.latency.p50_ms", "ms", problem)
    reporter.error(f"{group}.latency.p99_ms", "ms", problem, target=LATENCY_TARGET)
    reporter.error(f"{group}.unresolved_gaps", "count", problem, target=GAPS_TARGET)


# -- the two servers -------------------------------------------------------------------------------


class TraceLab(LabProcess):
    """The lab (``bench._apiserve``: runlab), whose driver is controlled over its web port."""

    #: A lab its sockets saturated may take minutes to wind down: it is a temporary one, killed sooner.
    stop_timeout = 20.0
    #: Where the driver writes a cProfile of the next drive (``--profile``), and for how long.
    profile: Path | None = None
    profile_seconds = 10.0

    def _credentials(self) -> None:
        """None needed: anonymous visitors may watch the demo cluster (``KUBELAB_DEMO_ANONYMOUS``)."""

    @property
    def web_origin(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    @property
    def trace_url(self) -> str:
        return f"ws://127.0.0.1:{self.web_port}/ws/lab/{CLUSTER}/trace/"

    async def drive(self, rate: float) -> dict[str, Any]:
        params = {"cluster": CLUSTER, "rate": str(rate)}
        if self.profile is not None:
            params.update(profile=str(self.profile), profile_seconds=str(self.profile_seconds))
        return await self._control("POST", "drive", params)

    async def stop_driving(self) -> dict[str, Any]:
        return await self._control("POST", "stop", {}, STATUS_TIMEOUT)

    async def driver_status(self) -> dict[str, Any]:
        return await self._control("GET", "status", {}, STATUS_TIMEOUT)

    async def _control(
        self, method: str, action: str, params: dict[str, str], wait: float = CONTROL_TIMEOUT
    ) -> dict[str, Any]:
        async with httpx.AsyncClient(timeout=wait) as client:
            reply = await client.request(method, f"{self.web_origin}/bench/trace/{action}", params=params)
        body: dict[str, Any] = reply.json()
        if reply.status_code != 200:
            raise RuntimeError(f"the lab's trace driver answered {reply.status_code}: {body}")
        return body


class RawServer(LineProcess):
    """``bench._traceraw``: the bare ``websockets`` broadcast of the same frames."""

    name = "raw websockets server"

    def __init__(self, port: int, log: Path) -> None:
        self.port = port
        super().__init__([sys.executable, "-m", "bench._traceraw", "--port", str(port)], log=log)

    @classmethod
    def start(cls, log: Path) -> RawServer:
        server = cls(free_port(), log)
        try:
            server.line(30.0, "that it listens")
        except BaseException:
            server.close()
            raise
        return server

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/"

    async def drive(self, rate: float) -> dict[str, Any]:
        self.send(f"drive {rate}")
        return await asyncio.to_thread(self.line, CONTROL_TIMEOUT, "that it drives")

    async def stop_driving(self) -> dict[str, Any]:
        self.send("stop")
        return await asyncio.to_thread(self.line, CONTROL_TIMEOUT, "that it stopped")

    async def driver_status(self) -> dict[str, Any]:
        self.send("status")
        return await asyncio.to_thread(self.line, STATUS_TIMEOUT, "its status")


@dataclass(frozen=True, slots=True)
class Contender:
    """A server to measure, the same way for both."""

    name: str
    url: str
    origin: str
    pid: int
    drive: Callable[[float], Awaitable[dict[str, Any]]]
    status: Callable[[], Awaitable[dict[str, Any]]]
    stop: Callable[[], Awaitable[dict[str, Any]]]
    raw: bool


# -- one contender, N sockets ----------------------------------------------------------------------


class ClientProcess(LineProcess):
    """One ``bench._traceclient`` process with its share of the sockets."""

    name = "trace client process"

    def __init__(
        self, contender: Contender, settings: Settings, count: int, samples: Path, latency: int
    ) -> None:
        self.samples = samples
        self.count = count
        command = [
            sys.executable, "-m", "bench._traceclient", contender.url,
            "--clients", str(count), "--origin", contender.origin, "--samples", str(samples),
            "--seconds", str(settings.seconds), "--warmup", str(settings.warmup),
            "--latency-sockets", str(latency), "--verify-every", str(settings.verify_every),
        ]  # fmt: skip
        if contender.raw:
            command.append("--raw")
        super().__init__(command, log=samples.with_suffix(".log"))


@dataclass(slots=True)
class Outcome:
    """What the sockets of one contender saw over the window, summed over the client processes."""

    clients: int
    seconds: float = 0.0
    counts: dict[str, int] = field(default_factory=dict)
    latencies: array.array[float] = field(default_factory=lambda: array.array("d"))
    oldest: array.array[float] = field(default_factory=lambda: array.array("d"))
    errors: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    latency_sockets: int = 0
    server_cpu: float | None = None
    client_cpu: float | None = None
    made_per_s: float | None = None
    load_average: float | None = None
    control_error: str | None = None
    driver: dict[str, Any] = field(default_factory=dict)

    def server_us_per_delivery(self) -> float | None:
        delivered = self.per_s("delivered")
        if self.server_cpu is None or not delivered:
            return None
        return round(self.server_cpu / delivered * 1e6, 3)

    def per_s(self, key: str) -> float:
        return self.counts.get(key, 0) / self.seconds if self.seconds > 0 else 0.0


#: Counts the client processes report, summed.
COUNTS = (
    "frames", "delivered", "summarised", "gaps", "resolved", "unresolved", "gone", "overlaps",
    "skipped_frames", "silent_sockets", "closed_early", "verified_frames", "problems", "error_count",
)  # fmt: skip


async def measure_contender(contender: Contender, settings: Settings, clients: int, tmp: Path) -> Outcome:
    spread = max(1, min(settings.client_processes, clients))
    counts = [clients // spread + (1 if i < clients % spread else 0) for i in range(spread)]
    latency = [
        settings.latency_sockets // spread + (1 if i < settings.latency_sockets % spread else 0)
        for i in range(spread)
    ]
    prefix = f"{contender.name}-c{clients}"
    processes = [
        ClientProcess(contender, settings, n, tmp / f"{prefix}-{i}.samples", latency[i])
        for i, n in enumerate(counts)
    ]
    outcome = Outcome(clients)
    try:
        for process in processes:
            line = await asyncio.to_thread(process.line, 300.0, "its subscriptions")
            outcome.errors.extend(line.get("errors", []))
            if line["subscribed"] != process.count:
                raise RuntimeError(
                    f"{line['subscribed']} of {process.count} sockets subscribed to {contender.name}: "
                    f"{line.get('errors', [])[:3]}"
                )
        await contender.drive(settings.rate)
        for process in processes:
            process.send("go")
        started = settings.warmup + 60.0
        for process in processes:
            await asyncio.to_thread(process.line, started, "the start of its window")
        meter = CPUMeter(contender.pid, [p.process.pid for p in processes])
        made0 = await status_or_none(contender, outcome)
        for process in processes:
            await asyncio.to_thread(process.line, settings.seconds + 30.0, "the end of its window")
        outcome.server_cpu = meter.server_cores()
        outcome.client_cpu = meter.client_cores()
        outcome.load_average = round(os.getloadavg()[0], 2)
        made1 = await status_or_none(contender, outcome)
        results = [await asyncio.to_thread(p.line, 60.0, "its result") for p in processes]
        try:
            outcome.driver = await contender.stop()
        except (httpx.HTTPError, RuntimeError) as error:
            outcome.control_error = (
                f"the {contender.name} server did not stop driving: {type(error).__name__}"
            )
    finally:
        for process in processes:
            process.close()
    for result in results:
        for key in COUNTS:
            outcome.counts[key] = outcome.counts.get(key, 0) + int(result.get(key, 0))
        outcome.errors.extend(result.get("errors", []))
        outcome.problems.extend(result.get("problem_examples", []))
        outcome.latency_sockets += int(result.get("latency_sockets", 0))
    outcome.seconds = max(float(r["seconds"]) for r in results)
    for process in processes:
        outcome.latencies.frombytes(process.samples.read_bytes())
        outcome.oldest.frombytes(process.samples.with_name(process.samples.name + ".frames").read_bytes())
    if made0 is not None and made1 is not None:
        made = int(made1["made"]) - int(made0["made"])
        seconds = float(made1["seconds"]) - float(made0["seconds"])
        outcome.made_per_s = round(made / seconds, 1) if seconds > 0 else None
    return outcome


async def status_or_none(contender: Contender, outcome: Outcome) -> dict[str, Any] | None:
    """How many events the server has made so far (None if it could not say in time)."""
    try:
        return await contender.status()
    except (httpx.HTTPError, RuntimeError) as error:
        outcome.control_error = f"the {contender.name} server did not say how many events it made: {error!r}"
        return None


async def measure_scenario(
    reporter: Reporter, settings: Settings, lab: TraceLab, raw: RawServer, clients: int, tmp: Path
) -> None:
    baseline = Contender(
        "raw", raw.url, raw.origin, raw.pid, raw.drive, raw.driver_status, raw.stop_driving, raw=True
    )
    kubelab = Contender(
        "kubelab",
        lab.trace_url,
        lab.web_origin,
        lab.pid,
        lab.drive,
        lab.driver_status,
        lab.stop_driving,
        raw=False,
    )
    raw_outcome = await measure_contender(baseline, settings, clients, tmp)
    if settings.profile is not None:
        lab.profile = settings.profile.with_name(f"{settings.profile.name}.c{clients}")
        lab.profile_seconds = settings.warmup + settings.seconds
    outcome = await measure_contender(kubelab, settings, clients, tmp)
    report_scenario(reporter, settings, clients, outcome, raw_outcome)


def _both(kubelab: Any, raw: Any) -> dict[str, Any]:
    return {"kubelab": kubelab, "raw": raw}


def _latency(outcome: Outcome) -> dict[str, Any] | None:
    if not outcome.latencies:
        return None
    summary = summarize(outcome.latencies)
    return {
        "p50_ms": round(summary.p50 * 1000, 3),
        "p99_ms": round(summary.p99 * 1000, 3),
        "max_ms": round(summary.max * 1000, 3),
        "samples": summary.count,
    }


def report_scenario(
    reporter: Reporter, settings: Settings, clients: int, outcome: Outcome, raw: Outcome
) -> None:
    group = f"c{clients}"
    common: dict[str, Any] = {
        "clients": clients,
        "rate": settings.rate,
        "seconds": round(outcome.seconds, 2),
    }
    broken = []
    for name, seen in (("kubelab", outcome), ("raw", raw)):
        if seen.errors:
            broken.append(f"{name}: {len(seen.errors)} socket errors: {seen.errors[:3]}")
        if seen.counts.get("silent_sockets"):
            broken.append(f"{name}: {seen.counts['silent_sockets']} sockets had no frame")
    error: dict[str, Any] = {"error": "; ".join(broken)} if broken else {}

    frames = _both(outcome.per_s("frames"), raw.per_s("frames"))
    reporter.emit(
        f"{group}.delivered_events_per_s",
        outcome.per_s("delivered"),
        "events/s",
        baseline=raw.per_s("delivered"),
        target=DELIVERED_TARGET,
        **common,
        expected_events_per_s=settings.rate * clients,
        accounted_events_per_s=_both(
            round(outcome.per_s("delivered") + outcome.per_s("summarised"), 1),
            round(raw.per_s("delivered") + raw.per_s("summarised"), 1),
        ),
        summarised_events_per_s=_both(
            round(outcome.per_s("summarised"), 1), round(raw.per_s("summarised"), 1)
        ),
        frames_per_s=_both(round(frames["kubelab"], 1), round(frames["raw"], 1)),
        events_per_frame=_both(
            round(outcome.per_s("delivered") / frames["kubelab"], 1) if frames["kubelab"] else None,
            round(raw.per_s("delivered") / frames["raw"], 1) if frames["raw"] else None,
        ),
        made_events_per_s=_both(outcome.made_per_s, raw.made_per_s),
        server_cpu=_both(outcome.server_cpu, raw.server_cpu),
        # The server's CPU per event it got to a socket: what the server costs, whatever else runs.
        server_us_per_delivery=_both(outcome.server_us_per_delivery(), raw.server_us_per_delivery()),
        client_cpu=_both(outcome.client_cpu, raw.client_cpu),
        driver_late_ms=outcome.driver.get("late_ms"),
        **({"control_error": outcome.control_error} if outcome.control_error else {}),
        load_average=_both(outcome.load_average, raw.load_average),
        **error,
    )

    latency = _latency(outcome)
    oldest = summarize(outcome.oldest).p99 * 1000 if outcome.oldest else None
    latency_extra: dict[str, Any] = {
        **common,
        "latency_sockets": outcome.latency_sockets,
        "samples": latency["samples"] if latency else 0,
        "frame_oldest_p99_ms": round(oldest, 3) if oldest is not None else None,
        "raw": _latency(raw),
        **error,
    }
    if latency is None:
        reporter.error(f"{group}.latency.p50_ms", "ms", "no events in the window", **latency_extra)
        reporter.error(
            f"{group}.latency.p99_ms", "ms", "no events in the window", target=LATENCY_TARGET, **latency_extra
        )
    else:
        reporter.emit(f"{group}.latency.p50_ms", latency["p50_ms"], "ms", **latency_extra)
        reporter.emit(
            f"{group}.latency.p99_ms",
            latency["p99_ms"],
            "ms",
            target=LATENCY_TARGET,
            max_ms=latency["max_ms"],
            **latency_extra,
        )

    counts = outcome.counts
    gap_problems = list(broken)
    if counts.get("problems"):
        gap_problems.append(f"{counts['problems']} frame problems: {outcome.problems[:3]}")
    if counts.get("overlaps"):
        gap_problems.append(f"{counts['overlaps']} frames repeated seqs a socket already had")
    gap_error: dict[str, Any] = {"error": "; ".join(gap_problems)} if gap_problems else {}
    reporter.emit(
        f"{group}.unresolved_gaps",
        counts.get("unresolved", 0),
        "count",
        target=GAPS_TARGET,
        **common,
        gaps=counts.get("gaps", 0),
        resolved=counts.get("resolved", 0),
        gone=counts.get("gone", 0),
        overlaps=counts.get("overlaps", 0),
        skipped_frames=counts.get("skipped_frames", 0),
        verified_frames=counts.get("verified_frames", 0),
        raw_gaps=raw.counts.get("gaps", 0),
        **gap_error,
    )
