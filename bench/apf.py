"""API Priority and Fairness: a polite client keeps its latency while another user hot-loops.

One lab process (``bench.api.LabProcess``: runlab on free ports, HTTPS API port, no components) per
mode. Two users of the group ``kubelab:bench-tenants``, each with its own bearer token, both creating
ConfigMaps in ``default`` (generated names):

- **hot** (a process of its own, ``bench._apfhot``): ``--hot-workers`` (128) concurrent loops, each
  creating again as soon as its answer comes, 429 or not (it ignores ``Retry-After``);
- **polite** (this process): one create 10 times a second (``--rate``), for ``--seconds`` (15; quick
  4) after the hot client has run for a second.

Why writes. In a one-process asyncio server a request holds its seat only while its handler runs,
and a read from the watch cache runs without yielding: reads never pile up *inside* flow control
(they wait in the event loop's queue before it, where nothing is fair). A write waits for the store's
group commit, so concurrent writes do hold seats, as they hold goroutines in kube-apiserver: that
is the overload flow control is for, and the same kind of request from both users is the textbook
case of fairness within one priority level.

Modes: ``apf`` (the lab's default: APF over a total of 60 seats), then for comparison
``max_inflight`` (``KUBELAB_ENABLE_PRIORITY_AND_FAIRNESS=false``, limits 40 reads / 20 writes) and
``none`` (APF off, both limits 0: no flow control; not run with ``--quick``).

Under APF the two users are put in a priority level of their own, as an administrator gives tenants
one: the PriorityLevelConfiguration ``bench-tenants`` (20 shares: ``ceil(60 x 20 / 265)`` = 5 seats;
16 queues, hand of 4, 10 requests per queue) and the FlowSchema ``bench-tenants`` (group
``kubelab:bench-tenants``, ``ByUser``, precedence 1000), created through the API before the run.
The bootstrap levels would contain the hot client just as well, but their queues hold 50 requests
(6 x 50 per flow): the loops would only wait, never be refused, and the run would not show the 429s.
The level holds 5 running and 4 x 10 queued requests of one flow: the hot client must keep more
than 45 in the server at once to overfill it. With 64 loops a fast enough server sometimes kept up
(one run in two refused nothing); 128 overfill it every time.

Lines (``apf.*`` have targets; the others are reported for information, target null):

``<mode>.polite.p99_ms`` / ``.p50_ms``
    The polite client's request latency; under APF ``<= 100`` ms.
``<mode>.polite.rejected``
    Its 429s; under APF ``== 0``.
``<mode>.hot.rejected``
    The hot client's 429s; under APF ``> 0`` (the level refuses the flow that overfills its queues).
``<mode>.hot.retry_after_missing``
    The hot client's 429s without a ``Retry-After``; under APF ``== 0``. Lines carry the request
    counts, the hot client's answers by code and the largest Retry-After it saw.

Caveats: the hot client, the lab and this process share the machine (two cores in CI); the hot
process takes most of one core, so latencies under load also measure the machine. The comparison
modes are what show the difference: under max-in-flight the hot loops take every read slot and the
polite client's GETs are refused with theirs; with no limit every hot LIST runs at once and the
polite GET waits behind them all.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml

from bench._apiclient import TOKEN_ENV
from bench.api import CLUSTER, ROOT, LabProcess
from bench.report import Reporter
from bench.stats import summarize

GROUP = "kubelab:bench-tenants"
POLITE_CONFIG_MAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "polite-"}}
FC = "/apis/flowcontrol.apiserver.k8s.io/v1"
#: The tenants may write ConfigMaps in ``default``: RBAC's ``edit`` role, bound to their group.
TENANTS_BINDING = {
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "kind": "RoleBinding",
    "metadata": {"name": "bench-tenants-edit"},
    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
    "subjects": [{"kind": "Group", "name": GROUP, "apiGroup": "rbac.authorization.k8s.io"}],
}

#: The modes, the lab settings of each, and whether its lines carry targets.
MODES: dict[str, dict[str, str]] = {
    "apf": {},
    "max_inflight": {"KUBELAB_ENABLE_PRIORITY_AND_FAIRNESS": "false"},
    "none": {
        "KUBELAB_ENABLE_PRIORITY_AND_FAIRNESS": "false",
        "KUBELAB_MAX_REQUESTS_INFLIGHT": "0",
        "KUBELAB_MAX_MUTATING_REQUESTS_INFLIGHT": "0",
    },
}
QUICK_MODES = ("apf", "max_inflight")

P99_TARGET = "<= 100"
POLITE_REJECTED_TARGET = "== 0"
HOT_REJECTED_TARGET = "> 0"
RETRY_AFTER_TARGET = "== 0"

LEVEL: dict[str, Any] = {
    "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
    "kind": "PriorityLevelConfiguration",
    "metadata": {"name": "bench-tenants"},
    "spec": {
        "type": "Limited",
        "limited": {
            "nominalConcurrencyShares": 20,
            "limitResponse": {
                "type": "Queue",
                "queuing": {"queues": 16, "handSize": 4, "queueLengthLimit": 10},
            },
        },
    },
}
SCHEMA: dict[str, Any] = {
    "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
    "kind": "FlowSchema",
    "metadata": {"name": "bench-tenants"},
    "spec": {
        "priorityLevelConfiguration": {"name": "bench-tenants"},
        "matchingPrecedence": 1000,
        "distinguisherMethod": {"type": "ByUser"},
        "rules": [
            {
                "subjects": [{"kind": "Group", "group": {"name": GROUP}}],
                "resourceRules": [
                    {
                        "verbs": ["*"],
                        "apiGroups": ["*"],
                        "resources": ["*"],
                        "namespaces": ["*"],
                        "clusterScope": True,
                    }
                ],
            }
        ],
    },
}


@dataclass(frozen=True, slots=True)
class Settings:
    modes: tuple[str, ...]
    seconds: float
    rate: float
    hot_workers: int
    directory: Path | None

    @classmethod
    def from_options(cls, options: argparse.Namespace) -> Settings:
        quick = bool(options.quick)
        return cls(
            modes=QUICK_MODES if quick else tuple(MODES),
            seconds=options.seconds if options.seconds is not None else (4.0 if quick else 15.0),
            rate=options.rate,
            hot_workers=options.hot_workers,
            directory=options.dir,
        )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("apf")
    group.add_argument("--seconds", type=float, help="length of the polite client's run (15; --quick 4)")
    group.add_argument("--rate", type=float, default=10.0, help="the polite client's requests/s (10)")
    group.add_argument("--hot-workers", type=int, default=128, help="the hot client's concurrent loops (128)")
    group.add_argument("--dir", type=Path, help="where the temporary labs go (the system temp dir)")


async def run(options: argparse.Namespace, reporter: Reporter) -> None:
    settings = Settings.from_options(options)
    for mode in settings.modes:
        if not reporter.wants(mode):
            continue
        try:
            await measure_mode(reporter, settings, mode)
        except Exception as error:
            report_unavailable(reporter, mode, f"{type(error).__name__}: {error}")


def targets(mode: str) -> dict[str, str | None]:
    if mode != "apf":
        return {"p99": None, "polite": None, "hot": None, "retry": None}
    return {
        "p99": P99_TARGET,
        "polite": POLITE_REJECTED_TARGET,
        "hot": HOT_REJECTED_TARGET,
        "retry": RETRY_AFTER_TARGET,
    }


def report_unavailable(reporter: Reporter, mode: str, problem: str) -> None:
    wanted = targets(mode)
    reporter.error(f"{mode}.polite.p50_ms", "ms", problem)
    reporter.error(f"{mode}.polite.p99_ms", "ms", problem, target=wanted["p99"])
    reporter.error(f"{mode}.polite.rejected", "count", problem, target=wanted["polite"])
    reporter.error(f"{mode}.hot.rejected", "count", problem, target=wanted["hot"])
    reporter.error(f"{mode}.hot.retry_after_missing", "count", problem, target=wanted["retry"])


@contextlib.contextmanager
def lab_directory(settings: Settings, mode: str) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix=f"kubelab-bench-apf-{mode}-", dir=settings.directory) as tmp:
        yield Path(tmp)


def issue_token(lab: LabProcess, user: str) -> str:
    """A bearer token for ``user`` in the tenants' group, as ``manage.py kubeconfig`` makes one."""
    command = [
        sys.executable, "manage.py", "kubeconfig", "--cluster", CLUSTER, "--user", user, "--group", GROUP,
        "--server", lab.origin,
    ]  # fmt: skip
    made = subprocess.run(command, cwd=ROOT, env=lab.env, capture_output=True, text=True, check=True)
    token: str = yaml.safe_load(made.stdout)["users"][0]["user"]["token"]
    return token


