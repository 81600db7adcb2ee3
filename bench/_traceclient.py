"""The clients of ``python -m bench trace``: many websockets watching one cluster's trace, as pages do.

``python -m bench._traceclient URL --clients N --origin ORIGIN --samples FILE [--raw]`` opens ``N``
sockets to ``URL`` with the ``websockets`` client library, in one asyncio loop in a process of its
own (so that their CPU is not the server's). Each socket does what the topology page does
(docs/trace.md, "Stream"): it reads the ``hello``, sends ``{"action": "subscribe", "since": null}``
and reads frames, checking that each starts where the one before ended. One that does not is a
**gap**: the socket asks for ``{"action": "resync", "since": <the last seq it has>}`` and skips frames
until the one that starts right after it (frames already on the wire may arrive first); the gap is
then **resolved**. A gap that never is (a ``410``, or still waiting at the end) is **unresolved**: the
trace's promise broken. Against the raw baseline (``--raw``), which cannot resync, a gap stays.

What is counted, per frame taken (docs/trace.md's frame: events first, then an optional summary):

- **delivered**: events the frame carries;
- **summarised**: events its ``summary`` accounts for instead (a socket that fell behind);
- **accounted**: both, ``last - first + 1``.

Reading every frame with ``json.loads`` would cost the clients more than the server spends making
them (at 500 sockets, a million events a second), so a frame is read from its bytes: ``first``,
``last`` and the summary's range with regular expressions on its head and tail. Every
``--verify-every``-th frame of each socket is also parsed whole and checked against that reading
(seqs consecutive from ``first``, the events counted right, the summary's counts adding up); a
mismatch is reported as a problem of the run.

**Latency** (event to socket) is the client's ``time.time()`` as ``recv`` returns the frame minus the
event's ``ts`` (the lab's cluster clock is the wall clock, not scaled; both processes read the same
machine clock). It is taken for every event on ``--latency-sockets`` sockets (the first ones opened;
finding every ``ts`` of every frame on all sockets would again cost more than the server's work),
and on every socket for the oldest event of each frame (the worst of the frame). A client process that
falls behind adds its own queueing to the latency: the result says how busy it was (``client_cpu``).

The conversation with the benchmark is JSON lines on stdout and commands on stdin:
``{"subscribed": N, ...}`` once every socket has subscribed; then ``go`` on stdin starts the run:
wait for every socket's first frame, ``--warmup`` seconds, then the measured window of ``--seconds``
(``{"window": "start"}`` and ``{"window": "end"}`` as it opens and closes), then up to
``--grace`` seconds for resyncs still in flight, then the result line. The latencies of the window
go to ``--samples`` (``array('d')``, seconds; the frames' oldest to ``FILE.frames``).
"""

from __future__ import annotations

import argparse
import array
import asyncio
import contextlib
import json
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from bench._apiserve import raise_file_limit

_HEAD = re.compile(rb'\{"type":"frame","first":(\d+),"last":(\d+),"events":\[')
_SUMMARY = b'],"summary":{"first":'
_SUMMARY_RANGE = re.compile(rb'(\d+),"last":(\d+)')
_TS = re.compile(rb'"ts":([0-9.eE+-]+)')
#: The websocket's close code for "going away" and the stream's error code for "too old".
GONE = 410
#: Problems kept word for word in the result (the rest are counted).
KEEP_PROBLEMS = 5


class BadFrame(ValueError):
    """A frame whose head or tail is not what the stream's format says."""


@dataclass(frozen=True, slots=True)
class FrameHead:
    """What a frame accounts for, read from its bytes without parsing its events."""

    first: int
    last: int
    #: Events the frame carries (``first`` ... ``first + events - 1``).
    events: int
    #: The range its summary covers, if it has one.
    summary: tuple[int, int] | None
    #: Where the events are in the bytes (for finding their ``ts``).
    events_start: int
    events_end: int

    @property
    def accounted(self) -> int:
        return self.last - self.first + 1

    @property
    def summarised(self) -> int:
        return 0 if self.summary is None else self.summary[1] - self.summary[0] + 1


