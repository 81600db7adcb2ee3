"""Client processes of ``python -m bench api``: a watch-stream reader and a thousand watchers.

They run in processes of their own so that their CPU is not the benchmark process's (which writes),
and report one JSON object on stdout. Both measure their own CPU time, so the report can show that
the client was not the bottleneck (the machine may have only two cores, one of which daphne uses).

``python -m bench._apiclient stream URL --warmup URL --events N --seconds S``
    Reads chunked streams (a watch, or the raw stream of the same lines) for ``S`` seconds: for each,
    a fresh TLS connection, one small warm-up request on it (so the handshake is not timed), then the
    stream request; the time runs from sending the request to receiving the ``N``-th line. The default
    reader is a blocking TLS socket counting the bytes ``}`` + newline (every event line ends so; the
    chunked framing never holds that pair): a few microseconds per read, where httpx
    (``--client httpx``) decodes the chunked framing in Python and becomes the limit against the raw
    stream.

``python -m bench._apiclient watchers URL --count N --samples FILE``
    Opens ``N`` connections (TLS for an ``https://`` URL, plain TCP for ``http://``), each a watch
    request, and reads them all in one ``epoll`` loop over non-blocking sockets (no asyncio, no HTTP
    library: a few microseconds per read). Each event carries, in an annotation, the
    ``time.monotonic()`` at which the writer was about to send it; the delivery latency is the
    reader's ``time.monotonic()`` as it reads the bytes, minus that (the same system-wide clock in
    every process on Linux). Prints ``{"connected": N}`` once every request is
    sent and ``{"ready": N}`` once every watch has answered 200 (daphne sends a response's head with
    its first body bytes, so a watch answers only with its first event: the caller writes unstamped
    objects until then). On stdin, ``count`` prints ``{"deliveries": ...}``; ``stop`` (or the end of
    stdin) writes the latencies (seconds, ``array('d')``) to ``FILE`` and prints a summary.
"""

from __future__ import annotations

import argparse
import array
import json
import os
import re
import select
import socket
import ssl
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

#: The environment variable carrying the bearer token (not the command line, which ``ps`` shows).
TOKEN_ENV = "KUBELAB_BENCH_TOKEN"
#: The annotation a fan-out write carries: the writer's monotonic clock just before the request.
STAMP_KEY = "kubelab-bench/t0"
_STAMP = re.compile(rb'"' + re.escape(STAMP_KEY.encode()) + rb'":"([0-9]+\.[0-9]+)"')
#: Enough of a read to hold a partial stamp (kept between reads so that none is split and lost).
_TAIL = 128


def ssl_context(cafile: str | None) -> ssl.SSLContext:
    if cafile:
        return ssl.create_default_context(cafile=cafile)
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def cpu_seconds() -> float:
    return time.process_time()


# -- stream ----------------------------------------------------------------------------------------


def read_streams(
    url: str, warmup: str, token: str, cafile: str | None, events: int, seconds: float, client: str
) -> dict[str, Any]:
    """Read streams of ``events`` lines back to back for ``seconds``; the rate and the client's CPU."""
    context = ssl_context(cafile)
    one_stream = _socket_stream if client == "socket" else _httpx_stream
    streams = 0
    total_events = 0
    timed = 0.0
    timed_cpu = 0.0
    short: list[int] = []
    wall0 = time.perf_counter()
    while time.perf_counter() - wall0 < seconds or streams == 0:
        seen, elapsed, cpu = one_stream(url, warmup, token, context, events)
        streams += 1
        total_events += seen
        timed += elapsed
        timed_cpu += cpu
        if seen < events:
            short.append(seen)
    return {
        "streams": streams,
        "events": total_events,
        "seconds": timed,
        "events_per_s": total_events / timed if timed else 0.0,
        "short_streams": short,
        # CPU seconds per second while streams were timed: 1.0 means the client was the limit.
        "client_cpu": timed_cpu / timed if timed else 0.0,
    }