async def measure_mode(reporter: Reporter, settings: Settings, mode: str) -> None:
    with lab_directory(settings, mode) as tmp:
        lab = await asyncio.to_thread(LabProcess.start, tmp, {"KUBELAB_COMPONENTS": "none", **MODES[mode]})
        try:
            async with lab.client() as admin:
                created: tuple[tuple[str, dict[str, Any]], ...] = (
                    ("/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings", TENANTS_BINDING),
                )
                if mode == "apf":
                    created += (
                        (f"{FC}/prioritylevelconfigurations", LEVEL),
                        (f"{FC}/flowschemas", SCHEMA),
                    )
                for path, obj in created:
                    reply = await admin.post(lab.server + path, json=obj)
                    if reply.status_code != 201:
                        raise RuntimeError(
                            f"creating {obj['metadata']['name']}: {reply.status_code} {reply.text[:200]}"
                        )
            hot_token = await asyncio.to_thread(issue_token, lab, "hot")
            polite_token = await asyncio.to_thread(issue_token, lab, "polite")
            await run_clients(reporter, settings, mode, lab, hot_token, polite_token)
        finally:
            await asyncio.to_thread(lab.stop)


def configmaps(lab: LabProcess) -> str:
    return lab.pods.removesuffix("/pods") + "/configmaps"