def parse_frame(data: bytes) -> FrameHead | None:
    """The head of a frame; None for another message (hello, error); ``BadFrame`` for a broken one."""
    head = _HEAD.match(data)
    if head is None:
        if data.startswith(b'{"type":"frame"'):
            raise BadFrame(f"a frame with an unreadable head: {data[:80]!r}")
        return None
    first, last = int(head.group(1)), int(head.group(2))
    at = data.rfind(_SUMMARY)
    summary = None
    events_end = len(data) - 2  # before "]}"
    if at >= 0:
        found = _SUMMARY_RANGE.match(data, at + len(_SUMMARY))
        if found is None:
            raise BadFrame(f"a frame with an unreadable summary: {data[at : at + 80]!r}")
        summary = (int(found.group(1)), int(found.group(2)))
        events_end = at
        events = summary[0] - first
    else:
        events = last - first + 1
    if events < 0 or last < first - 1 or (summary is not None and summary[1] != last):
        raise BadFrame(f"a frame that does not add up: first {first}, last {last}, summary {summary}")
    return FrameHead(first, last, events, summary, head.end(), events_end)


def verify_frame(data: bytes, head: FrameHead) -> list[str]:
    """Parse the frame whole and compare it with ``head``: what does not match, in words."""
    frame = json.loads(data)
    problems = []
    events = frame.get("events", [])
    seqs = [event.get("seq") for event in events]
    if (frame.get("first"), frame.get("last")) != (head.first, head.last):
        problems.append(f"first/last {frame.get('first')}/{frame.get('last')}, read {head.first}/{head.last}")
    if seqs != list(range(head.first, head.first + len(seqs))):
        problems.append(f"frame {head.first}-{head.last}: events are not consecutive from first")
    if len(events) != head.events:
        problems.append(f"frame {head.first}-{head.last}: {len(events)} events, read {head.events}")
    if any(not isinstance(event.get("ts"), float) or "type" not in event for event in events):
        problems.append(f"frame {head.first}-{head.last}: an event without ts or type")
    summary = frame.get("summary")
    if summary is not None:
        size = summary["last"] - summary["first"] + 1
        if sum(summary["counts"].values()) != size:
            problems.append(f"frame {head.first}-{head.last}: summary counts do not add up to {size}")
        if summary["first"] != head.first + len(events) or summary["last"] != head.last:
            problems.append(f"frame {head.first}-{head.last}: the summary does not follow the events")
    elif head.first + len(events) - 1 != head.last:
        problems.append(f"frame {head.first}-{head.last}: {len(events)} events and no summary")
    return problems


@dataclass(slots=True)
class StreamTracker:
    """One socket's view of the stream: where it is, and what it was given (see the module's docstring).

    ``frame(head)`` says what to do with a frame: take it (None), or ask for a resync from the seq it
    returns (after a gap); frames are skipped while a resync is on its way. ``gone()`` is a 410.
    """

    resync: bool = True
    next_seq: int | None = None
    resync_since: int | None = None
    frames: int = 0
    delivered: int = 0
    summarised: int = 0
    gaps: int = 0
    resolved: int = 0
    overlaps: int = 0
    skipped: int = 0
    gone_count: int = 0

    @property
    def accounted(self) -> int:
        return self.delivered + self.summarised

    @property
    def unresolved(self) -> int:
        return self.gaps - self.resolved

    def frame(self, head: FrameHead) -> int | None:
        """Take ``head``'s frame, skip it, or (the int returned) resync from that seq."""
        if self.resync_since is not None:
            if head.first != self.resync_since + 1:
                self.skipped += 1  # sent before the server read the resync
                return None
            self.resync_since = None
            self.resolved += 1
        elif self.next_seq is not None and head.first != self.next_seq:
            if head.first < self.next_seq:
                self.overlaps += 1  # seqs this socket has already: a broken promise, counted
                self.skipped += 1
                return None
            self.gaps += 1
            if self.resync:
                self.resync_since = self.next_seq - 1
                self.skipped += 1
                return self.resync_since
        self.next_seq = head.last + 1
        self.frames += 1
        self.delivered += head.events
        self.summarised += head.summarised
        return None

    def gone(self) -> None:
        """A 410: the resync will not be answered (its gap stays unresolved); start again from now."""
        self.gone_count += 1
        self.resync_since = None
        self.next_seq = None


@dataclass(slots=True)
class Totals:
    frames: int = 0
    delivered: int = 0
    summarised: int = 0

    @classmethod
    def of(cls, trackers: list[StreamTracker]) -> Totals:
        return cls(
            sum(t.frames for t in trackers),
            sum(t.delivered for t in trackers),
            sum(t.summarised for t in trackers),
        )


