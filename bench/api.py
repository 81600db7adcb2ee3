"""The API server: GET and LIST throughput, watch-stream rate and watch fan-out latency.

Everything runs against one daphne process started the way ``manage.py runlab`` starts it (it *is*
runlab: ``bench._apiserve``), on free loopback ports, in a temporary data directory: the API port
speaks HTTPS with the lab's serving certificate, the web port plain HTTP (it serves the API as well,
for the browser). Everything but the fan-out watchers goes to the HTTPS API port. That daphne also
serves raw ASGI handlers under ``/raw/`` which send bytes captured from the real API beforehand
(``bench._apiserve.RawHandlers``): the same listener, TLS, process and event loop, so the ratio is
what the API pipeline (routing, authentication, authorization, request info, registry, watch cache,
serialization) costs over daphne itself.

Setup: 1000 pods (``--pods``) are created in namespace ``default`` through the API (minimal valid
pods, 16 requests in flight); then one pod, the list and the watch events of those creates are
captured for the raw handlers.

``get.requests_per_s``
    ``GET /api/v1/namespaces/default/pods/<name>`` with a bearer token, driven by ``wrk -t2 -c32``
    (Debian's ``wrk``: C, a few percent of a core here, so the generator is not the bottleneck; the
    raw handler's rate shows the ceiling it reaches), against ``GET /raw/get`` returning the same
    headers and body. Rounds alternate raw/API (``--rounds``, ``--duration`` s each), best of each
    kept. Target ``>= 0.5`` of raw.
``list.requests_per_s``
    The same for ``GET .../namespaces/default/pods`` (the list of 1000 pods) against ``/raw/list``.
    LIST has no target of its own: reported for information, with its ratio.
``watch.events_per_s``
    A watch from the resourceVersion before the seeded creates replays their 1000 ``ADDED`` events
    (at most 1000: a watcher's buffer holds 1000 events), one chunk each, against ``/raw/stream/watch``
    sending the same lines, one ASGI message each. A separate process (``bench._apiclient stream``)
    opens a TLS connection, sends a warm-up request on it (the handshake is not timed), then times
    from sending the watch request to receiving the 1000th line; it repeats for ``--stream-seconds``
    per round. It reads with a bare TLS socket and counts line ends without parsing: httpx (the
    ``--stream-client httpx`` option) decodes the chunked framing in Python and tops out near 60k
    events/s, below what daphne sends raw, which would make the raw baseline a measure of the client.
    Target ``>= 0.7`` of raw.
``fanout.delivery.p50_ms`` / ``.p99_ms``
    1000 concurrent HTTP watchers (``--watchers``; a separate process reading them all in one epoll
    loop over non-blocking sockets, ``bench._apiclient watchers``) on the plain-HTTP web port, on
    ``pods?watch=true&resourceVersion=<current>``, while this process creates pods at 20 writes/s
    (``--write-rate``) for 15 s (``--fanout-seconds``). Each pod carries the writer's monotonic clock
    read just before its request; a delivery's latency is from then to the watcher reading the event.
    p99 target ``<= 250`` ms. Deliveries still missing ``--drain-seconds`` after the last write make
    the lines carry an ``error`` (a p99 of the deliveries that arrived would flatter the server).
``fanout.mutating.p50_ms`` / ``.p99_ms``
    The create requests' own latency during that run, as the writer sees it (over HTTPS, as kubectl
    writes); p99 ``<= 50`` ms. The fan-out lines also carry ``server_us_per_delivery``: the server's
    CPU time over the run divided by the deliveries, a cost per delivery that another process
    taking CPU from daphne does not change much (the latencies it does change).
``fanout_tls.*``
    The same run with the watchers on the HTTPS API port, for information (no targets).

Why the fan-out watchers use plain HTTP. The target is for "1000 concurrent HTTP watchers", and the
targets are checked that way: what they measure is the watch cache, the watch handler and daphne,
the parts the API server can change. Over HTTPS every delivery also pays for a TLS record of its
own: Twisted schedules a flush for each write and pyOpenSSL encrypts it (``SSL_write``), none of it
Kubelab's code. Measured here (two cores, other test suites running now and then), the same run
costs 31-38 µs of server CPU per delivery over HTTP and 40-49 µs over HTTPS
(``server_us_per_delivery``): TLS is about a fifth of the server's CPU at 20,000 deliveries/s, and
puts daphne at 0.8-0.95 of a core, with little headroom left for whatever else the machine runs.
``fanout_tls`` keeps that cost visible.

Caveats. The load generators share the machine with daphne (two cores in CI and here): daphne uses
one core, the clients the other. The lines report ``server_cpu`` and ``client_cpu`` (CPU seconds per
wall second of the measured window: 1.0 is one core saturated); a raw rate far above the API's, with
the client's CPU well below 1, is what shows the client was not the limit. Anything else running on
the machine (another test suite, a build) takes CPU from daphne and shows as a ``server_cpu`` below 1
while the server falls behind: compare runs on a quiet machine. The fan-out client reads the stamps
from the bytes without parsing JSON. Latencies compare two processes' readings of
``time.monotonic()``, which on Linux is the same system-wide clock.

Needs ``wrk`` (``make debian-packages`` installs it); without it the GET and LIST lines carry an
``error`` and ``met`` false. ``--quick`` (CI): 2 s rounds, 2 rounds, 200 watchers for 5 s.
``KUBELAB_BENCH_PROFILE=FILE`` runs the server under cProfile (see ``bench._apiserve``).
"""

