"""The kubelet's own HTTP server: how ``kubectl logs`` reaches a container on a node.

The API server does not keep container logs: they live on the node, with the container runtime. When
``kubectl logs web`` asks the API server for ``pods/web/log``, the API server finds the pod's node
and forwards the request to that node's **kubelet**, which listens on port 10250
(``status.daemonEndpoints.kubeletEndpoint.Port`` of the Node) and serves, among other things::

    GET /containerLogs/{namespace}/{pod}/{container}?follow=&previous=&tailLines=&timestamps=
                                                     &sinceSeconds=&sinceTime=&limitBytes=

The answer is plain text, one log line per line; with ``follow=true`` it stays open and each new line
is written as the container prints it, until the container stops (or the reader goes away). The API
server copies the kubelet's answer to its client unchanged, or turns a kubelet error into a Status.

Here the kubelet's server is a small ASGI application (``KubeletServer``). In the embedded cluster the
API server calls it directly, without a socket (``controlplane.apiserver.kubeletclient``); the same
application could be served on a loopback port for a kubelet running in another process.

Which container instance a request reads follows upstream's ``validateContainerLogStatus``
(pkg/kubelet/kubelet_pods.go): the running container; else the one that terminated last; ``previous``
asks for the last *terminated* one, and a container still waiting to start has no logs yet::

    container "app" in pod "web" is waiting to start: ContainerCreating
    previous terminated container "app" in pod "web" not found

Errors are answered as plain text with upstream's codes (pkg/kubelet/server/server.go
``getContainerLogs``): 404 for a pod or container the kubelet does not know, 400 for a container that
has no logs to show. The API server turns the 400 into ``BadRequest`` with the same message.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import parse_qsl, unquote

from controlplane.api.meta import parse_timestamp
from controlplane.clock import Clock
from controlplane.components.kubelet.lifecycle import ContainerMachine, PodLifecycle
from controlplane.components.kubelet.logs import Instance, LogLine
from controlplane.components.kubelet.simulation import MAX_EVENTS_SCANNED, Output
from controlplane.components.kubelet.staticpods import ContainerRuns
from controlplane.components.kubelet.status import container_status
from controlplane.tasks import cancel_and_wait

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

TEXT = b"text/plain; charset=utf-8"


@dataclass(frozen=True)
class PodView:
    """What the log server needs of one pod the kubelet runs: the API object and its lifecycle."""

    pod: Mapping[str, Any]
    lifecycle: PodLifecycle


class PodSource(Protocol):
    """The kubelet, as its HTTP server sees it."""

    @property
    def clock(self) -> Clock: ...

    def pod_view(self, namespace: str, name: str) -> PodView | None:
        """The pod called ``namespace/name`` that this kubelet runs, if any."""
        ...

    def next_change(self) -> asyncio.Event:
        """An event set the next time the kubelet's pods change (a sync played a timer, a pod left)."""
        ...

    def static_pod_container(self, namespace: str, name: str) -> ContainerRuns | None:
        """The container of the static pod ``namespace/name`` this kubelet runs from a file, if any."""
        ...


