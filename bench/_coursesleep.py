"""Sandboxes asleep, measured in this process: what a hibernated one costs, and how long waking takes.

A lab (``controlplane.runtime.Lab``) is started here, as ``manage.py runlab`` starts it (CPython's
collector tuned the same way, ``gc.freeze()`` once it runs) but with no demo cluster and no ports:
its sandboxes are made with ``Lab.ensure_cluster`` (a name starting ``sb-`` gives a sandbox's three
nodes, classroom timing and guardrails), each given a ConfigMap, a Secret and a Deployment of three
replicas through its API server. Requests go through ``ClusterAPIRouter``, the router the API port
serves (``controlplane/apiserver/mount.py``), over the in-process transport: kubectl's path without
TLS and a socket. The router is what wakes a hibernated sandbox for a request.

Memory is read in two ways, because they answer different questions:

- **RSS** (``VmRSS`` of this process): what the machine pays. One sandbox is made and hibernated
  first (the warm-up: the code paths, caches and thread pools a first sandbox brings, paid once per
  process, not per sandbox); then the RSS is read (``empty``), ``--sandboxes`` N more are made and run
  together (``running``), and all N are hibernated, after which ``release_memory`` runs as
  ``runlab``'s reaper runs it (a full collection, then glibc's ``malloc_trim``) and the RSS is read
  again (``hibernated``). Per hibernated sandbox: ``(hibernated - empty) / N``: a class that leaves
  at once. This counts what Python's allocator cannot give back (pymalloc arenas pinned by a few live
  objects, fragmentation), which the machine pays until the process reuses it; it also counts noise
  (a thread stack, a cache that grew), which N spreads.
  Then N more are made, run and hibernated **one at a time**, the RSS read after each: sandboxes
  coming and going, each reusing what the previous ones freed. ``(last - first) / (N - 1)`` is what
  each added once the allocator's free memory is reused (the first reading holds the high-water
  mark of one running sandbox, so it is the baseline).
- **Deleted** (information): at the end, the N sandboxes of the first pass, hibernated, are deleted
  (``Lab.delete_cluster``, as when their accounts are deleted) and the RSS read once more.
  ``(before - after) / N`` is what each hibernated sandbox itself held; the rest of the first figure
  is the process's high-water mark from the N running at once, which deleting them does not give
  back either (measured 2026-12-03: 7.1 MB of the first figure, 0.04 MB held).
- **Python heap** (``tracemalloc``): what the hibernated sandboxes still hold, object by object. It is
  started after the RSS passes (it slows everything down and its own tables would count in the RSS),
  then ``--heap-sandboxes`` M more sandboxes are made, run and hibernated, the collector runs, and what
  is still allocated since ``tracemalloc`` started, divided by M, is the heap a hibernated sandbox
  keeps; the files that allocated most of it are named.

The target (1 MB) is on the first RSS figure, the class leaving at once: it is what hibernated
sandboxes cost the machine, and the most conservative of the three. The one-at-a-time figure says
how much of it the process gets back by reuse, and the heap figure (the smallest) how much is objects
the lab keeps on purpose (the ``Cluster``, its identities, its trace bus) rather than the allocator's
leftovers.

**Waking.** Every sandbox made above is hibernated; each in turn is woken by a GET of its ConfigMaps
through the router, timed from the request to the answer (a 200 listing the ConfigMap made before it
slept: nothing was lost), then left to settle (its components started) and hibernated again, for
``--wake-rounds`` rounds. Only one sandbox is awake at a time: this is the wake of a quiet lab, the
cost of the sandbox alone.

**A new sandbox in a quiet lab** (for information): each of the 2N sandboxes of the RSS passes is
timed from ``ensure_cluster`` until ``/readyz`` answers ``ok`` and three nodes are Ready, asked every 20 ms,
without the sandbox service's set-up (the student's RBAC and FlowSchema): the cluster alone.
"""