from __future__ import annotations

import argparse
import array
import asyncio
import base64
import contextlib
import dataclasses
import json
import os
import re
import resource
import select
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, Self

import httpx
import yaml

from bench._apiclient import STAMP_KEY, TOKEN_ENV
from bench._apiserve import PROFILE_ENV
from bench.report import Reporter
from bench.stats import summarize
from bench.timing import alternate

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = "demo"
NAMESPACE = "default"
START_TIMEOUT = 120.0
#: The targets, as the project states them.
GET_TARGET = ">= 0.5"
WATCH_TARGET = ">= 0.7"
FANOUT_TARGET = "<= 250"
MUTATING_TARGET = "<= 50"
#: Concurrent creates while seeding.
SEED_CONCURRENCY = 16
#: A watcher's buffer (controlplane.apiserver.watchcache.WATCHER_BUFFER): a replay longer than this
#: closes the watch, so the stream replays at most this many events.
MAX_REPLAY = 1000

GROUPS = ("get", "list", "watch", "fanout", "fanout_tls")
NO_WRK = "wrk is not installed (Debian package wrk; `make debian-packages` installs it)"


@dataclass(frozen=True, slots=True)
class Settings:
    """How big a run is; ``--quick`` shrinks durations and the watcher count, not what is measured."""

    duration: float
    rounds: int
    threads: int
    connections: int
    pods: int
    stream_seconds: float
    stream_client: str
    watchers: int
    watcher_processes: int
    write_rate: float
    fanout_seconds: float
    drain_seconds: float
    directory: Path | None
    keep: bool

    @classmethod
    def from_options(cls, options: argparse.Namespace) -> Settings:
        pick = defaults_for(options)
        return cls(
            duration=pick(options.duration, 5.0, 2.0),
            rounds=pick(options.rounds, 3, 2),
            threads=options.threads,
            connections=options.connections,
            pods=options.pods,
            stream_seconds=pick(options.stream_seconds, 3.0, 1.0),
            stream_client=options.stream_client,
            watchers=pick(options.watchers, 1000, 200),
            watcher_processes=options.watcher_processes,
            write_rate=options.write_rate,
            fanout_seconds=pick(options.fanout_seconds, 15.0, 5.0),
            drain_seconds=pick(options.drain_seconds, 30.0, 10.0),
            directory=options.dir,
            keep=options.keep,
        )


def defaults_for(options: argparse.Namespace) -> Callable[[Any, Any, Any], Any]:
    """``pick(value, full, quick)``: an option's value when it was given, else this run's default."""
    quick = bool(options.quick)

    def pick(value: Any, full: Any, fast: Any) -> Any:
        return value if value is not None else (fast if quick else full)

    return pick


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("api")
    group.add_argument("--duration", type=float, help="seconds per wrk round (5; --quick 2)")
    group.add_argument("--rounds", type=int, help="alternating raw/API rounds, best kept (3; --quick 2)")
    group.add_argument("--threads", type=int, default=2, help="wrk threads (2)")
    group.add_argument("--connections", type=int, default=32, help="wrk connections (32)")
    group.add_argument("--pods", type=int, default=1000, help="pods created and listed (1000)")
    group.add_argument("--stream-seconds", type=float, help="seconds per watch-stream round (3; --quick 1)")
    group.add_argument(
        "--stream-client",
        choices=("socket", "httpx"),
        default="socket",
        help="the watch-stream reader: a bare TLS socket (default), or httpx (slower: near one core "
        "against the raw stream, which then understates raw)",
    )
    group.add_argument("--watchers", type=int, help="concurrent HTTP watchers (1000; --quick 200)")
    group.add_argument(
        "--watcher-processes", type=int, default=1, help="processes the watchers are spread over (1)"
    )
    group.add_argument("--write-rate", type=float, default=20.0, help="writes/s during fan-out (20)")
    group.add_argument("--fanout-seconds", type=float, help="length of the fan-out run (15; --quick 5)")
    group.add_argument(
        "--drain-seconds",
        type=float,
        help="how long after the last write deliveries may still arrive (30; --quick 10)",
    )
    group.add_argument("--dir", type=Path, help="where the temporary lab goes (the system temp dir)")
    group.add_argument("--keep", action="store_true", help="keep the temporary lab (and its log)")


async def run(options: argparse.Namespace, reporter: Reporter) -> None:
    settings = Settings.from_options(options)
    wanted = [g for g in GROUPS if reporter.wants(g)]
    if shutil.which("wrk") is None:
        for group in ("get", "list"):
            if group in wanted:
                report_unavailable(reporter, group, NO_WRK)
                wanted.remove(group)
    if not wanted:
        return
    with lab_directory(settings) as tmp:
        try:
            lab = await asyncio.to_thread(LabProcess.start, tmp)
        except Exception as error:
            for group in wanted:
                report_unavailable(reporter, group, f"the lab did not start: {error}")
            return
        try:
            await measure(reporter, settings, lab, wanted)
        finally:
            await asyncio.to_thread(lab.stop)