async def run_clients(
    reporter: Reporter,
    settings: Settings,
    mode: str,
    lab: LabProcess,
    hot_token: str,
    polite_token: str,
) -> None:
    command = [
        sys.executable, "-m", "bench._apfhot", configmaps(lab), "--ca", str(lab.ca_path),
        "--workers", str(settings.hot_workers), "--seconds", str(settings.seconds + 2.0),
    ]  # fmt: skip
    hot = await asyncio.create_subprocess_exec(
        *command, cwd=ROOT, env={**os.environ, TOKEN_ENV: hot_token}, stdout=asyncio.subprocess.PIPE
    )
    try:
        await asyncio.sleep(1.0)  # the hot loops are at full speed before the polite client starts
        latencies, codes = await polite(lab, polite_token, configmaps(lab), settings)
        out, _ = await hot.communicate()
    finally:
        if hot.returncode is None:
            hot.kill()
            await hot.wait()
    hot_result: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    wanted = targets(mode)
    summary = summarize(latencies) if latencies else None
    info: dict[str, Any] = {
        "requests": len(latencies) + codes.get("error", 0),
        "codes": codes,
        "hot": hot_result,
        "mode": mode,
    }
    reporter.emit(f"{mode}.polite.p50_ms", round(summary.p50 * 1000, 2) if summary else None, "ms", **info)
    reporter.emit(
        f"{mode}.polite.p99_ms",
        round(summary.p99 * 1000, 2) if summary else None,
        "ms",
        target=wanted["p99"],
        **info,
    )
    reporter.emit(f"{mode}.polite.rejected", codes.get("429", 0), "count", target=wanted["polite"], **info)
    hot_rejected = int(hot_result["codes"].get("429", 0))
    reporter.emit(f"{mode}.hot.rejected", hot_rejected, "count", target=wanted["hot"], **info)
    reporter.emit(
        f"{mode}.hot.retry_after_missing",
        hot_rejected - int(hot_result["with_retry_after"]),
        "count",
        target=wanted["retry"],
        max_retry_after=hot_result["max_retry_after"],
        **info,
    )


async def polite(
    lab: LabProcess, token: str, url: str, settings: Settings
) -> tuple[list[float], dict[str, int]]:
    """Create a ConfigMap at ``url`` ``settings.rate`` times a second, on schedule; latencies in seconds."""
    latencies: list[float] = []
    codes: dict[str, int] = {}
    interval = 1.0 / settings.rate
    async with httpx.AsyncClient(
        verify=lab.ssl_context(), headers={"Authorization": f"Bearer {token}"}, timeout=60.0
    ) as client:
        await client.get(url)  # the TLS handshake is not timed
        start = time.monotonic()
        for i in range(int(settings.seconds * settings.rate)):
            delay = start + i * interval - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            sent = time.monotonic()
            try:
                reply = await client.post(url, json=POLITE_CONFIG_MAP)
            except httpx.HTTPError:
                codes["error"] = codes.get("error", 0) + 1
                continue
            latencies.append(time.monotonic() - sent)
            key = str(reply.status_code)
            codes[key] = codes.get(key, 0) + 1
    return latencies, codes