from __future__ import annotations

import asyncio
import gc
import json
import tempfile
import time
import tracemalloc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench._courselab import ROOT, rss_mb
from controlplane.apiserver.mount import ClusterAPIRouter
from controlplane.client.transport import InProcessTransport
from controlplane.identity import SYSTEM_MASTERS
from controlplane.runtime import Lab, LabConfig, SandboxProfile, release_memory, tune_garbage_collector

MB = 1024 * 1024
ADMIN = "bench:admin"
#: Seconds a sandbox's Deployment may take to have its replicas available.
SETTLE_TIMEOUT = 60.0


@dataclass
class SleepResult:
    sandboxes: int = 0
    rss_empty_mb: float | None = None
    rss_running_mb: float | None = None
    rss_hibernated_mb: float | None = None
    #: After each of N more sandboxes made, run and hibernated one at a time.
    rss_one_at_a_time_mb: list[float | None] = field(default_factory=list)
    #: After every wake round, all hibernated again and memory released.
    rss_after_wakes_mb: float | None = None
    #: Then with the N sandboxes of the first pass deleted (``Lab.delete_cluster``), memory released.
    rss_after_deleting_mb: float | None = None
    heap_sandboxes: int = 0
    heap_retained_bytes: int | None = None
    heap_top: list[tuple[str, float]] = field(default_factory=list)
    #: Seconds from ``ensure_cluster`` to readyz ok with three Ready nodes, per new sandbox.
    ready_s: list[float] = field(default_factory=list)
    wake_s: list[float] = field(default_factory=list)
    wake_errors: list[str] = field(default_factory=list)
    #: Sandboxes whose Deployment was not available in time (the RSS is read anyway).
    unsettled: list[str] = field(default_factory=list)

    def per_sandbox_mb(self, figure: float | None) -> float | None:
        if figure is None or self.rss_empty_mb is None or self.sandboxes == 0:
            return None
        return (figure - self.rss_empty_mb) / self.sandboxes

    def one_at_a_time_mb(self) -> float | None:
        """The RSS each sandbox hibernated one at a time added, from the first to the last: the
        first's high-water mark (one running sandbox) is not counted."""
        readings = self.rss_one_at_a_time_mb
        if len(readings) < 2 or readings[0] is None or readings[-1] is None:
            return None
        return (readings[-1] - readings[0]) / (len(readings) - 1)

    def held_mb(self) -> float | None:
        """What each of the N hibernated sandboxes held: the RSS their deletion gave back, per sandbox."""
        if self.rss_after_wakes_mb is None or self.rss_after_deleting_mb is None or self.sandboxes == 0:
            return None
        return (self.rss_after_wakes_mb - self.rss_after_deleting_mb) / self.sandboxes


async def _no_django(scope: Any, receive: Any, send: Any) -> None:
    raise AssertionError(f"only /clusters/ paths are asked here, not {scope.get('path')!r}")