def _httpx_stream(
    url: str, warmup: str, token: str, context: ssl.SSLContext, events: int
) -> tuple[int, float, float]:
    import httpx

    with httpx.Client(verify=context, headers={"Authorization": f"Bearer {token}"}, timeout=30.0) as client:
        client.get(warmup).raise_for_status()
        cpu = cpu_seconds()
        started = time.perf_counter()
        seen = 0
        with client.stream("GET", url) as response:
            response.raise_for_status()
            for data in response.iter_raw():  # the chunked framing undone: the lines themselves
                seen += data.count(b"\n")
                if seen >= events:
                    break
        return seen, time.perf_counter() - started, cpu_seconds() - cpu


def _socket_stream(
    url: str, warmup: str, token: str, context: ssl.SSLContext, events: int
) -> tuple[int, float, float]:
    parts = urlsplit(url)
    host = parts.hostname or "127.0.0.1"
    sock = context.wrap_socket(
        socket.create_connection((host, parts.port or 443), timeout=30), server_hostname=host
    )
    with sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.sendall(_request(warmup, token))
        status, rest = _read_head(sock)
        declared = re.search(rb"(?i)content-length:\s*(\d+)", rest[0])
        length = int(declared.group(1)) if declared else 0
        body = rest[1]
        while len(body) < length:
            body += sock.recv(262144)
        if status != 200:
            raise RuntimeError(f"warm-up request answered {status}")
        cpu = cpu_seconds()
        started = time.perf_counter()
        sock.sendall(_request(url, token))
        status, (_, data) = _read_head(sock)
        if status != 200:
            raise RuntimeError(f"stream answered {status}: {data[:200]!r}")
        # Each event line ends in "}\n"; the chunked framing (hex sizes, CRLFs) never holds that pair.
        seen = data.count(b"}\n")
        last = data[-1:]
        while seen < events:
            data = sock.recv(262144)
            if not data:
                break
            seen += (last + data[:1]).count(b"}\n") + data.count(b"}\n")
            last = data[-1:]
        return seen, time.perf_counter() - started, cpu_seconds() - cpu


def _request(url: str, token: str) -> bytes:
    parts = urlsplit(url)
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    return (
        f"GET {target} HTTP/1.1\r\nHost: {parts.netloc}\r\nAuthorization: Bearer {token}\r\n"
        "Accept: application/json\r\nUser-Agent: kubelab-bench\r\n\r\n"
    ).encode()


def _read_head(sock: ssl.SSLSocket) -> tuple[int, tuple[bytes, bytes]]:
    """Read a response's head: its status, and (the head, the body bytes already read)."""
    buffer = b""
    while b"\r\n\r\n" not in buffer:
        data = sock.recv(262144)
        if not data:
            raise RuntimeError("the server closed the connection before answering")
        buffer += data
    head, _, body = buffer.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), (head, body)


# -- watchers --------------------------------------------------------------------------------------


@dataclass(slots=True)
class Watcher:
    sock: socket.socket
    buffer: bytes = b""
    status: int | None = None
    received: int = 0
    closed: bool = False


def open_watcher(host: str, port: int, request: bytes, context: ssl.SSLContext | None) -> Watcher:
    """A connection with the watch request sent on it: TLS with ``context``, plain TCP without."""
    sock = socket.create_connection((host, port), timeout=30)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if context is not None:
        sock = context.wrap_socket(sock, server_hostname=host)
    sock.sendall(request)
    sock.setblocking(False)
    return Watcher(sock)