async def measure(reporter: Reporter, settings: Settings, lab: LabProcess, wanted: list[str]) -> None:
    async with lab.client() as client:
        try:
            seeded = await seed(client, lab, settings.pods)
            capture = await capture_responses(client, lab, seeded)
        except Exception as error:
            for group in wanted:
                report_unavailable(reporter, group, f"seeding the lab failed: {error}")
            return
        if "get" in wanted:
            await guarded(reporter, "get", measure_requests(reporter, lab, settings, "get", capture))
        if "list" in wanted:
            await guarded(reporter, "list", measure_requests(reporter, lab, settings, "list", capture))
        if "watch" in wanted:
            await guarded(reporter, "watch", measure_watch_stream(reporter, lab, settings, capture))
        if "fanout" in wanted:
            await guarded(reporter, "fanout", measure_fanout(reporter, lab, settings, client))
        if "fanout_tls" in wanted:
            await guarded(reporter, "fanout_tls", measure_fanout(reporter, lab, settings, client, tls=True))


async def guarded(reporter: Reporter, group: str, measurement: Awaitable[None]) -> None:
    """Run one group's measurement; a failure becomes its lines' ``error``, not the end of the run."""
    try:
        await measurement
    except Exception as error:
        report_unavailable(reporter, group, f"{type(error).__name__}: {error}")


def report_unavailable(reporter: Reporter, group: str, problem: str) -> None:
    if group == "get":
        reporter.error("get.requests_per_s", "requests/s", problem, target=GET_TARGET)
    elif group == "list":
        reporter.error("list.requests_per_s", "requests/s", problem)
    elif group == "watch":
        reporter.error("watch.events_per_s", "events/s", problem, target=WATCH_TARGET)
    elif group in ("fanout", "fanout_tls"):
        targets = group == "fanout"
        reporter.error(f"{group}.delivery.p50_ms", "ms", problem)
        reporter.error(f"{group}.delivery.p99_ms", "ms", problem, target=FANOUT_TARGET if targets else None)
        reporter.error(f"{group}.mutating.p50_ms", "ms", problem)
        reporter.error(f"{group}.mutating.p99_ms", "ms", problem, target=MUTATING_TARGET if targets else None)


# -- the lab ---------------------------------------------------------------------------------------


@contextlib.contextmanager
def lab_directory(settings: LabDirectory, bench: str = "api") -> Iterator[Path]:
    """A temporary directory for a benchmark's lab, in ``settings.directory``; kept with ``keep``."""
    prefix = f"kubelab-bench-{bench}-"
    if settings.keep:
        path = Path(tempfile.mkdtemp(prefix=prefix, dir=settings.directory))
        print(f"python -m bench {bench}: keeping the lab in {path}", file=sys.stderr)
        yield path
        return
    with tempfile.TemporaryDirectory(prefix=prefix, dir=settings.directory) as tmp:
        yield Path(tmp)


class LabDirectory(Protocol):
    """The settings ``lab_directory`` reads."""

    @property
    def directory(self) -> Path | None: ...

    @property
    def keep(self) -> bool: ...


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def process_cpu(pid: int) -> float | None:
    """CPU seconds (user + system) used so far by process ``pid`` (Linux ``/proc``), or None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def children_cpu() -> float:
    """CPU seconds used by the child processes this process has waited for."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class CPUMeter:
    """The server's and the clients' CPU over one measured window, in cores (CPU s per wall s)."""

    def __init__(self, server_pid: int, client_pids: list[int] | None = None) -> None:
        self.server_pid = server_pid
        self.client_pids = client_pids or []
        self.wall = time.perf_counter()
        self.server = process_cpu(server_pid)
        self.clients = [process_cpu(pid) for pid in self.client_pids]
        self.children = children_cpu()

    def elapsed(self) -> float:
        """Wall seconds since the window opened."""
        return time.perf_counter() - self.wall

    def client_cores(self) -> float | None:
        """The CPU of the running client processes named when the window opened, summed."""
        wall = self.elapsed()
        now = [process_cpu(pid) for pid in self.client_pids]
        used = [
            (after - before) if after is not None and before is not None else 0.0
            for before, after in zip(self.clients, now, strict=True)
        ]
        return round(sum(used) / wall, 3) if wall > 0 else None

    def server_cores(self) -> float | None:
        now = process_cpu(self.server_pid)
        if now is None or self.server is None:
            return None
        return round((now - self.server) / (time.perf_counter() - self.wall), 3)

    def children_cores(self) -> float:
        return round((children_cpu() - self.children) / (time.perf_counter() - self.wall), 3)