class Sandboxes:
    """The lab's sandboxes, and an admin client of each through the API port's router."""

    def __init__(self, lab: Lab) -> None:
        self.lab = lab
        self.router = ClusterAPIRouter(lambda: lab, _no_django)
        self.tokens: dict[str, str] = {}
        self.names: list[str] = []

    @asynccontextmanager
    async def client(self, name: str) -> AsyncIterator[httpx.AsyncClient]:
        async with httpx.AsyncClient(
            transport=InProcessTransport(self.router),
            base_url=f"http://lab/clusters/{name}",
            headers={"Authorization": f"Bearer {self.tokens[name]}"},
            timeout=60.0,
        ) as client:
            yield client

    async def make(self, name: str) -> float:
        """Make sandbox ``name``; seconds until readyz is ok and three nodes are Ready. Then give it
        its objects (it is left to settle by ``settle``)."""
        started = time.perf_counter()
        cluster = await self.lab.ensure_cluster(name)
        self.tokens[name] = cluster.tokens.issue(ADMIN, [SYSTEM_MASTERS])
        self.names.append(name)
        async with self.client(name) as client:
            # Asked every 20 ms, as a client would ask: through the API, not by looking inside.
            while True:
                if await _ready(client):
                    break
                await asyncio.sleep(0.02)
            ready = time.perf_counter() - started
            for path, body in _objects(name):
                response = await client.post(path, content=json.dumps(body))
                if response.status_code != 201:
                    raise RuntimeError(f"{name}: POST {path}: {response.status_code} {response.text[:200]}")
        return ready

    async def settle(self, name: str) -> bool:
        """Wait until the sandbox's Deployment has its replicas available; whether it did in time."""
        deadline = time.monotonic() + SETTLE_TIMEOUT
        async with self.client(name) as client:
            while time.monotonic() < deadline:
                response = await client.get("/apis/apps/v1/namespaces/default/deployments/web")
                if (
                    response.status_code == 200
                    and response.json().get("status", {}).get("availableReplicas") == 3
                ):
                    return True
                await asyncio.sleep(0.2)
        return False

    async def hibernate(self, name: str) -> None:
        await self.lab.settled(name)
        if not await self.lab.hibernate(name):
            raise RuntimeError(f"{name} did not hibernate (state {self.lab.cluster(name).state.value})")

    async def wake(self, name: str) -> tuple[float, str | None]:
        """Wake the hibernated sandbox with a GET of its ConfigMaps; seconds to the answer, and what
        was wrong with the answer (None: a 200 with its ConfigMap)."""
        async with self.client(name) as client:
            started = time.perf_counter()
            response = await client.get("/api/v1/namespaces/default/configmaps")
            seconds = time.perf_counter() - started
        if response.status_code != 200:
            return seconds, f"{name}: {response.status_code} {response.text[:200]}"
        names = {item["metadata"]["name"] for item in response.json().get("items", [])}
        if "bench-settings" not in names:
            return seconds, f"{name}: its ConfigMap is gone after waking ({sorted(names)})"
        return seconds, None


async def _ready(client: httpx.AsyncClient) -> bool:
    try:
        readyz = await client.get("/readyz")
        if readyz.status_code != 200 or readyz.text.strip() != "ok":
            return False
        nodes = await client.get("/api/v1/nodes")
    except httpx.HTTPError:
        return False
    if nodes.status_code != 200:
        return False
    ready = 0
    for node in nodes.json().get("items", []):
        conditions = node.get("status", {}).get("conditions", [])
        ready += any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    return ready >= 3


def _objects(name: str) -> list[tuple[str, dict[str, Any]]]:
    """What a student has made in their sandbox by chapter 2: a ConfigMap, a Secret, a Deployment."""
    labels = {"app": "web"}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
            },
        },
    }
    return [
        (
            "/api/v1/namespaces/default/configmaps",
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "bench-settings"},
                "data": {"owner": name},
            },
        ),
        (
            "/api/v1/namespaces/default/secrets",
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "bench-credentials"},
                "stringData": {"password": name},
            },
        ),
        ("/apis/apps/v1/namespaces/default/deployments", deployment),
    ]


async def _make_settled(sandboxes: Sandboxes, names: list[str], result: SleepResult) -> None:
    """Make ``names`` one after another (each timed), then wait for all of them to settle."""
    for name in names:
        result.ready_s.append(await sandboxes.make(name))
    settled = await asyncio.gather(*(sandboxes.settle(name) for name in names))
    result.unsettled.extend(name for name, ok in zip(names, settled, strict=True) if not ok)