@dataclass(slots=True)
class Run:
    """Everything the sockets of this process share."""

    url: str
    origin: str
    raw: bool
    latency_sockets: int
    verify_every: int
    trackers: list[StreamTracker] = field(default_factory=list)
    measuring: bool = False
    latencies: array.array[float] = field(default_factory=lambda: array.array("d"))
    oldest: array.array[float] = field(default_factory=lambda: array.array("d"))
    problems: list[str] = field(default_factory=list)
    problem_count: int = 0
    verified: int = 0
    errors: list[str] = field(default_factory=list)
    closed: int = 0
    subscribed: int = 0
    settled: int = 0
    #: Sockets that have had a frame (``all_framed`` is set when every one has), and that wait for a
    #: resync's answer (``no_resyncs`` is set while none does).
    framed: int = 0
    all_framed: asyncio.Event = field(default_factory=asyncio.Event)
    resyncing: int = 0
    no_resyncs: asyncio.Event = field(default_factory=asyncio.Event)

    def note_resync(self, before: bool, after: bool) -> None:
        """A socket started (``after``) or stopped (``before``) waiting for a resync's answer."""
        self.resyncing += int(after) - int(before)
        if self.resyncing:
            self.no_resyncs.clear()
        else:
            self.no_resyncs.set()

    def problem(self, text: str) -> None:
        self.problem_count += 1
        if len(self.problems) < KEEP_PROBLEMS:
            self.problems.append(text)


async def watch(run: Run, index: int, gate: asyncio.Semaphore, ready: asyncio.Event, count: int) -> None:
    """One socket, from its handshake until it is cancelled or closed."""
    tracker = run.trackers[index]
    exact = index < run.latency_sockets
    settled = False

    def settle() -> None:  # subscribed, or failed trying: ``ready`` is set once every socket is one
        nonlocal settled
        settled = True
        run.settled += 1
        if run.settled == count:
            ready.set()

    try:
        async with gate:
            connection = await connect(
                run.url,
                origin=run.origin,  # type: ignore[arg-type]  # a str is an Origin
                compression=None,  # daphne accepts no compression: the raw server is told to offer none
                max_size=None,
                ping_interval=None,
                open_timeout=120,
                close_timeout=1,
            )
            hello = json.loads(await connection.recv())
            if hello.get("type") != "hello":
                raise RuntimeError(f"the server said {hello} instead of hello")
            await connection.send('{"action":"subscribe","since":null}')
        run.subscribed += 1
        settle()
        await read(run, connection, tracker, exact)
    except asyncio.CancelledError:
        raise
    except ConnectionClosed as closed:
        run.closed += 1
        run.errors.append(f"socket {index} closed: {closed}")
    except (OSError, InvalidHandshake, RuntimeError, ValueError) as error:
        run.errors.append(f"socket {index}: {type(error).__name__}: {error}")
    finally:
        if not settled:
            settle()


async def read(run: Run, connection: ClientConnection, tracker: StreamTracker, exact: bool) -> None:
    try:
        while True:
            data = await connection.recv(decode=False)
            received = time.time()
            try:
                head = parse_frame(data)
            except BadFrame as error:
                run.problem(str(error))
                continue
            if head is None:
                message = json.loads(data)
                if message.get("type") == "error" and message.get("code") == GONE:
                    waiting = tracker.resync_since is not None
                    tracker.gone()
                    run.note_resync(waiting, False)
                    await connection.send('{"action":"subscribe","since":null}')
                elif message.get("type") == "error":
                    run.problem(f"the server said {message}")
                continue
            waiting = tracker.resync_since is not None
            since = tracker.frame(head)
            run.note_resync(waiting, tracker.resync_since is not None)
            if since is not None:
                await connection.send(f'{{"action":"resync","since":{since}}}')
                continue
            if tracker.frames == 1:
                run.framed += 1
                if run.framed == len(run.trackers):
                    run.all_framed.set()
            if run.verify_every and tracker.frames % run.verify_every == 1:
                run.verified += 1
                for problem in verify_frame(data, head):
                    run.problem(problem)
            if run.measuring and head.events:
                if exact:
                    stamps = _TS.findall(data, head.events_start, head.events_end)
                    if stamps:
                        run.latencies.extend([received - float(ts) for ts in stamps])
                        run.oldest.append(received - float(stamps[0]))
                else:
                    first = _TS.search(data, head.events_start, head.events_end)
                    if first is not None:
                        run.oldest.append(received - float(first.group(1)))
    finally:
        await connection.close()