class LogError(Exception):
    """A request the kubelet cannot answer with logs: ``code`` and upstream's message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


# -- which container instance (pure) ---------------------------------------------------------------


def validate_container_log_status(
    pod_name: str, status: Mapping[str, Any] | None, container: str, previous: bool
) -> str:
    """Upstream's ``validateContainerLogStatus`` on one ``containerStatuses[i]``: which instance to read.

    Returns ``"current"`` (the running container, or the one that terminated last) or ``"last"``
    (``lastState.terminated``); raises ``LogError(400)`` with upstream's message otherwise.
    """
    if status is None:
        raise LogError(400, f'container "{container}" in pod "{pod_name}" is not available')
    state: Mapping[str, Any] = status.get("state") or {}
    last: Mapping[str, Any] = (status.get("lastState") or {}).get("terminated") or {}
    if previous:
        if not last or not last.get("containerID"):
            raise LogError(400, f'previous terminated container "{container}" in pod "{pod_name}" not found')
        return "last"
    if "running" in state:
        return "current"
    if "terminated" in state:
        if state["terminated"].get("containerID"):
            return "current"
        if last.get("containerID"):
            return "last"
        raise LogError(400, f'container "{container}" in pod "{pod_name}" is terminated')
    if last:
        if not last.get("containerID"):
            raise LogError(400, f'container "{container}" in pod "{pod_name}" is terminated')
        return "last"
    waiting: Mapping[str, Any] | None = state.get("waiting")
    if waiting is not None:
        reason = waiting.get("reason", "")
        if reason == "ErrImagePull":
            detail = "image can't be pulled"
        elif reason == "ImagePullBackOff":
            detail = "trying and failing to pull image"
        else:
            detail = str(reason)
        raise LogError(400, f'container "{container}" in pod "{pod_name}" is waiting to start: {detail}')
    raise LogError(400, f'container "{container}" in pod "{pod_name}" is waiting to start - no logs yet')


def next_output_at(machine: ContainerMachine, instance: Instance, after: float) -> float | None:
    """When ``instance`` prints its next line after ``after`` (None: it prints no more).

    Only the events after ``after`` count towards the scan limit, so a follower of a container that
    has printed for hours still finds its next line.
    """
    ahead = 0
    for event in machine.behaviour.events(instance.start):
        at = instance.start + event.offset
        if instance.end is not None and at > instance.end:
            return None
        if at <= after:
            continue
        if isinstance(event, Output):
            return at
        ahead += 1
        if ahead > MAX_EVENTS_SCANNED:
            return None
    return None


# -- the options ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LogOptions:
    """The query of ``/containerLogs`` (upstream's ``PodLogOptions``), already validated by the API server."""

    follow: bool = False
    previous: bool = False
    timestamps: bool = False
    tail_lines: int | None = None
    since_seconds: int | None = None
    since_time: float | None = None
    limit_bytes: int | None = None

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> LogOptions:
        def flag(name: str) -> bool:
            return query.get(name, "").lower() in ("true", "1")

        def number(name: str) -> int | None:
            text = query.get(name)
            if text in (None, ""):
                return None
            try:
                return int(text)
            except ValueError:
                raise LogError(400, f'invalid {name} "{text}"') from None

        since_time = None
        if query.get("sinceTime"):
            since_time = parse_timestamp(query["sinceTime"])
            if since_time is None:
                raise LogError(400, f'invalid sinceTime "{query["sinceTime"]}"')
        return cls(
            follow=flag("follow"),
            previous=flag("previous"),
            timestamps=flag("timestamps"),
            tail_lines=number("tailLines"),
            since_seconds=number("sinceSeconds"),
            since_time=since_time,
            limit_bytes=number("limitBytes"),
        )

    def since(self, now: float) -> float | None:
        if self.since_seconds is not None:
            return now - self.since_seconds
        return self.since_time


def select_lines(lines: list[LogLine], options: LogOptions, now: float) -> list[LogLine]:
    """``sinceSeconds``/``sinceTime``, then ``tailLines``, as the runtime's log reader applies them."""
    since = options.since(now)
    if since is not None:
        lines = [line for line in lines if line.at >= since]
    if options.tail_lines is not None:
        lines = lines[-options.tail_lines :] if options.tail_lines > 0 else []
    return lines


# -- the ASGI application --------------------------------------------------------------------------


class _Writer:
    """The response body, with ``limitBytes`` applied."""

    def __init__(self, send: Send, limit: int | None) -> None:
        self.send = send
        self.left = limit

    @property
    def full(self) -> bool:
        return self.left is not None and self.left <= 0

    async def lines(self, lines: list[str]) -> None:
        if not lines or self.full:
            return
        data = "".join(f"{line}\n" for line in lines).encode()
        if self.left is not None:
            data = data[: self.left]
            self.left -= len(data)
        await self.send({"type": "http.response.body", "body": data, "more_body": True})


class KubeletServer:
    """The kubelet's HTTP API (only ``/containerLogs`` so far), as an ASGI application."""

    def __init__(self, source: PodSource, *, node_name: str = "") -> None:
        self.source = source
        self.node_name = node_name

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        path = str(scope.get("path") or "/")
        parts = [unquote(p) for p in path.split("/") if p]
        if scope.get("method") not in ("GET", "HEAD") or len(parts) != 4 or parts[0] != "containerLogs":
            await _respond(send, 404, "404 page not found")
            return
        query = dict(
            parse_qsl(bytes(scope.get("query_string", b"")).decode("latin-1"), keep_blank_values=True)
        )
        try:
            await self.container_logs(
                parts[1], parts[2], parts[3], LogOptions.from_query(query), receive, send
            )
        except LogError as error:
            await _respond(send, error.code, error.message)

    async def container_logs(
        self, namespace: str, pod_name: str, container: str, options: LogOptions, receive: Receive, send: Send
    ) -> None:
        static = self.source.static_pod_container(namespace, pod_name)
        if static is not None:
            await self.static_pod_logs(static, pod_name, container, options, receive, send)
            return
        view = self.source.pod_view(namespace, pod_name)
        if view is None:
            raise LogError(404, f'pod "{pod_name}" does not exist')
        machine = next(
            (m for m in (*view.lifecycle.init, *view.lifecycle.containers) if m.name == container), None
        )
        if machine is None:
            raise LogError(404, f'container "{container}" not found in pod "{pod_name}"')
        which = validate_container_log_status(
            pod_name, container_status(machine.snapshot()), container, options.previous
        )
        instance = self._pick(machine, which)
        if instance is None:  # the status says it ran, but this kubelet has not seen it run (restarted)
            raise LogError(400, f'container "{container}" in pod "{pod_name}" is not available')
        clock = self.source.clock
        now = clock.now()
        all_lines = instance.lines(machine.behaviour, now)
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", TEXT), (b"cache-control", b"no-cache, private")],
            }
        )
        writer = _Writer(send, options.limit_bytes)
        await writer.lines(
            [line.render(options.timestamps) for line in select_lines(all_lines, options, now)]
        )
        if options.follow and not options.previous:
            await self._follow(
                namespace, pod_name, machine, instance, len(all_lines), options, writer, receive
            )
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def static_pod_logs(
        self,
        runs: ContainerRuns,
        pod_name: str,
        container: str,
        options: LogOptions,
        receive: Receive,
        send: Send,
    ) -> None:
        """A static pod's container's log: what the lab's program printed (``staticpods.py``)."""
        if container != runs.program:
            raise LogError(404, f'container "{container}" not found in pod "{pod_name}"')
        run = runs.log(options.previous)
        if run is None:
            which = f'container "{container}" in pod "{pod_name}"'
            if options.previous:
                raise LogError(400, f"previous terminated {which} not found")
            raise LogError(400, f"{which} is waiting to start: ContainerCreating")
        now = self.source.clock.now()
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", TEXT), (b"cache-control", b"no-cache, private")],
            }
        )
        writer = _Writer(send, options.limit_bytes)
        seen = len(run.lines)
        selected = select_lines(run.lines, options, now)
        await writer.lines([line.render(options.timestamps) for line in selected])
        if options.follow and not options.previous:
            gone = asyncio.create_task(_disconnected(receive))
            try:
                while run.finished is None and not writer.full and not gone.done():
                    change = asyncio.create_task(self.source.next_change().wait())
                    try:
                        await asyncio.wait([gone, change], return_when=asyncio.FIRST_COMPLETED)
                    finally:
                        change.cancel()
                        await asyncio.gather(change, return_exceptions=True)
                    new, seen = run.lines[seen:], len(run.lines)
                    await writer.lines([line.render(options.timestamps) for line in new])
            finally:
                await cancel_and_wait(gone)
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    @staticmethod
    def _pick(machine: ContainerMachine, which: str) -> Instance | None:
        logs = machine.logs
        if which == "current":
            return logs.current
        # ``lastState.terminated``: the logs' current instance while the container waits to restart
        # (it has ended and no new one started), the one before it once it runs again.
        if logs.current is not None and logs.current.end is not None and not machine.running:
            return logs.current
        return logs.previous

    async def _follow(
        self,
        namespace: str,
        pod_name: str,
        machine: ContainerMachine,
        instance: Instance,
        seen: int,
        options: LogOptions,
        writer: _Writer,
        receive: Receive,
    ) -> None:
        """Write each new line as it is printed, until the instance ends or the reader goes away."""
        clock = self.source.clock
        gone = asyncio.create_task(_disconnected(receive))
        try:
            while not writer.full:
                change = self.source.next_change()
                now = clock.now()
                lines = instance.lines(machine.behaviour, now)
                new, seen = lines[seen:], len(lines)
                await writer.lines([line.render(options.timestamps) for line in new])
                view = self.source.pod_view(namespace, pod_name)
                if (instance.end is not None and instance.end <= now) or view is None:
                    return
                waiters: list[asyncio.Task[Any]] = [gone, asyncio.create_task(change.wait())]
                at = next_output_at(machine, instance, now)
                if at is not None:
                    waiters.append(asyncio.create_task(sleep_until(clock, at)))
                try:
                    await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    for waiter in waiters[1:]:
                        waiter.cancel()
                    await asyncio.gather(*waiters[1:], return_exceptions=True)
                if gone.done():
                    return
        finally:
            await cancel_and_wait(gone)


async def sleep_until(clock: Clock, at: float) -> None:
    """Sleep on ``clock`` until ``at``, measured when the sleep begins (not when it was planned)."""
    await clock.sleep(at - clock.now())


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def _respond(send: Send, code: int, text: str) -> None:
    body = text.encode()
    await send(
        {
            "type": "http.response.start",
            "status": code,
            "headers": [(b"content-type", TEXT), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body, "more_body": False})


__all__ = [
    "KubeletServer",
    "LogError",
    "LogOptions",
    "PodSource",
    "PodView",
    "next_output_at",
    "select_lines",
    "sleep_until",
    "validate_container_log_status",
]
