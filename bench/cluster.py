"""A living cluster: pods scheduled and Running per second, pod startup latency, memory and idle CPU.

Everything runs as the embedded default does: one process, one event loop, the API server over a
SQLite store, and the scheduler, the controller manager, and a kubelet and a kube-proxy per node as
in-process components, each with its own identity, on the ``upstream`` timing profile. Simulated image
pulls take no time here ("no simulated pull delay": the control plane's cost alone).

- ``throughput``: ``--nodes`` nodes (100), one Deployment of ``--pods`` replicas (1000); from the
  create to the moment a watch has seen every pod Running. The store's raw single-row commit rate
  (a plain sqlite3 loop, WAL, synchronous=FULL) is measured in the same run and reported beside it:
  each pod costs the cluster about six writes (create, bind, a status update, Events). The scheduler
  and controller manager get scale-test client rate limits (``SCALE_TEST_RATE_LIMITS``).
  ``throughput.cpu_ms_per_pod`` is the event loop thread's CPU time over the same run, per pod, with
  the API requests per pod beside it (from ``apiserver_request_total``): the whole cluster runs on
  that one thread, so this is what a pod costs, and it varies less between machines than pods/s.
- ``startup``: ``--hold-nodes`` nodes (1000) holding ``--hold-pods`` pods (10000) Running; then
  ``--probe-pods`` single pods created one after another, each timed from its create to the watch
  event that shows it Running. Peak RSS of the process is read afterwards.
- ``idle``: a demo-sized cluster (3 nodes, classroom profile) left alone; the process's CPU time over
  ``--idle-seconds`` as a percentage of one core.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import resource
import sqlite3
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from bench.report import Reporter
from bench.stats import percentile
from controlplane.api.meta import Object
from controlplane.apiserver.filters.priority_and_fairness import FlowControlOptions
from controlplane.client.config import Config
from controlplane.client.rest import ResourceClient, RESTClient
from controlplane.components.kubelet.simulation import PullTiming
from controlplane.identity import SYSTEM_MASTERS
from controlplane.runtime import Cluster, ClusterConfig, tune_garbage_collector
from controlplane.store.sqlite import SqliteStore
from controlplane.timing import CLASSROOM, UPSTREAM, TimingProfile
from controlplane.trace import TraceBus

NAMESPACE = "default"
#: The pods' image, as upstream's density and scheduler_perf tests use: a pinned tag, so the pull
#: policy is IfNotPresent and each node pulls it once (``nginx``, i.e. ``:latest``, would be pulled
#: for every pod: two more Events per pod).
IMAGE = "registry.k8s.io/pause:3.10"

#: Client rate limits as upstream's scale tests set them: the defaults (the controller manager's 20
#: QPS) would cap pod creation at 20/s, whatever the cluster could do. scheduler_perf gives its
#: scheduler 5000 QPS; the density tests run kube-controller-manager with ``--kube-api-qps=100``
#: and more. The lab itself keeps upstream's defaults: the limits are part of what it teaches.
SCALE_TEST_RATE_LIMITS = {"scheduler": (5000.0, 5000), "controller-manager": (5000.0, 5000)}
#: API Priority and Fairness with upstream's default total concurrency (``--max-requests-inflight``
#: 400 plus ``--max-mutating-requests-inflight`` 200: 600 seats) rather than the lab's tenth of it: a
#: Python API server's requests mostly wait for the store's group commit, and fewer seats mean
#: smaller commits. Upstream's scale tests run with these defaults or more.
SCALE_TEST_FLOW_CONTROL = FlowControlOptions(max_requests_inflight=400, max_mutating_requests_inflight=200)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("cluster")
    group.add_argument("--nodes", type=int, help="nodes of the throughput run (100; --quick 20)")
    group.add_argument("--pods", type=int, help="replicas of the throughput run (1000; --quick 200)")
    group.add_argument("--hold-nodes", type=int, help="nodes held during the startup run (1000; --quick 50)")
    group.add_argument("--hold-pods", type=int, help="pods held during the startup run (10000; --quick 500)")
    group.add_argument("--probe-pods", type=int, help="pods timed in the startup run (200; --quick 30)")
    group.add_argument("--idle-seconds", type=float, help="length of the idle-CPU run (30; --quick 5)")
    group.add_argument("--dir", type=Path, help="where the stores go (the system temp dir)")


def _pick(value: Any, full: Any, quick: Any, options: argparse.Namespace) -> Any:
    return value if value is not None else (quick if options.quick else full)


async def run(options: argparse.Namespace, reporter: Reporter) -> None:
    tune_garbage_collector()  # as manage.py runlab does
    if reporter.wants("throughput"):
        await measure_throughput(
            reporter,
            nodes=_pick(options.nodes, 100, 20, options),
            pods=_pick(options.pods, 1000, 200, options),
            directory=options.dir,
        )
    if reporter.wants("startup") or reporter.wants("memory"):
        await measure_startup(
            reporter,
            nodes=_pick(options.hold_nodes, 1000, 50, options),
            pods=_pick(options.hold_pods, 10_000, 500, options),
            probes=_pick(options.probe_pods, 200, 30, options),
            directory=options.dir,
        )
    if reporter.wants("idle"):
        await measure_idle(
            reporter, seconds=_pick(options.idle_seconds, 30.0, 5.0, options), directory=options.dir
        )


# -- a cluster for measuring ------------------------------------------------------------------------


@asynccontextmanager
async def running_cluster(
    directory: Path | None, *, nodes: int, timing: TimingProfile, pull_seconds: float = 0.0
) -> AsyncIterator[tuple[Cluster, RESTClient]]:
    """A started cluster with ``nodes`` Ready nodes, and an admin client of it (no rate limit)."""
    with tempfile.TemporaryDirectory(dir=directory, prefix="kubelab-bench-cluster-") as tmp:
        data = Path(tmp)
        bus = TraceBus("bench", recording=False)  # as a lab's cluster without viewers
        store = SqliteStore("bench", path=data / "store.sqlite3", trace=bus)
        options = ClusterConfig(
            nodes=nodes,
            timing=timing,
            node_options={"pull_timing": PullTiming(default=pull_seconds), "cpu": "32", "memory": "128Gi"},
            rate_limits=SCALE_TEST_RATE_LIMITS,
            flow_control=SCALE_TEST_FLOW_CONTROL,
        )
        cluster = Cluster("bench", options, data_dir=data, store=store, trace=bus)
        await cluster.start()
        assert cluster.apiserver is not None
        token = await asyncio.to_thread(cluster.tokens.issue, "bench-admin", [SYSTEM_MASTERS])
        config = Config.for_in_process(
            cluster.apiserver, "bench", mount_prefix="/clusters/bench", bearer_token=token, qps=-1
        )
        client = RESTClient(config)
        try:
            await wait_until(client.resource("", "v1", "nodes"), lambda items: _ready_nodes(items) >= nodes)
            gc.freeze()  # as manage.py runlab does once its clusters run
            yield cluster, client
        finally:
            await client.aclose()
            await cluster.stop()
            # What was frozen is never scanned again, so the stopped cluster's cycles would stay in
            # memory for the next measurement (a lab's clusters live as long as the lab, so runlab
            # never needs this): unfreeze and collect them now.
            gc.unfreeze()
            gc.collect()


def _ready_nodes(items: list[Object]) -> int:
    """The Ready worker nodes (the control-plane node, tainted, runs no benchmark pod)."""

    def ready(node: Object) -> bool:
        return (node.get("metadata") or {}).get("name") != "control-plane" and any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in (node.get("status") or {}).get("conditions") or []
        )

    return sum(1 for node in items if ready(node))


async def wait_until(resource: ResourceClient, done: Any, *, seconds: float = 600.0) -> list[Object]:
    """List until ``done(items)``, waiting for a watch event between lists."""
    async with asyncio.timeout(seconds):
        while True:
            listed = await resource.list()
            if done(listed["items"]):
                return list(listed["items"])
            async with resource.watch(resource_version=listed["metadata"]["resourceVersion"]) as stream:
                async for _ in stream:
                    break


def deployment(name: str, replicas: int) -> Object:
    container = {"name": "app", "image": IMAGE, "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [container]}},
        },
    }


def running(pod: Object) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running"


async def run_deployment(client: RESTClient, name: str, replicas: int) -> tuple[float, float]:
    """Create a Deployment and watch its pods; seconds until all are scheduled, and until all Run."""
    pods = client.resource("", "v1", "pods", NAMESPACE)
    listed = await pods.list()
    start = time.perf_counter()
    await client.resource("apps", "v1", "deployments", NAMESPACE).create(deployment(name, replicas))
    scheduled: set[str] = set()
    up: set[str] = set()
    scheduled_at = 0.0
    async with pods.watch(
        resource_version=listed["metadata"]["resourceVersion"], label_selector=f"app={name}"
    ) as stream:
        async for event in stream:
            pod = event.object
            uid = str((pod.get("metadata") or {}).get("uid"))
            if (pod.get("spec") or {}).get("nodeName"):
                scheduled.add(uid)
                if len(scheduled) == replicas and not scheduled_at:
                    scheduled_at = time.perf_counter() - start
            if running(pod):
                up.add(uid)
                if len(up) >= replicas:
                    break
    return scheduled_at, time.perf_counter() - start


# -- throughput -------------------------------------------------------------------------------------


def raw_commit_rate(directory: Path | None, seconds: float = 2.0) -> float:
    """Commits/s of a plain sqlite3 loop: WAL, synchronous=FULL, one INSERT per commit."""
    with tempfile.TemporaryDirectory(dir=directory, prefix="kubelab-bench-raw-") as tmp:
        conn = sqlite3.connect(Path(tmp) / "raw.sqlite3", isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            conn.execute("CREATE TABLE kv (id INTEGER PRIMARY KEY, value BLOB NOT NULL)")
            value = b"x" * 1024
            count = 0
            start = time.perf_counter()
            while (elapsed := time.perf_counter() - start) < seconds:
                conn.execute("INSERT INTO kv (value) VALUES (?)", (value,))
                count += 1
            return count / elapsed
        finally:
            conn.close()


async def measure_throughput(reporter: Reporter, *, nodes: int, pods: int, directory: Path | None) -> None:
    raw = await asyncio.to_thread(raw_commit_rate, directory)
    async with running_cluster(directory, nodes=nodes, timing=UPSTREAM) as (cluster, client):
        revision_before = await cluster.store.current_revision()
        requests_before = api_requests(cluster)
        cpu_before = time.thread_time()
        scheduled_s, running_s = await run_deployment(client, "throughput", pods)
        cpu_s = time.thread_time() - cpu_before
        requests = api_requests(cluster) - requests_before
        writes = await cluster.store.current_revision() - revision_before
    shape: dict[str, Any] = {
        "nodes": nodes,
        "pods": pods,
        "store_commits_per_s": round(raw, 1),
        "store_writes": writes,
    }
    per_s = pods / running_s
    reporter.emit(
        "throughput.running_pods_per_s",
        per_s,
        "pods/s",
        target=">= 300",
        seconds=round(running_s, 3),
        ratio_to_store_commits=round(per_s / raw, 4),
        **shape,
    )
    reporter.emit(
        "throughput.scheduled_pods_per_s",
        pods / scheduled_s,
        "pods/s",
        seconds=round(scheduled_s, 3),
        **shape,
    )
    reporter.emit(
        "throughput.cpu_ms_per_pod",
        1000 * cpu_s / pods,
        "ms",
        api_requests_per_pod=round(requests / pods, 2),
        **shape,
    )


def api_requests(cluster: Cluster) -> float:
    """Requests the API server has answered so far, watches left out (``apiserver_request_total``)."""
    total = 0.0
    for metric in cluster.metrics.collect():
        for sample in metric.samples:
            if sample.name == "apiserver_request_total" and sample.labels.get("verb") != "WATCH":
                total += sample.value
    return total


# -- startup latency and memory ---------------------------------------------------------------------


def probe_pod(name: str) -> Object:
    container = {"name": "app", "image": IMAGE, "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"probe": "yes"}},
        "spec": {"containers": [container]},
    }


async def measure_startup(
    reporter: Reporter, *, nodes: int, pods: int, probes: int, directory: Path | None
) -> None:
    async with running_cluster(directory, nodes=nodes, timing=UPSTREAM) as (_, client):
        await run_deployment(client, "held", pods)
        pod_client = client.resource("", "v1", "pods", NAMESPACE)
        listed = await pod_client.list(label_selector="probe=yes")
        created: dict[str, float] = {}
        latencies: list[float] = []

        async def observe() -> None:
            rv = listed["metadata"]["resourceVersion"]
            async with pod_client.watch(resource_version=rv, label_selector="probe=yes") as stream:
                async for event in stream:
                    name = event.object["metadata"]["name"]
                    if running(event.object) and name in created:
                        latencies.append(time.perf_counter() - created.pop(name))
                        if len(latencies) == probes:
                            return

        watcher = asyncio.create_task(observe())
        for i in range(probes):
            name = f"probe-{i}"
            created[name] = time.perf_counter()
            await pod_client.create(probe_pod(name))
            await asyncio.sleep(0.1)  # a steady 10 pods/s, not a burst: each is timed alone
        async with asyncio.timeout(120):
            await watcher
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    ms = sorted(x * 1000 for x in latencies)
    shape: dict[str, Any] = {"nodes": nodes, "held_pods": pods, "probes": len(ms)}
    reporter.emit("startup.p50_ms", percentile(ms, 50), "ms", **shape)
    reporter.emit(
        "startup.p99_ms", percentile(ms, 99), "ms", target="<= 1000", max_ms=round(ms[-1], 1), **shape
    )
    reporter.emit("memory.peak_rss_mb", peak_mb, "MB", target="<= 1536", **shape)


# -- idle CPU ---------------------------------------------------------------------------------------


async def measure_idle(reporter: Reporter, *, seconds: float, directory: Path | None) -> None:
    async with running_cluster(directory, nodes=3, timing=CLASSROOM):
        await asyncio.sleep(min(5.0, seconds))  # let start-up work (first syncs, Events) settle
        before, wall = os.times(), time.perf_counter()
        await asyncio.sleep(seconds)
        after, elapsed = os.times(), time.perf_counter() - wall
    cpu = (after.user - before.user) + (after.system - before.system)
    reporter.emit(
        "idle.cpu_percent_of_a_core",
        100 * cpu / elapsed,
        "%",
        target="< 3",
        nodes=3,
        timing="classroom",
        seconds=round(elapsed, 1),
    )