def save_samples(run: Run, samples: Path) -> None:
    samples.write_bytes(run.latencies.tobytes())
    samples.with_name(samples.name + ".frames").write_bytes(run.oldest.tobytes())


def say(message: dict[str, Any]) -> None:
    print(json.dumps(message), flush=True)


async def commands() -> asyncio.StreamReader:
    reader = asyncio.StreamReader()
    loop = asyncio.get_running_loop()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    return reader


async def main_async(options: argparse.Namespace) -> None:
    run = Run(
        url=options.url,
        origin=options.origin,
        raw=options.raw,
        latency_sockets=options.latency_sockets,
        verify_every=options.verify_every,
        trackers=[StreamTracker(resync=not options.raw) for _ in range(options.clients)],
    )
    stdin = await commands()
    gate = asyncio.Semaphore(options.connect_concurrency)
    ready = asyncio.Event()
    started = time.monotonic()
    tasks = [
        asyncio.create_task(watch(run, i, gate, ready, options.clients), name=f"socket {i}")
        for i in range(options.clients)
    ]
    try:
        await asyncio.wait_for(ready.wait(), options.connect_timeout)
    except TimeoutError:
        run.errors.append(f"only {run.subscribed} of {options.clients} sockets subscribed in time")
    say(
        {
            "subscribed": run.subscribed,
            "errors": run.errors[:KEEP_PROBLEMS],
            "seconds": time.monotonic() - started,
        }
    )
    if (await stdin.readline()).strip() != b"go":
        return
    # Every socket's first frame, then the warm-up, then the window.
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(run.all_framed.wait(), options.first_frame_timeout)
    silent = sum(1 for t in run.trackers if t.frames == 0)
    await asyncio.sleep(options.warmup)
    before = Totals.of(run.trackers)
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    run.measuring = True
    say({"window": "start"})
    await asyncio.sleep(options.seconds)
    run.measuring = False
    window = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    after = Totals.of(run.trackers)
    say({"window": "end"})
    if run.resyncing:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(run.no_resyncs.wait(), options.grace)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await asyncio.to_thread(save_samples, run, Path(options.samples))
    trackers = run.trackers
    say(
        {
            "clients": options.clients,
            "seconds": round(window, 3),
            "frames": after.frames - before.frames,
            "delivered": after.delivered - before.delivered,
            "summarised": after.summarised - before.summarised,
            "gaps": sum(t.gaps for t in trackers),
            "resolved": sum(t.resolved for t in trackers),
            "unresolved": sum(t.unresolved for t in trackers),
            "gone": sum(t.gone_count for t in trackers),
            "overlaps": sum(t.overlaps for t in trackers),
            "skipped_frames": sum(t.skipped for t in trackers),
            "silent_sockets": silent,
            "closed_early": run.closed,
            "verified_frames": run.verified,
            "problems": run.problem_count,
            "problem_examples": run.problems,
            "errors": run.errors[:KEEP_PROBLEMS],
            "error_count": len(run.errors),
            "latency_sockets": min(run.latency_sockets, options.clients),
            "client_cpu": round(cpu / window, 3) if window > 0 else None,
        }
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench._traceclient")
    parser.add_argument("url", help="ws://HOST:PORT/ws/lab/<cluster>/trace/ (or the raw server's)")
    parser.add_argument("--clients", type=int, required=True, help="sockets to open")
    parser.add_argument("--origin", required=True, help="the Origin header (the lab checks it)")
    parser.add_argument("--samples", required=True, help="where to write the window's latencies")
    parser.add_argument("--raw", action="store_true", help="the raw baseline: count gaps, never resync")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds before the window (2)")
    parser.add_argument("--seconds", type=float, default=10.0, help="the measured window (10)")
    parser.add_argument("--grace", type=float, default=2.0, help="seconds for resyncs after the window (2)")
    parser.add_argument("--latency-sockets", type=int, default=50, help="sockets timing every event (50)")
    parser.add_argument("--verify-every", type=int, default=50, help="parse 1 frame in N whole (50; 0: none)")
    parser.add_argument("--connect-concurrency", type=int, default=50, help="handshakes at once (50)")
    parser.add_argument("--connect-timeout", type=float, default=120.0, help="for every socket (120 s)")
    parser.add_argument("--first-frame-timeout", type=float, default=30.0, help="for every socket (30 s)")
    options = parser.parse_args(argv)
    raise_file_limit()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main_async(options))


if __name__ == "__main__":
    main()