async def measure(
    directory: Path | None, *, sandboxes: int, heap_sandboxes: int, wake_rounds: int
) -> SleepResult:
    """Run the whole in-process measurement (see the module's docstring)."""
    result = SleepResult(sandboxes=sandboxes, heap_sandboxes=heap_sandboxes)
    with tempfile.TemporaryDirectory(prefix="kubelab-bench-course-", dir=directory) as tmp:
        tune_garbage_collector()  # as manage.py runlab does
        config = LabConfig(data_dir=Path(tmp), demo_cluster="", sandbox=SandboxProfile(idle_seconds=0))
        lab = Lab(config)
        await lab.start()
        gc.freeze()  # as runlab does once its lab runs
        try:
            await _measure(Sandboxes(lab), result, wake_rounds=wake_rounds)
        finally:
            if tracemalloc.is_tracing():
                tracemalloc.stop()
            await lab.stop()
            gc.unfreeze()
    return result


async def _measure(sandboxes: Sandboxes, result: SleepResult, *, wake_rounds: int) -> None:
    # The warm-up sandbox: what the first one costs the process once, not per sandbox.
    warm = SleepResult()
    await _make_settled(sandboxes, ["sb-warm-up"], warm)
    await sandboxes.hibernate("sb-warm-up")
    await asyncio.to_thread(release_memory)
    result.rss_empty_mb = rss_mb()

    # RSS: N sandboxes running, then hibernated.
    batch = [f"sb-rss-{i + 1}" for i in range(result.sandboxes)]
    await _make_settled(sandboxes, batch, result)
    gc.collect()
    result.rss_running_mb = rss_mb()
    for name in batch:
        await sandboxes.hibernate(name)
    await asyncio.to_thread(release_memory)
    result.rss_hibernated_mb = rss_mb()

    # One at a time: N more, each made, run and hibernated before the next, as sandboxes come and go
    # in a lab; the memory each frees is there for the next to reuse.
    for i in range(result.sandboxes):
        name = f"sb-one-{i + 1}"
        await _make_settled(sandboxes, [name], result)
        await sandboxes.hibernate(name)
        await asyncio.to_thread(release_memory)
        result.rss_one_at_a_time_mb.append(rss_mb())

    # The Python heap: M more, made, run and hibernated under tracemalloc.
    if result.heap_sandboxes > 0:
        heap_batch = [f"sb-heap-{i + 1}" for i in range(result.heap_sandboxes)]
        tracemalloc.start()
        try:
            await _make_settled(sandboxes, heap_batch, SleepResult())
            for name in heap_batch:
                await sandboxes.hibernate(name)
            await asyncio.to_thread(release_memory)
            result.heap_retained_bytes = tracemalloc.get_traced_memory()[0] // result.heap_sandboxes
            snapshot = tracemalloc.take_snapshot()
        finally:
            tracemalloc.stop()
        top = snapshot.statistics("filename")[:8]
        result.heap_top = [
            (_short(stat.traceback[0].filename), round(stat.size / result.heap_sandboxes / 1024, 1))
            for stat in top
        ]
        del snapshot

    # Waking: each sleeping sandbox in turn, woken by a request, then put back to sleep.
    for _ in range(wake_rounds):
        for name in sandboxes.names:
            seconds, error = await sandboxes.wake(name)
            result.wake_s.append(seconds)
            if error is not None:
                result.wake_errors.append(error)
            await sandboxes.hibernate(name)
    await asyncio.to_thread(release_memory)
    result.rss_after_wakes_mb = rss_mb()

    # Deleted: the first pass's N sandboxes, asleep, are deleted as an account's sandbox is. What
    # that gives back is what they held; what it does not is the process's high-water mark.
    for name in batch:
        await sandboxes.lab.delete_cluster(name)
    await asyncio.to_thread(release_memory)
    result.rss_after_deleting_mb = rss_mb()


def _short(filename: str) -> str:
    """A file's path from the repository or site-packages on, so that a line reads without the venv."""
    for marker in ("/site-packages/", f"{ROOT}/", "/lib/python3.11/"):
        if marker in filename:
            return filename.split(marker, 1)[1]
    return filename