class LabProcess:
    """``bench._apiserve`` (runlab plus the raw handlers) in a temporary data directory.

    Another benchmark's server is a subclass naming its own ``module`` (run as ``python -m MODULE
    --web HOST:PORT --api HOST:PORT`` plus ``server_args()``) and what ``ready()`` does once it runs.
    """

    module = "bench._apiserve"

    #: Seconds the lab may take to stop after SIGINT before it is killed.
    stop_timeout = 60.0

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.data_dir = tmp / "data"
        self.raw_dir = tmp / "raw"
        self.log_path = tmp / "runlab.log"
        self.ca_path = tmp / "serving-ca.crt"
        self.web_port = free_port()
        self.api_port = free_port()
        self.token = ""
        self.process: subprocess.Popen[bytes] | None = None
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBELAB_") or k == PROFILE_ENV}
        env.update(
            PYTHONUNBUFFERED="1",
            DJANGO_SETTINGS_MODULE="config.settings",
            KUBELAB_DATA_DIR=str(self.data_dir),
        )
        self.env = env

    @property
    def origin(self) -> str:
        return f"https://127.0.0.1:{self.api_port}"

    @property
    def server(self) -> str:
        """The cluster's API, as a kubeconfig names it."""
        return f"{self.origin}/clusters/{CLUSTER}"

    @property
    def pods(self) -> str:
        return f"{self.server}/api/v1/namespaces/{NAMESPACE}/pods"

    @property
    def web_pods(self) -> str:
        """The same collection on the plain-HTTP web port (which serves the API as well)."""
        return self.pods.replace(self.origin, f"http://127.0.0.1:{self.web_port}", 1)

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    @classmethod
    def start(cls, tmp: Path, env: dict[str, str] | None = None) -> Self:
        """Start the lab in ``tmp``; ``env`` adds settings (``KUBELAB_...``) to its environment."""
        lab = cls(tmp)
        lab.env.update(env or {})
        lab.data_dir.mkdir(parents=True)
        command = [
            sys.executable, "-m", cls.module,
            "--web", f"127.0.0.1:{lab.web_port}", "--api", f"127.0.0.1:{lab.api_port}", *lab.server_args(),
        ]  # fmt: skip
        with lab.log_path.open("wb") as log:
            lab.process = subprocess.Popen(
                command, cwd=ROOT, env=lab.env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        try:
            lab._wait_for("Lab running.")
            lab.ready()
        except BaseException:
            lab.stop()
            raise
        return lab

    def server_args(self) -> list[str]:
        self.raw_dir.mkdir()
        return ["--raw-dir", str(self.raw_dir)]

    def ready(self) -> None:
        """Once the lab runs: fetch what the benchmark needs from it (here, credentials)."""
        self._credentials()

    def log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def _wait_for(self, text: str) -> None:
        assert self.process is not None
        deadline = time.monotonic() + START_TIMEOUT
        while text not in self.log_path.read_text(errors="replace"):
            if self.process.poll() is not None:
                raise RuntimeError(f"runlab exited with {self.process.returncode}: {self.log_tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"runlab never printed {text!r}: {self.log_tail()}")
            time.sleep(0.1)

    def _credentials(self) -> None:
        """An admin bearer token and the serving CA, from ``manage.py kubeconfig`` as a user gets them."""
        command = [
            sys.executable, "manage.py", "kubeconfig", "--cluster", CLUSTER, "--user", "admin",
            "--server", self.origin,
        ]  # fmt: skip
        made = subprocess.run(
            command,
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            check=True,
        )
        config = yaml.safe_load(made.stdout)
        self.token = config["users"][0]["user"]["token"]
        cluster = config["clusters"][0]["cluster"]
        self.ca_path.write_bytes(base64.b64decode(cluster["certificate-authority-data"]))
        if cluster["server"] != self.server:
            raise RuntimeError(f"the kubeconfig names {cluster['server']}, not {self.server}")

    def ssl_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca_path))

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            verify=self.ssl_context(),
            headers={"Authorization": f"Bearer {self.token}"},
            timeout=60.0,
        )

    def wrk_script(self) -> Path:
        """A wrk script adding the bearer token (a file: wrk's ``-H`` would show it to ``ps``)."""
        script = self.tmp / "auth.lua"
        if not script.exists():
            script.write_text(f'wrk.headers["Authorization"] = {json.dumps("Bearer " + self.token)}\n')
        return script

    def client_env(self) -> dict[str, str]:
        return {**os.environ, TOKEN_ENV: self.token}

    def stop(self) -> None:
        process = self.process
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGINT)
        try:
            process.wait(self.stop_timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# -- seeding and capturing -------------------------------------------------------------------------


def pod(name: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if annotations:
        metadata["annotations"] = annotations
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        # Not for the cluster's scheduler: the benchmark measures the API server, and a scheduler
        # patching every seeded pod's status would add writes and watch events of its own.
        "spec": {"schedulerName": "bench-no-scheduler", "containers": [{"name": "c", "image": "nginx"}]},
    }


@dataclass(slots=True)
class Seeded:
    """The pods created for the run: their names and the resourceVersion before the first."""

    names: list[str]
    before: int
    revisions: list[int] = field(default_factory=list)


async def seed(client: httpx.AsyncClient, lab: LabProcess, count: int) -> Seeded:
    listed = await client.get(lab.pods)
    listed.raise_for_status()
    body = listed.json()
    if body["items"]:
        raise RuntimeError(f"namespace {NAMESPACE} already has {len(body['items'])} pods")
    seeded = Seeded([f"pod-{i:05d}" for i in range(count)], int(body["metadata"]["resourceVersion"]))
    gate = asyncio.Semaphore(SEED_CONCURRENCY)

    async def create(name: str) -> None:
        async with gate:
            reply = await client.post(lab.pods, json=pod(name))
            if reply.status_code != 201:
                raise RuntimeError(f"creating pod {name}: {reply.status_code} {reply.text[:300]}")
            seeded.revisions.append(int(reply.json()["metadata"]["resourceVersion"]))

    await asyncio.gather(*(create(name) for name in seeded.names))
    seeded.revisions.sort()
    return seeded


#: Headers daphne adds to every response itself; the raw handlers get them from daphne too.
DAPHNE_HEADERS = frozenset({"server", "date", "transfer-encoding", "connection"})


@dataclass(frozen=True, slots=True)
class Capture:
    get_path: str
    list_path: str
    watch_path: str
    watch_events: int


def save_raw(lab: LabProcess, name: str, headers: httpx.Headers, body: bytes) -> None:
    kept = [[k, v] for k, v in headers.multi_items() if k.lower() not in DAPHNE_HEADERS]
    (lab.raw_dir / f"{name}.headers.json").write_text(json.dumps(kept))
    (lab.raw_dir / f"{name}.body").write_bytes(body)


async def capture_responses(client: httpx.AsyncClient, lab: LabProcess, seeded: Seeded) -> Capture:
    """Fetch the responses the raw handlers will send: one pod, the list, the watch replay."""
    name = seeded.names[len(seeded.names) // 2]
    get_path = f"{lab.pods.removeprefix(lab.origin)}/{name}"
    reply = await client.get(lab.origin + get_path)
    reply.raise_for_status()
    save_raw(lab, "get", reply.headers, reply.content)

    list_path = lab.pods.removeprefix(lab.origin)
    reply = await client.get(lab.origin + list_path)
    reply.raise_for_status()
    items = len(reply.json()["items"])
    if items != len(seeded.names):
        raise RuntimeError(f"the list has {items} pods, {len(seeded.names)} were created")
    save_raw(lab, "list", reply.headers, reply.content)

    # The watch replays the last (at most MAX_REPLAY) seeded creates.
    events = min(MAX_REPLAY, len(seeded.revisions))
    start = seeded.before if events == len(seeded.revisions) else seeded.revisions[-events - 1]
    watch_path = f"{list_path}?watch=true&resourceVersion={start}"
    lines: list[bytes] = []
    async with client.stream("GET", lab.origin + watch_path) as response:
        response.raise_for_status()
        headers = response.headers
        pending = b""
        async for data in response.aiter_raw():
            pending += data
            *complete, pending = pending.split(b"\n")
            lines.extend(line + b"\n" for line in complete)
            if len(lines) >= events:
                break
    if len(lines) != events or any(b'"type":"ADDED"' not in line[:20] for line in lines):
        raise RuntimeError(f"the watch replay gave {len(lines)} lines, not {events} ADDED events")
    save_raw(lab, "watch", headers, b"".join(lines))
    return Capture(get_path, list_path, watch_path, events)


# -- GET and LIST with wrk -------------------------------------------------------------------------

_REQUESTS = re.compile(r"Requests/sec:\s*([0-9.]+)")
_NON_2XX = re.compile(r"Non-2xx or 3xx responses:\s*(\d+)")
_SOCKET_ERRORS = re.compile(r"Socket errors:\s*connect (\d+), read (\d+), write (\d+), timeout (\d+)")
_LATENCY = re.compile(r"Latency\s+([0-9.]+)(us|ms|s)\b")


@dataclass(frozen=True, slots=True)
class WrkRun:
    requests_per_s: float
    latency_ms: float | None
    client_cpu: float
    server_cpu: float | None


def run_wrk(lab: LabProcess, settings: Settings, path: str) -> WrkRun:
    wrk = shutil.which("wrk")
    if wrk is None:
        raise RuntimeError(NO_WRK)
    command = [
        wrk, f"-t{settings.threads}", f"-c{settings.connections}", f"-d{settings.duration:g}s",
        "--timeout", "30s", "--script", str(lab.wrk_script()), lab.origin + path,
    ]  # fmt: skip
    meter = CPUMeter(lab.pid)
    done = subprocess.run(command, capture_output=True, text=True, timeout=settings.duration + 60)
    server_cpu = meter.server_cores()
    client_cpu = meter.children_cores()
    out = done.stdout
    match = _REQUESTS.search(out)
    if done.returncode != 0 or match is None:
        raise RuntimeError(f"wrk failed ({done.returncode}): {(done.stderr or out).strip()[-300:]}")
    bad = _NON_2XX.search(out)
    if bad and int(bad.group(1)):
        raise RuntimeError(f"wrk got {bad.group(1)} non-2xx responses from {path}")
    errors = _SOCKET_ERRORS.search(out)
    if errors and any(int(n) for n in errors.groups()):
        raise RuntimeError(f"wrk: {errors.group(0)} on {path}")
    latency = _LATENCY.search(out)
    latency_ms = None
    if latency:
        latency_ms = float(latency.group(1)) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[latency.group(2)]
    return WrkRun(float(match.group(1)), latency_ms, client_cpu, server_cpu)


async def measure_requests(
    reporter: Reporter, lab: LabProcess, settings: Settings, kind: str, capture: Capture
) -> None:
    """``get`` or ``list``: wrk against the raw handler and the API, alternating, best of each."""
    api_path = capture.get_path if kind == "get" else capture.list_path
    runs: dict[str, list[WrkRun]] = {"raw": [], "api": []}

    def contender(name: str, path: str) -> Callable[[], Awaitable[float]]:
        async def measure() -> float:
            result = await asyncio.to_thread(run_wrk, lab, settings, path)
            runs[name].append(result)
            return result.requests_per_s

        return measure

    # One short warm-up of each (connections, caches, the first TLS sessions) before timed rounds.
    warm = dataclasses.replace(settings, duration=1.0)
    await asyncio.to_thread(run_wrk, lab, warm, f"/raw/{kind}")
    await asyncio.to_thread(run_wrk, lab, warm, api_path)
    rounds = await alternate(
        settings.rounds, [("raw", contender("raw", f"/raw/{kind}")), ("api", contender("api", api_path))]
    )
    best_api = max(runs["api"], key=lambda r: r.requests_per_s)
    best_raw = max(runs["raw"], key=lambda r: r.requests_per_s)
    reporter.emit(
        f"{kind}.requests_per_s",
        rounds.best("api"),
        "requests/s",
        baseline=rounds.best("raw"),
        target=GET_TARGET if kind == "get" else None,
        rounds={name: [round(x, 1) for x in rounds.samples[name]] for name in rounds.names},
        latency_ms={"api": best_api.latency_ms, "raw": best_raw.latency_ms},
        server_cpu={"api": best_api.server_cpu, "raw": best_raw.server_cpu},
        client_cpu={"api": best_api.client_cpu, "raw": best_raw.client_cpu},
        load=f"wrk -t{settings.threads} -c{settings.connections} -d{settings.duration:g}s",
        path=api_path,
        body_bytes=(lab.raw_dir / f"{kind}.body").stat().st_size,
        **({"note": "LIST has no target; for information"} if kind == "list" else {}),
    )


# -- the watch stream ------------------------------------------------------------------------------


async def measure_watch_stream(
    reporter: Reporter, lab: LabProcess, settings: Settings, capture: Capture
) -> None:
    runs: dict[str, list[dict[str, Any]]] = {"raw": [], "api": []}

    def contender(name: str, path: str) -> Callable[[], Awaitable[float]]:
        async def measure() -> float:
            result = await asyncio.to_thread(read_streams, lab, settings, path, capture.watch_events)
            runs[name].append(result)
            return float(result["events_per_s"])

        return measure

    raw_path = "/raw/stream/watch"
    await asyncio.to_thread(read_streams, lab, settings, raw_path, capture.watch_events, 0.2)
    await asyncio.to_thread(read_streams, lab, settings, capture.watch_path, capture.watch_events, 0.2)
    rounds = await alternate(
        settings.rounds, [("raw", contender("raw", raw_path)), ("api", contender("api", capture.watch_path))]
    )
    best = {name: max(runs[name], key=lambda r: r["events_per_s"]) for name in runs}
    reporter.emit(
        "watch.events_per_s",
        rounds.best("api"),
        "events/s",
        baseline=rounds.best("raw"),
        target=WATCH_TARGET,
        rounds={name: [round(x, 1) for x in rounds.samples[name]] for name in rounds.names},
        events_per_stream=capture.watch_events,
        streams={name: best[name]["streams"] for name in best},
        server_cpu={name: best[name]["server_cpu"] for name in best},
        client_cpu={name: best[name]["client_cpu"] for name in best},
        load=f"one {settings.stream_client} reader (bench._apiclient stream), a fresh connection per stream",
        path=capture.watch_path,
    )


def read_streams(
    lab: LabProcess, settings: Settings, path: str, events: int, seconds: float | None = None
) -> dict[str, Any]:
    command = [
        sys.executable, "-m", "bench._apiclient", "stream", lab.origin + path,
        "--warmup", f"{lab.origin}/raw/get", "--events", str(events),
        "--seconds", str(settings.stream_seconds if seconds is None else seconds),
        "--cafile", str(lab.ca_path), "--client", settings.stream_client,
    ]  # fmt: skip
    meter = CPUMeter(lab.pid)
    done = subprocess.run(
        command, cwd=ROOT, env=lab.client_env(), capture_output=True, text=True, timeout=120
    )
    server_cpu = meter.server_cores()
    if done.returncode != 0:
        raise RuntimeError(f"the stream reader failed: {done.stderr.strip()[-400:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    if result["short_streams"]:
        raise RuntimeError(f"streams ended before {events} events: {result['short_streams'][:5]}")
    result["server_cpu"] = server_cpu
    result["client_cpu"] = round(result["client_cpu"], 3)
    return result


# -- fan-out ---------------------------------------------------------------------------------------


class LineProcess:
    """A helper process of a benchmark: JSON lines out, commands (one a line) in."""

    #: What errors call it.
    name = "helper process"

    def __init__(
        self, command: list[str], env: dict[str, str] | None = None, log: Path | None = None
    ) -> None:
        """Start ``command``; its stderr goes to ``log`` if given (a pipe nobody reads can fill up)."""
        self.log = log
        with contextlib.ExitStack() as files:
            stderr = files.enter_context(log.open("wb")) if log is not None else subprocess.PIPE
            self.process = subprocess.Popen(
                command,
                cwd=ROOT,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
            )
        self._pending = b""

    def send(self, command: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(command.encode() + b"\n")
        self.process.stdin.flush()

    def poll_line(self, timeout: float) -> dict[str, Any] | None:
        """The next JSON line, or None if none arrived within ``timeout`` seconds."""
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            readable, _, _ = select.select([fd], [], [], remaining)
            if not readable:
                return None
            data = os.read(fd, 65536)
            if not data:
                raise RuntimeError(f"the {self.name} exited: {self.stderr_tail()}")
            self._pending += data
        line, _, self._pending = self._pending.partition(b"\n")
        parsed: dict[str, Any] = json.loads(line)
        return parsed

    def line(self, timeout: float, what: str) -> dict[str, Any]:
        parsed = self.poll_line(timeout)
        if parsed is None:
            raise RuntimeError(f"the {self.name} did not report {what} within {timeout:g} s")
        return parsed

    def stderr_tail(self) -> str:
        self.process.wait(5)
        if self.log is not None:
            return self.log.read_text(errors="replace")[-400:]
        assert self.process.stderr is not None
        return self.process.stderr.read().decode(errors="replace")[-400:]

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


class WatcherProcess(LineProcess):
    """One ``bench._apiclient watchers`` process."""

    name = "watcher process"

    def __init__(self, lab: LabProcess, url: str, count: int, samples: Path) -> None:
        self.samples = samples
        command = [
            sys.executable, "-m", "bench._apiclient", "watchers", url,
            "--count", str(count), "--samples", str(samples), "--cafile", str(lab.ca_path),
        ]  # fmt: skip
        super().__init__(command, lab.client_env())


async def measure_fanout(
    reporter: Reporter, lab: LabProcess, settings: Settings, client: httpx.AsyncClient, *, tls: bool = False
) -> None:
    listed = await client.get(lab.pods, params={"limit": "1"})
    listed.raise_for_status()
    revision = listed.json()["metadata"]["resourceVersion"]
    # The target's watchers are HTTP watchers: the web port, unless this is the informational TLS run
    # (see "Why the fan-out watchers use plain HTTP" at the top).
    url = f"{lab.pods if tls else lab.web_pods}?watch=true&resourceVersion={revision}"
    spread = max(1, min(settings.watcher_processes, settings.watchers))
    counts = [
        settings.watchers // spread + (1 if i < settings.watchers % spread else 0) for i in range(spread)
    ]
    group = "fanout_tls" if tls else "fanout"
    processes = [WatcherProcess(lab, url, n, lab.tmp / f"{group}-{i}.samples") for i, n in enumerate(counts)]
    try:
        result = await fanout_run(lab, settings, client, processes, group.replace("_", "-"))
    finally:
        for process in processes:
            process.close()
    report_fanout(reporter, settings, result, group)


@dataclass(slots=True)
class FanoutResult:
    writes: int = 0
    write_errors: list[str] = field(default_factory=list)
    write_latencies: list[float] = field(default_factory=list)
    deliveries: array.array[float] = field(default_factory=lambda: array.array("d"))
    expected: int = 0
    summaries: list[dict[str, Any]] = field(default_factory=list)
    connect_seconds: float = 0.0
    server_cpu: float | None = None
    server_us_per_delivery: float | None = None
    client_cpu: float | None = None
    write_seconds: float = 0.0
    drained_seconds: float = 0.0


async def fanout_run(
    lab: LabProcess,
    settings: Settings,
    client: httpx.AsyncClient,
    processes: list[WatcherProcess],
    prefix: str,
) -> FanoutResult:
    """Write stamped pods (named ``<prefix>-<i>``) at the write rate while ``processes`` watch."""
    result = FanoutResult()
    for process in processes:
        line = await asyncio.to_thread(process.line, 300.0, "its connections")
        result.connect_seconds = max(result.connect_seconds, float(line["seconds"]))
    # daphne sends a watch's 200 with its first event: write unstamped pods until every watch has one.
    ready = [False] * len(processes)
    deadline = time.monotonic() + 120.0
    sync = 0
    while not all(ready):
        if time.monotonic() > deadline:
            raise RuntimeError("the watches did not all answer within 120 s")
        reply = await client.post(lab.pods, json=pod(f"{prefix}-sync-{sync:04d}"))
        reply.raise_for_status()
        sync += 1
        for i, process in enumerate(processes):
            if not ready[i]:
                answer = await asyncio.to_thread(process.poll_line, 0.5)
                ready[i] = answer is not None and "ready" in answer
    await asyncio.sleep(1.0)  # let the sync events drain before the timed writes

    meter = CPUMeter(lab.pid, [p.process.pid for p in processes])
    writes = max(1, round(settings.fanout_seconds * settings.write_rate))
    result.writes = writes

    async def write(i: int) -> None:
        started = time.monotonic()
        body = pod(f"{prefix}-{i:05d}", {STAMP_KEY: f"{started:.6f}"})
        try:
            reply = await client.post(lab.pods, json=body)
        except httpx.HTTPError as error:
            result.write_errors.append(f"{type(error).__name__}: {error}")
            return
        result.write_latencies.append(time.monotonic() - started)
        if reply.status_code != 201:
            result.write_errors.append(f"{reply.status_code} {reply.text[:200]}")

    # Open loop: write i starts at start + i/rate whether or not the earlier ones have finished.
    start = time.monotonic()
    tasks = []
    for i in range(writes):
        delay = start + i / settings.write_rate - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(write(i)))
    await asyncio.gather(*tasks)
    result.write_seconds = time.monotonic() - start
    written = writes - len(result.write_errors)
    result.expected = written * settings.watchers

    # Wait for the deliveries still on their way (up to --drain-seconds).
    drained = time.monotonic()
    while True:
        total = 0
        for process in processes:
            process.send("count")
            line = await asyncio.to_thread(process.line, 30.0, "its count")
            total += int(line["deliveries"])
        if total >= result.expected or time.monotonic() - drained > settings.drain_seconds:
            break
        await asyncio.sleep(0.2)
    result.drained_seconds = time.monotonic() - drained
    result.server_cpu = meter.server_cores()
    wall = meter.elapsed()
    if result.server_cpu is not None and total:
        result.server_us_per_delivery = round(result.server_cpu * wall / total * 1e6, 2)
    result.client_cpu = meter.client_cores()
    for process in processes:
        process.send("stop")
        summary = await asyncio.to_thread(process.line, 60.0, "its summary")
        result.summaries.append(summary)
        samples = array.array("d")
        samples.frombytes(process.samples.read_bytes())
        result.deliveries.extend(samples)
    return result


def report_fanout(reporter: Reporter, settings: Settings, result: FanoutResult, group: str) -> None:
    # The targets are for the HTTP watchers; the HTTPS run is for information.
    fanout_target = FANOUT_TARGET if group == "fanout" else None
    mutating_target = MUTATING_TARGET if group == "fanout" else None
    watcher_errors = [e for s in result.summaries for e in s.get("errors", [])]
    closed = sum(int(s.get("closed_early", 0)) for s in result.summaries)
    missing = result.expected - len(result.deliveries)
    common: dict[str, Any] = {
        "watchers": settings.watchers,
        "watch_scheme": "https" if group == "fanout_tls" else "http",
        "write_rate": settings.write_rate,
        "writes": result.writes,
        "seconds": round(result.write_seconds, 2),
        "deliveries": len(result.deliveries),
        "expected_deliveries": result.expected,
        "drain_seconds": round(result.drained_seconds, 2),
        "connect_seconds": round(result.connect_seconds, 2),
        "server_cpu": result.server_cpu,
        "client_cpu": result.client_cpu,
        # The server's CPU per delivery: what the server costs, whatever else the machine runs.
        "server_us_per_delivery": result.server_us_per_delivery,
    }
    problems = []
    if missing > 0:
        problems.append(
            f"{missing} of {result.expected} deliveries had not arrived {settings.drain_seconds:g} s "
            "after the last write"
        )
    if closed:
        problems.append(f"{closed} watches ended early")
    if watcher_errors:
        problems.append(f"watcher errors: {watcher_errors[:3]}")
    delivery_extra = dict(common, **({"error": "; ".join(problems)} if problems else {}))
    if result.deliveries:
        summary = summarize(result.deliveries)
        reporter.emit(f"{group}.delivery.p50_ms", summary.p50 * 1000, "ms", **delivery_extra)
        reporter.emit(
            f"{group}.delivery.p99_ms",
            summary.p99 * 1000,
            "ms",
            target=fanout_target,
            max_ms=round(summary.max * 1000, 3),
            **delivery_extra,
        )
    else:
        reporter.error(f"{group}.delivery.p50_ms", "ms", "no deliveries", **common)
        reporter.error(f"{group}.delivery.p99_ms", "ms", "no deliveries", target=fanout_target, **common)
    write_extra = dict(common)
    if result.write_errors:
        write_extra["error"] = f"{len(result.write_errors)} writes failed: {result.write_errors[:3]}"
    if result.write_latencies:
        writes = summarize(result.write_latencies)
        reporter.emit(f"{group}.mutating.p50_ms", writes.p50 * 1000, "ms", **write_extra)
        reporter.emit(
            f"{group}.mutating.p99_ms",
            writes.p99 * 1000,
            "ms",
            target=mutating_target,
            max_ms=round(writes.max * 1000, 3),
            **write_extra,
        )
    else:
        reporter.error(f"{group}.mutating.p50_ms", "ms", "no write completed", **common)
        reporter.error(
            f"{group}.mutating.p99_ms", "ms", "no write completed", target=mutating_target, **common
        )