def run_watchers(url: str, token: str, cafile: str | None, count: int, samples: Path) -> dict[str, Any]:
    parts = urlsplit(url)
    host = parts.hostname or "127.0.0.1"
    tls = parts.scheme == "https"
    port = parts.port or (443 if tls else 80)
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    request = (
        f"GET {target} HTTP/1.1\r\nHost: {parts.netloc}\r\nAuthorization: Bearer {token}\r\n"
        "Accept: application/json\r\nUser-Agent: kubelab-bench-watcher\r\n\r\n"
    ).encode()
    context = ssl_context(cafile) if tls else None
    cpu0 = cpu_seconds()
    connect0 = time.perf_counter()
    poller = select.epoll()
    watchers: dict[int, Watcher] = {}
    for _ in range(count):
        watcher = open_watcher(host, port, request, context)
        watchers[watcher.sock.fileno()] = watcher
        poller.register(watcher.sock.fileno(), select.EPOLLIN)
    stdin = sys.stdin.fileno()
    poller.register(stdin, select.EPOLLIN)
    # daphne sends a response's headers with its first body bytes, so a watch shows its 200 only with
    # its first event: the caller writes until every watch has answered (see "ready" below).
    print(json.dumps({"connected": count, "seconds": time.perf_counter() - connect0}), flush=True)
    latencies = array.array("d")
    errors: list[str] = []
    ready_sent = False
    waiting = count
    stop = False
    cpu_connected = 0.0
    while not stop:
        if not ready_sent and waiting == 0:
            ready_sent = True
            cpu_connected = cpu_seconds() - cpu0
            line = {"ready": count, "connect_seconds": time.perf_counter() - connect0}
            print(json.dumps(line), flush=True)
        for fd, _ in poller.poll(1.0):
            if fd == stdin:
                commands = os.read(stdin, 4096).decode().split()
                if "count" in commands:
                    print(json.dumps({"deliveries": len(latencies)}), flush=True)
                stop = not commands or "stop" in commands  # no bytes: stdin closed
                continue
            watcher = watchers[fd]
            while True:
                try:
                    data = watcher.sock.recv(262144)
                except (ssl.SSLWantReadError, BlockingIOError):
                    break
                except (ssl.SSLError, OSError) as error:
                    data = b""
                    errors.append(f"{type(error).__name__}: {error}")
                now = time.monotonic()
                if not data:
                    poller.unregister(fd)
                    watcher.closed = True
                    if watcher.status is None:
                        waiting -= 1
                    break
                buffer = watcher.buffer + data
                if watcher.status is None:
                    head, sep, rest = buffer.partition(b"\r\n\r\n")
                    if not sep:
                        watcher.buffer = buffer
                        continue
                    status_line = head.split(b"\r\n", 1)[0].split()
                    watcher.status = int(status_line[1]) if len(status_line) > 1 else 0
                    if watcher.status != 200:
                        errors.append(f"watch answered {watcher.status}: {rest[:200]!r}")
                    waiting -= 1
                    buffer = rest
                end = 0
                for match in _STAMP.finditer(buffer):
                    latencies.append(now - float(match.group(1)))
                    watcher.received += 1
                    end = match.end()
                buffer = buffer[end:]
                watcher.buffer = buffer[-_TAIL:] if len(buffer) > _TAIL else buffer
    cpu_total = cpu_seconds() - cpu0
    samples.write_bytes(latencies.tobytes())
    received = [w.received for w in watchers.values()]
    for watcher in watchers.values():
        watcher.sock.close()
    return {
        "watchers": count,
        "deliveries": len(latencies),
        "min_per_watcher": min(received) if received else 0,
        "max_per_watcher": max(received) if received else 0,
        "closed_early": sum(1 for w in watchers.values() if w.closed),
        "errors": errors[:5],
        "error_count": len(errors),
        "cpu_seconds_connect": cpu_connected,
        "cpu_seconds": cpu_total,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench._apiclient")
    sub = parser.add_subparsers(dest="command", required=True)
    stream = sub.add_parser("stream")
    stream.add_argument("url")
    stream.add_argument("--warmup", required=True, help="a small request sent first on the connection")
    stream.add_argument("--events", type=int, required=True)
    stream.add_argument("--seconds", type=float, required=True)
    stream.add_argument(
        "--client", choices=("socket", "httpx"), default="socket", help="how to read (socket: a TLS socket)"
    )
    watchers = sub.add_parser("watchers")
    watchers.add_argument("url")
    watchers.add_argument("--count", type=int, required=True)
    watchers.add_argument("--samples", type=Path, required=True)
    for p in (stream, watchers):
        p.add_argument("--cafile", help="the serving CA (default: do not verify)")
    options = parser.parse_args(argv)
    token = os.environ.get(TOKEN_ENV, "")
    if options.command == "stream":
        result = read_streams(
            options.url,
            options.warmup,
            token,
            options.cafile,
            options.events,
            options.seconds,
            options.client,
        )
    else:
        from bench._apiserve import raise_file_limit

        raise_file_limit()
        result = run_watchers(options.url, token, options.cafile, options.count, options.samples)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
